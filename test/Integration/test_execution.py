# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The profile's [execution] section through rlx-run --model: mode "aot"
(nothing compiles at run time: a cache miss is an error, --precompile fills
the cache), mode "eager", decode_buckets, memory_budget_mb and device are
honoured; the ModelExecutionConfig shows in the run and in --describe."""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import RLX_RUN, ROOT, graphs, tokens

pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

PROMPT = ["--prompt-ids", "5,17,42", "--max-new-tokens", "20"]


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    out = tmp_path_factory.mktemp("models")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_tiny_models.py"),
                    str(out), "--kind", "llama"], check=True,
                   capture_output=True)
    return out / "llama"


def profile(tmp_path, name, text):
    path = tmp_path / f"{name}.rlx.toml"
    path.write_text(text)
    return path


def rlx_run(*args, ok=True):
    proc = subprocess.run([str(RLX_RUN), *map(str, args)],
                          capture_output=True, text=True)
    if ok:
        assert proc.returncode == 0, proc.stderr + proc.stdout
    else:
        assert proc.returncode != 0, proc.stdout
    return proc


@pytest.fixture(scope="module")
def reference(llama):
    return tokens(rlx_run("--model", llama, *PROMPT, "--no-cache"))


def test_aot_compiles_nothing_at_run_time(llama, reference, tmp_path):
    aot = profile(tmp_path, "aot", '[execution]\nmode = "aot"\n')
    cache = tmp_path / "cache"
    miss = rlx_run("--model", llama, *PROMPT, "--profile", aot,
                   "--cache-dir", cache, ok=False)
    assert 'mode = "aot" compiles nothing at run time' in miss.stderr
    assert "rlx-run --precompile" in miss.stderr
    off = rlx_run("--model", llama, *PROMPT, "--profile", aot, "--no-cache",
                  ok=False)
    assert "the compile cache is off" in off.stderr
    pre = rlx_run("--model", llama, *PROMPT, "--profile", aot, "--precompile",
                  "--cache-dir", cache)
    assert "precompiled 3 graphs" in pre.stdout
    run = rlx_run("--model", llama, *PROMPT, "--profile", aot,
                  "--cache-dir", cache)
    assert graphs(run) == (3, 3)
    assert tokens(run) == reference
    # A longer generation needs a decode bucket the cache lacks.
    longer = rlx_run("--model", llama, "--prompt-ids", "5,17,42",
                     "--max-new-tokens", "40", "--profile", aot,
                     "--cache-dir", cache, ok=False)
    assert 'mode = "aot"' in longer.stderr


def test_eager_and_buckets(llama, reference, tmp_path):
    eager = profile(tmp_path, "eager", '[execution]\nmode = "eager"\n')
    run = rlx_run("--model", llama, *PROMPT, "--profile", eager, "--no-cache")
    assert tokens(run) == reference
    assert graphs(run) == (3, 0)
    assert "execution: decode graph, mode eager" in run.stdout
    # Pasts 4, 8, then doubling: 16, 32 (3 + 20 tokens): five graphs.
    buckets = profile(tmp_path, "buckets",
                      "[execution]\ndecode_buckets = [4, 8]\n")
    run = rlx_run("--model", llama, *PROMPT, "--profile", buckets,
                  "--no-cache")
    assert tokens(run) == reference
    assert graphs(run) == (5, 0)
    assert "decode buckets 4,8" in run.stdout


def test_budget_and_device(llama, tmp_path):
    # A vocabulary of 8192: 2 MiB of embeddings, over a 1 MiB budget.
    subprocess.run([sys.executable,
                    str(ROOT / "scripts" / "make_tiny_models.py"),
                    str(tmp_path), "--kind", "llama", "--vocab", "8192",
                    "--name", "big"], check=True, capture_output=True)
    tiny = profile(tmp_path, "tiny", "[execution]\nmemory_budget_mb = 1\n")
    proc = rlx_run("--model", tmp_path / "big", *PROMPT, "--profile", tiny,
                   "--no-cache", ok=False)
    assert "over the memory budget of 1048576 bytes ([execution] " \
        "memory_budget_mb = 1)" in proc.stderr
    # The option wins over the profile.
    rlx_run("--model", tmp_path / "big", *PROMPT, "--profile", tiny,
            "--no-cache", "--memory-budget-mb", "0")
    vk = profile(tmp_path, "vk", '[execution]\ndevice = "vulkan"\n')
    proc = rlx_run("--model", llama, *PROMPT, "--profile", vk, "--device",
                   "cpu", "--no-cache", ok=False)
    assert '[execution] device = "vulkan", but this session compiles for ' \
           "the CPU" in proc.stderr


def test_describe_shows_the_execution_config(llama, tmp_path):
    proc = rlx_run("--model", llama, "--describe=json", "--no-cache")
    d = json.loads(proc.stdout)
    e = d["execution"]
    assert e["component"]["variant"] == "prefill"
    assert e["component"]["mode"] == "lazy"
    assert re.fullmatch(r"[0-9a-f]{16}", e["fingerprint"])
    assert re.fullmatch(r"[0-9a-f]{16}", e["component"]["composition"])
    assert e["preset"]["memory_budget_mb"] is None
    # Another profile is another component.
    eager = profile(tmp_path, "eager", '[execution]\nmode = "eager"\n')
    other = json.loads(rlx_run("--model", llama, "--describe=json",
                               "--profile", eager, "--no-cache").stdout)
    assert other["execution"]["fingerprint"] != e["fingerprint"]
    text = rlx_run("--model", llama, "--describe", "--no-cache").stdout
    assert re.search(r"^execution: prefill graph, mode lazy, gemm auto", text, re.M)


def test_profile_file_keeps_each_graphs_own(llama, tmp_path):
    """--profile with --model is read over each graph's own profile: a file
    that sets only a back-end key keeps the decode graph's fusable policy
    and the weights as the file stores them (it once compiled the decode
    graph with the prompt graph's preset and widened a GGUF to f32: 5x
    slower decode). The keys it sets still apply, and a recipe that fixes
    its precision refuses a profile that asks for another one."""
    subprocess.run([sys.executable,
                    str(ROOT / "scripts" / "make_tiny_models.py"),
                    str(tmp_path), "--kind", "llama", "--name", "q8",
                    "--gguf", "--gguf-type", "q8_0"], check=True,
                   capture_output=True)
    gguf = tmp_path / "q8.gguf"

    def run(name, *extra):
        dump = tmp_path / f"dump-{name}"
        proc = rlx_run("--model", gguf, *PROMPT, "--no-cache", "--dump-ir",
                       dump, *extra)
        params = int(re.search(r"params (\d+) bytes", proc.stdout).group(1))
        # The dump holds the last graph compiled: a decode step.
        decode = (dump / "03-mir-fused.mlir").read_text()
        assert "past_k" in (dump / "00-input.mlir").read_text()
        return tokens(proc), params, decode

    plain = run("plain")
    threads = profile(tmp_path, "threads", "[backend.cpu]\nthreads = 1\n")
    assert run("threads", "--profile", threads) == plain
    # What the file sets applies: the direct policy in the decode graph
    # (its fusions round otherwise: the tokens of a random model may part),
    # f32 weights (4x the q8_0 bytes).
    direct = profile(tmp_path, "direct", '[fusion]\npolicy = "direct"\n')
    got = run("direct", "--profile", direct)
    assert got[1] == plain[1] and got[2] != plain[2]
    f32 = profile(tmp_path, "f32", '[precision]\nweights = "f32"\n')
    got = run("f32", "--profile", f32)
    assert got[1] > 3 * plain[1] and got[2] != plain[2]
    # A preset is taken whole: llama32_prefill widens the weights to f32.
    got = run("preset", "--preset", "llama32_prefill")
    assert got[1] > 3 * plain[1]
    # --policy over the file's other keys.
    got = run("policy", "--profile", threads, "--policy", "direct")
    assert got[1] == plain[1] and got[2] == run("direct2", "--profile",
                                                 direct)[2]


def test_encoder_refuses_a_profile_precision(tmp_path):
    """BERT keeps its weights in f32 and has no KV cache: a profile's
    [precision] weights or kv_cache, or [execution] decode_buckets, is
    refused by name, not dropped; the file's other keys apply."""
    subprocess.run([sys.executable,
                    str(ROOT / "scripts" / "make_tiny_models.py"),
                    str(tmp_path), "--kind", "bert"], check=True,
                   capture_output=True)
    bert = tmp_path / "bert"
    ids = ["--prompt-ids", "5,17,42", "--no-cache"]
    for key, value, message in [
            ("weights", "bf16", '[precision] weights = "bf16" is implemented '
             "for the decoder recipes"),
            ("kv_cache", "f16", '[precision] kv_cache = "f16" is implemented '
             "for the decoder recipes")]:
        bad = profile(tmp_path, key, f'[precision]\n{key} = "{value}"\n')
        proc = rlx_run("--model", bert, *ids, "--profile", bad, ok=False)
        assert message in proc.stderr, proc.stderr
    # Decode buckets: an encoder decodes nothing.
    bad = profile(tmp_path, "buckets", "[execution]\ndecode_buckets = [8, 16]\n")
    proc = rlx_run("--model", bert, *ids, "--profile", bad, ok=False)
    assert "[execution] decode_buckets sizes the KV-cache decode graphs" \
        in proc.stderr, proc.stderr
    ok = profile(tmp_path, "ok", '[precision]\nweights = "f32"\n'
                 "[backend.cpu]\nthreads = 1\n")
    rlx_run("--model", bert, *ids, "--profile", ok)
