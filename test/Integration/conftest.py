# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Shared helpers for the integration tests: run rlx-run on an .mlir module
with .npy inputs and compare its outputs with an independent reference."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("RLX_BUILD_DIR", ROOT / "build"))
RLX_RUN = BUILD / "bin" / "rlx-run"


def mlir_type(a):
    dt = {np.float32: "f32", np.int32: "i32", np.int64: "i64",
          np.bool_: "i1"}[a.dtype.type]
    if a.ndim == 0:
        return f"tensor<{dt}>"
    return "tensor<" + "x".join(str(d) for d in a.shape) + f"x{dt}>"


class Runner:
    def __init__(self, tmp):
        self.tmp = pathlib.Path(tmp)

    def run(self, mlir, inputs, params=None, args=(), expect_fail=False):
        """Compiles and runs `mlir`; returns {output name: array}."""
        src = self.tmp / "module.mlir"
        src.write_text(mlir)
        cmd = [str(RLX_RUN), str(src), "--quiet",
               "--output-dir", str(self.tmp / "out")]
        for name, arr in inputs.items():
            path = self.tmp / f"in_{name}.npy"
            np.save(path, arr)
            cmd += ["--input", f"{name}={path}"]
        for name, arr in (params or {}).items():
            path = self.tmp / f"param_{name.replace('/', '_')}.npy"
            np.save(path, arr)
            cmd += ["--param", f"{name}={path}"]
        cmd += list(args)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if expect_fail:
            assert proc.returncode != 0, proc.stdout
            return proc.stderr
        assert proc.returncode == 0, proc.stderr + proc.stdout
        out = {}
        for f in (self.tmp / "out").glob("*.npy"):
            out[f.stem] = np.load(f)
        return out


@pytest.fixture
def rlx(tmp_path):
    assert RLX_RUN.exists(), f"{RLX_RUN} is not built"
    return Runner(tmp_path)


def assert_close(actual, expected, rtol=1e-5, atol=1e-5):
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
