// RUN: rlx-opt %s --split-input-file --convert-lir-to-loops -verify-diagnostics

/// The code generator follows the decisions made on LIR and refuses
/// inconsistent ones: a generated GEMM over a row-major weight, an nk16
/// weight lowered through BLAS, an unplanned entry.

lir.entry @negative_generated_row_major arena_size = 1024, param_size = 4096, alignment = 64 {
  %x = lir.view arena[0] : memref<4x16xf32>
  %w = lir.view params[0] : memref<32x16xf32>
  %y = lir.view arena[256] : memref<4x32xf32>
  lir.io input "x" %x : memref<4x16xf32>
  lir.io param "w" %w : memref<32x16xf32>
  lir.kernel "matmul" ins(%x, %w : memref<4x16xf32>, memref<32x16xf32>) outs(%y : memref<4x32xf32>) attributes {config = #lir.config<gemm_generated, tile = [4, 2, 16]>} {
  ^bb0(%t: tensor<4x16xf32>, %s: tensor<32x16xf32>):
    // expected-error @+1 {{the generated GEMM needs its weight stored nk16 (lir-pack-params)}}
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
    lir.yield %q : tensor<4x32xf32>
  }
  lir.io output "y" %y : memref<4x32xf32>
}

// -----

lir.entry @negative_packed_blas arena_size = 1024, param_size = 4096, alignment = 64 {
  %x = lir.view arena[0] : memref<4x16xf32>
  %w = lir.view params[0] : memref<32x16xf32>
  %y = lir.view arena[256] : memref<4x32xf32>
  lir.io input "x" %x : memref<4x16xf32>
  lir.io param "w" %w {layout = #lir.layout<nk16>} : memref<32x16xf32>
  lir.kernel "matmul" ins(%x, %w : memref<4x16xf32>, memref<32x16xf32>) outs(%y : memref<4x32xf32>) attributes {config = #lir.config<gemm_blas>} {
  ^bb0(%t: tensor<4x16xf32>, %s: tensor<32x16xf32>):
    // expected-error @+1 {{reads an nk16 weight but is not lowered as a generated GEMM (lir-select-strategy)}}
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
    lir.yield %q : tensor<4x32xf32>
  }
  lir.io output "y" %y : memref<4x32xf32>
}

// -----

lir.entry @negative_unplanned arena_size = 0, param_size = 0, alignment = 64 {
  // expected-error @+1 {{is not planned: run lir-plan-arena first}}
  %x = lir.alloc : memref<4xf32>
  lir.io input "x" %x : memref<4xf32>
}

// -----

lir.entry @negative_stored_blas arena_size = 2048, param_size = 4096, alignment = 64 {
  %x = lir.view arena[0] : memref<4x64xf32>
  %w = lir.view params[0] : memref<32x64x!mir.quant<q8_0>>
  %y = lir.view arena[1024] : memref<4x32xf32>
  lir.io input "x" %x : memref<4x64xf32>
  lir.io param "w" %w : memref<32x64x!mir.quant<q8_0>>
  lir.kernel "matmul" ins(%x, %w : memref<4x64xf32>, memref<32x64x!mir.quant<q8_0>>) outs(%y : memref<4x32xf32>) attributes {config = #lir.config<gemm_blas>} {
  ^bb0(%t: tensor<4x64xf32>, %s: tensor<32x64x!mir.quant<q8_0>>):
    // expected-error @+1 {{reads a weight kept as '!mir.quant<q8_0>' but is not lowered by the micro-kernels (lir-select-strategy)}}
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x64xf32>, tensor<32x64x!mir.quant<q8_0>>) -> tensor<4x32xf32>
    lir.yield %q : tensor<4x32xf32>
  }
  lir.io output "y" %y : memref<4x32xf32>
}

// -----

lir.entry @negative_ukernel_f32 arena_size = 2048, param_size = 16384, alignment = 64 {
  %x = lir.view arena[0] : memref<4x64xf32>
  %w = lir.view params[0] : memref<32x64xf32>
  %y = lir.view arena[1024] : memref<4x32xf32>
  lir.io input "x" %x : memref<4x64xf32>
  lir.io param "w" %w : memref<32x64xf32>
  lir.kernel "matmul" ins(%x, %w : memref<4x64xf32>, memref<32x64xf32>) outs(%y : memref<4x32xf32>) attributes {config = #lir.config<ukernel>} {
  ^bb0(%t: tensor<4x64xf32>, %s: tensor<32x64xf32>):
    // expected-error @+1 {{is lowered by the micro-kernels, which read weights kept as f16, bf16 or ggml blocks, not f32}}
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
    lir.yield %q : tensor<4x32xf32>
  }
  lir.io output "y" %y : memref<4x32xf32>
}

// -----

lir.entry @negative_ukernel_strided_rows arena_size = 4096, param_size = 4096, alignment = 64 {
  %a = lir.view arena[0] : memref<4x2x64xf32>
  %x = lir.view arena[0] source(%a : memref<4x2x64xf32>) : memref<4x1x64xf32, strided<[128, 64, 1]>>
  %w = lir.view params[0] : memref<32x64x!mir.quant<q8_0>>
  %y = lir.view arena[2048] : memref<4x1x32xf32>
  lir.io input "a" %a : memref<4x2x64xf32>
  lir.io param "w" %w : memref<32x64x!mir.quant<q8_0>>
  lir.kernel "matmul" ins(%x, %w : memref<4x1x64xf32, strided<[128, 64, 1]>>, memref<32x64x!mir.quant<q8_0>>) outs(%y : memref<4x1x32xf32>) attributes {config = #lir.config<ukernel>} {
  ^bb0(%t: tensor<4x1x64xf32>, %s: tensor<32x64x!mir.quant<q8_0>>):
    // expected-error @+1 {{the micro-kernels need f32 rows of unit stride that collapse into one matrix}}
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x1x64xf32>, tensor<32x64x!mir.quant<q8_0>>) -> tensor<4x1x32xf32>
    lir.yield %q : tensor<4x1x32xf32>
  }
  lir.io output "y" %y : memref<4x1x32xf32>
}

// -----

/// A column slice of a stored weight is a strided view: the micro-kernels
/// read rows back to back, so it is refused, not read wrong.
lir.entry @negative_ukernel_strided_weight arena_size = 4096, param_size = 8192, alignment = 64 {
  %x = lir.view arena[0] : memref<4x32xf32>
  %full = lir.view params[0] : memref<64x64xbf16>
  %w = lir.view params[0] source(%full : memref<64x64xbf16>) : memref<64x32xbf16, strided<[64, 1]>>
  %y = lir.view arena[1024] : memref<4x64xf32>
  lir.io input "x" %x : memref<4x32xf32>
  lir.io param "w" %full : memref<64x64xbf16>
  lir.kernel "matmul" ins(%x, %w : memref<4x32xf32>, memref<64x32xbf16, strided<[64, 1]>>) outs(%y : memref<4x64xf32>) attributes {config = #lir.config<ukernel>} {
  ^bb0(%t: tensor<4x32xf32>, %s: tensor<64x32xbf16>):
    // expected-error @+1 {{the micro-kernels read a stored weight's rows contiguously; got the strided view 'memref<64x32xbf16, strided<[64, 1]>>'}}
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x32xf32>, tensor<64x32xbf16>) -> tensor<4x64xf32>
    lir.yield %q : tensor<4x64xf32>
  }
  lir.io output "y" %y : memref<4x64xf32>
}

// -----

/// A blocked attention tile whose heads do not divide the GQA group (3 of
/// 2 query heads per KV head).
lir.entry @negative_attention_tile arena_size = 4096, param_size = 0, alignment = 64 {
  %q = lir.view arena[0] : memref<1x4x64xf32>
  %k = lir.view arena[1024] : memref<1x4x32xf32>
  %o = lir.view arena[2048] : memref<1x4x64xf32>
  lir.io input "q" %q : memref<1x4x64xf32>
  lir.io input "k" %k : memref<1x4x32xf32>
  lir.kernel "attention" ins(%q, %k, %k : memref<1x4x64xf32>, memref<1x4x32xf32>, memref<1x4x32xf32>) outs(%o : memref<1x4x64xf32>) attributes {config = #lir.config<attention_blocked, tile = [3, 1]>} {
  ^bb0(%a: tensor<1x4x64xf32>, %b: tensor<1x4x32xf32>, %c: tensor<1x4x32xf32>):
    // expected-error @+1 {{attention tile of 3 heads does not divide the 2 query heads of a KV head}}
    %y = mir.attention %a, %b, %c {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x64xf32>
    lir.yield %y : tensor<1x4x64xf32>
  }
  lir.io output "o" %o : memref<1x4x64xf32>
}
