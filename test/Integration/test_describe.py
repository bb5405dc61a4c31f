# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""`rlx-run --model DIR --describe=json`: the reflection of a model's prefill
(decoder) or encoder (BERT) graph, compiled and not run: inputs and outputs
with the source's symbolic dims, weight blocks by layer summing to the
parameters' bytes (those of the checkpoint), arena and kernels."""

import json
import os
import struct
import subprocess
import sys

import pytest

from conftest import RLX_RUN, ROOT

pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("models")
    for kind in ("llama", "bert"):
        subprocess.run([sys.executable, str(ROOT / "scripts" / "make_tiny_models.py"),
                        str(out), "--kind", kind, "--heads", "4"],
                       check=True, capture_output=True)
    return out


def describe(model, *args):
    proc = subprocess.run([str(RLX_RUN), "--model", str(model), "--describe=json",
                           *map(str, args)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def checkpoint_bytes(model):
    """The byte size of every tensor in the directory's safetensors files."""
    total = 0
    for path in model.glob("*.safetensors"):
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        total += sum(t["data_offsets"][1] - t["data_offsets"][0]
                     for k, t in header.items() if k != "__metadata__")
    return total


def check_common(d, model):
    params = d["params"]
    blocks = params["blocks"]
    assert sum(b["bytes"] for b in blocks) == params["bytes"] > 0
    assert sum(b["count"] for b in blocks) == params["count"]
    assert params["bytes"] <= params["pool_bytes"]
    assert params["bytes"] == checkpoint_bytes(model)
    assert all(b["dtypes"] == ["f32"] for b in blocks), blocks
    assert d["arena"]["bytes"] > 0
    kernels = d["kernels"]
    assert kernels["count"] == len(kernels["list"]) > 0
    assert all(k["name"] and k["op"].startswith("mir.") for k in kernels["list"])
    profile = d["profile"]
    assert profile["toml"].startswith("[fusion]")
    # A profile names the presets it equals, else the nearest preset and the
    # keys that differ from it.
    if profile["presets"]:
        assert profile["nearest_preset"] == profile["presets"][0]
        assert profile["differences"] == []
    else:
        assert profile["nearest_preset"] and profile["differences"]
    assert d["shapes"] == "symbolic"
    return {b["prefix"]: b for b in blocks}


def test_describe_llama(models):
    d = describe(models / "llama", "--prompt-ids", "2,11,3")
    assert d["graph"] == "prefill" and d["tokens"] == 3
    inputs = {t["name"]: t for t in d["inputs"]}
    assert set(inputs) == {"tokens", "positions"}
    for t in inputs.values():
        assert t["dtype"] == "i32"
        assert t["shape"] == [1, 3]
        assert t["source_shape"] == [1, None]
    (logits,) = d["outputs"]
    assert logits["name"] == "logits" and logits["dtype"] == "f32"
    assert logits["shape"] == [1, 3, 256] and logits["source_shape"] == [1, None, 256]
    blocks = check_common(d, models / "llama")
    assert list(blocks) == ["lm_head.", "model.embed_tokens.", "model.layers.0.",
                            "model.layers.1.", "model.norm."]
    assert blocks["model.layers.0."]["bytes"] == blocks["model.layers.1."]["bytes"]
    ops = {k["op"] for k in d["kernels"]["list"]}
    assert "mir.attention" in ops
    # rlx-run keeps the file's precision unless told otherwise: the prefill
    # preset with stored weights.
    assert d["profile"]["presets"] == []
    assert d["profile"]["nearest_preset"] == "llama32_prefill"
    assert d["profile"]["differences"] == ['precision.weights = "stored"']
    assert d["execution"]["component"]["profile_key"] == (
        'custom (llama32_prefill with precision.weights = "stored")')
    f32 = describe(models / "llama", "--prompt-ids", "2,11,3",
                   "--weights-as", "f32")
    assert f32["profile"]["presets"][0] == "llama32_prefill"
    assert f32["execution"]["component"]["profile_key"] == "llama32_prefill"


def test_describe_bert(models):
    # Without --prompt-ids: 8 tokens.
    d = describe(models / "bert")
    assert d["graph"] == "encoder" and d["tokens"] == 8
    inputs = {t["name"]: t for t in d["inputs"]}
    assert set(inputs) == {"input_ids", "attention_mask", "position_ids",
                           "token_type_ids"}
    for t in inputs.values():
        assert t["dtype"] == "i32" and t["shape"] == [1, 8]
        assert None in t["source_shape"]
    outputs = {t["name"]: t for t in d["outputs"]}
    assert outputs["last_hidden_state"]["shape"] == [1, 8, 64]
    blocks = check_common(d, models / "bert")
    assert "encoder.layer.0." in blocks and "encoder.layer.1." in blocks
    assert blocks["encoder.layer.0."]["count"] == blocks["encoder.layer.1."]["count"]


def test_describe_text(models):
    proc = subprocess.run([str(RLX_RUN), "--model", str(models / "llama"),
                           "--describe"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "graph: prefill (8 tokens)" in out
    assert "tokens: i32 [1x8] (source [1x?])" in out
    assert "model.layers.1.: 6, f32" in out
    assert "arena: " in out and "kernels: " in out
    # Nothing ran.
    assert "tokens:" not in proc.stderr and "prefill:" not in out
