// RUN: not rlx-opt %s --mir-fuse-all --mir-fusion-report=assert-clean 2>&1 | FileCheck %s

/// With assert-clean every miss is an error and the pass fails, listing them.

// CHECK: error: missed fusion 'shared-input-matmul': weights not parameters: the weight of projection 0 of 2 is block argument 1
// CHECK: error: missed fusion 'swiglu': gate/up in the wrong order
// CHECK: error: assert-clean: 2 missed fusion(s)
// CHECK: note: 'shared-input-matmul': weights not parameters
// CHECK: note: 'swiglu': gate/up in the wrong order
// CHECK-NOT: fusion report

func.func @two_misses(%x: tensor<4x16xf32>, %wq: tensor<16x16xf32>, %gu: tensor<4x64xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x32xf32>) {
  %wk = mir.param "wk" : tensor<16x16xf32>
  %q = mir.matmul %x, %wq {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %k = mir.matmul %x, %wk {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %g = mir.slice %gu {axis = 1 : i64, start = 32 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %a = mir.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = mir.slice %gu {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %h = mir.mul %a, %u : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %q, %k, %h : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x32xf32>
}
