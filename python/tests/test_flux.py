# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""FLUX's double-stream transformer (rlx.FluxFlow) against diffusers'
FluxTransformer2DModel: a tiny config with the real structure (two
double-stream and two single-stream blocks, multi-axis RoPE, with and without
guidance embeddings), random weights saved with save_pretrained, the output
`sample` within 1e-4 of its scale, on the CPU and on Vulkan (lavapipe); the
fusion report shows every joint attention fused; bad configs are named."""

import json
import os

import numpy as np
import pytest

import rlx

torch = pytest.importorskip("torch")
diffusers = pytest.importorskip("diffusers")

B, NI, NT = 2, 12, 5


def make(tmp_path, guidance=False, seed=0):
    torch.manual_seed(seed)
    model = diffusers.FluxTransformer2DModel(
        patch_size=1, in_channels=8, num_layers=2, num_single_layers=2,
        attention_head_dim=8, num_attention_heads=2, joint_attention_dim=12,
        pooled_projection_dim=10, guidance_embeds=guidance,
        axes_dims_rope=(2, 2, 4)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * (0.3 if p.dim() > 1 else 0.1)
                    + (1.0 if "norm" in name and p.dim() == 1 else 0.0))
    path = tmp_path / ("flux-g" if guidance else "flux")
    model.save_pretrained(path)
    return path, model


def inputs(guidance, seed=1):
    rng = np.random.default_rng(seed)
    img_ids = np.zeros((NI, 3), np.int32)
    img_ids[:, 1] = np.arange(NI) // 4
    img_ids[:, 2] = np.arange(NI) % 4
    feeds = {
        "hidden_states": rng.standard_normal((B, NI, 8)).astype(np.float32),
        "encoder_hidden_states": rng.standard_normal((B, NT, 12)).astype(np.float32),
        "pooled_projections": rng.standard_normal((B, 10)).astype(np.float32),
        "timestep": np.array([0.25, 0.9], np.float32),
        "img_ids": img_ids,
        "txt_ids": np.zeros((NT, 3), np.int32),
    }
    if guidance:
        feeds["guidance"] = np.array([3.5, 1.0], np.float32)
    return feeds


def reference(model, feeds):
    t = {k: torch.from_numpy(v) for k, v in feeds.items()}
    t["img_ids"] = t["img_ids"].float()
    t["txt_ids"] = t["txt_ids"].float()
    with torch.no_grad():
        return model(**t).sample.numpy()


def run(path, feeds, device="cpu"):
    flow = rlx.FluxFlow.from_model_dir(path).shape(B, NI, NT)
    weights = rlx.Weights.open(path / "diffusion_pytorch_model.safetensors")
    built = flow.build(weights)
    model = rlx.Session(device).compile(built)
    model.load_params(weights)
    return model.run(feeds)["sample"], model


def scale_err(a, b):
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("guidance", [False, True])
def test_parity_cpu(tmp_path, guidance):
    path, model = make(tmp_path, guidance)
    feeds = inputs(guidance)
    out, compiled = run(path, feeds)
    assert out.shape == (B, NI, 8)
    assert scale_err(out, reference(model, feeds)) < 1e-4
    # Each of the 2 double and 2 single blocks has one fused joint attention.
    assert "attention: 4" in compiled.stats.fused_ops, compiled.stats.fused_ops


def test_parity_vulkan(tmp_path):
    path, model = make(tmp_path, True)
    feeds = inputs(True)
    try:
        out, _ = run(path, feeds, "vulkan")
    except rlx.RLXError as e:
        if os.environ.get("RLX_REQUIRE_VULKAN") == "1" or "Vulkan" not in str(e):
            raise
        pytest.skip(f"no Vulkan device: {e}")
    assert scale_err(out, reference(model, feeds)) < 1e-4


def test_bad_configs(tmp_path):
    path, _ = make(tmp_path)
    cfg = json.loads((path / "config.json").read_text())
    for change, message in [
        ({"axes_dims_rope": [2, 2, 2]}, "sums to 6, not attention_head_dim 8"),
        ({"num_layers": 0}, "'num_layers' must be a positive integer"),
        ({"_class_name": "SD3Transformer2DModel"}, "must be \"FluxTransformer2DModel\""),
        ({"qk_norm": "layer_norm"}, "config key 'qk_norm' is not one RLX implements"),
    ]:
        (path / "config.json").write_text(json.dumps({**cfg, **change}))
        with pytest.raises(rlx.RLXError, match=message.replace("(", r"\(")):
            rlx.FluxFlow.from_model_dir(path)
