// RUN: rlx-opt %s --mir-unfuse --split-input-file --verify-diagnostics | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(func.func(mir-unfuse))' --split-input-file --verify-diagnostics | FileCheck %s
// RUN: rlx-opt %s --mir-unfuse --split-input-file --verify-diagnostics | rlx-opt --mir-fuse-all --split-input-file | FileCheck %s --check-prefix=REFUSE

// mir-unfuse expands each fused op into the primitives its description
// defines; mir-fuse-all finds the fused ops again (REFUSE), which checks
// that the expansion is the composition the fusions recognise.

// CHECK-LABEL: func.func @fused_matmul
// CHECK-NOT: mir.fused_matmul
// CHECK: %[[MM:.*]] = mir.matmul %arg0, %arg1 {transpose_rhs}
// CHECK: %[[B:.*]] = mir.add %[[MM]], %arg2
// CHECK: %[[G:.*]] = mir.gelu %[[B]]
// CHECK: mir.add %[[G]], %arg3
// REFUSE-LABEL: func.func @fused_matmul
// REFUSE: mir.fused_matmul %arg0, %arg1 bias(%arg2) residual(%arg3) {activation = #mir<activation gelu>, transpose_rhs}
func.func @fused_matmul(%x: tensor<1x8x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>, %r: tensor<1x8x128xf32>) -> tensor<1x8x128xf32> {
  %y = mir.fused_matmul %x, %w bias(%b) residual(%r) {transpose_rhs, activation = #mir<activation gelu>} : (tensor<1x8x64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
  return %y : tensor<1x8x128xf32>
}

// -----

// CHECK-LABEL: func.func @residual_norms
// CHECK: %[[S:.*]] = mir.add %arg0, %arg1
// CHECK: %[[N:.*]] = mir.rms_norm %[[S]], %arg2 {epsilon = 9.99999997E-7 : f32, unit_offset}
// CHECK: %[[S2:.*]] = mir.add %[[N]], %arg1
// CHECK: %[[N2:.*]] = mir.layer_norm %[[S2]], %arg2, %arg2
// CHECK: return %[[S]], %[[N2]]
// REFUSE-LABEL: func.func @residual_norms
// REFUSE: mir.fused_residual_rms_norm
// REFUSE: mir.fused_residual_layer_norm
func.func @residual_norms(%x: tensor<1x8x64xf32>, %r: tensor<1x8x64xf32>, %w: tensor<64xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x64xf32>) {
  %sum, %normed = mir.fused_residual_rms_norm %x, %r, %w {epsilon = 1.0e-6 : f32, unit_offset} : (tensor<1x8x64xf32>, tensor<1x8x64xf32>, tensor<64xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x64xf32>)
  %sum2, %normed2 = mir.fused_residual_layer_norm %normed, %r, %w, %w {epsilon = 1.0e-12 : f32} : (tensor<1x8x64xf32>, tensor<1x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x64xf32>)
  return %sum, %normed2 : tensor<1x8x64xf32>, tensor<1x8x64xf32>
}

// -----

// CHECK-LABEL: func.func @glu
// CHECK: %[[G:.*]] = mir.slice %arg0 {axis = 2 : i64, size = 128 : i64, start = 0 : i64}
// CHECK: %[[U:.*]] = mir.slice %arg0 {axis = 2 : i64, size = 128 : i64, start = 128 : i64}
// CHECK: %[[A:.*]] = mir.silu %[[G]]
// CHECK: mir.mul %[[A]], %[[U]]
// REFUSE-LABEL: func.func @glu
// REFUSE: mir.fused_glu %arg0
func.func @glu(%gu: tensor<1x8x256xf32>) -> tensor<1x8x128xf32> {
  %0 = mir.fused_glu %gu : (tensor<1x8x256xf32>) -> tensor<1x8x128xf32>
  return %0 : tensor<1x8x128xf32>
}

// -----

// An activation without an op of its own round-trips as mir.activation.
// CHECK-LABEL: func.func @glu_and_matmul_mish
// CHECK: %[[G:.*]] = mir.slice %arg0 {axis = 2 : i64, size = 128 : i64, start = 0 : i64}
// CHECK: %[[U:.*]] = mir.slice %arg0 {axis = 2 : i64, size = 128 : i64, start = 128 : i64}
// CHECK: %[[A:.*]] = mir.activation %[[G]] {activation = #mir<activation quick_gelu>}
// CHECK: %[[H:.*]] = mir.mul %[[A]], %[[U]]
// CHECK: %[[MM:.*]] = mir.matmul %[[H]], %arg1 {transpose_rhs}
// CHECK: mir.activation %[[MM]] {activation = #mir<activation mish>}
// REFUSE-LABEL: func.func @glu_and_matmul_mish
// REFUSE: %[[H:.*]] = mir.fused_glu %arg0 {activation = #mir<activation quick_gelu>}
// REFUSE: mir.fused_matmul %[[H]], %arg1 {activation = #mir<activation mish>, transpose_rhs}
func.func @glu_and_matmul_mish(%gu: tensor<1x8x256xf32>, %w: tensor<64x128xf32>) -> tensor<1x8x64xf32> {
  %0 = mir.fused_glu %gu {activation = #mir<activation quick_gelu>} : (tensor<1x8x256xf32>) -> tensor<1x8x128xf32>
  %1 = mir.fused_matmul %0, %w {transpose_rhs, activation = #mir<activation mish>} : (tensor<1x8x128xf32>, tensor<64x128xf32>) -> tensor<1x8x64xf32>
  return %1 : tensor<1x8x64xf32>
}

// -----

// GQA (4 query heads over 2 KV heads), causal.
// CHECK-LABEL: func.func @attention
// CHECK-NOT: mir.attention
// CHECK: mir.broadcast
// CHECK: mir.batch_matmul {{.*}}transpose_rhs
// CHECK: mir.iota
// CHECK: mir.compare
// CHECK: mir.select
// CHECK: mir.softmax
// CHECK: mir.batch_matmul
// REFUSE-LABEL: func.func @attention
// REFUSE: mir.attention %arg0, %arg1, %arg2 {head_dim = 16 : i64, mask_kind = #mir<mask causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32}
func.func @attention(%q: tensor<1x8x64xf32>, %k: tensor<1x8x32xf32>, %v: tensor<1x8x32xf32>) -> tensor<1x8x64xf32> {
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x8x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x8x64xf32>
  return %o : tensor<1x8x64xf32>
}

// -----

// The block's GEMMs, slices, RoPE and the primitive attention.
// CHECK-LABEL: func.func @attention_block
// CHECK-NOT: mir.attention
// CHECK: %[[QKV:.*]] = mir.matmul %arg0, %arg1 {transpose_rhs}
// CHECK-DAG: %[[Q:.*]] = mir.slice %[[QKV]] {axis = 2 : i64, size = 64 : i64, start = 0 : i64}
// CHECK-DAG: %[[K:.*]] = mir.slice %[[QKV]] {axis = 2 : i64, size = 32 : i64, start = 64 : i64}
// CHECK-DAG: mir.slice %[[QKV]] {axis = 2 : i64, size = 32 : i64, start = 96 : i64}
// CHECK: mir.rope %[[Q]], %arg3
// CHECK: mir.rope %[[K]], %arg3
// CHECK: mir.softmax
// CHECK: %[[OUT:.*]] = mir.matmul %{{.*}}, %arg2 {transpose_rhs}
// CHECK: return %[[OUT]]
// REFUSE-LABEL: func.func @attention_block
// REFUSE: mir.attention_block %arg0, %arg1, %arg2 positions(%arg3)
func.func @attention_block(%x: tensor<1x8x64xf32>, %wqkv: tensor<128x64xf32>, %wo: tensor<64x64xf32>, %pos: tensor<8xi64>) -> tensor<1x8x64xf32> {
  %y = mir.attention_block %x, %wqkv, %wo positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, rotary_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x8x64xf32>, tensor<128x64xf32>, tensor<64x64xf32>, tensor<8xi64>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise
// CHECK-NOT: mir.elementwise
// CHECK: %[[C:.*]] = mir.constant
// CHECK: %[[S:.*]] = mir.add %arg0, %arg1
// CHECK: %[[M:.*]] = mir.mul %[[S]], %[[C]]
// CHECK: mir.exp %[[M]]
func.func @elementwise(%a: tensor<1x8x64xf32>, %b: tensor<64xf32>) -> tensor<1x8x64xf32> {
  %y = mir.elementwise %a, %b {
  ^bb0(%x: f32, %z: f32):
    %c = arith.constant 2.0 : f32
    %s = arith.addf %x, %z : f32
    %m = arith.mulf %s, %c : f32
    %e = math.exp %m : f32
    mir.yield %e : f32
  } : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

// A body that yields its smaller input: the result is its broadcast.
// CHECK-LABEL: func.func @elementwise_broadcast
// CHECK: mir.broadcast %arg1 : (tensor<64xf32>) -> tensor<1x8x64xf32>
func.func @elementwise_broadcast(%a: tensor<1x8x64xf32>, %b: tensor<64xf32>) -> tensor<1x8x64xf32> {
  %y = mir.elementwise %a, %b {
  ^bb0(%x: f32, %z: f32):
    mir.yield %z : f32
  } : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

// Left fused, with the reason: a causal mask over a dynamic length, a
// dynamic gate/up width, a body op without a MIR counterpart.
// CHECK-LABEL: func.func @left_fused
// CHECK: mir.attention
// CHECK: mir.fused_glu
// CHECK: mir.elementwise
func.func @left_fused(%q: tensor<1x?x64xf32>, %gu: tensor<1x8x?xf32>, %a: tensor<4xf32>) -> (tensor<1x?x64xf32>, tensor<1x8x?xf32>, tensor<4xf32>) {
  // expected-remark @below {{left fused by mir-unfuse: its causal / sliding-window mask needs static sequence lengths}}
  %o = mir.attention %q, %q, %q {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  // expected-remark @below {{left fused by mir-unfuse: the gate/up width is dynamic}}
  %g = mir.fused_glu %gu : (tensor<1x8x?xf32>) -> tensor<1x8x?xf32>
  // expected-remark @below {{left fused by mir-unfuse: its body op 'math.atan' has no MIR counterpart}}
  %y = mir.elementwise %a {
  ^bb0(%x: f32):
    %s = math.atan %x : f32
    mir.yield %s : f32
  } : (tensor<4xf32>) -> tensor<4xf32>
  return %o, %g, %y : tensor<1x?x64xf32>, tensor<1x8x?xf32>, tensor<4xf32>
}

// -----

/// A fused op's compute-type rounding (round_to) expands into a round trip
/// of two mir.cast ops on each result: after the whole epilogue of a fused
/// matmul, on both results of a residual norm (the normalization reads the
/// unrounded sum), after the GLU, after an attention block's output
/// projection. Nothing is dropped.

// CHECK-LABEL: func.func @rounded
// CHECK: %[[MM:.*]] = mir.matmul %arg0, %arg1 {transpose_rhs}
// CHECK-NEXT: %[[B:.*]] = mir.add %[[MM]], %arg2
// CHECK-NEXT: %[[N:.*]] = mir.cast %[[B]] : (tensor<1x4x8xf32>) -> tensor<1x4x8xbf16>
// CHECK-NEXT: %[[Y:.*]] = mir.cast %[[N]] : (tensor<1x4x8xbf16>) -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[S:.*]] = mir.add %[[Y]], %arg0
// CHECK-NEXT: %[[RN:.*]] = mir.rms_norm %[[S]], %arg2
// CHECK-NEXT: %[[SN:.*]] = mir.cast %[[S]] : (tensor<1x4x8xf32>) -> tensor<1x4x8xf16>
// CHECK-NEXT: %[[SW:.*]] = mir.cast %[[SN]] : (tensor<1x4x8xf16>) -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[NN:.*]] = mir.cast %[[RN]] : (tensor<1x4x8xf32>) -> tensor<1x4x8xf16>
// CHECK-NEXT: %[[NW:.*]] = mir.cast %[[NN]] : (tensor<1x4x8xf16>) -> tensor<1x4x8xf32>
// CHECK: %[[G:.*]] = mir.mul
// CHECK-NEXT: %[[GN:.*]] = mir.cast %[[G]] : (tensor<1x4x4xf32>) -> tensor<1x4x4xbf16>
// CHECK-NEXT: %[[GW:.*]] = mir.cast %[[GN]]
// CHECK: %[[O:.*]] = mir.matmul %{{.*}}, %arg1 {transpose_rhs}
// CHECK-NEXT: %[[ON:.*]] = mir.cast %[[O]] : (tensor<1x4x8xf32>) -> tensor<1x4x8xbf16>
// CHECK-NEXT: %[[OW:.*]] = mir.cast %[[ON]]
// CHECK-NEXT: return %[[SW]], %[[NW]], %[[GW]], %[[OW]]
// REFUSE-LABEL: func.func @rounded
// REFUSE: mir.fused_matmul
func.func @rounded(%x: tensor<1x4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %wqkv: tensor<24x8xf32>) -> (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x4xf32>, tensor<1x4x8xf32>) {
  %y = mir.fused_matmul %x, %w bias(%b) {transpose_rhs, round_to = bf16} : (tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %s, %n = mir.fused_residual_rms_norm %y, %x, %b {round_to = f16} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<8xf32>) -> (tensor<1x4x8xf32>, tensor<1x4x8xf32>)
  %g = mir.fused_glu %n {round_to = bf16} : (tensor<1x4x8xf32>) -> tensor<1x4x4xf32>
  %a = mir.attention_block %x, %wqkv, %w {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, round_to = bf16} : (tensor<1x4x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  return %s, %n, %g, %a : tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x4xf32>, tensor<1x4x8xf32>
}
