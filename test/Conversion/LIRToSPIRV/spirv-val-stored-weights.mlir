// REQUIRES: spirv-val
// RUN: rm -rf %t && rlx-opt %s --convert-mir-to-lir --rlx-gpu-pipeline --rlx-serialize-spirv=output-dir=%t | FileCheck %s
// RUN: %python %S/Inputs/validate.py %t | FileCheck %s --check-prefix=VALID
// RUN: rm -rf %t.emul && rlx-opt %s --convert-mir-to-lir --rlx-gpu-pipeline="int8=false storage-buffer-alignment=16 workgroup-size=128 max-workgroup-invocations=128" --rlx-serialize-spirv=output-dir=%t.emul > /dev/null
// RUN: %python %S/Inputs/validate.py %t.emul | FileCheck %s --check-prefix=VALID

/// Weights kept as stored in every ggml block type, read by the four kernels
/// that decode blocks in their loads (GEMV, tiled GEMM, row gather, standing
/// dequantize): one spirv.module each, all accepted by spirv-val (Vulkan
/// 1.1), with and without native 8-bit storage. The weights bind as i32
/// words. Their values are checked on lavapipe by
/// test/Integration/test_stored_weights.py.

// CHECK-COUNT-40: spirv.module @__spv__stored_blocks_k
// CHECK-NOT: spirv.module
// VALID: valid: 40

func.func @stored_blocks(%x1: tensor<1x1x256xf32>, %x7: tensor<1x7x256xf32>,
                         %ids: tensor<1x3xi32>)
    -> (tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>) {
  %q40 = mir.param "q4_0" : tensor<8x256x!mir.quant<q4_0>>
  %q40_gemv = mir.matmul %x1, %q40 {transpose_rhs} : (tensor<1x1x256xf32>, tensor<8x256x!mir.quant<q4_0>>) -> tensor<1x1x8xf32>
  %q40_gemm = mir.matmul %x7, %q40 {transpose_rhs} : (tensor<1x7x256xf32>, tensor<8x256x!mir.quant<q4_0>>) -> tensor<1x7x8xf32>
  %q40_rows = mir.gather %q40, %ids {axis = 0 : i64} : (tensor<8x256x!mir.quant<q4_0>>, tensor<1x3xi32>) -> tensor<1x3x256xf32>
  %q40_all = mir.dequantize %q40 : (tensor<8x256x!mir.quant<q4_0>>) -> tensor<8x256xf32>
  %q41 = mir.param "q4_1" : tensor<8x256x!mir.quant<q4_1>>
  %q41_gemv = mir.matmul %x1, %q41 {transpose_rhs} : (tensor<1x1x256xf32>, tensor<8x256x!mir.quant<q4_1>>) -> tensor<1x1x8xf32>
  %q41_gemm = mir.matmul %x7, %q41 {transpose_rhs} : (tensor<1x7x256xf32>, tensor<8x256x!mir.quant<q4_1>>) -> tensor<1x7x8xf32>
  %q41_rows = mir.gather %q41, %ids {axis = 0 : i64} : (tensor<8x256x!mir.quant<q4_1>>, tensor<1x3xi32>) -> tensor<1x3x256xf32>
  %q41_all = mir.dequantize %q41 : (tensor<8x256x!mir.quant<q4_1>>) -> tensor<8x256xf32>
  %q50 = mir.param "q5_0" : tensor<8x256x!mir.quant<q5_0>>
  %q50_gemv = mir.matmul %x1, %q50 {transpose_rhs} : (tensor<1x1x256xf32>, tensor<8x256x!mir.quant<q5_0>>) -> tensor<1x1x8xf32>
  %q50_gemm = mir.matmul %x7, %q50 {transpose_rhs} : (tensor<1x7x256xf32>, tensor<8x256x!mir.quant<q5_0>>) -> tensor<1x7x8xf32>
  %q50_rows = mir.gather %q50, %ids {axis = 0 : i64} : (tensor<8x256x!mir.quant<q5_0>>, tensor<1x3xi32>) -> tensor<1x3x256xf32>
  %q50_all = mir.dequantize %q50 : (tensor<8x256x!mir.quant<q5_0>>) -> tensor<8x256xf32>
  %q51 = mir.param "q5_1" : tensor<8x256x!mir.quant<q5_1>>
  %q51_gemv = mir.matmul %x1, %q51 {transpose_rhs} : (tensor<1x1x256xf32>, tensor<8x256x!mir.quant<q5_1>>) -> tensor<1x1x8xf32>
  %q51_gemm = mir.matmul %x7, %q51 {transpose_rhs} : (tensor<1x7x256xf32>, tensor<8x256x!mir.quant<q5_1>>) -> tensor<1x7x8xf32>
  %q51_rows = mir.gather %q51, %ids {axis = 0 : i64} : (tensor<8x256x!mir.quant<q5_1>>, tensor<1x3xi32>) -> tensor<1x3x256xf32>
  %q51_all = mir.dequantize %q51 : (tensor<8x256x!mir.quant<q5_1>>) -> tensor<8x256xf32>
  %q80 = mir.param "q8_0" : tensor<8x256x!mir.quant<q8_0>>
  %q80_gemv = mir.matmul %x1, %q80 {transpose_rhs} : (tensor<1x1x256xf32>, tensor<8x256x!mir.quant<q8_0>>) -> tensor<1x1x8xf32>
  %q80_gemm = mir.matmul %x7, %q80 {transpose_rhs} : (tensor<1x7x256xf32>, tensor<8x256x!mir.quant<q8_0>>) -> tensor<1x7x8xf32>
  %q80_rows = mir.gather %q80, %ids {axis = 0 : i64} : (tensor<8x256x!mir.quant<q8_0>>, tensor<1x3xi32>) -> tensor<1x3x256xf32>
  %q80_all = mir.dequantize %q80 : (tensor<8x256x!mir.quant<q8_0>>) -> tensor<8x256xf32>
  %q2K = mir.param "q2_K" : tensor<8x256x!mir.quant<q2_K>>
  %q2K_gemv = mir.matmul %x1, %q2K {transpose_rhs} : (tensor<1x1x256xf32>, tensor<8x256x!mir.quant<q2_K>>) -> tensor<1x1x8xf32>
  %q2K_gemm = mir.matmul %x7, %q2K {transpose_rhs} : (tensor<1x7x256xf32>, tensor<8x256x!mir.quant<q2_K>>) -> tensor<1x7x8xf32>
  %q2K_rows = mir.gather %q2K, %ids {axis = 0 : i64} : (tensor<8x256x!mir.quant<q2_K>>, tensor<1x3xi32>) -> tensor<1x3x256xf32>
  %q2K_all = mir.dequantize %q2K : (tensor<8x256x!mir.quant<q2_K>>) -> tensor<8x256xf32>
  %q3K = mir.param "q3_K" : tensor<8x256x!mir.quant<q3_K>>
  %q3K_gemv = mir.matmul %x1, %q3K {transpose_rhs} : (tensor<1x1x256xf32>, tensor<8x256x!mir.quant<q3_K>>) -> tensor<1x1x8xf32>
  %q3K_gemm = mir.matmul %x7, %q3K {transpose_rhs} : (tensor<1x7x256xf32>, tensor<8x256x!mir.quant<q3_K>>) -> tensor<1x7x8xf32>
  %q3K_rows = mir.gather %q3K, %ids {axis = 0 : i64} : (tensor<8x256x!mir.quant<q3_K>>, tensor<1x3xi32>) -> tensor<1x3x256xf32>
  %q3K_all = mir.dequantize %q3K : (tensor<8x256x!mir.quant<q3_K>>) -> tensor<8x256xf32>
  %q4K = mir.param "q4_K" : tensor<8x256x!mir.quant<q4_K>>
  %q4K_gemv = mir.matmul %x1, %q4K {transpose_rhs} : (tensor<1x1x256xf32>, tensor<8x256x!mir.quant<q4_K>>) -> tensor<1x1x8xf32>
  %q4K_gemm = mir.matmul %x7, %q4K {transpose_rhs} : (tensor<1x7x256xf32>, tensor<8x256x!mir.quant<q4_K>>) -> tensor<1x7x8xf32>
  %q4K_rows = mir.gather %q4K, %ids {axis = 0 : i64} : (tensor<8x256x!mir.quant<q4_K>>, tensor<1x3xi32>) -> tensor<1x3x256xf32>
  %q4K_all = mir.dequantize %q4K : (tensor<8x256x!mir.quant<q4_K>>) -> tensor<8x256xf32>
  %q5K = mir.param "q5_K" : tensor<8x256x!mir.quant<q5_K>>
  %q5K_gemv = mir.matmul %x1, %q5K {transpose_rhs} : (tensor<1x1x256xf32>, tensor<8x256x!mir.quant<q5_K>>) -> tensor<1x1x8xf32>
  %q5K_gemm = mir.matmul %x7, %q5K {transpose_rhs} : (tensor<1x7x256xf32>, tensor<8x256x!mir.quant<q5_K>>) -> tensor<1x7x8xf32>
  %q5K_rows = mir.gather %q5K, %ids {axis = 0 : i64} : (tensor<8x256x!mir.quant<q5_K>>, tensor<1x3xi32>) -> tensor<1x3x256xf32>
  %q5K_all = mir.dequantize %q5K : (tensor<8x256x!mir.quant<q5_K>>) -> tensor<8x256xf32>
  %q6K = mir.param "q6_K" : tensor<8x256x!mir.quant<q6_K>>
  %q6K_gemv = mir.matmul %x1, %q6K {transpose_rhs} : (tensor<1x1x256xf32>, tensor<8x256x!mir.quant<q6_K>>) -> tensor<1x1x8xf32>
  %q6K_gemm = mir.matmul %x7, %q6K {transpose_rhs} : (tensor<1x7x256xf32>, tensor<8x256x!mir.quant<q6_K>>) -> tensor<1x7x8xf32>
  %q6K_rows = mir.gather %q6K, %ids {axis = 0 : i64} : (tensor<8x256x!mir.quant<q6_K>>, tensor<1x3xi32>) -> tensor<1x3x256xf32>
  %q6K_all = mir.dequantize %q6K : (tensor<8x256x!mir.quant<q6_K>>) -> tensor<8x256xf32>
  return %q40_gemv, %q40_gemm, %q40_rows, %q40_all,
         %q41_gemv, %q41_gemm, %q41_rows, %q41_all,
         %q50_gemv, %q50_gemm, %q50_rows, %q50_all,
         %q51_gemv, %q51_gemm, %q51_rows, %q51_all,
         %q80_gemv, %q80_gemm, %q80_rows, %q80_all,
         %q2K_gemv, %q2K_gemm, %q2K_rows, %q2K_all,
         %q3K_gemv, %q3K_gemm, %q3K_rows, %q3K_all,
         %q4K_gemv, %q4K_gemm, %q4K_rows, %q4K_all,
         %q5K_gemv, %q5K_gemm, %q5K_rows, %q5K_all,
         %q6K_gemv, %q6K_gemm, %q6K_rows, %q6K_all
      : tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>,
        tensor<1x1x8xf32>, tensor<1x7x8xf32>, tensor<1x3x256xf32>, tensor<8x256xf32>
}
