// RUN: rlx-opt %s -split-input-file --lir-pack-params | FileCheck %s

/// lir-pack-params stores a param nk16 when every kernel that reads it
/// reads it as the transposed right-hand side of an f32 matmul with N a
/// multiple of 16 (a derived param concatenated along N: every source too).

// CHECK-LABEL: lir.entry @packs
// CHECK: lir.io param "w" %{{.*}} {layout = #lir.layout<nk16>}
// CHECK: lir.io param "gu" %{{.*}} {concat_axis = 0 : i64, layout = #lir.layout<nk16>,
/// The bias is read as a vector: row major.
// CHECK: lir.io param "b" %{{.*}} : memref<32xf32>
lir.entry @packs arena_size = 16384, param_size = 32768, alignment = 64 {
  %x = lir.view arena[0] : memref<1x12x64xf32>
  %w = lir.view params[0] : memref<32x64xf32>
  %gu = lir.view params[8192] : memref<64x32xf32>
  %b = lir.view params[16384] : memref<32xf32>
  %y = lir.view arena[3072] : memref<1x12x32xf32>
  %h = lir.view arena[6144] : memref<1x12x64xf32>
  lir.io input "x" %x : memref<1x12x64xf32>
  lir.io param "w" %w : memref<32x64xf32>
  lir.io param "gu" %gu {sources = ["g", "u"], concat_axis = 0 : i64, source_sizes = array<i64: 32, 32>} : memref<64x32xf32>
  lir.io param "b" %b : memref<32xf32>
  lir.kernel "fused_matmul" ins(%x, %w, %b : memref<1x12x64xf32>, memref<32x64xf32>, memref<32xf32>) outs(%y : memref<1x12x32xf32>) {
  ^bb0(%t: tensor<1x12x64xf32>, %u: tensor<32x64xf32>, %v: tensor<32xf32>):
    %q = mir.fused_matmul %t, %u bias(%v) {transpose_rhs} : (tensor<1x12x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<1x12x32xf32>
    lir.yield %q : tensor<1x12x32xf32>
  }
  lir.kernel "matmul" ins(%y, %gu : memref<1x12x32xf32>, memref<64x32xf32>) outs(%h : memref<1x12x64xf32>) {
  ^bb0(%t: tensor<1x12x32xf32>, %u: tensor<64x32xf32>):
    %q = mir.matmul %t, %u {transpose_rhs} : (tensor<1x12x32xf32>, tensor<64x32xf32>) -> tensor<1x12x64xf32>
    lir.yield %q : tensor<1x12x64xf32>
  }
  lir.io output "h" %h : memref<1x12x64xf32>
}

// -----

/// N = 40 is not a multiple of 16; a weight that is also read as an
/// embedding table (tied LM head) must stay row major for the gather; a
/// param no kernel reads stays as it is; a source of 8 rows cannot be packed.
// CHECK-LABEL: lir.entry @negative_packs
// CHECK-NOT: layout
lir.entry @negative_packs arena_size = 16384, param_size = 32768, alignment = 64 {
  %x = lir.view arena[0] : memref<4x16xf32>
  %ids = lir.view arena[256] : memref<4xi32>
  %w = lir.view params[0] : memref<40x16xf32>
  %e = lir.view params[4096] : memref<32x16xf32>
  %u = lir.view params[8192] : memref<32x16xf32>
  %d = lir.view params[12288] : memref<24x16xf32>
  %y = lir.view arena[512] : memref<4x40xf32>
  %g = lir.view arena[1280] : memref<4x16xf32>
  %z = lir.view arena[1536] : memref<4x32xf32>
  %v = lir.view arena[2048] : memref<4x24xf32>
  lir.io input "x" %x : memref<4x16xf32>
  lir.io input "ids" %ids : memref<4xi32>
  lir.io param "w" %w : memref<40x16xf32>
  lir.io param "emb" %e : memref<32x16xf32>
  lir.io param "unused" %u : memref<32x16xf32>
  lir.io param "d" %d {sources = ["a", "b"], concat_axis = 0 : i64, source_sizes = array<i64: 8, 16>} : memref<24x16xf32>
  lir.kernel "matmul" ins(%x, %w : memref<4x16xf32>, memref<40x16xf32>) outs(%y : memref<4x40xf32>) {
  ^bb0(%t: tensor<4x16xf32>, %s: tensor<40x16xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x16xf32>, tensor<40x16xf32>) -> tensor<4x40xf32>
    lir.yield %q : tensor<4x40xf32>
  }
  lir.kernel "gather" ins(%e, %ids : memref<32x16xf32>, memref<4xi32>) outs(%g : memref<4x16xf32>) {
  ^bb0(%t: tensor<32x16xf32>, %i: tensor<4xi32>):
    %q = mir.gather %t, %i : (tensor<32x16xf32>, tensor<4xi32>) -> tensor<4x16xf32>
    lir.yield %q : tensor<4x16xf32>
  }
  lir.kernel "lm_head" ins(%g, %e : memref<4x16xf32>, memref<32x16xf32>) outs(%z : memref<4x32xf32>) {
  ^bb0(%t: tensor<4x16xf32>, %s: tensor<32x16xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
    lir.yield %q : tensor<4x32xf32>
  }
  lir.kernel "proj" ins(%x, %d : memref<4x16xf32>, memref<24x16xf32>) outs(%v : memref<4x24xf32>) {
  ^bb0(%t: tensor<4x16xf32>, %s: tensor<24x16xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x16xf32>, tensor<24x16xf32>) -> tensor<4x24xf32>
    lir.yield %q : tensor<4x24xf32>
  }
  lir.io output "y" %y : memref<4x40xf32>
  lir.io output "z" %z : memref<4x32xf32>
  lir.io output "v" %v : memref<4x24xf32>
}
