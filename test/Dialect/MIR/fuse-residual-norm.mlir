// RUN: rlx-opt %s --mir-fuse-residual-norm --split-input-file | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(func.func(mir-fuse-residual-norm))' --split-input-file | FileCheck %s

/// Residual add + norm. IN: `mir.add %stream, %branch` (one type) and a
/// `mir.rms_norm` / `mir.layer_norm` of the sum. OUT: one fused op at the
/// add: `(sum, normed) = fused(%branch, %stream, weights)`; `sum` replaces
/// the add's other uses. The residual operand is the stream, the operand
/// that has other uses (else the left one).

// CHECK-LABEL: func.func @fuse_residual_rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x64xf32>, %[[A:.*]]: tensor<1x8x64xf32>, %[[W:.*]]: tensor<64xf32>)
// CHECK: %[[SUM:.*]], %[[NORMED:.*]] = mir.fused_residual_rms_norm %[[A]], %[[X]], %[[W]] {epsilon = 9.99999997E-7 : f32}
// CHECK-NOT: mir.add
// CHECK-NOT: mir.rms_norm
// CHECK: return %[[SUM]], %[[NORMED]]
func.func @fuse_residual_rms_norm(%x: tensor<1x8x64xf32>, %attn: tensor<1x8x64xf32>, %w: tensor<64xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x64xf32>) {
  %h = mir.add %x, %attn : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
  %n = mir.rms_norm %h, %w {epsilon = 1.0e-6 : f32} : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
  return %h, %n : tensor<1x8x64xf32>, tensor<1x8x64xf32>
}

// -----

/// Gemma's `unit_offset` carries over.

// CHECK-LABEL: func.func @fuse_gemma_unit_offset
// CHECK: mir.fused_residual_rms_norm %{{.*}}, %{{.*}}, %{{.*}} {unit_offset}
func.func @fuse_gemma_unit_offset(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>, %w: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %h = mir.add %x, %y : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %n = mir.rms_norm %h, %w {unit_offset} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %h, %n : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

/// BERT: post-norm, the sum is only normalized.

// CHECK-LABEL: func.func @fuse_residual_layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x64xf32>, %[[O:.*]]: tensor<1x8x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK: %{{.*}}, %[[NORMED:.*]] = mir.fused_residual_layer_norm %[[O]], %[[X]], %[[G]], %[[B]] {epsilon = 9.99999996E-13 : f32}
// CHECK: return %[[NORMED]]
func.func @fuse_residual_layer_norm(%x: tensor<1x8x64xf32>, %o: tensor<1x8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<1x8x64xf32> {
  %h = mir.add %x, %o : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
  %n = mir.layer_norm %h, %g, %b {epsilon = 1.0e-12 : f32} : (tensor<1x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
  return %n : tensor<1x8x64xf32>
}

// -----

/// The stream is the operand that lives on after the add, here the right one.

// CHECK-LABEL: func.func @fuse_stream_on_the_right
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[W:.*]]: tensor<16xf32>, %[[V:.*]]: tensor<16x16xf32>)
// CHECK: %[[M:.*]] = mir.matmul %[[X]], %[[V]]
// CHECK: mir.fused_residual_rms_norm %[[M]], %[[X]], %[[W]]
func.func @fuse_stream_on_the_right(%x: tensor<4x16xf32>, %w: tensor<16xf32>, %v: tensor<16x16xf32>) -> tensor<4x16xf32> {
  %m = mir.matmul %x, %v {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %h = mir.add %m, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %n = mir.rms_norm %h, %w : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %n : tensor<4x16xf32>
}

// -----

/// The sum is used before the norm, whose weight is defined after the add:
/// the fused op goes at the add and the weight moves up.

// CHECK-LABEL: func.func @fuse_hoists_norm_weight
// CHECK: %[[W:.*]] = mir.param "norm"
// CHECK: %[[SUM:.*]], %[[NORMED:.*]] = mir.fused_residual_rms_norm %{{.*}}, %{{.*}}, %[[W]]
// CHECK: %[[E:.*]] = mir.exp %[[SUM]]
// CHECK: return %[[E]], %[[NORMED]]
func.func @fuse_hoists_norm_weight(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %h = mir.add %x, %y : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %e = mir.exp %h : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %w = mir.param "norm" : tensor<16xf32>
  %n = mir.rms_norm %h, %w : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %e, %n : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

/// A bias add is not a residual add.

// CHECK-LABEL: func.func @negative_bias_add
// CHECK-NOT: mir.fused_residual_rms_norm
func.func @negative_bias_add(%x: tensor<4x16xf32>, %b: tensor<16xf32>, %w: tensor<16xf32>) -> tensor<4x16xf32> {
  %h = mir.add %x, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %n = mir.rms_norm %h, %w : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %n : tensor<4x16xf32>
}

// -----

/// The fused op needs one type for both operands and the sum.

// CHECK-LABEL: func.func @negative_mixed_static_dynamic
// CHECK-NOT: mir.fused_residual_rms_norm
func.func @negative_mixed_static_dynamic(%x: tensor<?x16xf32>, %y: tensor<4x16xf32>, %w: tensor<16xf32>) -> tensor<4x16xf32> {
  %h = mir.add %x, %y : (tensor<?x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %n = mir.rms_norm %h, %w : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %n : tensor<4x16xf32>
}

// -----

/// A norm of something other than an add.

// CHECK-LABEL: func.func @negative_no_add
// CHECK-NOT: mir.fused_residual_rms_norm
func.func @negative_no_add(%x: tensor<4x16xf32>, %w: tensor<16xf32>) -> tensor<4x16xf32> {
  %n = mir.rms_norm %x, %w : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %n : tensor<4x16xf32>
}
