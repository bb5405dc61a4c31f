# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Every MIR op over the attribute space its verifier accepts (issue 19,
item 2): each axis (negative ones too), keep_dims, transposes, steps, mask
kinds and RoPE styles, and every element type the op takes (f32, f16, bf16,
i8, i16, i32, i64, i1 where allowed), on small shapes; constants and params
of every type, elementwise regions and attention blocks too. Each case is compiled
and run by rlx-run and checked against NumPy; a back end must run what the
verifier accepts.

Cases are batched: one module per op family (a few hundred kernels in a
dozen rlx-run calls). When a module fails, each of its cases runs alone so
the failure names the op, the attributes and the element type.

On Vulkan (lavapipe) the same cases run except those of element types the
SPIR-V back end does not hold in registers (bf16 and i16 values: docs/GPU.md;
the op table in docs/Dialects/MIR.md)."""

import itertools
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, RLX_RUN, Runner, require_vulkan

sys.path.insert(0, str(ROOT / "fuzz"))
import difffuzz  # noqa: E402  (rope and attention references)

FLOATS = ["f32", "f16", "bf16"]
INTS = ["i8", "i16", "i32", "i64"]
NUMERIC = FLOATS + INTS
# What the SPIR-V back end holds (bf16 and i16 only as stored weights).
VULKAN_TYPES = {"f32", "f16", "i1", "i8", "i32", "i64"}
# |out - ref| <= RTOL * |ref| + ATOL * max(1, max |ref|), by element type.
TOL = {"f32": (1e-4, 1e-4), "f16": (1e-2, 1e-2), "bf16": (5e-2, 5e-2)}

NP = {"f32": np.float32, "f16": np.float16, "i8": np.int8, "i16": np.int16,
      "i32": np.int32, "i64": np.int64, "i1": np.bool_}


def bf16_round(x):
    """float64 values rounded to bf16 (to nearest even), as float64."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32).astype(np.float64)


def feed(vals, dt):
    """The array rlx-run reads for values `vals` of element type `dt`."""
    if dt == "bf16":
        bits = np.asarray(vals, np.float32).view(np.uint32) >> 16
        return bits.astype(np.uint16).view("V2")
    return np.asarray(vals).astype(NP[dt])


def values(out, dt):
    """An rlx-run output as float64 (floats) or int64 / bool values."""
    if dt == "bf16":
        return (out.view(np.uint16).astype(np.uint32) << 16).view(
            np.float32).astype(np.float64)
    if dt in FLOATS:
        return out.astype(np.float64)
    return out.astype(bool if dt == "i1" else np.int64)


def rounded(vals, dt):
    """`vals` as element type `dt` holds them (float64 / int64 / bool)."""
    if dt == "bf16":
        return bf16_round(vals)
    if dt in FLOATS:
        return np.asarray(vals).astype(NP[dt]).astype(np.float64)
    if dt == "i1":
        return np.asarray(vals).astype(bool)
    return np.asarray(vals).astype(np.int64)


class Rand:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def __call__(self, shape, dt, lo=-3.0, hi=3.0):
        """Values of `dt` in [lo, hi) (integers: [lo, hi] as ints)."""
        if dt == "i1":
            return self.rng.random(shape) < 0.5
        if dt in FLOATS:
            return rounded(self.rng.uniform(lo, hi, shape), dt)
        return self.rng.integers(int(lo), int(hi) + 1, shape).astype(np.int64)


R = Rand(19)


def tt(shape, dt):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dt + ">"


class Case:
    """One op: `text` with $0, $1, ... for its operands, $SIG for its
    functional type and $OUT for its (first) result type; `ins` are
    (values, element type); `outs` are (expected values, element type)."""

    def __init__(self, label, text, ins, outs, tol=None, params=()):
        self.label, self.text, self.ins, self.outs = label, text, ins, outs
        self.tol, self.params = tol, list(params)

    def types(self):
        return ({dt for _, dt in self.ins + self.params} |
                {dt for _, dt in self.outs})


def module(cases):
    """One function running every case; inputs c<i>a<j>, params c<i>p<j>
    ($P<j> in the text), outputs c<i>r<j>. Returns (text, inputs, params)."""
    args, results, body, rets = [], [], [], []
    feeds, params = {}, {}
    for i, c in enumerate(cases):
        text = c.text
        for j, (v, dt) in enumerate(c.params):
            name = f"c{i}p{j}"
            body.append(f'  %{name} = mir.param "{name}" : {tt(np.shape(v), dt)}')
            params[name] = feed(v, dt)
            text = text.replace(f"$P{j}", f"%{name}")
        names = []
        for j, (v, dt) in enumerate(c.ins):
            name = f"c{i}a{j}"
            args.append(f'%{name}: {tt(np.shape(v), dt)} {{rlx.name = "{name}"}}')
            feeds[name] = feed(v, dt)
            names.append(f"%{name}")
        in_types = [tt(np.shape(v), dt) for v, dt in c.ins]
        out_types = [tt(np.shape(v), dt) for v, dt in c.outs]
        sig = (f"({', '.join(in_types)}) -> " +
               (out_types[0] if len(out_types) == 1
                else f"({', '.join(out_types)})"))
        text = text.replace("$SIG", sig).replace("$OUT", out_types[0])
        for j in reversed(range(len(names))):
            text = text.replace(f"${j}", names[j])
        n = len(c.outs)
        body.append(f"  %c{i}{':' + str(n) if n > 1 else ''} = {text}")
        for j, t in enumerate(out_types):
            results.append(f'{t} {{rlx.name = "c{i}r{j}"}}')
            rets.append((f"%c{i}#{j}" if n > 1 else f"%c{i}", t))
    return (f"func.func @f({', '.join(args)}) -> ({', '.join(results)}) {{\n" +
            "\n".join(body) + "\n  return " + ", ".join(r for r, _ in rets) +
            " : " + ", ".join(t for _, t in rets) + "\n}\n", feeds, params)


def mismatch(case, i, out):
    """Why output `out` of `case`'s result `i` is wrong, or None."""
    ref, dt = case.outs[i]
    got = values(out, dt)
    ref = np.asarray(ref)
    if got.shape != ref.shape:
        return f"shape {got.shape}, expected {ref.shape}"
    if dt not in FLOATS:
        if not np.array_equal(got, ref.astype(got.dtype)):
            return f"got {got.ravel()[:8]}, expected {ref.ravel()[:8]}"
        return None
    rtol, atol = case.tol or TOL[dt]
    finite = np.abs(ref[np.isfinite(ref)])
    scale = max(1.0, float(finite.max()) if finite.size else 1.0)
    bad = ~(np.isclose(got, ref, rtol=rtol, atol=atol * scale, equal_nan=True))
    if bad.any():
        k = np.flatnonzero(bad)[:4]
        return (f"{int(bad.sum())} of {ref.size} off, e.g. got "
                f"{got.ravel()[k]}, expected {ref.ravel()[k]}")
    return None


def run_cases(runner, cases, args=()):
    """Failures as 'label: why' for the cases that do not compile, run or
    match."""
    text, feeds, params = module(cases)
    proc_out = runner.try_run(text, feeds, params, args)
    if isinstance(proc_out, str):
        if len(cases) == 1:
            lines = [l for l in proc_out.splitlines() if "error" in l]
            return [f"{cases[0].label}: {(lines or [proc_out])[0].strip()}"]
        return [f for c in cases for f in run_cases(runner, [c], args)]
    failures = []
    for i, c in enumerate(cases):
        for j in range(len(c.outs)):
            why = mismatch(c, j, proc_out[f"c{i}r{j}"])
            if why:
                failures.append(f"{c.label} (result {j}): {why}")
    return failures


class SpaceRunner(Runner):
    def try_run(self, mlir, inputs, params, args):
        """{output: array}, or the error text of a failed compile or run."""
        src = self.tmp / "module.mlir"
        src.write_text(mlir)
        out = self.tmp / "out"
        for f in out.glob("*.npy") if out.exists() else []:
            f.unlink()
        cmd = [str(RLX_RUN), str(src), "--quiet", "--output-dir", str(out)]
        for name, arr in inputs.items():
            path = self.tmp / f"in_{name}.npy"
            np.save(path, arr)
            cmd += ["--input", f"{name}={path}"]
        for name, arr in params.items():
            path = self.tmp / f"param_{name}.npy"
            np.save(path, arr)
            cmd += ["--param", f"{name}={path}"]
        proc = subprocess.run(cmd + list(args), capture_output=True, text=True)
        if proc.returncode != 0:
            return proc.stderr + proc.stdout
        return {f.stem: np.load(f) for f in out.glob("*.npy")}


#===----------------------------------------------------------------------===#
# The cases, by op family
#===----------------------------------------------------------------------===#

X = (2, 3, 4)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


UNARY = {
    "exp": (np.exp, -3, 3), "log": (np.log, 0.1, 4), "sqrt": (np.sqrt, 0.1, 4),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 0.1, 4), "tanh": (np.tanh, -3, 3),
    "erf": (difffuzz.UNARY["erf"], -3, 3), "sigmoid": (sigmoid, -3, 3),
    "sin": (np.sin, -20, 20), "cos": (np.cos, -20, 20),
    "silu": (lambda x: x * sigmoid(x), -3, 3),
    "gelu": (difffuzz.gelu, -3, 3), "relu": (lambda x: np.maximum(x, 0), -3, 3),
    "neg": (np.negative, -3, 3), "abs": (np.abs, -3, 3),
    "floor": (np.floor, -3, 3), "ceil": (np.ceil, -3, 3),
    "round": (np.round, -3, 3), "sign": (np.sign, -3, 3),
}


def unary_cases():
    cases = []
    for dt in FLOATS:
        for name, (fn, lo, hi) in UNARY.items():
            x = R(X, dt, lo, hi)
            if name in ("floor", "ceil", "round", "sign"):
                x.ravel()[:4] = [0.5, -1.5, 2.5, 0.0]  # halves and zero
            cases.append(Case(f"{name} {dt}", f"mir.{name} $0 : $SIG",
                              [(x, dt)], [(rounded(fn(x), dt), dt)]))
        x = R(X, dt)
        cases.append(Case(f"gelu tanh_approx {dt}",
                          "mir.gelu $0 {tanh_approx} : $SIG", [(x, dt)],
                          [(rounded(difffuzz.gelu_tanh(x), dt), dt)]))
        cases.append(Case(f"clip {dt}",
                          "mir.clip $0 {min = -1.0 : f32, max = 0.5 : f32} : $SIG",
                          [(x, dt)], [(np.clip(x, -1, 0.5), dt)]))
        for act, fn in difffuzz.ACTIVATIONS.items():
            if act == "none":
                continue
            cases.append(Case(f"activation {act} {dt}",
                              f"mir.activation $0 {{activation = #mir<activation {act}>}} : $SIG",
                              [(x, dt)], [(rounded(fn(x), dt), dt)]))
    return cases


def wrap(v, dt):
    """Integer results wrap in their width (two's complement; i1 keeps its
    low bit)."""
    if dt in FLOATS:
        return v
    if dt == "i1":
        return (np.asarray(v).astype(np.int64) & 1) != 0
    return np.asarray(v).astype(np.int64).astype(NP[dt]).astype(np.int64)


def signed(x, dt):
    """Integer values as the ops read them: i1 is signed (true is -1)."""
    return -np.asarray(x).astype(np.int64) if dt == "i1" else x


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
          "max": np.maximum, "min": np.minimum}


def binary_cases():
    cases = []
    for dt in NUMERIC + ["i1"]:
        lo, hi = (-3, 3) if dt in FLOATS else (-100, 100)
        a, b = R(X, dt, lo, hi), R((3, 1), dt, lo, hi)
        for name, fn in BINARY.items():
            ref = (rounded(fn(a, b), dt) if dt in FLOATS
                   else wrap(fn(signed(a, dt), signed(b, dt)), dt))
            cases.append(Case(f"{name} {dt} broadcast", f"mir.{name} $0, $1 : $SIG",
                              [(a, dt), (b, dt)], [(ref, dt)]))
        if dt == "i1":
            continue
        d = np.where(b == 0, 3, b)
        ref = a / d if dt in FLOATS else difffuzz.int_div(a, d)
        cases.append(Case(f"div {dt} broadcast", "mir.div $0, $1 : $SIG",
                          [(a, dt), (d, dt)], [(rounded(ref, dt) if dt in FLOATS else wrap(ref, dt), dt)]))
    for dt in FLOATS:
        a, b = R(X, dt, 0.5, 2), R((4,), dt, -2, 2)
        cases.append(Case(f"pow {dt}", "mir.pow $0, $1 : $SIG",
                          [(a, dt), (b, dt)], [(rounded(np.power(a, b), dt), dt)]))
    # compare: every predicate on f32 and i32, two on the other types.
    for dt in NUMERIC + ["i1"]:
        preds = difffuzz.CMP if dt in ("f32", "i32", "i1") else {
            k: difffuzz.CMP[k] for k in ("lt", "ne")}
        a = R(X, dt, -2, 2)
        b = R((4,), dt, -2, 2)
        a.ravel()[:4] = b  # some equal pairs
        for p, fn in preds.items():
            cases.append(Case(f"compare {p} {dt}",
                              f"mir.compare $0, $1 {{predicate = #mir<cmp {p}>}} : $SIG",
                              [(a, dt), (b, dt)],
                              [(fn(signed(a, dt), signed(b, dt)), "i1")]))
    for dt in NUMERIC + ["i1"]:
        c, a, b = R(X, "i1"), R((3, 4), dt), R((4,), dt)
        cases.append(Case(f"select {dt}", "mir.select $0, $1, $2 : $SIG",
                          [(c, "i1"), (a, dt), (b, dt)], [(np.where(c, a, b), dt)]))
    return cases


def cast_cases():
    cases = []
    for src, dst in itertools.permutations(NUMERIC + ["i1"], 2):
        x = R((3, 5), src, -100, 100) if src not in FLOATS else R((3, 5), src, -100, 100)
        if dst == "i1":
            ref = x != 0
        elif dst in FLOATS:
            ref = rounded(np.asarray(x, np.float64), dst)
        else:
            v = np.trunc(x) if src in FLOATS else x
            ref = wrap(np.asarray(v).astype(np.int64), dst)
        cases.append(Case(f"cast {src} -> {dst}", "mir.cast $0 : $SIG",
                          [(x, src)], [(ref, dst)]))
    return cases


REDUCE = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max,
          "reduce_min": np.min, "reduce_prod": np.prod}


def reduce_cases():
    cases = []
    subsets = [s for r in (1, 2, 3) for s in itertools.combinations(range(3), r)]
    for dt in NUMERIC + ["i1"]:
        for name, fn in REDUCE.items():
            if name == "reduce_mean" and dt not in FLOATS:
                continue
            axes_list = subsets if dt == "f32" else [(1,), (0, 2)]
            for axes in axes_list:
                for keep in ([False, True] if dt == "f32" else [False]):
                    lo, hi = ((0.5, 1.5) if name == "reduce_prod" else (-3, 3)) \
                        if dt in FLOATS else ((-2, 2) if name == "reduce_prod" else (-50, 50))
                    x = R(X, dt, lo, hi)
                    ref = fn(signed(x, dt), axis=axes, keepdims=keep)
                    ref = rounded(ref, dt) if dt in FLOATS else wrap(ref, dt)
                    ax = ", ".join(map(str, axes))
                    cases.append(Case(
                        f"{name} axes={axes} keep_dims={keep} {dt}",
                        f"mir.{name} $0 {{axes = array<i64: {ax}>{', keep_dims' if keep else ''}}} : $SIG",
                        [(x, dt)], [(ref, dt)]))
    return cases


def axis_cases():
    """argmax / argmin, cumsum, softmax, log_softmax on every axis."""
    cases = []
    for dt in NUMERIC + ["i1"]:
        axes = range(-3, 3) if dt == "f32" else (-1, 0)
        for name, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
            for axis in axes:
                for keep in ([False, True] if dt == "f32" else [False]):
                    x = R(X, dt, -20, 20)
                    ref = fn(signed(x, dt), axis=axis, keepdims=keep)
                    cases.append(Case(
                        f"{name} axis={axis} keep_dims={keep} {dt}",
                        f"mir.{name} $0 {{axis = {axis} : i64{', keep_dims' if keep else ''}}} : $SIG",
                        [(x, dt)], [(ref, "i64")]))
        for axis in axes:
            x = R(X, dt, -20, 20)
            ref = np.cumsum(signed(x, dt), axis=axis)
            cases.append(Case(f"cumsum axis={axis} {dt}",
                              f"mir.cumsum $0 {{axis = {axis} : i64}} : $SIG",
                              [(x, dt)], [(rounded(ref, dt) if dt in FLOATS else wrap(ref, dt), dt)]))
    for dt in FLOATS:
        for axis in (range(-3, 3) if dt == "f32" else (-1, 1)):
            x = R(X, dt)
            e = np.exp(x - x.max(axis, keepdims=True))
            sm = e / e.sum(axis, keepdims=True)
            cases.append(Case(f"softmax axis={axis} {dt}",
                              f"mir.softmax $0 {{axis = {axis} : i64}} : $SIG",
                              [(x, dt)], [(sm, dt)]))
            cases.append(Case(f"log_softmax axis={axis} {dt}",
                              f"mir.log_softmax $0 {{axis = {axis} : i64}} : $SIG",
                              [(x, dt)], [(np.log(sm), dt)]))
    return cases


def norm_cases():
    cases = []
    for dt in FLOATS:
        x, r = R(X, dt), R(X, dt)
        w, b = R((4,), dt, 0.5, 1.5), R((4,), dt)
        for unit in (False, True):
            cases.append(Case(
                f"rms_norm unit_offset={unit} {dt}",
                f"mir.rms_norm $0, $1 {{epsilon = 1.0e-5 : f32{', unit_offset' if unit else ''}}} : $SIG",
                [(x, dt), (w, dt)], [(difffuzz.rms_norm(x, w, 1e-5, unit), dt)]))
            s = rounded(x + r, dt)
            cases.append(Case(
                f"fused_residual_rms_norm unit_offset={unit} {dt}",
                f"mir.fused_residual_rms_norm $0, $1, $2 {{epsilon = 1.0e-5 : f32{', unit_offset' if unit else ''}}} : $SIG",
                [(x, dt), (r, dt), (w, dt)],
                [(s, dt), (difffuzz.rms_norm(s, w, 1e-5, unit), dt)]))
        cases.append(Case(f"layer_norm {dt}",
                          "mir.layer_norm $0, $1, $2 {epsilon = 1.0e-5 : f32} : $SIG",
                          [(x, dt), (w, dt), (b, dt)],
                          [(difffuzz.layer_norm(x, w, b, 1e-5), dt)]))
        s = rounded(x + r, dt)
        cases.append(Case(f"fused_residual_layer_norm {dt}",
                          "mir.fused_residual_layer_norm $0, $1, $2, $3 {epsilon = 1.0e-5 : f32} : $SIG",
                          [(x, dt), (r, dt), (w, dt), (b, dt)],
                          [(s, dt), (difffuzz.layer_norm(s, w, b, 1e-5), dt)]))
    return cases


def matmul_cases():
    cases = []
    for dt in FLOATS:
        for tl, tr in itertools.product((False, True), repeat=2):
            if dt != "f32" and (tl or not tr):
                continue
            a = R((2, 5, 3) if not tl else (2, 3, 5), dt)
            b = R((3, 4) if not tr else (4, 3), dt)
            flags = ", ".join(f for f, on in (("transpose_lhs", tl),
                                              ("transpose_rhs", tr)) if on)
            attr = f" {{{flags}}}" if flags else ""
            ref = difffuzz.matmul(a, b, tl, tr)
            cases.append(Case(f"matmul tl={tl} tr={tr} {dt}",
                              f"mir.matmul $0, $1{attr} : $SIG",
                              [(a, dt), (b, dt)], [(ref, dt)]))
            bb = R((2, 3, 4) if not tr else (2, 4, 3), dt)
            cases.append(Case(f"batch_matmul tl={tl} tr={tr} {dt}",
                              f"mir.batch_matmul $0, $1{attr} : $SIG",
                              [(a, dt), (bb, dt)],
                              [(difffuzz.matmul(a, bb, tl, tr), dt)]))
        x, w = R((2, 5, 3), dt), R((4, 3), dt)
        bias, res = R((4,), dt), R((2, 5, 4), dt)
        for act in ("none", "silu", "gelu_tanh"):
            y = difffuzz.ACTIVATIONS[act](difffuzz.matmul(x, w, False, True) + bias) + res
            cases.append(Case(
                f"fused_matmul bias residual {act} {dt}",
                f"mir.fused_matmul $0, $1 bias($2) residual($3) {{transpose_rhs, activation = #mir<activation {act}>}} : $SIG",
                [(x, dt), (w, dt), (bias, dt), (res, dt)], [(y, dt)]))
        gu = R((2, 3, 8), dt)
        for act in ("silu", "gelu_tanh"):
            ref = difffuzz.ACTIVATIONS[act](gu[..., :4]) * gu[..., 4:]
            cases.append(Case(f"fused_glu {act} {dt}",
                              f"mir.fused_glu $0 {{activation = #mir<activation {act}>}} : $SIG",
                              [(gu, dt)], [(ref, dt)]))
    return cases


def data_movement_cases():
    cases = []
    for dt in NUMERIC + ["i1"]:
        x = R(X, dt, -50, 50)
        perms = list(itertools.permutations(range(3))) if dt == "f32" else [(2, 0, 1)]
        for p in perms:
            cases.append(Case(f"transpose {p} {dt}",
                              f"mir.transpose $0 {{permutation = array<i64: {', '.join(map(str, p))}>}} : $SIG",
                              [(x, dt)], [(np.transpose(x, p), dt)]))
        cases.append(Case(f"reshape {dt}", "mir.reshape $0 : $SIG", [(x, dt)],
                          [(x.reshape(4, 6), dt)]))
        cases.append(Case(f"broadcast {dt}", "mir.broadcast $0 : $SIG",
                          [(x[:, :1], dt)], [(np.broadcast_to(x[:, :1], (3, 2, 1, 4)), dt)]))
        axes = range(3) if dt == "f32" else (1,)
        for axis in axes:
            n = X[axis]
            for start, size, step in ((0, n, 1), (1, n - 1, 1), (-1, 1, 1), (n - 1, n, -1),
                                      (0, (n + 1) // 2, 2), (n - 1, (n + 1) // 2, -2), (0, 0, 1)):
                idx = (start % n if start < 0 else start) + step * np.arange(size)
                cases.append(Case(
                    f"slice axis={axis} start={start} size={size} step={step} {dt}",
                    f"mir.slice $0 {{axis = {axis} : i64, start = {start} : i64, size = {size} : i64, step = {step} : i64}} : $SIG",
                    [(x, dt)], [(np.take(x, idx, axis=axis), dt)]))
        for axis in (range(-3, 3) if dt == "f32" else (-1,)):
            n = X[axis]
            sizes = [1, n - 1] if n > 2 else [n]
            pieces = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
            cases.append(Case(f"split axis={axis} sizes={sizes} {dt}",
                              f"mir.split $0 {{axis = {axis} : i64, sizes = array<i64: {', '.join(map(str, sizes))}>}} : $SIG",
                              [(x, dt)], [(p, dt) for p in pieces]))
        for axis in axes:
            shape = list(X)
            shape[axis] = 1
            y = R(tuple(shape), dt, -50, 50)
            cases.append(Case(f"concat axis={axis} {dt}",
                              f"mir.concat $0, $1 {{axis = {axis} : i64}} : $SIG",
                              [(x, dt), (y, dt)], [(np.concatenate([x, y], axis), dt)]))
        cases.append(Case(f"tile {dt}", "mir.tile $0 {multiples = array<i64: 2, 1, 3>} : $SIG",
                          [(x, dt)], [(np.tile(x, (2, 1, 3)), dt)]))
        for idt in ("i32", "i64"):
            for axis in (range(3) if dt == "f32" else (0,)):
                # Inputs indexing axis 0 are checked against [0, size) when
                # they enter (embedding ids); other axes count from the end.
                ids = (np.array([[1, 0], [1, 1]], np.int64) if axis == 0 else
                       np.array([[-1, 0], [1, -X[axis]]], np.int64))
                ref = np.take(x, ids, axis=axis)
                cases.append(Case(f"gather axis={axis} indices {idt} {dt}",
                                  f"mir.gather $0, $1 {{axis = {axis} : i64}} : $SIG",
                                  [(x, dt), (ids, idt)], [(ref, dt)]))
        if True:  # i1 too: the value converts as mir.cast (2.0 is true)
            ref = np.pad(x, [(0, 1), (2, 0), (1, 1)], constant_values=2)
            cases.append(Case(f"pad {dt}",
                              "mir.pad $0 {low = array<i64: 0, 2, 1>, high = array<i64: 1, 0, 1>, value = 2.0 : f64} : $SIG",
                              [(x, dt)], [(ref, dt)]))
            for axis in (range(-3, 3) if dt == "f32" else (0, -1)):
                ids = np.array([[0, 2, 5], [-1, 1, 3]], np.int64)
                oh = (ids[..., None] == np.arange(4)).astype(np.int64)
                oh = oh != 0 if dt == "i1" else oh
                ref = np.moveaxis(oh, -1, axis)
                cases.append(Case(f"one_hot axis={axis} {dt}",
                                  f"mir.one_hot $0 {{depth = 4 : i64, axis = {axis} : i64}} : $SIG",
                                  [(ids, "i64")], [(ref, dt)]))
            for axis in range(3):
                ref = np.broadcast_to(np.arange(X[axis]).reshape(
                    [-1 if i == axis else 1 for i in range(3)]), X)
                ref = ref != 0 if dt == "i1" else ref
                cases.append(Case(f"iota axis={axis} {dt}",
                                  f"mir.iota {{axis = {axis} : i64}} : $OUT",
                                  [], [(ref, dt)]))
    for dt in ("f16", "bf16"):
        w = R((3, 5), dt)
        cases.append(Case(f"dequantize {dt} -> f32", "mir.dequantize $0 : $SIG",
                          [(w, dt)], [(w, "f32")]))
    return cases


def rope_attention_cases():
    cases = []
    for dt in FLOATS:
        for style in ("half", "interleaved"):
            for rot in (8, 4):
                x = R((1, 3, 16), dt)
                pos = np.array([0, 5, 11], np.int64)
                ref = difffuzz.rope(x, pos, 8, rot, 10000.0, style)
                cases.append(Case(
                    f"rope style={style} rotary_dim={rot} {dt}",
                    f"mir.rope $0, $1 {{head_dim = 8 : i64, rotary_dim = {rot} : i64, theta = 10000.0 : f32, style = #mir<rope_style {style}>}} : $SIG",
                    [(x, dt), (pos, "i64")], [(ref, dt)]))
        for kind, window in (("none", 0), ("causal", 0), ("sliding_window", 2),
                             ("padding", 0)):
            if dt != "f32" and kind != "causal":
                continue
            q, k, v = R((2, 3, 16), dt), R((2, 4, 8), dt), R((2, 4, 8), dt)
            ins = [(q, dt), (k, dt), (v, dt)]
            mask = None
            text = "mir.attention $0, $1, $2"
            if kind == "padding":
                mask = np.array([[1, 1, 0, 1], [1, 1, 1, 1]], np.int64)
                ins.append((mask, "i64"))
                text += " mask($3)"
            ref = difffuzz.attention(q, k, v, 2, 1, 8, 0.35, kind, window, 0.0, mask)
            cases.append(Case(
                f"attention mask_kind={kind} {dt}",
                text + f" {{num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, scale = 0.35 : f32, mask_kind = #mir<mask {kind}>, window = {window} : i64}} : $SIG",
                ins, [(ref, dt)]))
    # An f32 query reading keys and values kept in f16 / bf16.
    for kv in ("f16", "bf16"):
        q, k, v = R((1, 2, 8), "f32"), R((1, 3, 8), kv), R((1, 3, 8), kv)
        ref = difffuzz.attention(q, k, v, 1, 1, 8, 0.35, "causal", 0, 0.0, None)
        cases.append(Case(
            f"attention f32 query, {kv} keys and values",
            "mir.attention $0, $1, $2 {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, scale = 0.35 : f32, mask_kind = #mir<mask causal>} : $SIG",
            [(q, "f32"), (k, kv), (v, kv)], [(ref, "f32")]))
    # The blocked CPU kernel (head_dim a multiple of 16) over 52 keys: three
    # blocks of 16 and a tail of 4, the mask hiding a whole block in one
    # batch (a decode step's empty past slots, skipped) and scattered keys in
    # the other; one query (decode) and three (prefill), causal and not.
    for tq, kind in ((1, "causal"), (3, "causal"), (3, "padding")):
        q, k, v = R((2, tq, 32), "f32"), R((2, 52, 16), "f32"), R((2, 52, 16), "f32")
        mask = np.ones((2, 52), np.int32)
        mask[0, 16:32] = 0
        mask[0, 40:44] = 0
        mask[1, ::3] = 0
        ref = difffuzz.attention(q, k, v, 2, 1, 16, 0.25, kind, 0, 0.0, mask)
        cases.append(Case(
            f"attention blocked, masked blocks, tq={tq} {kind}",
            "mir.attention $0, $1, $2 mask($3) {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask " + kind + ">} : $SIG",
            [(q, "f32"), (k, "f32"), (v, "f32"), (mask, "i32")], [(ref, "f32")]))
    return cases


def dense(vals, dt):
    """A dense attribute literal of `vals` (as element type `dt` holds them)."""
    def lit(v):
        if dt == "i1":
            return "true" if v else "false"
        if dt in FLOATS:
            return repr(float(v))
        return str(int(v))

    def nest(a):
        if np.ndim(a) == 0:
            return lit(a)
        return "[" + ", ".join(nest(x) for x in a) + "]"
    return f"dense<{nest(np.asarray(vals))}>"


def attention_block_ref(x, wqkv, wo, pos, nh, nkv, hd, rot, scale, kind,
                        qn=None, kn=None, bq=None, bo=None, mask=None,
                        eps=1e-6):
    """difffuzz's pieces composed as mir.attention_block defines it."""
    b, t, _ = x.shape
    qkv = difffuzz.matmul(x, wqkv, False, True)
    if bq is not None:
        qkv = qkv + bq
    q, k = qkv[..., :nh * hd], qkv[..., nh * hd:(nh + nkv) * hd]
    v = qkv[..., (nh + nkv) * hd:]
    if qn is not None:
        q = difffuzz.rms_norm(q.reshape(b, t, nh, hd), qn, eps).reshape(q.shape)
        k = difffuzz.rms_norm(k.reshape(b, t, nkv, hd), kn, eps).reshape(k.shape)
    if rot:
        q = difffuzz.rope(q, pos, hd, rot, 10000.0, "half")
        k = difffuzz.rope(k, pos, hd, rot, 10000.0, "half")
    o = difffuzz.attention(q, k, v, nh, nkv, hd, scale, kind, 0, 0.0, mask)
    y = difffuzz.matmul(o, wo, False, True)
    return y + bo if bo is not None else y


def composite_cases():
    """Constants and params of every type, an elementwise region, and\n    attention blocks with and without RoPE, QK-norm, biases and a mask."""
    cases = []
    for dt in NUMERIC + ["i1"]:
        v = R((2, 3), dt, -50, 50)
        cases.append(Case(f"constant {dt}", f"mir.constant {dense(v, dt)} : $OUT",
                          [], [(v, dt)]))
        cases.append(Case(f"constant splat {dt}",
                          f"mir.constant {dense(v.ravel()[0], dt)} : $OUT", [],
                          [(np.full((2, 3), v.ravel()[0]), dt)]))
        p = R((3, 2), dt, -50, 50)
        cases.append(Case(f"param {dt}", "mir.transpose $P0 {permutation = array<i64: 1, 0>} : $SIG".replace("$SIG", f"({tt((3, 2), dt)}) -> $OUT"),
                          [], [(p.T, dt)], params=[(p, dt)]))
    for dt, ext in (("f32", ""), ("f16", "arith.extf %h : f16 to f32")):
        a, h = R((2, 4), "f32"), R((4,), dt)
        body = ("^bb0(%x: f32, %h: " + dt + "):\n" +
                (f"    %e = {ext}\n" if ext else "") +
                "    %c = arith.constant 2.0 : f32\n"
                "    %m = arith.mulf %x, %c : f32\n"
                f"    %s = arith.addf %m, {'%e' if ext else '%h'} : f32\n"
                "    %t = math.tanh %s : f32\n"
                "    mir.yield %t : f32\n  }")
        cases.append(Case(f"elementwise f32 x {dt}",
                          "mir.elementwise $0, $1 {\n  " + body + " : $SIG",
                          [(a, "f32"), (h, dt)], [(np.tanh(2 * a + h), "f32")]))
    i, j = R((3, 4), "i32", -50, 50), R((4,), "i32", -50, 50)
    cases.append(Case("elementwise i32",
                      "mir.elementwise $0, $1 {\n  ^bb0(%x: i32, %y: i32):\n"
                      "    %m = arith.muli %x, %y : i32\n"
                      "    %s = arith.subi %m, %x : i32\n"
                      "    mir.yield %s : i32\n  } : $SIG",
                      [(i, "i32"), (j, "i32")], [(i * j - i, "i32")]))
    nh, nkv, hd = 2, 1, 8
    for dt in FLOATS:
        variants = ([(8, False, False, "causal"), (0, False, False, "none"),
                     (4, True, True, "padding")] if dt == "f32"
                    else [(8, True, True, "causal")])
        for rot, norm, bias, kind in variants:
            x = R((2, 3, 16), dt, -1, 1)
            wqkv = R(((nh + 2 * nkv) * hd, 16), dt, -0.3, 0.3)
            wo = R((12, nh * hd), dt, -0.3, 0.3)
            pos = np.array([0, 4, 9], np.int64)
            ins = [(x, dt)]
            params = [(wqkv, dt), (wo, dt)]
            opt, refs = "", {}
            if rot:
                ins.append((pos, "i64"))
                opt += f" positions(${len(ins) - 1})"
            if norm:
                qn, kn = R((hd,), dt, 0.5, 1.5), R((hd,), dt, 0.5, 1.5)
                ins += [(qn, dt), (kn, dt)]
                opt += f" q_norm(${len(ins) - 2}) k_norm(${len(ins) - 1})"
                refs.update(qn=qn, kn=kn)
            if bias:
                bq, bo = R(((nh + 2 * nkv) * hd,), dt), R((12,), dt)
                ins += [(bq, dt), (bo, dt)]
                opt += f" qkv_bias(${len(ins) - 2}) out_bias(${len(ins) - 1})"
                refs.update(bq=bq, bo=bo)
            if kind == "padding":
                mask = np.array([[1, 1, 0], [1, 1, 1]], np.int64)
                ins.append((mask, "i64"))
                opt += f" mask(${len(ins) - 1})"
                refs.update(mask=mask)
            ref = attention_block_ref(x, wqkv, wo, pos, nh, nkv, hd, rot, 0.35,
                                      kind, **refs)
            # The weights are params, not operands of the function type.
            sig_ins = ", ".join([tt(np.shape(x), dt), tt(np.shape(wqkv), dt),
                                 tt(np.shape(wo), dt)] +
                                [tt(np.shape(v), t) for v, t in ins[1:]])
            cases.append(Case(
                f"attention_block rotary_dim={rot} qk_norm={norm} bias={bias} mask_kind={kind} {dt}",
                f"mir.attention_block $0, $P0, $P1{opt} {{num_heads = {nh} : i64, "
                f"num_kv_heads = {nkv} : i64, head_dim = {hd} : i64, rotary_dim = {rot} : i64, "
                f"scale = 0.35 : f32, mask_kind = #mir<mask {kind}>}} : ({sig_ins}) -> $OUT",
                ins, [(ref, dt)], params=params))
    return cases


def routing_cases():
    """top_k on every axis, largest and smallest, every element type it
    takes (not i1); grouped_matmul with every weight type and i32 / i64
    groups (negative and out-of-range ones too), scanning or sorted;
    sort_groups."""
    cases = []
    for dt in NUMERIC:
        axes = range(-3, 3) if dt == "f32" else (-1, 0)
        for axis, largest in itertools.product(axes, (True, False)):
            x = R(X, dt, -20, 20)
            n = X[axis]
            k = min(2, n)
            key = -x if largest else x
            order = np.argsort(np.moveaxis(key, axis, -1), -1, kind="stable")
            order = np.moveaxis(order[..., :k], -1, axis)
            vals = np.take_along_axis(x, order, axis)
            flag = "" if largest else ", largest = false"
            cases.append(Case(
                f"top_k k={k} axis={axis} largest={largest} {dt}",
                f"mir.top_k $0 {{k = {k} : i64, axis = {axis} : i64{flag}}} : $SIG",
                [(x, dt)], [(vals, dt), (order, "i64")]))
    for wt, gt in itertools.product(FLOATS, ("i32", "i64")):
        x = R((2, 3, 5), "f32")
        w = R((3, 4, 5), wt)
        g = np.array([[0, 2, -1], [5, -4, 1]])
        gi = np.clip(np.where(g < 0, g + 3, g), 0, 2)
        ref = np.einsum("abk,abnk->abn", x, w[gi])
        cases.append(Case(f"grouped_matmul weights {wt} groups {gt}",
                          "mir.grouped_matmul $0, $1, $2 : $SIG",
                          [(x, "f32"), (w, wt), (g, gt)], [(ref, "f32")]))
        # Sorted by mir.sort_groups (the order and offsets as inputs).
        order = np.argsort(gi.reshape(-1), kind="stable")
        offsets = np.concatenate([[0], np.cumsum(np.bincount(
            gi.reshape(-1), minlength=3))])
        cases.append(Case(f"grouped_matmul sorted weights {wt} groups {gt}",
                          "mir.grouped_matmul $0, $1, $2 sorted($3, $4) : $SIG",
                          [(x, "f32"), (w, wt), (g, gt), (order, "i64"),
                           (offsets, "i64")], [(ref, "f32")]))
    for gt in ("i32", "i64"):
        g = np.array([[3, -1, 0], [9, 1, -7]])
        gi = np.clip(np.where(g < 0, g + 4, g), 0, 3).reshape(-1)
        order = np.argsort(gi, kind="stable")
        offsets = np.concatenate([[0], np.cumsum(np.bincount(gi, minlength=4))])
        cases.append(Case(f"sort_groups {gt}",
                          "mir.sort_groups $0 {num_groups = 4 : i64} : $SIG",
                          [(g, gt)], [(order, "i64"), (offsets, "i64")]))
    return cases


def recurrent_cases():
    """gated_delta_rule with and without initial_state and the l2 norm, a
    custom scale, Hk == Hv and grouped heads, and empty T, Dk and Dv."""
    from test_gdn_ops import gdn_ref
    cases = []
    for (b, t, hk, hv, dk, dv), init, l2, scale in [
            ((1, 3, 1, 2, 4, 5), True, True, None),
            ((2, 2, 2, 2, 3, 4), False, False, 0.5),
            ((1, 3, 2, 4, 8, 8), True, False, None),
            ((1, 0, 1, 1, 3, 4), True, False, None),
            ((1, 2, 1, 1, 0, 3), False, True, None),
            ((1, 2, 1, 2, 3, 0), True, False, 0.25)]:
        q = R((b, t, hk, dk), "f32", -0.5, 0.5)
        k = R((b, t, hk, dk), "f32", -0.5, 0.5)
        v = R((b, t, hv, dv), "f32")
        g = R((b, t, hv), "f32", -1, 0)
        beta = R((b, t, hv), "f32", 0, 1)
        ins = [(q, "f32"), (k, "f32"), (v, "f32"), (g, "f32"), (beta, "f32")]
        s0 = R((b, hv, dk, dv), "f32", -0.5, 0.5) if init else None
        if init:
            ins.append((s0, "f32"))
        o, s = gdn_ref(q, k, v, g, beta, s0, scale, l2)
        attrs = ([f"scale = {scale} : f32"] if scale else []) + (
            ["qk_l2norm"] if l2 else [])
        text = ("mir.gated_delta_rule $0, $1, $2, $3, $4" +
                (" initial_state($5)" if init else "") +
                (f" {{{', '.join(attrs)}}}" if attrs else "") + " : $SIG")
        cases.append(Case(
            f"gated_delta_rule B={b} T={t} Hk={hk} Hv={hv} Dk={dk} Dv={dv} "
            f"init={init} l2norm={l2} scale={scale}", text, ins,
            [(o, "f32"), (s, "f32")]))
    return cases


FAMILIES = {
    "composite": composite_cases,
    "unary": unary_cases, "binary": binary_cases, "cast": cast_cases,
    "reduce": reduce_cases, "axis": axis_cases, "norm": norm_cases,
    "matmul": matmul_cases, "data_movement": data_movement_cases,
    "rope_attention": rope_attention_cases, "routing": routing_cases,
    "recurrent": recurrent_cases,
}
BATCH = 80


def check_family(runner, family, vulkan=False):
    cases = FAMILIES[family]()
    if vulkan:
        cases = [c for c in cases if c.types() <= VULKAN_TYPES]
    args = ["--device", "vulkan"] if vulkan else []
    failures = []
    for i in range(0, len(cases), BATCH):
        failures += run_cases(runner, cases[i:i + BATCH], args)
    assert not failures, (f"{len(failures)} of {len(cases)} cases failed:\n" +
                          "\n".join(failures))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_op_space_cpu(tmp_path, family):
    check_family(SpaceRunner(tmp_path), family)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_op_space_vulkan(tmp_path, family):
    require_vulkan()
    check_family(SpaceRunner(tmp_path), family, vulkan=True)
