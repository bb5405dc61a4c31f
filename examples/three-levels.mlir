// One RMSNorm at the three levels of RLX.
//
// HIR: what the author meant (a block with a named weight).
func.func @hir_norm(%x: tensor<1x?x64xf32>) -> tensor<1x?x64xf32> {
  %w = hir.param "model.norm.weight" : tensor<64xf32>
  %y = hir.rms_norm %x, %w {epsilon = 1.0e-6 : f32}
      : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}

// MIR: what is computed (a tensor DAG).
func.func @mir_proj(%x: tensor<1x8x64xf32>) -> tensor<1x8x32xf32> {
  %w = mir.param "proj.weight" : tensor<32x64xf32>
  %y = mir.matmul %x, %w {transpose_rhs}
      : (tensor<1x8x64xf32>, tensor<32x64xf32>) -> tensor<1x8x32xf32>
  return %y : tensor<1x8x32xf32>
}

// LIR: what runs where (views of one arena).
lir.entry @forward arena_size = 4096, param_size = 8192, alignment = 64 {
  %x = lir.view arena[0] : memref<8x64xf32>
}
