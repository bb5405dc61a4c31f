# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Shared helpers for the integration tests: run rlx-run on an .mlir module
with .npy inputs and compare its outputs with an independent reference."""

import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("RLX_BUILD_DIR", ROOT / "build"))
RLX_RUN = BUILD / "bin" / "rlx-run"
# Tests see what the compiler does, not what an earlier run left in the
# compile cache (test_compile_cache.py passes --cache-dir).
os.environ["RLX_NO_CACHE"] = "1"


def mlir_type(a):
    if a.dtype == np.dtype("V2"):  # bf16 as rlx-run reads and writes it
        dt = "bf16"
    else:
        dt = {np.float32: "f32", np.float16: "f16", np.float64: "f64",
              np.int8: "i8", np.int16: "i16", np.int32: "i32",
              np.int64: "i64", np.bool_: "i1"}[a.dtype.type]
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


def tokens(proc):
    """The ids of rlx-run --model's `tokens:` line."""
    m = re.search(r"^tokens:(.*)$", proc.stdout, re.M)
    assert m, proc.stdout
    return [int(t) for t in m.group(1).split()]


def graphs(proc):
    """(graphs compiled, of which from the compile cache) of a generation."""
    m = re.search(r"(\d+) graphs compiled \((\d+) from the compile cache\)",
                  proc.stdout)
    assert m, proc.stdout
    return int(m.group(1)), int(m.group(2))


def assert_close(actual, expected, rtol=1e-5, atol=1e-5):
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


#===----------------------------------------------------------------------===#
# Vulkan
#===----------------------------------------------------------------------===#

RLX_VULKAN_PROBE = BUILD / "bin" / "rlx-vulkan-probe"
_vulkan_status = None


def vulkan_status():
    """(available, why): whether rlx-vulkan-probe can open a Vulkan device."""
    global _vulkan_status
    if _vulkan_status is None:
        if not RLX_VULKAN_PROBE.exists():
            _vulkan_status = (False, f"{RLX_VULKAN_PROBE} is not built")
        else:
            proc = subprocess.run([str(RLX_VULKAN_PROBE)], capture_output=True,
                                  text=True)
            _vulkan_status = (proc.returncode == 0,
                              (proc.stdout + proc.stderr).strip())
    return _vulkan_status


def require_vulkan():
    """Skips the calling test when there is no Vulkan device, unless
    RLX_REQUIRE_VULKAN=1 (CI, where lavapipe is installed): then it fails."""
    ok, why = vulkan_status()
    if ok:
        return
    if os.environ.get("RLX_REQUIRE_VULKAN") == "1":
        pytest.fail(f"RLX_REQUIRE_VULKAN=1 but no Vulkan device: {why}")
    pytest.skip(f"no Vulkan device: {why}")


def assert_same_as_cpu(vk, cpu, rtol=1e-4, atol=1e-4):
    """Vulkan outputs against the CPU's: floats within rtol + atol times the
    output's scale (max |x|, at least 1), integers and booleans exactly."""
    assert sorted(vk) == sorted(cpu), (sorted(vk), sorted(cpu))
    for name, c in cpu.items():
        v = vk[name]
        assert v.shape == c.shape and v.dtype == c.dtype, (name, v.shape, c.shape)
        if np.issubdtype(c.dtype, np.floating):
            # The finite values set the scale (an inf would make any
            # difference pass); infinities must match exactly.
            finite = np.abs(c[np.isfinite(c)])
            scale = max(1.0, float(finite.max()) if finite.size else 1.0)
            np.testing.assert_allclose(v, c, rtol=rtol, atol=atol * scale,
                                       equal_nan=True, err_msg=name)
        else:
            np.testing.assert_array_equal(v, c, err_msg=name)


class VulkanRunner(Runner):
    """Runs a module with `--device vulkan` and on the CPU, checks that the
    two agree (assert_same_as_cpu) and returns the Vulkan outputs."""

    def run(self, mlir, inputs, params=None, args=(), expect_fail=False):
        vk = Runner(self.tmp).run(mlir, inputs, params,
                                  [*args, "--device", "vulkan"], expect_fail)
        if expect_fail:
            return vk
        cpu_dir = self.tmp / "cpu"
        cpu_dir.mkdir(exist_ok=True)
        cpu = Runner(cpu_dir).run(mlir, inputs, params, args)
        assert_same_as_cpu(vk, cpu)
        return vk


@pytest.fixture
def vulkan_rlx(tmp_path):
    assert RLX_RUN.exists(), f"{RLX_RUN} is not built"
    require_vulkan()
    return VulkanRunner(tmp_path)
