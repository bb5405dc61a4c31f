// RUN: rlx-opt %s --rlx-gpu-pipeline | FileCheck %s

/// Softmax and log-softmax over an axis other than the last: the row kernel
/// on a view whose last dimension is that axis (strided rows), one workgroup
/// per row of the other axes: 8 rows of 4 for axis 0 of a 4x8 tensor.

// CHECK-LABEL: lir.entry @softmax_axis0
// CHECK: lir.kernel "softmax" {{.*}}workgroups = [8, 1, 1]
// CHECK: lir.kernel "log_softmax" {{.*}}workgroups = [8, 1, 1]
// CHECK-LABEL: spirv.module @__spv__softmax_axis0_k0_softmax
// CHECK: spirv.GL.Exp
// CHECK-LABEL: spirv.module @__spv__softmax_axis0_k1_log_softmax
// CHECK: spirv.GL.Exp
// CHECK: spirv.GL.Log
lir.entry @softmax_axis0 arena_size = 512, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4x8xf32>
  %y = lir.view arena[128] : memref<4x8xf32>
  %z = lir.view arena[256] : memref<4x8xf32>
  lir.io input "x" %x : memref<4x8xf32>
  lir.kernel "softmax" ins(%x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%t: tensor<4x8xf32>):
    %r = mir.softmax %t {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    lir.yield %r : tensor<4x8xf32>
  }
  lir.kernel "log_softmax" ins(%y : memref<4x8xf32>) outs(%z : memref<4x8xf32>) {
  ^bb0(%t: tensor<4x8xf32>):
    %r = mir.log_softmax %t {axis = -2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    lir.yield %r : tensor<4x8xf32>
  }
  lir.io output "z" %z : memref<4x8xf32>
}
