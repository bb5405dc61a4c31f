// Two LIR entry points (y = x * w * 2, as scale.mlir, twice): rlx-run needs
// --entry to pick one.
lir.entry @scale arena_size = 0, param_size = 64, alignment = 64 {
  %0 = lir.alloc : memref<1x3x4xf32>
  %1 = lir.view params[0] : memref<4xf32>
  %2 = lir.alloc : memref<1x3x4xf32>
  %3 = lir.alloc : memref<1x3x4xf32>
  lir.io input "x" %0 : memref<1x3x4xf32>
  lir.io param "w" %1 : memref<4xf32>
  lir.kernel "mul" ins(%0, %1 : memref<1x3x4xf32>, memref<4xf32>) outs(%2 : memref<1x3x4xf32>) {
  ^bb0(%arg0: tensor<1x3x4xf32>, %arg1: tensor<4xf32>):
    %4 = mir.mul %arg0, %arg1 : (tensor<1x3x4xf32>, tensor<4xf32>) -> tensor<1x3x4xf32>
    lir.yield %4 : tensor<1x3x4xf32>
  }
  lir.kernel "mul" ins(%2 : memref<1x3x4xf32>) outs(%3 : memref<1x3x4xf32>) {
  ^bb0(%arg0: tensor<1x3x4xf32>):
    %4 = mir.constant dense<2.000000e+00> : tensor<f32>
    %5 = mir.mul %arg0, %4 : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
    lir.yield %5 : tensor<1x3x4xf32>
  }
  lir.io output "y" %3 : memref<1x3x4xf32>
}
lir.entry @other arena_size = 0, param_size = 64, alignment = 64 {
  %0 = lir.alloc : memref<1x3x4xf32>
  %1 = lir.view params[0] : memref<4xf32>
  %2 = lir.alloc : memref<1x3x4xf32>
  %3 = lir.alloc : memref<1x3x4xf32>
  lir.io input "x" %0 : memref<1x3x4xf32>
  lir.io param "w" %1 : memref<4xf32>
  lir.kernel "mul" ins(%0, %1 : memref<1x3x4xf32>, memref<4xf32>) outs(%2 : memref<1x3x4xf32>) {
  ^bb0(%arg0: tensor<1x3x4xf32>, %arg1: tensor<4xf32>):
    %4 = mir.mul %arg0, %arg1 : (tensor<1x3x4xf32>, tensor<4xf32>) -> tensor<1x3x4xf32>
    lir.yield %4 : tensor<1x3x4xf32>
  }
  lir.kernel "mul" ins(%2 : memref<1x3x4xf32>) outs(%3 : memref<1x3x4xf32>) {
  ^bb0(%arg0: tensor<1x3x4xf32>):
    %4 = mir.constant dense<2.000000e+00> : tensor<f32>
    %5 = mir.mul %arg0, %4 : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
    lir.yield %5 : tensor<1x3x4xf32>
  }
  lir.io output "y" %3 : memref<1x3x4xf32>
}
