# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The Vulkan back end's spirv-tools pass: `[backend.spirv] optimize` runs
spirv-opt's performance passes on every kernel (each is validated either
way). Optimized and unoptimized kernels give the same numbers on a small
LLaMA, a BERT layer and a few MIR ops; the profile key round-trips."""

import os

import numpy as np
import pytest

import rlx
from conftest import H, VOCAB, layer_spec, llama_flow, llama_weights, randn

# Softmax, a transposed matmul and a residual RMSNorm (MIR).
MIR = """
func.func @ops(%x: tensor<2x8x64xf32> {rlx.name = "x"}, %a: tensor<2x8x64xf32> {rlx.name = "a"}) -> (tensor<2x8x64xf32> {rlx.name = "softmax"}, tensor<2x8x48xf32> {rlx.name = "proj"}, tensor<2x8x64xf32> {rlx.name = "normed"}) {
  %w = mir.param "w" : tensor<48x64xf32>
  %g = mir.param "g" : tensor<64xf32>
  %s = mir.softmax %x {axis = -1 : i64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %p = mir.matmul %x, %w {transpose_rhs} : (tensor<2x8x64xf32>, tensor<48x64xf32>) -> tensor<2x8x48xf32>
  %h = mir.add %x, %a : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %n = mir.rms_norm %h, %g {epsilon = 1.0e-6 : f32} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  return %s, %p, %n : tensor<2x8x64xf32>, tensor<2x8x48xf32>, tensor<2x8x64xf32>
}
"""


@pytest.fixture(scope="module")
def session():
    try:
        s = rlx.Session("vulkan")
        s.compile(MIR)
    except rlx.RLXError as e:
        if os.environ.get("RLX_REQUIRE_VULKAN") == "1":
            raise
        pytest.skip(f"no Vulkan device: {e}")
    return s


def profiles(tmp_path):
    """The default profile (optimize = true) and one with optimize = false,
    as files."""
    on, off = tmp_path / "on.rlx.toml", tmp_path / "off.rlx.toml"
    on.write_text("[backend.spirv]\noptimize = true\n")
    off.write_text("[backend.spirv]\noptimize = false\n")
    return str(on), str(off)


def run_both(session, tmp_path, source, params, inputs, shapes=None):
    """Outputs of `source` with optimized and with unoptimized kernels, and
    the compile phases of each."""
    results = []
    for profile in profiles(tmp_path):
        model = session.compile(source, profile=profile, input_shapes=shapes)
        model.load_params(params)
        phases = [name for name, _ in model.stats.phase_seconds]
        results.append((model.run(inputs), phases))
    return results


def assert_same(a, b):
    assert sorted(a) == sorted(b)
    for name in a:
        # spirv-opt does not reassociate floating point: the same numbers.
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_mir_ops(session, tmp_path):
    rng = np.random.default_rng(0)
    params = {"w": randn(rng, 48, 64), "g": randn(rng, 64, scale=0.1, offset=1.0)}
    inputs = {"x": randn(rng, 2, 8, 64, scale=1.0), "a": randn(rng, 2, 8, 64)}
    (opt, opt_phases), (plain, plain_phases) = run_both(
        session, tmp_path, MIR, params, inputs
    )
    assert "spirv-validate-opt" in opt_phases
    assert "spirv-validate" in plain_phases
    assert_same(opt, plain)
    ref = np.exp(inputs["x"] - inputs["x"].max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    np.testing.assert_allclose(opt["softmax"], ref, rtol=1e-5, atol=1e-6)


def test_llama(session, tmp_path):
    weights = llama_weights(2)
    built = llama_flow(2, lambda i: rlx.llama_prefill_layer_fused(i, layer_spec(i))).build(
        weights
    )
    t = 7
    tokens = np.random.default_rng(1).integers(0, VOCAB, (1, t)).astype(np.int32)
    inputs = {"tokens": tokens, "positions": np.arange(t, dtype=np.int32)[None]}
    shapes = {"tokens": [1, t], "positions": [1, t]}
    (opt, _), (plain, _) = run_both(session, tmp_path, built, weights, inputs, shapes)
    assert_same(opt, plain)
    cpu = rlx.Session().compile(built, input_shapes=shapes)
    cpu.load_params(weights)
    ref = cpu.run(inputs)["logits"]
    np.testing.assert_allclose(opt["logits"], ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_bert_layer(session, tmp_path):
    rng = np.random.default_rng(2)
    p = "encoder.layer.0."
    inter = 2 * H
    weights = {
        p + "attention.self.query.weight": randn(rng, H, H),
        p + "attention.self.query.bias": randn(rng, H),
        p + "attention.self.key.weight": randn(rng, H, H),
        p + "attention.self.key.bias": randn(rng, H),
        p + "attention.self.value.weight": randn(rng, H, H),
        p + "attention.self.value.bias": randn(rng, H),
        p + "attention.output.dense.weight": randn(rng, H, H),
        p + "attention.output.dense.bias": randn(rng, H),
        p + "attention.output.LayerNorm.weight": randn(rng, H, scale=0.1, offset=1.0),
        p + "attention.output.LayerNorm.bias": randn(rng, H),
        p + "intermediate.dense.weight": randn(rng, inter, H),
        p + "intermediate.dense.bias": randn(rng, inter),
        p + "output.dense.weight": randn(rng, H, inter),
        p + "output.dense.bias": randn(rng, H),
        p + "output.LayerNorm.weight": randn(rng, H, scale=0.1, offset=1.0),
        p + "output.LayerNorm.bias": randn(rng, H),
    }
    spec = rlx.BertLayerSpec(num_heads=4, head_dim=H // 4, hidden=H,
                             intermediate=inter, prefix=p)
    built = (
        rlx.ModelFlow("bert_layer")
        .input("x", [1, None, H], "f32")
        .bert_encoder_layer(spec)
        .output("y")
        .build(weights)
    )
    t = 5
    inputs = {"x": randn(rng, 1, t, H, scale=1.0)}
    (opt, _), (plain, _) = run_both(
        session, tmp_path, built, weights, inputs, {"x": [1, t, H]}
    )
    assert_same(opt, plain)


def test_profile_key(tmp_path):
    p = rlx.CompileProfile()
    assert p.backend.spirv.optimize
    p.backend.spirv.optimize = False
    assert "optimize = false" in p.to_toml()
    assert p.to_dict()["backend"]["spirv"]["optimize"] is False
    bad = tmp_path / "bad.rlx.toml"
    bad.write_text("[backend.spirv]\noptimise = false\n")
    with pytest.raises(rlx.RLXError, match="did you mean 'optimize'"):
        rlx.Session().compile(MIR, profile=str(bad))
