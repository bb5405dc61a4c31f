# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The arena plan of a LLaMA decoder layer: smaller than the naive sum of its
buffers, at least the peak live set, and free of live overlaps
(lir-verify-plan), under both lowering policies."""

import re
import subprocess

import pytest

from conftest import BUILD

LAYER = """func.func @layer(%x: tensor<1x64x256xf32>, %pos: tensor<64xi32>) -> tensor<1x64x256xf32> {
  %n = hir.param "n" : tensor<256xf32>
  %wq = hir.param "q" : tensor<256x256xf32>
  %wk = hir.param "k" : tensor<64x256xf32>
  %wv = hir.param "v" : tensor<64x256xf32>
  %wo = hir.param "o" : tensor<256x256xf32>
  %n2 = hir.param "n2" : tensor<256xf32>
  %g = hir.param "g" : tensor<1024x256xf32>
  %u = hir.param "u" : tensor<1024x256xf32>
  %d = hir.param "d" : tensor<256x1024xf32>
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%n2) mlp(%g, %u, %d) {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 32 : i64} : (tensor<1x64x256xf32>, tensor<64xi32>, tensor<256xf32>, tensor<256x256xf32>, tensor<64x256xf32>, tensor<64x256xf32>, tensor<256x256xf32>, tensor<256xf32>, tensor<1024x256xf32>, tensor<1024x256xf32>, tensor<256x1024xf32>) -> tensor<1x64x256xf32>
  return %y : tensor<1x64x256xf32>
}
"""


@pytest.mark.parametrize("policy", ["direct", "fusable"])
def test_llama_layer_plan(tmp_path, policy):
    src = tmp_path / "layer.mlir"
    src.write_text(LAYER)
    proc = subprocess.run(
        [str(BUILD / "bin" / "rlx-opt"), str(src),
         f"--convert-hir-to-mir=policy={policy}", "--mir-fuse-all",
         "--canonicalize", "--convert-mir-to-lir", "--lir-plan-arena=stats", "--lir-verify-plan",
         "-o", "/dev/null"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    m = re.search(r"arena (\d+) bytes \(naive (\d+), peak live (\d+)\)", proc.stderr)
    assert m, proc.stderr
    arena, naive, peak = map(int, m.groups())
    assert peak <= arena < naive
    # The plan reuses memory: at most the peak plus alignment slack.
    assert arena <= 1.5 * peak
