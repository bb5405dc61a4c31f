# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Whole layers written in HIR, compiled by rlx-run under both lowering
policies, against the Hugging Face `transformers` implementations (eager
attention, f32) with random weights. Tolerance: 1e-4 relative to the output
scale."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from safetensors.numpy import save_file  # noqa: E402

torch.manual_seed(0)


def run_layer(rlx, mlir, inputs, weights, policy):
    path = rlx.tmp / "weights.safetensors"
    save_file({k: np.ascontiguousarray(v) for k, v in weights.items()}, str(path))
    return rlx.run(mlir, inputs, args=["--params", str(path), "--policy", policy])


def state(module):
    return {k: v.detach().numpy().astype(np.float32)
            for k, v in module.state_dict().items()}


def causal_mask(t):
    m = torch.full((t, t), torch.finfo(torch.float32).min).triu(1)
    return m[None, None]


def close(actual, expected):
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4 * scale)


LLAMA_LAYER = """func.func @layer(%x: tensor<1x?x64xf32> {{rlx.name = "x"}}, %pos: tensor<1x?xi32> {{rlx.name = "pos"}}) -> (tensor<1x?x64xf32> {{rlx.name = "out"}}) {{
  %n1 = hir.param "input_layernorm.weight" : tensor<64xf32>
  %wq = hir.param "self_attn.q_proj.weight" : tensor<64x64xf32>
  %wk = hir.param "self_attn.k_proj.weight" : tensor<{kv}x64xf32>
  %wv = hir.param "self_attn.v_proj.weight" : tensor<{kv}x64xf32>
  %wo = hir.param "self_attn.o_proj.weight" : tensor<64x64xf32>
  %n2 = hir.param "post_attention_layernorm.weight" : tensor<64xf32>
  %wg = hir.param "mlp.gate_proj.weight" : tensor<128x64xf32>
  %wu = hir.param "mlp.up_proj.weight" : tensor<128x64xf32>
  %wd = hir.param "mlp.down_proj.weight" : tensor<64x128xf32>
  %y = hir.llama_decoder_layer %x, %pos attn(%n1, %wq, %wk, %wv, %wo) post_norm(%n2) mlp(%wg, %wu, %wd) {{num_heads = 4 : i64, num_kv_heads = {kvh} : i64, head_dim = 16 : i64, rope_theta = 10000.0 : f32, rms_epsilon = 1.0e-5 : f32}} : (tensor<1x?x64xf32>, tensor<1x?xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<{kv}x64xf32>, tensor<{kv}x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}}
"""


@pytest.mark.parametrize("policy", ["direct", "fusable"])
@pytest.mark.parametrize("kv_heads,t", [(2, 7), (4, 1), (1, 16)])
def test_llama_decoder_layer(rlx, policy, kv_heads, t):
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as ml
    cfg = LlamaConfig(hidden_size=64, intermediate_size=128,
                      num_attention_heads=4, num_key_value_heads=kv_heads,
                      head_dim=16, rms_norm_eps=1e-5, rope_theta=10000.0,
                      max_position_embeddings=256)
    cfg._attn_implementation = "eager"
    layer = ml.LlamaDecoderLayer(cfg, layer_idx=0).eval()
    for p in layer.parameters():
        torch.nn.init.normal_(p, std=0.2)
    rotary = ml.LlamaRotaryEmbedding(cfg)
    x = torch.randn(1, t, 64)
    pos = torch.arange(t)[None]
    with torch.no_grad():
        cos, sin = rotary(x, pos)
        ref = layer(x, attention_mask=causal_mask(t), position_ids=pos,
                    position_embeddings=(cos, sin))
    ref = (ref[0] if isinstance(ref, tuple) else ref).numpy()
    mlir = LLAMA_LAYER.format(kv=16 * kv_heads, kvh=kv_heads)
    out = run_layer(rlx, mlir, {"x": x.numpy(), "pos": pos.numpy().astype(np.int32)},
                    state(layer), policy)["out"]
    close(out, ref)


BERT_LAYER = """func.func @layer(%x: tensor<2x?x64xf32> {rlx.name = "x"}, %m: tensor<2x?xi32> {rlx.name = "mask"}) -> (tensor<2x?x64xf32> {rlx.name = "out"}) {
  %wq = hir.param "attention.self.query.weight" : tensor<64x64xf32>
  %bq = hir.param "attention.self.query.bias" : tensor<64xf32>
  %wk = hir.param "attention.self.key.weight" : tensor<64x64xf32>
  %bk = hir.param "attention.self.key.bias" : tensor<64xf32>
  %wv = hir.param "attention.self.value.weight" : tensor<64x64xf32>
  %bv = hir.param "attention.self.value.bias" : tensor<64xf32>
  %wo = hir.param "attention.output.dense.weight" : tensor<64x64xf32>
  %bo = hir.param "attention.output.dense.bias" : tensor<64xf32>
  %g1 = hir.param "attention.output.LayerNorm.weight" : tensor<64xf32>
  %b1 = hir.param "attention.output.LayerNorm.bias" : tensor<64xf32>
  %wi = hir.param "intermediate.dense.weight" : tensor<128x64xf32>
  %bi = hir.param "intermediate.dense.bias" : tensor<128xf32>
  %w2 = hir.param "output.dense.weight" : tensor<64x128xf32>
  %b2 = hir.param "output.dense.bias" : tensor<64xf32>
  %g2 = hir.param "output.LayerNorm.weight" : tensor<64xf32>
  %bb2 = hir.param "output.LayerNorm.bias" : tensor<64xf32>
  %y = hir.bert_encoder_layer %x mask(%m) attn(%wq, %bq, %wk, %bk, %wv, %bv, %wo, %bo) ln1(%g1, %b1) ffn(%wi, %bi, %w2, %b2) ln2(%g2, %bb2) {num_heads = 4 : i64, head_dim = 16 : i64, ln_epsilon = 1.0e-12 : f32} : (tensor<2x?x64xf32>, tensor<2x?xi32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x?x64xf32>
  return %y : tensor<2x?x64xf32>
}
"""


@pytest.mark.parametrize("policy", ["direct", "fusable"])
@pytest.mark.parametrize("t", [5, 9])
def test_bert_encoder_layer(rlx, policy, t):
    from transformers import BertConfig
    from transformers.models.bert import modeling_bert as mb
    cfg = BertConfig(hidden_size=64, num_attention_heads=4, intermediate_size=128,
                     layer_norm_eps=1e-12, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)
    cfg._attn_implementation = "eager"
    layer = mb.BertLayer(cfg).eval()
    for p in layer.parameters():
        torch.nn.init.normal_(p, std=0.2)
    x = torch.randn(2, t, 64)
    mask = torch.ones(2, t, dtype=torch.int32)
    mask[0, t - 2:] = 0  # padded tail in the first sequence
    ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    with torch.no_grad():
        ref = layer(x, attention_mask=ext)
    ref = (ref[0] if isinstance(ref, tuple) else ref).numpy()
    out = run_layer(rlx, BERT_LAYER, {"x": x.numpy(), "mask": mask.numpy()},
                    state(layer), policy)["out"]
    close(out, ref)
