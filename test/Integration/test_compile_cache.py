# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The persistent compile cache through rlx-run --model: a second run of the
same model and shapes compiles nothing and generates the same tokens; a
damaged entry is reported, rebuilt and gives the same tokens; --precompile
fills the cache ahead of a run; quantized weights (the micro-kernels the
cached code calls) and a BERT encoder go through it too."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import RLX_RUN, ROOT, graphs, require_vulkan, tokens

pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

# 3 prompt tokens + 20 new ones: the prompt graph and two decode buckets
# (pasts 16 and 32).
PROMPT = ["--prompt-ids", "5,17,42", "--max-new-tokens", "20"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("models")
    script = str(ROOT / "scripts" / "make_tiny_models.py")
    subprocess.run([sys.executable, script, str(out), "--kind", "llama",
                    "--gguf", "--gguf-type", "q8_0"],
                   check=True, capture_output=True)
    subprocess.run([sys.executable, script, str(out), "--kind", "bert"],
                   check=True, capture_output=True)
    return out


def rlx_run(*args, env=None, ok=True):
    e = dict(os.environ)
    e.pop("RLX_NO_CACHE", None)
    e.update(env or {})
    proc = subprocess.run([str(RLX_RUN), *map(str, args)],
                          capture_output=True, text=True, env=e)
    if ok:
        assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


def entries(cache):
    return sorted(p for p in cache.iterdir() if p.suffix == ".rlxc")


def test_second_run_compiles_nothing(models, tmp_path):
    cache = tmp_path / "cache"
    first = rlx_run("--model", models / "llama", *PROMPT, "--cache-dir", cache)
    assert graphs(first) == (3, 0)
    assert len(entries(cache)) == 3
    second = rlx_run("--model", models / "llama", *PROMPT,
                     "--cache-dir", cache)
    assert graphs(second) == (3, 3)
    assert tokens(second) == tokens(first)
    assert "loaded the prompt graph from the compile cache" in second.stdout
    assert re.search(r"compile phases: cached [0-9.]+ s$", second.stdout,
                     re.M), second.stdout
    assert "lir-to-llvm" not in second.stdout
    # Without the cache, the same tokens again (the reference).
    fresh = rlx_run("--model", models / "llama", *PROMPT, "--no-cache")
    assert graphs(fresh) == (3, 0)
    assert tokens(fresh) == tokens(first)
    # The default directory comes from the environment.
    env_cache = tmp_path / "env-cache"
    rlx_run("--model", models / "llama", *PROMPT,
            env={"RLX_CACHE_DIR": str(env_cache)})
    assert len(entries(env_cache)) == 3
    xdg = tmp_path / "xdg"
    rlx_run("--model", models / "llama", *PROMPT,
            env={"RLX_CACHE_DIR": "", "XDG_CACHE_HOME": str(xdg)})
    assert len(entries(xdg / "rlx")) == 3
    # RLX_NO_CACHE turns the default off.
    off = rlx_run("--model", models / "llama", *PROMPT,
                  env={"RLX_CACHE_DIR": str(env_cache), "RLX_NO_CACHE": "1"})
    assert graphs(off) == (3, 0)


def test_damaged_entry_is_rebuilt(models, tmp_path):
    cache = tmp_path / "cache"
    first = rlx_run("--model", models / "llama", *PROMPT, "--cache-dir", cache)
    for i, entry in enumerate(entries(cache)):
        data = bytearray(entry.read_bytes())
        if i == 0:
            data[-200] ^= 0xFF  # in the object code
        elif i == 1:
            data = data[:len(data) // 2]
        else:
            data[8] = 77  # the format version
        entry.write_bytes(bytes(data))
    second = rlx_run("--model", models / "llama", *PROMPT,
                     "--cache-dir", cache)
    assert tokens(second) == tokens(first)
    assert graphs(second) == (3, 0)
    warnings = [l for l in second.stderr.splitlines() if "compile cache" in l]
    assert len(warnings) == 3, second.stderr
    assert any("checksum does not match" in w for w in warnings)
    assert any("truncated" in w for w in warnings)
    assert any("format version 77" in w for w in warnings)
    assert all("compiled again" in w for w in warnings)
    third = rlx_run("--model", models / "llama", *PROMPT,
                    "--cache-dir", cache)
    assert graphs(third) == (3, 3)
    assert "compile cache" not in third.stderr


def test_precompile_fills_the_cache(models, tmp_path):
    cache = tmp_path / "cache"
    pre = rlx_run("--model", models / "llama", *PROMPT, "--precompile",
                  "--cache-dir", cache)
    assert "precompiled 3 graphs for a prompt of 3 tokens and 20 new tokens " \
           "(0 already in the compile cache)" in pre.stdout
    assert "tokens:" not in pre.stdout
    assert len(entries(cache)) == 3
    run = rlx_run("--model", models / "llama", *PROMPT, "--cache-dir", cache)
    assert graphs(run) == (3, 3)
    again = rlx_run("--model", models / "llama", *PROMPT, "--precompile",
                    "--cache-dir", cache)
    assert "(3 already in the compile cache)" in again.stdout


def test_quantized_weights_through_the_cache(models, tmp_path):
    # q8_0 matrices kept as stored: the cached code calls the micro-kernels.
    cache = tmp_path / "cache"
    args = ["--model", models / "llama.gguf", *PROMPT, "--weights-as",
            "stored", "--cache-dir", cache]
    first = rlx_run(*args)
    second = rlx_run(*args)
    assert graphs(second) == (3, 3)
    assert tokens(second) == tokens(first)
    fresh = rlx_run("--model", models / "llama.gguf", *PROMPT,
                    "--weights-as", "stored", "--no-cache")
    assert tokens(fresh) == tokens(first)


def test_bert_encoder_through_the_cache(models, tmp_path):
    cache = tmp_path / "cache"
    args = ["--model", models / "bert", "--prompt-ids", "1,5,9,3",
            "--cache-dir", cache]
    first = rlx_run(*args, "--output-dir", tmp_path / "a")
    second = rlx_run(*args, "--output-dir", tmp_path / "b")
    assert "loaded bert encoder (4 tokens) from the compile cache" \
        in second.stdout
    outs = sorted(p.name for p in (tmp_path / "a").glob("*.npy"))
    assert outs
    for name in outs:
        np.testing.assert_array_equal(np.load(tmp_path / "a" / name),
                                      np.load(tmp_path / "b" / name))


def test_cache_options_are_checked(models, tmp_path):
    both = rlx_run("--model", models / "llama", *PROMPT, "--no-cache",
                   "--cache-dir", tmp_path, ok=False)
    assert both.returncode != 0
    assert "--cache-dir and --no-cache are exclusive" in both.stderr
    pre = rlx_run(ROOT / "examples" / "three-levels.mlir", "--precompile",
                  ok=False)
    assert pre.returncode != 0
    assert "--precompile compiles a --model's graphs" in pre.stderr
    off = rlx_run("--model", models / "llama", *PROMPT, "--precompile",
                  "--no-cache", ok=False)
    assert off.returncode != 0
    assert "give --cache-dir" in off.stderr
    # A cache path that is a file: a warning, and the run goes on.
    f = tmp_path / "file"
    f.write_text("")
    run = rlx_run("--model", models / "llama", *PROMPT, "--cache-dir", f)
    assert "is not a directory" in run.stderr
    assert graphs(run) == (3, 0)


def test_concurrent_processes_share_the_cache(models, tmp_path):
    # Four processes compile the same graphs into one cache at once: each
    # writes whole entries by rename, none reads a partial one.
    cache = tmp_path / "cache"
    env = dict(os.environ)
    env.pop("RLX_NO_CACHE", None)
    procs = [subprocess.Popen([str(RLX_RUN), "--model", str(models / "llama"),
                               *PROMPT, "--cache-dir", str(cache)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(4)]
    outs = [p.communicate() for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert "compile cache" not in err, err
    seen = {tuple(tokens(subprocess.CompletedProcess([], 0, out, err)))
            for out, err in outs}
    assert len(seen) == 1
    assert len(entries(cache)) == 3
    assert not [p for p in cache.iterdir() if p.suffix == ".tmp"]
    again = rlx_run("--model", models / "llama", *PROMPT, "--cache-dir", cache)
    assert graphs(again) == (3, 3)
    assert tokens(again) == list(seen.pop())


def test_vulkan_through_the_cache(models, tmp_path):
    # The SPIR-V kernels and the dispatch schedule are stored: the second
    # run only builds the pipelines.
    require_vulkan()
    cache = tmp_path / "cache"
    args = ["--model", models / "llama", *PROMPT, "--device", "vulkan",
            "--cache-dir", cache]
    first = rlx_run(*args)
    assert graphs(first) == (3, 0)
    assert len(entries(cache)) == 3
    second = rlx_run(*args)
    assert graphs(second) == (3, 3)
    assert tokens(second) == tokens(first)
    assert "lir-to-spirv" not in second.stdout
    # CPU entries are other entries.
    cpu = rlx_run("--model", models / "llama", *PROMPT, "--cache-dir", cache)
    assert graphs(cpu) == (3, 0)
    assert len(entries(cache)) == 6
    # A damaged program is rebuilt.
    for entry in entries(cache):
        data = bytearray(entry.read_bytes())
        data[-5] ^= 0x11
        entry.write_bytes(bytes(data))
    third = rlx_run(*args)
    assert graphs(third) == (3, 0)
    assert tokens(third) == tokens(first)
    assert "checksum does not match" in third.stderr
