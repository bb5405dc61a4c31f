// RUN: rlx-opt %s -split-input-file --lir-fuse-glu-gemm | FileCheck %s

/// lir-fuse-glu-gemm: a mir.fused_glu kernel right after the matmul that
/// writes its [gate | up] input, over an nk16 weight, becomes one
/// `matmul_glu` kernel (strategy glu_gemm) writing both buffers. Its result
/// shares bytes with the matmul's input here (the planner reused them):
/// the fused kernel is in place.

// CHECK-LABEL: lir.entry @fuses
// CHECK: lir.kernel "matmul_glu" ins(%[[X:.*]], %[[W:.*]] : memref<4x16xf32>, memref<64x16xf32>) outs(%[[GU:.*]], %[[H:.*]] : memref<4x64xf32>, memref<4x32xf32>) attributes {config = #lir.config<glu_gemm>, inplace}
// CHECK: mir.matmul
// CHECK: mir.fused_glu
// CHECK: lir.yield %{{.*}}, %{{.*}} : tensor<4x64xf32>, tensor<4x32xf32>
// CHECK-NOT: lir.kernel "fused_glu"
lir.entry @fuses arena_size = 2048, param_size = 4096, alignment = 64 {
  %x = lir.view arena[0] : memref<4x16xf32>
  %w = lir.view params[0] : memref<64x16xf32>
  %gu = lir.view arena[1024] : memref<4x64xf32>
  %h = lir.view arena[0] : memref<4x32xf32>
  lir.io input "x" %x : memref<4x16xf32>
  lir.io param "gu" %w {layout = #lir.layout<nk16>} : memref<64x16xf32>
  lir.kernel "matmul" ins(%x, %w : memref<4x16xf32>, memref<64x16xf32>) outs(%gu : memref<4x64xf32>) {
  ^bb0(%t: tensor<4x16xf32>, %s: tensor<64x16xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
    lir.yield %q : tensor<4x64xf32>
  }
  lir.kernel "fused_glu" ins(%gu : memref<4x64xf32>) outs(%h : memref<4x32xf32>) {
  ^bb0(%t: tensor<4x64xf32>):
    %q = mir.fused_glu %t {activation = #mir<activation silu>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
    lir.yield %q : tensor<4x32xf32>
  }
  lir.io output "h" %h : memref<4x32xf32>
}

// -----

/// Not fused: the weight is row major (no generated GEMM to carry the
/// epilogue).
// CHECK-LABEL: lir.entry @negative_row_major
// CHECK: lir.kernel "matmul"
// CHECK: lir.kernel "fused_glu"
lir.entry @negative_row_major arena_size = 2048, param_size = 4096, alignment = 64 {
  %x = lir.view arena[0] : memref<4x16xf32>
  %w = lir.view params[0] : memref<64x16xf32>
  %gu = lir.view arena[1024] : memref<4x64xf32>
  %h = lir.view arena[0] : memref<4x32xf32>
  lir.io input "x" %x : memref<4x16xf32>
  lir.io param "gu" %w : memref<64x16xf32>
  lir.kernel "matmul" ins(%x, %w : memref<4x16xf32>, memref<64x16xf32>) outs(%gu : memref<4x64xf32>) {
  ^bb0(%t: tensor<4x16xf32>, %s: tensor<64x16xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
    lir.yield %q : tensor<4x64xf32>
  }
  lir.kernel "fused_glu" ins(%gu : memref<4x64xf32>) outs(%h : memref<4x32xf32>) {
  ^bb0(%t: tensor<4x64xf32>):
    %q = mir.fused_glu %t {activation = #mir<activation silu>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
    lir.yield %q : tensor<4x32xf32>
  }
  lir.io output "h" %h : memref<4x32xf32>
}

// -----

/// Not fused: the [gate | up] buffer is an output too (another reader).
// CHECK-LABEL: lir.entry @negative_second_reader
// CHECK: lir.kernel "matmul"
// CHECK: lir.kernel "fused_glu"
lir.entry @negative_second_reader arena_size = 2048, param_size = 4096, alignment = 64 {
  %x = lir.view arena[0] : memref<4x16xf32>
  %w = lir.view params[0] : memref<64x16xf32>
  %gu = lir.view arena[1024] : memref<4x64xf32>
  %h = lir.view arena[0] : memref<4x32xf32>
  lir.io input "x" %x : memref<4x16xf32>
  lir.io param "gu" %w {layout = #lir.layout<nk16>} : memref<64x16xf32>
  lir.kernel "matmul" ins(%x, %w : memref<4x16xf32>, memref<64x16xf32>) outs(%gu : memref<4x64xf32>) {
  ^bb0(%t: tensor<4x16xf32>, %s: tensor<64x16xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
    lir.yield %q : tensor<4x64xf32>
  }
  lir.kernel "fused_glu" ins(%gu : memref<4x64xf32>) outs(%h : memref<4x32xf32>) {
  ^bb0(%t: tensor<4x64xf32>):
    %q = mir.fused_glu %t {activation = #mir<activation silu>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
    lir.yield %q : tensor<4x32xf32>
  }
  lir.io output "h" %h : memref<4x32xf32>
  lir.io output "gu" %gu : memref<4x64xf32>
}

// -----

/// The compute type's roundings go with the kernels: a mir.fused_matmul
/// that only rounds (round_to) and a rounding GLU fuse, both ops kept in
/// the body for the epilogue to apply.
// CHECK-LABEL: lir.entry @rounding
// CHECK: lir.kernel "matmul_glu" {{.*}}config = #lir.config<glu_gemm>
// CHECK: mir.fused_matmul %{{.*}}, %{{.*}} {round_to = bf16, transpose_rhs}
// CHECK: mir.fused_glu %{{.*}} {round_to = bf16}
// CHECK-NOT: lir.kernel "fused_glu"
lir.entry @rounding arena_size = 2048, param_size = 4096, alignment = 64 {
  %x = lir.view arena[0] : memref<4x16xf32>
  %w = lir.view params[0] : memref<64x16xf32>
  %gu = lir.view arena[1024] : memref<4x64xf32>
  %h = lir.view arena[256] : memref<4x32xf32>
  lir.io input "x" %x : memref<4x16xf32>
  lir.io param "gu" %w {layout = #lir.layout<nk16>} : memref<64x16xf32>
  lir.kernel "fused_matmul" ins(%x, %w : memref<4x16xf32>, memref<64x16xf32>) outs(%gu : memref<4x64xf32>) {
  ^bb0(%t: tensor<4x16xf32>, %s: tensor<64x16xf32>):
    %q = mir.fused_matmul %t, %s {transpose_rhs, round_to = bf16} : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
    lir.yield %q : tensor<4x64xf32>
  }
  lir.kernel "fused_glu" ins(%gu : memref<4x64xf32>) outs(%h : memref<4x32xf32>) {
  ^bb0(%t: tensor<4x64xf32>):
    %q = mir.fused_glu %t {activation = #mir<activation silu>, round_to = bf16} : (tensor<4x64xf32>) -> tensor<4x32xf32>
    lir.yield %q : tensor<4x32xf32>
  }
  lir.io output "h" %h : memref<4x32xf32>
}

// -----

/// Not fused: the GEMM has a bias (the GLU epilogue applies none).
// CHECK-LABEL: lir.entry @negative_bias
// CHECK: lir.kernel "fused_matmul"
// CHECK: lir.kernel "fused_glu"
lir.entry @negative_bias arena_size = 2048, param_size = 8192, alignment = 64 {
  %x = lir.view arena[0] : memref<4x16xf32>
  %w = lir.view params[0] : memref<64x16xf32>
  %b = lir.view params[4096] : memref<64xf32>
  %gu = lir.view arena[1024] : memref<4x64xf32>
  %h = lir.view arena[256] : memref<4x32xf32>
  lir.io input "x" %x : memref<4x16xf32>
  lir.io param "gu" %w {layout = #lir.layout<nk16>} : memref<64x16xf32>
  lir.io param "b" %b : memref<64xf32>
  lir.kernel "fused_matmul" ins(%x, %w, %b : memref<4x16xf32>, memref<64x16xf32>, memref<64xf32>) outs(%gu : memref<4x64xf32>) {
  ^bb0(%t: tensor<4x16xf32>, %s: tensor<64x16xf32>, %c: tensor<64xf32>):
    %q = mir.fused_matmul %t, %s bias(%c) {transpose_rhs, round_to = bf16} : (tensor<4x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<4x64xf32>
    lir.yield %q : tensor<4x64xf32>
  }
  lir.kernel "fused_glu" ins(%gu : memref<4x64xf32>) outs(%h : memref<4x32xf32>) {
  ^bb0(%t: tensor<4x64xf32>):
    %q = mir.fused_glu %t {activation = #mir<activation silu>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
    lir.yield %q : tensor<4x32xf32>
  }
  lir.io output "h" %h : memref<4x32xf32>
}
