// RUN: rlx-opt %s --convert-lir-to-spirv --split-input-file --verify-diagnostics

/// Forms the SPIR-V back end does not implement are diagnosed on the op.

lir.entry @softmax_axis arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4x8xf32>
  %y = lir.view arena[128] : memref<4x8xf32>
  lir.io input "x" %x : memref<4x8xf32>
  lir.kernel "softmax" ins(%x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%t: tensor<4x8xf32>):
    // expected-error @+1 {{the SPIR-V back end implements softmax over the last axis only}}
    %r = mir.softmax %t {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    lir.yield %r : tensor<4x8xf32>
  }
  lir.io output "y" %y : memref<4x8xf32>
}

// -----

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

lir.entry @f16_matmul arena_size = 1024, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4x8xf16>
  %w = lir.view arena[64] : memref<8x8xf16>
  %y = lir.view arena[256] : memref<4x8xf16>
  lir.io input "x" %x : memref<4x8xf16>
  lir.io input "w" %w : memref<8x8xf16>
  lir.kernel "matmul" ins(%x, %w : memref<4x8xf16>, memref<8x8xf16>) outs(%y : memref<4x8xf16>) {
  ^bb0(%t: tensor<4x8xf16>, %u: tensor<8x8xf16>):
    // expected-error @+1 {{the SPIR-V back end multiplies f32 matrices only}}
    %r = mir.matmul %t, %u : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
    lir.yield %r : tensor<4x8xf16>
  }
  lir.io output "y" %y : memref<4x8xf16>
}
