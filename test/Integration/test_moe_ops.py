# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The routing ops of mixture-of-experts layers (mir.top_k,
mir.grouped_matmul), on the CPU and on Vulkan, against NumPy references
written here: a stable sort for top_k (exact: it selects, it does not
compute) and a per-row loop over the selected matrices for grouped_matmul
(1e-5 relative + 1e-5 absolute; summation order differs)."""

import numpy as np
import pytest

from conftest import assert_close, mlir_type

rng = np.random.default_rng(77)


@pytest.fixture(params=["cpu", "vulkan"])
def runner(request, rlx):
    if request.param == "vulkan":
        return request.getfixturevalue("vulkan_rlx")
    return rlx


def top_k_ref(x, k, axis, largest):
    """torch.topk(sorted=True) with ties in index order, NaN above numbers
    under `largest` and below them otherwise."""
    x = np.moveaxis(x, axis, -1)
    if np.issubdtype(x.dtype, np.floating):
        key = np.where(np.isnan(x), np.inf, x).astype(np.float64)
        nan = np.isnan(x)
        # NaNs first (largest) or last (smallest), numbers by value.
        key = -key if largest else key
        key = np.where(nan, -np.inf if largest else np.inf, key)
    else:
        key = -x.astype(np.int64) if largest else x.astype(np.int64)
    order = np.argsort(key, axis=-1, kind="stable")[..., :k]
    vals = np.take_along_axis(x, order, -1)
    return np.moveaxis(vals, -1, axis), np.moveaxis(order, -1, axis)


def to_bf16(x):
    """bf16 as rlx-run reads it (the raw bits as '|V2'), rounded to nearest
    even, and the float32 values it holds."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return bits.view("V2"), (bits.astype(np.uint32) << 16).view(np.float32)


def from_bf16(a):
    return (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def run_top_k(runner, x, k, axis, largest=True):
    if x.dtype == np.dtype("V2"):
        vals, idx = top_k_ref(from_bf16(x), k, axis, largest)
        vals = to_bf16(vals)[0]
    else:
        vals, idx = top_k_ref(x, k, axis, largest)
    t, vt, it = mlir_type(x), mlir_type(vals), mlir_type(idx)
    flag = "" if largest else ", largest = false"
    src = (f'func.func @f(%x: {t} {{rlx.name = "x"}}) -> '
           f'({vt} {{rlx.name = "v"}}, {it} {{rlx.name = "i"}}) {{\n'
           f"  %v, %i = mir.top_k %x {{k = {k} : i64, axis = {axis} : i64{flag}}}"
           f" : ({t}) -> ({vt}, {it})\n"
           f"  return %v, %i : {vt}, {it}\n}}\n")
    out = runner.run(src, {"x": x})
    np.testing.assert_array_equal(out["i"], idx)
    if vals.dtype == np.dtype("V2"):
        np.testing.assert_array_equal(from_bf16(out["v"]), from_bf16(vals))
    else:
        np.testing.assert_array_equal(out["v"], vals)


@pytest.mark.parametrize("shape,k,axis", [
    ((5, 8), 2, -1), ((1, 60), 4, 1), ((3, 7, 9), 7, 1), ((4, 1), 1, -1),
    ((6, 33), 1, 0), ((2, 5, 3), 2, 0)])
def test_top_k(runner, shape, k, axis):
    run_top_k(runner, rng.standard_normal(shape).astype(np.float32), k, axis)


def test_top_k_smallest(runner):
    run_top_k(runner, rng.standard_normal((4, 17)).astype(np.float32), 5, -1,
              largest=False)


def test_top_k_ties_and_nan(runner):
    x = np.array([[1, 3, 3, np.nan, 2, 3, np.nan, -1],
                  [0, 0, 0, 0, 0, 0, 0, 0]], np.float32)
    run_top_k(runner, x, 5, -1)
    run_top_k(runner, x, 4, -1, largest=False)


def test_top_k_integers(runner):
    x = rng.integers(-5, 5, (3, 21)).astype(np.int32)
    run_top_k(runner, x, 6, 1)


def grouped_ref(x, w, groups):
    lead = x.shape[:-1]
    x = x.reshape(-1, x.shape[-1])
    g = groups.reshape(-1)
    g = np.where(g < 0, g + w.shape[0], g)
    g = np.clip(g, 0, w.shape[0] - 1)
    y = np.stack([w[g[r]].astype(np.float64) @ x[r].astype(np.float64)
                  for r in range(x.shape[0])]).astype(np.float32)
    return y.reshape(*lead, w.shape[1])


@pytest.mark.parametrize("rows,k,groups,n", [
    (1, 64, 4, 24), (2, 33, 8, 17), (16, 96, 3, 40), (5, 7, 1, 3),
    (3, 20, 2, 6), (4, 40, 3, 12)])
def test_grouped_matmul(runner, rows, k, groups, n):
    x = rng.standard_normal((rows, k)).astype(np.float32)
    w = rng.standard_normal((groups, n, k)).astype(np.float32)
    g = rng.integers(0, groups, rows).astype(np.int64)
    run_grouped(runner, x, w, g)


def test_grouped_matmul_leading_dims(runner):
    """[B, T, k, H] rows as a mixture-of-experts layer gives them."""
    x = rng.standard_normal((1, 5, 2, 40)).astype(np.float32)
    w = rng.standard_normal((6, 12, 40)).astype(np.float32)
    g = rng.integers(0, 6, (1, 5, 2)).astype(np.int64)
    run_grouped(runner, x, w, g)


def run_grouped(runner, x, w, g, expected=None, sort=False):
    """grouped_matmul of x, w, g against `expected` (grouped_ref by
    default); with `sort`, through sorted(mir.sort_groups(g))."""
    if expected is None:
        expected = grouped_ref(x, w, g)
    ts = [mlir_type(a) for a in (x, w, g)]
    rt = mlir_type(expected)
    lines, extra = [], ""
    if sort:
        order, offsets = sort_groups_ref(g, w.shape[0])
        ot, ft = mlir_type(order), mlir_type(offsets)
        lines.append(f"  %o, %f = mir.sort_groups %g {{num_groups = "
                     f"{w.shape[0]} : i64}} : ({ts[2]}) -> ({ot}, {ft})")
        extra = " sorted(%o, %f)"
        ts += [ot, ft]
    lines.append(f"  %y = mir.grouped_matmul %x, %w, %g{extra} : "
                 f"({', '.join(ts)}) -> {rt}")
    src = (f'func.func @f(%x: {ts[0]} {{rlx.name = "x"}}, %w: {ts[1]} '
           f'{{rlx.name = "w"}}, %g: {ts[2]} {{rlx.name = "g"}}) -> '
           f'({rt} {{rlx.name = "out"}}) {{\n' + "\n".join(lines) +
           f"\n  return %y : {rt}\n}}\n")
    out = runner.run(src, {"x": x, "w": w, "g": g})
    assert_close(out["out"], expected, 1e-5, 1e-5)


def test_grouped_matmul_negative_and_out_of_range(runner):
    """Groups count from the end when negative and clamp outside [-G, G),
    as mir.gather's indices; i32 groups."""
    x = rng.standard_normal((6, 16)).astype(np.float32)
    w = rng.standard_normal((3, 5, 16)).astype(np.float32)
    g = np.array([-1, -3, 7, -9, 0, 2], np.int32)
    run_grouped(runner, x, w, g)


# Every element type the verifiers accept. The SPIR-V back end holds neither
# bf16 nor i16 values (docs/GPU.md), as for every op: those run on the CPU.
@pytest.mark.parametrize("dtype", ["f16", "bf16", "i8", "i16", "i64"])
def test_top_k_dtypes(runner, request, dtype):
    if "vulkan" in request.node.name and dtype in ("bf16", "i16"):
        pytest.skip("the SPIR-V back end holds no bf16 / i16 values "
                    "(docs/GPU.md)")
    if dtype == "bf16":
        x = to_bf16(rng.standard_normal((3, 12)))[0]
    elif dtype == "f16":
        x = rng.standard_normal((3, 12)).astype(np.float16)
    else:
        x = rng.integers(-100, 100, (3, 12)).astype(dtype.replace("i", "int"))
    run_top_k(runner, x, 4, -1)


@pytest.mark.parametrize("wtype", ["f16", "bf16"])
def test_grouped_matmul_low_precision_weights(runner, request, wtype):
    """f16 / bf16 weight stacks, read as stored and accumulated in f32."""
    if "vulkan" in request.node.name and wtype == "bf16":
        pytest.skip("the SPIR-V back end holds no bf16 values (docs/GPU.md)")
    x = rng.standard_normal((5, 24)).astype(np.float32)
    w32 = rng.standard_normal((3, 8, 24)).astype(np.float32)
    if wtype == "bf16":
        w, stored = to_bf16(w32)
    else:
        w = w32.astype(np.float16)
        stored = w.astype(np.float32)
    g = rng.integers(0, 3, 5).astype(np.int64)
    run_grouped(runner, x, w, g, expected=grouped_ref(x, stored, g))


def sort_groups_ref(g, num):
    flat = g.reshape(-1).astype(np.int64)
    flat = np.clip(np.where(flat < 0, flat + num, flat), 0, num - 1)
    order = np.argsort(flat, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(flat, minlength=num))])
    return order.astype(np.int64), offsets.astype(np.int64)


@pytest.mark.parametrize("shape,num", [((1, 7, 2), 4), ((13,), 3), ((2, 3), 8),
                                       ((1, 1, 1), 1)])
def test_sort_groups(runner, shape, num):
    """A stable counting sort of the rows by group (negative and
    out-of-range groups as mir.gather reads them); empty groups too."""
    g = rng.integers(-num - 2, num + 2, shape).astype(np.int32)
    order, offsets = sort_groups_ref(g, num)
    t, ot, ft = mlir_type(g), mlir_type(order), mlir_type(offsets)
    src = (f'func.func @f(%g: {t} {{rlx.name = "g"}}) -> ({ot} {{rlx.name = '
           f'"o"}}, {ft} {{rlx.name = "f"}}) {{\n'
           f"  %o, %f = mir.sort_groups %g {{num_groups = {num} : i64}} : "
           f"({t}) -> ({ot}, {ft})\n  return %o, %f : {ot}, {ft}\n}}\n")
    out = runner.run(src, {"g": g})
    np.testing.assert_array_equal(out["o"], order)
    np.testing.assert_array_equal(out["f"], offsets)


@pytest.mark.parametrize("rows,k,groups,n", [
    (1, 64, 4, 24), (7, 33, 2, 16), (16, 96, 3, 40), (10, 20, 5, 6),
    (4, 40, 3, 12), (9, 17, 1, 3)])
def test_grouped_matmul_sorted(runner, rows, k, groups, n):
    """With sorted(order, offsets) the rows of each group come in tiles (of
    three here) and a tail: every row count per group, 0 included."""
    x = rng.standard_normal((1, rows, k)).astype(np.float32)
    w = rng.standard_normal((groups, n, k)).astype(np.float32)
    g = rng.integers(-groups, groups, (1, rows)).astype(np.int64)
    run_grouped(runner, x, w, g, sort=True)
