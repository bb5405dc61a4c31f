# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Image encoders end to end (`rlx-run --model DIR --image pixels.npy`)
against transformers' ViTModel, Dinov2Model and Dinov2WithRegistersModel,
built from small configs with the real structure (random weights, saved with
save_pretrained): last_hidden_state and pooler_output for a batch of images,
at the config's image size and at other sizes (position embeddings resized by
bicubic interpolation, as interpolate_pos_encoding does), on the CPU and on
Vulkan (lavapipe). Tolerance: 1e-4 relative to the outputs' scale."""

import json
import os
import subprocess

import numpy as np
import pytest

from conftest import RLX_RUN, require_vulkan

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

COMMON = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              image_size=32, patch_size=8, num_channels=3)
KINDS = {
    "vit": (transformers.ViTConfig, transformers.ViTModel,
            dict(intermediate_size=48, hidden_act="gelu")),
    "vit-nopool-relu": (transformers.ViTConfig, transformers.ViTModel,
                        dict(intermediate_size=40, hidden_act="relu",
                             qkv_bias=False)),
    "dinov2": (transformers.Dinov2Config, transformers.Dinov2Model,
               dict(mlp_ratio=2, layerscale_value=0.5)),
    "dinov2-swiglu": (transformers.Dinov2Config, transformers.Dinov2Model,
                      dict(mlp_ratio=4, use_swiglu_ffn=True)),
    "dinov2-registers": (transformers.Dinov2WithRegistersConfig,
                         transformers.Dinov2WithRegistersModel,
                         dict(mlp_ratio=2, num_register_tokens=3)),
}


def make(tmp_path, kind, seed=5):
    cfg_cls, model_cls, extra = KINDS[kind]
    torch.manual_seed(seed)
    cfg = cfg_cls(**COMMON, **extra)
    kwargs = {"add_pooling_layer": False} if kind == "vit-nopool-relu" else {}
    model = model_cls(cfg, **kwargs).eval()
    # Randomize what initialization leaves constant (LayerScale, norms,
    # biases, the CLS and register tokens) so every weight matters.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "mask_token" not in name:
                p.copy_(torch.randn_like(p) * (0.5 if p.dim() > 1 else 0.2)
                        + (1.0 if name.endswith("norm1.weight") else 0.0))
    path = tmp_path / kind
    model.save_pretrained(path)
    return path, model


def run(path, pixels, out_dir, *args):
    np.save(out_dir / "pixels.npy", pixels)
    proc = subprocess.run([str(RLX_RUN), "--model", str(path), "--image",
                           str(out_dir / "pixels.npy"), "--output-dir",
                           str(out_dir), *args], capture_output=True, text=True)
    return proc


def scale_err(a, b):
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


def reference(model, pixels, interpolate):
    kwargs = {}
    if isinstance(model, transformers.ViTModel):
        kwargs["interpolate_pos_encoding"] = interpolate
    with torch.no_grad():
        return model(torch.from_numpy(pixels), **kwargs)


def check(tmp_path, kind, size, *device, batch=2):
    path, model = make(tmp_path, kind)
    rng = np.random.default_rng(11)
    pixels = rng.standard_normal((batch, 3, *size)).astype(np.float32)
    out = tmp_path / "out"
    out.mkdir()
    proc = run(path, pixels, out, *device)
    assert proc.returncode == 0, proc.stderr
    ref = reference(model, pixels, interpolate=tuple(size) != (32, 32))
    h = np.load(out / "last_hidden_state.npy")
    assert h.shape == tuple(ref.last_hidden_state.shape)
    assert scale_err(h, ref.last_hidden_state.numpy()) < 1e-4
    if ref.pooler_output is not None:
        p = np.load(out / "pooler_output.npy")
        assert scale_err(p, ref.pooler_output.numpy()) < 1e-4
    else:
        assert not (out / "pooler_output.npy").exists()
    return proc


@pytest.mark.parametrize("kind", list(KINDS))
def test_parity_native_size(tmp_path, kind):
    check(tmp_path, kind, (32, 32))


@pytest.mark.parametrize("kind", ["vit", "dinov2", "dinov2-registers"])
@pytest.mark.parametrize("size", [(48, 48), (24, 40), (36, 44)])
def test_parity_other_sizes(tmp_path, kind, size):
    # Upsampled, non-square and with partial patches dropped.
    check(tmp_path, kind, size)


@pytest.mark.parametrize("kind", ["vit", "dinov2-swiglu"])
def test_parity_vulkan(tmp_path, kind):
    require_vulkan()
    check(tmp_path, kind, (40, 32), "--device", "vulkan")


def test_one_image_chw(tmp_path):
    path, model = make(tmp_path, "dinov2")
    pixels = np.random.default_rng(2).standard_normal((3, 32, 32)).astype(np.float32)
    proc = run(path, pixels, tmp_path, "--quiet")
    assert proc.returncode == 0, proc.stderr
    ref = reference(model, pixels[None], False)
    assert scale_err(np.load(tmp_path / "last_hidden_state.npy"),
                     ref.last_hidden_state.numpy()) < 1e-4


def test_fusion_report(tmp_path):
    path, _ = make(tmp_path, "dinov2-swiglu")
    pixels = np.zeros((1, 3, 32, 32), np.float32)
    proc = run(path, pixels, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "dinov2 encoder (1 x 32x32 images)" in proc.stdout
    # Per layer: one fused attention, the SwiGLU gate, and both residual
    # adds folded into the next LayerNorm (the last into the final norm);
    # for one image the position-embedding add folds into the first norm
    # too (for a batch it broadcasts over the images, and stays an add).
    fused = next(l for l in proc.stdout.splitlines() if "fused ops:" in l)
    assert "attention_block: 2" in fused
    assert "fused_glu: 2" in fused
    assert "fused_residual_layer_norm: 5" in fused
    assert "0 missed" in proc.stdout and "missed fusion" not in proc.stderr
    # The mask token is a pretraining head: a warning, not an error.
    assert "'embeddings.mask_token'" in proc.stderr


@pytest.mark.parametrize("pixels, message", [
    (np.zeros((1, 4, 32, 32), np.float32), "expected f32 pixels [batch, 3, height, width]"),
    (np.zeros((1, 3, 32, 32), np.float64), "expected f32 pixels"),
    (np.zeros((1, 3, 4, 32), np.float32), "holds no whole 8x8 patch"),
])
def test_bad_pixels(tmp_path, pixels, message):
    path, _ = make(tmp_path, "vit")
    proc = run(path, pixels, tmp_path)
    assert proc.returncode != 0
    assert message in proc.stderr


def edit_config(path, **changes):
    cfg = json.loads((path / "config.json").read_text())
    cfg.update(changes)
    (path / "config.json").write_text(json.dumps(cfg))


@pytest.mark.parametrize("change, message", [
    ({"patch_size": 16}, "weight 'embeddings.patch_embeddings.projection.weight' has shape [32, 3, 8, 8]"),
    ({"hidden_act": "xielu"}, "'hidden_act' = \"xielu\" is not supported"),
    ({"image_size": "big"}, "'image_size' must be a positive integer"),
    ({"mlp_ratio": 0}, "'mlp_ratio' must be positive"),
    ({"num_attention_heads": 5}, "is not a multiple of num_attention_heads (5)"),
])
def test_bad_config(tmp_path, change, message):
    path, _ = make(tmp_path, "vit" if "mlp_ratio" not in change else "dinov2")
    edit_config(path, **change)
    proc = run(path, np.zeros((1, 3, 32, 32), np.float32), tmp_path)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


def test_missing_weight(tmp_path):
    from safetensors.numpy import load_file, save_file
    path, _ = make(tmp_path, "dinov2")
    w = load_file(path / "model.safetensors")
    del w["encoder.layer.1.layer_scale2.lambda1"]
    save_file(w, path / "model.safetensors", metadata={"format": "pt"})
    proc = run(path, np.zeros((1, 3, 32, 32), np.float32), tmp_path)
    assert proc.returncode != 0
    assert "encoder.layer.1.layer_scale2.lambda1" in proc.stderr


def test_image_refused_for_a_decoder_and_prompt_for_vision(tmp_path):
    path, _ = make(tmp_path, "vit")
    np.save(tmp_path / "p.npy", np.zeros((1, 3, 32, 32), np.float32))
    proc = subprocess.run([str(RLX_RUN), "--model", str(path), "--prompt-ids", "1,2"],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "is an image encoder ('vit'): give --image pixels.npy" in proc.stderr
    proc = subprocess.run([str(RLX_RUN), "--model", str(path), "--image",
                           str(tmp_path / "p.npy"), "--prompt-ids", "1"],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "takes no --prompt" in proc.stderr


def test_describe(tmp_path):
    path, _ = make(tmp_path, "dinov2-registers")
    proc = subprocess.run([str(RLX_RUN), "--model", str(path), "--describe"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # 16 patches, [CLS] and 3 registers.
    assert "graph: encoder (20 tokens)" in proc.stdout
    assert "pixel_values: f32 [1x3x32x32]" in proc.stdout
    assert "last_hidden_state: f32 [1x20x32]" in proc.stdout
