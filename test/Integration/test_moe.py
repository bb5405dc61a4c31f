# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Mixture-of-experts decoders against the `transformers` model classes
(Mixtral, Qwen2-MoE with its shared expert, Qwen3-MoE with
mlp_only_layers), random weights saved with `save_pretrained` in the
per-expert layout HF checkpoints use: prompt logits within 1e-4 of the
logits' scale and greedy ids equal through the KV-cache decode graphs, on
the CPU and on Vulkan (lavapipe). Then what RLX refuses in their configs."""

import json

import pytest

from conftest import require_vulkan
from test_architectures import PROMPT, check_decoder, rlx
from test_architectures import make as make_model

pytest.importorskip("torch")
pytest.importorskip("transformers")

# Each kind's expert options, on test_architectures' SMALL shapes.
KINDS = {
    "mixtral": dict(num_local_experts=4, num_experts_per_tok=2),
    "qwen2_moe": dict(num_experts=6, num_experts_per_tok=2,
                      moe_intermediate_size=40,
                      shared_expert_intermediate_size=56),
    "qwen3_moe": dict(num_experts=8, num_experts_per_tok=3,
                      moe_intermediate_size=32, norm_topk_prob=True,
                      num_hidden_layers=3, mlp_only_layers=[1]),
}


def make(tmp_path, kind, seed=3, **overrides):
    return make_model(tmp_path, kind, seed, **{**KINDS[kind], **overrides})


def check(tmp_path, path, model, *device, new_tokens=5):
    return check_decoder(tmp_path, path, model, new_tokens=new_tokens,
                         device=device)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_parity_cpu(tmp_path, kind):
    path, model = make(tmp_path, kind)
    check(tmp_path, path, model)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_parity_vulkan(tmp_path, kind):
    require_vulkan()
    path, model = make(tmp_path, kind)
    check(tmp_path, path, model, "--device", "vulkan", new_tokens=3)


def edit_config(path, **changes):
    cfg = json.loads((path / "config.json").read_text())
    cfg.update(changes)
    (path / "config.json").write_text(json.dumps(cfg))


@pytest.mark.parametrize("kind,changes,message", [
    ("mixtral", dict(num_experts_per_tok=5),
     "'num_experts_per_tok' = 5 must be in [1, 4]"),
    ("qwen2_moe", dict(num_experts_per_tok=0),
     "'num_experts_per_tok' must be a positive integer, found 0"),
    ("qwen3_moe", dict(mlp_only_layers=[0, 3]),
     "'mlp_only_layers' entry 3 is not a layer index in [0, 3)"),
    ("qwen3_moe", dict(mlp_only_layers="1"),
     "'mlp_only_layers'"),
    ("qwen3_moe", dict(decoder_sparse_step=0),
     "'decoder_sparse_step' must be a positive integer, found 0"),
    ("qwen3_moe", dict(num_experts=5, num_local_experts=8),
     "'num_experts' (5) and 'num_local_experts' (8) disagree"),
    ("qwen2_moe", dict(moe_intermediate_size=None),
     "moe_intermediate_size"),
])
def test_config_refused(tmp_path, kind, changes, message):
    path, _ = make(tmp_path, kind)
    edit_config(path, **{k: v for k, v in changes.items() if v is not None})
    if any(v is None for v in changes.values()):
        cfg = json.loads((path / "config.json").read_text())
        for k, v in changes.items():
            if v is None:
                cfg.pop(k, None)
        (path / "config.json").write_text(json.dumps(cfg))
    proc = rlx(path, PROMPT, "--max-new-tokens", "0")
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


def test_missing_expert_named(tmp_path):
    """A config with more experts than the file holds: the first missing
    expert weight is named."""
    path, _ = make(tmp_path, "mixtral")
    edit_config(path, num_local_experts=5)
    proc = rlx(path, PROMPT, "--max-new-tokens", "0")
    assert proc.returncode != 0
    assert "model.layers.0.block_sparse_moe.experts.4.w1.weight" in proc.stderr, \
        proc.stderr


def test_dense_layers_skip_experts(tmp_path):
    """Qwen3-MoE's mlp_only_layers and decoder_sparse_step: the dense layers
    read mlp.gate_proj (intermediate_size), the others the experts."""
    path, model = make(tmp_path, "qwen3_moe", decoder_sparse_step=2,
                       mlp_only_layers=[], num_hidden_layers=4)
    check(tmp_path, path, model, new_tokens=3)
