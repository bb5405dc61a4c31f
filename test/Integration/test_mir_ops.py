# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Every MIR op, primitive and fused, compiled for the CPU and checked against
a NumPy reference written independently of RLX, over awkward shapes (T = 1, 7,
128; sizes that are not multiples of the vector width; broadcasting).

Tolerances: 1e-5 relative + 1e-5 absolute for elementwise and data movement
(polynomial exp/tanh/erf are within a few ulp); 1e-4 for reductions, norms,
GEMMs and attention, whose summation order differs from NumPy's."""

import math
import sys

import numpy as np
import pytest

from conftest import ROOT, assert_close, mlir_type

sys.path.insert(0, str(ROOT / "fuzz"))
import difffuzz  # noqa: E402  (its NumPy interpreter is the reference)

rng = np.random.default_rng(1234)


def randn(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def module(op, inputs, result):
    """A function `@f` applying `op` (text using %a0, %a1, ... and {T} for the
    functional type) to `inputs`, returning `result` (an example array)."""
    args = ", ".join(f"%a{i}: {mlir_type(a)} {{rlx.name = \"a{i}\"}}"
                     for i, a in enumerate(inputs))
    types = ", ".join(mlir_type(a) for a in inputs)
    rt = mlir_type(result)
    ftype = f"({types}) -> {rt}"
    body = op.replace("{T}", ftype)
    return (f"func.func @f({args}) -> ({rt} {{rlx.name = \"out\"}}) {{\n"
            f"  %r = {body}\n  return %r : {rt}\n}}\n")


def check(rlx, op, inputs, expected, rtol=1e-5, atol=1e-5):
    feeds = {f"a{i}": a for i, a in enumerate(inputs)}
    out = rlx.run(module(op, inputs, expected), feeds)["out"]
    assert_close(out, expected, rtol, atol)


erf = np.vectorize(math.erf, otypes=[np.float32])


def gelu(x):
    return (0.5 * x * (1 + erf(x / np.sqrt(2.0)))).astype(np.float32)


def gelu_tanh(x):
    return (0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) *
                                   (x + 0.044715 * x ** 3)))).astype(np.float32)


def sigmoid(x):
    return (1 / (1 + np.exp(-x))).astype(np.float32)


#===----------------------------------------------------------------------===#
# Elementwise
#===----------------------------------------------------------------------===#

UNARY = {
    "exp": (np.exp, False), "log": (np.log, True), "sqrt": (np.sqrt, True),
    "rsqrt": (lambda x: 1 / np.sqrt(x), True), "tanh": (np.tanh, False),
    "erf": (erf, False), "sigmoid": (sigmoid, False),
    "silu": (lambda x: x * sigmoid(x), False), "gelu": (gelu, False),
    "relu": (lambda x: np.maximum(x, 0), False), "neg": (np.negative, False),
    "sin": (np.sin, False), "cos": (np.cos, False),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", [(2, 7, 37), (1, 1, 16), (128,)])
def test_unary(rlx, name, shape):
    fn, positive = UNARY[name]
    x = randn(*shape)
    if positive:
        x = np.abs(x) + 0.1
    check(rlx, f"mir.{name} %a0 : {{T}}", [x], fn(x).astype(np.float32))


# Rounding and sign: exact in f32 (numpy's round is half to even, as
# mir.round). Inputs hold halves, integers, signed zeros, large values and
# the non-finite ones.
ROUNDING = {"abs": np.abs, "floor": np.floor, "ceil": np.ceil,
            "round": np.round, "sign": np.sign}


def rounding_inputs(*shape):
    x = randn(*shape, scale=4.0)
    flat = x.reshape(-1)
    specials = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0, -0.0, 3.0,
                         -7.0, 1e20, -1e20, 8388609.0, np.inf, -np.inf],
                        np.float32)
    n = min(flat.size, specials.size)
    flat[:n] = specials[:n]
    return x


@pytest.mark.parametrize("name", sorted(ROUNDING))
@pytest.mark.parametrize("shape", [(2, 7, 37), (1,), (5, 1, 16), ()])
def test_rounding(rlx, name, shape):
    x = rounding_inputs(*shape)
    check(rlx, f"mir.{name} %a0 : {{T}}", [x],
          ROUNDING[name](x).astype(np.float32), rtol=0, atol=0)


@pytest.mark.parametrize("lo,hi", [(-1.0, 1.0), (0.0, 6.0), (0.5, 0.5),
                                   ("-inf", 2.0), (-3.0, "inf")])
@pytest.mark.parametrize("shape", [(2, 7, 37), (1,), ()])
def test_clip(rlx, lo, hi, shape):
    x = rounding_inputs(*shape)
    attr = lambda v: f"0x{np.float32(float(v)).view(np.uint32):08X} : f32"
    check(rlx, f"mir.clip %a0 {{min = {attr(lo)}, max = {attr(hi)}}} : {{T}}",
          [x], np.clip(x, np.float32(float(lo)), np.float32(float(hi))),
          rtol=0, atol=0)


def test_clip_nan(rlx):
    x = np.array([np.nan, -5.0, 5.0, 0.25], np.float32)
    out = rlx.run(module("mir.clip %a0 {min = -1.0 : f32, max = 1.0 : f32} : {T}",
                         [x], x), {"a0": x})["out"]
    np.testing.assert_array_equal(out, np.clip(x, -1, 1))


def test_sign_nan(rlx):
    x = np.array([np.nan, -np.nan, 1.0, -3.0, 0.0], np.float32)
    out = rlx.run(module("mir.sign %a0 : {T}", [x], x), {"a0": x})["out"]
    np.testing.assert_array_equal(out, np.sign(x))


def test_rounding_chain(rlx):
    """floor(round(abs(x))), sign(-x): each op's kernel, folded or not."""
    x = rounding_inputs(3, 5, 11)
    t = mlir_type(x)
    mlir = (f'func.func @f(%x: {t} {{rlx.name = "a0"}}) -> ({t} {{rlx.name = "out"}}) {{\n'
            f"  %n = mir.neg %x : ({t}) -> {t}\n"
            f"  %a = mir.abs %n : ({t}) -> {t}\n"
            f"  %r = mir.round %a : ({t}) -> {t}\n"
            f"  %f = mir.floor %r : ({t}) -> {t}\n"
            f"  %s = mir.sign %f : ({t}) -> {t}\n"
            f"  %m = mir.mul %s, %f : ({t}, {t}) -> {t}\n"
            f"  return %m : {t}\n}}\n")
    out = rlx.run(mlir, {"a0": x})["out"]
    f = np.floor(np.round(np.abs(x)))
    np.testing.assert_array_equal(out, np.sign(f) * f)


def test_rounding_sign_clip_fused(rlx):
    """abs, floor, ceil, round, sign and clip joined into one elementwise
    region with broadcasting (mir-fuse-elementwise), exact against NumPy on
    halves, signed zeros, infinities and NaN."""
    x = rounding_inputs(4, 16)
    x[3, :3] = [np.nan, -0.0, 0.0]
    y = rounding_inputs(16)
    tx, ty = mlir_type(x), mlir_type(y)
    mlir = (f'func.func @f(%x: {tx} {{rlx.name = "x"}}, %y: {ty} {{rlx.name = "y"}}) -> ({tx} {{rlx.name = "out"}}) {{\n'
            f"  %0 = mir.abs %x : ({tx}) -> {tx}\n"
            f"  %1 = mir.floor %y : ({ty}) -> {ty}\n"
            f"  %2 = mir.add %0, %1 : ({tx}, {ty}) -> {tx}\n"
            f"  %3 = mir.ceil %2 : ({tx}) -> {tx}\n"
            f"  %4 = mir.round %x : ({tx}) -> {tx}\n"
            f"  %5 = mir.sub %3, %4 : ({tx}, {tx}) -> {tx}\n"
            f"  %6 = mir.sign %5 : ({tx}) -> {tx}\n"
            f"  %7 = mir.clip %6 {{min = -5.000000e-01 : f32, max = 2.500000e-01 : f32}} : ({tx}) -> {tx}\n"
            f"  %8 = mir.mul %7, %x : ({tx}, {tx}) -> {tx}\n"
            f"  return %8 : {tx}\n}}\n")
    out = rlx.run(mlir, {"x": x, "y": y})["out"]
    with np.errstate(invalid="ignore"):
        s = np.sign(np.ceil(np.abs(x) + np.floor(y)) - np.round(x))
        expected = np.clip(s, -0.5, 0.25).astype(np.float32) * x
    np.testing.assert_array_equal(out, expected)


def test_gelu_tanh(rlx):
    x = randn(3, 5, 33)
    check(rlx, "mir.gelu %a0 {tanh_approx} : {T}", [x], gelu_tanh(x))


# The activations with no MIR op of their own (mir.activation), referenced in
# float64 from their definitions in transformers' activations.py / torch.nn.
def softplus64(x):
    return np.logaddexp(0.0, x.astype(np.float64))


def gelu64(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


ACTIVATIONS = {
    # sigmoid(z) = (1 + tanh(z / 2)) / 2, which does not overflow.
    "quick_gelu": lambda x: x * 0.5 * (1 + np.tanh(0.851 * x.astype(np.float64))),
    "relu2": lambda x: np.maximum(x.astype(np.float64), 0) ** 2,
    "relu6": lambda x: np.clip(x.astype(np.float64), 0, 6),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x.astype(np.float64)),
    "mish": lambda x: x * np.tanh(softplus64(x)),
    "gelu_10": lambda x: np.clip(gelu64(x), -10, 10),
    "laplace": lambda x: 0.5 * (1 + np.vectorize(math.erf)(
        (x.astype(np.float64) - 0.707107) / (0.282095 * math.sqrt(2.0)))),
    "hardswish": lambda x: x * np.clip(x.astype(np.float64) + 3, 0, 6) / 6,
    "sqrtsoftplus": lambda x: np.sqrt(softplus64(x)),
}


def activation_inputs(*shape):
    """Normal values, then the tails: large negative and positive values
    (exp overflows at +-89 in f32), the clamps' corners and zero."""
    x = randn(*shape, scale=3.0).reshape(-1)
    edges = np.array([-1e4, -100, -88.5, -60, -30, -20, -10.5, -6, -3, -1e-3,
                      0, 1e-3, 0.707107, 3, 6, 10.5, 20, 30, 60, 88.5, 100,
                      1e4], np.float32)
    x[:edges.size] = edges
    return x.reshape(shape)


@pytest.mark.parametrize("act", sorted(ACTIVATIONS))
@pytest.mark.parametrize("shape", [(2, 7, 37), (128,)])
def test_activation(rlx, act, shape):
    """1e-5 relative + 1e-5 absolute, as the other unary ops."""
    x = activation_inputs(*shape)
    expected = ACTIVATIONS[act](x).astype(np.float32)
    check(rlx, f"mir.activation %a0 {{activation = #mir<activation {act}>}} : {{T}}",
          [x], expected)


@pytest.mark.parametrize("act", ["mish", "sqrtsoftplus"])
def test_softplus_negative_tail(rlx, act):
    """softplus(x) ~ e^x for x << 0: log(1 + e^x) computed naively is 0 below
    x = -17 in f32; RLX's is relatively accurate (1e-4 relative, no absolute
    slack) down to x = -80."""
    x = -np.geomspace(5, 80, 64, dtype=np.float32).reshape(2, 32)
    expected = ACTIVATIONS[act](x).astype(np.float32)
    check(rlx, f"mir.activation %a0 {{activation = #mir<activation {act}>}} : {{T}}",
          [x], expected, rtol=1e-4, atol=0)


def test_activations_in_elementwise_region(rlx):
    """mir-fuse-elementwise puts mir.activation into a region's body."""
    a, b = activation_inputs(3, 7, 40), randn(40)
    t = "tensor<3x7x40xf32>"
    mlir = f"""func.func @f(%a: {t} {{rlx.name = "a0"}}, %b: tensor<40xf32> {{rlx.name = "a1"}}) -> ({t} {{rlx.name = "out"}}) {{
  %0 = mir.activation %a {{activation = #mir<activation mish>}} : ({t}) -> {t}
  %1 = mir.mul %0, %b : ({t}, tensor<40xf32>) -> {t}
  %2 = mir.activation %1 {{activation = #mir<activation hardswish>}} : ({t}) -> {t}
  return %2 : {t}
}}"""
    out = rlx.run(mlir, {"a0": a, "a1": b})["out"]
    expected = ACTIVATIONS["hardswish"](
        (ACTIVATIONS["mish"](a) * b).astype(np.float32))
    assert_close(out, expected.astype(np.float32))


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
          "div": np.divide, "max": np.maximum, "min": np.minimum,
          "pow": np.power}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((2, 7, 37), (2, 7, 37)),
                                    ((2, 7, 37), (37,)),
                                    ((7, 1), (7, 20)),
                                    ((3, 1, 18), (1, 5, 1)),
                                    ((4, 17), ())])
def test_binary_broadcast(rlx, name, shapes):
    a, b = randn(*shapes[0]), randn(*shapes[1])
    if name == "pow":
        a = np.abs(a) + 0.5
    if name == "div":
        b = np.where(np.abs(b) < 0.1, 0.5, b).astype(np.float32)
    expected = BINARY[name](a, b).astype(np.float32)
    check(rlx, f"mir.{name} %a0, %a1 : {{T}}", [a, b], expected, rtol=2e-5)


def test_integer_binary(rlx):
    a = rng.integers(-50, 50, (6, 9)).astype(np.int64)
    b = rng.integers(-50, 50, (9,)).astype(np.int64)
    check(rlx, "mir.sub %a0, %a1 : {T}", [a, b], a - b)


@pytest.mark.parametrize("pred,fn", [("lt", np.less), ("ge", np.greater_equal),
                                     ("eq", np.equal), ("ne", np.not_equal)])
def test_compare_select(rlx, pred, fn):
    a, b = randn(7, 37), randn(37)
    b[:5] = a[0, :5]
    x, y = randn(7, 37), randn(7, 1)
    mlir = f"""func.func @f(%a: tensor<7x37xf32> {{rlx.name = "a0"}}, %b: tensor<37xf32> {{rlx.name = "a1"}}, %x: tensor<7x37xf32> {{rlx.name = "a2"}}, %y: tensor<7x1xf32> {{rlx.name = "a3"}}) -> (tensor<7x37xf32> {{rlx.name = "out"}}) {{
  %c = mir.compare %a, %b {{predicate = #mir<cmp {pred}>}} : (tensor<7x37xf32>, tensor<37xf32>) -> tensor<7x37xi1>
  %r = mir.select %c, %x, %y : (tensor<7x37xi1>, tensor<7x37xf32>, tensor<7x1xf32>) -> tensor<7x37xf32>
  return %r : tensor<7x37xf32>
}}"""
    out = rlx.run(mlir, {"a0": a, "a1": b, "a2": x, "a3": y})["out"]
    assert_close(out, np.where(fn(a, b), x, y))


def test_cast(rlx):
    a = rng.integers(-1000, 1000, (5, 19)).astype(np.int32)
    check(rlx, "mir.cast %a0 : {T}", [a], a.astype(np.float32))


def test_elementwise_region(rlx):
    a, b = randn(3, 7, 40), randn(40)
    op = """mir.elementwise %a0, %a1 {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    %t = math.tanh %m : f32
    %c = arith.constant 2.0 : f32
    %s = arith.addf %t, %c : f32
    mir.yield %s : f32
  } : {T}"""
    check(rlx, op, [a, b], (np.tanh(a * b) + 2).astype(np.float32))


@pytest.mark.parametrize("act,fn", [("silu", lambda x: x * sigmoid(x)),
                                    ("gelu_tanh", gelu_tanh),
                                    *ACTIVATIONS.items()])
@pytest.mark.parametrize("shape", [(1, 7, 2 * 45), (2, 1, 2 * 64)])
def test_fused_glu(rlx, act, fn, shape):
    gu = randn(*shape)
    half = shape[-1] // 2
    expected = (fn(gu[..., :half]) * gu[..., half:]).astype(np.float32)
    check(rlx, f"mir.fused_glu %a0 {{activation = #mir<activation {act}>}} : {{T}}",
          [gu], expected)


#===----------------------------------------------------------------------===#
# Reductions, softmax and norms
#===----------------------------------------------------------------------===#

@pytest.mark.parametrize("name,fn", [("reduce_sum", np.sum),
                                     ("reduce_mean", np.mean),
                                     ("reduce_max", np.max)])
@pytest.mark.parametrize("axes,keep", [((2,), False), ((1,), True),
                                       ((0, 2), False), ((0, 1, 2), False)])
def test_reduce(rlx, name, fn, axes, keep):
    x = randn(3, 7, 37)
    expected = fn(x, axis=axes, keepdims=keep).astype(np.float32)
    axes_s = ", ".join(map(str, axes))
    keep_s = ", keep_dims" if keep else ""
    check(rlx, f"mir.{name} %a0 {{axes = array<i64: {axes_s}>{keep_s}}} : {{T}}",
          [x], expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name,fn", [("reduce_min", np.min),
                                     ("reduce_prod", np.prod)])
@pytest.mark.parametrize("axes,keep", [((2,), False), ((1,), True),
                                       ((0, 2), False), ((0, 1, 2), True)])
def test_reduce_min_prod(rlx, name, fn, axes, keep):
    # Products of values near 1 stay in range over 3 * 7 * 37 factors.
    x = (1 + randn(3, 7, 37, scale=0.05)) if name == "reduce_prod" \
        else randn(3, 7, 37)
    x = x.astype(np.float32)
    expected = fn(x.astype(np.float64), axis=axes, keepdims=keep)
    axes_s = ", ".join(map(str, axes))
    keep_s = ", keep_dims" if keep else ""
    check(rlx, f"mir.{name} %a0 {{axes = array<i64: {axes_s}>{keep_s}}} : {{T}}",
          [x], expected.astype(np.float32), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,fn", [("reduce_min", np.min),
                                     ("reduce_prod", np.prod),
                                     ("reduce_max", np.max)])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_reduce_integers(rlx, name, fn, dtype):
    """Integer identities: the signed extremes for min/max, 1 for prod."""
    hi = 3 if name == "reduce_prod" else 1 << 30
    x = rng.integers(-hi, hi, (4, 5, 3)).astype(dtype)
    check(rlx, f"mir.{name} %a0 {{axes = array<i64: 0, 2>}} : {{T}}", [x],
          fn(x, axis=(0, 2)).astype(dtype), rtol=0, atol=0)


def test_reduce_min_all_positive(rlx):
    """Threads of a GPU workgroup without elements start from +inf, never 0."""
    x = np.abs(randn(3, 7, 37)) + 0.5
    check(rlx, "mir.reduce_min %a0 {axes = array<i64: 1>, keep_dims} : {T}",
          [x], x.min(1, keepdims=True), rtol=0, atol=0)


@pytest.mark.parametrize("name,fn", [("argmax", np.argmax),
                                     ("argmin", np.argmin)])
@pytest.mark.parametrize("shape,axis,keep", [((3, 7, 37), -1, False),
                                             ((3, 7, 37), 1, True),
                                             ((3, 7, 37), 0, False),
                                             ((1, 1, 1), -3, False),
                                             ((17,), 0, False),
                                             ((5, 1), 1, True)])
def test_arg_reduce(rlx, name, fn, shape, axis, keep):
    x = randn(*shape)
    expected = fn(x, axis=axis, keepdims=keep).astype(np.int64)
    keep_s = ", keep_dims" if keep else ""
    check(rlx, f"mir.{name} %a0 {{axis = {axis} : i64{keep_s}}} : {{T}}", [x],
          expected, rtol=0, atol=0)


@pytest.mark.parametrize("name,fn", [("argmax", np.argmax),
                                     ("argmin", np.argmin)])
def test_arg_reduce_ties_nan_and_integers(rlx, name, fn):
    """Ties give the first index; the first NaN wins, as NumPy; integers."""
    x = np.array([[1.0, 3.0, 3.0, -2.0, -2.0],
                  [np.nan, 5.0, np.nan, -9.0, 1.0],
                  [4.0, 4.0, np.nan, 4.0, -9.0]], np.float32)
    check(rlx, f"mir.{name} %a0 {{axis = 1 : i64}} : {{T}}", [x],
          fn(x, axis=1).astype(np.int64), rtol=0, atol=0)
    i = rng.integers(-5, 5, (4, 9)).astype(np.int32)
    check(rlx, f"mir.{name} %a0 {{axis = 0 : i64}} : {{T}}", [i],
          fn(i, axis=0).astype(np.int64), rtol=0, atol=0)


@pytest.mark.parametrize("shape,axis", [((3, 7, 37), -1), ((3, 7, 37), 1),
                                        ((3, 7, 37), 0), ((1,), 0),
                                        ((5, 1, 2), 1)])
def test_cumsum(rlx, shape, axis):
    x = randn(*shape)
    expected = np.cumsum(x.astype(np.float64), axis=axis).astype(np.float32)
    check(rlx, f"mir.cumsum %a0 {{axis = {axis} : i64}} : {{T}}", [x],
          expected, rtol=1e-5, atol=1e-5)


def test_cumsum_integers(rlx):
    x = rng.integers(-100, 100, (4, 33)).astype(np.int64)
    check(rlx, "mir.cumsum %a0 {axis = 1 : i64} : {T}", [x],
          np.cumsum(x, axis=1), rtol=0, atol=0)


def log_softmax(x, axis):
    x64 = x.astype(np.float64)
    s = x64 - x64.max(axis, keepdims=True)
    return (s - np.log(np.exp(s).sum(axis, keepdims=True))).astype(np.float32)


@pytest.mark.parametrize("shape,axis", [((3, 7, 129), -1), ((1, 1, 1), 0),
                                        ((2, 128, 16), 1), ((5, 33), 0),
                                        ((4, 3, 2, 9), -3)])
def test_log_softmax(rlx, shape, axis):
    x = randn(*shape, scale=3.0)
    check(rlx, f"mir.log_softmax %a0 {{axis = {axis} : i64}} : {{T}}", [x],
          log_softmax(x, axis), rtol=1e-5, atol=1e-4)


def test_log_softmax_very_negative(rlx):
    """Scores far apart: log_softmax stays finite where log(softmax) is
    log(0) = -inf."""
    x = np.array([[0.0, -200.0, -1000.0, 5.0]], np.float32)
    check(rlx, "mir.log_softmax %a0 {axis = 1 : i64} : {T}", [x],
          log_softmax(x, 1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape", [(3, 7, 129), (1, 1, 1), (2, 128, 16)])
def test_softmax(rlx, shape):
    x = randn(*shape, scale=3.0)
    e = np.exp(x - x.max(-1, keepdims=True))
    check(rlx, "mir.softmax %a0 {axis = -1 : i64} : {T}", [x],
          (e / e.sum(-1, keepdims=True)).astype(np.float32), rtol=1e-4)


@pytest.mark.parametrize("shape,axis", [((3, 7, 129), 0), ((3, 7, 129), 1),
                                        ((3, 7, 129), -2), ((5, 1, 9), 1),
                                        ((17,), 0), ((2, 3, 4, 5), -3),
                                        ((4, 33), 0)])
def test_softmax_axis(rlx, shape, axis):
    """Softmax over an axis other than the last: strided rows."""
    x = randn(*shape, scale=3.0)
    e = np.exp(x.astype(np.float64) - x.max(axis, keepdims=True))
    check(rlx, f"mir.softmax %a0 {{axis = {axis} : i64}} : {{T}}", [x],
          (e / e.sum(axis, keepdims=True)).astype(np.float32), rtol=1e-4)


def rms_norm(x, w, eps, unit=False):
    y = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + eps)
    return (y * ((1 + w) if unit else w)).astype(np.float32)


def layer_norm(x, g, b, eps):
    x64 = x.astype(np.float64)
    m = x64.mean(-1, keepdims=True)
    v = ((x64 - m) ** 2).mean(-1, keepdims=True)
    return ((x64 - m) / np.sqrt(v + eps) * g + b).astype(np.float32)


@pytest.mark.parametrize("shape", [(2, 7, 100), (1, 1, 64), (1, 128, 48)])
@pytest.mark.parametrize("unit", [False, True])
def test_rms_norm(rlx, shape, unit):
    x, w = randn(*shape), randn(shape[-1])
    attr = ", unit_offset" if unit else ""
    check(rlx, f"mir.rms_norm %a0, %a1 {{epsilon = 1.0e-6 : f32{attr}}} : {{T}}",
          [x, w], rms_norm(x, w, 1e-6, unit), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 7, 100), (1, 1, 384)])
def test_layer_norm(rlx, shape):
    x, g, b = randn(*shape), randn(shape[-1]), randn(shape[-1])
    check(rlx, "mir.layer_norm %a0, %a1, %a2 {epsilon = 1.0e-12 : f32} : {T}",
          [x, g, b], layer_norm(x, g, b, 1e-12), rtol=1e-4, atol=1e-4)


def test_layer_norm_over_trailing_axes_with_statistics(rlx):
    """ONNX LayerNormalization over the last two axes, with its mean and
    inverse standard deviation outputs, written in MIR: mir.layer_norm of
    the axes reshaped into one (gamma and beta flattened), and the
    statistics from reduce_mean and rsqrt (docs/Dialects/MIR.md)."""
    x, g, b = randn(2, 3, 4, 5), randn(4, 5), randn(4, 5)
    eps = 1e-5
    mlir = """func.func @f(%x: tensor<2x3x4x5xf32> {rlx.name = "x"}, %g: tensor<4x5xf32> {rlx.name = "g"}, %b: tensor<4x5xf32> {rlx.name = "b"}) -> (tensor<2x3x4x5xf32> {rlx.name = "y"}, tensor<2x3x1x1xf32> {rlx.name = "mean"}, tensor<2x3x1x1xf32> {rlx.name = "inv_std"}) {
  %xf = mir.reshape %x : (tensor<2x3x4x5xf32>) -> tensor<2x3x20xf32>
  %gf = mir.reshape %g : (tensor<4x5xf32>) -> tensor<20xf32>
  %bf = mir.reshape %b : (tensor<4x5xf32>) -> tensor<20xf32>
  %nf = mir.layer_norm %xf, %gf, %bf {epsilon = 1.0e-5 : f32} : (tensor<2x3x20xf32>, tensor<20xf32>, tensor<20xf32>) -> tensor<2x3x20xf32>
  %y = mir.reshape %nf : (tensor<2x3x20xf32>) -> tensor<2x3x4x5xf32>
  %m = mir.reduce_mean %x {axes = array<i64: 2, 3>, keep_dims} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
  %d = mir.sub %x, %m : (tensor<2x3x4x5xf32>, tensor<2x3x1x1xf32>) -> tensor<2x3x4x5xf32>
  %d2 = mir.mul %d, %d : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  %v = mir.reduce_mean %d2 {axes = array<i64: 2, 3>, keep_dims} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
  %e = mir.constant dense<1.0e-5> : tensor<f32>
  %ve = mir.add %v, %e : (tensor<2x3x1x1xf32>, tensor<f32>) -> tensor<2x3x1x1xf32>
  %r = mir.rsqrt %ve : (tensor<2x3x1x1xf32>) -> tensor<2x3x1x1xf32>
  return %y, %m, %r : tensor<2x3x4x5xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>
}"""
    out = rlx.run(mlir, {"x": x, "g": g, "b": b})
    xd = x.astype(np.float64)
    mean = xd.mean((2, 3), keepdims=True)
    inv_std = 1 / np.sqrt(((xd - mean) ** 2).mean((2, 3), keepdims=True) + eps)
    assert_close(out["y"], ((xd - mean) * inv_std * g + b).astype(np.float32),
                 rtol=1e-4, atol=1e-4)
    assert_close(out["mean"], mean.astype(np.float32), rtol=1e-5, atol=1e-5)
    assert_close(out["inv_std"], inv_std.astype(np.float32), rtol=1e-4, atol=1e-4)


def test_fused_residual_rms_norm(rlx, tmp_path):
    x, r, w = randn(2, 7, 72), randn(2, 7, 72), randn(72)
    mlir = """func.func @f(%x: tensor<2x7x72xf32> {rlx.name = "x"}, %r: tensor<2x7x72xf32> {rlx.name = "r"}, %w: tensor<72xf32> {rlx.name = "w"}) -> (tensor<2x7x72xf32> {rlx.name = "sum"}, tensor<2x7x72xf32> {rlx.name = "normed"}) {
  %s, %n = mir.fused_residual_rms_norm %x, %r, %w {epsilon = 1.0e-5 : f32, unit_offset} : (tensor<2x7x72xf32>, tensor<2x7x72xf32>, tensor<72xf32>) -> (tensor<2x7x72xf32>, tensor<2x7x72xf32>)
  return %s, %n : tensor<2x7x72xf32>, tensor<2x7x72xf32>
}"""
    out = rlx.run(mlir, {"x": x, "r": r, "w": w})
    assert_close(out["sum"], x + r)
    assert_close(out["normed"], rms_norm(x + r, w, 1e-5, True), 1e-4, 1e-5)


def test_fused_residual_layer_norm(rlx):
    x, r, g, b = randn(1, 9, 40), randn(1, 9, 40), randn(40), randn(40)
    mlir = """func.func @f(%x: tensor<1x9x40xf32> {rlx.name = "x"}, %r: tensor<1x9x40xf32> {rlx.name = "r"}, %g: tensor<40xf32> {rlx.name = "g"}, %b: tensor<40xf32> {rlx.name = "b"}) -> (tensor<1x9x40xf32> {rlx.name = "sum"}, tensor<1x9x40xf32> {rlx.name = "normed"}) {
  %s, %n = mir.fused_residual_layer_norm %x, %r, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<1x9x40xf32>, tensor<1x9x40xf32>, tensor<40xf32>, tensor<40xf32>) -> (tensor<1x9x40xf32>, tensor<1x9x40xf32>)
  return %s, %n : tensor<1x9x40xf32>, tensor<1x9x40xf32>
}"""
    out = rlx.run(mlir, {"x": x, "r": r, "g": g, "b": b})
    assert_close(out["sum"], x + r)
    assert_close(out["normed"], layer_norm(x + r, g, b, 1e-5), 1e-4, 1e-4)


#===----------------------------------------------------------------------===#
# Matrix products
#===----------------------------------------------------------------------===#

@pytest.mark.parametrize("lhs,rhs,flags,ref", [
    ((7, 37), (29, 37), "{transpose_rhs}", lambda a, b: a @ b.T),
    ((2, 7, 37), (37, 29), "", lambda a, b: a @ b),
    ((1, 1, 64), (96, 64), "{transpose_rhs}", lambda a, b: a @ b.T),
    ((37, 7), (37, 29), "{transpose_lhs}", lambda a, b: a.T @ b),
    ((2, 128, 64), (64, 64), "{transpose_rhs}", lambda a, b: a @ b.T),
])
def test_matmul(rlx, lhs, rhs, flags, ref):
    a, b = randn(*lhs), randn(*rhs)
    check(rlx, f"mir.matmul %a0, %a1 {flags} : {{T}}", [a, b],
          ref(a, b).astype(np.float32), rtol=1e-4, atol=1e-4)


def test_batch_matmul(rlx):
    a, b = randn(3, 7, 16), randn(3, 9, 16)
    check(rlx, "mir.batch_matmul %a0, %a1 {transpose_rhs} : {T}", [a, b],
          np.einsum("bmk,bnk->bmn", a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("act,fn", [("gelu", gelu), ("silu", lambda x: x * sigmoid(x)),
                                    ("none", lambda x: x), *ACTIVATIONS.items()])
def test_fused_matmul(rlx, act, fn):
    x, w, b, r = randn(2, 7, 48), randn(40, 48, scale=0.2), randn(40), randn(2, 7, 40)
    expected = (fn(x @ w.T + b) + r).astype(np.float32)
    check(rlx, f"mir.fused_matmul %a0, %a1 bias(%a2) residual(%a3) "
          f"{{transpose_rhs, activation = #mir<activation {act}>}} : {{T}}",
          [x, w, b, r], expected, rtol=1e-4, atol=1e-4)


def test_fused_matmul_residual_only(rlx):
    x, w, r = randn(5, 33), randn(33, 20), randn(5, 20)
    check(rlx, "mir.fused_matmul %a0, %a1 residual(%a2) : {T}", [x, w, r],
          (x @ w + r).astype(np.float32), rtol=1e-4, atol=1e-4)


# K = 0: every product is an empty sum, zeros as in NumPy (then the fused
# epilogue: act(0 + bias) + residual).
@pytest.mark.parametrize("lhs,rhs,flags", [
    ((5, 0), (0, 7), ""), ((2, 3, 0), (4, 0), "{transpose_rhs}"),
    ((0, 6), (0, 3), "{transpose_lhs}"), ((0, 0), (0, 0), "")])
def test_matmul_empty_contraction(rlx, lhs, rhs, flags):
    a, b = randn(*lhs), randn(*rhs)
    tl, tr = "transpose_lhs" in flags, "transpose_rhs" in flags
    expected = np.matmul(a.swapaxes(-1, -2) if tl else a, b.T if tr else b)
    check(rlx, f"mir.matmul %a0, %a1 {flags} : {{T}}", [a, b],
          expected.astype(np.float32), rtol=0, atol=0)


def test_matmul_empty_contraction_with_param_and_epilogue(rlx):
    x, b, r = randn(3, 0), randn(8), randn(3, 8)
    mlir = """func.func @f(%x: tensor<3x0xf32> {rlx.name = "x"}, %b: tensor<8xf32> {rlx.name = "b"}, %r: tensor<3x8xf32> {rlx.name = "r"}) -> (tensor<3x8xf32> {rlx.name = "y"}, tensor<3x8xf32> {rlx.name = "z"}, tensor<2x3x8xf32> {rlx.name = "w"}) {
  %w = mir.param "w" : tensor<8x0xf32>
  %y = mir.matmul %x, %w {transpose_rhs} : (tensor<3x0xf32>, tensor<8x0xf32>) -> tensor<3x8xf32>
  %z = mir.fused_matmul %x, %w bias(%b) residual(%r) {transpose_rhs, activation = #mir<activation silu>} : (tensor<3x0xf32>, tensor<8x0xf32>, tensor<8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %e = mir.broadcast %x : (tensor<3x0xf32>) -> tensor<2x3x0xf32>
  %f = mir.broadcast %w : (tensor<8x0xf32>) -> tensor<2x8x0xf32>
  %g = mir.batch_matmul %e, %f {transpose_rhs} : (tensor<2x3x0xf32>, tensor<2x8x0xf32>) -> tensor<2x3x8xf32>
  return %y, %z, %g : tensor<3x8xf32>, tensor<3x8xf32>, tensor<2x3x8xf32>
}"""
    out = rlx.run(mlir, {"x": x, "b": b, "r": r},
                  {"w": np.zeros((8, 0), np.float32)})
    np.testing.assert_array_equal(out["y"], np.zeros((3, 8), np.float32))
    np.testing.assert_array_equal(out["w"], np.zeros((2, 3, 8), np.float32))
    assert_close(out["z"], (b * sigmoid(b) + r).astype(np.float32))


#===----------------------------------------------------------------------===#
# Attention and RoPE
#===----------------------------------------------------------------------===#

def ref_attention(q, k, v, heads, kv_heads, hd, scale, mask_kind="causal",
                  window=0, softcap=0.0, mask=None):
    """difffuzz's NumPy attention (float64), as f32."""
    return difffuzz.attention(np.asarray(q, np.float64), k, v, heads, kv_heads,
                              hd, scale, mask_kind, window, softcap,
                              mask).astype(np.float32)


ATTN_CASES = [
    # (batch, tq, tk, heads, kv_heads, hd, mask, window, softcap)
    (1, 7, 7, 4, 2, 16, "causal", 0, 0.0),
    (2, 5, 5, 4, 4, 16, "none", 0, 0.0),
    (1, 1, 9, 4, 1, 32, "causal", 0, 0.0),
    (1, 128, 128, 2, 1, 64, "causal", 0, 0.0),
    (1, 12, 12, 2, 2, 16, "sliding_window", 4, 0.0),
    (1, 6, 6, 2, 1, 16, "causal", 0, 5.0),
    (1, 3, 10, 8, 2, 24, "causal", 0, 0.0),
]


@pytest.mark.parametrize("b,tq,tk,h,kv,hd,mask,window,softcap", ATTN_CASES)
def test_attention(rlx, b, tq, tk, h, kv, hd, mask, window, softcap):
    q, k, v = randn(b, tq, h * hd), randn(b, tk, kv * hd), randn(b, tk, kv * hd)
    scale = 1 / math.sqrt(hd)
    expected = ref_attention(q, k, v, h, kv, hd, scale, mask, window, softcap)
    attrs = (f"num_heads = {h} : i64, num_kv_heads = {kv} : i64, head_dim = {hd} : i64, "
             f"scale = {scale} : f32, softcap = {softcap} : f32, "
             f"mask_kind = #mir<mask {mask}>, window = {window} : i64")
    check(rlx, f"mir.attention %a0, %a1, %a2 {{{attrs}}} : {{T}}", [q, k, v],
          expected, rtol=1e-4, atol=1e-4)


def test_attention_padding_mask(rlx):
    b, t, h, hd = 2, 6, 2, 16
    q, k, v = randn(b, t, h * hd), randn(b, t, h * hd), randn(b, t, h * hd)
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)
    expected = ref_attention(q, k, v, h, h, hd, 0.25, "none", mask=mask)
    attrs = (f"num_heads = {h} : i64, num_kv_heads = {h} : i64, head_dim = {hd} : i64, "
             "scale = 0.25 : f32, mask_kind = #mir<mask padding>")
    check(rlx, f"mir.attention %a0, %a1, %a2 mask(%a3) {{{attrs}}} : {{T}}",
          [q, k, v, mask], expected, rtol=1e-4, atol=1e-4)


def ref_rope(x, pos, hd, rot, theta, interleaved=False, inv_freq=None):
    b, t, w = x.shape
    if inv_freq is None:
        inv_freq = 1.0 / (np.float32(theta) ** (np.arange(0, rot, 2, dtype=np.float32) / np.float32(rot)))
    pos = np.broadcast_to(pos, (b, t)).astype(np.float32)
    ang = pos[..., None] * inv_freq.astype(np.float32)  # [b, t, rot/2]
    c, s = np.cos(ang), np.sin(ang)
    out = x.copy().reshape(b, t, w // hd, hd)
    xr = x.reshape(b, t, w // hd, hd)
    c, s = c[:, :, None, :], s[:, :, None, :]
    if interleaved:
        x1, x2 = xr[..., 0:rot:2], xr[..., 1:rot:2]
        out[..., 0:rot:2] = x1 * c - x2 * s
        out[..., 1:rot:2] = x2 * c + x1 * s
    else:
        x1, x2 = xr[..., :rot // 2], xr[..., rot // 2:rot]
        out[..., :rot // 2] = x1 * c - x2 * s
        out[..., rot // 2:rot] = x2 * c + x1 * s
    return out.reshape(b, t, w).astype(np.float32)


@pytest.mark.parametrize("style", ["half", "interleaved"])
@pytest.mark.parametrize("b,t,heads,hd,rot,pos_rank", [
    (1, 7, 4, 16, 16, 1), (2, 5, 2, 64, 64, 2), (1, 1, 3, 32, 16, 2),
    (1, 9, 2, 48, 48, 1)])
def test_rope(rlx, style, b, t, heads, hd, rot, pos_rank):
    x = randn(b, t, heads * hd)
    pos = (rng.integers(0, 500, (b, t)) if pos_rank == 2
           else rng.integers(0, 500, (t,))).astype(np.int32)
    expected = ref_rope(x, pos, hd, rot, 10000.0, style == "interleaved")
    check(rlx, f"mir.rope %a0, %a1 {{head_dim = {hd} : i64, rotary_dim = {rot} : i64, "
          f"theta = 10000.0 : f32, style = #mir<rope_style {style}>}} : {{T}}",
          [x, pos], expected, rtol=1e-4, atol=1e-4)


def test_rope_inv_freq(rlx):
    x, pos = randn(1, 6, 32), np.arange(100, 106, dtype=np.int64)
    inv = (rng.random(8) * 0.5).astype(np.float32)
    expected = ref_rope(x, pos, 16, 16, 0, inv_freq=inv)
    check(rlx, "mir.rope %a0, %a1 inv_freq(%a2) {head_dim = 16 : i64, rotary_dim = 16 : i64} : {T}",
          [x, pos, inv], expected, rtol=1e-4, atol=1e-4)


def test_rope_attention_matmul_f16(rlx):
    """RoPE, attention and a GEMM on f16 activations: computed in f32 and
    rounded back to f16 (the verifier accepts f16; no back end refuses it)."""
    x = randn(1, 5, 32).astype(np.float16)
    pos = np.arange(3, 8, dtype=np.int64)
    w = randn(24, 32, scale=0.2).astype(np.float16)
    xf, wf = x.astype(np.float32), w.astype(np.float32)
    rope = ref_rope(xf, pos, 16, 16, 10000.0)
    attn = ref_attention(xf, xf, xf, 2, 2, 16, 0.25, "none")
    mm = xf @ wf.T
    mlir = """func.func @f(%x: tensor<1x5x32xf16> {rlx.name = "x"}, %p: tensor<5xi64> {rlx.name = "p"}, %w: tensor<24x32xf16> {rlx.name = "w"}) -> (tensor<1x5x32xf16> {rlx.name = "rope"}, tensor<1x5x32xf16> {rlx.name = "attn"}, tensor<1x5x24xf16> {rlx.name = "mm"}) {
  %r = mir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x5x32xf16>, tensor<5xi64>) -> tensor<1x5x32xf16>
  %a = mir.attention %x, %x, %x {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x5x32xf16>, tensor<1x5x32xf16>, tensor<1x5x32xf16>) -> tensor<1x5x32xf16>
  %m = mir.matmul %x, %w {transpose_rhs} : (tensor<1x5x32xf16>, tensor<24x32xf16>) -> tensor<1x5x24xf16>
  return %r, %a, %m : tensor<1x5x32xf16>, tensor<1x5x32xf16>, tensor<1x5x24xf16>
}"""
    out = rlx.run(mlir, {"x": x, "p": pos, "w": w})
    for name, ref in (("rope", rope), ("attn", attn), ("mm", mm)):
        assert out[name].dtype == np.float16, name
        assert_close(out[name].astype(np.float32), ref, rtol=2e-3, atol=2e-3)


#===----------------------------------------------------------------------===#
# Data movement
#===----------------------------------------------------------------------===#

def test_gather(rlx):
    table, ids = randn(50, 33), rng.integers(0, 50, (2, 7)).astype(np.int32)
    check(rlx, "mir.gather %a0, %a1 {axis = 0 : i64} : {T}", [table, ids],
          table[ids])


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather_negative_indices(rlx, axis):
    """Indices computed in the graph (a constant here) may count from the end,
    as np.take; inputs that index a gather are still checked against
    [0, size) when they enter."""
    table = randn(6, 5, 7)
    size = table.shape[axis]
    ids = np.array([[-1, 0, 2], [-size, size - 1, -2]], np.int32)
    expected = np.take(table, ids, axis=axis)
    t, rt = mlir_type(table), mlir_type(expected)
    vals = ", ".join("[" + ", ".join(map(str, r)) + "]" for r in ids)
    mlir = (f'func.func @f(%t: {t} {{rlx.name = "a0"}}) -> ({rt} {{rlx.name = "out"}}) {{\n'
            f"  %i = mir.constant dense<[{vals}]> : tensor<2x3xi32>\n"
            f"  %g = mir.gather %t, %i {{axis = {axis} : i64}} : ({t}, tensor<2x3xi32>) -> {rt}\n"
            f"  return %g : {rt}\n}}\n")
    out = rlx.run(mlir, {"a0": table})["out"]
    np.testing.assert_array_equal(out, expected)


def test_gather_rejects_out_of_range_ids(rlx):
    table, ids = randn(10, 4), np.array([[1, 12]], np.int32)
    mlir = module("mir.gather %a0, %a1 {axis = 0 : i64} : {T}", [table, ids],
                  table[[[1, 2]]])
    err = rlx.run(mlir, {"a0": table, "a1": ids}, expect_fail=True)
    assert "input 'a1': value 12 at flat index 1 is outside [0, 10)" in err


@pytest.mark.parametrize("shape,multiples", [((2, 5), (1, 3)), ((3, 1, 4), (2, 5, 1)),
                                             ((7,), (4,)), ((1, 1), (1, 1)),
                                             ((2, 3, 33), (2, 1, 2))])
def test_tile(rlx, shape, multiples):
    x = randn(*shape)
    m = ", ".join(map(str, multiples))
    check(rlx, f"mir.tile %a0 {{multiples = array<i64: {m}>}} : {{T}}", [x],
          np.tile(x, multiples), rtol=0, atol=0)


def test_tile_integers(rlx):
    x = rng.integers(-50, 50, (3, 2)).astype(np.int64)
    check(rlx, "mir.tile %a0 {multiples = array<i64: 2, 3>} : {T}", [x],
          np.tile(x, (2, 3)), rtol=0, atol=0)


@pytest.mark.parametrize("shape,low,high,value", [
    ((2, 5), (0, 1), (2, 0), 0.0), ((3, 1, 4), (1, 0, 3), (1, 2, 0), -1.5),
    ((7,), (3,), (3,), 2.0), ((2, 33), (0, 0), (0, 0), 0.0), ((1,), (0,), (5,), 9.0)])
def test_pad(rlx, shape, low, high, value):
    x = randn(*shape)
    lo, hi = ", ".join(map(str, low)), ", ".join(map(str, high))
    expected = np.pad(x, list(zip(low, high)), constant_values=value)
    check(rlx, f"mir.pad %a0 {{low = array<i64: {lo}>, high = array<i64: {hi}>, "
          f"value = {value} : f64}} : {{T}}", [x], expected, rtol=0, atol=0)


def test_pad_integers_truncate_the_value(rlx):
    x = rng.integers(-50, 50, (3, 2)).astype(np.int32)
    check(rlx, "mir.pad %a0 {low = array<i64: 1, 0>, high = array<i64: 0, 2>, "
          "value = -7.9 : f64} : {T}", [x],
          np.pad(x, [(1, 0), (0, 2)], constant_values=-7), rtol=0, atol=0)


def one_hot(ids, depth, axis, dtype):
    hot = (ids[..., None] == np.arange(depth)).astype(dtype)
    return np.moveaxis(hot, -1, axis)


@pytest.mark.parametrize("shape,depth,axis", [((4,), 10, -1), ((2, 3), 5, 0),
                                              ((2, 3), 5, 1), ((2, 3), 5, -3),
                                              ((1,), 1, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_one_hot(rlx, shape, depth, axis, dtype):
    # Out-of-range indices (negative, depth and beyond) give rows of zeros.
    ids = rng.integers(-2, depth + 2, shape).astype(np.int64)
    expected = one_hot(ids, depth, axis, dtype)
    t, rt = mlir_type(ids), mlir_type(expected)
    mlir = (f'func.func @f(%i: {t} {{rlx.name = "a0"}}) -> ({rt} {{rlx.name = "out"}}) {{\n'
            f"  %h = mir.one_hot %i {{depth = {depth} : i64, axis = {axis} : i64}} : ({t}) -> {rt}\n"
            f"  return %h : {rt}\n}}\n")
    out = rlx.run(mlir, {"a0": ids})["out"]
    np.testing.assert_array_equal(out, expected)


#===----------------------------------------------------------------------===#
# Zero-length dimensions: empty tensors flow through every stage
#===----------------------------------------------------------------------===#

def test_empty_slice_flows(rlx):
    """A slice of size 0 inside the graph: elementwise ops on it stay empty, a
    reduction over the empty axis gives its identity, a concat with it is the
    other piece, and a reshape to 3x4x0 stays empty."""
    x = randn(3, 4, 5)
    t = mlir_type(x)
    mlir = (f'func.func @f(%x: {t} {{rlx.name = "x"}}) -> ('
            'tensor<3x0x5xf32> {rlx.name = "e"}, tensor<3x5xf32> {rlx.name = "s"}, '
            'tensor<3x5xf32> {rlx.name = "m"}, '
            f'{t} {{rlx.name = "c"}}, tensor<3x4x0xf32> {{rlx.name = "r"}}) {{\n'
            f"  %z = mir.slice %x {{axis = 1 : i64, start = 4 : i64, size = 0 : i64}} : ({t}) -> tensor<3x0x5xf32>\n"
            "  %e = mir.exp %z : (tensor<3x0x5xf32>) -> tensor<3x0x5xf32>\n"
            "  %s = mir.reduce_sum %e {axes = array<i64: 1>} : (tensor<3x0x5xf32>) -> tensor<3x5xf32>\n"
            "  %m = mir.reduce_max %e {axes = array<i64: 1>} : (tensor<3x0x5xf32>) -> tensor<3x5xf32>\n"
            f"  %c = mir.concat %e, %x {{axis = 1 : i64}} : (tensor<3x0x5xf32>, {t}) -> {t}\n"
            "  %r = mir.reshape %e : (tensor<3x0x5xf32>) -> tensor<3x4x0xf32>\n"
            f"  return %e, %s, %m, %c, %r : tensor<3x0x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, {t}, tensor<3x4x0xf32>\n}}\n")
    out = rlx.run(mlir, {"x": x})
    assert out["e"].shape == (3, 0, 5) and out["r"].shape == (3, 4, 0)
    np.testing.assert_array_equal(out["s"], np.zeros((3, 5), np.float32))
    np.testing.assert_array_equal(out["m"], np.full((3, 5), -np.inf, np.float32))
    np.testing.assert_array_equal(out["c"], x)


@pytest.mark.parametrize("shape", [(2, 0, 3), (4, 0), (0, 5)])
def test_empty_inputs(rlx, shape):
    """An input with a zero-length dimension (after the first, too): unary,
    broadcasting binary, softmax, and a sum over the empty axis."""
    x = randn(*shape)
    b = randn(shape[-1]) if shape[-1] else randn(1)
    axis = shape.index(0)
    check(rlx, "mir.add %a0, %a1 : {T}", [x, b], x + b)
    check(rlx, "mir.softmax %a0 {axis = -1 : i64} : {T}", [x], x)
    check(rlx, f"mir.reduce_sum %a0 {{axes = array<i64: {axis}>}} : {{T}}", [x],
          x.sum(axis))


@pytest.mark.parametrize("src,dst", [((2, 6, 10), (12, 10)), ((4, 15), (2, 2, 15)),
                                     ((3, 4), (12,))])
def test_reshape(rlx, src, dst):
    x = randn(*src)
    check(rlx, "mir.reshape %a0 : {T}", [x], x.reshape(dst))


@pytest.mark.parametrize("perm", [(1, 0, 2), (0, 2, 1), (2, 0, 1)])
def test_transpose(rlx, perm):
    x = randn(3, 5, 7)
    p = ", ".join(map(str, perm))
    check(rlx, f"mir.transpose %a0 {{permutation = array<i64: {p}>}} : {{T}}", [x],
          np.transpose(x, perm).copy())


@pytest.mark.parametrize("axis,start,size", [(0, 1, 2), (1, -1, 1), (2, 3, 9), (2, 0, 12)])
def test_slice(rlx, axis, start, size):
    x = randn(3, 7, 12)
    s = start % x.shape[axis]
    expected = np.take(x, range(s, s + size), axis=axis)
    check(rlx, f"mir.slice %a0 {{axis = {axis} : i64, start = {start} : i64, size = {size} : i64}} : {{T}}",
          [x], expected)


def test_slice_of_slice_feeds_kernel(rlx):
    # A strided alias (a slice of the last dim) read by an elementwise kernel.
    x = randn(4, 30)
    mlir = """func.func @f(%x: tensor<4x30xf32> {rlx.name = "x"}) -> (tensor<4x10xf32> {rlx.name = "out"}) {
  %s = mir.slice %x {axis = 1 : i64, start = 10 : i64, size = 10 : i64} : (tensor<4x30xf32>) -> tensor<4x10xf32>
  %r = mir.exp %s : (tensor<4x10xf32>) -> tensor<4x10xf32>
  return %r : tensor<4x10xf32>
}"""
    assert_close(rlx.run(mlir, {"x": x})["out"], np.exp(x[:, 10:20]))


def slice_ref(x, axis, start, size, step):
    s = start % x.shape[axis] if start < 0 else start
    return np.take(x, s + step * np.arange(size, dtype=np.int64), axis=axis)


# Steps forward and backward on every axis, odd sizes, a size 1 and a size 0
# slice, the whole axis reversed, a negative start, integers.
@pytest.mark.parametrize("shape,axis,start,size,step", [
    ((3, 7, 12), 0, 0, 2, 2), ((3, 7, 12), 1, 6, 4, -2), ((3, 7, 12), 1, 1, 2, 5),
    ((3, 7, 12), 2, 11, 12, -1), ((3, 7, 12), 2, 0, 6, 2), ((3, 7, 12), 2, -2, 4, -3),
    ((3, 7, 12), 0, 2, 3, -1), ((5, 9), 1, 8, 1, -5), ((5, 9), 0, 4, 0, -2),
    ((5, 9), 1, 0, 0, 3), ((1, 1), 0, 0, 1, -1), ((9,), 0, 7, 4, -2),
    ((2, 3, 17), 2, 16, 9, -2)])
def test_strided_slice(rlx, shape, axis, start, size, step):
    x = randn(*shape)
    check(rlx, f"mir.slice %a0 {{axis = {axis} : i64, start = {start} : i64, "
          f"size = {size} : i64, step = {step} : i64}} : {{T}}", [x],
          slice_ref(x, axis, start, size, step))


def test_strided_slices_feed_kernels(rlx):
    """numpy's x[5:1:-2] and x[::2] of a slice feeding kernels: a forward
    step on an outer axis is a strided alias read by the next kernel, a
    backward step a copy kernel; integers move the same way."""
    x = randn(7, 6, 5)
    i = rng.integers(-100, 100, (6, 7)).astype(np.int32)
    mlir = """func.func @f(%x: tensor<7x6x5xf32> {rlx.name = "x"}, %i: tensor<6x7xi32> {rlx.name = "i"}) -> (tensor<2x6x5xf32> {rlx.name = "a"}, tensor<4x3x5xf32> {rlx.name = "b"}, tensor<6x4xi32> {rlx.name = "c"}) {
  %s = mir.slice %x {axis = 0 : i64, start = 5 : i64, size = 2 : i64, step = -2 : i64} : (tensor<7x6x5xf32>) -> tensor<2x6x5xf32>
  %a = mir.exp %s : (tensor<2x6x5xf32>) -> tensor<2x6x5xf32>
  %t = mir.slice %x {axis = 0 : i64, start = 0 : i64, size = 4 : i64, step = 2 : i64} : (tensor<7x6x5xf32>) -> tensor<4x6x5xf32>
  %u = mir.slice %t {axis = 1 : i64, start = -1 : i64, size = 3 : i64, step = -2 : i64} : (tensor<4x6x5xf32>) -> tensor<4x3x5xf32>
  %b = mir.neg %u : (tensor<4x3x5xf32>) -> tensor<4x3x5xf32>
  %c = mir.slice %i {axis = 1 : i64, start = 6 : i64, size = 4 : i64, step = -2 : i64} : (tensor<6x7xi32>) -> tensor<6x4xi32>
  return %a, %b, %c : tensor<2x6x5xf32>, tensor<4x3x5xf32>, tensor<6x4xi32>
}"""
    out = rlx.run(mlir, {"x": x, "i": i})
    assert_close(out["a"], np.exp(x[5:1:-2]))
    assert_close(out["b"], -x[::2][:, ::-2])
    np.testing.assert_array_equal(out["c"], i[:, 6::-2])


def split_module(x, axis, sizes, values=None):
    """A function splitting its input (or a constant of `values`) into one
    output per size, each read by mir.neg (or returned as it is)."""
    ax = axis % x.ndim
    pieces = np.split(x, np.cumsum(sizes)[:-1], axis=ax)
    t = mlir_type(x)
    rts = [mlir_type(p) for p in pieces]
    outs = ", ".join(f'{rt} {{rlx.name = "o{i}"}}' for i, rt in enumerate(rts))
    names = ", ".join(f"%s#{i}" for i in range(len(sizes)))
    sz = ", ".join(map(str, sizes))
    src = "%x"
    lines = []
    if values is not None:
        lines.append(f"  %c = mir.constant dense<{values}> : {t}")
        src = "%c"
    lines.append(f"  %s:{len(sizes)} = mir.split {src} {{axis = {axis} : i64, "
                 f"sizes = array<i64: {sz}>}} : ({t}) -> ({', '.join(rts)})")
    arg = f'%x: {t} {{rlx.name = "x"}}' if values is None else ""
    return (f"func.func @f({arg}) -> ({outs}) {{\n" + "\n".join(lines) +
            f"\n  return {names} : {', '.join(rts)}\n}}\n"), pieces


# Every axis, negative axes, pieces of size 0 and 1, odd sizes, one piece.
@pytest.mark.parametrize("shape,axis,sizes", [
    ((4, 9), 1, (2, 3, 4)), ((4, 9), -1, (9,)), ((6, 3, 5), 0, (1, 0, 5)),
    ((6, 3, 5), -2, (1, 1, 1)), ((6, 3, 5), 2, (3, 2)), ((7,), 0, (0, 7)),
    ((2, 1, 17), -1, (5, 11, 1))])
def test_split(rlx, shape, axis, sizes):
    x = randn(*shape)
    mlir, pieces = split_module(x, axis, sizes)
    out = rlx.run(mlir, {"x": x})
    for i, p in enumerate(pieces):
        np.testing.assert_array_equal(out[f"o{i}"], p)


def test_split_pieces_feed_kernels(rlx):
    """The pieces are views of the input read by kernels; the split of a
    constant is a kernel with one output per piece; integers split too."""
    x = randn(3, 10)
    i = rng.integers(-50, 50, (4, 5)).astype(np.int64)
    c = np.arange(12, dtype=np.float32).reshape(3, 4)
    mlir = """func.func @f(%x: tensor<3x10xf32> {rlx.name = "x"}, %i: tensor<4x5xi64> {rlx.name = "i"}) -> (tensor<3x4xf32> {rlx.name = "a"}, tensor<3x6xf32> {rlx.name = "b"}, tensor<1x5xi64> {rlx.name = "c"}, tensor<3x4xi64> {rlx.name = "d"}, tensor<3x1xf32> {rlx.name = "e"}, tensor<3x3xf32> {rlx.name = "f"}) {
  %s:2 = mir.split %x {axis = -1 : i64, sizes = array<i64: 4, 6>} : (tensor<3x10xf32>) -> (tensor<3x4xf32>, tensor<3x6xf32>)
  %a = mir.exp %s#0 : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %b = mir.add %s#1, %s#1 : (tensor<3x6xf32>, tensor<3x6xf32>) -> tensor<3x6xf32>
  %t:2 = mir.split %i {axis = 0 : i64, sizes = array<i64: 1, 3>} : (tensor<4x5xi64>) -> (tensor<1x5xi64>, tensor<3x5xi64>)
  %d = mir.slice %t#1 {axis = 1 : i64, start = 0 : i64, size = 4 : i64} : (tensor<3x5xi64>) -> tensor<3x4xi64>
  %k = mir.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]> : tensor<3x4xf32>
  %u:2 = mir.split %k {axis = 1 : i64, sizes = array<i64: 1, 3>} : (tensor<3x4xf32>) -> (tensor<3x1xf32>, tensor<3x3xf32>)
  return %a, %b, %t#0, %d, %u#0, %u#1 : tensor<3x4xf32>, tensor<3x6xf32>, tensor<1x5xi64>, tensor<3x4xi64>, tensor<3x1xf32>, tensor<3x3xf32>
}"""
    out = rlx.run(mlir, {"x": x, "i": i})
    assert_close(out["a"], np.exp(x[:, :4]))
    assert_close(out["b"], 2 * x[:, 4:])
    np.testing.assert_array_equal(out["c"], i[:1])
    np.testing.assert_array_equal(out["d"], i[1:, :4])
    np.testing.assert_array_equal(out["e"], c[:, :1])
    np.testing.assert_array_equal(out["f"], c[:, 1:])


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concat(rlx, axis):
    shapes = [[2, 3, 5], [2, 3, 5], [2, 3, 5]]
    shapes[1][axis] = 4
    xs = [randn(*s) for s in shapes]
    check(rlx, f"mir.concat %a0, %a1, %a2 {{axis = {axis} : i64}} : {{T}}", xs,
          np.concatenate(xs, axis))


def test_broadcast(rlx):
    x = randn(3, 1, 5)
    check(rlx, "mir.broadcast %a0 : {T}", [x], np.broadcast_to(x, (2, 3, 4, 5)).copy())


def test_iota(rlx):
    mlir = """func.func @f() -> (tensor<3x5xi64> {rlx.name = "out"}) {
  %r = mir.iota {axis = 1 : i64} : tensor<3x5xi64>
  return %r : tensor<3x5xi64>
}"""
    out = rlx.run(mlir, {})["out"]
    np.testing.assert_array_equal(out, np.broadcast_to(np.arange(5), (3, 5)))


def test_constant_and_param(rlx):
    w = randn(6)
    mlir = """func.func @f(%x: tensor<2x6xf32> {rlx.name = "x"}) -> (tensor<2x6xf32> {rlx.name = "out"}) {
  %w = mir.param "w" : tensor<6xf32>
  %c = mir.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %a = mir.mul %x, %w : (tensor<2x6xf32>, tensor<6xf32>) -> tensor<2x6xf32>
  %r = mir.add %a, %c : (tensor<2x6xf32>, tensor<6xf32>) -> tensor<2x6xf32>
  return %r : tensor<2x6xf32>
}"""
    x = randn(2, 6)
    out = rlx.run(mlir, {"x": x}, {"w": w})["out"]
    assert_close(out, x * w + np.arange(1, 7, dtype=np.float32))


#===----------------------------------------------------------------------===#
# Fused attention block
#===----------------------------------------------------------------------===#

@pytest.mark.parametrize("qk_norm,bias", [(False, False), (True, False), (False, True)])
def test_attention_block(rlx, qk_norm, bias):
    b, t, hidden, h, kv, hd = 1, 7, 48, 4, 2, 16
    x = randn(b, t, hidden)
    wqkv = randn((h + 2 * kv) * hd, hidden, scale=0.2)
    wo = randn(hidden, h * hd, scale=0.2)
    pos = np.arange(t, dtype=np.int32)
    qn, kn = randn(hd), randn(hd)
    bq, bo = randn((h + 2 * kv) * hd), randn(hidden)
    qkv = x @ wqkv.T + (bq if bias else 0)
    q, k, v = qkv[..., :h * hd], qkv[..., h * hd:(h + kv) * hd], qkv[..., (h + kv) * hd:]
    if qk_norm:
        q = rms_norm(q.reshape(b, t, h, hd), qn, 1e-6).reshape(b, t, h * hd)
        k = rms_norm(k.reshape(b, t, kv, hd), kn, 1e-6).reshape(b, t, kv * hd)
    q = ref_rope(q.astype(np.float32), pos, hd, hd, 10000.0)
    k = ref_rope(k.astype(np.float32), pos, hd, hd, 10000.0)
    o = ref_attention(q, k, v.astype(np.float32), h, kv, hd, 0.25)
    expected = (o @ wo.T + (bo if bias else 0)).astype(np.float32)
    inputs = [x, wqkv, wo, pos]
    groups = "positions(%a3)"
    if qk_norm:
        inputs += [qn, kn]
        groups += " q_norm(%a4) k_norm(%a5)"
    if bias:
        inputs += [bq, bo]
        groups += " qkv_bias(%a4) out_bias(%a5)"
    attrs = (f"num_heads = {h} : i64, num_kv_heads = {kv} : i64, head_dim = {hd} : i64, "
             f"rotary_dim = {hd} : i64, rope_theta = 10000.0 : f32, scale = 0.25 : f32, "
             "mask_kind = #mir<mask causal>, norm_epsilon = 1.0e-6 : f32")
    check(rlx, f"mir.attention_block %a0, %a1, %a2 {groups} {{{attrs}}} : {{T}}",
          inputs, expected, rtol=1e-4, atol=1e-4)
