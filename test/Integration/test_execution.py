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
