# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Image encoders from Python: rlx.VisionFlow built from a transformers
Dinov2Model checkpoint at another image size than its config's, compiled and
run on a batch, against the model (1e-4 of the outputs' scale); a hand-made
ViT-style flow from the vision blocks (patch_embed, insert_tokens,
position_embed, vit_self_attn, dense_mlp) against a NumPy reference of one
patch grid; and the errors that name a bad weight."""

import numpy as np
import pytest

import rlx

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def scale_err(a, b):
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


@pytest.fixture(scope="module")
def dinov2(tmp_path_factory):
    torch.manual_seed(0)
    cfg = transformers.Dinov2Config(hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=4, image_size=24,
                                    patch_size=6, mlp_ratio=2)
    model = transformers.Dinov2Model(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.3 + (1.0 if "norm" in name and
                                                 name.endswith("weight") else 0))
    path = tmp_path_factory.mktemp("dinov2")
    model.save_pretrained(path)
    return path, model


def test_vision_flow_matches_dinov2(dinov2):
    path, model = dinov2
    recipe = rlx.VisionFlow.from_model_dir(path).image_size(30, 36)
    assert recipe.image == (30, 36)
    assert recipe.config.layer_scale and recipe.config.patch_size == 6
    weights = rlx.Weights.open(path)
    built = recipe.build(weights)
    pixels = np.random.default_rng(4).standard_normal((2, 3, 30, 36)).astype(np.float32)
    compiled = rlx.Session().compile(built, input_shapes={"pixel_values": list(pixels.shape)})
    compiled.load_params(weights)
    out = compiled.run({"pixel_values": pixels})
    with torch.no_grad():
        ref = model(torch.from_numpy(pixels))
    assert scale_err(out["last_hidden_state"], ref.last_hidden_state.numpy()) < 1e-4
    assert scale_err(out["pooler_output"], ref.pooler_output.numpy()) < 1e-4


def layer_norm(x, eps=1e-6):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps)


def test_blocks_by_hand():
    rng = np.random.default_rng(1)
    h, p, heads = 8, 4, 2
    w = {
        "proj.weight": rng.standard_normal((h, 3, p, p)).astype(np.float32) * 0.2,
        "proj.bias": rng.standard_normal(h).astype(np.float32),
        "cls": rng.standard_normal((1, 1, h)).astype(np.float32),
        "pos": rng.standard_normal((1, 5, h)).astype(np.float32),
    }
    for n in ("query", "key", "value"):
        w[f"l.attention.{n}.weight"] = rng.standard_normal((h, h)).astype(np.float32) * 0.3
        w[f"l.attention.{n}.bias"] = rng.standard_normal(h).astype(np.float32)
    w["l.output.dense.weight"] = rng.standard_normal((h, h)).astype(np.float32) * 0.3
    w["l.output.dense.bias"] = rng.standard_normal(h).astype(np.float32)
    spec = rlx.AttentionSpec()
    spec.num_heads = spec.num_kv_heads = heads
    spec.head_dim = h // heads
    flow = (rlx.ModelFlow("vit")
            .input("pixels", [1, 3, 8, 8], "f32")
            .patch_embed("proj", p)
            .insert_tokens("cls")
            .position_embed("pos", 2, 2)
            .vit_self_attn("l.", spec)
            .output("y"))
    model = rlx.Session().compile(flow.build(w))
    model.load_params(w)
    px = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    y = model.run({"pixels": px})["y"]
    # NumPy: unfold 2x2 patches, CLS, positions, unmasked attention.
    patches = px.reshape(1, 3, 2, p, 2, p).transpose(0, 2, 4, 1, 3, 5).reshape(1, 4, -1)
    x = patches @ w["proj.weight"].reshape(h, -1).T + w["proj.bias"]
    x = np.concatenate([w["cls"], x], 1) + w["pos"]
    q, k, v = (x @ w[f"l.attention.{n}.weight"].T + w[f"l.attention.{n}.bias"]
               for n in ("query", "key", "value"))
    split = lambda t: t.reshape(1, 5, heads, h // heads).transpose(0, 2, 1, 3)
    s = split(q) @ split(k).transpose(0, 1, 3, 2) / np.sqrt(h // heads)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = (a @ split(v)).transpose(0, 2, 1, 3).reshape(1, 5, h)
    ref = o @ w["l.output.dense.weight"].T + w["l.output.dense.bias"]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_bad_patch_weight():
    flow = (rlx.ModelFlow("vit").input("pixels", [1, 3, 8, 8], "f32")
            .patch_embed("proj", 4))
    w = {"proj.weight": np.zeros((8, 3, 2, 2), np.float32),
         "proj.bias": np.zeros(8, np.float32)}
    with pytest.raises(rlx.RLXError, match=r"weight 'proj.weight' has shape "
                       r"\[8, 3, 2, 2\]; expected \[hidden, 3, 4, 4\]"):
        flow.build(w)
