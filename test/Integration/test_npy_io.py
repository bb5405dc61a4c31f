# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""rlx-run reads and writes a .npy of every element type MIR has: bool, i8,
i16, i32, i64, f16, bf16 ('|V2', the raw 16 bits: numpy has no bfloat16) and
f32, 0-d arrays and arrays with a zero-length dimension. NumPy writes the
inputs and reads back what rlx-run wrote; the values must be bit-exact."""

import numpy as np
import pytest

from conftest import mlir_type

rng = np.random.default_rng(19)


def bf16_bits(x):
    """f32 values rounded to bf16 (to nearest even), as '|V2' bytes."""
    u = np.asarray(x, np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return r.view("V2")


def bf16_to_f32(v):
    return (v.view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def sample(dtype, shape):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "bf16":
        return bf16_bits(rng.standard_normal(shape) * 4)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 4).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)


def identity(a):
    t = mlir_type(a)
    return (f'func.func @f(%x: {t} {{rlx.name = "x"}}) -> '
            f'({t} {{rlx.name = "out"}}) {{\n  return %x : {t}\n}}\n')


DTYPES = ["bool", "int8", "int16", "int32", "int64", "float16", "bf16",
          "float32"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 4, 5), (3,), (), (0,), (0, 6)])
def test_round_trip(rlx, dtype, shape):
    a = sample(dtype, shape)
    out = rlx.run(identity(a), {"x": a})["out"]
    assert out.dtype == a.dtype and out.shape == a.shape, (out.dtype, out.shape)
    assert out.tobytes() == a.tobytes()


@pytest.mark.parametrize("to", ["f16", "bf16", "i1", "i8", "i16", "i64"])
def test_cast_outputs(rlx, to):
    """Outputs computed in f32 and cast: the file holds the cast values."""
    x = (rng.standard_normal((3, 4, 5)) * 50).astype(np.float32)
    rt = f"tensor<3x4x5x{to}>"
    mlir = (f'func.func @f(%x: tensor<3x4x5xf32> {{rlx.name = "x"}}) -> '
            f'({rt} {{rlx.name = "out"}}) {{\n'
            f'  %r = mir.cast %x : (tensor<3x4x5xf32>) -> {rt}\n'
            f'  return %r : {rt}\n}}\n')
    out = rlx.run(mlir, {"x": x})["out"]
    if to == "bf16":
        assert out.dtype == np.dtype("V2")
        np.testing.assert_allclose(bf16_to_f32(out), x, rtol=2 ** -8)
    elif to == "f16":
        assert out.dtype == np.float16
        np.testing.assert_array_equal(out, x.astype(np.float16))
    elif to == "i1":
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out, x != 0)
    else:
        dt = {"i8": np.int8, "i16": np.int16, "i64": np.int64}[to]
        assert out.dtype == dt
        # mir.cast truncates toward zero; stay inside the range of i8.
        ref = np.trunc(np.clip(x, -128, 127)).astype(dt) if to == "i8" \
            else np.trunc(x).astype(dt)
        if to == "i8":
            inside = np.abs(x) < 127
            np.testing.assert_array_equal(out[inside], ref[inside])
        else:
            np.testing.assert_array_equal(out, ref)


def test_big_endian_input_refused(rlx, tmp_path):
    a = np.arange(6, dtype=">f4")
    err = rlx.run(identity(a.astype(np.float32)), {"x": a}, expect_fail=True)
    assert "unsupported descr '>f4'" in err
