// RUN: rlx-opt %s --mir-fuse-swiglu --split-input-file | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(func.func(mir-fuse-swiglu))' --split-input-file | FileCheck %s

/// Gated linear unit. IN: `mul(act(slice(gu, last, 0, I)), slice(gu, last,
/// I, I))` on a `[..., 2I]` gate/up projection. OUT: `mir.fused_glu %gu
/// {activation}`. The gate is the first half.

// CHECK-LABEL: func.func @fuse_swiglu
// CHECK-SAME: (%[[GU:.*]]: tensor<1x8x256xf32>)
// CHECK: %[[H:.*]] = mir.fused_glu %[[GU]] : (tensor<1x8x256xf32>) -> tensor<1x8x128xf32>
// CHECK-NOT: mir.slice
// CHECK-NOT: mir.silu
// CHECK: return %[[H]]
func.func @fuse_swiglu(%gu: tensor<1x8x256xf32>) -> tensor<1x8x128xf32> {
  %g = mir.slice %gu {axis = 2 : i64, start = 0 : i64, size = 128 : i64} : (tensor<1x8x256xf32>) -> tensor<1x8x128xf32>
  %a = mir.silu %g : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
  %u = mir.slice %gu {axis = 2 : i64, start = 128 : i64, size = 128 : i64} : (tensor<1x8x256xf32>) -> tensor<1x8x128xf32>
  %h = mir.mul %a, %u : (tensor<1x8x128xf32>, tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
  return %h : tensor<1x8x128xf32>
}

// -----

/// GeGLU (Gemma), with the mul operands swapped: multiplication commutes.

// CHECK-LABEL: func.func @fuse_geglu_operands_swapped
// CHECK: mir.fused_glu %{{.*}} {activation = #mir<activation gelu_tanh>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
// CHECK-NOT: mir.gelu
func.func @fuse_geglu_operands_swapped(%gu: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %u = mir.slice %gu {axis = 1 : i64, start = 32 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %g = mir.slice %gu {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %a = mir.gelu %g {tanh_approx} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %h = mir.mul %u, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %h : tensor<4x32xf32>
}

// -----

/// A negative start counts from the end of the axis.

// CHECK-LABEL: func.func @fuse_swiglu_negative_start
// CHECK: mir.fused_glu
func.func @fuse_swiglu_negative_start(%gu: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %g = mir.slice %gu {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %a = mir.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = mir.slice %gu {axis = 1 : i64, start = -32 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %h = mir.mul %a, %u : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %h : tensor<4x32xf32>
}

// -----

/// The activation on the second half is not what mir.fused_glu computes.

// CHECK-LABEL: func.func @negative_gate_up_wrong_order
// CHECK-NOT: mir.fused_glu
// CHECK: mir.silu
// CHECK: mir.mul
func.func @negative_gate_up_wrong_order(%gu: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %g = mir.slice %gu {axis = 1 : i64, start = 32 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %a = mir.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = mir.slice %gu {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %h = mir.mul %a, %u : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %h : tensor<4x32xf32>
}

// -----

/// The activated gate is used again: fusing would recompute or lose it.

// CHECK-LABEL: func.func @negative_multi_use_activation
// CHECK-NOT: mir.fused_glu
// CHECK: mir.silu
func.func @negative_multi_use_activation(%gu: tensor<4x64xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %g = mir.slice %gu {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %a = mir.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = mir.slice %gu {axis = 1 : i64, start = 32 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %h = mir.mul %a, %u : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %h, %a : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

/// Slices that are not the two halves are not a GLU.

// CHECK-LABEL: func.func @negative_not_halves
// CHECK-NOT: mir.fused_glu
func.func @negative_not_halves(%gu: tensor<4x96xf32>) -> tensor<4x32xf32> {
  %g = mir.slice %gu {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<4x96xf32>) -> tensor<4x32xf32>
  %a = mir.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = mir.slice %gu {axis = 1 : i64, start = 32 : i64, size = 32 : i64} : (tensor<4x96xf32>) -> tensor<4x32xf32>
  %h = mir.mul %a, %u : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %h : tensor<4x32xf32>
}

// -----

/// A dynamic width cannot be checked to be twice the halves.

// CHECK-LABEL: func.func @negative_dynamic_width
// CHECK-NOT: mir.fused_glu
func.func @negative_dynamic_width(%gu: tensor<4x?xf32>) -> tensor<4x32xf32> {
  %g = mir.slice %gu {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<4x?xf32>) -> tensor<4x32xf32>
  %a = mir.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = mir.slice %gu {axis = 1 : i64, start = 32 : i64, size = 32 : i64} : (tensor<4x?xf32>) -> tensor<4x32xf32>
  %h = mir.mul %a, %u : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %h : tensor<4x32xf32>
}
