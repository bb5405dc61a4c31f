// RUN: rlx-opt %s -canonicalize | FileCheck %s

/// embed_scale by 1 is the identity.
// CHECK-LABEL: func.func @embed_scale_by_one
func.func @embed_scale_by_one(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  // CHECK-NOT: hir.embed_scale
  // CHECK: return %{{.*}} : tensor<1x4x8xf32>
  %y = hir.embed_scale %x {scale = 1.0 : f32} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// CHECK-LABEL: func.func @negative_embed_scale_by_two
func.func @negative_embed_scale_by_two(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  // CHECK: hir.embed_scale
  %y = hir.embed_scale %x {scale = 2.0 : f32} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

/// layer_scale by a constant all-ones gamma is the identity.
// CHECK-LABEL: func.func @layer_scale_by_ones
func.func @layer_scale_by_ones(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %g = arith.constant dense<1.0> : tensor<8xf32>
  // CHECK-NOT: hir.layer_scale
  %y = hir.layer_scale %x, %g : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

/// A learned gamma (a param) is kept.
// CHECK-LABEL: func.func @negative_layer_scale_param
func.func @negative_layer_scale_param(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %g = hir.param "gamma" : tensor<8xf32>
  // CHECK: hir.layer_scale
  %y = hir.layer_scale %x, %g : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

/// Unused params are pure and disappear.
// CHECK-LABEL: func.func @dead_param
func.func @dead_param(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NOT: hir.param
  %w = hir.param "unused" : tensor<4xf32>
  return %x : tensor<4xf32>
}
