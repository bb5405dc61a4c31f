// RUN: rlx-opt %s --mir-fuse-dequantize --split-input-file | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(func.func(mir-fuse-dequantize))' --split-input-file | FileCheck %s
// RUN: rlx-opt %s --mir-fusion-report --split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

/// Weights stay in their stored precision up to the kernel. IN:
/// `mir.dequantize %w` read by a transposed matmul, a fused matmul or a row
/// gather. OUT: those ops read `%w` as stored; the dequantize is gone.

// CHECK-LABEL: func.func @fuse_dequantize_matmul_q4_0
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x64xf32>)
// CHECK: %[[W:.*]] = mir.param "w" : tensor<32x64x!mir.quant<q4_0>>
// CHECK-NOT: mir.dequantize
// CHECK: mir.matmul %[[X]], %[[W]] {transpose_rhs} : (tensor<1x4x64xf32>, tensor<32x64x!mir.quant<q4_0>>) -> tensor<1x4x32xf32>
// REPORT: fuse-dequantize.mlir:[[# @LINE + 3]]:8: remark: missed fusion 'dequantize': not fused; hint: run mir-fuse-dequantize
func.func @fuse_dequantize_matmul_q4_0(%x: tensor<1x4x64xf32>) -> tensor<1x4x32xf32> {
  %w = mir.param "w" : tensor<32x64x!mir.quant<q4_0>>
  %f = mir.dequantize %w : (tensor<32x64x!mir.quant<q4_0>>) -> tensor<32x64xf32>
  %y = mir.matmul %x, %f {transpose_rhs} : (tensor<1x4x64xf32>, tensor<32x64xf32>) -> tensor<1x4x32xf32>
  return %y : tensor<1x4x32xf32>
}

// -----

/// Several readers: a fused matmul with a bf16 weight and a plain one.
// CHECK-LABEL: func.func @fuse_dequantize_two_readers_bf16
// CHECK: %[[W:.*]] = mir.param "w" : tensor<32x64xbf16>
// CHECK-NOT: mir.dequantize
// CHECK: mir.fused_matmul %{{.*}}, %[[W]] {activation = #mir<activation silu>, transpose_rhs} : (tensor<4x64xf32>, tensor<32x64xbf16>) -> tensor<4x32xf32>
// CHECK: mir.matmul %{{.*}}, %[[W]] {transpose_rhs}
func.func @fuse_dequantize_two_readers_bf16(%x: tensor<4x64xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %w = mir.param "w" : tensor<32x64xbf16>
  %f = mir.dequantize %w : (tensor<32x64xbf16>) -> tensor<32x64xf32>
  %a = mir.fused_matmul %x, %f {activation = #mir<activation silu>, transpose_rhs} : (tensor<4x64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  %b = mir.matmul %x, %f {transpose_rhs} : (tensor<4x64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return %a, %b : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

/// A row gather of ggml blocks dequantizes the gathered rows itself; one of
/// f16 rows gathers them as stored and widens them.
// CHECK-LABEL: func.func @fuse_dequantize_gathers
// CHECK-NOT: mir.dequantize
// CHECK: %[[Q:.*]] = mir.param "emb" : tensor<100x64x!mir.quant<q8_0>>
// CHECK: mir.gather %[[Q]], %{{.*}} : (tensor<100x64x!mir.quant<q8_0>>, tensor<1x8xi32>) -> tensor<1x8x64xf32>
// CHECK: %[[H:.*]] = mir.param "emb16" : tensor<100x64xf16>
// CHECK: %[[G:.*]] = mir.gather %[[H]], %{{.*}} : (tensor<100x64xf16>, tensor<1x8xi32>) -> tensor<1x8x64xf16>
// CHECK: mir.cast %[[G]] : (tensor<1x8x64xf16>) -> tensor<1x8x64xf32>
func.func @fuse_dequantize_gathers(%ids: tensor<1x8xi32>) -> (tensor<1x8x64xf32>, tensor<1x8x64xf32>) {
  %q = mir.param "emb" : tensor<100x64x!mir.quant<q8_0>>
  %fq = mir.dequantize %q : (tensor<100x64x!mir.quant<q8_0>>) -> tensor<100x64xf32>
  %a = mir.gather %fq, %ids : (tensor<100x64xf32>, tensor<1x8xi32>) -> tensor<1x8x64xf32>
  %h = mir.param "emb16" : tensor<100x64xf16>
  %fh = mir.dequantize %h : (tensor<100x64xf16>) -> tensor<100x64xf32>
  %b = mir.gather %fh, %ids : (tensor<100x64xf32>, tensor<1x8xi32>) -> tensor<1x8x64xf32>
  return %a, %b : tensor<1x8x64xf32>, tensor<1x8x64xf32>
}

// -----

/// Not fused: the weight is also added elementwise (a reader that needs it
/// in f32), and the report says why.
// CHECK-LABEL: func.func @negative_fuse_dequantize_other_reader
// CHECK: mir.dequantize
// REPORT: fuse-dequantize.mlir:[[# @LINE + 3]]:8: remark: missed fusion 'dequantize': a consumer needs the dequantized weight: 'mir.add' reads the dequantized weight; hint: only transposed matmuls
func.func @negative_fuse_dequantize_other_reader(%x: tensor<1x32x64xf32>) -> (tensor<1x32x32xf32>, tensor<32x64xf32>) {
  %w = mir.param "w" : tensor<32x64x!mir.quant<q8_0>>
  %f = mir.dequantize %w : (tensor<32x64x!mir.quant<q8_0>>) -> tensor<32x64xf32>
  %y = mir.matmul %x, %f {transpose_rhs} : (tensor<1x32x64xf32>, tensor<32x64xf32>) -> tensor<1x32x32xf32>
  %z = mir.add %f, %f : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  return %y, %z : tensor<1x32x32xf32>, tensor<32x64xf32>
}

// -----

/// Not fused: a matmul that is not transposed reads the weight as [K, N].
// CHECK-LABEL: func.func @negative_fuse_dequantize_untransposed
// CHECK: mir.dequantize
func.func @negative_fuse_dequantize_untransposed(%x: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %w = mir.param "w" : tensor<64x32xf16>
  %f = mir.dequantize %w : (tensor<64x32xf16>) -> tensor<64x32xf32>
  %y = mir.matmul %x, %f : (tensor<4x64xf32>, tensor<64x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}
