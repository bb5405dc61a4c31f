# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""[precision] compute (mir-compute-precision): every activation
one op passes to another is rounded to bf16 / f16, each kernel computing in
f32. Checked against a NumPy reference that rounds at the same places (so a
missing or extra rounding fails: one bf16 rounding moves the output by
~1e-3, the tolerance is 1e-5); the returned value is not rounded. On the
CPU (bf16, f16) and on Vulkan (f16)."""

import numpy as np
import pytest

from conftest import assert_close

rng = np.random.default_rng(7)


def bf16(a):
    """f32 -> bf16 -> f32, rounding to nearest even."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    bits = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1)))
    return (bits & np.uint32(0xFFFF0000)).view(np.float32)


def f16(a):
    return a.astype(np.float16).astype(np.float32)


ROUND = {"bf16": bf16, "f16": f16, "f32": lambda a: a}

MODULE = """
func.func @f(%x: tensor<5x64xf32> {rlx.name = "x"},
             %w: tensor<64xf32> {rlx.name = "w"},
             %m: tensor<64x24xf32> {rlx.name = "m"})
    -> (tensor<5x24xf32> {rlx.name = "y"}, tensor<5x24xf32> {rlx.name = "z"}) {
  %e = mir.mul %x, %x : (tensor<5x64xf32>, tensor<5x64xf32>) -> tensor<5x64xf32>
  %h = mir.rms_norm %e, %w {epsilon = 1.0e-5 : f32}
      : (tensor<5x64xf32>, tensor<64xf32>) -> tensor<5x64xf32>
  %s = mir.silu %h : (tensor<5x64xf32>) -> tensor<5x64xf32>
  %y = mir.matmul %s, %m : (tensor<5x64xf32>, tensor<64x24xf32>) -> tensor<5x24xf32>
  %a = mir.add %h, %x : (tensor<5x64xf32>, tensor<5x64xf32>) -> tensor<5x64xf32>
  %t = mir.tanh %a : (tensor<5x64xf32>) -> tensor<5x64xf32>
  %z = mir.matmul %t, %m : (tensor<5x64xf32>, tensor<64x24xf32>) -> tensor<5x24xf32>
  return %y, %z : tensor<5x24xf32>, tensor<5x24xf32>
}
"""


def reference(x, w, m, r):
    e = r(x * x)
    h = r(e / np.sqrt(np.mean(e.astype(np.float64) ** 2, axis=-1,
                              keepdims=True) + 1e-5).astype(np.float32) * w)
    s = r(h / (1 + np.exp(-h)))
    # add + tanh fuse into one mir.elementwise: its input h and its result
    # are rounded inside its body, the sum between them is not.
    t = r(np.tanh(h + x))
    return [(v.astype(np.float64) @ m).astype(np.float32) for v in (s, t)]


def run_checked(runner, tmp_path, compute, args=()):
    """MODULE under [precision] compute = `compute`: each output against the
    NumPy reference that rounds where RLX does, within 1e-5 of its scale;
    with bf16 / f16 the unrounded reference is well outside that."""
    x = rng.standard_normal((5, 64)).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(64)).astype(np.float32)
    m = rng.standard_normal((64, 24)).astype(np.float32)
    profile = tmp_path / "p.rlx.toml"
    profile.write_text(f'[precision]\ncompute = "{compute}"\n')
    out = runner.run(MODULE, {"x": x, "w": w, "m": m},
                     args=("--profile", str(profile), *args))
    f32 = reference(x, w, m, ROUND["f32"])
    for name, want, unrounded in zip("yz", reference(x, w, m, ROUND[compute]),
                                     f32):
        scale = np.abs(want).max()
        assert_close(out[name], want, rtol=1e-5, atol=1e-5 * scale)
        if compute != "f32":
            # Without the roundings the output is far off the reference.
            assert np.abs(unrounded - want).max() > 20 * 1e-5 * scale


@pytest.mark.parametrize("compute", ["bf16", "f16", "f32"])
def test_rounded_where_values_pass_between_ops(rlx, tmp_path, compute):
    run_checked(rlx, tmp_path, compute)


def test_rlx_run_compute_flag(rlx, tmp_path):
    """rlx-run MODULE --compute bf16 is the profile's compute = "bf16"."""
    run_checked(rlx, tmp_path, "bf16")  # the profile route, checked
    x = rng.standard_normal((5, 64)).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(64)).astype(np.float32)
    m = rng.standard_normal((64, 24)).astype(np.float32)
    out = rlx.run(MODULE, {"x": x, "w": w, "m": m}, args=("--compute", "bf16"))
    for name, want in zip("yz", reference(x, w, m, ROUND["bf16"])):
        assert_close(out[name], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_f16_on_vulkan(vulkan_rlx, tmp_path):
    """compute = f16 on Vulkan (the SPIR-V back end holds f16): the same
    roundings, the same outputs as the CPU's."""
    run_checked(vulkan_rlx, tmp_path, "f16")


PRODUCERS = """
func.func @f(%x: tensor<5x64xf32> {rlx.name = "x"},
             %r: tensor<5x64xf32> {rlx.name = "r"},
             %w: tensor<64xf32> {rlx.name = "w"},
             %b: tensor<64xf32> {rlx.name = "b"},
             %mgu: tensor<64x48xf32> {rlx.name = "mgu"},
             %m2: tensor<24x64xf32> {rlx.name = "m2"},
             %m3: tensor<64x24xf32> {rlx.name = "m3"})
    -> (tensor<5x24xf32> {rlx.name = "y"}, tensor<5x24xf32> {rlx.name = "z"}) {
  %s, %n = mir.fused_residual_rms_norm %x, %r, %w {epsilon = 1.0e-5 : f32}
      : (tensor<5x64xf32>, tensor<5x64xf32>, tensor<64xf32>)
      -> (tensor<5x64xf32>, tensor<5x64xf32>)
  %gu = mir.matmul %n, %mgu : (tensor<5x64xf32>, tensor<64x48xf32>) -> tensor<5x48xf32>
  %g = mir.fused_glu %gu : (tensor<5x48xf32>) -> tensor<5x24xf32>
  %d = mir.matmul %g, %m2 : (tensor<5x24xf32>, tensor<24x64xf32>) -> tensor<5x64xf32>
  %s2, %n2 = mir.fused_residual_layer_norm %d, %s, %w, %b {epsilon = 1.0e-5 : f32}
      : (tensor<5x64xf32>, tensor<5x64xf32>, tensor<64xf32>, tensor<64xf32>)
      -> (tensor<5x64xf32>, tensor<5x64xf32>)
  %l = mir.layer_norm %n2, %w, %b {epsilon = 1.0e-5 : f32}
      : (tensor<5x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<5x64xf32>
  %y = mir.matmul %l, %m3 : (tensor<5x64xf32>, tensor<64x24xf32>) -> tensor<5x24xf32>
  %z = mir.matmul %s2, %m3 : (tensor<5x64xf32>, tensor<64x24xf32>) -> tensor<5x24xf32>
  return %y, %z : tensor<5x24xf32>, tensor<5x24xf32>
}
"""


def producers_reference(v, r):
    """PRODUCERS with rounding `r` where RLX rounds: each norm's and the
    GLU's results (round_to: a fused residual norm normalizes the unrounded
    sum, then rounds both), each matmul's result read by another op."""
    def mm(a, b):
        return (a.astype(np.float64) @ b).astype(np.float32)

    def rms(a):
        ms = np.mean(a.astype(np.float64) ** 2, axis=-1, keepdims=True)
        return (a / np.sqrt(ms + 1e-5)).astype(np.float32) * v["w"]

    def layer(a):
        a64 = a.astype(np.float64)
        c = a64 - a64.mean(axis=-1, keepdims=True)
        y = c / np.sqrt((c ** 2).mean(axis=-1, keepdims=True) + 1e-5)
        return y.astype(np.float32) * v["w"] + v["b"]

    s = v["x"] + v["r"]
    n, s = r(rms(s)), r(s)
    gu = r(mm(n, v["mgu"]))
    gate, up = gu[:, :24], gu[:, 24:]
    g = r(gate / (1 + np.exp(-gate)) * up)
    s2 = r(mm(g, v["m2"])) + s
    n2, s2 = r(layer(s2)), r(s2)
    return [mm(r(layer(n2)), v["m3"]), mm(s2, v["m3"])]


def layer_values(gu, m2, m3):
    """Random f32 inputs x, r (5 x 64), norm weights w, b (64) and GEMM
    weights mgu, m2, m3 of the given shapes."""
    vals = {"x": rng.standard_normal((5, 64)), "r": rng.standard_normal((5, 64)),
            "w": 1 + 0.1 * rng.standard_normal(64),
            "b": 0.1 * rng.standard_normal(64),
            "mgu": 0.2 * rng.standard_normal(gu),
            "m2": 0.3 * rng.standard_normal(m2),
            "m3": 0.2 * rng.standard_normal(m3)}
    return {k: np.asarray(a, np.float32) for k, a in vals.items()}


@pytest.mark.parametrize("compute", ["bf16", "f16"])
def test_norms_and_glu_round_their_results(rlx, tmp_path, compute):
    """The fused residual norms, the layer norm and the GLU round their own
    results (round_to, no round-trip kernel): both results of a fused
    residual norm, its normed rows from the unrounded sum. Against the
    NumPy reference rounding at those places, within 1e-5 of the scale;
    the unrounded reference is far outside it."""
    vals = layer_values((64, 48), (24, 64), (64, 24))
    profile = tmp_path / "p.rlx.toml"
    profile.write_text(f'[precision]\ncompute = "{compute}"\n')
    out = rlx.run(PRODUCERS, vals, args=("--profile", str(profile)))
    for name, want, unrounded in zip(
            "yz", producers_reference(vals, ROUND[compute]),
            producers_reference(vals, ROUND["f32"])):
        scale = np.abs(want).max()
        assert_close(out[name], want, rtol=1e-5, atol=1e-5 * scale)
        assert np.abs(unrounded - want).max() > 20 * 1e-5 * scale


PARAMS = """
func.func @f(%x: tensor<5x64xf32> {rlx.name = "x"},
             %r: tensor<5x64xf32> {rlx.name = "r"})
    -> (tensor<5x32xf32> {rlx.name = "y"}, tensor<5x32xf32> {rlx.name = "z"}) {
  %w = mir.param "w" : tensor<64xf32>
  %b = mir.param "b" : tensor<64xf32>
  %mgu = mir.param "mgu" : tensor<96x64xWT>
  %m2 = mir.param "m2" : tensor<64x48xWT>
  %m3 = mir.param "m3" : tensor<32x64xWT>
  %s, %n = mir.fused_residual_rms_norm %x, %r, %w {epsilon = 1.0e-5 : f32}
      : (tensor<5x64xf32>, tensor<5x64xf32>, tensor<64xf32>)
      -> (tensor<5x64xf32>, tensor<5x64xf32>)
  %gu = mir.matmul %n, %mgu {transpose_rhs}
      : (tensor<5x64xf32>, tensor<96x64xWT>) -> tensor<5x96xf32>
  %g = mir.fused_glu %gu : (tensor<5x96xf32>) -> tensor<5x48xf32>
  %d = mir.fused_matmul %g, %m2 residual(%s) {transpose_rhs}
      : (tensor<5x48xf32>, tensor<64x48xWT>, tensor<5x64xf32>) -> tensor<5x64xf32>
  %l = mir.layer_norm %d, %w, %b {epsilon = 1.0e-5 : f32}
      : (tensor<5x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<5x64xf32>
  %y = mir.matmul %l, %m3 {transpose_rhs}
      : (tensor<5x64xf32>, tensor<32x64xWT>) -> tensor<5x32xf32>
  %o = mir.matmul %d, %m3 {transpose_rhs}
      : (tensor<5x64xf32>, tensor<32x64xWT>) -> tensor<5x32xf32>
  %z = mir.tanh %o : (tensor<5x32xf32>) -> tensor<5x32xf32>
  return %y, %z : tensor<5x32xf32>, tensor<5x32xf32>
}
"""


def params_reference(v, r):
    """PARAMS with rounding `r` where RLX rounds: the norms' and the GLU's
    results, each GEMM's result after its whole epilogue (the residual)."""
    def mm(a, w):
        return (a.astype(np.float64) @ w.astype(np.float64).T).astype(
            np.float32)

    s = v["x"] + v["r"]
    ms = np.mean(s.astype(np.float64) ** 2, axis=-1, keepdims=True)
    n = r((s / np.sqrt(ms + 1e-5)).astype(np.float32) * v["w"])
    s = r(s)
    gu = r(mm(n, v["mgu"]))
    gate, up = gu[:, :48], gu[:, 48:]
    g = r(gate / (1 + np.exp(-gate)) * up)
    d = r(mm(g, v["m2"]) + s)
    c = d.astype(np.float64) - d.mean(axis=-1, keepdims=True)
    ln = c / np.sqrt((c ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    l = r(ln.astype(np.float32) * v["w"] + v["b"])
    # tanh fuses into its matmul (the activation of a fused matmul): the
    # product is not rounded before it.
    return [mm(l, v["m3"]), np.tanh(mm(d, v["m3"]))]




def check_params_run(runner, tmp_path, compute, weights):
    """Runs PARAMS with its GEMM weights in `weights` (f32: the generated
    GEMM over nk16 panels and the GLU in its epilogue; f16: the
    micro-kernels) under `compute`; checks the outputs against the NumPy
    reference and returns the decided LIR."""
    vals = layer_values((96, 64), (64, 48), (32, 64))
    feeds = {k: vals[k] for k in ("x", "r")}
    params = {k: vals[k] if k in "wb" else vals[k].astype(weights)
              for k in ("w", "b", "mgu", "m2", "m3")}
    if weights == "float16":
        vals.update({k: params[k].astype(np.float32)
                     for k in ("mgu", "m2", "m3")})
    profile = tmp_path / "p.rlx.toml"
    profile.write_text(f'[precision]\ncompute = "{compute}"\n')
    dump = tmp_path / "ir"
    wt = {"float32": "f32", "float16": "f16"}[weights]
    out = runner.run(PARAMS.replace("xWT>", f"x{wt}>"), feeds, params,
                     args=("--profile", str(profile), "--dump-ir", str(dump)))
    for name, want, unrounded in zip(
            "yz", params_reference(vals, ROUND[compute]),
            params_reference(vals, ROUND["f32"])):
        scale = np.abs(want).max()
        assert_close(out[name], want, rtol=1e-5, atol=1e-5 * scale)
        assert np.abs(unrounded - want).max() > 20 * 1e-5 * scale
    return (dump / "05-lir-decided.mlir").read_text()


@pytest.mark.parametrize("weights", ["float32", "float16"])
@pytest.mark.parametrize("compute", ["bf16", "f16"])
def test_gemms_round_as_they_store(rlx, tmp_path, compute, weights):
    """Each GEMM rounds its result in its epilogue (a fused matmul's
    round_to, a plain matmul becoming one), after the residual: no
    round-trip kernel is left. With f32 weights the generated GEMM rounds in
    registers and the gate/up GEMM keeps the GLU in its epilogue (rounding
    gate, up and their product); with f16 weights the micro-kernels'
    epilogue rounds. Against NumPy rounding at the same places, 1e-5."""
    lir = check_params_run(rlx, tmp_path, compute, weights)
    assert 'lir.kernel "elementwise"' not in lir
    if weights == "float32":
        assert 'lir.kernel "matmul_glu"' in lir
        assert "gemm_generated" in lir
    else:
        assert "#lir.config<ukernel>" in lir


def test_gemms_round_on_vulkan(vulkan_rlx, tmp_path):
    """compute = f16 on Vulkan: the SPIR-V GEMMs round in their epilogue
    too, the same outputs as the CPU's and the reference's."""
    check_params_run(vulkan_rlx, tmp_path, "f16", "float32")


def test_refused_by_name(rlx, tmp_path):
    """What is not implemented is refused by name: bf16 compute on Vulkan
    (no bf16 values in SPIR-V), and [precision] mixed."""
    x = np.ones((5, 64), np.float32)
    feeds = {"x": x, "w": x[0], "m": np.ones((64, 24), np.float32)}
    for text, args, message in (
            ('compute = "bf16"', ("--device", "vulkan"),
             '[precision] compute = "bf16" is implemented on the CPU only'),
            ('mixed = "auto"', (),
             '[precision] mixed = "auto" is not implemented')):
        profile = tmp_path / "p.rlx.toml"
        profile.write_text(f"[precision]\n{text}\n")
        err = rlx.run(MODULE, feeds, args=("--profile", str(profile), *args),
                      expect_fail=True)
        assert message in err, err
