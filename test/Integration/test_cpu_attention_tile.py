# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The blocked CPU attention's register tiles against NumPy.

lir-select-strategy picks one tile per head dim and GQA group
(`#lir.config<attention_blocked, tile = [heads, query positions]>`; its
`attention-rows` option sets the rows), so a model run exercises one shape.
These tests hand the code generator each kind of tile through a LIR module
whose attention kernel already carries it: one row, heads of the group
sharing a tile, several positions of one head (with a partial last tile),
both at once, and more rows than the default's 16 accumulators; causal,
sliding-window and unmasked, prefill and a decode step.
"""

import math
import sys

import numpy as np
import pytest

from conftest import ROOT, assert_close

sys.path.insert(0, str(ROOT / "fuzz"))
import difffuzz  # noqa: E402  (its NumPy interpreter is the reference)

MODULE = """
lir.entry @attention arena_size = {arena}, param_size = 0, alignment = 64 {{
  %q = lir.view arena[0] : memref<{Q}xf32>
  %k = lir.view arena[{k_at}] : memref<{K}xf32>
  %v = lir.view arena[{v_at}] : memref<{K}xf32>
  %o = lir.view arena[{o_at}] : memref<{Q}xf32>
  lir.io input "q" %q : memref<{Q}xf32>
  lir.io input "k" %k : memref<{K}xf32>
  lir.io input "v" %v : memref<{K}xf32>
  lir.kernel "attention" ins(%q, %k, %v : memref<{Q}xf32>, memref<{K}xf32>, memref<{K}xf32>) outs(%o : memref<{Q}xf32>) attributes {{config = #lir.config<attention_blocked, tile = [{heads}, {positions}]>}} {{
  ^bb0(%a: tensor<{Q}xf32>, %b: tensor<{K}xf32>, %c: tensor<{K}xf32>):
    %y = mir.attention %a, %b, %c {{{attrs}}} : (tensor<{Q}xf32>, tensor<{K}xf32>, tensor<{K}xf32>) -> tensor<{Q}xf32>
    lir.yield %y : tensor<{Q}xf32>
  }}
  lir.io output "o" %o : memref<{Q}xf32>
}}
"""


def up64(v):
    return (v + 63) // 64 * 64


SHAPES = [
    # (tq, tk, heads, kv heads, head dim, mask, window)
    (7, 7, 4, 2, 16, "causal", 0),
    (9, 9, 8, 2, 32, "sliding_window", 4),
    (5, 12, 4, 4, 16, "none", 0),
    (1, 19, 8, 2, 64, "causal", 0),
    # Several queries over two whole blocks of 16 keys and a tail: the
    # transposed keys and copied value rows of whole blocks.
    (21, 37, 4, 2, 64, "causal", 0),
]
TILES = [(1, 1), (2, 1), (1, 3), (2, 2), (2, 4), (1, 8)]


@pytest.mark.parametrize(
    "tq,tk,h,kv,hd,mask,window,heads,positions",
    # The tile's heads divide the GQA group (the code generator refuses
    # others: test/Conversion/LIRToLLVM/errors.mlir).
    [(*shape, *tile) for shape in SHAPES for tile in TILES
     if (shape[2] // shape[3]) % tile[0] == 0])
def test_attention_tiles(rlx, tq, tk, h, kv, hd, mask, window, heads,
                         positions):
    rng = np.random.default_rng(tq * 100 + heads * 10 + positions)
    q = rng.standard_normal((1, tq, h * hd)).astype(np.float32)
    k = rng.standard_normal((1, tk, kv * hd)).astype(np.float32)
    v = rng.standard_normal((1, tk, kv * hd)).astype(np.float32)
    scale = 1 / math.sqrt(hd)
    attrs = (f"num_heads = {h} : i64, num_kv_heads = {kv} : i64, "
             f"head_dim = {hd} : i64, scale = {scale} : f32, "
             f"mask_kind = #mir<mask {mask}>, window = {window} : i64")
    qb, kb = 4 * q.size, 4 * k.size
    k_at = up64(qb)
    v_at = k_at + up64(kb)
    o_at = v_at + up64(kb)
    module = MODULE.format(Q=f"1x{tq}x{h * hd}", K=f"1x{tk}x{kv * hd}",
                           arena=o_at + up64(qb), k_at=k_at, v_at=v_at,
                           o_at=o_at, heads=heads, positions=positions,
                           attrs=attrs)
    out = rlx.run(module, {"q": q, "k": k, "v": v})["o"]
    want = difffuzz.attention(q.astype(np.float64), k, v, h, kv, hd, scale,
                              mask, window, 0.0, None)
    # Sums of at most 19 products of unit values: f32 rounding.
    assert_close(out, want, 1e-5, 1e-5)


@pytest.mark.parametrize("rows", [1, 3, 8])
def test_profile_attention_rows_keeps_the_model_output(tmp_path, rows):
    """`[backend.cpu] attention_rows` (the profile's form of the option) on
    a whole model: a LLaMA (head dim 16, GQA group of 2) generates the
    tokens and the prompt logits of the default tile (4 rows), within 1e-5
    of their scale. test/Pipelines/attention-rows-profile.test shows the
    tile each value gives."""
    import subprocess
    from conftest import RLX_RUN, tokens
    from test_architectures import make
    model, _ = make(tmp_path, "llama", seed=3)
    profile = tmp_path / "rows.rlx.toml"
    profile.write_text(f"[backend.cpu]\nattention_rows = {rows}\n")

    def run(tag, *extra):
        out = tmp_path / f"{tag}.npy"
        proc = subprocess.run(
            [str(RLX_RUN), "--model", str(model), "--prompt-ids",
             "3,17,99,5,64,127,0,8,9", "--max-new-tokens", "4",
             "--logits-out", str(out), *extra],
            capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return tokens(proc), np.load(out)

    ids, logits = run("default")
    ids_rows, logits_rows = run("rows", "--profile", str(profile))
    assert np.abs(logits).max() > 0.1
    np.testing.assert_allclose(logits_rows, logits, rtol=0,
                               atol=1e-5 * np.abs(logits).max())
    assert ids_rows == ids
