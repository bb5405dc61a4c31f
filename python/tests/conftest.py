# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Shared fixtures of the Python binding tests: the `rlx` module from the
build tree (PYTHONPATH=build/python, as ctest sets it), small random weights,
and tiny Hugging Face checkpoints made with scripts/make_tiny_models.py."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("RLX_BUILD_DIR", ROOT / "build"))
try:
    import rlx  # noqa: F401
except ImportError:
    sys.path.insert(0, str(BUILD / "python"))
    import rlx  # noqa: F401

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

# A small LLaMA: hidden H, intermediate I, HEADS query and KV_HEADS key/value
# heads of HD dims, VOCAB tokens.
H, I, HEADS, KV_HEADS, HD, VOCAB = 32, 48, 4, 2, 8, 64


def randn(rng, *shape, scale=0.2, offset=0.0):
    return (offset + scale * rng.standard_normal(shape)).astype(np.float32)


def llama_weights(layers, seed=1):
    """{name: array} of a small LLaMA: embedding, `layers` layers, norm."""
    rng = np.random.default_rng(seed)
    w = {
        "model.embed_tokens.weight": randn(rng, VOCAB, H, scale=1.0),
        "model.norm.weight": randn(rng, H, scale=0.1, offset=1.0),
    }
    for i in range(layers):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = randn(rng, H, scale=0.1, offset=1.0)
        w[p + "post_attention_layernorm.weight"] = randn(rng, H, scale=0.1, offset=1.0)
        w[p + "self_attn.q_proj.weight"] = randn(rng, HEADS * HD, H)
        w[p + "self_attn.k_proj.weight"] = randn(rng, KV_HEADS * HD, H)
        w[p + "self_attn.v_proj.weight"] = randn(rng, KV_HEADS * HD, H)
        w[p + "self_attn.o_proj.weight"] = randn(rng, H, HEADS * HD)
        w[p + "mlp.gate_proj.weight"] = randn(rng, I, H)
        w[p + "mlp.up_proj.weight"] = randn(rng, I, H)
        w[p + "mlp.down_proj.weight"] = randn(rng, H, I)
    return w


def attention_spec():
    return rlx.AttentionSpec(num_heads=HEADS, num_kv_heads=KV_HEADS, head_dim=HD)


def layer_spec(i):
    return rlx.DecoderLayerSpec(
        attention=attention_spec(),
        hidden=H,
        intermediate=I,
        rms_epsilon=1e-5,
        prefix=f"model.layers.{i}.",
    )


def llama_flow(layers, layer):
    """tokens, positions -> logits of a tied-embedding LLaMA whose layer i is
    `layer(i)`."""
    return (
        rlx.ModelFlow("tiny")
        .input("tokens", [1, None], "i32")
        .input("positions", [1, None], "i32")
        .token_embed()
        .repeat_layers(layers, layer)
        .final_norm(1e-5)
        .lm_head(tied=True)
        .output("logits")
    )


def run_tokens(built, weights, tokens):
    """Compiles `built` for len(tokens) tokens and returns its logits."""
    t = len(tokens)
    model = rlx.Session().compile(
        built, input_shapes={"tokens": [1, t], "positions": [1, t]}
    )
    model.load_params(weights)
    out = model.run(
        {
            "tokens": np.array([tokens], np.int32),
            "positions": np.arange(t, dtype=np.int32)[None],
        }
    )
    return out["logits"]


def scale_err(a, b):
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """A directory with `llama` (an HF checkpoint, GQA 4/2, 2 layers) and
    `llama.gguf`, made with transformers."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out = tmp_path_factory.mktemp("models")
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "make_tiny_models.py"),
            str(out),
            "--kind",
            "llama",
            "--name",
            "llama",
            "--heads",
            "4",
            "--kv-heads",
            "2",
            "--seed",
            "3",
            "--gguf",
        ],
        check=True,
        capture_output=True,
    )
    return out
