# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The C++ programs in examples/cpp, built with the tree, run on tiny
models: the checkpoint generator gives rlx-run's tokens, and the README's
flow (custom-flow.cpp, the snippet verbatim) picks the token rlx-run's
greedy generation starts with; the snippet in README.md is the one in the
program."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import BUILD, RLX_RUN, ROOT, tokens

pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

EXAMPLES = BUILD / "examples" / "bin"
PROMPT = "5,17,42,9"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("models")
    for kind in (["--kind", "llama", "--tied"], ["--kind", "bert"]):
        subprocess.run([sys.executable,
                        str(ROOT / "scripts" / "make_tiny_models.py"),
                        str(out), *kind], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def llama(models):
    return models / "llama"


def run(*args, ok=True):
    proc = subprocess.run([*map(str, args)], capture_output=True, text=True)
    if ok:
        assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


def test_llama_generate(llama):
    ref = run(RLX_RUN, "--model", llama, "--prompt-ids", PROMPT,
              "--max-new-tokens", "6")
    got = run(EXAMPLES / "rlx-example-llama-generate", llama, PROMPT, "6")
    assert tokens(got) == tokens(ref)
    bad = run(EXAMPLES / "rlx-example-llama-generate", llama / "nope",
              ok=False)
    assert bad.returncode == 1 and "nope" in bad.stderr


def test_custom_flow_is_the_readme(llama):
    ref = run(RLX_RUN, "--model", llama, "--prompt-ids", PROMPT,
              "--max-new-tokens", "1")
    got = run(EXAMPLES / "rlx-example-custom-flow", llama, PROMPT)
    m = re.search(r"^next token: (\d+)$", got.stdout, re.M)
    assert m, got.stdout
    assert [int(m.group(1))] == tokens(ref)
    # The README's snippet is the program's, line for line.
    readme = (ROOT / "README.md").read_text()
    snippet = readme.split('rlx::ModelFlow flow("tiny");', 1)[1]
    snippet = 'rlx::ModelFlow flow("tiny");' + snippet.split("```", 1)[0]
    program = (ROOT / "examples" / "cpp" / "custom-flow.cpp").read_text()
    lines = [l.strip() for l in snippet.strip().splitlines()]
    body = program.split("// clang-format off", 1)[1].split(
        "// clang-format on", 1)[0]
    assert [l.strip() for l in body.strip().splitlines()] == lines


def test_custom_layers(llama):
    # Layer 1 composed, the others fused, the embeddings scaled by
    # synthesized ones: the same next token as the plain model.
    ref = run(RLX_RUN, "--model", llama, "--prompt-ids", PROMPT,
              "--max-new-tokens", "1")
    got = run(EXAMPLES / "rlx-example-custom-layers", llama, PROMPT)
    m = re.search(r"^next token: (\d+)$", got.stdout, re.M)
    assert m, got.stdout
    assert [int(m.group(1))] == tokens(ref)
    assert "fused layers: 1 of 2" in got.stdout, got.stdout
    assert "synthesized: example.embed_scale" in got.stdout, got.stdout


def test_sentence_embeddings(models, tmp_path):
    run(RLX_RUN, "--model", models / "bert", "--prompt-ids", PROMPT,
        "--output-dir", tmp_path, "--quiet")
    want = np.load(tmp_path / "sentence_embedding.npy").reshape(-1)
    got = run(EXAMPLES / "rlx-example-sentence-embeddings", models / "bert",
              PROMPT)
    values = np.array([float(v) for v in got.stdout.split()], np.float32)
    np.testing.assert_allclose(values, want, rtol=1e-6, atol=1e-6)
