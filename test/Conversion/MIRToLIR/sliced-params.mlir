// RUN: rlx-opt %s --convert-mir-to-lir --lir-plan-arena --lir-pack-params | FileCheck %s

/// A sliced param keeps its ranges in the manifest (`source_starts` on
/// `lir.io param`); one concatenated along N (rows, multiples of 16) is
/// packed nk16 like a derived param, and so is a range of one source along K
/// (the loader packs it whole).

// CHECK-LABEL: lir.entry @sliced_params
// CHECK-DAG: lir.io param "q[0:16]+k[16:32]" %{{.*}} {concat_axis = 0 : i64, layout = #lir.layout<nk16>, source_sizes = array<i64: 16, 16>, source_starts = array<i64: 0, 16>, sources = ["q", "k"]} : memref<32x64xf32>
// CHECK-DAG: lir.io param "o[:,0:32]" %{{.*}} {concat_axis = 1 : i64, layout = #lir.layout<nk16>, source_sizes = array<i64: 32>, source_starts = array<i64: 0>, sources = ["o"]} : memref<64x32xf32>
func.func @sliced_params(%x: tensor<1x4x64xf32> {rlx.name = "x"}) -> (tensor<1x4x64xf32> {rlx.name = "y"}) {
  %w = mir.param "q[0:16]+k[16:32]" {sources = ["q", "k"], concat_axis = 0 : i64, source_sizes = array<i64: 16, 16>, source_starts = array<i64: 0, 16>} : tensor<32x64xf32>
  %o = mir.param "o[:,0:32]" {sources = ["o"], concat_axis = 1 : i64, source_sizes = array<i64: 32>, source_starts = array<i64: 0>} : tensor<64x32xf32>
  %h = mir.matmul %x, %w {transpose_rhs} : (tensor<1x4x64xf32>, tensor<32x64xf32>) -> tensor<1x4x32xf32>
  %y = mir.matmul %h, %o {transpose_rhs} : (tensor<1x4x32xf32>, tensor<64x32xf32>) -> tensor<1x4x64xf32>
  return %y : tensor<1x4x64xf32>
}
