// RUN: rlx-opt %s -split-input-file --convert-mir-to-lir | FileCheck %s

/// RoPE, attention and the GEMMs on f16 / bf16 activations are computed in
/// f32 by both back ends: casts to f32, the op in f32, a cast back.

// CHECK-LABEL: lir.entry @rope_f16
// CHECK: lir.kernel "cast"
// CHECK: mir.cast %{{.*}} : (tensor<1x3x16xf16>) -> tensor<1x3x16xf32>
// CHECK: lir.kernel "rope"
// CHECK: mir.rope %{{.*}} : (tensor<1x3x16xf32>, tensor<3xi64>) -> tensor<1x3x16xf32>
// CHECK: lir.kernel "cast"
// CHECK: mir.cast %{{.*}} : (tensor<1x3x16xf32>) -> tensor<1x3x16xf16>
func.func @rope_f16(%x: tensor<1x3x16xf16>, %p: tensor<3xi64>) -> tensor<1x3x16xf16> {
  %y = mir.rope %x, %p {head_dim = 8 : i64, rotary_dim = 8 : i64} : (tensor<1x3x16xf16>, tensor<3xi64>) -> tensor<1x3x16xf16>
  return %y : tensor<1x3x16xf16>
}

// -----

// CHECK-LABEL: lir.entry @attention_bf16
// CHECK-COUNT-3: mir.cast %{{.*}} : (tensor<1x4x8xbf16>) -> tensor<1x4x8xf32>
// CHECK: mir.attention %{{.*}} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
// CHECK: mir.cast %{{.*}} : (tensor<1x4x8xf32>) -> tensor<1x4x8xbf16>
func.func @attention_bf16(%q: tensor<1x4x8xbf16>, %k: tensor<1x4x8xbf16>, %v: tensor<1x4x8xbf16>) -> tensor<1x4x8xbf16> {
  %y = mir.attention %q, %k, %v {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, scale = 0.35 : f32} : (tensor<1x4x8xbf16>, tensor<1x4x8xbf16>, tensor<1x4x8xbf16>) -> tensor<1x4x8xbf16>
  return %y : tensor<1x4x8xbf16>
}

// -----

/// An f32 query reading keys and values kept in f16 stays as it is, and so
/// does an f32 GEMM of a weight kept in f16.
// CHECK-LABEL: lir.entry @negative_f32_query_f16_cache
// CHECK-NOT: mir.cast
// CHECK: mir.attention %{{.*}} : (tensor<1x4x8xf32>, tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<1x4x8xf32>
// CHECK-NOT: mir.cast
func.func @negative_f32_query_f16_cache(%q: tensor<1x4x8xf32>, %k: tensor<1x4x8xf16>, %v: tensor<1x4x8xf16>) -> tensor<1x4x8xf32> {
  %y = mir.attention %q, %k, %v {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 8 : i64, scale = 0.35 : f32} : (tensor<1x4x8xf32>, tensor<1x4x8xf16>, tensor<1x4x8xf16>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

// CHECK-LABEL: lir.entry @fused_matmul_f16
// CHECK-COUNT-4: mir.cast %{{.*}} : (tensor<{{.*}}xf16>) -> tensor<{{.*}}xf32>
// CHECK: mir.fused_matmul %{{.*}} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: mir.cast %{{.*}} : (tensor<2x4xf32>) -> tensor<2x4xf16>
func.func @fused_matmul_f16(%x: tensor<2x3xf16>, %w: tensor<4x3xf16>, %b: tensor<4xf16>, %r: tensor<2x4xf16>) -> tensor<2x4xf16> {
  %y = mir.fused_matmul %x, %w bias(%b) residual(%r) {transpose_rhs} : (tensor<2x3xf16>, tensor<4x3xf16>, tensor<4xf16>, tensor<2x4xf16>) -> tensor<2x4xf16>
  return %y : tensor<2x4xf16>
}
