# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The gated delta rule (mir.gated_delta_rule, the recurrence of Gated
DeltaNet / Qwen3-Next linear attention) on the CPU and on Vulkan, against a
NumPy loop over the sequence written here (float64), itself checked against
transformers' torch_recurrent_gated_delta_rule and
torch_chunk_gated_delta_rule. Outputs and final states within 1e-5 relative
+ 1e-5 absolute of the reference (Vulkan also within assert_same_as_cpu's
bound of the CPU)."""

import numpy as np
import pytest

from conftest import assert_close, mlir_type

rng = np.random.default_rng(16)


@pytest.fixture(params=["cpu", "vulkan"])
def runner(request, rlx):
    if request.param == "vulkan":
        return request.getfixturevalue("vulkan_rlx")
    return rlx


def gdn_ref(q, k, v, g, beta, state=None, scale=None, l2norm=False):
    """(out [B, T, Hv, Dv], final state [B, Hv, Dk, Dv]) of the gated delta
    rule, one step at a time in float64. Value head h reads query/key head
    h // (Hv / Hk) (repeat_interleave)."""
    q, k, v, g, beta = (np.asarray(x, np.float64) for x in (q, k, v, g, beta))
    batch, steps, hk, dk = q.shape
    hv, dv = v.shape[2:]
    q = np.repeat(q, hv // hk, axis=2)
    k = np.repeat(k, hv // hk, axis=2)
    if l2norm:
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6)
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
    if scale is None:
        scale = 1 / np.sqrt(dk) if dk else 1.0  # Dk = 0: q is empty anyway
    q = q * scale
    s = (np.zeros((batch, hv, dk, dv)) if state is None
         else np.array(state, np.float64))
    out = np.zeros((batch, steps, hv, dv))
    for t in range(steps):
        s = s * np.exp(g[:, t])[..., None, None]
        kv = np.einsum("bhij,bhi->bhj", s, k[:, t])
        delta = (v[:, t] - kv) * beta[:, t][..., None]
        s = s + k[:, t][..., :, None] * delta[..., None, :]
        out[:, t] = np.einsum("bhij,bhi->bhj", s, q[:, t])
    return out, s


def make_inputs(batch, steps, hk, hv, dk, dv, l2norm, with_state):
    """Inputs in the ranges a Qwen3-Next layer gives: beta = sigmoid(.),
    g = -softplus(.) (a decay in (0, 1)); without the l2 norm, keys of about
    unit norm so that the recurrence stays bounded."""
    q = rng.standard_normal((batch, steps, hk, dk)).astype(np.float32)
    k = rng.standard_normal((batch, steps, hk, dk)).astype(np.float32)
    if not l2norm:
        q /= np.float32(np.sqrt(dk))
        k /= np.float32(np.sqrt(dk))
    v = rng.standard_normal((batch, steps, hv, dv)).astype(np.float32)
    g = (-np.log1p(np.exp(rng.standard_normal((batch, steps, hv))))).astype(
        np.float32)
    beta = (1 / (1 + np.exp(-rng.standard_normal((batch, steps, hv))))).astype(
        np.float32)
    state = (rng.standard_normal((batch, hv, dk, dv)).astype(np.float32) * 0.1
             if with_state else None)
    return q, k, v, g, beta, state


def gdn_module(shapes, with_state, scale=None, l2norm=False):
    """A module running one gated_delta_rule over inputs q, k, v, g, beta
    (and s0) of `shapes`; outputs o and s."""
    names = ["q", "k", "v", "g", "beta"] + (["s0"] if with_state else [])
    types = [shapes[n] for n in names]
    b, t, hv, dv = (int(d) for d in shapes["v"][7:-5].split("x"))
    dk = int(shapes["q"][7:-5].split("x")[3])
    ot = f"tensor<{b}x{t}x{hv}x{dv}xf32>"
    st = f"tensor<{b}x{hv}x{dk}x{dv}xf32>"
    attrs = []
    if scale is not None:
        attrs.append(f"scale = {scale!r} : f32")
    if l2norm:
        attrs.append("qk_l2norm")
    attr = f" {{{', '.join(attrs)}}}" if attrs else ""
    init = " initial_state(%s0)" if with_state else ""
    args = ", ".join(f'%{n}: {t} {{rlx.name = "{n}"}}'
                     for n, t in zip(names, types))
    return (f"func.func @f({args}) -> ({ot} {{rlx.name = \"o\"}}, "
            f"{st} {{rlx.name = \"s\"}}) {{\n"
            f"  %o, %s = mir.gated_delta_rule %q, %k, %v, %g, %beta{init}{attr}"
            f" : ({', '.join(types)}) -> ({ot}, {st})\n"
            f"  return %o, %s : {ot}, {st}\n}}\n")


def run_gdn(runner, q, k, v, g, beta, state=None, scale=None, l2norm=False):
    inputs = {"q": q, "k": k, "v": v, "g": g, "beta": beta}
    if state is not None:
        inputs["s0"] = state
    src = gdn_module({n: mlir_type(a) for n, a in inputs.items()},
                     state is not None, scale, l2norm)
    out = runner.run(src, inputs)
    return out["o"], out["s"]


def check_gdn(runner, batch, steps, hk, hv, dk, dv, l2norm, with_state,
              scale=None):
    q, k, v, g, beta, state = make_inputs(batch, steps, hk, hv, dk, dv,
                                          l2norm, with_state)
    o, s = run_gdn(runner, q, k, v, g, beta, state, scale, l2norm)
    ro, rs = gdn_ref(q, k, v, g, beta, state, scale, l2norm)
    assert_close(o, ro.astype(np.float32))
    assert_close(s, rs.astype(np.float32))


@pytest.mark.parametrize(
    "batch,steps,hk,hv,dk,dv,l2norm,with_state,scale", [
        # Prefill (T = 37), odd head dims, Hk == Hv and Hv = 2 Hk.
        (2, 37, 2, 2, 12, 20, True, False, None),
        (2, 37, 2, 4, 12, 20, False, True, 0.3),
        (2, 37, 1, 2, 20, 12, True, True, None),
        (2, 37, 2, 2, 64, 128, False, False, None),
        (1, 37, 2, 4, 128, 128, True, True, None),
        (2, 37, 2, 4, 128, 64, True, False, 0.125),
        # Decode (T = 1) from a carried state.
        (2, 1, 2, 4, 64, 128, True, True, None),
        (2, 1, 2, 2, 12, 20, False, True, 0.5),
        (2, 1, 1, 1, 128, 128, True, False, None),
    ])
def test_gated_delta_rule(runner, batch, steps, hk, hv, dk, dv, l2norm,
                          with_state, scale):
    check_gdn(runner, batch, steps, hk, hv, dk, dv, l2norm, with_state, scale)


def test_odd_columns(runner):
    """Dv with no vector-width divisor (scalar columns on the CPU), Dk = 1."""
    check_gdn(runner, 2, 5, 1, 3, 1, 7, True, True)
    check_gdn(runner, 1, 4, 3, 3, 5, 3, False, False, 0.7)


def test_empty_sequence(runner):
    """T = 0: no output rows, the final state is the initial state."""
    q, k, v, g, beta, state = make_inputs(2, 0, 2, 4, 12, 20, True, True)
    o, s = run_gdn(runner, q, k, v, g, beta, state, l2norm=True)
    assert o.shape == (2, 0, 4, 20)
    assert_close(s, state)


def test_prefill_then_decode(runner):
    """A prefill of 37 tokens, then two decode steps each fed the previous
    final_state (one module chaining the three ops, and the decode as a
    separate run fed the prefill's state), equal one call over the 39
    tokens."""
    batch, hk, hv, dk, dv = 2, 2, 4, 64, 128
    q, k, v, g, beta, _ = make_inputs(batch, 39, hk, hv, dk, dv, True, False)
    ro, rs = gdn_ref(q, k, v, g, beta, l2norm=True)

    def part(a, lo, hi):
        return np.ascontiguousarray(a[:, lo:hi])

    # One module: prefill, decode, decode.
    inputs, ops, outs = {}, [], []
    state = None
    for i, (lo, hi) in enumerate([(0, 37), (37, 38), (38, 39)]):
        names = []
        for n, a in zip(["q", "k", "v", "g", "beta"], [q, k, v, g, beta]):
            inputs[f"{n}{i}"] = part(a, lo, hi)
            names.append(f"{n}{i}")
        types = [mlir_type(inputs[n]) for n in names]
        ot = f"tensor<{batch}x{hi - lo}x{hv}x{dv}xf32>"
        st = f"tensor<{batch}x{hv}x{dk}x{dv}xf32>"
        init = f" initial_state(%s{i - 1})" if state else ""
        ops.append(f"  %o{i}, %s{i} = mir.gated_delta_rule "
                   + ", ".join(f"%{n}" for n in names) + init +
                   " {qk_l2norm} : (" + ", ".join(types + ([st] if state else []))
                   + f") -> ({ot}, {st})")
        outs.append((f"%o{i}", ot, f"o{i}"))
        state = st
    outs.append(("%s2", state, "s"))
    args = ", ".join(f'%{n}: {mlir_type(a)} {{rlx.name = "{n}"}}'
                     for n, a in inputs.items())
    src = (f"func.func @f({args}) -> ("
           + ", ".join(f'{t} {{rlx.name = "{n}"}}' for _, t, n in outs)
           + ") {\n" + "\n".join(ops) + "\n  return "
           + ", ".join(v for v, _, _ in outs) + " : "
           + ", ".join(t for _, t, _ in outs) + "\n}\n")
    out = runner.run(src, inputs)
    chained = np.concatenate([out["o0"], out["o1"], out["o2"]], axis=1)
    assert_close(chained, ro.astype(np.float32))
    assert_close(out["s"], rs.astype(np.float32))

    # Separate runs: the decode step reads the prefill's final_state.
    o0, s0 = run_gdn(runner, *(part(a, 0, 38) for a in (q, k, v, g, beta)),
                     l2norm=True)
    o1, s1 = run_gdn(runner, *(part(a, 38, 39) for a in (q, k, v, g, beta)),
                     state=s0, l2norm=True)
    assert_close(np.concatenate([o0, o1], axis=1), ro.astype(np.float32))
    assert_close(s1, rs.astype(np.float32))


def test_splat_constant_operands(runner):
    """A splat constant beta and g (bound as memory, not as a scalar)."""
    q, k, v, g, beta, _ = make_inputs(1, 6, 2, 2, 12, 20, True, False)
    ot, st = "tensor<1x6x2x20xf32>", "tensor<1x2x12x20xf32>"
    tq, tv, tg = mlir_type(q), mlir_type(v), mlir_type(g)
    src = (f'func.func @f(%q: {tq} {{rlx.name = "q"}}, %k: {tq} '
           f'{{rlx.name = "k"}}, %v: {tv} {{rlx.name = "v"}}) -> '
           f'({ot} {{rlx.name = "o"}}, {st} {{rlx.name = "s"}}) {{\n'
           f"  %g = mir.constant dense<-0.25> : {tg}\n"
           f"  %b = mir.constant dense<0.5> : {tg}\n"
           f"  %o, %s = mir.gated_delta_rule %q, %k, %v, %g, %b {{qk_l2norm}}"
           f" : ({tq}, {tq}, {tv}, {tg}, {tg}) -> ({ot}, {st})\n"
           f"  return %o, %s : {ot}, {st}\n}}\n")
    out = runner.run(src, {"q": q, "k": k, "v": v})
    ro, rs = gdn_ref(q, k, v, np.full(g.shape, -0.25), np.full(g.shape, 0.5),
                     l2norm=True)
    assert_close(out["o"], ro.astype(np.float32))
    assert_close(out["s"], rs.astype(np.float32))


def test_f16_refused(rlx):
    """Only f32: an f16 query is refused by the verifier, naming the op."""
    q = rng.standard_normal((1, 2, 1, 4)).astype(np.float16)
    v = rng.standard_normal((1, 2, 1, 4)).astype(np.float32)
    g = np.zeros((1, 2, 1), np.float32)
    src = gdn_module({"q": mlir_type(q), "k": mlir_type(q), "v": mlir_type(v),
                      "g": mlir_type(g), "beta": mlir_type(g)}, False)
    err = rlx.run(src, {"q": q, "k": q, "v": v, "g": g, "beta": g},
                  expect_fail=True)
    assert "'mir.gated_delta_rule' op operand #0 must be ranked tensor of " \
           "32-bit float values" in err, err


@pytest.mark.parametrize("l2norm,with_state,grouped", [
    (True, True, True), (False, False, False)])
def test_reference_matches_transformers(rlx, l2norm, with_state, grouped):
    """The NumPy reference equals transformers' recurrent and chunked
    torch implementations (default scale 1 / sqrt(Dk)), and RLX equals it."""
    torch = pytest.importorskip("torch")
    qwen = pytest.importorskip(
        "transformers.models.qwen3_next.modeling_qwen3_next")
    hk, hv = (2, 4) if grouped else (2, 2)
    q, k, v, g, beta, state = make_inputs(2, 37, hk, hv, 64, 32, l2norm,
                                          with_state)
    ro, rs = gdn_ref(q, k, v, g, beta, state, l2norm=l2norm)
    t = [torch.from_numpy(a) for a in (q, k, v, g, beta)]
    init = None if state is None else torch.from_numpy(state)
    for fn, kw in [(qwen.torch_recurrent_gated_delta_rule, {}),
                   (qwen.torch_chunk_gated_delta_rule, {"chunk_size": 16})]:
        o, s = fn(*t, initial_state=init, output_final_state=True,
                  use_qk_l2norm_in_kernel=l2norm, **kw)
        assert_close(o.numpy(), ro.astype(np.float32))
        assert_close(s.numpy(), rs.astype(np.float32))
    o, s = run_gdn(rlx, q, k, v, g, beta, state, l2norm=l2norm)
    assert_close(o, ro.astype(np.float32))
    assert_close(s, rs.astype(np.float32))


def test_strided_views(runner):
    """q, k and v as slices of one fused projection [B, T, H, 2 Dk + Dv]
    (Qwen3-Next splits its in_proj_qkvz so), q also with a unit-less inner
    stride (a transpose of [B, T, Dk, Hk]), g a transpose of [B, Hv, T]."""
    batch, steps, heads, dk, dv = 2, 9, 2, 12, 20
    q, k, v, g, beta, state = make_inputs(batch, steps, heads, heads, dk, dv,
                                          True, True)
    x = np.concatenate([q, k, v], axis=-1)
    qt = np.ascontiguousarray(q.transpose(0, 1, 3, 2))
    gt = np.ascontiguousarray(g.transpose(0, 2, 1))
    tx, tq, tg = mlir_type(x), mlir_type(qt), mlir_type(gt)
    tqk, tv, tb = mlir_type(q), mlir_type(v), mlir_type(beta)
    ts = mlir_type(state)
    src = (f'func.func @f(%x: {tx} {{rlx.name = "x"}}, %qt: {tq} '
           f'{{rlx.name = "qt"}}, %gt: {tg} {{rlx.name = "gt"}}, %beta: {tb} '
           f'{{rlx.name = "beta"}}, %s0: {ts} {{rlx.name = "s0"}}) -> '
           f'({tv} {{rlx.name = "o"}}, {ts} {{rlx.name = "s"}}, {tv} '
           f'{{rlx.name = "o2"}}, {ts} {{rlx.name = "s2"}}) {{\n'
           f"  %q = mir.slice %x {{axis = 3 : i64, start = 0 : i64, size = {dk} : i64}}"
           f" : ({tx}) -> {tqk}\n"
           f"  %k = mir.slice %x {{axis = 3 : i64, start = {dk} : i64, size = {dk} : i64}}"
           f" : ({tx}) -> {tqk}\n"
           f"  %v = mir.slice %x {{axis = 3 : i64, start = {2 * dk} : i64, size = {dv} : i64}}"
           f" : ({tx}) -> {tv}\n"
           f"  %q2 = mir.transpose %qt {{permutation = array<i64: 0, 1, 3, 2>}}"
           f" : ({tq}) -> {tqk}\n"
           f"  %g = mir.transpose %gt {{permutation = array<i64: 0, 2, 1>}}"
           f" : ({tg}) -> {tb}\n"
           f"  %o, %s = mir.gated_delta_rule %q, %k, %v, %g, %beta initial_state(%s0)"
           f" {{qk_l2norm}} : ({tqk}, {tqk}, {tv}, {tb}, {tb}, {ts}) -> ({tv}, {ts})\n"
           f"  %o2, %s2 = mir.gated_delta_rule %q2, %k, %v, %g, %beta initial_state(%s0)"
           f" {{qk_l2norm}} : ({tqk}, {tqk}, {tv}, {tb}, {tb}, {ts}) -> ({tv}, {ts})\n"
           f"  return %o, %s, %o2, %s2 : {tv}, {ts}, {tv}, {ts}\n}}\n")
    out = runner.run(src, {"x": x, "qt": qt, "gt": gt, "beta": beta,
                           "s0": state})
    ro, rs = gdn_ref(q, k, v, g, beta, state, l2norm=True)
    for o, s in [("o", "s"), ("o2", "s2")]:
        assert_close(out[o], ro.astype(np.float32))
        assert_close(out[s], rs.astype(np.float32))
