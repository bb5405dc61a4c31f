# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""A rank that dies, or runs another program, ends every rank with a clear
error, never a hang (issue 17).

Every collective waits at most RLX_COLLECTIVE_TIMEOUT seconds for the other
ranks, then aborts the whole MPI job with a message naming the collective,
its size, the rank and the world size:

- rank 0 runs the whole model's rank program (three all-reduces, then the
  logits' all-gather), rank 1 the decoder layer's (two all-reduces): rank 0's
  third all-reduce never completes, and with RLX_COLLECTIVE_TIMEOUT=2 the job
  ends within seconds, naming rank 0;
- each rank runs the other's program: both refuse (the program records
  its rank), before any collective;
- rank 1 dies (its program file is missing; it is killed after MPI
  started; it exits without ever starting MPI, which rank 0's bounded
  MPI_Init reports): the job ends nonzero with a message;
- a bad RLX_COLLECTIVE_TIMEOUT is an error naming the variable and the value;
  0 (wait forever) runs.

From Python, under mpirun with mpi4py: rlx.set_communicator(comm) with a dup
of MPI.COMM_WORLD runs a 2-rank program to the unsharded result,
rlx.check_same_on_all_ranks raises on every rank when the fingerprints
differ, and a communicator split into one rank per group is a world of 1
(the unsharded program runs, the 2-rank one is refused naming the sizes).
Without a launcher the Python functions see a world of 1.

Like test_mpi_tensor_parallel.py, these fail without mpirun and skip only
when RLX was built without MPI."""

import os
import shlex
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import BUILD, RLX_RUN
from test_mpi_tensor_parallel import (LAYER_SHAPES, mpirun, pytestmark,
                                      random_params, shard)
from test_tensor_parallel_ir import LAYER, MODEL, TIED_HEAD, rlx_opt

# pytestmark (imported): skipped when RLX was built without MPI.
assert pytestmark

# A job that should end by itself must end well within this (seconds).
BOUND = 60


def rank_args(tmp, tag, inputs, params):
    """rlx-run's --input / --param arguments, the arrays saved under tmp."""
    args = []
    for kind, arrays in (("input", inputs), ("param", params)):
        for name, arr in arrays.items():
            path = tmp / f"{tag}_{kind}_{name}.npy"
            np.save(path, arr)
            args += [f"--{kind}", f"{name}={path}"]
    return args


def launch(tmp, commands, env=None, timeout=2 * BOUND):
    """Runs commands[r] (an argv) as rank r under mpirun; returns (the
    finished process, its output, the seconds it took)."""
    cases = "".join(
        f"  {r}) exec {' '.join(shlex.quote(str(a)) for a in cmd)} ;;\n"
        for r, cmd in enumerate(commands))
    launcher = tmp / "launch.sh"
    launcher.write_text("#!/bin/sh\n"
                        "r=${OMPI_COMM_WORLD_RANK:?not started by mpirun}\n"
                        f"case $r in\n{cases}esac\n")
    full_env = dict(os.environ, RLX_NUM_THREADS="1", RLX_NO_CACHE="1",
                    **(env or {}))
    cmd = [mpirun(), "--oversubscribe", "--allow-run-as-root", "-np",
           str(len(commands)), "sh", str(launcher)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=full_env)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # mpirun ends its ranks on SIGTERM; SIGKILL would leave them behind.
        proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        pytest.fail(f"mpirun still ran after {timeout} s (a hang):\n{out}")
    return proc, out, time.monotonic() - start


def rlx_run(tmp, tag, program, inputs, params):
    (tmp / f"{tag}.mlir").write_text(program)
    return [RLX_RUN, tmp / f"{tag}.mlir", "--quiet", "--output-dir",
            tmp / f"out_{tag}", *rank_args(tmp, tag, inputs, params)]


def layer_case(rlx, seed=3):
    """(unsharded MIR, inputs, params) of the decoder layer."""
    rng = np.random.default_rng(seed)
    params = random_params(rng, LAYER_SHAPES)
    inputs = {"x": rng.standard_normal((1, 7, 64)).astype(np.float32),
              "pos": np.arange(7, dtype=np.int32)[None]}
    mir = rlx_opt(rlx, LAYER.format(kv=32, kvh=2),
                  "--convert-hir-to-mir=policy=direct")
    return mir, inputs, params


def model_case(rlx, seed=7):
    """(unsharded MIR, inputs, params) of the whole tiny model."""
    rng = np.random.default_rng(seed)
    body = LAYER.format(kv=32, kvh=2).split("\n")[1:-3]
    layer = "\n".join(body).replace("%y = hir.llama_decoder_layer %x",
                                    "%y = hir.llama_decoder_layer %h")
    params = random_params(rng, {"embed": (100, 64), "norm": (64,),
                                 **LAYER_SHAPES})
    inputs = {"ids": np.array([[0, 49, 50, 99, 7, 63, 50]], dtype=np.int32),
              "pos": np.arange(7, dtype=np.int32)[None]}
    hir = MODEL.format(layer=layer, head=TIED_HEAD.format(v=100), v=100)
    mir = rlx_opt(rlx, hir, "--convert-hir-to-mir=policy=direct")
    return mir, inputs, params


def mpi4py_or_skip():
    proc = subprocess.run([sys.executable, "-c", "import mpi4py.MPI"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip("mpi4py is not importable (scripts/setup.sh installs "
                    f"it): {proc.stderr.strip().splitlines()[-1:]}")


#===----------------------------------------------------------------------===#
# Timeouts
#===----------------------------------------------------------------------===#


def test_mismatched_program_times_out(rlx):
    """Rank 0: the model (3 all-reduces and an all-gather); rank 1: the layer
    (2 all-reduces). Rank 0's third all-reduce times out and ends the job."""
    model, model_inputs, model_params = model_case(rlx)
    layer, layer_inputs, layer_params = layer_case(rlx)
    rank0 = shard(rlx, model)[0]
    rank1 = shard(rlx, layer)[1]
    assert rank0.count("shard.all_reduce") == 3
    assert rank1.count("shard.all_reduce") == 2
    proc, out, seconds = launch(
        rlx.tmp, [rlx_run(rlx.tmp, "model0", rank0, model_inputs, model_params),
                  rlx_run(rlx.tmp, "layer1", rank1, layer_inputs, layer_params)],
        env={"RLX_COLLECTIVE_TIMEOUT": "2"})
    assert proc.returncode != 0, out
    assert seconds < BOUND, out
    assert ("rlx: rank 0 of 2: all_reduce of 448 floats did not complete in "
            "2 s (RLX_COLLECTIVE_TIMEOUT): another rank has died or runs a "
            "different program") in out, out


def test_swapped_rank_programs_are_refused(rlx):
    """Each rank runs the other's program: the collectives match (no
    timeout would see it), but every rank's program records its rank
    (rlx.rank), so both refuse to run instead of computing wrong sums."""
    layer, inputs, params = layer_case(rlx)
    programs = shard(rlx, layer)
    for r, p in enumerate(programs):
        assert (f"rlx.rank = {{rank = {r} : i64, ranks = 2 : i64}}"
                in p), p[:400]
    proc, out, seconds = launch(
        rlx.tmp, [rlx_run(rlx.tmp, f"layer{1 - r}", programs[1 - r], inputs,
                          params) for r in range(2)],
        env={"RLX_COLLECTIVE_TIMEOUT": "20"})
    assert proc.returncode != 0, out
    assert seconds < BOUND, out
    # Both refuse; mpirun may end one rank before it prints.
    refused = [r for r in range(2) if (
        f"the program is rank {1 - r}'s of 2 (its rlx.rank) but runs as rank "
        f"{r} of 2: each rank runs the program compiled for it "
        f"(mir-shard-tensor-parallel rank={r})") in out]
    assert refused, out
    for r in range(2):
        assert not list((rlx.tmp / f"out_layer{r}").glob("*")), out


@pytest.mark.parametrize("how", ["missing-program", "killed", "exited"])
def test_dead_rank_ends_the_job(rlx, how):
    """Rank 1 never reaches the collectives: its program file does not
    exist (rlx-run fails), it is killed (SIGKILL) once MPI has started, or
    it exits successfully without ever starting MPI (rank 0's MPI_Init, which
    waits for every rank, is bounded by the timeout too)."""
    layer, inputs, params = layer_case(rlx)
    rank0 = shard(rlx, layer)[0]
    if how == "killed":
        mpi4py_or_skip()
        rank1 = [sys.executable, "-c",
                 "from mpi4py import MPI; import os, signal; "
                 "os.kill(os.getpid(), signal.SIGKILL)"]
    elif how == "exited":
        rank1 = ["true"]
    else:
        rank1 = [RLX_RUN, rlx.tmp / "no-such-rank1.mlir"]
    proc, out, seconds = launch(
        rlx.tmp, [rlx_run(rlx.tmp, "layer0", rank0, inputs, params), rank1],
        env={"RLX_COLLECTIVE_TIMEOUT": "5"})
    assert proc.returncode != 0, out
    assert seconds < BOUND, out
    if how == "killed":
        # mpirun's own report, or rank 0's timeout.
        assert ("rank 1" in out and "signal 9" in out) or \
            "rank 0 of 2: all_reduce of 448 floats did not complete" in out, \
            out
    elif how == "exited":
        assert ("rlx: rank 0: MPI_Init did not complete in 5 s "
                "(RLX_COLLECTIVE_TIMEOUT): another rank has died or never "
                "started MPI") in out, out
    else:
        assert "no-such-rank1.mlir" in out, out


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_bad_timeout_is_an_error(rlx, value):
    layer, inputs, params = layer_case(rlx)
    programs = shard(rlx, layer)
    proc, out, seconds = launch(
        rlx.tmp, [rlx_run(rlx.tmp, f"layer{r}", p, inputs, params)
                  for r, p in enumerate(programs)],
        env={"RLX_COLLECTIVE_TIMEOUT": value})
    assert proc.returncode != 0, out
    assert seconds < BOUND, out
    assert (f"RLX_COLLECTIVE_TIMEOUT='{value}' is not a number of seconds "
            ">= 0") in out, out


def test_zero_timeout_waits(rlx):
    """RLX_COLLECTIVE_TIMEOUT=0: no limit; the ranks agree and finish."""
    layer, inputs, params = layer_case(rlx)
    expected = rlx.run(layer, inputs, params)["out"]
    programs = shard(rlx, layer)
    proc, out, _ = launch(
        rlx.tmp, [rlx_run(rlx.tmp, f"layer{r}", p, inputs, params)
                  for r, p in enumerate(programs)],
        env={"RLX_COLLECTIVE_TIMEOUT": "0"})
    assert proc.returncode == 0, out
    for r in range(2):
        np.testing.assert_allclose(np.load(rlx.tmp / f"out_layer{r}/out.npy"),
                                   expected, rtol=1e-5, atol=1e-5,
                                   err_msg=f"rank {r}")


#===----------------------------------------------------------------------===#
# Python: rlx.set_communicator (mpi4py), rlx.check_same_on_all_ranks
#===----------------------------------------------------------------------===#

SCRIPT = r'''
import pathlib
import sys

import numpy as np
from mpi4py import MPI

import rlx

mode, tmp = sys.argv[1], pathlib.Path(sys.argv[2])
world = MPI.COMM_WORLD
r = world.Get_rank()
inputs = dict(np.load(tmp / "inputs.npz"))
params = dict(np.load(tmp / "params.npz"))
expected = np.load(tmp / "expected.npy")


def run(program):
    model = rlx.Session().compile((tmp / program).read_text())
    model.load_params(params)
    return model.run(inputs)["out"]


def raises(fn, *texts):
    try:
        fn()
    except rlx.RLXError as e:
        for text in texts:
            assert text in str(e), (text, str(e))
        return
    raise AssertionError(f"no rlx.RLXError; expected {texts}")


if mode == "dup":
    comm = world.Dup()
    rlx.set_communicator(comm)
    assert (rlx.collective_rank(), rlx.collective_size()) == (r, 2)
    rlx.check_same_on_all_ranks(2**64 - 1, "the test model")
    raises(lambda: rlx.check_same_on_all_ranks(1000 + r, "the test model"),
           "the test model differs between ranks", f"rank {r} of 2")
    np.testing.assert_allclose(run(f"rank{r}.mlir"), expected, rtol=1e-5,
                               atol=1e-5)
    # The collectives ran over `comm`: it can no longer change.
    raises(lambda: rlx.set_communicator(world), "already ran")
    rlx.set_communicator(comm)
else:
    comm = world.Split(color=r, key=0)
    rlx.set_communicator(comm)
    assert (rlx.collective_rank(), rlx.collective_size()) == (0, 1)
    rlx.check_same_on_all_ranks(r, "the test model")
    np.testing.assert_allclose(run("unsharded.mlir"), expected, rtol=1e-5,
                               atol=1e-5)
    raises(lambda: run(f"rank{r}.mlir"), "collectives span 2 ranks",
           "communicator set for RLX's collectives has 1 processes")
try:
    rlx.set_communicator(MPI.COMM_NULL)
except rlx.RLXError as e:
    assert "MPI_COMM_NULL" in str(e) or "already ran" in str(e), str(e)
print(f"rank {r}: {mode} ok", flush=True)
'''


@pytest.mark.parametrize("mode", ["dup", "split"])
def test_python_communicator(rlx, mode):
    mpi4py_or_skip()
    python_dir = BUILD / "python"
    assert (python_dir / "rlx").is_dir(), (
        f"{python_dir}/rlx is not built (RLX_ENABLE_PYTHON_BINDINGS)")
    layer, inputs, params = layer_case(rlx)
    np.savez(rlx.tmp / "inputs.npz", **inputs)
    np.savez(rlx.tmp / "params.npz", **params)
    np.save(rlx.tmp / "expected.npy", rlx.run(layer, inputs, params)["out"])
    (rlx.tmp / "unsharded.mlir").write_text(layer)
    for r, program in enumerate(shard(rlx, layer)):
        (rlx.tmp / f"rank{r}.mlir").write_text(program)
    (rlx.tmp / "script.py").write_text(SCRIPT)
    # python -m mpi4py: an uncaught exception on one rank aborts the job.
    command = [sys.executable, "-m", "mpi4py", rlx.tmp / "script.py", mode,
               rlx.tmp]
    pythonpath = os.pathsep.join(
        p for p in (str(python_dir), os.environ.get("PYTHONPATH")) if p)
    proc, out, _ = launch(rlx.tmp, [command, command],
                          env={"PYTHONPATH": pythonpath,
                               "RLX_COLLECTIVE_TIMEOUT": "60"})
    assert proc.returncode == 0, out
    for r in range(2):
        assert f"rank {r}: {mode} ok" in out, out


WORLD_OF_ONE = r'''
import rlx

assert (rlx.collective_rank(), rlx.collective_size()) == (0, 1)
rlx.check_same_on_all_ranks(5, "the test model")
for bad in (-1, 2**64, True, "5"):
    try:
        rlx.check_same_on_all_ranks(bad, "the test model")
    except rlx.RLXError as e:
        assert "is not an integer in [0, 2**64)" in str(e), str(e)
    else:
        raise AssertionError(f"fingerprint {bad!r} accepted")
try:
    rlx.set_communicator(42)
except TypeError as e:
    assert "expects an mpi4py MPI.Comm" in str(e), str(e)
except rlx.RLXError as e:
    assert "needs mpi4py" in str(e), str(e)
else:
    raise AssertionError("set_communicator(42) accepted")
print("world of one ok", flush=True)
'''


def test_python_world_of_one(tmp_path):
    """Without a launcher: rank 0 of 1, nothing to agree on, and bad
    arguments are errors."""
    python_dir = BUILD / "python"
    assert (python_dir / "rlx").is_dir(), (
        f"{python_dir}/rlx is not built (RLX_ENABLE_PYTHON_BINDINGS)")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    env["PYTHONPATH"] = str(python_dir)
    proc = subprocess.run([sys.executable, "-c", WORLD_OF_ONE],
                          capture_output=True, text=True, env=env,
                          timeout=BOUND)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "world of one ok" in proc.stdout
