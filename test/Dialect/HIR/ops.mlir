// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --mlir-print-op-generic | rlx-opt | FileCheck %s

// CHECK-LABEL: func.func @rms_norm
func.func @rms_norm(%x: tensor<1x?x64xf32>) -> tensor<1x?x64xf32> {
  // CHECK: %[[W:.*]] = hir.param "w" : tensor<64xf32>
  %w = hir.param "w" : tensor<64xf32>
  // CHECK: hir.rms_norm %{{.*}}, %[[W]]
  %y = hir.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}
