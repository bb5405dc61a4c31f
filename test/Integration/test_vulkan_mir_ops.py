# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Every MIR op on Vulkan: each case of test_mir_ops.py runs again with
`rlx-run --device vulkan`, against the same NumPy reference with the same
tolerances, and against the CPU result (1e-4 relative + 1e-4 times the
output's scale for floats, exact for integers and booleans).

Skipped when no Vulkan device exists, unless RLX_REQUIRE_VULKAN=1 (CI runs
them on Mesa's lavapipe)."""

import numpy as np
import pytest

from test_mir_ops import *  # noqa: F401,F403 (the cases to run again)


@pytest.fixture
def rlx(vulkan_rlx):
    return vulkan_rlx


#===----------------------------------------------------------------------===#
# GPU-specific edge cases
#===----------------------------------------------------------------------===#

# Threads of a workgroup that get no element of a row (rows shorter than the
# workgroup) must start from the identity: -inf for max, never 0.

def test_reduce_max_all_negative(rlx):
    x = -np.abs(randn(3, 7, 37)) - 0.5
    check(rlx, "mir.reduce_max %a0 {axes = array<i64: 1>, keep_dims} : {T}",
          [x], x.max(1, keepdims=True))


def test_softmax_very_negative_rows(rlx):
    x = randn(4, 5, 12) - 1000.0
    e = np.exp(x - x.max(-1, keepdims=True))
    check(rlx, "mir.softmax %a0 {axis = -1 : i64} : {T}", [x],
          (e / e.sum(-1, keepdims=True)).astype(np.float32), rtol=1e-4)


@pytest.mark.parametrize("tq,tk", [(1, 9), (3, 70), (1, 200)])
def test_decode_attention_negative_scores(rlx, tq, tk):
    """Decode attention splits the keys over the threads; scores far below 0
    and rows where most threads see no key."""
    h, kv, hd = 4, 2, 16
    q = np.full((1, tq, h * hd), 5.0, np.float32) + randn(1, tq, h * hd, scale=0.1)
    k = np.full((1, tk, kv * hd), -5.0, np.float32) + randn(1, tk, kv * hd, scale=0.1)
    v = randn(1, tk, kv * hd)
    expected = ref_attention(q, k, v, h, kv, hd, 0.25)
    attrs = (f"num_heads = {h} : i64, num_kv_heads = {kv} : i64, head_dim = {hd} : i64, "
             "scale = 0.25 : f32, softcap = 0.0 : f32, mask_kind = #mir<mask causal>, "
             "window = 0 : i64")
    check(rlx, f"mir.attention %a0, %a1, %a2 {{{attrs}}} : {{T}}", [q, k, v],
          expected, rtol=1e-4, atol=1e-4)


def test_i16_is_refused_by_name(vulkan_rlx):
    """The SPIR-V back end stores no i16: a model with i16 tensors is refused
    naming them (the CPU runs it; test_mir_op_space.py walks i16 there)."""
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    err = vulkan_rlx.run(module("mir.add %a0, %a1 : {T}", [x, x], x),
                         {"a0": x, "a1": x}, expect_fail=True)
    assert "does not support the model's i16 tensors" in err, err
