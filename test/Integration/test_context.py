# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The context of `rlx-run --model`: by default the model's max positions,
capped so that the KV cache fits the memory budget; the cache grows as it
fills (a large context costs nothing up front); a prompt and new tokens that
cannot fit are refused before anything compiles; a generation that fails
midway prints what it generated before the error."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import RLX_RUN, ROOT

pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

# make_tiny_models.py's LLaMA: 2 layers, 2 KV heads of 16: 512 bytes of f32
# KV cache per token, 256 positions.
PER_TOKEN = 2 * 2 * 2 * 16 * 4


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("models")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_tiny_models.py"),
                    str(out), "--name", "llama", "--seed", "3", "--kind", "llama",
                    "--heads", "4", "--kv-heads", "2"],
                   check=True, capture_output=True)
    # The same weights with a LLaMA 3-sized position range.
    shutil.copytree(out / "llama", out / "long")
    cfg = json.loads((out / "long" / "config.json").read_text())
    cfg["max_position_embeddings"] = 131072
    (out / "long" / "config.json").write_text(json.dumps(cfg))
    return out


def run(model, prompt, *args, env=None):
    cmd = [str(RLX_RUN), "--model", str(model), "--prompt-ids",
           ",".join(map(str, prompt)), *map(str, args)]
    full = dict(os.environ)
    full.pop("RLX_MEMORY_BUDGET_MB", None)
    full.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, env=full)


def tokens(out):
    return [int(t) for t in out.split("tokens:")[1].split("\n")[0].split()]


PROMPT = [2, 11, 3]

#===----------------------------------------------------------------------===#
# The default context
#===----------------------------------------------------------------------===#


def test_default_context_is_max_positions(models):
    proc = run(models / "llama", PROMPT, "--max-new-tokens", 4)
    assert proc.returncode == 0, proc.stderr
    assert "prompt: 3 tokens; generating up to 4 (max context 256, greedy)" \
        in proc.stdout
    assert "context: " not in proc.stdout.replace("max context", "")


def test_default_context_capped_by_budget(models):
    """2 MiB of budget holds 4096 tokens of 512 bytes."""
    capped = ("context: 4096 tokens (max_position_embeddings 131072, capped "
              "by the memory budget of 2 MiB (--memory-budget-mb 2) at 512 "
              "bytes of KV cache per token; --max-context sets it)")
    proc = run(models / "long", PROMPT, "--max-new-tokens", 4,
               "--memory-budget-mb", 2)
    assert proc.returncode == 0, proc.stderr
    assert capped in proc.stdout
    assert "(max context 4096, greedy)" in proc.stdout
    # The same budget from the environment.
    proc = run(models / "long", PROMPT, "--max-new-tokens", 4,
               env={"RLX_MEMORY_BUDGET_MB": "2"})
    assert proc.returncode == 0, proc.stderr
    assert "capped by the memory budget of 2 MiB (RLX_MEMORY_BUDGET_MB=2)" \
        in proc.stdout
    # No limit: the model's max positions.
    proc = run(models / "long", PROMPT, "--max-new-tokens", 4,
               "--memory-budget-mb", 0)
    assert proc.returncode == 0, proc.stderr
    assert "(max context 131072, greedy)" in proc.stdout
    # --max-context sets it, whatever the default would be.
    proc = run(models / "long", PROMPT, "--max-new-tokens", 4,
               "--memory-budget-mb", 2, "--max-context", 100)
    assert proc.returncode == 0, proc.stderr
    assert "(max context 100, greedy)" in proc.stdout
    assert "capped" not in proc.stdout


def test_default_context_without_budget(models):
    """Without a budget, the cache may take half the physical memory."""
    proc = run(models / "long", PROMPT, "--max-new-tokens", 4)
    assert proc.returncode == 0, proc.stderr
    half = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    if half // PER_TOKEN >= 131072:
        assert "(max context 131072, greedy)" in proc.stdout
    else:
        assert (f"context: {half // PER_TOKEN} tokens (max_position_embeddings"
                f" 131072, capped by half the physical memory") in proc.stdout


def peak_rss_kib(cmd):
    """The peak resident set of `cmd`, in KiB (Linux ru_maxrss)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    assert p.returncode == 0, cmd
    return usage.ru_maxrss


def test_large_context_costs_nothing_up_front(models):
    """The cache grows with the tokens it holds: a context of 131072 tokens
    (64 MiB of cache) is no bigger than one of 256 for a short generation,
    and gives the same tokens."""
    base = [str(RLX_RUN), "--model", str(models / "long"), "--prompt-ids",
            "2,11,3", "--max-new-tokens", "20", "--quiet"]
    small = peak_rss_kib(base + ["--max-context", "256"])
    large = peak_rss_kib(base + ["--max-context", "131072"])
    assert large - small < 16 * 1024, (small, large)
    a = run(models / "long", PROMPT, "--max-new-tokens", 20,
            "--max-context", 256)
    b = run(models / "long", PROMPT, "--max-new-tokens", 20)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert tokens(a.stdout) == tokens(b.stdout)


#===----------------------------------------------------------------------===#
# Refused before compiling
#===----------------------------------------------------------------------===#


def assert_refused(proc, message):
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr
    assert "compiled" not in proc.stdout + proc.stderr


def test_prompt_and_new_tokens_over_max_positions(models):
    d = models / "llama"
    assert_refused(run(d, [5] * 300, "--max-new-tokens", 100),
                   f"{d}: prompt of 300 tokens + 100 new tokens exceeds the "
                   "context of 256 (max_position_embeddings 256)")
    assert_refused(run(d, [5] * 250, "--max-new-tokens", 7),
                   "prompt of 250 tokens + 7 new tokens exceeds the context "
                   "of 256")
    # A context above the max positions does not lift them.
    assert_refused(run(d, [5] * 250, "--max-new-tokens", 7,
                       "--max-context", 1024),
                   "prompt of 250 tokens + 7 new tokens exceeds the context "
                   "of 256 (--max-context 1024, max_position_embeddings 256)")
    # Prompt logits alone: the prompt must fit the positions.
    assert_refused(run(d, [5] * 300, "--max-new-tokens", 0, "--logits-out",
                       d / "unused.npy"),
                   "prompt of 300 tokens exceeds the model's 256 positions")
    # Exactly the context is fine.
    proc = run(d, [5] * 250, "--max-new-tokens", 6, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert len(tokens(proc.stdout)) == 6


def test_prompt_and_new_tokens_over_max_context(models):
    assert_refused(run(models / "llama", [1, 2], "--max-new-tokens", 100,
                       "--max-context", 64),
                   "prompt of 2 tokens + 100 new tokens exceeds the context "
                   "of 64 (--max-context 64, max_position_embeddings 256)")
    assert_refused(run(models / "llama", [1, 2], "--max-context", -3),
                   "--max-context is -3; it must be positive")


def test_prompt_and_new_tokens_over_capped_context(models):
    assert_refused(run(models / "long", [1, 2], "--max-new-tokens", 5000,
                       "--memory-budget-mb", 2),
                   "prompt of 2 tokens + 5000 new tokens exceeds the context "
                   "of 4096 (max_position_embeddings 131072, capped by the "
                   "memory budget of 2 MiB (--memory-budget-mb 2) at 512 bytes"
                   " of KV cache per token; --max-context sets it)")


#===----------------------------------------------------------------------===#
# Partial output
#===----------------------------------------------------------------------===#

# 1 MiB holds the parameters (465 KiB) and the arenas of the decode graphs
# of up to 1024 cached tokens, not the 2048-token bucket's (1 MiB): the
# generation fails when the cache passes 1024 tokens.
FAILING = ("--max-new-tokens", 1500, "--memory-budget-mb", 1)


def test_failure_midway_prints_tokens_so_far(models):
    proc = run(models / "long", PROMPT, *FAILING)
    assert proc.returncode != 0
    got = tokens(proc.stdout)
    assert 100 < len(got) < 1500
    assert (f"generation failed after {len(got)} of up to 1500 new tokens: "
            "the compiled model's arena") in proc.stderr
    assert "over the memory budget of 1048576 bytes" in proc.stderr
    full = run(models / "long", PROMPT, "--max-new-tokens", len(got),
               "--quiet")
    assert full.returncode == 0, full.stderr
    assert tokens(full.stdout) == got


def test_failure_midway_keeps_streamed_text(models, tmp_path):
    """With --prompt, the text already streamed to stdout stays; the ids
    go to stderr before the error."""
    tok = pytest.importorskip("tokenizers")
    vocab = {"[UNK]": 0, **{f"w{i}": i for i in range(1, 256)}}
    t = tok.Tokenizer(tok.models.WordPiece(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = tok.pre_tokenizers.WhitespaceSplit()
    t.decoder = tok.decoders.WordPiece()
    d = tmp_path / "long"
    shutil.copytree(models / "long", d)
    t.save(str(d / "tokenizer.json"))
    proc = subprocess.run(
        [str(RLX_RUN), "--model", str(d), "--prompt", "w2 w11 w3",
         "--ignore-eos", *map(str, FAILING)],
        capture_output=True, text=True,
        env={k: v for k, v in os.environ.items()
             if k != "RLX_MEMORY_BUDGET_MB"})
    assert proc.returncode != 0
    got = tokens(proc.stderr)
    assert 100 < len(got) < 1500
    assert proc.stdout.split() == [f"w{i}" if i else "[UNK]" for i in got]
    assert proc.stderr.index("tokens:") < proc.stderr.index("error:")
    assert f"generation failed after {len(got)} of up to 1500" in proc.stderr
