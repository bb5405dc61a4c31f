# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""rlx.load_weights reads a model directory as its recipe does: Phi-3's
fused matrices are seen as the separate q/k/v and gate/up ones, so the
recipe builds from them; the config's unknown keys and the recipe's options
are visible on rlx.TransformerConfig."""

import json

import numpy as np
import pytest

import rlx

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def test_phi3_weights_are_split(tmp_path):
    cfg = transformers.Phi3Config(vocab_size=64, hidden_size=32,
                                  intermediate_size=48, num_hidden_layers=1,
                                  num_attention_heads=4, num_key_value_heads=2,
                                  max_position_embeddings=64, pad_token_id=0)
    model = transformers.Phi3ForCausalLM(cfg)
    model.save_pretrained(tmp_path)
    weights = rlx.load_weights(tmp_path)
    names = set(weights.names())
    assert "model.layers.0.self_attn.k_proj.weight" in names
    assert "model.layers.0.mlp.up_proj.weight" in names
    assert "model.layers.0.self_attn.qkv_proj.weight" not in names
    qkv = model.model.layers[0].self_attn.qkv_proj.weight.detach().numpy()
    k = np.asarray(weights["model.layers.0.self_attn.k_proj.weight"])
    assert np.array_equal(k, qkv[32:48])


def test_config_reports_unknown_keys(tmp_path):
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32,
                                   intermediate_size=48, num_hidden_layers=1,
                                   num_attention_heads=4, attention_bias=True)
    d = cfg.to_dict()
    d["my_new_key"] = 1
    (tmp_path / "config.json").write_text(json.dumps(d))
    c = rlx.TransformerConfig.from_file(tmp_path / "config.json")
    assert c.unknown_keys == ["my_new_key"]
    assert c.qkv_bias and c.out_bias and not c.mlp_bias
    assert c.activation == "silu"


def test_moe_config_fields():
    """A Qwen2-MoE config's expert fields, and which layers route."""
    cfg = transformers.Qwen2MoeConfig(
        vocab_size=64, hidden_size=32, intermediate_size=48,
        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        num_experts=6, num_experts_per_tok=2, moe_intermediate_size=24,
        shared_expert_intermediate_size=40, mlp_only_layers=[2],
        decoder_sparse_step=1)
    c = rlx.TransformerConfig.from_json(cfg.to_json_string(), "config.json")
    assert c.model_type == "qwen2_moe" and c.unknown_keys == []
    assert (c.num_experts, c.experts_per_token) == (6, 2)
    assert (c.moe_intermediate, c.shared_expert_intermediate) == (24, 40)
    assert not c.norm_topk_prob
    assert c.moe_layers == [True, True, False, True]
    dense = rlx.TransformerConfig.from_json(
        transformers.LlamaConfig(vocab_size=64, hidden_size=32,
                                 intermediate_size=48, num_hidden_layers=1,
                                 num_attention_heads=4).to_json_string())
    assert dense.num_experts == 0 and dense.moe_layers == []
