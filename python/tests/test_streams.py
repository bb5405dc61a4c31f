# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Multi-stream flows, named scopes and plugins from Python: two inputs
bound to the img / txt streams and transformed together by a dual-stream
stage (checked against NumPy), a plugin registered here (outside RLX) placed
in a flow with its arguments, and the errors that name the stream, the scope
or the plugin."""

import numpy as np
import pytest

import rlx

T, H = 3, 4


def two_streams(fn):
    return (rlx.ModelFlow("streams")
            .input("image", [1, None, H], "f32")
            .input("text", [1, None, H], "f32")
            .bind_inputs_to_streams({"image": "img", "text": "txt"})
            .dual_stream("mix", "img", "txt", fn)
            .load_stream("img").output("img")
            .load_stream("txt").output("txt"))


def test_dual_stream_runs():
    def mix(e, a, b):
        a2 = e.op("hir.add", [a, b])
        return a2, e.op("hir.add", [b, a2])

    built = two_streams(mix).build({})
    model = rlx.Session().compile(
        built, input_shapes={"image": [1, T, H], "text": [1, T, H]})
    model.load_params({})
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, T, H)).astype(np.float32)
    y = rng.standard_normal((1, T, H)).astype(np.float32)
    out = model.run({"image": x, "text": y})
    np.testing.assert_allclose(out["img"], x + y, rtol=1e-6)
    np.testing.assert_allclose(out["txt"], y + (x + y), rtol=1e-6)


def test_dual_stream_errors():
    with pytest.raises(rlx.RLXError, match=r"dual stream 'mix': the function "
                       r"returns <class 'NoneType'>"):
        two_streams(lambda e, a, b: None).build({})
    flow = (rlx.ModelFlow("f").input("x", [1, None, H], "f32")
            .store_stream("main").load_stream("img"))
    with pytest.raises(rlx.RLXError,
                       match=r"no stream 'img' \(streams: main\)"):
        flow.build({})


def test_plugin_registered_in_python():
    def shift(e, args):
        h = e.current.shape[-1]
        g = e.synth_param("scale.by", np.full(h, args["by"], np.float32))
        e.current = e.op("hir.layer_scale", [e.current, g])

    rlx.register_plugin("test.shift", shift)
    try:
        assert "test.shift" in rlx.plugins()
        with pytest.raises(rlx.RLXError, match="registered already"):
            rlx.register_plugin("test.shift", shift)
        built = (rlx.ModelFlow("p").input("x", [1, None, H], "f32")
                 .plugin("test.shift", {"by": 2.5}).output("y").build({}))
        model = rlx.Session().compile(built, input_shapes={"x": [1, T, H]})
        model.load_params(built.synthesized)
        x = np.ones((1, T, H), np.float32)
        np.testing.assert_allclose(model.run({"x": x})["y"], x * 2.5)
        with pytest.raises(KeyError):
            (rlx.ModelFlow("p").input("x", [1, None, H], "f32")
             .plugin("test.shift", {}).build({}))
    finally:
        assert rlx.unregister_plugin("test.shift")
    assert "test.shift" not in rlx.plugins()
    with pytest.raises(rlx.RLXError, match=r"plugin 'test.shift': no plugin "
                       r"is registered under this name"):
        (rlx.ModelFlow("p").input("x", [1, None, H], "f32")
         .plugin("test.shift", {"by": 1}).build({}))


def test_named_scope():
    def broken(e):
        e.op("hir.add", [e.current])

    inner = rlx.ModelFlow("inner").custom(broken).to_stage()
    flow = rlx.ModelFlow("f").input("x", [1, None, H], "f32").named(
        "block 7", inner)
    with pytest.raises(rlx.RLXError, match=r"^block 7: "):
        flow.build({})
