# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Every MIR op on Vulkan: each case of test_mir_ops.py runs again with
`rlx-run --device vulkan`, against the same NumPy reference with the same
tolerances, and against the CPU result (1e-4 relative + 1e-4 times the
output's scale for floats, exact for integers and booleans).

Skipped when no Vulkan device exists, unless RLX_REQUIRE_VULKAN=1 (CI runs
them on Mesa's lavapipe)."""

import pytest

from test_mir_ops import *  # noqa: F401,F403 (the cases to run again)


@pytest.fixture
def rlx(vulkan_rlx):
    return vulkan_rlx
