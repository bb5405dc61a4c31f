// RUN: rlx-opt %s --mir-fuse-matmul-epilogue --split-input-file | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(func.func(mir-fuse-matmul-epilogue))' --split-input-file | FileCheck %s

/// Matmul epilogue. IN: `mir.matmul` → [add of an [N] bias] → [activation]
/// → [add of a residual of the result type], every intermediate used once.
/// OUT: one `mir.fused_matmul` with bias, activation and residual.

// CHECK-LABEL: func.func @fuse_bias_gelu
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x64xf32>, %[[W:.*]]: tensor<128x64xf32>, %[[B:.*]]: tensor<128xf32>)
// CHECK: %[[Y:.*]] = mir.fused_matmul %[[X]], %[[W]] bias(%[[B]]) {activation = #mir<activation gelu>, transpose_rhs}
// CHECK-NOT: mir.add
// CHECK-NOT: mir.gelu
// CHECK: return %[[Y]]
func.func @fuse_bias_gelu(%x: tensor<1x8x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>) -> tensor<1x8x128xf32> {
  %0 = mir.matmul %x, %w {transpose_rhs} : (tensor<1x8x64xf32>, tensor<128x64xf32>) -> tensor<1x8x128xf32>
  %1 = mir.add %0, %b : (tensor<1x8x128xf32>, tensor<128xf32>) -> tensor<1x8x128xf32>
  %2 = mir.gelu %1 : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
  return %2 : tensor<1x8x128xf32>
}

// -----

// CHECK-LABEL: func.func @fuse_bias_silu_residual
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[W:.*]]: tensor<16x16xf32>, %[[B:.*]]: tensor<16xf32>, %[[R:.*]]: tensor<4x16xf32>)
// CHECK: %[[Y:.*]] = mir.fused_matmul %[[X]], %[[W]] bias(%[[B]]) residual(%[[R]]) {activation = #mir<activation silu>, transpose_rhs}
// CHECK-NEXT: return %[[Y]]
func.func @fuse_bias_silu_residual(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = mir.matmul %x, %w {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %1 = mir.add %b, %0 : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %2 = mir.silu %1 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %3 = mir.add %r, %2 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %3 : tensor<4x16xf32>
}

// -----

/// The down projection plus the residual stream (LLaMA's MLP output).

// CHECK-LABEL: func.func @fuse_residual_only
// CHECK-SAME: (%[[X:.*]]: tensor<4x32xf32>, %[[W:.*]]: tensor<16x32xf32>, %[[R:.*]]: tensor<4x16xf32>)
// CHECK: %[[Y:.*]] = mir.fused_matmul %[[X]], %[[W]] residual(%[[R]]) {transpose_rhs}
// CHECK-NEXT: return %[[Y]]
func.func @fuse_residual_only(%x: tensor<4x32xf32>, %w: tensor<16x32xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = mir.matmul %x, %w {transpose_rhs} : (tensor<4x32xf32>, tensor<16x32xf32>) -> tensor<4x16xf32>
  %1 = mir.add %r, %0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @fuse_activation_only
// CHECK: mir.fused_matmul %{{.*}}, %{{.*}} {activation = #mir<activation relu>} : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
// CHECK-NOT: mir.relu
func.func @fuse_activation_only(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %0 = mir.matmul %x, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %1 = mir.relu %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

/// The bias fuses; `exp` is no epilogue activation and stays separate.

// CHECK-LABEL: func.func @fuse_bias_before_unsupported_activation
// CHECK: %[[Y:.*]] = mir.fused_matmul %{{.*}}, %{{.*}} bias(%{{.*}}) {transpose_rhs}
// CHECK: mir.exp %[[Y]]
func.func @fuse_bias_before_unsupported_activation(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = mir.matmul %x, %w {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %1 = mir.add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = mir.exp %1 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @negative_unsupported_activation
// CHECK-NOT: mir.fused_matmul
// CHECK: mir.matmul
// CHECK: mir.exp
func.func @negative_unsupported_activation(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>) -> tensor<4x16xf32> {
  %0 = mir.matmul %x, %w {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %1 = mir.exp %0 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

/// The matmul result is needed on its own too.

// CHECK-LABEL: func.func @negative_multi_consumer
// CHECK-NOT: mir.fused_matmul
// CHECK: mir.matmul
// CHECK: mir.add
func.func @negative_multi_consumer(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = mir.matmul %x, %w {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %1 = mir.add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

/// The biased result is used twice: the bias fuses, the activation does not.

// CHECK-LABEL: func.func @fuse_bias_multi_use_before_activation
// CHECK: %[[Y:.*]] = mir.fused_matmul %{{.*}}, %{{.*}} bias(%{{.*}}) {transpose_rhs}
// CHECK: %[[A:.*]] = mir.tanh %[[Y]]
// CHECK: return %[[A]], %[[Y]]
func.func @fuse_bias_multi_use_before_activation(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = mir.matmul %x, %w {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %1 = mir.add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = mir.tanh %1 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2, %1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

/// A residual add whose sum is normalized belongs to mir-fuse-residual-norm.

// CHECK-LABEL: func.func @negative_residual_feeds_norm
// CHECK-NOT: mir.fused_matmul
// CHECK: mir.matmul
// CHECK: mir.add
// CHECK: mir.rms_norm
func.func @negative_residual_feeds_norm(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>, %r: tensor<4x16xf32>, %g: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = mir.matmul %x, %w {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %1 = mir.add %r, %0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %2 = mir.rms_norm %1, %g : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %1, %2 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

/// A rank-2 addend is neither an [N] bias nor a residual of the result type.

// CHECK-LABEL: func.func @negative_broadcast_add
// CHECK-NOT: mir.fused_matmul
func.func @negative_broadcast_add(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>, %b: tensor<1x16xf32>) -> tensor<4x16xf32> {
  %0 = mir.matmul %x, %w {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %1 = mir.add %0, %b : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

/// mir.fused_matmul has no transpose_lhs.

// CHECK-LABEL: func.func @negative_transposed_lhs
// CHECK-NOT: mir.fused_matmul
func.func @negative_transposed_lhs(%x: tensor<16x4xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = mir.matmul %x, %w {transpose_lhs, transpose_rhs} : (tensor<16x4xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %1 = mir.add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
