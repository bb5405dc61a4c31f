# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Tier 2 from Python: ModelFlow.custom(fn) with an rlx.Emitter that creates
HIR ops by name and reads checkpoint and synthesized parameters, built,
compiled and run against NumPy; and the errors of each emitter call."""

import numpy as np
import pytest

import rlx

T, H = 3, 4
GAMMA = np.array([1.0, 2.0, -0.5, 0.25], np.float32)
W = np.array([0.5, 1.5, 2.0, -1.0], np.float32)


def norm_scale(e):
    """LayerNorm with a synthesized gamma and zero beta, scaled by the
    checkpoint's "w", plus the input (a residual)."""
    x = e.current
    assert x.shape == [1, None, H] and x.type == "tensor<1x?x4xf32>"
    g = e.synth_param("custom.gamma", GAMMA.astype(np.float64))
    b = e.synth_zeros("custom.beta", [H])
    n = e.op("hir.layer_norm", [x, g, b], attrs={"epsilon": 1e-5})
    y = e.op("hir.layer_scale", [n, e.param("w", [H])], result=x)
    e.set_named("scaled", y)
    e.current = e.op("hir.add", [y, e.named("x")], result=[1, None, H])


def flow():
    return (
        rlx.ModelFlow("custom")
        .input("x", [1, None, H], "f32")
        .custom(norm_scale)
        .output("y")
        .output("scaled", "scaled")
    )


def reference(x):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    scaled = (x - mean) / np.sqrt(var + 1e-5) * GAMMA * W
    return scaled + x, scaled


def test_custom_stage_builds_and_runs():
    built = flow().build({"w": W})
    assert "hir.layer_norm" in built.mlir and "hir.layer_scale" in built.mlir
    assert sorted(built.synthesized) == ["custom.beta", "custom.gamma"]
    np.testing.assert_array_equal(built.synthesized["custom.gamma"], GAMMA)
    np.testing.assert_array_equal(built.synthesized["custom.beta"], np.zeros(H))
    assert built.params == ["w"]
    model = rlx.Session().compile(built, input_shapes={"x": [1, T, H]})
    model.load_params({"w": W})
    x = np.random.default_rng(0).standard_normal((1, T, H)).astype(np.float32)
    out = model.run({"x": x})
    y, scaled = reference(x)
    np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["scaled"], scaled, rtol=1e-5, atol=1e-5)


def test_custom_region_of_mir_ops():
    """An hir.custom region: tanh(x + bias) in MIR with a synthesized bias
    passed in as an input."""
    bias = np.array([0.1, -0.2, 0.3, 0.0], np.float32)

    def bias_tanh(e):
        b = e.synth_param("bias_tanh.bias", bias)

        def body(x, b):
            return e.op("mir.tanh", [e.op("mir.add", [x, b])])

        e.current = e.custom("bias_tanh", [e.current, b], body)

    built = (
        rlx.ModelFlow("region")
        .input("x", [1, None, H], "f32")
        .custom(bias_tanh)
        .output("y")
        .build({})
    )
    assert 'hir.custom "bias_tanh"' in built.mlir and "mir.tanh" in built.mlir
    model = rlx.Session().compile(built, input_shapes={"x": [1, T, H]})
    model.load_params({})
    x = np.random.default_rng(1).standard_normal((1, T, H)).astype(np.float32)
    np.testing.assert_allclose(
        model.run({"x": x})["y"], np.tanh(x + bias), rtol=1e-5, atol=1e-6
    )

    def no_yield(e):
        e.custom("empty", [e.current], lambda x: None)

    assert build_error(no_yield, "r") == (
        "custom stage 'r': custom region 'empty': the body returns "
        "<class 'NoneType'>, not the rlx.FlowValue to yield"
    )


def build_error(fn, name=None):
    f = rlx.ModelFlow("bad").input("x", [1, T, H], "f32").custom(fn, name)
    with pytest.raises(rlx.RLXError) as info:
        f.build({"w": W})
    return str(info.value)


def test_emitter_errors():
    assert build_error(lambda e: e.op("hir.nope", [e.current]), "nope") == (
        "custom stage 'nope': no op 'hir.nope' (expected an hir or mir op)"
    )

    def wrong_type(e):
        e.op("hir.add", [e.current, e.synth_zeros("z", [H])])

    assert build_error(wrong_type).startswith(
        "custom stage 'wrong_type': invalid 'hir.add': "
    )

    def shadow(e):
        e.synth_zeros("w", [H])

    assert "synthesized parameter 'w' would shadow the weight" in build_error(shadow)

    def twice(e):
        e.synth_zeros("z", [H])
        e.synth_param("z", np.ones(H))

    assert "parameter 'z' is synthesized twice" in build_error(twice)
    assert build_error(lambda e: e.param("nope", [H]), "p").startswith(
        "custom stage 'p': missing weight 'nope' (expected [4])"
    )
    assert "attribute 'mask' = '#mir<nope'" in build_error(
        lambda e: e.op("hir.embed_scale", [e.current], attrs={"mask": "#mir<nope"})
    )
    assert build_error(
        lambda e: e.op("hir.embed_scale", [e.current], attrs={"s": [1]}), "s"
    ) == (
        "custom stage 's': attribute 's': expected a bool, int, float or str "
        "(MLIR syntax), got <class 'list'>"
    )


def test_python_exceptions_and_expired_values():
    def raises(e):
        raise ValueError("no custom stage today")

    f = rlx.ModelFlow("x").input("x", [1, T, H], "f32").custom(raises)
    with pytest.raises(ValueError, match="no custom stage today"):
        f.build({})

    kept = []

    def keep(e):
        kept.append((e, e.current))

    rlx.ModelFlow("x").input("x", [1, T, H], "f32").custom(keep).build({})
    emitter, value = kept[0]
    assert repr(value) == "<rlx.FlowValue (expired)>"
    with pytest.raises(rlx.RLXError, match="custom stage that has returned"):
        emitter.current
    with pytest.raises(rlx.RLXError, match="custom stage that has returned"):
        value.shape
