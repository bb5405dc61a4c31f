// RUN: rlx-opt %s --convert-lir-to-spirv --split-input-file --verify-diagnostics

/// Forms the SPIR-V back end does not implement are diagnosed on the op.

lir.entry @bf16 arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4x8xbf16>
  %y = lir.view arena[128] : memref<4x8xbf16>
  lir.io input "x" %x : memref<4x8xbf16>
  // expected-error @+1 {{bf16 tensors are not supported by the SPIR-V back end}}
  lir.kernel "neg" ins(%x : memref<4x8xbf16>) outs(%y : memref<4x8xbf16>) {
  ^bb0(%t: tensor<4x8xbf16>):
    %r = mir.neg %t : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
    lir.yield %r : tensor<4x8xbf16>
  }
  lir.io output "y" %y : memref<4x8xbf16>
}

// -----

/// i16 tensors are refused by name (the SPIR-V back end stores no i16).
lir.entry @i16 arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4x8xi16>
  %y = lir.view arena[128] : memref<4x8xi16>
  lir.io input "x" %x : memref<4x8xi16>
  // expected-error @+1 {{unsupported element type 'i16' (the SPIR-V back end stores i1, i8, i32, i64, f16 and f32)}}
  lir.kernel "add" ins(%x : memref<4x8xi16>) outs(%y : memref<4x8xi16>) {
  ^bb0(%t: tensor<4x8xi16>):
    %r = mir.add %t, %t : (tensor<4x8xi16>, tensor<4x8xi16>) -> tensor<4x8xi16>
    lir.yield %r : tensor<4x8xi16>
  }
  lir.io output "y" %y : memref<4x8xi16>
}

// -----

lir.entry @f16_matmul arena_size = 1024, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4x8xf16>
  %w = lir.view arena[64] : memref<8x8xf16>
  %y = lir.view arena[256] : memref<4x8xf16>
  lir.io input "x" %x : memref<4x8xf16>
  lir.io input "w" %w : memref<8x8xf16>
  lir.kernel "matmul" ins(%x, %w : memref<4x8xf16>, memref<8x8xf16>) outs(%y : memref<4x8xf16>) {
  ^bb0(%t: tensor<4x8xf16>, %u: tensor<8x8xf16>):
    // expected-error @+1 {{the SPIR-V back end multiplies f32 matrices (or f32 rows by an [N, K] weight stored as f16, bf16 or ggml blocks) only, got 'f16'}}
    %r = mir.matmul %t, %u : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
    lir.yield %r : tensor<4x8xf16>
  }
  lir.io output "y" %y : memref<4x8xf16>
}

// -----

/// ggml blocks are decoded in weights only: a q4_K tensor in the arena is
/// refused by name.
lir.entry @q4_k_in_arena arena_size = 4096, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<2x256xf32>
  %w = lir.view arena[2048] : memref<8x256x!mir.quant<q4_K>>
  %y = lir.view arena[3200] : memref<2x8xf32>
  lir.io input "x" %x : memref<2x256xf32>
  lir.io input "w" %w : memref<8x256x!mir.quant<q4_K>>
  // expected-error @+1 {{reads '!mir.quant<q4_K>' outside the parameters (the SPIR-V back end decodes ggml blocks in weights only)}}
  lir.kernel "matmul" ins(%x, %w : memref<2x256xf32>, memref<8x256x!mir.quant<q4_K>>) outs(%y : memref<2x8xf32>) {
  ^bb0(%t: tensor<2x256xf32>, %u: tensor<8x256x!mir.quant<q4_K>>):
    %r = mir.matmul %t, %u {transpose_rhs} : (tensor<2x256xf32>, tensor<8x256x!mir.quant<q4_K>>) -> tensor<2x8xf32>
    lir.yield %r : tensor<2x8xf32>
  }
  lir.io output "y" %y : memref<2x8xf32>
}

// -----

/// A bf16 tensor that is not a weight is refused.
lir.entry @bf16_activation arena_size = 4096, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<2x8xf32>
  %w = lir.view arena[256] : memref<8x8xbf16>
  %y = lir.view arena[512] : memref<2x8xf32>
  lir.io input "x" %x : memref<2x8xf32>
  lir.io input "w" %w : memref<8x8xbf16>
  // expected-error @+1 {{bf16 tensors are not supported by the SPIR-V back end (use f32 or f16; bf16 weights are read as stored)}}
  lir.kernel "matmul" ins(%x, %w : memref<2x8xf32>, memref<8x8xbf16>) outs(%y : memref<2x8xf32>) {
  ^bb0(%t: tensor<2x8xf32>, %u: tensor<8x8xbf16>):
    %r = mir.matmul %t, %u {transpose_rhs} : (tensor<2x8xf32>, tensor<8x8xbf16>) -> tensor<2x8xf32>
    lir.yield %r : tensor<2x8xf32>
  }
  lir.io output "y" %y : memref<2x8xf32>
}

// -----

/// Collectives (tensor parallelism) run on the CPU over MPI only.
lir.entry @all_reduce arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4xf32>
  %y = lir.view arena[64] : memref<4xf32>
  lir.io input "x" %x : memref<4xf32>
  lir.kernel "all_reduce" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{is a collective between the ranks of a tensor-parallel program, which the SPIR-V back end does not run (collectives run on the CPU, over MPI)}}
    %r = lir.all_reduce %a group_size 2 : tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
  lir.io output "y" %y : memref<4xf32>
}
