# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The differential fuzzer (fuzz/difffuzz.py) stays working: its quick mode
(a handful of random MIR and HIR programs, on the CPU and on Vulkan when
there is a device, against its NumPy interpreter), its determinism, its
interpreter on ops with known results, and what it saves on a mismatch (with
a stand-in rlx-run that answers wrongly)."""

import os
import stat
import sys

import numpy as np
import pytest

from conftest import BUILD, RLX_RUN, ROOT, vulkan_status

sys.path.insert(0, str(ROOT / "fuzz"))
import difffuzz  # noqa: E402


def test_quick_run(tmp_path, capsys):
    assert RLX_RUN.exists(), f"{RLX_RUN} is not built"
    args = ["--count", "8", "--seed", "7", "--build", str(BUILD),
            "--out", str(tmp_path / "cases")]
    if not vulkan_status()[0] and os.environ.get("RLX_REQUIRE_VULKAN") != "1":
        args.append("--no-vulkan")
    rc = difffuzz.main(args)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "8 programs" in out and "mismatches 0, crashes 0" in out, out
    assert not (tmp_path / "cases").exists()


def test_deterministic():
    for seed in (1, 2, 3):
        a, b = difffuzz.generate(seed), difffuzz.generate(seed)
        assert a[0] == b[0]
        assert sorted(a[1]) == sorted(b[1])
        for name in a[1]:
            np.testing.assert_array_equal(a[1][name], b[1][name])
    assert difffuzz.generate(1)[0] != difffuzz.generate(2)[0]


def test_generated_programs_interpret():
    """Many programs: every op the generator writes, the interpreter reads,
    and every output has its declared type."""
    for seed in range(100):
        text, inputs, params = difffuzz.generate(seed)
        outs = difffuzz.interpret(text, inputs, params)
        assert outs and all(np.all(np.isfinite(v)) for v in outs.values()
                            if v.dtype == np.float32)


def test_interpreter_known_values():
    text = """func.func @f(%x: tensor<2x3xf32> {rlx.name = "x"}) -> (tensor<3x2xf32> {rlx.name = "out0"}, tensor<2xf32> {rlx.name = "out1"}, tensor<2x2xf32> {rlx.name = "out2"}) {
  %w = mir.param "w" : tensor<2x3xf32>
  %t = mir.transpose %x {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %s = mir.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  %m = mir.matmul %x, %w {transpose_rhs} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  return %t, %s, %m : tensor<3x2xf32>, tensor<2xf32>, tensor<2x2xf32>
}
"""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = np.ones((2, 3), np.float32)
    out = difffuzz.interpret(text, {"x": x}, {"w": w})
    np.testing.assert_array_equal(out["out0"], x.T)
    np.testing.assert_array_equal(out["out1"], [3, 12])
    np.testing.assert_array_equal(out["out2"], [[3, 3], [12, 12]])


def test_compare_tolerances():
    want = {"y": np.array([1.0, 100.0], np.float32)}
    assert difffuzz.compare({"y": want["y"] + 0.1}, want) is None
    assert "1 of 2 values off" in difffuzz.compare(
        {"y": np.array([1.5, 100.0], np.float32)}, want)
    assert "int32" in difffuzz.compare(
        {"y": want["y"].astype(np.int32)}, want)
    ints = {"i": np.array([1, 2], np.int32)}
    assert "differ" in difffuzz.compare({"i": np.array([1, 3], np.int32)},
                                        ints)


def test_mismatch_is_saved_with_a_reproduction(tmp_path, capsys):
    """A stand-in rlx-run that writes zeros: the case is saved with its
    program, inputs, logs and repro.sh, and --replay fails on it."""
    bin_dir = tmp_path / "build" / "bin"
    bin_dir.mkdir(parents=True)
    fake = bin_dir / "rlx-run"
    fake.write_text(f"""#!{sys.executable}
import pathlib, re, sys
import numpy as np
sys.path.insert(0, {str(ROOT / 'fuzz')!r})
import difffuzz
args = sys.argv[1:]
text = pathlib.Path(args[0]).read_text()
ins = {{}}
pars = {{}}
for flag, val in zip(args, args[1:]):
    if flag in ("--input", "--param"):
        name, path = val.split("=", 1)
        (ins if flag == "--input" else pars)[name] = np.load(path)
out = pathlib.Path(args[args.index("--output-dir") + 1])
out.mkdir(parents=True, exist_ok=True)
for name, arr in difffuzz.interpret(text, ins, pars).items():
    np.save(out / (name + ".npy"), np.zeros_like(arr))
""")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    cases = tmp_path / "cases"
    rc = difffuzz.main(["--count", "1", "--seed", "3", "--no-vulkan",
                        "--build", str(tmp_path / "build"), "--out",
                        str(cases)])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "mismatch on cpu" in out and "reproduce: sh" in out, out
    (case,) = cases.iterdir()
    names = {p.name for p in case.iterdir()}
    assert {"program.mlir", "repro.sh", "findings.txt",
            "log_cpu.txt"} <= names, names
    assert any(n.startswith("input_") for n in names), names
    assert "--replay" in (case / "repro.sh").read_text()
    assert difffuzz.main(["--replay", str(case), "--no-vulkan", "--build",
                          str(tmp_path / "build")]) == 1


#===----------------------------------------------------------------------===#
# What the fuzzer found, reduced: run on every device against the reference
#===----------------------------------------------------------------------===#

# A slice of an i1 tensor (a strided i1 view): the CPU back end divided by
# the element's bytes, bit width / 8 = 0 (SIGFPE in convert-lir-to-loops).
SLICE_OF_I1 = """func.func @f(%x: tensor<4x3xf32> {rlx.name = "x"}, %y: tensor<4x3xf32> {rlx.name = "y"}) -> (tensor<4x2xf32> {rlx.name = "out0"}) {
  %c = mir.compare %x, %y {predicate = #mir<cmp lt>} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xi1>
  %s = mir.slice %c {axis = 1 : i64, start = 1 : i64, size = 2 : i64} : (tensor<4x3xi1>) -> tensor<4x2xi1>
  %a = mir.slice %x {axis = 1 : i64, start = 1 : i64, size = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x2xf32>
  %b = mir.slice %y {axis = 1 : i64, start = 0 : i64, size = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x2xf32>
  %r = mir.select %s, %a, %b : (tensor<4x2xi1>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}
"""

# An i1 output: rlx-run had no .npy writer for booleans.
BOOL_OUTPUT = """func.func @f(%x: tensor<4x3xf32> {rlx.name = "x"}, %y: tensor<3xf32> {rlx.name = "y"}) -> (tensor<4x3xi1> {rlx.name = "out0"}) {
  %c = mir.compare %x, %y {predicate = #mir<cmp ge>} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xi1>
  return %c : tensor<4x3xi1>
}
"""

# A splat constant read by a matmul (or softmax, transpose, a reduction, a
# slice, a norm...): both back ends refused it, "expects tensor operands on
# the CPU back end"; such a constant is now bound as memory.
SPLAT_CONSTANT_MATMUL = """func.func @f(%x: tensor<4x1xf32> {rlx.name = "x"}) -> (tensor<4x4xf32> {rlx.name = "out0"}) {
  %c = mir.constant dense<-1.5> : tensor<4x1xf32>
  %r = mir.matmul %x, %c {transpose_rhs} : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
"""

# The same for a norm, softmax, transpose and reduction reading splats.
SPLAT_CONSTANT_OTHERS = """func.func @f(%x: tensor<4x3xf32> {rlx.name = "x"}) -> (tensor<4x3xf32> {rlx.name = "out0"}, tensor<3x4xf32> {rlx.name = "out1"}, tensor<4xf32> {rlx.name = "out2"}) {
  %c = mir.constant dense<0.5> : tensor<4x3xf32>
  %w = mir.constant dense<2.0> : tensor<3xf32>
  %n = mir.rms_norm %c, %w {epsilon = 1.0e-6 : f32} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %a = mir.add %n, %x : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = mir.softmax %c {axis = -1 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %t = mir.transpose %s {permutation = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %r = mir.reduce_sum %c {axes = array<i64: 1>} : (tensor<4x3xf32>) -> tensor<4xf32>
  return %a, %t, %r : tensor<4x3xf32>, tensor<3x4xf32>, tensor<4xf32>
}
"""

INPUTS = {
    SLICE_OF_I1: {"x": (4, 3), "y": (4, 3)},
    BOOL_OUTPUT: {"x": (4, 3), "y": (3,)},
    SPLAT_CONSTANT_MATMUL: {"x": (4, 1)},
    SPLAT_CONSTANT_OTHERS: {"x": (4, 3)},
}


def devices():
    ok = vulkan_status()[0] or os.environ.get("RLX_REQUIRE_VULKAN") == "1"
    return ["cpu", "vulkan"] if ok else ["cpu"]


@pytest.mark.parametrize("text", [
    pytest.param(SLICE_OF_I1, id="slice-of-i1"),
    pytest.param(BOOL_OUTPUT, id="bool-output"),
    pytest.param(SPLAT_CONSTANT_MATMUL, id="splat-constant-matmul"),
    pytest.param(SPLAT_CONSTANT_OTHERS, id="splat-constant-others"),
])
def test_found(tmp_path, text):
    assert RLX_RUN.exists(), f"{RLX_RUN} is not built"
    rng = np.random.default_rng(0)
    inputs = {k: rng.standard_normal(s).astype(np.float32)
              for k, s in INPUTS[text].items()}
    difffuzz.write_case(tmp_path, text, inputs, {})
    want = difffuzz.interpret(text, inputs, {})
    assert difffuzz.check_case(BUILD, tmp_path, devices(), want) == []
