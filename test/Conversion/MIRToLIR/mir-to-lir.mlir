// RUN: rlx-opt %s -split-input-file --convert-mir-to-lir --lir-plan-arena --lir-verify-plan | FileCheck %s
// RUN: rlx-opt %s -split-input-file --convert-mir-to-lir --lir-plan-arena=stats -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS

/// Each op becomes a kernel over views; inputs, params (derived ones with
/// their sources) and outputs are in the manifest; ids that feed a gather
/// carry the table size; buffers are reused once dead.

// CHECK-LABEL: lir.entry @chain arena_size = 384, param_size = 832, alignment = 64
// STATS: remark: arena 384 bytes (naive 576, peak live 384), params 832 bytes
func.func @chain(%ids: tensor<1x4xi32> {rlx.name = "ids"}) -> (tensor<1x4x8xf32> {rlx.name = "y"}) {
  // CHECK-DAG: %[[IDS:.*]] = lir.view arena[{{[0-9]+}}] : memref<1x4xi32>
  // CHECK-DAG: %[[T:.*]] = lir.view params[0] : memref<10x8xf32>
  // CHECK-DAG: %[[W:.*]] = lir.view params[320] : memref<16x8xf32>
  %t = mir.param "table" : tensor<10x8xf32>
  %w = mir.param "a+b" {sources = ["a", "b"], concat_axis = 0 : i64, source_sizes = array<i64: 8, 8>} : tensor<16x8xf32>
  // CHECK: lir.io input "ids" %[[IDS]] {index_bound = 10 : i64}
  // CHECK: lir.io param "table" %[[T]]
  // CHECK: lir.io param "a+b" %[[W]] {concat_axis = 0 : i64, source_sizes = array<i64: 8, 8>, sources = ["a", "b"]}
  // CHECK: lir.kernel "gather" ins(%[[T]], %[[IDS]] : memref<10x8xf32>, memref<1x4xi32>) outs(%[[H:.*]] : memref<1x4x8xf32>)
  %h = mir.gather %t, %ids : (tensor<10x8xf32>, tensor<1x4xi32>) -> tensor<1x4x8xf32>
  // CHECK: lir.kernel "matmul" ins(%[[H]], %[[W]] : {{.*}}) outs(%[[GU:.*]] : memref<1x4x16xf32>)
  %gu = mir.matmul %h, %w {transpose_rhs} : (tensor<1x4x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16xf32>
  // CHECK: lir.kernel "fused_glu" ins(%[[GU]] : memref<1x4x16xf32>) outs(%[[G:.*]] : memref<1x4x8xf32>)
  %g = mir.fused_glu %gu : (tensor<1x4x16xf32>) -> tensor<1x4x8xf32>
  // CHECK: lir.kernel "exp" {{.*}} attributes {inplace}
  %y = mir.exp %g : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  // CHECK: lir.io output "y"
  return %y : tensor<1x4x8xf32>
}

// -----

/// Slices and reshapes are aliases of their source (no kernel): a slice of
/// the last dim is a strided view, splitting it into heads keeps the stride.
// CHECK-LABEL: lir.entry @aliases
func.func @aliases(%x: tensor<2x24xf32>) -> tensor<2x2x4xf32> {
  // CHECK: %[[X:.*]] = lir.view arena[0] : memref<2x24xf32>
  // CHECK: %[[S:.*]] = lir.view arena[32] source(%[[X]] : memref<2x24xf32>) : memref<2x8xf32, strided<[24, 1]>>
  // CHECK: %[[R:.*]] = lir.view arena[32] source(%[[S]] : {{.*}}) : memref<2x2x4xf32, strided<[24, 4, 1]>>
  // CHECK-NOT: lir.kernel "slice"
  // CHECK-NOT: lir.kernel "reshape"
  // CHECK: lir.kernel "neg" ins(%[[R]]
  %s = mir.slice %x {axis = 1 : i64, start = 8 : i64, size = 8 : i64} : (tensor<2x24xf32>) -> tensor<2x8xf32>
  %r = mir.reshape %s : (tensor<2x8xf32>) -> tensor<2x2x4xf32>
  %n = mir.neg %r : (tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  return %n : tensor<2x2x4xf32>
}

// -----

/// A forward step on an outer axis is a strided alias; a backward step, or
/// a step along the innermost axis, is a copy kernel.
// CHECK-LABEL: lir.entry @stepped_slices
func.func @stepped_slices(%x: tensor<6x8xf32>) -> (tensor<3x8xf32>, tensor<6x3xf32>, tensor<2x8xf32>) {
  // CHECK: %[[X:.*]] = lir.view arena[0] : memref<6x8xf32>
  // CHECK: lir.view arena[32] source(%[[X]] : memref<6x8xf32>) : memref<3x8xf32, strided<[16, 1]>>
  // CHECK: lir.kernel "slice"
  // CHECK: lir.kernel "slice"
  // CHECK-NOT: lir.kernel "slice"
  %a = mir.slice %x {axis = 0 : i64, start = 1 : i64, size = 3 : i64, step = 2 : i64} : (tensor<6x8xf32>) -> tensor<3x8xf32>
  %b = mir.slice %x {axis = 1 : i64, start = 0 : i64, size = 3 : i64, step = 3 : i64} : (tensor<6x8xf32>) -> tensor<6x3xf32>
  %c = mir.slice %x {axis = 0 : i64, start = 5 : i64, size = 2 : i64, step = -4 : i64} : (tensor<6x8xf32>) -> tensor<2x8xf32>
  return %a, %b, %c : tensor<3x8xf32>, tensor<6x3xf32>, tensor<2x8xf32>
}

// -----

/// The pieces of a split are views of their ranges (no kernel).
// CHECK-LABEL: lir.entry @split_pieces
func.func @split_pieces(%x: tensor<2x24xf32>) -> (tensor<2x8xf32>, tensor<2x16xf32>) {
  // CHECK: %[[X:.*]] = lir.view arena[0] : memref<2x24xf32>
  // CHECK: %[[A:.*]] = lir.view arena[0] source(%[[X]] : memref<2x24xf32>) : memref<2x8xf32, strided<[24, 1]>>
  // CHECK: %[[B:.*]] = lir.view arena[32] source(%[[X]] : memref<2x24xf32>) : memref<2x16xf32, strided<[24, 1]>>
  // CHECK-NOT: lir.kernel "split"
  // CHECK: lir.kernel "neg" ins(%[[A]]
  // CHECK: lir.kernel "exp" ins(%[[B]]
  %s:2 = mir.split %x {axis = -1 : i64, sizes = array<i64: 8, 16>} : (tensor<2x24xf32>) -> (tensor<2x8xf32>, tensor<2x16xf32>)
  %a = mir.neg %s#0 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %b = mir.exp %s#1 : (tensor<2x16xf32>) -> tensor<2x16xf32>
  return %a, %b : tensor<2x8xf32>, tensor<2x16xf32>
}

// -----

/// An output that is an input (or a param, a constant) is copied into its
/// own buffer.
// CHECK-LABEL: lir.entry @passthrough
func.func @passthrough(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c = mir.constant dense<2.0> : tensor<4xf32>
  // CHECK: lir.kernel "copy" ins(%{{.*}} : memref<4xf32>) outs
  // CHECK: lir.kernel "copy" outs(
  // CHECK-NEXT: mir.constant
  return %x, %c : tensor<4xf32>, tensor<4xf32>
}

// -----

/// mir.attention_block runs on the CPU as GEMM, views, RoPE, attention, GEMM.
// CHECK-LABEL: lir.entry @attention_block
func.func @attention_block(%x: tensor<1x4x32xf32>, %pos: tensor<4xi32>) -> tensor<1x4x32xf32> {
  %w = mir.param "qkv" : tensor<64x32xf32>
  %o = mir.param "o" : tensor<32x32xf32>
  // CHECK: lir.kernel "matmul"
  // CHECK: lir.kernel "rope"
  // CHECK: lir.kernel "rope"
  // CHECK: lir.kernel "attention"
  // CHECK: lir.kernel "matmul"
  %y = mir.attention_block %x, %w, %o positions(%pos) {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 16 : i64, rotary_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x4x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, tensor<4xi32>) -> tensor<1x4x32xf32>
  return %y : tensor<1x4x32xf32>
}
