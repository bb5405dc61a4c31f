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
import shlex
import shutil
import subprocess

import numpy as np
import pytest

from conftest import BUILD, RLX_RUN
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
    env = dict(os.environ, RLX_NUM_THREADS="1", RLX_NO_CACHE="1")
    cmd = [mpirun(), "--oversubscribe", "--allow-run-as-root", "-np",
           str(np_ or len(programs)), "sh", str(launcher)]
    # A collective that waits forever would be a bug: bounded here.
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          timeout=300)
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
    hir = MODEL.format(layer=layer, head=TIED_HEAD)
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
