// RUN: rlx-opt %s --mir-fuse-shared-input-matmuls --split-input-file | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(func.func(mir-fuse-shared-input-matmuls))' --split-input-file | FileCheck %s

/// Shared-input matmuls. IN: two or more `mir.matmul`s on one input with
/// `mir.param` weights of one layout. OUT: one matmul over a derived param
/// (`sources`, `concat_axis`, `source_sizes`) and one `mir.slice` per original
/// result along the last axis.

// CHECK-LABEL: func.func @fuse_qkv_projections
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x64xf32>)
// CHECK: %[[W:.*]] = mir.param "q+k+v" {concat_axis = 0 : i64, source_sizes = array<i64: 64, 32, 32>, sources = ["q", "k", "v"]} : tensor<128x64xf32>
// CHECK: %[[QKV:.*]] = mir.matmul %[[X]], %[[W]] {transpose_rhs} : (tensor<1x8x64xf32>, tensor<128x64xf32>) -> tensor<1x8x128xf32>
// CHECK: %[[Q:.*]] = mir.slice %[[QKV]] {axis = 2 : i64, size = 64 : i64, start = 0 : i64}
// CHECK: %[[K:.*]] = mir.slice %[[QKV]] {axis = 2 : i64, size = 32 : i64, start = 64 : i64}
// CHECK: %[[V:.*]] = mir.slice %[[QKV]] {axis = 2 : i64, size = 32 : i64, start = 96 : i64}
// CHECK-NOT: mir.matmul
// CHECK: return %[[Q]], %[[K]], %[[V]]
func.func @fuse_qkv_projections(%x: tensor<1x8x64xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) {
  %wq = mir.param "q" : tensor<64x64xf32>
  %wk = mir.param "k" : tensor<32x64xf32>
  %wv = mir.param "v" : tensor<32x64xf32>
  %q = mir.matmul %x, %wq {transpose_rhs} : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
  %k = mir.matmul %x, %wk {transpose_rhs} : (tensor<1x8x64xf32>, tensor<32x64xf32>) -> tensor<1x8x32xf32>
  %v = mir.matmul %x, %wv {transpose_rhs} : (tensor<1x8x64xf32>, tensor<32x64xf32>) -> tensor<1x8x32xf32>
  return %q, %k, %v : tensor<1x8x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>
}

// -----

/// When every projection adds a parameter bias, the biases are concatenated
/// too and added once, before the slices (BERT's Q/K/V).

// CHECK-LABEL: func.func @fuse_projections_with_biases
// CHECK: %[[W:.*]] = mir.param "wq+wk" {concat_axis = 0 : i64, source_sizes = array<i64: 16, 16>, sources = ["wq", "wk"]} : tensor<32x16xf32>
// CHECK: %[[Y:.*]] = mir.matmul %{{.*}}, %[[W]] {transpose_rhs}
// CHECK: %[[B:.*]] = mir.param "bq+bk" {concat_axis = 0 : i64, source_sizes = array<i64: 16, 16>, sources = ["bq", "bk"]} : tensor<32xf32>
// CHECK: %[[YB:.*]] = mir.add %[[Y]], %[[B]] : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// CHECK: %[[Q:.*]] = mir.slice %[[YB]] {axis = 1 : i64, size = 16 : i64, start = 0 : i64}
// CHECK: %[[K:.*]] = mir.slice %[[YB]] {axis = 1 : i64, size = 16 : i64, start = 16 : i64}
// CHECK-NOT: mir.add
// CHECK: return %[[Q]], %[[K]]
func.func @fuse_projections_with_biases(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %wq = mir.param "wq" : tensor<16x16xf32>
  %bq = mir.param "bq" : tensor<16xf32>
  %wk = mir.param "wk" : tensor<16x16xf32>
  %bk = mir.param "bk" : tensor<16xf32>
  %q0 = mir.matmul %x, %wq {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %q = mir.add %q0, %bq : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %k0 = mir.matmul %x, %wk {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %k = mir.add %bk, %k0 : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q, %k : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

/// A bias on only some projections stays where it is, after the slice.

// CHECK-LABEL: func.func @fuse_projections_partial_bias
// CHECK: %[[Y:.*]] = mir.matmul
// CHECK: %[[G:.*]] = mir.slice %[[Y]] {axis = 1 : i64, size = 16 : i64, start = 0 : i64}
// CHECK: %[[U:.*]] = mir.slice %[[Y]] {axis = 1 : i64, size = 16 : i64, start = 16 : i64}
// CHECK: %[[GB:.*]] = mir.add %[[G]], %{{.*}}
// CHECK: return %[[GB]], %[[U]]
func.func @fuse_projections_partial_bias(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %wg = mir.param "wg" : tensor<16x16xf32>
  %bg = mir.param "bg" : tensor<16xf32>
  %wu = mir.param "wu" : tensor<16x16xf32>
  %g0 = mir.matmul %x, %wg {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %g = mir.add %g0, %bg : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %u = mir.matmul %x, %wu {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  return %g, %u : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

/// [K, N] weights (no transpose_rhs) concatenate along axis 1.

// CHECK-LABEL: func.func @fuse_kn_weights
// CHECK: %[[W:.*]] = mir.param "a+b" {concat_axis = 1 : i64, source_sizes = array<i64: 8, 24>, sources = ["a", "b"]} : tensor<16x32xf32>
// CHECK: %[[Y:.*]] = mir.matmul %{{.*}}, %[[W]] : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
// CHECK: mir.slice %[[Y]] {axis = 1 : i64, size = 8 : i64, start = 0 : i64}
// CHECK: mir.slice %[[Y]] {axis = 1 : i64, size = 24 : i64, start = 8 : i64}
func.func @fuse_kn_weights(%x: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x24xf32>) {
  %a = mir.param "a" : tensor<16x8xf32>
  %b = mir.param "b" : tensor<16x24xf32>
  %y0 = mir.matmul %x, %a : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %y1 = mir.matmul %x, %b : (tensor<4x16xf32>, tensor<16x24xf32>) -> tensor<4x24xf32>
  return %y0, %y1 : tensor<4x8xf32>, tensor<4x24xf32>
}

// -----

/// Weights that are not `mir.param`s would need a concatenation per run:
/// left alone (the fusion report says "weights not parameters").

// CHECK-LABEL: func.func @negative_weights_not_parameters
// CHECK-COUNT-2: mir.matmul
// CHECK-NOT: mir.slice
func.func @negative_weights_not_parameters(%x: tensor<4x16xf32>, %wk: tensor<16x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %wq = mir.param "wq" : tensor<16x16xf32>
  %q = mir.matmul %x, %wq {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %k = mir.matmul %x, %wk {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  return %q, %k : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

/// Different weight layouts cannot share one concatenated weight.

// CHECK-LABEL: func.func @negative_mixed_layouts
// CHECK-COUNT-2: mir.matmul
// CHECK-NOT: mir.slice
func.func @negative_mixed_layouts(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %a = mir.param "a" : tensor<16x16xf32>
  %b = mir.param "b" : tensor<16x16xf32>
  %y0 = mir.matmul %x, %a {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %y1 = mir.matmul %x, %b : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  return %y0, %y1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

/// Matmuls on different inputs do not share anything.

// CHECK-LABEL: func.func @negative_different_inputs
// CHECK-COUNT-2: mir.matmul
// CHECK-NOT: mir.slice
func.func @negative_different_inputs(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %a = mir.param "a" : tensor<16x16xf32>
  %b = mir.param "b" : tensor<16x16xf32>
  %y0 = mir.matmul %x, %a {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %y1 = mir.matmul %y, %b {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  return %y0, %y1 : tensor<4x16xf32>, tensor<4x16xf32>
}
