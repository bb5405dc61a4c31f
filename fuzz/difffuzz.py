#!/usr/bin/env python3
# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Structure-aware differential fuzzer of valid programs.

Generates random valid MIR functions (and some HIR ones, with a few MIR ops
mixed in) over small static shapes: elementwise unary and broadcasting
binary ops, mir.activation (every activation of the enum, also in the fused
epilogues), compare + select, casts, reductions, softmax, RMS and layer norm,
matmul and batch matmul, transpose, reshape, broadcast, slice, concat,
gather, iota, constants, the fused ops (fused_matmul, fused_glu, the fused
residual norms), RoPE and attention; HIR norms, linear layers, feed-forward
blocks, RoPE, attention, poolings and heads. Weights are `mir.param` /
`hir.param` half of the time (so that parameter packing and the derived
parameters of fusion run), inputs are random.

Each program runs with `rlx-run` on the CPU and with `--device vulkan` (one
in eight also through an AOT library, `--aot`), under the profile's fusion
policy, `--policy direct` or `--policy fusable` (a third each); every result
is compared with `interpret()`, a NumPy interpreter of the MIR and HIR ops
written for this from docs/Dialects (float64 internally), and with the
CPU's. Tolerances, per output:

    floats    |got - want| <= RTOL * |want| + ATOL * max(1, max |want|)
              with RTOL = ATOL = 2e-3 (the reference is exact; RLX computes
              in f32 with polynomial exp/tanh/erf and its own summation
              order); NaN where the reference is NaN
    integers and booleans: exactly

The generator evaluates each op as it adds it, so domains are met on the
actual values: log/sqrt/rsqrt only see values >= 1e-3, exp arguments stay
within +-30, divisors away from zero, compares away from ties, and
float-to-int casts away from integer boundaries. Softmax is over the last
axis and splat constants feed elementwise ops only: both back ends refuse
the rest with a message (docs/Hardening.md lists the known bugs).

On a mismatch, a refused valid program or a crash, the program, its inputs
and parameters, the reference outputs and the logs go to OUT/<case>/ with a
`repro.sh` of the rlx-run commands; `difffuzz.py --replay OUT/<case>` runs it
again. Seeded and deterministic: program i of `--seed S` is the same
whatever `--seconds` says.

    difffuzz.py [--seconds N | --count N] [--seed S] [--out DIR]
                [--build DIR] [--no-vulkan] [--hir-fraction F] [-v]
    difffuzz.py --replay DIR
"""

import argparse
import math
import os
import pathlib
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
RTOL = 2e-3
ATOL = 2e-3
RUN_TIMEOUT = 300

#===----------------------------------------------------------------------===#
# Types and the text of one op line
#===----------------------------------------------------------------------===#

NP_OF = {"f32": np.float32, "i32": np.int32, "i64": np.int64, "i1": np.bool_}


def ttype(shape, dtype):
    """`tensor<2x3xf32>` for a shape and an element type name."""
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


TYPE_RE = re.compile(r"tensor<([0-9x]*?)x?(f32|i32|i64|i1)>")


def parse_type(text):
    m = TYPE_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"unsupported type {text!r}")
    dims = m.group(1)
    shape = tuple(int(d) for d in dims.split("x")) if dims else ()
    return shape, m.group(2)


def split_top(text, sep=","):
    """Splits at `sep` outside (), [], {}, <> and strings."""
    parts, depth, cur, quoted = [], 0, "", False
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            quoted = not quoted
        elif not quoted and c in "([{<":
            depth += 1
        elif not quoted and c in ")]}>" and not (c == ">" and
                                                 text[i - 1:i] == "-"):
            depth -= 1
        if not quoted and depth == 0 and text.startswith(sep, i):
            parts.append(cur)
            cur = ""
            i += len(sep)
            continue
        cur += c
        i += 1
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_attr_value(v):
    v = v.strip()
    m = re.fullmatch(r"array<i64:?\s*([-0-9, ]*)>", v)
    if m:
        return [int(x) for x in m.group(1).split(",") if x.strip()]
    m = re.fullmatch(r"#\w+<\w+ (\w+)>", v)
    if m:
        return m.group(1)
    m = re.fullmatch(r"(-?[0-9.e+\-]+|true|false)\s*:\s*(\w+)", v)
    if m:
        return float(m.group(1)) if m.group(2).startswith("f") else int(
            m.group(1))
    m = re.fullmatch(r"-?[0-9]+", v)
    if m:
        return int(v)
    return v.strip('"')


def parse_attrs(text):
    attrs = {}
    for item in split_top(text):
        if "=" in item:
            k, v = item.split("=", 1)
            attrs[k.strip()] = parse_attr_value(v)
        else:
            attrs[item.strip()] = True
    return attrs


LINE_RE = re.compile(r"^\s*(%[\w.]+(?:\s*,\s*%[\w.]+)*)\s*=\s*"
                     r"(mir|hir)\.(\w+)\s*(.*)$")


class Line:
    """One op of a function body: results, dialect.op, operands, named
    operand groups, attributes, string and dense literals, types."""

    def __init__(self, text):
        m = LINE_RE.match(text)
        if not m:
            raise ValueError(f"cannot parse {text!r}")
        self.results = [r.strip() for r in m.group(1).split(",")]
        self.dialect, self.op = m.group(2), m.group(3)
        rest = m.group(4)
        head, types = split_top(rest, " : ")[0], split_top(rest, " : ")[1:]
        self.types = self._types(" : ".join(types))
        self.attrs, self.groups, self.name, self.dense = {}, {}, None, None
        m = re.search(r"\{(.*)\}\s*$", head)
        if m:
            self.attrs = parse_attrs(m.group(1))
            head = head[:m.start()]
        m = re.search(r'"([^"]*)"', head)
        if m:
            self.name = m.group(1)
            head = head[:m.start()] + head[m.end():]
        m = re.search(r"dense<(.*)>", head)
        if m:
            self.dense = m.group(1)
            head = head[:m.start()] + head[m.end():]
        for g in re.finditer(r"(\w+)\(([^)]*)\)", head):
            self.groups[g.group(1)] = [x.strip() for x in
                                       g.group(2).split(",") if x.strip()]
        head = re.sub(r"\w+\([^)]*\)", "", head)
        self.operands = re.findall(r"%[\w.]+", head)

    @staticmethod
    def _types(text):
        if "->" in text:
            ins, outs = text.split("->", 1)
            ins = [parse_type(t) for t in split_top(ins.strip()[1:-1])]
            outs = outs.strip()
            if outs.startswith("("):
                outs = outs[1:-1]
            return ins, [parse_type(t) for t in split_top(outs)]
        return [], [parse_type(text)]


#===----------------------------------------------------------------------===#
# The NumPy interpreter of MIR and HIR
#===----------------------------------------------------------------------===#

_erf = np.vectorize(math.erf, otypes=[np.float64])


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def gelu(x):
    return 0.5 * x * (1 + _erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                  (x + 0.044715 * x ** 3)))


def softplus(x):
    return np.logaddexp(0, x)


ACTIVATIONS = {
    "none": lambda x: x, "relu": lambda x: np.maximum(x, 0), "gelu": gelu,
    "gelu_tanh": gelu_tanh, "silu": lambda x: x * sigmoid(x),
    "sigmoid": sigmoid, "tanh": np.tanh,
    # The parameter-free rest of transformers' ACT2FN.
    "quick_gelu": lambda x: x * sigmoid(1.702 * x),
    "relu2": lambda x: np.maximum(x, 0) ** 2,
    "relu6": lambda x: np.clip(x, 0, 6),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "mish": lambda x: x * np.tanh(softplus(x)),
    "gelu_10": lambda x: np.clip(gelu(x), -10, 10),
    "laplace": lambda x: 0.5 * (1 + _erf((x - 0.707107) /
                                         (0.282095 * math.sqrt(2.0)))),
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "sqrtsoftplus": lambda x: np.sqrt(softplus(x)),
}

UNARY = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh, "erf": _erf,
    "sigmoid": sigmoid, "silu": ACTIVATIONS["silu"],
    "relu": ACTIVATIONS["relu"],
    "neg": np.negative,
}


def int_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
          "max": np.maximum, "min": np.minimum, "pow": np.power}

CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
       "gt": np.greater, "ge": np.greater_equal}


def rms_norm(x, w, eps, unit=False):
    y = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps)
    return y * ((1 + w) if unit else w)


def layer_norm(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def matmul(a, b, tl=False, tr=False):
    if tl:
        a = np.swapaxes(a, -1, -2)
    if tr:
        b = np.swapaxes(b, -1, -2)
    return a @ b


def rope(x, pos, hd, rot, theta, style, inv_freq=None):
    b, t, w = x.shape
    if inv_freq is None:
        inv_freq = 1.0 / theta ** (np.arange(0, rot, 2) / rot)
    pos = np.broadcast_to(pos, (b, t)).astype(np.float64)
    ang = pos[..., None] * inv_freq
    c, s = np.cos(ang)[:, :, None, :], np.sin(ang)[:, :, None, :]
    xr = x.reshape(b, t, w // hd, hd)
    out = xr.copy()
    if style == "interleaved":
        x1, x2 = xr[..., 0:rot:2], xr[..., 1:rot:2]
        out[..., 0:rot:2] = x1 * c - x2 * s
        out[..., 1:rot:2] = x2 * c + x1 * s
    else:
        x1, x2 = xr[..., :rot // 2], xr[..., rot // 2:rot]
        out[..., :rot // 2] = x1 * c - x2 * s
        out[..., rot // 2:rot] = x2 * c + x1 * s
    return out.reshape(b, t, w)


def attention(q, k, v, heads, kv_heads, hd, scale, mask_kind="causal",
              window=0, softcap=0.0, mask=None):
    b, tq, _ = q.shape
    tk = k.shape[1]
    g = heads // kv_heads
    qh = q.reshape(b, tq, heads, hd).transpose(0, 2, 1, 3)
    kh = np.repeat(k.reshape(b, tk, kv_heads, hd).transpose(0, 2, 1, 3), g, 1)
    vh = np.repeat(v.reshape(b, tk, kv_heads, hd).transpose(0, 2, 1, 3), g, 1)
    s = qh @ kh.transpose(0, 1, 3, 2) * scale
    if softcap > 0:
        s = softcap * np.tanh(s / softcap)
    pos = np.arange(tq)[:, None] + (tk - tq)
    j = np.arange(tk)[None, :]
    keep = np.ones((tq, tk), bool)
    if mask_kind in ("causal", "sliding_window"):
        keep &= j <= pos
    if mask_kind == "sliding_window":
        keep &= pos - j < window
    keep = np.broadcast_to(keep, s.shape).copy()
    if mask is not None:
        keep &= (mask != 0)[:, None, None, :]
    s = np.where(keep, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    return (p @ vh).transpose(0, 2, 1, 3).reshape(b, tq, heads * hd)


def evaluate(line, env, params):
    """The values of `line`'s results (float64 for floats, int64 for
    integers, bool for i1), given `env` (name -> value) and `params`."""
    a = [env[o] for o in line.operands]
    g = {k: [env[x] for x in v] for k, v in line.groups.items()}
    at = line.attrs
    rshape, rdtype = line.types[1][0]
    op = line.op

    def cast_to(x, dtype):
        if dtype == "f32":
            return np.asarray(x, np.float64)
        if dtype == "i1":
            return np.asarray(x, bool)
        return np.asarray(x).astype(np.int64)

    if op == "param":
        return [cast_to(params[line.name], rdtype)]
    if op == "constant":
        import json
        vals = np.array(json.loads(line.dense.replace("true", "1").replace(
            "false", "0")), np.float64)
        return [cast_to(np.broadcast_to(vals, rshape).copy(), rdtype)]
    if op == "iota":
        ax = at["axis"]
        idx = np.arange(rshape[ax]).reshape(
            [-1 if i == ax else 1 for i in range(len(rshape))])
        return [cast_to(np.broadcast_to(idx, rshape).copy(), rdtype)]
    if line.dialect == "mir":
        if op in UNARY:
            return [UNARY[op](a[0])]
        if op == "gelu":
            return [gelu_tanh(a[0]) if at.get("tanh_approx") else gelu(a[0])]
        if op == "activation":
            return [ACTIVATIONS[at["activation"]](a[0])]
        if op == "div":
            return [int_div(a[0], a[1]) if rdtype != "f32" else a[0] / a[1]]
        if op in BINARY:
            return [BINARY[op](a[0], a[1])]
        if op == "compare":
            return [CMP[at["predicate"]](a[0], a[1])]
        if op == "select":
            return [np.where(a[0], a[1], a[2])]
        if op == "cast":
            if rdtype == "f32":
                return [a[0].astype(np.float64)]
            if rdtype == "i1":
                return [a[0] != 0]
            return [np.trunc(a[0]).astype(np.int64)]
        if op in ("reduce_sum", "reduce_mean", "reduce_max"):
            fn = {"reduce_sum": np.sum, "reduce_mean": np.mean,
                  "reduce_max": np.max}[op]
            return [fn(a[0], axis=tuple(at["axes"]),
                       keepdims=bool(at.get("keep_dims")))]
        if op == "softmax":
            x = a[0]
            e = np.exp(x - x.max(at.get("axis", -1), keepdims=True))
            return [e / e.sum(at.get("axis", -1), keepdims=True)]
        if op == "rms_norm":
            return [rms_norm(a[0], a[1], at["epsilon"],
                             bool(at.get("unit_offset")))]
        if op == "layer_norm":
            return [layer_norm(a[0], a[1], a[2], at["epsilon"])]
        if op in ("matmul", "batch_matmul"):
            return [matmul(a[0], a[1], bool(at.get("transpose_lhs")),
                           bool(at.get("transpose_rhs")))]
        if op == "transpose":
            return [np.transpose(a[0], at["permutation"])]
        if op == "reshape":
            return [a[0].reshape(rshape)]
        if op == "broadcast":
            return [np.broadcast_to(a[0], rshape).copy()]
        if op == "slice":
            ax, start, size = at["axis"], at["start"], at["size"]
            step = at.get("step", 1)
            s = start % a[0].shape[ax] if start < 0 else start
            return [np.take(a[0], s + step * np.arange(size, dtype=np.int64),
                            axis=ax)]
        if op == "concat":
            return [np.concatenate(a, at["axis"])]
        if op == "gather":
            return [np.take(a[0], a[1], axis=at.get("axis", 0))]
        if op == "fused_matmul":
            y = matmul(a[0], a[1], False, bool(at.get("transpose_rhs")))
            if "bias" in g:
                y = y + g["bias"][0]
            y = ACTIVATIONS[at.get("activation", "none")](y)
            if "residual" in g:
                y = y + g["residual"][0]
            return [y]
        if op == "fused_glu":
            x = a[0]
            h = x.shape[-1] // 2
            return [ACTIVATIONS[at.get("activation", "silu")](x[..., :h]) *
                    x[..., h:]]
        if op == "fused_residual_rms_norm":
            s = a[0] + a[1]
            return [s, rms_norm(s, a[2], at["epsilon"],
                                bool(at.get("unit_offset")))]
        if op == "fused_residual_layer_norm":
            s = a[0] + a[1]
            return [s, layer_norm(s, a[2], a[3], at["epsilon"])]
        if op == "rope":
            return [rope(a[0], a[1], at["head_dim"], at["rotary_dim"],
                         at.get("theta", 10000.0), at.get("style", "half"),
                         g["inv_freq"][0] if "inv_freq" in g else None)]
        if op == "attention":
            return [attention(a[0], a[1], a[2], at["num_heads"],
                              at["num_kv_heads"], at["head_dim"], at["scale"],
                              at.get("mask_kind", "causal"),
                              at.get("window", 0), at.get("softcap", 0.0),
                              g["mask"][0] if "mask" in g else None)]
    else:
        if op == "add":
            return [a[0] + a[1]]
        if op in ("rms_norm", "gemma_rms_norm"):
            return [rms_norm(a[0], a[1], at.get("epsilon", 1e-5),
                             op == "gemma_rms_norm")]
        if op == "layer_norm":
            return [layer_norm(a[0], a[1], a[2], at.get("epsilon", 1e-5))]
        if op == "layer_scale":
            return [a[0] * a[1]]
        if op == "embed_scale":
            return [a[0] * at["scale"]]
        if op == "logit_softcap":
            return [np.tanh(a[0] / at["cap"]) * at["cap"]]
        if op == "linear":
            y = matmul(a[0], a[1], False, True)
            if "bias" in g:
                y = y + g["bias"][0]
            return [ACTIVATIONS[at.get("activation", "none")](y)]
        if op == "lm_head":
            return [matmul(a[0], a[1], False, True)]
        if op in ("swiglu", "geglu"):
            act = ACTIVATIONS["silu" if op == "swiglu" else "gelu_tanh"]
            x, wg, wu, wd = a
            return [matmul(act(matmul(x, wg, False, True)) *
                           matmul(x, wu, False, True), wd, False, True)]
        if op == "gelu_ffn":
            x, wi, bi, wo, bo = a
            act = gelu_tanh if at.get("tanh_approx") else gelu
            return [matmul(act(matmul(x, wi, False, True) + bi), wo, False,
                           True) + bo]
        if op == "gather_last_token":
            return [a[0][:, -1:, :]]
        if op == "cls_pool":
            return [a[0][:, 0, :]]
        if op == "mean_pool":
            if "mask" not in g:
                return [a[0].mean(1)]
            m = g["mask"][0].astype(np.float64)[:, :, None]
            return [(a[0] * m).sum(1) / np.maximum(m.sum(1), 1e-9)]
        if op == "embed":
            return [np.take(a[1], a[0], axis=0)]
        if op == "rope":
            return [rope(a[0], a[1], at["head_dim"], at["rotary_dim"],
                         at.get("theta", 10000.0), at.get("style", "half"),
                         g["inv_freq"][0] if "inv_freq" in g else None)]
        if op == "attention":
            hd = at["head_dim"]
            scale = at.get("scale", 0.0) or 1 / math.sqrt(hd)
            return [attention(a[0], a[1], a[2], at["num_heads"],
                              at["num_kv_heads"], hd, scale,
                              at.get("mask_kind", "causal"),
                              at.get("window", 0), at.get("softcap", 0.0),
                              g["mask"][0] if "mask" in g else None)]
    raise NotImplementedError(f"{line.dialect}.{op}")


def result_value(x, dtype):
    """A result as its declared element type would hold it, for the next op:
    floats keep float64 (the reference is exact), integers int64."""
    if dtype == "f32":
        return np.asarray(x, np.float64)
    if dtype == "i1":
        return np.asarray(x, bool)
    return np.asarray(x).astype(np.int64)


FUNC_RE = re.compile(r"func\.func @\w+\((.*?)\)\s*->\s*\((.*?)\)\s*\{",
                     re.S)
ARG_RE = re.compile(r'(%[\w.]+):\s*(tensor<[^>]*>)\s*\{rlx\.name = "(\w+)"\}')


def interpret(text, inputs, params):
    """Runs the function in `text` on `inputs` and `params` (name -> array);
    returns {output name: array of the declared element type}."""
    m = FUNC_RE.search(text)
    env = {}
    for arg, _, name in ARG_RE.findall(m.group(1)):
        env[arg] = result_value(inputs[name], {
            np.float32: "f32", np.int32: "i32", np.int64: "i64",
            np.bool_: "i1"}[inputs[name].dtype.type])
    out_names = re.findall(r'rlx\.name = "(\w+)"', m.group(2))
    body = text[m.end():]
    for raw in body.splitlines():
        raw = raw.strip()
        if raw.startswith("return"):
            names = re.findall(r"%[\w.]+", raw.split(":")[0])
            types = [parse_type(t) for t in split_top(raw.split(":", 1)[1])]
            return {n: np.asarray(env[v]).astype(NP_OF[t[1]])
                    for n, v, t in zip(out_names, names, types)}
        if not raw or raw.startswith("//") or raw == "}":
            continue
        line = Line(raw)
        for r, val, (_, dt) in zip(line.results, evaluate(line, env, params),
                                   line.types[1]):
            env[r] = result_value(val, dt)
    raise ValueError("no return")


#===----------------------------------------------------------------------===#
# The generator
#===----------------------------------------------------------------------===#

DIMS = [1, 2, 3, 4, 5, 7, 8, 16, 17, 33]


class Val:
    def __init__(self, name, shape, dtype, data, splat=False):
        self.name, self.shape, self.dtype, self.data = name, tuple(shape), \
            dtype, data
        # A splat constant, or computed from splat constants only.
        self.splat = splat

    @property
    def type(self):
        return ttype(self.shape, self.dtype)

    def amax(self):
        return float(np.max(np.abs(self.data))) if self.data.size else 0.0

    def amin(self):
        return float(np.min(self.data)) if self.data.size else 0.0


class Skip(Exception):
    """The op chosen does not fit; choose another."""


class Generator:
    """Builds one random function, evaluating each op as it is added."""

    def __init__(self, seed, hir=False):
        self.r = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.hir = hir
        self.d = "hir" if hir else "mir"
        self.args, self.lines, self.vals, self.weights = [], [], [], []
        self.inputs, self.params = {}, {}
        self.counter = 0

    # Values ----------------------------------------------------------------

    def fresh(self):
        self.counter += 1
        return f"%v{self.counter}"

    def rand_shape(self, rank=None, max_elems=2048):
        rank = self.r.randint(1, 4) if rank is None else rank
        while True:
            s = tuple(self.r.choice(DIMS) for _ in range(rank))
            if int(np.prod(s)) <= max_elems:
                return s

    def data(self, shape, dtype, scale=1.0, lo=None, hi=None):
        if dtype == "f32":
            x = self.np.standard_normal(shape) * scale
            return x.astype(np.float32)
        if dtype == "i1":
            return self.np.integers(0, 2, shape).astype(bool)
        lo = -20 if lo is None else lo
        hi = 20 if hi is None else hi
        return self.np.integers(lo, hi, shape).astype(NP_OF[dtype])

    def new_input(self, shape, dtype="f32", scale=1.0, lo=None, hi=None,
                  weight=False):
        """A function input, or (weights, half the time) a parameter."""
        arr = self.data(shape, dtype, scale, lo, hi)
        if weight and self.r.random() < 0.5:
            name = f"w{len(self.params)}"
            self.params[name] = arr
            v = Val(self.fresh(), shape, dtype, result_value(arr, dtype))
            self.lines.append(f'{v.name} = {self.d}.param "{name}" : '
                              f"{v.type}")
            self.weights.append(v)
            return v
        name = f"x{len(self.args)}"
        v = Val(f"%{name}", shape, dtype, result_value(arr, dtype))
        self.args.append(v)
        self.inputs[name] = arr
        return v

    def emit(self, text):
        """Adds one op line, evaluates it, returns its result values."""
        line = Line(text)
        env = {v.name: v.data for v in self.args + self.weights + self.vals}
        outs = evaluate(line, env, self.params)
        known = {v.name: v for v in self.args + self.weights + self.vals}
        operands = line.operands + [x for g in line.groups.values()
                                    for x in g]
        splat = (line.op == "constant" and not line.dense.startswith("[")) \
            or (bool(operands) and all(known[o].splat for o in operands))
        res = []
        for r, val, (shape, dt) in zip(line.results, outs, line.types[1]):
            val = result_value(val, dt)
            assert val.shape == shape, (text, val.shape, shape)
            limit = {"f32": 1e6, "i32": 2 ** 31, "i64": 2 ** 62}.get(dt)
            if limit and val.size and not np.max(np.abs(val)) < limit:
                raise Skip("values out of range")
            res.append(Val(r, shape, dt, val, splat))
        self.lines.append(text)
        self.vals.extend(res)
        return res

    def pick(self, pred=lambda v: True, new=None, splat=False):
        """An existing value meeting `pred` (recent ones more often), else
        `new()`. Splat constants (and values computed from them only) are
        operands of elementwise ops only (`splat`): both back ends refuse
        them elsewhere, a known bug (docs/Hardening.md)."""
        cands = [v for v in self.args + self.weights + self.vals
                 if pred(v) and (splat or not v.splat)]
        if cands and (new is None or self.r.random() < 0.7):
            weights = [1 + i for i in range(len(cands))]
            return self.r.choices(cands, weights)[0]
        if new is None:
            raise Skip("no operand")
        return new()

    def floats(self, v):
        return v.dtype == "f32"

    def sig(self, ins, outs):
        i = ", ".join(v if isinstance(v, str) else v.type for v in ins)
        o = outs if isinstance(outs, str) else ttype(*outs)
        return f"({i}) -> {o}"

    def bcast_shape(self, shape):
        """A shape that broadcasts with `shape` to `shape`."""
        s = list(shape)
        if s and self.r.random() < 0.5:
            s = s[self.r.randint(0, len(s)):]
        return tuple(1 if self.r.random() < 0.3 else d for d in s)

    # MIR ops ---------------------------------------------------------------

    def op_unary(self):
        x = self.pick(self.floats, lambda: self.new_input(self.rand_shape()),
                      splat=True)
        names = ["tanh", "erf", "sigmoid", "silu", "gelu", "relu", "neg"]
        if x.amax() <= 30:
            names.append("exp")
        if x.data.size and x.amin() >= 1e-3:
            names += ["log", "sqrt", "rsqrt"]
        elif x.data.size and 0 < x.amax() <= 10 and self.r.random() < 0.3:
            # Few values are positive: make one, exp(x) >= e^-10.
            (x,) = self.emit(f"{self.fresh()} = mir.exp {x.name} : "
                             f"{self.sig([x], x.type)}")
            names = ["log", "sqrt", "rsqrt"]
        if names[0] == "tanh" and self.r.random() < 0.3:
            act = self.r.choice(list(ACTIVATIONS)[1:])
            return self.emit(f"{self.fresh()} = mir.activation {x.name} "
                             f"{{activation = #mir<activation {act}>}} : "
                             f"{self.sig([x], x.type)}")
        op = self.r.choice(names)
        attr = " {tanh_approx}" if op == "gelu" and self.r.random() < 0.5 \
            else ""
        return self.emit(f"{self.fresh()} = mir.{op} {x.name}{attr} : "
                         f"{self.sig([x], x.type)}")

    def op_binary(self):
        a = self.pick(lambda v: v.dtype in ("f32", "i32", "i64"),
                      lambda: self.new_input(self.rand_shape()), splat=True)
        ops = ["add", "sub", "mul", "max", "min"]
        if a.dtype == "f32":
            ops += ["div", "pow"]
        else:
            ops += ["div"]
        op = self.r.choice(ops)

        def ok(v):
            if v.dtype != a.dtype or v is a and op in ("div", "pow"):
                return False
            try:
                np.broadcast_shapes(a.shape, v.shape)
            except ValueError:
                return False
            if op == "div":
                return v.data.size > 0 and np.min(np.abs(v.data)) >= (
                    0.05 if a.dtype == "f32" else 1)
            if op == "pow":
                return v.amax() <= 3
            return True

        def new_b():
            shape = self.bcast_shape(a.shape)
            if op == "div" and a.dtype != "f32":
                return self.new_input(shape, a.dtype, lo=1, hi=9)
            b = self.new_input(shape, a.dtype)
            if op == "div":
                b.data = np.where(np.abs(b.data) < 0.05, 0.5, b.data)
                self.inputs[b.name[1:]] = b.data.astype(np.float32)
            return b
        if op == "pow" and a.data.size and a.amax() <= 2 and (
                a.amin() < 0.1 and self.r.random() < 0.5):
            # A positive base, exp(a) in [e^-2, e^2].
            (a,) = self.emit(f"{self.fresh()} = mir.exp {a.name} : "
                             f"{self.sig([a], a.type)}")
        if op == "pow" and (not a.data.size or a.amin() < 0.1 or
                            a.amax() > 10):
            raise Skip("pow base")
        b = self.pick(ok, new_b, splat=True)
        if op == "div" and a.dtype == "f32" and (
                b.data.size and np.min(np.abs(b.data)) < 0.05):
            raise Skip("divisor")
        if op == "pow" and b.amax() > 3:
            raise Skip("exponent")
        x, y = (b, a) if self.r.random() < 0.3 and op in (
            "add", "mul", "max", "min") else (a, b)
        shape = np.broadcast_shapes(x.shape, y.shape)
        return self.emit(f"{self.fresh()} = mir.{op} {x.name}, {y.name} : "
                         f"{self.sig([x, y], (shape, a.dtype))}")

    def op_compare_select(self):
        a = self.pick(lambda v: v.dtype in ("f32", "i32", "i64"),
                      lambda: self.new_input(self.rand_shape()))
        b = self.pick(lambda v: v.dtype == a.dtype and _broadcasts(
            a.shape, v.shape), lambda: self.new_input(
                self.bcast_shape(a.shape), a.dtype))
        if a.dtype == "f32":
            diff = np.abs(a.data - b.data)
            scale = max(1.0, a.amax(), b.amax())
            if np.any((diff > 0) & (diff < 1e-3 * scale)):
                raise Skip("near tie")
        pred = self.r.choice(list(CMP))
        shape = np.broadcast_shapes(a.shape, b.shape)
        (c,) = self.emit(f"{self.fresh()} = mir.compare {a.name}, {b.name} "
                         f"{{predicate = #mir<cmp {pred}>}} : "
                         f"{self.sig([a, b], (shape, 'i1'))}")
        if self.r.random() < 0.15:
            return [c]
        x = self.pick(lambda v: v.dtype == "f32" and _broadcasts(
            shape, v.shape), lambda: self.new_input(self.bcast_shape(shape)))
        y = self.pick(lambda v: v.dtype == "f32" and _broadcasts(
            np.broadcast_shapes(shape, x.shape), v.shape),
            lambda: self.new_input(self.bcast_shape(shape)))
        out = np.broadcast_shapes(shape, x.shape, y.shape)
        return self.emit(f"{self.fresh()} = mir.select {c.name}, {x.name}, "
                         f"{y.name} : {self.sig([c, x, y], (out, 'f32'))}")

    def op_cast(self):
        x = self.pick(lambda v: True, lambda: self.new_input(
            self.rand_shape(), self.r.choice(["i32", "i64"])), splat=True)
        if x.dtype == "f32":
            frac = np.abs(x.data - np.round(x.data))
            if x.amax() > 1e5 or (x.data.size and np.min(frac) < 1e-3):
                raise Skip("cast near an integer")
            to = self.r.choice(["i32", "i64"])
        else:
            to = "f32"
        return self.emit(f"{self.fresh()} = mir.cast {x.name} : "
                         f"{self.sig([x], (x.shape, to))}")

    def op_reduce(self):
        x = self.pick(lambda v: v.dtype in ("f32", "i32", "i64") and
                      len(v.shape) >= 1,
                      lambda: self.new_input(self.rand_shape()))
        ops = ["reduce_sum", "reduce_max"] + (
            ["reduce_mean"] if x.dtype == "f32" else [])
        op = self.r.choice(ops)
        rank = len(x.shape)
        axes = sorted(self.r.sample(range(rank), self.r.randint(1, rank)))
        keep = self.r.random() < 0.4
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)
                      if keep or i not in axes)
        ax = ", ".join(map(str, axes))
        return self.emit(f"{self.fresh()} = mir.{op} {x.name} {{axes = "
                         f"array<i64: {ax}>{', keep_dims' if keep else ''}}}"
                         f" : {self.sig([x], (shape, x.dtype))}")

    def op_softmax(self):
        x = self.pick(lambda v: self.floats(v) and len(v.shape) >= 1,
                      lambda: self.new_input(self.rand_shape()))
        # Both back ends implement the last axis only (and say so).
        axis = self.r.choice([-1, len(x.shape) - 1])
        return self.emit(f"{self.fresh()} = mir.softmax {x.name} {{axis = "
                         f"{axis} : i64}} : {self.sig([x], x.type)}")

    def op_norm(self):
        x = self.pick(lambda v: self.floats(v) and len(v.shape) >= 1,
                      lambda: self.new_input(self.rand_shape()))
        n = x.shape[-1]
        w = self.pick(lambda v: self.floats(v) and v.shape == (n,),
                      lambda: self.new_input((n,), weight=True))
        eps = self.r.choice(["1.0e-06", "1.0e-05", "1.0e-03"])
        if self.r.random() < 0.5:
            unit = ", unit_offset" if self.r.random() < 0.3 else ""
            return self.emit(f"{self.fresh()} = mir.rms_norm {x.name}, "
                             f"{w.name} {{epsilon = {eps} : f32{unit}}} : "
                             f"{self.sig([x, w], x.type)}")
        b = self.pick(lambda v: self.floats(v) and v.shape == (n,),
                      lambda: self.new_input((n,), weight=True))
        eps = self.r.choice(["1.0e-05", "1.0e-03"])
        return self.emit(f"{self.fresh()} = mir.layer_norm {x.name}, "
                         f"{w.name}, {b.name} {{epsilon = {eps} : f32}} : "
                         f"{self.sig([x, w, b], x.type)}")

    def op_fused_residual_norm(self):
        x = self.pick(lambda v: self.floats(v) and len(v.shape) >= 1,
                      lambda: self.new_input(self.rand_shape()))
        r = self.pick(lambda v: self.floats(v) and v.shape == x.shape,
                      lambda: self.new_input(x.shape))
        n = x.shape[-1]
        w = self.new_input((n,), weight=True)
        res = f"{self.fresh()}, {self.fresh()}"
        if self.r.random() < 0.5:
            unit = ", unit_offset" if self.r.random() < 0.3 else ""
            return self.emit(
                f"{res} = mir.fused_residual_rms_norm {x.name}, {r.name}, "
                f"{w.name} {{epsilon = 1.0e-05 : f32{unit}}} : "
                f"{self.sig([x, r, w], f'({x.type}, {x.type})')}")
        b = self.new_input((n,), weight=True)
        return self.emit(
            f"{res} = mir.fused_residual_layer_norm {x.name}, {r.name}, "
            f"{w.name}, {b.name} {{epsilon = 1.0e-05 : f32}} : "
            f"{self.sig([x, r, w, b], f'({x.type}, {x.type})')}")

    def op_matmul(self, fused=False):
        x = self.pick(lambda v: self.floats(v) and 2 <= len(v.shape) <= 4,
                      lambda: self.new_input(self.rand_shape(
                          self.r.randint(2, 3))))
        tl = not fused and len(x.shape) >= 2 and self.r.random() < 0.2
        k = x.shape[-2] if tl else x.shape[-1]
        m = x.shape[-1] if tl else x.shape[-2]
        tr = self.r.random() < 0.6
        n = self.r.choice(DIMS)
        wshape = (n, k) if tr else (k, n)
        w = self.pick(lambda v: self.floats(v) and v.shape == wshape,
                      lambda: self.new_input(wshape, scale=1 / math.sqrt(k),
                                             weight=True))
        out = x.shape[:-2] + (m, n)
        if not fused:
            flags = [f for f, on in (("transpose_lhs", tl),
                                     ("transpose_rhs", tr)) if on]
            attr = " {" + ", ".join(flags) + "}" if flags else ""
            return self.emit(f"{self.fresh()} = mir.matmul {x.name}, "
                             f"{w.name}{attr} : "
                             f"{self.sig([x, w], (out, 'f32'))}")
        ops, groups = [x, w], ""
        if self.r.random() < 0.6:
            b = self.new_input((n,), weight=True)
            ops.append(b)
            groups += f" bias({b.name})"
        if self.r.random() < 0.5:
            r = self.pick(lambda v: self.floats(v) and v.shape == out,
                          lambda: self.new_input(out))
            ops.append(r)
            groups += f" residual({r.name})"
        act = self.r.choice(list(ACTIVATIONS))
        attrs = ["transpose_rhs"] if tr else []
        attrs.append(f"activation = #mir<activation {act}>")
        return self.emit(f"{self.fresh()} = mir.fused_matmul {x.name}, "
                         f"{w.name}{groups} {{{', '.join(attrs)}}} : "
                         f"{self.sig(ops, (out, 'f32'))}")

    def op_batch_matmul(self):
        x = self.pick(lambda v: self.floats(v) and 3 <= len(v.shape) <= 4,
                      lambda: self.new_input(self.rand_shape(3)))
        tl, tr = self.r.random() < 0.3, self.r.random() < 0.5
        k = x.shape[-2] if tl else x.shape[-1]
        m = x.shape[-1] if tl else x.shape[-2]
        n = self.r.choice(DIMS)
        wshape = x.shape[:-2] + ((n, k) if tr else (k, n))
        w = self.pick(lambda v: self.floats(v) and v.shape == wshape,
                      lambda: self.new_input(wshape, scale=1 / math.sqrt(k)))
        flags = [f for f, on in (("transpose_lhs", tl),
                                 ("transpose_rhs", tr)) if on]
        attr = " {" + ", ".join(flags) + "}" if flags else ""
        return self.emit(f"{self.fresh()} = mir.batch_matmul {x.name}, "
                         f"{w.name}{attr} : "
                         f"{self.sig([x, w], (x.shape[:-2] + (m, n), 'f32'))}")

    def op_transpose(self):
        x = self.pick(lambda v: len(v.shape) >= 2,
                      lambda: self.new_input(self.rand_shape(
                          self.r.randint(2, 4))))
        perm = list(range(len(x.shape)))
        while perm == sorted(perm):
            self.r.shuffle(perm)
        shape = tuple(x.shape[p] for p in perm)
        p = ", ".join(map(str, perm))
        return self.emit(f"{self.fresh()} = mir.transpose {x.name} "
                         f"{{permutation = array<i64: {p}>}} : "
                         f"{self.sig([x], (shape, x.dtype))}")

    def op_reshape(self):
        x = self.pick(lambda v: len(v.shape) >= 1,
                      lambda: self.new_input(self.rand_shape()), splat=True)
        n = int(np.prod(x.shape))
        factors = [f for f in range(2, n + 1) if n % f == 0]
        shape, rest = [], n
        for _ in range(self.r.randint(0, 3)):
            fs = [f for f in factors if rest % f == 0]
            if not fs:
                break
            f = self.r.choice(fs)
            shape.append(f)
            rest //= f
        shape.append(rest)
        if self.r.random() < 0.3:
            shape.insert(self.r.randint(0, len(shape)), 1)
        self.r.shuffle(shape)
        if tuple(shape) == x.shape:
            raise Skip("same shape")
        return self.emit(f"{self.fresh()} = mir.reshape {x.name} : "
                         f"{self.sig([x], (tuple(shape), x.dtype))}")

    def op_broadcast(self):
        x = self.pick(lambda v: len(v.shape) <= 3 and v.data.size <= 512,
                      lambda: self.new_input(self.bcast_shape(
                          self.rand_shape(2))), splat=True)
        lead = tuple(self.r.choice([1, 2, 3]) for _ in range(
            self.r.randint(0, 4 - len(x.shape))))
        body = tuple(self.r.choice([2, 3, 5]) if d == 1 and
                     self.r.random() < 0.7 else d for d in x.shape)
        shape = lead + body
        if shape == x.shape:
            raise Skip("same shape")
        return self.emit(f"{self.fresh()} = mir.broadcast {x.name} : "
                         f"{self.sig([x], (shape, x.dtype))}")

    def op_slice(self):
        x = self.pick(lambda v: len(v.shape) >= 1 and max(v.shape) > 1,
                      lambda: self.new_input(self.rand_shape()))
        axes = [i for i, d in enumerate(x.shape) if d > 1]
        if not axes:
            raise Skip("nothing to slice")
        axis = self.r.choice(axes)
        d = x.shape[axis]
        size = self.r.randint(1, d - 1)
        start = self.r.randint(0, d - size)
        if self.r.random() < 0.3:
            start -= d
        shape = x.shape[:axis] + (size,) + x.shape[axis + 1:]
        return self.emit(f"{self.fresh()} = mir.slice {x.name} {{axis = "
                         f"{axis} : i64, start = {start} : i64, size = "
                         f"{size} : i64}} : {self.sig([x], (shape, x.dtype))}")

    def op_concat(self):
        x = self.pick(lambda v: len(v.shape) >= 1,
                      lambda: self.new_input(self.rand_shape()))
        axis = self.r.randrange(len(x.shape))
        parts = [x]
        for _ in range(self.r.randint(1, 2)):
            shape = x.shape[:axis] + (self.r.choice(DIMS[:6]),) + \
                x.shape[axis + 1:]
            parts.append(self.pick(
                lambda v: v.dtype == x.dtype and len(v.shape) == len(
                    x.shape) and all(a == b for i, (a, b) in enumerate(
                        zip(v.shape, x.shape)) if i != axis),
                lambda: self.new_input(shape, x.dtype)))
        self.r.shuffle(parts)
        shape = list(x.shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        names = ", ".join(p.name for p in parts)
        return self.emit(f"{self.fresh()} = mir.concat {names} {{axis = "
                         f"{axis} : i64}} : "
                         f"{self.sig(parts, (tuple(shape), x.dtype))}")

    def op_gather(self):
        table = self.pick(lambda v: self.floats(v) and 1 <= len(v.shape) <= 3,
                          lambda: self.new_input(
                              (self.r.choice([5, 16, 50]),
                               self.r.choice(DIMS)), weight=True))
        axis = self.r.randrange(len(table.shape))
        ids = self.new_input(self.rand_shape(self.r.randint(1, 2), 64),
                             self.r.choice(["i32", "i64"]), lo=0,
                             hi=table.shape[axis])
        shape = table.shape[:axis] + ids.shape + table.shape[axis + 1:]
        return self.emit(f"{self.fresh()} = mir.gather {table.name}, "
                         f"{ids.name} {{axis = {axis} : i64}} : "
                         f"{self.sig([table, ids], (shape, 'f32'))}")

    def op_iota_constant(self):
        shape = self.rand_shape(self.r.randint(1, 3), 256)
        dt = self.r.choice(["f32", "i32", "i64"])
        if self.r.random() < 0.5:
            return self.emit(f"{self.fresh()} = mir.iota {{axis = "
                             f"{self.r.randrange(len(shape))} : i64}} : "
                             f"{ttype(shape, dt)}")
        if self.r.random() < 0.5:
            value = (f"{self.r.uniform(-2, 2):.4f}" if dt == "f32"
                     else str(self.r.randint(-5, 5)))
        else:
            value = dense_literal(self.data(shape, dt).tolist())
        return self.emit(f"{self.fresh()} = mir.constant dense<{value}> : "
                         f"{ttype(shape, dt)}")

    def op_glu(self):
        x = self.pick(lambda v: self.floats(v) and len(v.shape) >= 1 and
                      v.shape[-1] % 2 == 0,
                      lambda: self.new_input(self.rand_shape()[:-1] +
                                             (2 * self.r.choice(DIMS),)))
        act = self.r.choice(list(ACTIVATIONS)[1:])
        shape = x.shape[:-1] + (x.shape[-1] // 2,)
        return self.emit(f"{self.fresh()} = mir.fused_glu {x.name} "
                         f"{{activation = #mir<activation {act}>}} : "
                         f"{self.sig([x], (shape, 'f32'))}")

    def attn_shapes(self):
        b, tq = self.r.choice([1, 2]), self.r.choice([1, 3, 5, 8])
        tk = tq if self.r.random() < 0.6 else tq + self.r.choice([1, 4])
        kv = self.r.choice([1, 2])
        h = kv * self.r.choice([1, 2])
        hd = self.r.choice([4, 8, 16])
        return b, tq, tk, h, kv, hd

    def op_rope(self, dialect="mir"):
        b, t, _, h, _, hd = self.attn_shapes()
        x = self.pick(lambda v: self.floats(v) and len(v.shape) == 3 and
                      v.shape[-1] % 4 == 0,
                      lambda: self.new_input((b, t, h * hd)))
        hd = self.r.choice([d for d in (2, 4, 8, 16) if x.shape[-1] % d == 0])
        rot = self.r.choice([r for r in range(2, hd + 1, 2)])
        pshape = self.r.choice([(x.shape[1],), x.shape[:2]])
        pos = self.new_input(pshape, self.r.choice(["i32", "i64"]), lo=0,
                             hi=300)
        ops, groups = [x, pos], ""
        if self.r.random() < 0.2:
            f = self.new_input((rot // 2,), scale=0.3, weight=True)
            ops.append(f)
            groups = f" inv_freq({f.name})"
        style = self.r.choice(["half", "interleaved"])
        theta = self.r.choice(["10000.0", "500000.0", "100.0"])
        return self.emit(
            f"{self.fresh()} = {dialect}.rope {x.name}, {pos.name}{groups} "
            f"{{head_dim = {hd} : i64, rotary_dim = {rot} : i64, theta = "
            f"{theta} : f32, style = #{dialect}<rope_style {style}>}} : "
            f"{self.sig(ops, x.type)}")

    def op_attention(self, dialect="mir"):
        b, tq, tk, h, kv, hd = self.attn_shapes()
        q = self.pick(lambda v: self.floats(v) and v.shape == (b, tq, h * hd),
                      lambda: self.new_input((b, tq, h * hd)))
        k = self.pick(lambda v: self.floats(v) and v.shape == (b, tk, kv * hd),
                      lambda: self.new_input((b, tk, kv * hd)))
        v = self.pick(lambda u: self.floats(u) and u.shape == (b, tk, kv * hd),
                      lambda: self.new_input((b, tk, kv * hd)))
        kind = self.r.choice(["causal", "causal", "none", "sliding_window",
                              "padding"])
        ops, groups = [q, k, v], ""
        if kind == "padding" or (kind != "none" and self.r.random() < 0.2):
            # Every query keeps at least its own key (pos(i) = tk - tq + i).
            m = self.new_input((b, tk), "i32", lo=0, hi=2)
            m.data[:, tk - tq:] = 1
            self.inputs[m.name[1:]][:, tk - tq:] = 1
            ops.append(m)
            groups = f" mask({m.name})"
        attrs = [f"num_heads = {h} : i64", f"num_kv_heads = {kv} : i64",
                 f"head_dim = {hd} : i64"]
        if dialect == "mir" or self.r.random() < 0.5:
            attrs.append(f"scale = {self.r.choice([0.125, 0.25, 0.5])} : f32")
        if self.r.random() < 0.3:
            attrs.append(f"softcap = {self.r.choice([5.0, 30.0])} : f32")
        attrs.append(f"mask_kind = #{dialect}<mask {kind}>")
        if kind == "sliding_window":
            attrs.append(f"window = {self.r.randint(1, 4)} : i64")
        return self.emit(f"{self.fresh()} = {dialect}.attention {q.name}, "
                         f"{k.name}, {v.name}{groups} {{{', '.join(attrs)}}}"
                         f" : {self.sig(ops, q.type)}")

    # HIR ops ---------------------------------------------------------------

    def act3(self):
        """An activation [B, T, H]."""
        return self.pick(lambda v: self.floats(v) and len(v.shape) == 3,
                         lambda: self.new_input(
                             (self.r.choice([1, 2]), self.r.choice([1, 3, 7]),
                              self.r.choice([4, 8, 16, 24]))))

    def hparam(self, shape, scale=1.0):
        arr = self.data(shape, "f32", scale)
        name = f"w{len(self.params)}"
        self.params[name] = arr
        v = Val(self.fresh(), shape, "f32", result_value(arr, "f32"))
        self.lines.append(f'{v.name} = hir.param "{name}" : {v.type}')
        self.weights.append(v)
        return v

    def hir_norm(self):
        x = self.act3()
        n = x.shape[-1]
        w = self.hparam((n,))
        op = self.r.choice(["rms_norm", "gemma_rms_norm", "layer_norm",
                            "layer_scale"])
        if op == "layer_norm":
            b = self.hparam((n,))
            return self.emit(f"{self.fresh()} = hir.layer_norm {x.name}, "
                             f"{w.name}, {b.name} {{epsilon = 1.0e-05 : "
                             f"f32}} : {self.sig([x, w, b], x.type)}")
        attr = " {epsilon = 1.0e-06 : f32}" if op != "layer_scale" and \
            self.r.random() < 0.5 else ""
        return self.emit(f"{self.fresh()} = hir.{op} {x.name}, {w.name}"
                         f"{attr} : {self.sig([x, w], x.type)}")

    def hir_linear(self):
        x = self.act3()
        k, n = x.shape[-1], self.r.choice([4, 8, 16, 24])
        w = self.hparam((n, k), 1 / math.sqrt(k))
        ops, groups = [x, w], ""
        if self.r.random() < 0.5:
            b = self.hparam((n,))
            ops.append(b)
            groups = f" bias({b.name})"
        act = self.r.choice(list(ACTIVATIONS))
        attr = f" {{activation = #hir<activation {act}>}}" if act != "none" \
            else ""
        return self.emit(f"{self.fresh()} = hir.linear {x.name}, {w.name}"
                         f"{groups}{attr} : "
                         f"{self.sig(ops, (x.shape[:-1] + (n,), 'f32'))}")

    def hir_ffn(self):
        x = self.act3()
        h, i = x.shape[-1], self.r.choice([8, 16, 32])
        op = self.r.choice(["swiglu", "geglu", "gelu_ffn"])
        if op == "gelu_ffn":
            ws = [self.hparam((i, h), 1 / math.sqrt(h)), self.hparam((i,)),
                  self.hparam((h, i), 1 / math.sqrt(i)), self.hparam((h,))]
            attr = " {tanh_approx}" if self.r.random() < 0.5 else ""
        else:
            ws = [self.hparam((i, h), 1 / math.sqrt(h)),
                  self.hparam((i, h), 1 / math.sqrt(h)),
                  self.hparam((h, i), 1 / math.sqrt(i))]
            attr = ""
        names = ", ".join(v.name for v in [x] + ws)
        return self.emit(f"{self.fresh()} = hir.{op} {names}{attr} : "
                         f"{self.sig([x] + ws, x.type)}")

    def hir_add(self):
        x = self.act3()
        y = self.pick(lambda v: self.floats(v) and v.shape == x.shape,
                      lambda: self.new_input(x.shape))
        return self.emit(f"{self.fresh()} = hir.add {x.name}, {y.name} : "
                         f"{self.sig([x, y], x.type)}")

    def hir_scale(self):
        x = self.act3()
        if self.r.random() < 0.5:
            return self.emit(f"{self.fresh()} = hir.embed_scale {x.name} "
                             f"{{scale = 2.5 : f32}} : "
                             f"{self.sig([x], x.type)}")
        return self.emit(f"{self.fresh()} = hir.logit_softcap {x.name} "
                         f"{{cap = 3.0 : f32}} : {self.sig([x], x.type)}")

    def hir_embed(self):
        vocab, hidden = self.r.choice([10, 50]), self.r.choice([8, 16])
        table = self.hparam((vocab, hidden))
        ids = self.new_input((self.r.choice([1, 2]), self.r.choice([1, 3, 7])),
                             "i32", lo=0, hi=vocab)
        out = (ids.shape + (hidden,), "f32")
        return self.emit(f"{self.fresh()} = hir.embed {ids.name}, "
                         f"{table.name} : {self.sig([ids, table], out)}")

    def hir_head(self):
        x = self.act3()
        b, t, h = x.shape
        op = self.r.choice(["gather_last_token", "cls_pool", "mean_pool",
                            "lm_head"])
        if op == "gather_last_token":
            return self.emit(f"{self.fresh()} = hir.{op} {x.name} : "
                             f"{self.sig([x], ((b, 1, h), 'f32'))}")
        if op == "lm_head":
            w = self.hparam((self.r.choice([10, 33]), h))
            out = ((b, t, w.shape[0]), "f32")
            return self.emit(f"{self.fresh()} = hir.lm_head {x.name}, "
                             f"{w.name} : {self.sig([x, w], out)}")
        if op == "mean_pool" and self.r.random() < 0.5:
            m = self.new_input((b, t), "i32", lo=0, hi=2)
            return self.emit(f"{self.fresh()} = hir.mean_pool {x.name} "
                             f"mask({m.name}) : "
                             f"{self.sig([x, m], ((b, h), 'f32'))}")
        return self.emit(f"{self.fresh()} = hir.{op} {x.name} : "
                         f"{self.sig([x], ((b, h), 'f32'))}")

    # The function ----------------------------------------------------------

    def build(self, n_ops):
        mir_ops = [
            (self.op_unary, 4), (self.op_binary, 5),
            (self.op_compare_select, 1), (self.op_cast, 1),
            (self.op_reduce, 2), (self.op_softmax, 2), (self.op_norm, 2),
            (self.op_fused_residual_norm, 1), (self.op_matmul, 3),
            (lambda: self.op_matmul(fused=True), 1),
            (self.op_batch_matmul, 1), (self.op_transpose, 2),
            (self.op_reshape, 2), (self.op_broadcast, 1), (self.op_slice, 2),
            (self.op_concat, 2), (self.op_gather, 1),
            (self.op_iota_constant, 1), (self.op_glu, 1), (self.op_rope, 1),
            (self.op_attention, 1)]
        hir_ops = [
            (self.hir_norm, 3), (self.hir_linear, 3), (self.hir_ffn, 2),
            (self.hir_add, 2), (self.hir_scale, 1), (self.hir_embed, 1),
            (self.hir_head, 1), (lambda: self.op_rope("hir"), 1),
            (lambda: self.op_attention("hir"), 2), (self.op_unary, 1),
            (self.op_binary, 1), (self.op_softmax, 1)]
        ops = hir_ops if self.hir else mir_ops
        fns, weights = zip(*ops)
        made, tries = 0, 0
        while made < n_ops and tries < 20 * n_ops:
            tries += 1
            saved = (list(self.args), list(self.lines), list(self.vals),
                     list(self.weights), dict(self.inputs), dict(self.params),
                     self.counter)
            try:
                self.r.choices(fns, weights)[0]()
                made += 1
            except Skip:
                (self.args, self.lines, self.vals, self.weights, self.inputs,
                 self.params, self.counter) = saved
        if not self.vals:
            self.op_unary()
        # Outputs: the last value, and up to two others never used.
        used = set()
        for line in self.lines:
            used.update(re.findall(r"%[\w.]+", line.split("=", 1)[1]))
        outs = [self.vals[-1]]
        spare = [v for v in self.vals[:-1] if v.name not in used]
        outs += self.r.sample(spare, min(len(spare), self.r.randint(0, 2)))
        self.prune_dead_params(outs)
        return self.text(outs)

    def prune_dead_params(self, outs):
        """Drops the parameters no output needs and the dead ops that read
        them: rlx-run refuses a --param the compiled model does not have
        (dead ops on inputs stay, for DCE to remove)."""
        uses = {}
        for line in self.lines:
            lhs, rhs = line.split("=", 1)
            for r in re.findall(r"%[\w.]+", lhs):
                uses[r] = re.findall(r"%[\w.]+", rhs.split(" : ")[0])
        live, todo = set(), [v.name for v in outs]
        while todo:
            v = todo.pop()
            if v not in live:
                live.add(v)
                todo += uses.get(v, [])
        tainted, kept = set(), []
        for line in self.lines:
            lhs, rhs = line.split("=", 1)
            results = re.findall(r"%[\w.]+", lhs)
            operands = re.findall(r"%[\w.]+", rhs.split(" : ")[0])
            if not any(r in live for r in results) and (
                    ".param " in rhs or tainted & set(operands)):
                tainted.update(results)
                m = re.search(r'\.param "(\w+)"', rhs)
                if m:
                    del self.params[m.group(1)]
                continue
            kept.append(line)
        self.lines = kept

    def text(self, outs):
        args = ", ".join(f'{v.name}: {v.type} {{rlx.name = "{v.name[1:]}"}}'
                         for v in self.args)
        res = ", ".join(f'{v.type} {{rlx.name = "out{i}"}}'
                        for i, v in enumerate(outs))
        body = "".join(f"  {line}\n" for line in self.lines)
        ret = (f"  return {', '.join(v.name for v in outs)} : "
               f"{', '.join(v.type for v in outs)}\n")
        return f"func.func @f({args}) -> ({res}) {{\n{body}{ret}}}\n"


def dense_literal(x):
    """A nested list as MLIR writes it in dense<...>: every float with a
    point and an exponent, so that it parses as the f32 it came from."""
    if isinstance(x, list):
        return "[" + ", ".join(dense_literal(e) for e in x) + "]"
    return f"{x:.9e}" if isinstance(x, float) else str(x)


def _broadcasts(shape, other):
    """Whether `other` broadcasts to `shape` without growing it."""
    try:
        return np.broadcast_shapes(shape, other) == tuple(shape)
    except ValueError:
        return False


def generate(seed, hir_fraction=0.25):
    """(program text, inputs, params) of program `seed`."""
    r = random.Random(seed ^ 0x5eed)
    hir = r.random() < hir_fraction
    g = Generator(seed, hir)
    text = g.build(r.randint(2, 10))
    return text, g.inputs, g.params


def run_options(seed):
    """rlx-run flags for program `seed`: the fusion policy (the profile's,
    direct or fusable), and whether the CPU also runs it through an AOT
    library (one program in eight)."""
    r = random.Random(seed ^ 0xf1a9)
    policy = r.choice([None, "direct", "fusable"])
    return (["--policy", policy] if policy else []), r.random() < 0.125


#===----------------------------------------------------------------------===#
# Running and comparing
#===----------------------------------------------------------------------===#

def compare(got, want, rtol=RTOL, atol=ATOL):
    """None if `got` matches `want`, else why not."""
    if set(got) != set(want):
        return f"outputs {sorted(got)} instead of {sorted(want)}"
    for name in sorted(want):
        g, w = got[name], want[name]
        if g.shape != w.shape or g.dtype != w.dtype:
            return (f"{name}: {g.dtype}{list(g.shape)} instead of "
                    f"{w.dtype}{list(w.shape)}")
        if np.issubdtype(w.dtype, np.floating):
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            scale = max(1.0, float(np.nanmax(np.abs(w64)))) if w.size else 1
            bad = ~(np.abs(g64 - w64) <= rtol * np.abs(w64) + atol * scale)
            bad &= ~(np.isnan(g64) & np.isnan(w64))
            if np.any(bad):
                i = np.unravel_index(np.argmax(bad), w.shape)
                return (f"{name}: {int(bad.sum())} of {w.size} values off, "
                        f"first at {list(map(int, i))}: {g[i]!r} instead of "
                        f"{w[i]!r} (scale {scale:.3g})")
        elif not np.array_equal(g, w):
            bad = g != w
            i = np.unravel_index(np.argmax(bad), w.shape)
            return (f"{name}: {int(bad.sum())} of {w.size} values differ, "
                    f"first at {list(map(int, i))}: {g[i]!r} instead of "
                    f"{w[i]!r}")
    return None


def write_case(d, text, inputs, params, flags=()):
    d.mkdir(parents=True, exist_ok=True)
    (d / "program.mlir").write_text(text)
    (d / "flags.txt").write_text(" ".join(flags))
    for name, arr in inputs.items():
        np.save(d / f"input_{name}.npy", arr)
    for name, arr in params.items():
        np.save(d / f"param_{name}.npy", arr)


def run_cmd(build, d, device, out_dir):
    cmd = [str(build / "bin" / "rlx-run"), str(d / "program.mlir"), "--quiet",
           "--output-dir", str(out_dir)]
    for f in sorted(d.glob("input_*.npy")):
        cmd += ["--input", f"{f.stem[len('input_'):]}={f}"]
    for f in sorted(d.glob("param_*.npy")):
        cmd += ["--param", f"{f.stem[len('param_'):]}={f}"]
    flags = d / "flags.txt"
    cmd += flags.read_text().split() if flags.exists() else []
    if device == "aot":
        cmd += ["--aot", str(d / "aot" / "model")]
    elif device != "cpu":
        cmd += ["--device", device]
    return cmd


def run_device(build, d, device):
    """(outputs, None) or (None, why) for one rlx-run."""
    out_dir = d / f"out_{device}"
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = run_cmd(build, d, device, out_dir)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, ("hang", f"no result after {RUN_TIMEOUT} s")
    (d / f"log_{device}.txt").write_text(p.stdout + p.stderr)
    if p.returncode < 0 or p.returncode > 1:
        return None, ("crash", f"exit {p.returncode}: {p.stderr[-2000:]}")
    if p.returncode != 0:
        return None, ("refused", p.stderr[-2000:])
    return {f.stem: np.load(f) for f in out_dir.glob("*.npy")}, None


def check_case(build, d, devices, want):
    """The findings [(kind, device, message)] of the case in `d`."""
    found, results = [], {}
    for dev in devices:
        got, err = run_device(build, d, dev)
        if err:
            found.append((err[0], dev, err[1].strip()))
            continue
        results[dev] = got
        why = compare(got, want)
        if why:
            found.append(("mismatch", dev, f"against the reference: {why}"))
    if "cpu" in results and not found:
        for dev in devices[1:]:
            why = compare(results[dev], results["cpu"])
            if why:
                found.append(("mismatch", dev, f"against the CPU: {why}"))
    return found


def repro_text(build, d, devices):
    lines = ["#!/bin/sh", "# Reproduce: each device's rlx-run, then the "
             "comparison with the NumPy reference.", "set -x"]
    for dev in devices:
        lines.append(" ".join(shlex.quote(c) for c in run_cmd(
            build, d, dev, d / f"out_{dev}")))
    lines.append(f"python3 {shlex.quote(str(ROOT / 'fuzz' / 'difffuzz.py'))}"
                 f" --replay {shlex.quote(str(d))}")
    return "\n".join(lines) + "\n"


def load_case(d):
    inputs = {f.stem[len("input_"):]: np.load(f)
              for f in sorted(d.glob("input_*.npy"))}
    params = {f.stem[len("param_"):]: np.load(f)
              for f in sorted(d.glob("param_*.npy"))}
    return (d / "program.mlir").read_text(), inputs, params


def vulkan_available(build):
    probe = build / "bin" / "rlx-vulkan-probe"
    if not probe.exists():
        return False, f"{probe} is not built"
    p = subprocess.run([str(probe)], capture_output=True, text=True)
    return p.returncode == 0, (p.stdout + p.stderr).strip()


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=None,
                    help="run for this long (default: --count programs)")
    ap.add_argument("--count", type=int, default=None,
                    help="programs to run (default 20, or unbounded with "
                         "--seconds)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="difffuzz-out",
                    help="where failing cases go")
    ap.add_argument("--build", default=os.environ.get(
        "RLX_BUILD_DIR", str(ROOT / "build")))
    ap.add_argument("--no-vulkan", action="store_true")
    ap.add_argument("--hir-fraction", type=float, default=0.25)
    ap.add_argument("--replay", metavar="DIR",
                    help="run a saved case again")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    build = pathlib.Path(args.build).resolve()
    if not (build / "bin" / "rlx-run").exists():
        print(f"difffuzz: {build}/bin/rlx-run is not built", file=sys.stderr)
        return 2
    devices = ["cpu"]
    if not args.no_vulkan:
        ok, why = vulkan_available(build)
        if ok:
            devices.append("vulkan")
        elif os.environ.get("RLX_REQUIRE_VULKAN") == "1":
            print(f"difffuzz: RLX_REQUIRE_VULKAN=1 but no Vulkan device: "
                  f"{why}", file=sys.stderr)
            return 2
        else:
            print(f"difffuzz: no Vulkan device ({why}); CPU only",
                  file=sys.stderr)

    if args.replay:
        d = pathlib.Path(args.replay).resolve()
        text, inputs, params = load_case(d)
        if (d / "log_aot.txt").exists():
            devices.append("aot")
        found = check_case(build, d, devices, interpret(text, inputs, params))
        for kind, dev, msg in found:
            print(f"{kind} on {dev}: {msg}")
        print("difffuzz: replay", "failed" if found else "passed")
        return 1 if found else 0

    out = pathlib.Path(args.out).resolve()
    count = args.count if args.count is not None else (
        None if args.seconds else 20)
    deadline = time.monotonic() + args.seconds if args.seconds else None
    seeds = random.Random(args.seed)
    stats = {"programs": 0, "hir": 0, "aot": 0, "ops": 0, "mismatch": 0,
             "crash": 0, "refused": 0, "hang": 0, "generator": 0}
    kinds = {}
    start = time.monotonic()
    i = 0
    with tempfile.TemporaryDirectory(prefix="difffuzz-") as tmp:
        while (count is None or i < count) and (
                deadline is None or time.monotonic() < deadline):
            pseed = seeds.getrandbits(32)
            i += 1
            try:
                text, inputs, params = generate(pseed, args.hir_fraction)
                want = interpret(text, inputs, params)
            except Exception as e:  # A bug of this script: say so, go on.
                stats["generator"] += 1
                print(f"difffuzz: generator error on program seed {pseed}: "
                      f"{type(e).__name__}: {e}", file=sys.stderr)
                continue
            stats["programs"] += 1
            stats["hir"] += "hir." in text
            body = [ln.strip() for ln in text.splitlines()[1:-2]]
            stats["ops"] += len(body)
            for ln in body:
                m = LINE_RE.match(ln)
                if m:
                    k = f"{m.group(2)}.{m.group(3)}"
                    kinds[k] = kinds.get(k, 0) + 1
            d = pathlib.Path(tmp) / f"p{pseed}"
            flags, aot = run_options(pseed)
            write_case(d, text, inputs, params, flags)
            run_on = devices + (["aot"] if aot else [])
            stats["aot"] += aot
            found = check_case(build, d, run_on, want)
            if args.verbose:
                print(f"program {i} (seed {pseed}): {len(body)} ops, "
                      f"{'FAIL' if found else 'ok'}")
            if found:
                case = out / f"seed{args.seed}-p{pseed}"
                shutil.rmtree(case, ignore_errors=True)
                shutil.copytree(d, case)
                (case / "repro.sh").write_text(
                    repro_text(build, case, run_on))
                (case / "findings.txt").write_text("".join(
                    f"{k} on {dev}: {msg}\n" for k, dev, msg in found))
                for kind, dev, msg in found:
                    stats[kind] += 1
                    print(f"difffuzz: {kind} on {dev}, program seed {pseed}: "
                          f"{' '.join(msg.split())[:300]}")
                print(f"  saved in {case}; reproduce: sh {case}/repro.sh")
            shutil.rmtree(d, ignore_errors=True)
    elapsed = time.monotonic() - start
    print(f"difffuzz: seed {args.seed}, {elapsed:.0f} s, devices "
          f"{'+'.join(devices)}: {stats['programs']} programs "
          f"({stats['hir']} HIR, {stats['aot']} also AOT), {stats['ops']} "
          f"ops; mismatches "
          f"{stats['mismatch']}, crashes {stats['crash']}, refused "
          f"{stats['refused']}, hangs {stats['hang']}, generator errors "
          f"{stats['generator']}")
    if args.verbose:
        print("ops:", ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    bad = sum(stats[k] for k in ("mismatch", "crash", "refused", "hang",
                                 "generator"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
