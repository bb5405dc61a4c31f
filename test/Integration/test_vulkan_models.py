# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Tiny models end to end on Vulkan (`rlx-run --model ... --device vulkan`):
prompt logits (prefill) against Hugging Face `transformers` and the CPU,
greedy generation with the KV cache (decode steps) giving the same tokens as
the CPU and `transformers`, with step logits within 1e-4 of the CPU's
(relative to the logits' scale); BERT hidden states likewise.

Skipped when no Vulkan device exists, unless RLX_REQUIRE_VULKAN=1."""

import numpy as np
import pytest

from conftest import require_vulkan
from test_recipes import (DECODERS, hf_causal, models, rlx_model,  # noqa: F401
                          scale_err, torch)


@pytest.fixture(autouse=True)
def vulkan():
    require_vulkan()


def run_both(path, prompt, tmp_path, *args):
    """Runs rlx-run --model on the CPU and on Vulkan; returns both results
    (stdout, {file: array}) for the files named by `args` placeholders."""
    out = {}
    for device in ("cpu", "vulkan"):
        d = tmp_path / device
        d.mkdir()
        files = [str(d / a[1:]) if isinstance(a, str) and a.startswith("@")
                 else a for a in args]
        proc = rlx_model(path, prompt, *files, "--device", device)
        assert proc.returncode == 0, proc.stderr
        arrays = {a[1:]: np.load(d / a[1:]) for a in args
                  if isinstance(a, str) and a.startswith("@")}
        out[device] = (proc.stdout, arrays)
    return out


def tokens_of(stdout):
    return [int(t) for t in stdout.split("tokens:")[1].split("\n")[0].split()]


@pytest.mark.parametrize("policy", ["direct", "fusable"])
@pytest.mark.parametrize("name", DECODERS)
def test_decoder_prefill_logits(models, tmp_path, name, policy):
    prompt = [1, 5, 9, 13, 21, 34, 55]
    r = run_both(models / name, prompt, tmp_path, "--max-new-tokens", "0",
                 "--logits-out", "@logits.npy", "--policy", policy, "--quiet")
    vk, cpu = r["vulkan"][1]["logits.npy"], r["cpu"][1]["logits.npy"]
    m = hf_causal(models / name)
    with torch.no_grad():
        ref = m(torch.tensor([prompt])).logits.numpy()
    assert scale_err(vk, ref) < 1e-4
    assert scale_err(vk, cpu) < 1e-4


@pytest.mark.parametrize("name", DECODERS)
def test_decoder_generate(models, tmp_path, name):
    """Greedy decoding with the KV cache: the demo's tokens on Vulkan."""
    prompt = [2, 11, 3, 30, 8]
    r = run_both(models / name, prompt, tmp_path, "--max-new-tokens", "12",
                 "--step-logits-out", "@steps.npy")
    vk_tokens, cpu_tokens = tokens_of(r["vulkan"][0]), tokens_of(r["cpu"][0])
    assert vk_tokens == cpu_tokens
    m = hf_causal(models / name)
    with torch.no_grad():
        hf = m.generate(torch.tensor([prompt]), max_new_tokens=12,
                        do_sample=False)[0, len(prompt):].tolist()
    assert vk_tokens == hf
    assert scale_err(r["vulkan"][1]["steps.npy"], r["cpu"][1]["steps.npy"]) < 1e-4


@pytest.mark.parametrize("name", ["llama-gqa2", "qwen3"])
def test_decoder_compute_f16(models, tmp_path, name):
    """--compute f16 (activations rounded to f16 between kernels): the same
    tokens as the CPU's under the same rounding, the prompt logits and every
    decode step's within a few f16 roundings of the CPU's (a value the two
    compute 1e-7 apart may round to neighbouring f16 values, 2^-11 apart,
    and carry that on), and off the f32 computation's by about as much."""
    prompt = [2, 11, 3, 30, 8]
    args = ("--max-new-tokens", "6", "--logits-out", "@logits.npy",
            "--step-logits-out", "@steps.npy")
    r = run_both(models / name, prompt, tmp_path, *args, "--compute", "f16")
    vk, cpu = r["vulkan"][1], r["cpu"][1]
    assert tokens_of(r["vulkan"][0]) == tokens_of(r["cpu"][0])
    errs = {f: scale_err(vk[f], cpu[f]) for f in ("logits.npy", "steps.npy")}
    (tmp_path / "f32").mkdir()
    f32 = run_both(models / name, prompt, tmp_path / "f32", *args)["vulkan"][1]
    off = scale_err(vk["logits.npy"], f32["logits.npy"])
    print(name, errs, off)
    assert max(errs.values()) < 2e-3, errs
    assert 1e-4 < off < 5e-3, off


def test_decoder_generate_staging(models, tmp_path, monkeypatch):
    """The discrete-GPU path (device-local buffers, staging copies recorded
    in the command buffer, parameter uploads through a staging buffer),
    forced on any device with RLX_VULKAN_STAGING=1."""
    monkeypatch.setenv("RLX_VULKAN_STAGING", "1")
    prompt = [2, 11, 3, 30, 8]
    r = run_both(models / "llama-gqa2", prompt, tmp_path, "--max-new-tokens",
                 "8", "--step-logits-out", "@steps.npy")
    assert tokens_of(r["vulkan"][0]) == tokens_of(r["cpu"][0])
    assert scale_err(r["vulkan"][1]["steps.npy"], r["cpu"][1]["steps.npy"]) < 1e-4


@pytest.mark.parametrize("prompt", [[101 % 256, 23, 102], list(range(100, 117))])
def test_bert(models, tmp_path, prompt):
    from transformers import AutoModel
    h = {}
    for device in ("cpu", "vulkan"):
        proc = rlx_model(models / "bert", prompt, "--output-dir",
                         str(tmp_path / device), "--quiet", "--device", device)
        assert proc.returncode == 0, proc.stderr
        h[device] = np.load(tmp_path / device / "last_hidden_state.npy")
    m = AutoModel.from_pretrained(models / "bert",
                                  attn_implementation="eager").eval()
    with torch.no_grad():
        ref = m(torch.tensor([prompt])).last_hidden_state.numpy()
    assert scale_err(h["vulkan"], ref) < 1e-4
    assert scale_err(h["vulkan"], h["cpu"]) < 1e-4
