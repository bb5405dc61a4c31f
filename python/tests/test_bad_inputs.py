# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Bad arguments from Python: each is an rlx.RLXError that names the
argument (not a bare std::bad_cast from nanobind, not a heap overflow), and
CompiledModel.run from several threads."""

import threading

import numpy as np
import pytest

import rlx

# y = x * w * 2, with a dynamic sequence dim (HIR).
HIR = """
func.func @scale(%x: tensor<1x?x4xf32> {rlx.name = "x"}) -> (tensor<1x?x4xf32> {rlx.name = "y"}) {
  %w = hir.param "w" : tensor<4xf32>
  %s = hir.layer_scale %x, %w : (tensor<1x?x4xf32>, tensor<4xf32>) -> tensor<1x?x4xf32>
  %y = hir.embed_scale %s {scale = 2.0 : f32} : (tensor<1x?x4xf32>) -> tensor<1x?x4xf32>
  return %y : tensor<1x?x4xf32>
}
"""

W = np.array([1, 2, 3, 4], np.float32)


@pytest.fixture
def model():
    m = rlx.Session().compile(HIR, input_shapes={"x": [1, 3, 4]})
    m.set_param("w", W)
    return m


def test_byte_size_overflow_in_input_shapes():
    """[1, 2^62, 4] f32 is 2^66 bytes, 0 modulo 2^64: it used to get a tiny
    arena that the JIT'd code wrote past."""
    with pytest.raises(rlx.RLXError,
                       match=r"input 'x' of shape \[1, 4611686018427387904, "
                             r"4\] has a byte size past 2\^63 - 1"):
        rlx.Session().compile(HIR, input_shapes={"x": [1, 2**62, 4]})
    # 2^61 f32 elements: 2^63 bytes, one past the largest size.
    with pytest.raises(rlx.RLXError, match="has a byte size past 2"):
        rlx.Session().compile(HIR, input_shapes={"x": [1, 2**59, 4]})


def test_dims_past_64_bits():
    with pytest.raises(rlx.RLXError,
                       match=r"input_shapes\['x'\]\[1\]: 18446744073709551616 "
                             r"is not an integer in \[0, 9223372036854775807\]"):
        rlx.Session().compile(HIR, input_shapes={"x": [1, 2**64, 4]})
    with pytest.raises(rlx.RLXError, match=r"input_shapes\['x'\]\[0\]: -1 is"):
        rlx.Session().compile(HIR, input_shapes={"x": [-1, 3, 4]})
    with pytest.raises(rlx.RLXError, match=r"input 'x' dimension 1: "
                                           r"1180591620717411303424 is not"):
        rlx.ModelFlow("f").input("x", [1, 2**70], "f32")
    rlx.ModelFlow("f").input("x", [1, rlx.DYNAMIC, None], "f32")


def test_unknown_input_shapes_name():
    with pytest.raises(rlx.RLXError,
                       match=r"input_shapes names no input of 'scale': 'X', "
                             r"'y' \(the inputs are: x\)"):
        rlx.Session().compile(HIR, input_shapes={"X": [1, 3, 4],
                                                 "y": [1, 3, 4]})


def test_non_string_keys(model):
    with pytest.raises(rlx.RLXError,
                       match=r"input_shapes: keys must be str, got 0 \(int\)"):
        rlx.Session().compile(HIR, input_shapes={0: [1, 3, 4]})
    with pytest.raises(rlx.RLXError,
                       match=r"inputs: keys must be str, got b'x' \(bytes\)"):
        model.run({b"x": np.zeros((1, 3, 4), np.float32)})
    with pytest.raises(rlx.RLXError,
                       match=r"weights: keys must be str, got 1 \(int\)"):
        model.load_params({1: W})


def test_big_endian_arrays(model):
    x = np.arange(12, dtype=">f4").reshape(1, 3, 4)
    with pytest.raises(rlx.RLXError,
                       match=r"input 'x': numpy dtype\('>f4'\) is not in this "
                             r"machine's byte order"):
        model.run({"x": x})
    with pytest.raises(rlx.RLXError, match=r"param 'w': numpy dtype\('>f4'\)"):
        model.set_param("w", W.astype(">f4"))
    with pytest.raises(rlx.RLXError,
                       match=r"<arrays>: tensor 'w': numpy dtype\('>f4'\)"):
        model.load_params({"w": W.astype(">f4")})
    # Converted to the native order, the same values run.
    y = model.run({"x": x.astype(x.dtype.newbyteorder("="))})["y"]
    np.testing.assert_array_equal(y, x.astype(np.float32) * W * 2)


def test_run_from_two_threads(model):
    """Runs of one model share its arena: they are serialised, and each
    thread gets its own inputs' results."""
    errors, results = [], {}

    def work(k):
        try:
            x = np.full((1, 3, 4), float(k), np.float32)
            for _ in range(50):
                y = model.run({"x": x})["y"]
                if not np.array_equal(y, x * W * 2):
                    errors.append((k, y))
                    return
            results[k] = True
        except Exception as e:  # noqa: BLE001
            errors.append((k, e))

    threads = [threading.Thread(target=work, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and results == {1: True, 2: True}
    assert "serialised" in rlx.CompiledModel.run.__doc__


def test_token_ids_past_32_bits(tiny_models):
    llama = tiny_models / "llama"
    gen = rlx.Generator(rlx.Session(), rlx.Llama32Flow.from_model_dir(llama),
                        rlx.load_weights(llama), max_context=32)
    with pytest.raises(rlx.RLXError,
                       match=r"prompt\[1\]: 2147483648 is not an integer in "
                             r"\[0, 2147483647\]"):
        gen.generate([1, 2**31], 2)
    with pytest.raises(rlx.RLXError, match=r"prompt\[0\]: 18446744073709551616"):
        gen.generate([2**64], 2)
