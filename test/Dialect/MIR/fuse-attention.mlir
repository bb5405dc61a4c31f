// RUN: rlx-opt %s --mir-fuse-attention --split-input-file | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(func.func(mir-fuse-attention))' --split-input-file | FileCheck %s

/// Attention. IN: the primitive scaled dot-product attention that
/// convert-hir-to-mir{policy=fusable} emits (heads split by reshape +
/// transpose, GQA by reshape + broadcast + reshape, q·kᵀ, scale, softcap,
/// iota/compare/select masks, softmax, ·v, heads merged). OUT: one
/// `mir.attention` with the head counts, scale, softcap, mask kind, window
/// and padding mask.

// CHECK-LABEL: func.func @fuse_causal_gqa
// CHECK-SAME: (%[[Q:.*]]: tensor<1x8x64xf32>, %[[K:.*]]: tensor<1x8x32xf32>, %[[V:.*]]: tensor<1x8x32xf32>)
// CHECK: %[[O:.*]] = mir.attention %[[Q]], %[[K]], %[[V]] {head_dim = 16 : i64, mask_kind = #mir<mask causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32} : (tensor<1x8x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x8x64xf32>
// CHECK-NEXT: return %[[O]]
func.func @fuse_causal_gqa(%arg0: tensor<1x8x64xf32>, %arg1: tensor<1x8x32xf32>, %arg2: tensor<1x8x32xf32>) -> tensor<1x8x64xf32> {
  %0 = mir.reshape %arg0 : (tensor<1x8x64xf32>) -> tensor<1x8x4x16xf32>
  %1 = mir.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
  %2 = mir.reshape %arg1 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %3 = mir.transpose %2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %4 = mir.reshape %3 : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
  %5 = mir.broadcast %4 : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  %6 = mir.reshape %5 : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %7 = mir.reshape %arg2 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %8 = mir.transpose %7 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %9 = mir.reshape %8 : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
  %10 = mir.broadcast %9 : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  %11 = mir.reshape %10 : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %12 = mir.batch_matmul %1, %6 {transpose_rhs} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %13 = mir.constant dense<2.500000e-01> : tensor<f32>
  %14 = mir.mul %12, %13 : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %15 = mir.constant dense<-3.40282347E+38> : tensor<f32>
  %16 = mir.constant dense<0> : tensor<i64>
  %17 = mir.iota {axis = 0 : i64} : tensor<8x8xi64>
  %18 = mir.add %17, %16 : (tensor<8x8xi64>, tensor<i64>) -> tensor<8x8xi64>
  %19 = mir.iota {axis = 1 : i64} : tensor<8x8xi64>
  %20 = mir.compare %19, %18 {predicate = #mir<cmp le>} : (tensor<8x8xi64>, tensor<8x8xi64>) -> tensor<8x8xi1>
  %21 = mir.select %20, %14, %15 : (tensor<8x8xi1>, tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %22 = mir.softmax %21 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %23 = mir.batch_matmul %22, %11 : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %24 = mir.transpose %23 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x4x8x16xf32>) -> tensor<1x8x4x16xf32>
  %25 = mir.reshape %24 : (tensor<1x8x4x16xf32>) -> tensor<1x8x64xf32>
  return %25 : tensor<1x8x64xf32>
}

// -----

/// A padding mask over dynamic sequence lengths (BERT).

// CHECK-LABEL: func.func @fuse_padding_dynamic
// CHECK-SAME: (%[[Q:.*]]: tensor<2x?x64xf32>, %[[K:.*]]: tensor<2x?x64xf32>, %[[V:.*]]: tensor<2x?x64xf32>, %[[M:.*]]: tensor<2x?xi32>)
// CHECK: %[[O:.*]] = mir.attention %[[Q]], %[[K]], %[[V]] mask(%[[M]]) {head_dim = 16 : i64, mask_kind = #mir<mask padding>, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 2.500000e-01 : f32}
// CHECK-NEXT: return %[[O]]
func.func @fuse_padding_dynamic(%arg0: tensor<2x?x64xf32>, %arg1: tensor<2x?x64xf32>, %arg2: tensor<2x?x64xf32>, %arg3: tensor<2x?xi32>) -> tensor<2x?x64xf32> {
  %0 = mir.reshape %arg0 : (tensor<2x?x64xf32>) -> tensor<2x?x4x16xf32>
  %1 = mir.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x?x4x16xf32>) -> tensor<2x4x?x16xf32>
  %2 = mir.reshape %arg1 : (tensor<2x?x64xf32>) -> tensor<2x?x4x16xf32>
  %3 = mir.transpose %2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x?x4x16xf32>) -> tensor<2x4x?x16xf32>
  %4 = mir.reshape %arg2 : (tensor<2x?x64xf32>) -> tensor<2x?x4x16xf32>
  %5 = mir.transpose %4 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x?x4x16xf32>) -> tensor<2x4x?x16xf32>
  %6 = mir.batch_matmul %1, %3 {transpose_rhs} : (tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32>) -> tensor<2x4x?x?xf32>
  %7 = mir.constant dense<2.500000e-01> : tensor<f32>
  %8 = mir.mul %6, %7 : (tensor<2x4x?x?xf32>, tensor<f32>) -> tensor<2x4x?x?xf32>
  %9 = mir.constant dense<-3.40282347E+38> : tensor<f32>
  %10 = mir.constant dense<0> : tensor<i32>
  %11 = mir.compare %arg3, %10 {predicate = #mir<cmp ne>} : (tensor<2x?xi32>, tensor<i32>) -> tensor<2x?xi1>
  %12 = mir.reshape %11 : (tensor<2x?xi1>) -> tensor<2x1x1x?xi1>
  %13 = mir.select %12, %8, %9 : (tensor<2x1x1x?xi1>, tensor<2x4x?x?xf32>, tensor<f32>) -> tensor<2x4x?x?xf32>
  %14 = mir.softmax %13 : (tensor<2x4x?x?xf32>) -> tensor<2x4x?x?xf32>
  %15 = mir.batch_matmul %14, %5 : (tensor<2x4x?x?xf32>, tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32>
  %16 = mir.transpose %15 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x4x?x16xf32>) -> tensor<2x?x4x16xf32>
  %17 = mir.reshape %16 : (tensor<2x?x4x16xf32>) -> tensor<2x?x64xf32>
  return %17 : tensor<2x?x64xf32>
}

// -----

/// Gemma 2: softcap and a sliding window (causal + window).

// CHECK-LABEL: func.func @fuse_sliding_window_softcap
// CHECK: %[[O:.*]] = mir.attention %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 16 : i64, mask_kind = #mir<mask sliding_window>, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32, softcap = 5.000000e+01 : f32, window = 4 : i64}
// CHECK-NEXT: return %[[O]]
func.func @fuse_sliding_window_softcap(%arg0: tensor<1x8x64xf32>, %arg1: tensor<1x8x32xf32>, %arg2: tensor<1x8x32xf32>) -> tensor<1x8x64xf32> {
  %0 = mir.reshape %arg0 : (tensor<1x8x64xf32>) -> tensor<1x8x4x16xf32>
  %1 = mir.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
  %2 = mir.reshape %arg1 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %3 = mir.transpose %2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %4 = mir.reshape %3 : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
  %5 = mir.broadcast %4 : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  %6 = mir.reshape %5 : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %7 = mir.reshape %arg2 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %8 = mir.transpose %7 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %9 = mir.reshape %8 : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
  %10 = mir.broadcast %9 : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  %11 = mir.reshape %10 : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %12 = mir.batch_matmul %1, %6 {transpose_rhs} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %13 = mir.constant dense<2.500000e-01> : tensor<f32>
  %14 = mir.mul %12, %13 : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %15 = mir.constant dense<5.000000e+01> : tensor<f32>
  %16 = mir.div %14, %15 : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %17 = mir.tanh %16 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %18 = mir.mul %17, %15 : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %19 = mir.constant dense<-3.40282347E+38> : tensor<f32>
  %20 = mir.constant dense<0> : tensor<i64>
  %21 = mir.iota {axis = 0 : i64} : tensor<8x8xi64>
  %22 = mir.add %21, %20 : (tensor<8x8xi64>, tensor<i64>) -> tensor<8x8xi64>
  %23 = mir.iota {axis = 1 : i64} : tensor<8x8xi64>
  %24 = mir.compare %23, %22 {predicate = #mir<cmp le>} : (tensor<8x8xi64>, tensor<8x8xi64>) -> tensor<8x8xi1>
  %25 = mir.select %24, %18, %19 : (tensor<8x8xi1>, tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %26 = mir.sub %22, %23 : (tensor<8x8xi64>, tensor<8x8xi64>) -> tensor<8x8xi64>
  %27 = mir.constant dense<4> : tensor<i64>
  %28 = mir.compare %26, %27 {predicate = #mir<cmp lt>} : (tensor<8x8xi64>, tensor<i64>) -> tensor<8x8xi1>
  %29 = mir.select %28, %25, %19 : (tensor<8x8xi1>, tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %30 = mir.softmax %29 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %31 = mir.batch_matmul %30, %11 : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %32 = mir.transpose %31 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x4x8x16xf32>) -> tensor<1x8x4x16xf32>
  %33 = mir.reshape %32 : (tensor<1x8x4x16xf32>) -> tensor<1x8x64xf32>
  return %33 : tensor<1x8x64xf32>
}

// -----

// CHECK-LABEL: func.func @fuse_no_mask
// CHECK: %[[O:.*]] = mir.attention %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 16 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32}
// CHECK-NEXT: return %[[O]]
func.func @fuse_no_mask(%arg0: tensor<1x8x32xf32>, %arg1: tensor<1x8x32xf32>, %arg2: tensor<1x8x32xf32>) -> tensor<1x8x32xf32> {
  %0 = mir.reshape %arg0 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %1 = mir.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %2 = mir.reshape %arg1 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %3 = mir.transpose %2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %4 = mir.reshape %arg2 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %5 = mir.transpose %4 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %6 = mir.batch_matmul %1, %3 {transpose_rhs} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %7 = mir.constant dense<2.500000e-01> : tensor<f32>
  %8 = mir.mul %6, %7 : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %9 = mir.constant dense<-3.40282347E+38> : tensor<f32>
  %10 = mir.softmax %8 : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %11 = mir.batch_matmul %10, %5 : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %12 = mir.transpose %11 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x16xf32>) -> tensor<1x8x2x16xf32>
  %13 = mir.reshape %12 : (tensor<1x8x2x16xf32>) -> tensor<1x8x32xf32>
  return %13 : tensor<1x8x32xf32>
}

// -----

/// One query against eight keys: the query sits at position Tk - Tq = 7.

// CHECK-LABEL: func.func @fuse_causal_decode_step
// CHECK: %[[O:.*]] = mir.attention %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 16 : i64, mask_kind = #mir<mask causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32} : (tensor<1x1x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x1x64xf32>
// CHECK-NEXT: return %[[O]]
func.func @fuse_causal_decode_step(%arg0: tensor<1x1x64xf32>, %arg1: tensor<1x8x32xf32>, %arg2: tensor<1x8x32xf32>) -> tensor<1x1x64xf32> {
  %0 = mir.reshape %arg0 : (tensor<1x1x64xf32>) -> tensor<1x1x4x16xf32>
  %1 = mir.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x1x4x16xf32>) -> tensor<1x4x1x16xf32>
  %2 = mir.reshape %arg1 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %3 = mir.transpose %2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %4 = mir.reshape %3 : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
  %5 = mir.broadcast %4 : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  %6 = mir.reshape %5 : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %7 = mir.reshape %arg2 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %8 = mir.transpose %7 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %9 = mir.reshape %8 : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
  %10 = mir.broadcast %9 : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  %11 = mir.reshape %10 : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %12 = mir.batch_matmul %1, %6 {transpose_rhs} : (tensor<1x4x1x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x1x8xf32>
  %13 = mir.constant dense<2.500000e-01> : tensor<f32>
  %14 = mir.mul %12, %13 : (tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %15 = mir.constant dense<-3.40282347E+38> : tensor<f32>
  %16 = mir.constant dense<7> : tensor<i64>
  %17 = mir.iota {axis = 0 : i64} : tensor<1x8xi64>
  %18 = mir.add %17, %16 : (tensor<1x8xi64>, tensor<i64>) -> tensor<1x8xi64>
  %19 = mir.iota {axis = 1 : i64} : tensor<1x8xi64>
  %20 = mir.compare %19, %18 {predicate = #mir<cmp le>} : (tensor<1x8xi64>, tensor<1x8xi64>) -> tensor<1x8xi1>
  %21 = mir.select %20, %14, %15 : (tensor<1x8xi1>, tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %22 = mir.softmax %21 : (tensor<1x4x1x8xf32>) -> tensor<1x4x1x8xf32>
  %23 = mir.batch_matmul %22, %11 : (tensor<1x4x1x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x1x16xf32>
  %24 = mir.transpose %23 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x4x1x16xf32>) -> tensor<1x1x4x16xf32>
  %25 = mir.reshape %24 : (tensor<1x1x4x16xf32>) -> tensor<1x1x64xf32>
  return %25 : tensor<1x1x64xf32>
}

// -----

/// The probabilities are also returned.

// CHECK-LABEL: func.func @negative_probs_multi_consumer
// CHECK-NOT: mir.attention
// CHECK: mir.softmax
func.func @negative_probs_multi_consumer(%arg0: tensor<1x8x32xf32>, %arg1: tensor<1x8x32xf32>, %arg2: tensor<1x8x32xf32>) -> (tensor<1x8x32xf32>, tensor<1x2x8x8xf32>) {
  %0 = mir.reshape %arg0 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %1 = mir.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %2 = mir.reshape %arg1 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %3 = mir.transpose %2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %4 = mir.reshape %arg2 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %5 = mir.transpose %4 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %6 = mir.batch_matmul %1, %3 {transpose_rhs} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %7 = mir.constant dense<2.500000e-01> : tensor<f32>
  %8 = mir.mul %6, %7 : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %9 = mir.constant dense<-3.40282347E+38> : tensor<f32>
  %10 = mir.softmax %8 : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %11 = mir.batch_matmul %10, %5 : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %12 = mir.transpose %11 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x16xf32>) -> tensor<1x8x2x16xf32>
  %13 = mir.reshape %12 : (tensor<1x8x2x16xf32>) -> tensor<1x8x32xf32>
  return %13, %10 : tensor<1x8x32xf32>, tensor<1x2x8x8xf32>
}

// -----

/// An additive score bias (ALiBi-like) is not something mir.attention does.

// CHECK-LABEL: func.func @negative_unsupported_score_term
// CHECK-NOT: mir.attention
// CHECK: mir.softmax
func.func @negative_unsupported_score_term(%arg0: tensor<1x8x32xf32>, %arg1: tensor<1x8x32xf32>, %arg2: tensor<1x8x32xf32>, %bias: tensor<1x2x8x8xf32>) -> tensor<1x8x32xf32> {
  %0 = mir.reshape %arg0 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %1 = mir.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %2 = mir.reshape %arg1 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %3 = mir.transpose %2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %4 = mir.reshape %arg2 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %5 = mir.transpose %4 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %6 = mir.batch_matmul %1, %3 {transpose_rhs} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %7 = mir.constant dense<2.500000e-01> : tensor<f32>
  %8 = mir.mul %6, %7 : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %9 = mir.constant dense<-3.40282347E+38> : tensor<f32>
  %alibi = mir.add %8, %bias : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %10 = mir.softmax %alibi : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %11 = mir.batch_matmul %10, %5 : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %12 = mir.transpose %11 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x16xf32>) -> tensor<1x8x2x16xf32>
  %13 = mir.reshape %12 : (tensor<1x8x2x16xf32>) -> tensor<1x8x32xf32>
  return %13 : tensor<1x8x32xf32>
}

// -----

/// A causal mask aligned top-left (query i sees keys j <= i) is not the
/// bottom-right alignment of mir.attention when Tq != Tk.

// CHECK-LABEL: func.func @negative_top_left_causal_mask
// CHECK-NOT: mir.attention
// CHECK: mir.softmax
func.func @negative_top_left_causal_mask(%arg0: tensor<1x1x64xf32>, %arg1: tensor<1x8x32xf32>, %arg2: tensor<1x8x32xf32>) -> tensor<1x1x64xf32> {
  %0 = mir.reshape %arg0 : (tensor<1x1x64xf32>) -> tensor<1x1x4x16xf32>
  %1 = mir.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x1x4x16xf32>) -> tensor<1x4x1x16xf32>
  %2 = mir.reshape %arg1 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %3 = mir.transpose %2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %4 = mir.reshape %3 : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
  %5 = mir.broadcast %4 : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  %6 = mir.reshape %5 : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %7 = mir.reshape %arg2 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %8 = mir.transpose %7 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %9 = mir.reshape %8 : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
  %10 = mir.broadcast %9 : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  %11 = mir.reshape %10 : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %12 = mir.batch_matmul %1, %6 {transpose_rhs} : (tensor<1x4x1x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x1x8xf32>
  %13 = mir.constant dense<2.500000e-01> : tensor<f32>
  %14 = mir.mul %12, %13 : (tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %15 = mir.constant dense<-3.40282347E+38> : tensor<f32>
  %16 = mir.constant dense<0> : tensor<i64>
  %17 = mir.iota {axis = 0 : i64} : tensor<1x8xi64>
  %18 = mir.add %17, %16 : (tensor<1x8xi64>, tensor<i64>) -> tensor<1x8xi64>
  %19 = mir.iota {axis = 1 : i64} : tensor<1x8xi64>
  %20 = mir.compare %19, %18 {predicate = #mir<cmp le>} : (tensor<1x8xi64>, tensor<1x8xi64>) -> tensor<1x8xi1>
  %21 = mir.select %20, %14, %15 : (tensor<1x8xi1>, tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %22 = mir.softmax %21 : (tensor<1x4x1x8xf32>) -> tensor<1x4x1x8xf32>
  %23 = mir.batch_matmul %22, %11 : (tensor<1x4x1x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x1x16xf32>
  %24 = mir.transpose %23 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x4x1x16xf32>) -> tensor<1x1x4x16xf32>
  %25 = mir.reshape %24 : (tensor<1x1x4x16xf32>) -> tensor<1x1x64xf32>
  return %25 : tensor<1x1x64xf32>
}

// -----

/// A window without the causal mask is not a mask kind of mir.attention.

// CHECK-LABEL: func.func @negative_window_without_causal
// CHECK-NOT: mir.attention
// CHECK: mir.softmax
func.func @negative_window_without_causal(%arg0: tensor<1x8x64xf32>, %arg1: tensor<1x8x32xf32>, %arg2: tensor<1x8x32xf32>) -> tensor<1x8x64xf32> {
  %0 = mir.reshape %arg0 : (tensor<1x8x64xf32>) -> tensor<1x8x4x16xf32>
  %1 = mir.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
  %2 = mir.reshape %arg1 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %3 = mir.transpose %2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %4 = mir.reshape %3 : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
  %5 = mir.broadcast %4 : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  %6 = mir.reshape %5 : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %7 = mir.reshape %arg2 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %8 = mir.transpose %7 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %9 = mir.reshape %8 : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
  %10 = mir.broadcast %9 : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  %11 = mir.reshape %10 : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %12 = mir.batch_matmul %1, %6 {transpose_rhs} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %13 = mir.constant dense<2.500000e-01> : tensor<f32>
  %14 = mir.mul %12, %13 : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %15 = mir.constant dense<5.000000e+01> : tensor<f32>
  %16 = mir.div %14, %15 : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %17 = mir.tanh %16 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %18 = mir.mul %17, %15 : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %19 = mir.constant dense<-3.40282347E+38> : tensor<f32>
  %20 = mir.constant dense<0> : tensor<i64>
  %21 = mir.iota {axis = 0 : i64} : tensor<8x8xi64>
  %22 = mir.add %21, %20 : (tensor<8x8xi64>, tensor<i64>) -> tensor<8x8xi64>
  %23 = mir.iota {axis = 1 : i64} : tensor<8x8xi64>
  %24 = mir.compare %23, %22 {predicate = #mir<cmp le>} : (tensor<8x8xi64>, tensor<8x8xi64>) -> tensor<8x8xi1>
  %25 = mir.select %24, %18, %19 : (tensor<8x8xi1>, tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %26 = mir.sub %22, %23 : (tensor<8x8xi64>, tensor<8x8xi64>) -> tensor<8x8xi64>
  %27 = mir.constant dense<4> : tensor<i64>
  %28 = mir.compare %26, %27 {predicate = #mir<cmp lt>} : (tensor<8x8xi64>, tensor<i64>) -> tensor<8x8xi1>
  %29 = mir.select %28, %18, %19 : (tensor<8x8xi1>, tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %30 = mir.softmax %29 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %31 = mir.batch_matmul %30, %11 : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %32 = mir.transpose %31 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x4x8x16xf32>) -> tensor<1x8x4x16xf32>
  %33 = mir.reshape %32 : (tensor<1x8x4x16xf32>) -> tensor<1x8x64xf32>
  return %33 : tensor<1x8x64xf32>
}
