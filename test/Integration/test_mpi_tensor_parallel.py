# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Tensor-parallel programs run across 2 MPI ranks on the CPU (issue 17).

A LLaMA decoder layer (4 heads, 2 KV heads, hidden 64, intermediate 128), and
a whole model (embedding, one layer, final norm, LM head), are lowered to
fused MIR and partitioned by mir-shard-tensor-parallel into rank 0's and
rank 1's programs; `mpirun -np 2` runs each rank's program with rlx-run on
the same input (a launcher picks the program by $OMPI_COMM_WORLD_RANK). The
shard.all_reduce / shard.all_gather become MPI_Allreduce / MPI_Allgather, so
after them every rank holds the full result: each rank's output equals the
unsharded program's within 1e-5.

A program with collectives refuses to run in a world of another size (no
launcher: a world of 1; mpirun -np 1), naming both sizes.

Open MPI is part of the setup (scripts/setup.sh): without `mpirun` these
tests fail. They skip only when RLX was built without MPI
(RLX_ENABLE_MPI=OFF), and say so."""

import os
import re
import shlex
import shutil
import subprocess

import numpy as np
import pytest

from conftest import BUILD, RLX_RUN, ROOT
from test_tensor_parallel_ir import LAYER, MODEL, TIED_HEAD, rlx_opt


def built_with_mpi():
    cache = BUILD / "CMakeCache.txt"
    return cache.exists() and "RLX_ENABLE_MPI:BOOL=ON" in cache.read_text()


pytestmark = pytest.mark.skipif(
    not built_with_mpi(),
    reason=f"RLX in {BUILD} was built without MPI (RLX_ENABLE_MPI=OFF): "
           "tensor-parallel programs cannot run across ranks")


def mpirun():
    path = shutil.which("mpirun")
    assert path, ("mpirun not found: install Open MPI (openmpi-bin, "
                  "libopenmpi-dev; scripts/setup.sh)")
    return path


def on_ranks(ranks):
    """The command prefix that starts `ranks` processes on this machine."""
    return [mpirun(), "--oversubscribe", "--allow-run-as-root", "-np",
            str(ranks)]


def rank_env(**extra):
    """The environment of the ranks: one thread each (they share the
    cores), no compile cache."""
    return dict(os.environ, RLX_NUM_THREADS="1", RLX_NO_CACHE="1", **extra)


def rlx_run(args, ranks=1, timeout=600):
    """rlx-run `args` in one process, or split over `ranks` MPI ranks
    (--tensor-parallel)."""
    cmd = [str(RLX_RUN), *args]
    if ranks > 1:
        cmd = [*on_ranks(ranks), *cmd, "--tensor-parallel", str(ranks)]
    return subprocess.run(cmd, capture_output=True, text=True,
                          env=rank_env(), timeout=timeout)


def run_ranks(tmp, programs, inputs, params, np_=None, expect_fail=False):
    """Runs programs[r] on rank r under mpirun; returns each rank's outputs
    (or, with expect_fail, the combined output)."""
    args = []
    for name, arr in inputs.items():
        path = tmp / f"in_{name}.npy"
        np.save(path, arr)
        args += ["--input", f"{name}={path}"]
    for name, arr in params.items():
        path = tmp / f"param_{name}.npy"
        np.save(path, arr)
        args += ["--param", f"{name}={path}"]
    for r, text in enumerate(programs):
        (tmp / f"rank{r}.mlir").write_text(text)
    # Each rank runs its own program: picked by the rank Open MPI gives it.
    launcher = tmp / "launch.sh"
    launcher.write_text(
        "#!/bin/sh\n"
        "r=${OMPI_COMM_WORLD_RANK:?not started by mpirun}\n"
        f'exec {shlex.quote(str(RLX_RUN))} "{tmp}/rank$r.mlir" --quiet '
        f'--output-dir "{tmp}/out$r" '
        + " ".join(shlex.quote(a) for a in args) + "\n")
    cmd = [*on_ranks(np_ or len(programs)), "sh", str(launcher)]
    # A collective that waits forever would be a bug: bounded here.
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env=rank_env(), timeout=300)
    if expect_fail:
        assert proc.returncode != 0, proc.stdout
        return proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outs = []
    for r in range(len(programs)):
        outs.append({f.stem: np.load(f) for f in (tmp / f"out{r}").glob("*.npy")})
    return outs


def random_params(rng, shapes):
    return {k: (rng.standard_normal(s) * (0.2 if len(s) == 2 else 1.0)
                ).astype(np.float32) for k, s in shapes.items()}


LAYER_SHAPES = {"l0.input_norm": (64,), "l0.q": (64, 64), "l0.k": (32, 64),
                "l0.v": (32, 64), "l0.o": (64, 64), "l0.post_norm": (64,),
                "l0.gate": (128, 64), "l0.up": (128, 64),
                "l0.down": (64, 128)}


def shard(rlx, mir, ranks=2):
    return [rlx_opt(rlx, mir, f"--mir-shard-tensor-parallel=ranks={ranks} "
                              f"rank={r}") for r in range(ranks)]


def test_mpi_layer_matches_unsharded(rlx):
    rng = np.random.default_rng(17)
    params = random_params(rng, LAYER_SHAPES)
    inputs = {"x": rng.standard_normal((1, 7, 64)).astype(np.float32),
              "pos": np.arange(7, dtype=np.int32)[None]}
    mir = rlx_opt(rlx, LAYER.format(kv=32, kvh=2),
                  "--convert-hir-to-mir=policy=direct")
    expected = rlx.run(mir, inputs, params)["out"]
    programs = shard(rlx, mir)
    assert all(p.count("shard.all_reduce") == 2 for p in programs)
    outs = run_ranks(rlx.tmp, programs, inputs, params)
    assert np.abs(expected).max() > 0.1
    for r, out in enumerate(outs):
        np.testing.assert_allclose(out["out"], expected, rtol=1e-5, atol=1e-5,
                                   err_msg=f"rank {r}")


def test_mpi_model_matches_unsharded(rlx):
    """The embedding's all-reduce and the logits' all-gather too."""
    rng = np.random.default_rng(7)
    body = LAYER.format(kv=32, kvh=2).split("\n")[1:-3]
    layer = "\n".join(body).replace("%y = hir.llama_decoder_layer %x",
                                    "%y = hir.llama_decoder_layer %h")
    hir = MODEL.format(layer=layer, head=TIED_HEAD.format(v=100), v=100)
    params = random_params(rng, {"embed": (100, 64), "norm": (64,),
                                 **LAYER_SHAPES})
    inputs = {"ids": np.array([[0, 49, 50, 99, 7, 63, 50]], dtype=np.int32),
              "pos": np.arange(7, dtype=np.int32)[None]}
    mir = rlx_opt(rlx, hir, "--convert-hir-to-mir=policy=direct")
    expected = rlx.run(mir, inputs, params)["logits"]
    programs = shard(rlx, mir)
    assert all(p.count("shard.all_gather") == 1 for p in programs)
    outs = run_ranks(rlx.tmp, programs, inputs, params)
    for r, out in enumerate(outs):
        np.testing.assert_allclose(out["logits"], expected, rtol=1e-5,
                                   atol=1e-5, err_msg=f"rank {r}")


def test_mpi_world_size_mismatch_is_an_error(rlx):
    rng = np.random.default_rng(3)
    params = random_params(rng, LAYER_SHAPES)
    inputs = {"x": rng.standard_normal((1, 7, 64)).astype(np.float32),
              "pos": np.arange(7, dtype=np.int32)[None]}
    mir = rlx_opt(rlx, LAYER.format(kv=32, kvh=2),
                  "--convert-hir-to-mir=policy=direct")
    rank0 = shard(rlx, mir)[0]
    # Not started by an MPI launcher: a world of 1.
    err = rlx.run(rank0, inputs, params, expect_fail=True)
    assert "collectives span 2 ranks" in err, err
    assert "MPI world of 1" in err, err
    # One rank under mpirun.
    out = run_ranks(rlx.tmp, [rank0], inputs, params, np_=1,
                    expect_fail=True)
    assert "collectives span 2 ranks" in out, out
    assert "MPI world of 1" in out, out


#===----------------------------------------------------------------------===#
# Whole models: mpirun -np 2 rlx-run --model DIR --tensor-parallel 2
#===----------------------------------------------------------------------===#

PROMPT = "3,17,99,5,64,127,0"


def run_model(model, tmp, ranks=1, extra=(), expect_fail=False):
    """rlx-run --model on `ranks` MPI ranks: (stdout, prompt logits, step
    logits) as rank 0 reports them."""
    tag = f"np{ranks}"
    proc = rlx_run(["--model", str(model), "--prompt-ids", PROMPT,
                    "--max-new-tokens", "6", "--logits-out",
                    str(tmp / f"{tag}.npy"), "--step-logits-out",
                    str(tmp / f"{tag}-steps.npy"), *extra], ranks)
    if expect_fail:
        assert proc.returncode != 0, proc.stdout
        return proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return (proc.stdout, np.load(tmp / f"{tag}.npy"),
            np.load(tmp / f"{tag}-steps.npy"))


def assert_same_generation(one, two):
    """Runs `one` (1 process) and `two` (2 ranks) of run_model: the prompt
    logits and every step's logits within 1e-5 of their scale, the same
    greedy ids. Returns those ids."""
    from types import SimpleNamespace
    from conftest import tokens
    _, logits1, steps1 = one
    _, logits2, steps2 = two
    np.testing.assert_allclose(logits2, logits1, rtol=0,
                               atol=1e-5 * np.abs(logits1).max())
    assert steps2.shape == steps1.shape
    np.testing.assert_allclose(steps2, steps1, rtol=0,
                               atol=1e-5 * np.abs(steps1).max())
    ids = tokens(SimpleNamespace(stdout=one[0]))
    assert tokens(SimpleNamespace(stdout=two[0])) == ids
    return ids


def param_bytes(stdout):
    """The parameter bytes of the prompt graph rlx-run --model compiled."""
    m = re.search(r"compiled the prompt graph .*params (\d+) bytes", stdout)
    assert m, stdout
    return int(m.group(1))


@pytest.mark.parametrize("kind,overrides,extra", [
    ("llama", {}, ()),
    # Fewer KV heads than ranks: each rank keeps the one KV head it reads.
    ("llama", {"num_key_value_heads": 1}, ()),
    ("qwen3", {}, ()),
    ("gemma3", {}, ()),
    # Softcaps (attention and final logits), sliding windows.
    ("gemma2", {}, ()),
    # Weights kept as bf16 and as ggml blocks down to the kernels: each
    # rank's columns of the row-parallel projections are whole blocks.
    ("llama", {"intermediate_size": 128}, ("--weights-as", "bf16")),
    ("llama", {"intermediate_size": 128}, ("--weights-as", "q8_0")),
    ("llama", {"intermediate_size": 128}, ("--weights-as", "q4_0")),
])
def test_mpi_model_generates_the_single_process_tokens(tmp_path, kind,
                                                        overrides, extra):
    """Prefill and KV-cache decode on 2 ranks: the prompt logits and every
    step's logits equal one process's within 1e-5 of their scale, the
    greedy ids are the same, and each rank holds about half the weights."""
    from test_architectures import make
    model, _ = make(tmp_path, kind, seed=5, **overrides)
    first = run_model(model, tmp_path, extra=extra)
    second = run_model(model, tmp_path, ranks=2, extra=extra)
    one, two = first[0], second[0]
    assert np.abs(first[1]).max() > 0.1
    assert len(assert_same_generation(first, second)) == 6
    assert "tensor parallel 2 ranks (MPI)" in two, two
    assert "tensor parallel" not in one, one
    # Every matrix and the vocabulary split; only norms are whole on both.
    ratio = param_bytes(two) / param_bytes(one)
    assert 0.5 <= ratio <= 0.53, (param_bytes(two), param_bytes(one))


@pytest.mark.parametrize("type_name", ["f32", "q8_0"])
def test_mpi_gguf_generates_the_single_process_tokens(tmp_path, type_name):
    """A LLaMA GGUF as llama.cpp's converter writes it (Q/K rows permuted
    within each head for its rotary layout; matrices as `type_name`) on 2
    ranks: each rank reads only its heads' rows of Q and K (readStoredRows)
    and keeps the stored blocks; the logits and tokens are one process's and
    each rank holds about half the weights."""
    from test_architectures import make, write_gguf
    _, hf = make(tmp_path, "llama", seed=7, intermediate_size=128)
    path = tmp_path / f"llama-{type_name}.gguf"
    write_gguf(hf, path, type_name)
    first = run_model(path, tmp_path)
    second = run_model(path, tmp_path, ranks=2)
    assert np.abs(first[1]).max() > 0.1
    assert len(assert_same_generation(first, second)) == 6
    assert "tensor parallel 2 ranks (MPI)" in second[0], second[0]
    ratio = param_bytes(second[0]) / param_bytes(first[0])
    assert 0.5 <= ratio <= 0.53, (param_bytes(second[0]), param_bytes(first[0]))


def decode_collectives(stdout):
    """(calls, bytes per rank) of a decode step, as rlx-run reports them."""
    m = re.search(r"collectives per decode step: ([\d.]+) calls, (\d+) bytes",
                  stdout)
    assert m, stdout
    return float(m.group(1)), int(m.group(2))


@pytest.mark.parametrize("sampling,logits_bytes", [
    # Greedy: the argmax across ranks, a float and an int per rank.
    ((), 8),
    # Top-k: each rank's 3 best (a float and an int each), from 2 ranks.
    (("--temperature", "0.8", "--top-k", "3", "--seed", "4"), 2 * 3 * 8),
    # Sampling from every token: the logits all-gathered (vocabulary 128).
    (("--temperature", "0.8", "--seed", "4"), 4 * 128),
])
def test_mpi_sampling_reduces_the_logits_per_rank(tmp_path, sampling,
                                                  logits_bytes):
    """The decode graphs keep each rank's slice of the logits
    (mir-shard-tensor-parallel local-logits) and the Generator reduces them
    as the sampler needs: the same tokens as one process, and a decode step
    moves the 2 x 2 layers' and the embedding's all-reduces of one hidden
    vector (64 floats) plus `logits_bytes` for the token."""
    from conftest import tokens
    from test_architectures import make
    model, _ = make(tmp_path, "llama", seed=5)
    args = ["--model", str(model), "--prompt-ids", PROMPT,
            "--max-new-tokens", "6", *sampling]
    one = rlx_run(args)
    two = rlx_run(args, ranks=2)
    assert one.returncode == 0, one.stdout + one.stderr
    assert two.returncode == 0, two.stdout + two.stderr
    assert len(tokens(one)) == 6
    assert tokens(two) == tokens(one)
    # Tokens from both halves of the vocabulary (rank 1's start at 64).
    assert min(tokens(one)) < 64 <= max(tokens(one)), tokens(one)
    calls, moved = decode_collectives(two.stdout)
    assert calls == 6, two.stdout
    assert moved == 5 * 4 * 64 + logits_bytes, two.stdout
    assert "collectives" not in one.stdout


def prompt_collective_calls(stdout):
    """The collective calls of the prompt step, as rlx-run reports them."""
    m = re.search(r"prompt step: (\d+) calls", stdout)
    assert m, stdout
    return int(m.group(1))


@pytest.mark.parametrize("extra,ranks", [
    ((), 2),
    # The micro-kernels' projections (weights kept as q4_0 blocks).
    (("--weights-as", "q4_0"), 2),
    # 16-bit sums (rlx_all_reduce_start_bf16); over 4 ranks they are two
    # collectives in turn (f32 reduce-scatter, 16-bit all-gather), run at
    # the start.
    (("--compute", "bf16"), 2),
    (("--compute", "bf16"), 4),
])
def test_mpi_overlap_chunks_generate_the_same_tokens(tmp_path, extra, ranks):
    """[parallel] overlap_chunks = 2: the prompt's row-parallel projections
    (attention output, MLP down; 2 layers) and their all-reduces run as 2
    token ranges (mir-overlap-collectives), each range's sum in flight while
    the next range's projection computes (lir-async-collectives:
    MPI_Iallreduce, then its wait). The prompt logits and every step's logits
    equal the blocking run's within 1e-5 of their scale and the tokens are
    the same; the prompt step makes 4 more all-reduces (one per projection)
    and moves the same bytes; a decode step (one token) is not split."""
    from test_architectures import make
    model, _ = make(tmp_path, "llama", seed=5, intermediate_size=128)
    profile = tmp_path / "overlap.rlx.toml"
    profile.write_text("[parallel]\noverlap_chunks = 2\n")
    blocking = run_model(model, tmp_path, ranks=ranks, extra=extra)
    (tmp_path / "one").mkdir()
    split = run_model(model, tmp_path / "one", ranks=ranks,
                      extra=(*extra, "--profile", str(profile)))
    assert np.abs(blocking[1]).max() > 0.1
    assert len(assert_same_generation(blocking, split)) == 6
    calls = prompt_collective_calls(blocking[0])
    assert prompt_collective_calls(split[0]) == calls + 4, split[0]
    assert decode_collectives(split[0]) == decode_collectives(blocking[0])
    moved = re.search(r"prompt step: \d+ calls, (\d+) bytes", split[0])
    assert moved and moved.group(1) in blocking[0], split[0]


def test_mpi_overlap_chunks_need_tensor_parallelism(tmp_path):
    """overlap_chunks above 1 splits collectives only a tensor-parallel model
    has: a single process refuses it by name instead of ignoring it."""
    from test_architectures import make
    model, _ = make(tmp_path, "llama", seed=5)
    profile = tmp_path / "overlap.rlx.toml"
    profile.write_text("[parallel]\noverlap_chunks = 2\n")
    out = run_model(model, tmp_path, extra=("--profile", str(profile)),
                    expect_fail=True)
    assert ("[parallel] overlap_chunks = 2 splits the all-reduces of a "
            "tensor-parallel model: it needs tensor above 1") in out, out


def test_mpi_odd_vocabulary_is_replicated(tmp_path):
    """A vocabulary that does not split over the ranks (257 over 2): the
    embedding and the LM head are whole on every rank, everything else
    splits, and the logits and tokens are one process's."""
    from test_architectures import make
    model, _ = make(tmp_path, "llama", seed=6, vocab_size=257)
    first = run_model(model, tmp_path)
    second = run_model(model, tmp_path, ranks=2)
    one, two = first[0], second[0]
    assert first[1].shape[-1] == 257
    assert_same_generation(first, second)
    # The two vocabulary tables are whole: more than half the weights.
    ratio = param_bytes(two) / param_bytes(one)
    assert 0.55 < ratio < 0.95, (param_bytes(two), param_bytes(one))


def test_mpi_model_refusals(tmp_path):
    """Outside mpirun, heads that do not split, and a model that is not a
    decoder: each refused by name before anything runs."""
    from test_architectures import make
    model, _ = make(tmp_path, "llama", seed=2)
    out = subprocess.run(
        [str(RLX_RUN), "--model", str(model), "--prompt-ids", PROMPT,
         "--tensor-parallel", "2"], capture_output=True, text=True,
        env=dict(os.environ, RLX_NO_CACHE="1"), timeout=120)
    assert out.returncode != 0
    assert "--tensor-parallel 2 needs 2 MPI processes" in out.stderr, out.stderr
    assert "world of 1" in out.stderr, out.stderr
    # 3 ranks: 4 query heads do not split.
    err = run_model(model, tmp_path, ranks=3, expect_fail=True)
    assert "num_attention_heads (4) divisible by the ranks" in err, err
    moe, _ = make(tmp_path, "mixtral", seed=2, num_local_experts=4,
                  num_experts_per_tok=2)
    err = run_model(moe, tmp_path, ranks=2, expect_fail=True)
    assert "does not split mixture-of-experts layers" in err, err


def test_mpi_python_generator(tmp_path):
    """The Python API: recipe.tensor_parallel(2) in a script run under
    mpirun -np 2 generates one process's ids, and its logits; its stats
    count the collectives (the logits gathered only when returned)."""
    from test_architectures import make
    model, _ = make(tmp_path, "qwen3", seed=9)
    script = tmp_path / "generate.py"
    script.write_text(
        "import os, sys\n"
        "import numpy as np\n"
        "import rlx\n"
        "ranks = int(sys.argv[1])\n"
        f"recipe = rlx.Qwen3Flow.from_model_dir({str(model)!r})\n"
        "if ranks > 1:\n"
        "    recipe.tensor_parallel(ranks)\n"
        f"weights = rlx.load_weights({str(model)!r})\n"
        "gen = rlx.Generator(rlx.Session(), recipe, weights, max_context=64)\n"
        "tokens, logits = gen.generate([3, 17, 99, 5], 5, return_logits=True)\n"
        "s = gen.stats\n"
        "moved = [s.decode_collective_calls, s.decode_collective_bytes]\n"
        "again = gen.generate([3, 17, 99, 5], 5)\n"
        "assert again == tokens, (again, tokens)\n"
        "moved += [gen.stats.decode_collective_calls,\n"
        "          gen.stats.decode_collective_bytes]\n"
        f"np.save({str(tmp_path)!r} + f'/logits{{ranks}}.npy', logits)\n"
        f"np.save({str(tmp_path)!r} + f'/moved{{ranks}}.npy', moved)\n"
        "rank = os.environ.get('OMPI_COMM_WORLD_RANK', '0')\n"
        f"with open({str(tmp_path)!r} + f'/tokens{{ranks}}-{{rank}}', 'w') "
        "as f:\n"
        "    f.write(' '.join(map(str, tokens)))\n")
    env = rank_env(PYTHONPATH=str(BUILD / "python"))
    python = str(ROOT / ".venv" / "bin" / "python")
    one = subprocess.run([python, str(script), "1"], capture_output=True,
                         text=True, env=env, timeout=300)
    assert one.returncode == 0, one.stdout + one.stderr
    logits1 = np.load(tmp_path / "logits1.npy")
    two = subprocess.run([*on_ranks(2), python, str(script), "2"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert two.returncode == 0, two.stdout + two.stderr
    # Both ranks have the same ids, which are one process's.
    ids = (tmp_path / "tokens1-0").read_text()
    assert len(ids.split()) == 5
    assert (tmp_path / "tokens2-0").read_text() == ids
    assert (tmp_path / "tokens2-1").read_text() == ids
    np.testing.assert_allclose(np.load(tmp_path / "logits2.npy"), logits1,
                               rtol=0, atol=1e-5 * np.abs(logits1).max())
    # One process exchanges nothing. On 2 ranks, 4 decode steps: the logits
    # all-gathered when returned (4 bytes per token of the vocabulary), only
    # the argmax (8 bytes) when not; the same number of calls.
    assert list(np.load(tmp_path / "moved1.npy")) == [0, 0, 0, 0]
    calls, gathered, calls_again, reduced = np.load(tmp_path / "moved2.npy")
    vocab = logits1.shape[-1]
    assert calls == calls_again > 0
    assert gathered - reduced == 4 * (4 * vocab - 8), (gathered, reduced)


def test_mpi_model_differs_between_ranks(tmp_path):
    """Rank 1 given another checkpoint (same shapes, other weights): every
    rank ends with an error naming the model, instead of mixing weights."""
    from test_architectures import make
    a, _ = make(tmp_path / "a", "llama", seed=3)
    b, _ = make(tmp_path / "b", "llama", seed=4)
    launcher = tmp_path / "launch.sh"
    launcher.write_text(
        "#!/bin/sh\n"
        f'if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then m={a}; else m={b}; fi\n'
        f'exec {RLX_RUN} --model "$m" --prompt-ids {PROMPT} '
        "--max-new-tokens 2 --tensor-parallel 2\n")
    proc = subprocess.run([*on_ranks(2), "sh", str(launcher)],
                          capture_output=True, text=True, timeout=300,
                          env=rank_env())
    assert proc.returncode != 0, proc.stdout
    out = proc.stdout + proc.stderr
    assert "the model (its flow and weights" in out, out
    assert "differs between ranks" in out, out


def test_mpi_bench_section_runs(tmp_path):
    """rlx-bench --only parallel --quick (a smoke run, no timing checked):
    the three configurations (1 process, 2 ranks, 2 ranks with the prompt's
    all-reduces overlapped) report, and a decode step of the 2-layer model makes
    2 all-reduces per layer and one for the embedding, moving one hidden
    vector each, and one argmax of the greedy token across the ranks (a
    float and an int: the logits stay per rank)."""
    import json
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [str(BUILD / "bin" / "rlx-bench"), "--only", "parallel", "--quick",
         "--json", str(out)], capture_output=True, text=True, timeout=900,
        env=dict(os.environ, RLX_NO_CACHE="1"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = {c["name"]: c for c in json.loads(out.read_text())["cases"]}
    decode = cases["decode (one token)"]
    whos = {f["who"]: f["ok"] for f in decode["figures"]}
    assert whos == {"rlx, 1 process": True, "rlx": True,
                    "rlx, overlap_chunks = 2": True}, decode
    prefill = cases["prefill T=16"]
    assert {f["who"]: f["ok"] for f in prefill["figures"]} == whos, prefill
    assert "collectives' share of the step %, 2 ranks, overlap 2" in \
        prefill["extra"], prefill
    extra = decode["extra"]
    assert extra["collective calls per token"] == 6, extra
    hidden = 256  # the quick model's
    assert extra["collective bytes per token (payload per rank)"] == \
        4 * 5 * hidden + 8, extra


def test_mpi_module_tensor_parallel_flag(rlx):
    """`mpirun -np 2 rlx-run model.mlir --tensor-parallel 2`: each rank
    compiles its share of the module itself (no program per rank), rank 0
    writes the logits, which equal the unsharded run's; an id outside the
    vocabulary is still rejected at the input, naming the bound."""
    rng = np.random.default_rng(11)
    body = LAYER.format(kv=32, kvh=2).split("\n")[1:-3]
    layer = "\n".join(body).replace("%y = hir.llama_decoder_layer %x",
                                    "%y = hir.llama_decoder_layer %h")
    hir = MODEL.format(layer=layer, head=TIED_HEAD.format(v=100), v=100)
    params = random_params(rng, {"embed": (100, 64), "norm": (64,),
                                 **LAYER_SHAPES})
    ids = np.array([[0, 49, 50, 99, 7, 63, 50]], dtype=np.int32)
    inputs = {"ids": ids, "pos": np.arange(7, dtype=np.int32)[None]}
    expected = rlx.run(hir, inputs, params)["logits"]
    tmp = rlx.tmp
    (tmp / "model.mlir").write_text(hir)
    args = []
    for name, arr in {**inputs}.items():
        np.save(tmp / f"{name}.npy", arr)
        args += ["--input", f"{name}={tmp / (name + '.npy')}"]
    for name, arr in params.items():
        np.save(tmp / f"p_{name}.npy", arr)
        args += ["--param", f"{name}={tmp / ('p_' + name + '.npy')}"]
    args = [str(tmp / "model.mlir"), "--output-dir", str(tmp / "out"), *args]
    proc = rlx_run(args, ranks=2, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    np.testing.assert_allclose(np.load(tmp / "out" / "logits.npy"), expected,
                               rtol=1e-5, atol=1e-5)
    # Rank 0 alone reports.
    assert proc.stdout.count("logits:") == 1, proc.stdout
    np.save(tmp / "ids.npy", np.array([[0, 100, 3, 4, 5, 6, 7]],
                                      dtype=np.int32))
    proc = rlx_run(args, ranks=2, timeout=300)
    assert proc.returncode != 0, proc.stdout
    assert "outside [0, 100)" in proc.stderr, proc.stderr


def test_threads_follow_the_cpu_affinity(rlx):
    """Without RLX_NUM_THREADS, a process runs one thread per CPU it may
    run on: a rank mpirun bound to one core (as Open MPI does by default for
    2 ranks), or one under taskset, does not oversubscribe that core."""
    taskset = shutil.which("taskset")
    assert taskset, "taskset (util-linux) not found"
    mir = rlx_opt(rlx, LAYER.format(kv=32, kvh=2),
                  "--convert-hir-to-mir=policy=direct")
    (rlx.tmp / "layer.mlir").write_text(mir)
    np.save(rlx.tmp / "x.npy", np.zeros((1, 7, 64), np.float32))
    env = {k: v for k, v in os.environ.items() if k != "RLX_NUM_THREADS"}
    env["RLX_NO_CACHE"] = "1"
    out = subprocess.run(
        [taskset, "-c", "0", str(RLX_RUN), str(rlx.tmp / "layer.mlir"),
         "--input", f"x={rlx.tmp / 'x.npy'}", "--describe"],
        capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "device: cpu (1 thread)" in out.stdout, out.stdout


def test_mpi_compile_cache_per_rank(tmp_path):
    """Each rank's graphs go into the compile cache under their own keys
    (the rank is part of the key): a second 2-rank run loads every graph
    from the cache and generates the same ids; a 1-process run over the
    same cache compiles its own (it is not given a rank's share)."""
    from conftest import graphs, tokens
    from test_architectures import make
    model, _ = make(tmp_path, "qwen3", seed=4)
    cache = ("--cache-dir", str(tmp_path / "cache"))

    class Proc:
        def __init__(self, stdout):
            self.stdout = stdout
    first = Proc(run_model(model, tmp_path, ranks=2, extra=cache)[0])
    again = Proc(run_model(model, tmp_path, ranks=2, extra=cache)[0])
    compiled, cached = graphs(first)
    assert compiled >= 2 and cached == 0, first.stdout
    assert graphs(again) == (compiled, compiled), again.stdout
    assert tokens(again) == tokens(first)
    one = Proc(run_model(model, tmp_path, extra=cache)[0])
    assert graphs(one)[1] == 0, one.stdout
    assert tokens(one) == tokens(first)


def encoder_outputs(tmp_path, args):
    """The outputs (--output-dir) of rlx-run `args` in one process and on 2
    ranks."""
    outs = []
    for ranks in (1, 2):
        out = tmp_path / f"o{ranks}"
        proc = rlx_run([*args, "--output-dir", str(out)], ranks, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outs.append({f.stem: np.load(f) for f in out.glob("*.npy")})
    return outs


def assert_same_outputs(outs):
    """The 2-rank outputs are the one process's, within 1e-5 of each
    output's scale."""
    assert set(outs[1]) == set(outs[0])
    for name, ref in outs[0].items():
        np.testing.assert_allclose(outs[1][name], ref, rtol=0,
                                   atol=1e-5 * np.abs(ref).max(),
                                   err_msg=name)


def test_mpi_bert_encoder(tmp_path):
    """A BERT encoder on 2 ranks (its attention blocks with biases and a
    padding mask, GELU MLPs, post-layer norms, word/position/token-type
    tables each split by rows): the hidden states and the pooled embedding
    equal one process's."""
    from test_architectures import make
    model, _ = make(tmp_path, "bert", seed=2)
    outs = encoder_outputs(tmp_path, ["--model", str(model), "--prompt-ids",
                                      "1,5,9,3,7,100"])
    assert set(outs[0]) == {"last_hidden_state", "sentence_embedding"}
    assert_same_outputs(outs)


@pytest.mark.parametrize("kind", ["vit", "dinov2-swiglu", "dinov2-registers"])
def test_mpi_vision_encoder(tmp_path, kind):
    """Image encoders on 2 ranks (`--image` with `--tensor-parallel 2`): the
    patch projection and the pooler split like heads, the attention blocks
    and MLPs (GELU, DINOv2's packed SwiGLU) Megatron-style; the hidden
    states and pooled output equal one process's."""
    pytest.importorskip("torch")
    import test_vision
    model, _ = test_vision.make(tmp_path, kind)
    pixels = np.random.default_rng(3).standard_normal(
        (1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "pixels.npy", pixels)
    outs = encoder_outputs(tmp_path, ["--model", str(model), "--image",
                                      str(tmp_path / "pixels.npy")])
    assert "last_hidden_state" in outs[0]
    assert_same_outputs(outs)


MLP = """func.func @mlp(%x: tensor<5x64xf32> {rlx.name = "x"})
    -> (tensor<5x64xf32> {rlx.name = "y"}) {
  %wgu = mir.param "gate_up" : tensor<256x64xf32>
  %wd = mir.param "down" : tensor<64x128xf32>
  %gu = mir.matmul %x, %wgu {transpose_rhs}
      : (tensor<5x64xf32>, tensor<256x64xf32>) -> tensor<5x256xf32>
  %g = mir.fused_glu %gu : (tensor<5x256xf32>) -> tensor<5x128xf32>
  %y = mir.matmul %g, %wd {transpose_rhs}
      : (tensor<5x128xf32>, tensor<64x128xf32>) -> tensor<5x64xf32>
  return %y : tensor<5x64xf32>
}
"""


@pytest.mark.parametrize("compute,ranks", [("bf16", 2), ("f16", 2),
                                           ("bf16", 4), ("f16", 4)])
def test_mpi_compute_precision_collectives(rlx, compute, ranks):
    """`--compute bf16|f16` on 2 and 4 ranks: the MLP's partial sums are
    moved in that type (rlx_all_reduce_bf16 / _f16: each element's sum
    computed in f32 and rounded once, over any number of ranks; 2 ranks
    move half the bytes of f32). Against a NumPy reference that rounds each
    rank's gate/up and GLU output, its partial sum, and the sum of the
    rounded partials: all but a few elements within 1e-5 of the scale (an
    f32 accumulation order may flip a rounding: at most 2 units of the
    type's last place there). A sum of the unrounded partials, or (4 ranks)
    one rounded at each step of a reduction tree, is off in many more."""
    from test_compute_precision import ROUND
    r = ROUND[compute]
    rng = np.random.default_rng(13)
    x = rng.standard_normal((5, 64)).astype(np.float32)
    wgu = (0.2 * rng.standard_normal((256, 64))).astype(np.float32)
    wd = (0.2 * rng.standard_normal((64, 128))).astype(np.float32)
    tmp = rlx.tmp
    (tmp / "mlp.mlir").write_text(MLP)
    for name, arr in {"x": x, "gate_up": wgu, "down": wd}.items():
        np.save(tmp / f"{name}.npy", arr)
    proc = rlx_run([str(tmp / "mlp.mlir"), "--input", f"x={tmp / 'x.npy'}",
                    "--param", f"gate_up={tmp / 'gate_up.npy'}",
                    "--param", f"down={tmp / 'down.npy'}",
                    "--compute", compute, "--output-dir", str(tmp / "out")],
                   ranks=ranks, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # One all-reduce of the 5 x 64 partial sums, 2 bytes each.
    assert "collectives per run: 1 calls, 640 bytes per rank" in proc.stdout, \
        proc.stdout
    y = np.load(tmp / "out" / "y.npy")
    n = 128 // ranks  # intermediate channels per rank

    def partial(rank, rounded=True):
        rows = np.r_[n * rank:n * rank + n, 128 + n * rank:128 + n * rank + n]
        gu = r((x.astype(np.float64) @ wgu[rows].T).astype(np.float32))
        gate, up = gu[:, :n], gu[:, n:]
        g = r(gate / (1 + np.exp(-gate)) * up)
        p = (g.astype(np.float64) @ wd[:, n * rank:n * rank + n].T
             ).astype(np.float32)
        return r(p) if rounded else p

    parts = [partial(k) for k in range(ranks)]
    want = r(np.sum(parts, axis=0, dtype=np.float32))
    unrounded = r(np.sum([partial(k, False) for k in range(ranks)], axis=0,
                         dtype=np.float32))
    if ranks == 4:
        tree = r(r(parts[0] + parts[1]) + r(parts[2] + parts[3]))
        assert (np.abs(tree - want) > 1e-5 * np.abs(want).max()).mean() > 0.1
    scale = np.abs(want).max()
    off = np.abs(y - want) > 1e-5 * scale
    ulp = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}[compute]
    assert off.mean() < 0.02, (off.mean(), np.abs(y - want).max())
    assert np.all(np.abs(y - want) <= 2 * ulp * np.abs(want) + 1e-5 * scale)
    assert (np.abs(unrounded - want) > 1e-5 * scale).mean() > 0.1


def test_mpi_model_compute_bf16(tmp_path):
    """A LLaMA model with `--compute bf16` on 2 ranks: the same greedy ids
    as one process with `--compute bf16`, logits within the bf16 bound of
    test_stored_weights (3e-2 of scale: the ranks round their partial sums,
    one process the whole sums), and the all-reduces move bf16: a decode
    step's 5 all-reduces of 64 values take 2 bytes each (the logits, a
    returned value, are gathered in f32 for --step-logits-out)."""
    from conftest import tokens
    from types import SimpleNamespace
    from test_architectures import make
    model, _ = make(tmp_path, "llama", seed=5)
    extra = ("--compute", "bf16")
    one = run_model(model, tmp_path, extra=extra)
    two = run_model(model, tmp_path, ranks=2, extra=extra)
    scale = np.abs(one[2]).max()
    assert np.abs(two[2] - one[2]).max() < 3e-2 * scale
    ids = tokens(SimpleNamespace(stdout=one[0]))
    assert len(ids) == 6 and tokens(SimpleNamespace(stdout=two[0])) == ids
    assert decode_collectives(two[0]) == (6, 5 * 2 * 64 + 4 * 128), two[0]
