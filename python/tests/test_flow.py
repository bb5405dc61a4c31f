# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Flows built in Python: blocks, layer stacks and stages, compiled and run
on NumPy arrays against NumPy references; shape, dtype and weight errors
raise rlx.RLXError with the C++ messages; Python exceptions in callables
propagate unchanged."""

import gc

import numpy as np
import pytest

import rlx
from conftest import (
    H,
    VOCAB,
    attention_spec,
    layer_spec,
    llama_flow,
    llama_weights,
    randn,
    run_tokens,
    scale_err,
)

T, OUT = 5, 16


def norm_proj():
    """x -> rms_norm -> linear (with bias) -> y, and its weights."""
    rng = np.random.default_rng(0)
    weights = {
        "norm.weight": randn(rng, H, scale=0.1, offset=1.0),
        "proj.weight": randn(rng, OUT, H),
        "proj.bias": randn(rng, OUT),
    }
    flow = (
        rlx.ModelFlow("norm_proj")
        .input("x", [1, None, H], np.float32)
        .rms_norm("norm.weight", 1e-5)
        .linear("proj", bias=True)
        .output("y")
    )
    return flow, weights


def norm_proj_reference(x, w):
    n = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w["norm.weight"]
    return n @ w["proj.weight"].T + w["proj.bias"]


@pytest.fixture(scope="module")
def norm_proj_model():
    flow, weights = norm_proj()
    built = flow.build(weights)
    model = rlx.Session().compile(built, input_shapes={"x": [1, T, H]})
    model.load_params(weights)
    return model, weights


def test_build_a_flow(norm_proj_model):
    flow, weights = norm_proj()
    assert flow.input("extra", [1], "i32") is flow  # fluent: returns self
    built = norm_proj()[0].build(weights)
    assert built.inputs == ["x"] and built.outputs == ["y"]
    assert "hir.rms_norm" in built.mlir and "hir.param" in built.mlir
    assert str(built) == built.mlir


def test_run_numpy_in_and_out(norm_proj_model):
    model, weights = norm_proj_model
    x = randn(np.random.default_rng(1), 1, T, H, scale=1.0)
    y = model.run({"x": x})["y"]
    assert y.dtype == np.float32 and y.shape == (1, T, OUT)
    np.testing.assert_allclose(y, norm_proj_reference(x, weights), 1e-4, 1e-4)
    # Keyword call, lists and non-contiguous arrays.
    np.testing.assert_array_equal(model(x=x)["y"], y)
    np.testing.assert_array_equal(model.run({"x": x.tolist()})["y"], y)
    xt = np.ascontiguousarray(x[:, ::-1])[:, ::-1]
    assert not xt.flags.c_contiguous or xt.base is not None
    np.testing.assert_array_equal(model.run({"x": xt})["y"], y)
    # Inputs are read in place: a read-only, unaligned buffer works too.
    raw = np.frombuffer(b"\0" + x.tobytes(), np.float32, offset=1).reshape(x.shape)
    assert not raw.flags.aligned and not raw.flags.writeable
    np.testing.assert_array_equal(model.run({"x": raw})["y"], y)


def test_outputs_own_their_data():
    flow, weights = norm_proj()
    model = rlx.Session().compile(flow.build(weights), input_shapes={"x": [1, T, H]})
    model.load_params(weights)
    x = np.ones((1, T, H), np.float32)
    first = model.run({"x": x})["y"]
    second = model.run({"x": 2 * x})["y"]
    assert not np.shares_memory(first, second)
    expected = first.copy()
    del model
    gc.collect()
    np.testing.assert_array_equal(first, expected)  # outlives the model
    assert first.flags.writeable
    first[...] = 0


def test_manifest_and_specs(norm_proj_model):
    model, _ = norm_proj_model
    kinds = {(e["kind"], e["name"]) for e in model.manifest}
    assert ("input", "x") in kinds and ("output", "y") in kinds
    assert ("param", "norm.weight") in kinds
    x = next(e for e in model.manifest if e["name"] == "x")
    assert x["shape"] == (1, T, H) and x["dtype"] == "f32"
    assert model.inputs == {"x": ((1, T, H), "float32")}
    assert model.outputs == {"y": ((1, T, OUT), "float32")}
    assert model.arena_size > 0 and model.missing_params == []
    assert set(model.weight_names) == {"norm.weight", "proj.weight", "proj.bias"}
    assert model.device.startswith("cpu")
    assert '"entries"' in model.manifest_json or "x" in model.manifest_json


def test_input_errors(norm_proj_model):
    model, _ = norm_proj_model
    x = np.zeros((1, T, H), np.float32)
    with pytest.raises(
        rlx.RLXError, match=r"input 'x': expected f32\[1, 5, 32\], got f64\[1, 5, 32\]"
    ):
        model.run({"x": x.astype(np.float64)})
    with pytest.raises(
        rlx.RLXError, match=r"input 'x': expected f32\[1, 5, 32\], got f32\[1, 4, 32\]"
    ):
        model.run({"x": x[:, :4]})
    with pytest.raises(rlx.RLXError, match=r"missing input 'x' \(expects f32"):
        model.run({})
    with pytest.raises(rlx.RLXError, match=r"unknown input 'z' \(the model takes: x\)"):
        model.run({"x": x, "z": x})
    with pytest.raises(rlx.RLXError, match="no RLX element type"):
        model.run({"x": x.astype(np.complex64)})
    assert isinstance(rlx.RLXError("m"), RuntimeError)


def test_params(norm_proj_model):
    flow, weights = norm_proj()
    model = rlx.Session().compile(flow.build(weights), input_shapes={"x": [1, T, H]})
    x = np.ones((1, T, H), np.float32)
    with pytest.raises(rlx.RLXError, match=r"param\(s\) never set"):
        model.run({"x": x})
    assert sorted(model.missing_params) == ["norm.weight", "proj.bias", "proj.weight"]
    with pytest.raises(
        rlx.RLXError, match=r"param 'proj.weight': expected shape \[16, 32\]"
    ):
        model.set_param("proj.weight", weights["proj.weight"].T)
    with pytest.raises(rlx.RLXError, match="the model has no param 'nope'"):
        model.set_param("nope", weights["proj.bias"])
    for name, value in weights.items():
        model.set_param(
            name, value.astype(np.float16) if name == "proj.bias" else value
        )
    y = model.run({"x": x})["y"]
    w16 = dict(weights, **{"proj.bias": weights["proj.bias"].astype(np.float16)})
    np.testing.assert_allclose(
        y,
        norm_proj_reference(x, {k: v.astype(np.float32) for k, v in w16.items()}),
        1e-4,
        1e-4,
    )
    with pytest.raises(rlx.RLXError, match="missing weight 'norm.weight'"):
        rlx.Session().compile(
            flow.build(weights), input_shapes={"x": [1, T, H]}
        ).load_params({k: v for k, v in weights.items() if k != "norm.weight"})


def test_build_errors_name_the_weight():
    flow, weights = norm_proj()
    del weights["proj.bias"]
    with pytest.raises(rlx.RLXError, match="proj.bias"):
        flow.build(weights)
    flow, weights = norm_proj()
    weights["proj.weight"] = weights["proj.weight"][:, :5]
    with pytest.raises(rlx.RLXError, match="proj.weight"):
        flow.build(weights)


def test_weights_from_arrays():
    w = llama_weights(1)
    src = rlx.load_weights(w)
    assert len(src) == len(w) and "model.norm.weight" in src
    assert src.info("model.embed_tokens.weight") == {
        "name": "model.embed_tokens.weight",
        "dtype": "f32",
        "shape": (VOCAB, H),
    }
    np.testing.assert_array_equal(src["model.norm.weight"], w["model.norm.weight"])
    assert rlx.Weights.from_arrays(w).names() == list(w)
    with pytest.raises(KeyError):
        src["nope"]
    with pytest.raises(TypeError):
        rlx.load_weights(42)


def test_fused_and_composed_layers_agree():
    w = llama_weights(2)
    tokens = [3, 1, 4, 1, 5]
    fused = llama_flow(2, lambda i: rlx.llama_prefill_layer_fused(i, layer_spec(i)))
    composed = llama_flow(
        2, lambda i: rlx.llama_prefill_layer_composed(i, layer_spec(i))
    )
    a = run_tokens(fused.build(w), w, tokens)
    b = run_tokens(composed.build(w), w, tokens)
    assert a.shape == (1, len(tokens), VOCAB)
    assert scale_err(a, b) < 1e-4


def test_layer_stack_builds_the_same_layer():
    w = llama_weights(1)
    tokens = [7, 2, 9]

    def blocks(layer):
        (
            layer.residual_save()
            .rms_norm("input_layernorm.weight", 1e-5)
            .self_attn_prefill(attention_spec())
            .residual_add()
            .residual_save()
            .rms_norm("post_attention_layernorm.weight", 1e-5)
            .swiglu_hf_mlp()
            .residual_add()
        )

    by_blocks = (
        rlx.ModelFlow("tiny")
        .input("tokens", [1, None], "i32")
        .input("positions", [1, None], "i32")
        .token_embed()
        .layer("model.layers.0.", blocks)
        .final_norm(1e-5)
        .lm_head(tied=True)
        .output("logits")
    )
    stack = rlx.LayerStack("model.layers.0.")
    blocks(stack)
    by_stage = llama_flow(1, lambda i: stack)
    fused = llama_flow(1, lambda i: rlx.llama_prefill_layer_fused(i, layer_spec(i)))
    ref = run_tokens(fused.build(w), w, tokens)
    assert scale_err(run_tokens(by_blocks.build(w), w, tokens), ref) < 1e-4
    assert scale_err(run_tokens(by_stage.build(w), w, tokens), ref) < 1e-4


def test_stages_compose():
    w = llama_weights(1)
    head = rlx.ModelFlow("head").final_norm(1e-5).lm_head(tied=True)
    flow = (
        rlx.ModelFlow("tiny")
        .input("tokens", [1, None], "i32")
        .input("positions", [1, None], "i32")
        .token_embed()
        .sequence([rlx.llama_prefill_layer_fused(0, layer_spec(0))])
        .when(False, rlx.llama_prefill_layer_fused(5, layer_spec(5)))
        .stage(head)
        .output("logits")
    )
    ref = llama_flow(1, lambda i: rlx.llama_prefill_layer_fused(i, layer_spec(i)))
    assert (
        scale_err(
            run_tokens(flow.build(w), w, [1, 2]), run_tokens(ref.build(w), w, [1, 2])
        )
        < 1e-6
    )
    assert "llama_prefill_layer_fused(0)" in repr(
        rlx.llama_prefill_layer_fused(0, layer_spec(0))
    )


def test_python_exceptions_propagate():
    def bad(i):
        raise ValueError(f"no layer {i}")

    with pytest.raises(ValueError, match="no layer 0"):
        llama_flow(2, bad)
    with pytest.raises(TypeError, match="expected an rlx.Stage"):
        llama_flow(1, lambda i: 42)
    with pytest.raises(TypeError):
        rlx.ModelFlow("x").input("x", [1], "complex64")


def test_specs():
    spec = rlx.AttentionSpec(num_heads=8, head_dim=16)
    assert spec.num_kv_heads == 8 and spec.causal
    spec.window = 4
    d = rlx.DecoderLayerSpec(attention=spec, hidden=128, prefix="model.layers.1.")
    assert d.attention.window == 4 and d.rms_epsilon == pytest.approx(1e-5)
    b = rlx.BertLayerSpec(num_heads=2, head_dim=32, hidden=64, intermediate=128)
    assert b.layer_norm_epsilon == pytest.approx(1e-12)
    assert rlx.DYNAMIC < 0


def moe_reference(x, w, prefix, spec):
    """A mixture-of-experts MLP in NumPy, token by token (float64)."""
    x = x.astype(np.float64)
    logits = x @ w[prefix + "gate.weight"].T
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = np.zeros_like(x)
    silu = lambda v: v / (1 + np.exp(-v))  # noqa: E731
    for t in range(x.shape[1]):
        top = np.argsort(-p[0, t], kind="stable")[: spec.experts_per_token]
        weights = p[0, t, top]
        if spec.norm_topk_prob:
            weights = weights / weights.sum()
        for e, wt in zip(top, weights):
            key = f"{prefix}experts.{e}."
            g = w[key + "gate_proj.weight"] @ x[0, t]
            u = w[key + "up_proj.weight"] @ x[0, t]
            out[0, t] += wt * (w[key + "down_proj.weight"] @ (silu(g) * u))
        if spec.shared_intermediate:
            s = prefix + "shared_expert."
            h = silu(w[s + "gate_proj.weight"] @ x[0, t]) * (
                w[s + "up_proj.weight"] @ x[0, t])
            gate = 1 / (1 + np.exp(-(w[prefix + "shared_expert_gate.weight"]
                                     @ x[0, t])))
            out[0, t] += gate[0] * (w[s + "down_proj.weight"] @ h)
    return out


@pytest.mark.parametrize("shared,norm", [(False, True), (True, False)])
def test_moe_mlp_block(shared, norm):
    """ModelFlow.moe_mlp: the router's top experts per token, against a
    token-by-token NumPy loop (1e-4 of the output's scale)."""
    rng = np.random.default_rng(7)
    experts, inter, prefix = 5, 24, "blk.mlp."
    spec = rlx.MoeSpec(experts=experts, experts_per_token=2, intermediate=inter,
                       norm_topk_prob=norm,
                       shared_intermediate=20 if shared else 0)
    w = {prefix + "gate.weight": randn(rng, experts, H)}
    for e in range(experts):
        k = f"{prefix}experts.{e}."
        w[k + "gate_proj.weight"] = randn(rng, inter, H, scale=0.3)
        w[k + "up_proj.weight"] = randn(rng, inter, H, scale=0.3)
        w[k + "down_proj.weight"] = randn(rng, H, inter, scale=0.3)
    if shared:
        s = prefix + "shared_expert."
        w[s + "gate_proj.weight"] = randn(rng, 20, H, scale=0.3)
        w[s + "up_proj.weight"] = randn(rng, 20, H, scale=0.3)
        w[s + "down_proj.weight"] = randn(rng, H, 20, scale=0.3)
        w[prefix + "shared_expert_gate.weight"] = randn(rng, 1, H)
    flow = (rlx.ModelFlow("moe").input("x", [1, None, H], np.float32)
            .moe_mlp(prefix, spec).output("y"))
    model = rlx.Session().compile(flow.build(w), input_shapes={"x": [1, 7, H]})
    model.load_params(w)
    x = randn(rng, 1, 7, H)
    y = model.run({"x": x})["y"]
    assert scale_err(y, moe_reference(x, w, prefix, spec)) < 1e-4


def test_moe_mlp_errors():
    spec = rlx.MoeSpec(experts=4, experts_per_token=5, intermediate=8)
    flow = (rlx.ModelFlow("moe").input("x", [1, None, H], np.float32)
            .moe_mlp("m.", spec).output("y"))
    with pytest.raises(rlx.RLXError, match=r"experts_per_token \(5\) <= "
                       r"experts \(4\)"):
        flow.build({})
    ok = rlx.MoeSpec(experts=2, experts_per_token=1, intermediate=8)
    flow = (rlx.ModelFlow("moe").input("x", [1, None, H], np.float32)
            .moe_mlp("m.", ok).output("y"))
    with pytest.raises(rlx.RLXError, match="m.experts.0.gate_proj.weight"):
        flow.build({})


def test_built_precision_is_the_flows():
    """A BuiltModel's weight and KV-cache precision and its decode buckets
    were decided when its flow built it: compiling it with a profile that
    says otherwise is refused by name; the built model's own profile (no
    profile given) and a profile differing elsewhere compile."""
    flow, weights = norm_proj()
    built = flow.build(weights)
    session = rlx.Session()
    for key, value in (("weights", "bf16"), ("kv_cache", "f16")):
        p = rlx.CompileProfile()
        p.precision.weights = built.profile.precision.weights
        setattr(p.precision, key, value)
        with pytest.raises(
            rlx.RLXError,
            match=rf'\[precision\] {key} = "{value}", but the flow built this '
            "model with",
        ):
            session.compile(built, profile=p, input_shapes={"x": [1, T, H]})
    p = rlx.CompileProfile.from_toml("[execution]\ndecode_buckets = [16, 64]\n")
    p.precision.weights = built.profile.precision.weights
    with pytest.raises(rlx.RLXError, match=r"\[execution\] decode_buckets "
                       "differ from the ones the flow built this model with"):
        session.compile(built, profile=p, input_shapes={"x": [1, T, H]})
    p = rlx.CompileProfile()
    p.precision.weights = built.profile.precision.weights
    p.passes.dce = False
    for profile in (None, p):
        model = session.compile(built, profile=profile,
                                input_shapes={"x": [1, T, H]})
        model.load_params(weights)
        x = np.random.default_rng(1).standard_normal((1, T, H)).astype(np.float32)
        np.testing.assert_allclose(model.run({"x": x})["y"],
                                   norm_proj_reference(x, weights), 1e-4, 1e-4)
