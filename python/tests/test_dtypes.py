# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""NumPy arrays in and out of a compiled model for every element type the
bindings map: int16 both ways, bf16 in as the raw 16 bits ('|V2', the .npy
convention of docs/Weights.md) and out widened to float32, and an error
naming the input for a dtype RLX has no type for."""

import numpy as np
import pytest

import rlx

MIR = """
func.func @f(%a: tensor<5xi16> {rlx.name = "a"}, %b: tensor<4xbf16> {rlx.name = "b"}) -> (tensor<5xi16> {rlx.name = "s"}, tensor<4xbf16> {rlx.name = "n"}, tensor<4xf32> {rlx.name = "w"}) {
  %p = mir.param "p" : tensor<5xi16>
  %q = mir.param "q" : tensor<4xbf16>
  %s = mir.add %a, %p : (tensor<5xi16>, tensor<5xi16>) -> tensor<5xi16>
  %m = mir.mul %b, %q : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %n = mir.neg %m : (tensor<4xbf16>) -> tensor<4xbf16>
  %w = mir.cast %b : (tensor<4xbf16>) -> tensor<4xf32>
  return %s, %n, %w : tensor<5xi16>, tensor<4xbf16>, tensor<4xf32>
}
"""


def bf16_bits(x):
    """f32 values (exact in bf16 here) as '|V2' bytes."""
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(
        np.uint16).view("V2")


def test_int16_and_bf16_in_and_out():
    model = rlx.Session().compile(MIR)
    assert model.inputs == {"a": ((5,), "int16"), "b": ((4,), "bfloat16")}
    a = np.array([-32768, -7, 0, 300, 32767], np.int16)
    p = np.array([1, 7, -1, -300, -1], np.int16)
    b = np.array([1.5, -2.0, 0.25, 3.0], np.float32)
    q = np.array([2.0, 0.5, -4.0, 1.0], np.float32)
    model.set_param("p", p)
    model.set_param("q", bf16_bits(q))
    out = model.run({"a": a, "b": bf16_bits(b)})
    assert out["s"].dtype == np.int16
    np.testing.assert_array_equal(out["s"], (a + p).astype(np.int16))
    # bf16 results come back as float32 (numpy has no bfloat16).
    assert out["n"].dtype == np.float32 and out["w"].dtype == np.float32
    np.testing.assert_array_equal(out["n"], -(b * q))
    np.testing.assert_array_equal(out["w"], b)


def test_unmapped_dtypes_are_named():
    model = rlx.Session().compile(MIR)
    b = bf16_bits(np.zeros(4, np.float32))
    with pytest.raises(rlx.RLXError, match=r"input 'a': numpy complex64.*int16"):
        model.run({"a": np.zeros(5, np.complex64), "b": b})
    # A 4-byte void is not bf16.
    with pytest.raises(rlx.RLXError, match=r"input 'b': numpy \|V4"):
        model.run({"a": np.zeros(5, np.int16), "b": np.zeros(4, "V4")})
