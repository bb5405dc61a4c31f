# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The LLaMA and BERT layers of test_layers.py on Vulkan, under both fusion
policies: against Hugging Face `transformers` (1e-4 relative to the output
scale, as on the CPU) and against the CPU result (1e-4 relative + 1e-4 times
the output scale).

Skipped when no Vulkan device exists, unless RLX_REQUIRE_VULKAN=1."""

import pytest

from test_layers import *  # noqa: F401,F403 (the cases to run again)


@pytest.fixture
def rlx(vulkan_rlx):
    return vulkan_rlx
