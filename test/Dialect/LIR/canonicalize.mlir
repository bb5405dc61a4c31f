// RUN: rlx-opt %s -canonicalize | FileCheck %s

/// Views are pure: one nothing uses is removed; kernels and the manifest stay.
// CHECK-LABEL: lir.entry @dead_view
lir.entry @dead_view arena_size = 192, param_size = 0, alignment = 64 {
  // CHECK: %[[X:.*]] = lir.view arena[0]
  // CHECK-NOT: arena[128]
  // CHECK: %[[Y:.*]] = lir.view arena[64]
  %x = lir.view arena[0] : memref<16xf32>
  %unused = lir.view arena[128] : memref<16xf32>
  %y = lir.view arena[64] : memref<16xf32>
  // CHECK: lir.io input "x" %[[X]]
  lir.io input "x" %x : memref<16xf32>
  // CHECK: lir.kernel "exp" ins(%[[X]] : memref<16xf32>) outs(%[[Y]] : memref<16xf32>)
  lir.kernel "exp" ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%t: tensor<16xf32>):
    %r = mir.exp %t : (tensor<16xf32>) -> tensor<16xf32>
    lir.yield %r : tensor<16xf32>
  }
  lir.io output "y" %y : memref<16xf32>
}
