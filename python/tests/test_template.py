# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The three-step compile from Python: Session.build_template ->
Template.specialize -> Specialized.compile, checked against NumPy and
against the one-step compile; templates saved and loaded; the compile cache
seen from a specialization."""

import numpy as np
import pytest

import rlx

# RMSNorm then a projection, with a dynamic sequence dim (HIR).
HIR = """
func.func @norm_proj(%x: tensor<1x?x64xf32> {rlx.name = "x"}) -> tensor<1x?x32xf32> {
  %w = hir.param "norm.weight" : tensor<64xf32>
  %y = hir.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %p = hir.param "proj.weight" : tensor<32x64xf32>
  %z = hir.linear %y, %p : (tensor<1x?x64xf32>, tensor<32x64xf32>) -> tensor<1x?x32xf32>
  return %z : tensor<1x?x32xf32>
}
"""

rng = np.random.default_rng(0)
W = rng.standard_normal(64).astype(np.float32)
P = (0.1 * rng.standard_normal((32, 64))).astype(np.float32)


def run(model, t):
    x = rng.standard_normal((1, t, 64)).astype(np.float32)
    model.set_param("norm.weight", W)
    model.set_param("proj.weight", P)
    y = next(iter(model.run({"x": x}).values()))
    xd = x.astype(np.float64)
    ref = xd / np.sqrt((xd ** 2).mean(-1, keepdims=True) + 1e-6) * W @ P.T
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    return x, y


def test_three_steps():
    s = rlx.Session()
    t = s.build_template(HIR)
    assert t.inputs == [("x", "f32", (1, None, 64))]
    assert "hir." not in t.ir and "tensor<1x?x64xf32>" in t.ir
    assert "fusion report" in t.fusion_report
    arenas = []
    for n in (3, 8):
        spec = t.specialize({"x": [1, n, 64]})
        assert not spec.cached
        (x_entry,) = [e for e in spec.manifest if e["name"] == "x"]
        assert x_entry["shape"] == (1, n, 64)
        arenas.append(spec.arena_bytes)
        model = spec.compile()
        x, y = run(model, n)
        with pytest.raises(rlx.RLXError, match="compiled already"):
            spec.compile()
    assert arenas[0] < arenas[1]
    # The one-step compile computes the same, bit for bit.
    direct = s.compile(HIR, input_shapes={"x": [1, 8, 64]})
    direct.set_param("norm.weight", W)
    direct.set_param("proj.weight", P)
    np.testing.assert_array_equal(
        next(iter(direct.run({"x": x}).values())), y)


def test_bad_shapes():
    t = rlx.Session().build_template(HIR)
    with pytest.raises(rlx.RLXError, match="'x'"):
        t.specialize({})
    with pytest.raises(rlx.RLXError, match="'y'"):
        t.specialize({"x": [1, 2, 64], "y": [1]})


def test_save_load_and_cache(tmp_path):
    s = rlx.Session()
    t = s.build_template(HIR)
    t.save(tmp_path / "t.mlir")
    loaded = s.load_template(tmp_path / "t.mlir", cache_dir=tmp_path / "c")
    assert loaded.ir == t.ir
    first = loaded.specialize({"x": [1, 5, 64]})
    assert not first.cached
    run(first.compile(), 5)
    second = loaded.specialize({"x": [1, 5, 64]})
    assert second.cached
    model = second.compile()
    assert model.stats.phase_seconds[0][0] == "cached"
    run(model, 5)
    with pytest.raises(rlx.RLXError, match="missing.mlir"):
        s.load_template(tmp_path / "missing.mlir")
