// REQUIRES: spirv-val
// RUN: rm -rf %t && rlx-opt %s --convert-mir-to-lir --rlx-gpu-pipeline --rlx-serialize-spirv=output-dir=%t | FileCheck %s
// RUN: %python %S/Inputs/validate.py %t | FileCheck %s --check-prefix=VALID
// RUN: rm -rf %t.emul && rlx-opt %s --convert-mir-to-lir --rlx-gpu-pipeline="int8=false storage-buffer-alignment=16 workgroup-size=128 max-workgroup-invocations=128" --rlx-serialize-spirv=output-dir=%t.emul > /dev/null
// RUN: %python %S/Inputs/validate.py %t.emul | FileCheck %s --check-prefix=VALID

/// Every MIR op kind, primitive and fused, through the whole GPU pipeline:
/// one spirv.module per distinct kernel, each serialized and accepted by
/// spirv-val (Vulkan 1.1), with native 8-bit storage and with i1 tensors
/// emulated in 32-bit words.

// CHECK-COUNT-42: spirv.module @__spv__everything_k
// CHECK-NOT: spirv.module
// VALID: valid: 42

func.func @everything(%x: tensor<2x7x48xf32>, %w: tensor<40x48xf32>, %bias: tensor<40xf32>,
                      %r: tensor<2x7x40xf32>, %q: tensor<1x7x64xf32>, %k: tensor<1x9x32xf32>,
                      %v: tensor<1x9x32xf32>, %mask: tensor<1x9xi32>, %pos: tensor<7xi64>,
                      %ids: tensor<2x3xi32>, %table: tensor<50x48xf32>, %g: tensor<48xf32>,
                      %b2: tensor<48xf32>, %bm: tensor<3x7x16xf32>, %bn: tensor<3x9x16xf32>,
                      %wk: tensor<48x40xf32>, %one: tensor<1x1x48xf32>, %ints: tensor<6x9xi64>,
                      %inv: tensor<8xf32>)
    -> (tensor<2x7x40xf32>, tensor<2x7x40xf32>, tensor<1x1x40xf32>, tensor<1x1x40xf32>,
        tensor<3x7x9xf32>, tensor<1x7x64xf32>, tensor<1x7x64xf32>, tensor<1x7x64xf32>,
        tensor<1x7x64xf32>, tensor<1x7x64xf32>, tensor<1x7x64xf32>, tensor<1x7x64xf32>,
        tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<2x7x48xf32>,
        tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<2x48xf32>, tensor<7xf32>,
        tensor<2x7xf32>, tensor<2x3x48xf32>, tensor<2x7x96xf32>, tensor<2x3x48xf32>,
        tensor<7x2x48xf32>, tensor<14x48xf32>, tensor<2x2x7x48xf32>, tensor<3x5xi64>,
        tensor<2x7x24xf32>, tensor<2x7x48xi1>, tensor<2x7x48xf32>, tensor<6x9xi32>,
        tensor<6x9xi64>, tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<2x7x48xf32>,
        tensor<4xf32>, tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<2x7x48xf32>,
        tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<2x7x48xf32>) {
  // Matrix products: tiled GEMM, GEMV, [K, N] weights, batches, epilogues.
  %m0 = mir.fused_matmul %x, %w bias(%bias) residual(%r) {transpose_rhs, activation = #mir<activation gelu>} : (tensor<2x7x48xf32>, tensor<40x48xf32>, tensor<40xf32>, tensor<2x7x40xf32>) -> tensor<2x7x40xf32>
  %m1 = mir.matmul %x, %wk : (tensor<2x7x48xf32>, tensor<48x40xf32>) -> tensor<2x7x40xf32>
  %m2 = mir.matmul %one, %w {transpose_rhs} : (tensor<1x1x48xf32>, tensor<40x48xf32>) -> tensor<1x1x40xf32>
  %m3 = mir.matmul %one, %wk : (tensor<1x1x48xf32>, tensor<48x40xf32>) -> tensor<1x1x40xf32>
  %m4 = mir.batch_matmul %bm, %bn {transpose_rhs} : (tensor<3x7x16xf32>, tensor<3x9x16xf32>) -> tensor<3x7x9xf32>
  // Attention: causal (GQA), sliding window + softcap, padding mask, key mask on causal.
  %a0 = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, softcap = 0.0 : f32, mask_kind = #mir<mask causal>, window = 0 : i64} : (tensor<1x7x64xf32>, tensor<1x9x32xf32>, tensor<1x9x32xf32>) -> tensor<1x7x64xf32>
  %a1 = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, softcap = 30.0 : f32, mask_kind = #mir<mask sliding_window>, window = 3 : i64} : (tensor<1x7x64xf32>, tensor<1x9x32xf32>, tensor<1x9x32xf32>) -> tensor<1x7x64xf32>
  %a2 = mir.attention %q, %k, %v mask(%mask) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, softcap = 0.0 : f32, mask_kind = #mir<mask padding>, window = 0 : i64} : (tensor<1x7x64xf32>, tensor<1x9x32xf32>, tensor<1x9x32xf32>, tensor<1x9xi32>) -> tensor<1x7x64xf32>
  %a3 = mir.attention %q, %k, %v mask(%mask) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, softcap = 0.0 : f32, mask_kind = #mir<mask causal>, window = 0 : i64} : (tensor<1x7x64xf32>, tensor<1x9x32xf32>, tensor<1x9x32xf32>, tensor<1x9xi32>) -> tensor<1x7x64xf32>
  // RoPE: both pairings, partial rotary dim, given frequencies.
  %r0 = mir.rope %q, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64, theta = 10000.0 : f32, style = #mir<rope_style half>} : (tensor<1x7x64xf32>, tensor<7xi64>) -> tensor<1x7x64xf32>
  %r1 = mir.rope %q, %pos {head_dim = 16 : i64, rotary_dim = 8 : i64, theta = 10000.0 : f32, style = #mir<rope_style interleaved>} : (tensor<1x7x64xf32>, tensor<7xi64>) -> tensor<1x7x64xf32>
  %r2 = mir.rope %q, %pos inv_freq(%inv) {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x7x64xf32>, tensor<7xi64>, tensor<8xf32>) -> tensor<1x7x64xf32>
  // Norms and softmax.
  %n0 = mir.rms_norm %x, %g {epsilon = 1.0e-6 : f32, unit_offset} : (tensor<2x7x48xf32>, tensor<48xf32>) -> tensor<2x7x48xf32>
  %n1 = mir.layer_norm %x, %g, %b2 {epsilon = 1.0e-5 : f32} : (tensor<2x7x48xf32>, tensor<48xf32>, tensor<48xf32>) -> tensor<2x7x48xf32>
  %s0, %n2 = mir.fused_residual_rms_norm %x, %n0, %g {epsilon = 1.0e-5 : f32} : (tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<48xf32>) -> (tensor<2x7x48xf32>, tensor<2x7x48xf32>)
  %s1, %n3 = mir.fused_residual_layer_norm %x, %n1, %g, %b2 {epsilon = 1.0e-5 : f32} : (tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<48xf32>, tensor<48xf32>) -> (tensor<2x7x48xf32>, tensor<2x7x48xf32>)
  %sm = mir.softmax %x {axis = -1 : i64} : (tensor<2x7x48xf32>) -> tensor<2x7x48xf32>
  // Reductions.
  %rs = mir.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x7x48xf32>) -> tensor<2x48xf32>
  %rm = mir.reduce_mean %x {axes = array<i64: 0, 2>} : (tensor<2x7x48xf32>) -> tensor<7xf32>
  %rx = mir.reduce_max %x {axes = array<i64: 2>} : (tensor<2x7x48xf32>) -> tensor<2x7xf32>
  // Data movement.
  %ga = mir.gather %table, %ids {axis = 0 : i64} : (tensor<50x48xf32>, tensor<2x3xi32>) -> tensor<2x3x48xf32>
  %cc = mir.concat %x, %n0 {axis = 2 : i64} : (tensor<2x7x48xf32>, tensor<2x7x48xf32>) -> tensor<2x7x96xf32>
  %sl = mir.slice %x {axis = 1 : i64, start = 2 : i64, size = 3 : i64} : (tensor<2x7x48xf32>) -> tensor<2x3x48xf32>
  %tr = mir.transpose %x {permutation = array<i64: 1, 0, 2>} : (tensor<2x7x48xf32>) -> tensor<7x2x48xf32>
  %sh = mir.slice %cc {axis = 2 : i64, start = 48 : i64, size = 48 : i64} : (tensor<2x7x96xf32>) -> tensor<2x7x48xf32>
  %rsh = mir.reshape %sh : (tensor<2x7x48xf32>) -> tensor<14x48xf32>
  %bc = mir.broadcast %x : (tensor<2x7x48xf32>) -> tensor<2x2x7x48xf32>
  %io = mir.iota {axis = 1 : i64} : tensor<3x5xi64>
  // Elementwise: GLU, compare/select, casts, integers, regions, unary ops.
  %glu = mir.fused_glu %x {activation = #mir<activation silu>} : (tensor<2x7x48xf32>) -> tensor<2x7x24xf32>
  %half = mir.constant dense<0.5> : tensor<48xf32>
  %cmp = mir.compare %x, %half {predicate = #mir<cmp lt>} : (tensor<2x7x48xf32>, tensor<48xf32>) -> tensor<2x7x48xi1>
  %sel = mir.select %cmp, %x, %n0 : (tensor<2x7x48xi1>, tensor<2x7x48xf32>, tensor<2x7x48xf32>) -> tensor<2x7x48xf32>
  %ci = mir.cast %ints : (tensor<6x9xi64>) -> tensor<6x9xi32>
  %isub = mir.sub %ints, %ints : (tensor<6x9xi64>, tensor<6x9xi64>) -> tensor<6x9xi64>
  %reg = mir.elementwise %x, %g {
  ^bb0(%e0: f32, %e1: f32):
    %p = arith.mulf %e0, %e1 : f32
    %t = math.tanh %p : f32
    mir.yield %t : f32
  } : (tensor<2x7x48xf32>, tensor<48xf32>) -> tensor<2x7x48xf32>
  %er = mir.erf %x : (tensor<2x7x48xf32>) -> tensor<2x7x48xf32>
  %pw = mir.pow %sm, %x : (tensor<2x7x48xf32>, tensor<2x7x48xf32>) -> tensor<2x7x48xf32>
  %cst = mir.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %ge = mir.gelu %x {tanh_approx} : (tensor<2x7x48xf32>) -> tensor<2x7x48xf32>
  %rq = mir.rsqrt %sm : (tensor<2x7x48xf32>) -> tensor<2x7x48xf32>
  %lg = mir.log %sm : (tensor<2x7x48xf32>) -> tensor<2x7x48xf32>
  %sg = mir.sigmoid %x : (tensor<2x7x48xf32>) -> tensor<2x7x48xf32>
  %mx = mir.max %x, %n0 : (tensor<2x7x48xf32>, tensor<2x7x48xf32>) -> tensor<2x7x48xf32>
  %dv = mir.div %x, %half : (tensor<2x7x48xf32>, tensor<48xf32>) -> tensor<2x7x48xf32>
  return %m0, %m1, %m2, %m3, %m4, %a0, %a1, %a2, %a3, %r0, %r1, %r2, %n0, %n1, %s0, %n2, %n3, %sm,
         %rs, %rm, %rx, %ga, %cc, %sl, %tr, %rsh, %bc, %io, %glu, %cmp, %sel, %ci, %isub, %reg,
         %er, %pw, %cst, %ge, %rq, %lg, %sg, %mx, %dv
      : tensor<2x7x40xf32>, tensor<2x7x40xf32>, tensor<1x1x40xf32>, tensor<1x1x40xf32>,
        tensor<3x7x9xf32>, tensor<1x7x64xf32>, tensor<1x7x64xf32>, tensor<1x7x64xf32>,
        tensor<1x7x64xf32>, tensor<1x7x64xf32>, tensor<1x7x64xf32>, tensor<1x7x64xf32>,
        tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<2x7x48xf32>,
        tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<2x48xf32>, tensor<7xf32>,
        tensor<2x7xf32>, tensor<2x3x48xf32>, tensor<2x7x96xf32>, tensor<2x3x48xf32>,
        tensor<7x2x48xf32>, tensor<14x48xf32>, tensor<2x2x7x48xf32>, tensor<3x5xi64>,
        tensor<2x7x24xf32>, tensor<2x7x48xi1>, tensor<2x7x48xf32>, tensor<6x9xi32>,
        tensor<6x9xi64>, tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<2x7x48xf32>,
        tensor<4xf32>, tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<2x7x48xf32>,
        tensor<2x7x48xf32>, tensor<2x7x48xf32>, tensor<2x7x48xf32>
}
