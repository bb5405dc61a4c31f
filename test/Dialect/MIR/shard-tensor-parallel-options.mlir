// RUN: not rlx-opt %s --mir-shard-tensor-parallel=ranks=0 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: not rlx-opt %s --mir-shard-tensor-parallel="ranks=2 rank=2" 2>&1 | FileCheck %s --check-prefix=RANK

/// Bad pass options are errors on the function, which is left unchanged.
// RANKS: error: tensor parallelism needs ranks >= 1, got 0
// RANK: error: rank 2 is not in [0, 2)

func.func @negative_options(%x: tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
  %wgu = mir.param "gate_up" : tensor<256x64xf32>
  %wd = mir.param "down" : tensor<64x128xf32>
  %gu = mir.matmul %x, %wgu {transpose_rhs} : (tensor<1x8x64xf32>, tensor<256x64xf32>) -> tensor<1x8x256xf32>
  %g = mir.fused_glu %gu : (tensor<1x8x256xf32>) -> tensor<1x8x128xf32>
  %y = mir.matmul %g, %wd {transpose_rhs} : (tensor<1x8x128xf32>, tensor<64x128xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}
