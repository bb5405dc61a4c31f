# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Compiling MLIR text and files at the HIR and MIR levels: the IR of each
stage as text, the fusion report as a dict, compile errors with the
compiler's diagnostics, AOT libraries."""

import os

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

# A residual add feeding an RMSNorm (MIR): fuses into
# mir.fused_residual_rms_norm.
MIR = """
func.func @f(%x: tensor<1x8x64xf32> {rlx.name = "x"}, %a: tensor<1x8x64xf32> {rlx.name = "a"}) -> (tensor<1x8x64xf32> {rlx.name = "sum"}, tensor<1x8x64xf32> {rlx.name = "normed"}) {
  %w = mir.param "w" : tensor<64xf32>
  %h = mir.add %x, %a : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
  %n = mir.rms_norm %h, %w {epsilon = 1.0e-6 : f32} : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
  return %h, %n : tensor<1x8x64xf32>, tensor<1x8x64xf32>
}
"""

W = np.array([1, 2, 3, 4], np.float32)


def check_scale(model, t=3):
    x = np.arange(t * 4, dtype=np.float32).reshape(1, t, 4)
    model.set_param("w", W)
    np.testing.assert_array_equal(model.run({"x": x})["y"], x * W * 2)


def test_compile_hir_text():
    session = rlx.Session()
    model = session.compile(HIR, input_shapes={"x": [1, 3, 4]})
    check_scale(model)
    assert model.ir == {} and model.fusion_report is None
    assert model.stats.kernels > 0 and session.last_stats.arena_bytes > 0
    # compile_string takes the same text.
    check_scale(session.compile_string(HIR, input_shapes={"x": [1, 5, 4]}), 5)


def test_compile_file(tmp_path):
    path = tmp_path / "scale.mlir"
    path.write_text(HIR)
    session = rlx.Session()
    check_scale(session.compile(path, input_shapes={"x": [1, 3, 4]}))
    check_scale(session.compile(str(path), input_shapes={"x": [1, 3, 4]}))
    check_scale(session.compile_file(path, input_shapes={"x": [1, 3, 4]}))


def test_ir_of_each_stage():
    model = rlx.Session().compile(HIR, input_shapes={"x": [1, 3, 4]}, keep_ir=True)
    assert list(model.ir) == ["input", "specialized", "mir", "mir-fused", "lir", "lir-decided", "llvm"]
    assert "hir.layer_scale" in model.ir["input"]
    assert "tensor<1x3x4xf32>" in model.ir["specialized"]
    assert "mir." in model.ir["mir"] and "hir." not in model.ir["mir"]
    assert "lir.entry" in model.ir["lir"]
    assert "llvm.func" in model.ir["llvm"]
    check_scale(model)


def test_compile_mir_and_fusion_report(tmp_path):
    model = rlx.Session().compile(MIR, dump_dir=tmp_path / "dump")
    assert (tmp_path / "dump" / "fusion-report.json").exists()
    assert (tmp_path / "dump" / "03-mir-fused.mlir").exists()
    assert "mir.fused_residual_rms_norm" in model.ir["mir-fused"]
    assert "mir.fused_residual_rms_norm" not in model.ir["mir"]
    assert "fused_residual_rms_norm: 1" in model.stats.fused_ops
    report = model.fusion_report
    assert isinstance(report, dict)
    assert report["target"] == "cpu"
    assert "residual-norm" in report["fusions"] or report["fusions"]
    assert isinstance(report["missed"], list)
    assert "histogram" in report
    rng = np.random.default_rng(0)
    x, a = rng.standard_normal((2, 1, 8, 64)).astype(np.float32)
    w = rng.standard_normal(64).astype(np.float32)
    model.set_param("w", w)
    out = model.run({"x": x, "a": a})
    h = x + a
    np.testing.assert_allclose(out["sum"], h, 1e-6, 1e-6)
    ref = h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(out["normed"], ref, 1e-4, 1e-4)


def test_fusion_skipped_by_profile():
    profile = rlx.CompileProfile()
    profile.fusion.skip = True
    model = rlx.Session().compile(MIR, profile=profile, keep_ir=True)
    assert "mir.fused_residual_rms_norm" not in model.ir["mir-fused"]
    assert model.stats.fused_ops == "none"
    # A preset by name.
    rlx.Session().compile(MIR, profile="encoder")


def test_phases_and_unfused_regions(tmp_path):
    model = rlx.Session().compile(HIR, input_shapes={"x": [1, 3, 4]})
    phases = [name for name, _ in model.stats.phase_seconds]
    assert phases == ["specialize", "hir-to-mir", "fusion", "mir-to-lir",
                      "lir-decisions",
                      "lir-to-llvm", "jit"]
    assert model.stats.warnings == []
    assert model.stats.fused_ops != "none"
    # [backend.cpu] unfuse_regions: the same result from primitive kernels.
    toml = tmp_path / "unfuse.rlx.toml"
    toml.write_text("[backend.cpu]\nunfuse_regions = true\n")
    plain = rlx.Session().compile(HIR, profile=str(toml),
                                  input_shapes={"x": [1, 3, 4]})
    assert plain.stats.fused_ops == "none" and plain.stats.warnings == []
    assert plain.stats.kernels > model.stats.kernels
    check_scale(plain)


def test_unimplemented_hint_warns(tmp_path):
    try:
        session = rlx.Session("vulkan")
        session.compile(HIR, input_shapes={"x": [1, 3, 4]})
    except rlx.RLXError as e:
        if os.environ.get("RLX_REQUIRE_VULKAN") == "1":
            raise
        pytest.skip(f"no Vulkan device: {e}")
    toml = tmp_path / "coop.rlx.toml"
    toml.write_text("[backend.spirv]\ncooperative_matrix = true\n")
    with pytest.warns(UserWarning, match="cooperative_matrix = true is not implemented"):
        model = session.compile(HIR, profile=str(toml),
                                input_shapes={"x": [1, 3, 4]})
    assert len(model.stats.warnings) == 1
    check_scale(model)


def test_compile_errors():
    session = rlx.Session()
    with pytest.raises(rlx.RLXError, match="parsing failed"):
        session.compile("func.func @f(%x: tensor<4xf32>) {")
    with pytest.raises(
        rlx.RLXError, match=r"input 'x' has the dynamic type tensor<1x\?x4xf32>"
    ):
        session.compile(HIR)
    with pytest.raises(rlx.RLXError, match="no function named 'nope'"):
        session.compile(HIR, entry="nope", input_shapes={"x": [1, 3, 4]})
    with pytest.raises(rlx.RLXError, match="no-such.mlir"):
        session.compile("no-such.mlir")
    with pytest.raises(ValueError, match="unknown preset"):
        session.compile(HIR, profile="nope")
    with pytest.raises(TypeError):
        session.compile(42)
    with pytest.raises(ValueError, match="unknown device"):
        rlx.Session("tpu")


def test_aot_library(tmp_path):
    session = rlx.Session()
    session.compile_to_library(HIR, tmp_path / "scale", input_shapes={"x": [1, 3, 4]})
    assert (tmp_path / "scale.so").exists() and (tmp_path / "scale.json").exists()
    model = rlx.CompiledModel.load_library(
        tmp_path / "scale.so", tmp_path / "scale.json"
    )
    check_scale(model)


def test_reflect():
    # The dict rlx-run --describe=json prints: the source's dynamic dim is
    # None, the parameters form weight blocks, the kernels are listed.
    model = rlx.Session().compile_string(HIR, input_shapes={"x": [1, 3, 4]})
    d = model.reflect()
    (x,) = d["inputs"]
    assert x["name"] == "x" and x["dtype"] == "f32"
    assert x["shape"] == [1, 3, 4] and x["source_shape"] == [1, None, 4]
    assert d["shapes"] == "symbolic"
    assert [o["name"] for o in d["outputs"]] == ["y"]
    (block,) = d["params"]["blocks"]
    assert block["prefix"] == "w" and block["bytes"] == d["params"]["bytes"] == 16
    assert d["arena"]["bytes"] > 0
    assert d["kernels"]["count"] == len(d["kernels"]["list"]) > 0
    assert "llama32_prefill" in d["profile"]["presets"]


def test_sliced_param_in_the_manifest():
    """A sliced param (a range of a checkpoint tensor, as a tensor-parallel
    rank's weights are) lists its source, size and start in the manifest,
    and set_param of the whole source keeps only the range."""
    text = """
func.func @f(%x: tensor<2x4xf32> {rlx.name = "x"}) -> (tensor<2x4xf32> {rlx.name = "y"}) {
  %w = mir.param "w[2:4]" {sources = ["w"], concat_axis = 0 : i64, source_sizes = array<i64: 2>, source_starts = array<i64: 2>} : tensor<2x4xf32>
  %y = mir.add %x, %w : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
"""
    model = rlx.Session().compile(text)
    (entry,) = [e for e in model.manifest if e["kind"] == "param"]
    assert entry["name"] == "w[2:4]"
    assert entry["sources"] == ["w"] and entry["source_sizes"] == [2]
    assert entry["source_starts"] == [2] and entry["concat_axis"] == 0
    w = np.arange(16, dtype=np.float32).reshape(4, 4)
    model.set_param("w", w)
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(model.run({"x": x})["y"], x + w[2:4])


@pytest.mark.parametrize("key,value", [("weights", "q8_0"), ("weights", "bf16"),
                                       ("kv_cache", "f16")])
def test_recipe_precision_refused_for_a_module(tmp_path, key, value):
    """[precision] weights and kv_cache are what a model recipe converts its
    weights to and keeps its cache in; a module's params and tensors have
    the types it declares, so a profile setting them is refused by name (not
    dropped) by compile, compile_file and compile_to_library."""
    session = rlx.Session()
    p = rlx.CompileProfile()
    setattr(p.precision, key, value)
    shapes = {"x": [1, 3, 4]}
    want = rf'\[precision\] {key} = "{value}" applies to model recipes'
    with pytest.raises(rlx.RLXError, match="the module: " + want):
        session.compile(HIR, profile=p, input_shapes=shapes)
    path = tmp_path / "scale.mlir"
    path.write_text(HIR)
    with pytest.raises(rlx.RLXError, match="scale.mlir: " + want):
        session.compile_file(path, profile=p, input_shapes=shapes)
    with pytest.raises(rlx.RLXError, match=want):
        session.compile_to_library(HIR, tmp_path / "lib", profile=p,
                                   input_shapes=shapes)
    assert not (tmp_path / "lib.so").exists()
    p = rlx.CompileProfile.from_toml("[execution]\ndecode_buckets = [16, 64]\n")
    with pytest.raises(rlx.RLXError, match=r"the module: \[execution\] "
                       "decode_buckets sizes a model recipe's decode graphs"):
        session.compile(HIR, profile=p, input_shapes=shapes)
    # What a module declares is what f32 and stored say: both compile.
    for ok in (["weights", "f32"], ["weights", "stored"]):
        q = rlx.CompileProfile()
        setattr(q.precision, *ok)
        check_scale(session.compile(HIR, profile=q, input_shapes=shapes))
