# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""mir-shard-tensor-parallel checked numerically: a LLaMA decoder layer
(4 heads, 2 or 1 KV heads, hidden 64, intermediate 128) lowered to fused MIR
and partitioned over 2 ranks in its `emulate` form (every rank's share in one
function, the partial sums added where the all-reduces are) computes what
the unsharded layer computes, on the same random weights and input, within
1e-5. The per-rank programs carry exactly two shard.all_reduce each and
differ from each other only in the slices they read.

A whole model (token embedding, one layer, final norm, LM head; tied or
untied) is partitioned the same way, the embedding and the LM head split over
the vocabulary: its `emulate` form (the ranks' masked partial embeddings
summed, their logit slices concatenated) matches the unsharded logits within
1e-5, and each rank's program carries one shard.all_reduce per embedding and
block and one shard.all_gather of the logits."""

import re
import subprocess

import numpy as np
import pytest

from conftest import BUILD

RLX_OPT = BUILD / "bin" / "rlx-opt"

LAYER = """func.func @layer(%x: tensor<1x7x64xf32> {{rlx.name = "x"}}, %pos: tensor<1x7xi32> {{rlx.name = "pos"}}) -> (tensor<1x7x64xf32> {{rlx.name = "out"}}) {{
  %n1 = hir.param "l0.input_norm" : tensor<64xf32>
  %wq = hir.param "l0.q" : tensor<64x64xf32>
  %wk = hir.param "l0.k" : tensor<{kv}x64xf32>
  %wv = hir.param "l0.v" : tensor<{kv}x64xf32>
  %wo = hir.param "l0.o" : tensor<64x64xf32>
  %n2 = hir.param "l0.post_norm" : tensor<64xf32>
  %wg = hir.param "l0.gate" : tensor<128x64xf32>
  %wu = hir.param "l0.up" : tensor<128x64xf32>
  %wd = hir.param "l0.down" : tensor<64x128xf32>
  %y = hir.llama_decoder_layer %x, %pos attn(%n1, %wq, %wk, %wv, %wo) post_norm(%n2) mlp(%wg, %wu, %wd) {{num_heads = 4 : i64, num_kv_heads = {kvh} : i64, head_dim = 16 : i64, rope_theta = 10000.0 : f32, rms_epsilon = 1.0e-5 : f32}} : (tensor<1x7x64xf32>, tensor<1x7xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<{kv}x64xf32>, tensor<{kv}x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x7x64xf32>
  return %y : tensor<1x7x64xf32>
}}
"""


def rlx_opt(rlx, text, *passes):
    src = rlx.tmp / "opt_in.mlir"
    src.write_text(text)
    proc = subprocess.run([str(RLX_OPT), str(src), *passes],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("kv_heads", [2, 1])
def test_tensor_parallel_layer_matches_unsharded(rlx, kv_heads):
    rng = np.random.default_rng(kv_heads)
    kv = 16 * kv_heads
    hir = LAYER.format(kv=kv, kvh=kv_heads)
    shapes = {"l0.input_norm": (64,), "l0.q": (64, 64), "l0.k": (kv, 64),
              "l0.v": (kv, 64), "l0.o": (64, 64), "l0.post_norm": (64,),
              "l0.gate": (128, 64), "l0.up": (128, 64), "l0.down": (64, 128)}
    params = {k: (rng.standard_normal(s) * (0.2 if len(s) == 2 else 1.0)
                  ).astype(np.float32) for k, s in shapes.items()}
    inputs = {"x": rng.standard_normal((1, 7, 64)).astype(np.float32),
              "pos": np.arange(7, dtype=np.int32)[None]}

    mir = rlx_opt(rlx, hir, "--convert-hir-to-mir=policy=direct")
    expected = rlx.run(mir, inputs, params)["out"]

    emulated = rlx_opt(rlx, mir,
                       "--mir-shard-tensor-parallel=ranks=2 emulate=true")
    assert emulated.count("mir.attention_block") == 2
    assert "shard." not in emulated
    actual = rlx.run(emulated, inputs, params)["out"]
    assert np.abs(expected).max() > 0.1
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)

    ranks = [rlx_opt(rlx, mir, f"--mir-shard-tensor-parallel=ranks=2 rank={r}")
             for r in (0, 1)]
    for text in ranks:
        assert text.count("shard.all_reduce") == 2
        assert "num_heads = 2 : i64, num_kv_heads = 1 : i64" in text
    for r, text in enumerate(ranks):
        assert f"rlx.rank = {{rank = {r} : i64, ranks = 2 : i64}}" in text
    # The rank programs differ only in their slices and their rlx.rank.
    strip = [re.sub(r"(start|rank) = \d+", r"\1 = N", t) for t in ranks]
    assert strip[0] == strip[1]


MODEL = """func.func @model(%ids: tensor<1x7xi32> {{rlx.name = "ids"}}, %pos: tensor<1x7xi32> {{rlx.name = "pos"}}) -> (tensor<1x7x{v}xf32> {{rlx.name = "logits"}}) {{
  %t = hir.param "embed" : tensor<{v}x64xf32>
  %h = hir.embed %ids, %t : (tensor<1x7xi32>, tensor<{v}x64xf32>) -> tensor<1x7x64xf32>
{layer}
  %nf = hir.param "norm" : tensor<64xf32>
  %f = hir.rms_norm %y, %nf {{epsilon = 1.0e-5 : f32}} : (tensor<1x7x64xf32>, tensor<64xf32>) -> tensor<1x7x64xf32>
  {head}
  return %logits : tensor<1x7x{v}xf32>
}}
"""

TIED_HEAD = ('%logits = hir.lm_head %f, %t {{tied}} : (tensor<1x7x64xf32>, '
             'tensor<{v}x64xf32>) -> tensor<1x7x{v}xf32>')
UNTIED_HEAD = ('%wh = hir.param "lm_head" : tensor<{v}x64xf32>\n'
               '  %logits = hir.lm_head %f, %wh : (tensor<1x7x64xf32>, '
               'tensor<{v}x64xf32>) -> tensor<1x7x{v}xf32>')


@pytest.mark.parametrize("tied,vocab", [(True, 100), (False, 100),
                                        (True, 101), (False, 101)])
def test_tensor_parallel_model_matches_unsharded(rlx, tied, vocab):
    """The whole model, its vocabulary split over the 2 ranks (100) or, when
    it does not split (101), replicated: every rank gathers from and
    multiplies by the whole table, with no collective for either."""
    rng = np.random.default_rng(7)
    # The body of LAYER, reading the embedding %h.
    body = LAYER.format(kv=32, kvh=2).split("\n")[1:-3]
    layer = "\n".join(body).replace("%y = hir.llama_decoder_layer %x",
                                    "%y = hir.llama_decoder_layer %h")
    head = (TIED_HEAD if tied else UNTIED_HEAD).format(v=vocab)
    hir = MODEL.format(layer=layer, head=head, v=vocab)
    shapes = {"embed": (vocab, 64), "l0.input_norm": (64,), "l0.q": (64, 64),
              "l0.k": (32, 64), "l0.v": (32, 64), "l0.o": (64, 64),
              "l0.post_norm": (64,), "l0.gate": (128, 64),
              "l0.up": (128, 64), "l0.down": (64, 128), "norm": (64,)}
    if not tied:
        shapes["lm_head"] = (vocab, 64)
    params = {k: (rng.standard_normal(s) * (0.2 if len(s) == 2 else 1.0)
                  ).astype(np.float32) for k, s in shapes.items()}
    # Ids at both ends of both ranks' vocabulary ranges [0, 50), [50, 100).
    inputs = {"ids": np.array([[0, 49, 50, vocab - 1, 7, 63, 50]],
                              dtype=np.int32),
              "pos": np.arange(7, dtype=np.int32)[None]}

    mir = rlx_opt(rlx, hir, "--convert-hir-to-mir=policy=direct")
    assert mir.count("mir.gather") == 1
    expected = rlx.run(mir, inputs, params)["logits"]

    emulated = rlx_opt(rlx, mir,
                       "--mir-shard-tensor-parallel=ranks=2 emulate=true")
    assert emulated.count("mir.gather") == (2 if vocab == 100 else 1)
    assert "shard." not in emulated
    actual = rlx.run(emulated, inputs, params)["logits"]
    assert np.abs(expected).max() > 0.1
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)

    for r in (0, 1):
        text = rlx_opt(rlx, mir,
                       f"--mir-shard-tensor-parallel=ranks=2 rank={r}")
        if vocab == 101:
            assert text.count("shard.all_reduce") == 2
            assert "shard.all_gather" not in text
            assert "tensor<1x7x101xf32>" in text
            continue
        assert text.count("shard.all_reduce") == 3
        assert text.count("shard.all_gather") == 1
        assert f"size = 50 : i64, start = {50 * r} : i64" in text
        assert ("gather_axis = 2 : tensor<1x7x50xf32> -> tensor<1x7x100xf32>"
                in text)
