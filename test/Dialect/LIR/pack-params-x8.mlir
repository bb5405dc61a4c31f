// RUN: rlx-opt %s -split-input-file --lir-pack-params="x8=true" | FileCheck %s
// RUN: rlx-opt %s -split-input-file --lir-pack-params | FileCheck %s --check-prefix=DEFAULT
// RUN: rlx-opt %s -split-input-file --lir-pack-params="nk16=false x8=true" | FileCheck %s --check-prefix=X8ONLY

/// With x8, lir-pack-params interleaves a q4_0, q8_0, q4_K, q5_K, q6_K, f16 or bf16 param by groups of 8
/// rows when every kernel that reads it reads it as the transposed
/// right-hand side of a matmul with N a multiple of 8 (a derived param
/// concatenated along N: every source too). Without it (the default) no
/// quantized param changes; with nk16=false f32 weights stay row major.

// CHECK-LABEL: lir.entry @interleaves
// CHECK: lir.io param "q" %{{.*}} {layout = #lir.layout<x8>} : memref<32x64x!mir.quant<q4_0>>
// CHECK: lir.io param "qkv" %{{.*}} {concat_axis = 0 : i64, layout = #lir.layout<x8>, {{.*}}} : memref<48x64x!mir.quant<q8_0>>
/// bf16 (and f16) interleave by pairs of elements; f32 takes nk16 as before.
// CHECK: lir.io param "b" %{{.*}} {layout = #lir.layout<x8>} : memref<32x64xbf16>
// CHECK: lir.io param "f" %{{.*}} {layout = #lir.layout<nk16>} : memref<32x64xf32>
// CHECK: lir.io param "k4" %{{.*}} {layout = #lir.layout<x8>} : memref<8x256x!mir.quant<q4_K>>
// CHECK: lir.io param "k6" %{{.*}} {layout = #lir.layout<x8>} : memref<8x256x!mir.quant<q6_K>>
// DEFAULT-LABEL: lir.entry @interleaves
// DEFAULT-NOT: layout<x8>
// DEFAULT: lir.io param "f" %{{.*}} {layout = #lir.layout<nk16>}
// X8ONLY-LABEL: lir.entry @interleaves
// X8ONLY: lir.io param "q" %{{.*}} {layout = #lir.layout<x8>}
// X8ONLY-NOT: nk16
lir.entry @interleaves arena_size = 32768, param_size = 32768, alignment = 64 {
  %x = lir.view arena[0] : memref<12x64xf32>
  %q = lir.view params[0] : memref<32x64x!mir.quant<q4_0>>
  %qkv = lir.view params[1216] : memref<48x64x!mir.quant<q8_0>>
  %b = lir.view params[4480] : memref<32x64xbf16>
  %f = lir.view params[8576] : memref<32x64xf32>
  %y = lir.view arena[4096] : memref<12x32xf32>
  %y2 = lir.view arena[8192] : memref<12x48xf32>
  %y3 = lir.view arena[12288] : memref<12x32xf32>
  %y4 = lir.view arena[16384] : memref<12x32xf32>
  %k4 = lir.view params[16768] : memref<8x256x!mir.quant<q4_K>>
  %x2 = lir.view arena[20480] : memref<2x256xf32>
  %y5 = lir.view arena[22528] : memref<2x8xf32>
  %k6 = lir.view params[18432] : memref<8x256x!mir.quant<q6_K>>
  %y6 = lir.view arena[22592] : memref<2x8xf32>
  lir.io input "x" %x : memref<12x64xf32>
  lir.io param "q" %q : memref<32x64x!mir.quant<q4_0>>
  lir.io param "qkv" %qkv {sources = ["wq", "wk"], concat_axis = 0 : i64, source_sizes = array<i64: 16, 32>} : memref<48x64x!mir.quant<q8_0>>
  lir.io param "b" %b : memref<32x64xbf16>
  lir.io param "f" %f : memref<32x64xf32>
  lir.io param "k4" %k4 : memref<8x256x!mir.quant<q4_K>>
  lir.io input "x2" %x2 : memref<2x256xf32>
  lir.io param "k6" %k6 : memref<8x256x!mir.quant<q6_K>>
  lir.kernel "q4_0" ins(%x, %q : memref<12x64xf32>, memref<32x64x!mir.quant<q4_0>>) outs(%y : memref<12x32xf32>) {
  ^bb0(%t: tensor<12x64xf32>, %s: tensor<32x64x!mir.quant<q4_0>>):
    %r = mir.matmul %t, %s {transpose_rhs} : (tensor<12x64xf32>, tensor<32x64x!mir.quant<q4_0>>) -> tensor<12x32xf32>
    lir.yield %r : tensor<12x32xf32>
  }
  lir.kernel "q8_0" ins(%x, %qkv : memref<12x64xf32>, memref<48x64x!mir.quant<q8_0>>) outs(%y2 : memref<12x48xf32>) {
  ^bb0(%t: tensor<12x64xf32>, %s: tensor<48x64x!mir.quant<q8_0>>):
    %r = mir.matmul %t, %s {transpose_rhs} : (tensor<12x64xf32>, tensor<48x64x!mir.quant<q8_0>>) -> tensor<12x48xf32>
    lir.yield %r : tensor<12x48xf32>
  }
  lir.kernel "bf16" ins(%x, %b : memref<12x64xf32>, memref<32x64xbf16>) outs(%y3 : memref<12x32xf32>) {
  ^bb0(%t: tensor<12x64xf32>, %s: tensor<32x64xbf16>):
    %r = mir.matmul %t, %s {transpose_rhs} : (tensor<12x64xf32>, tensor<32x64xbf16>) -> tensor<12x32xf32>
    lir.yield %r : tensor<12x32xf32>
  }
  lir.kernel "f32" ins(%x, %f : memref<12x64xf32>, memref<32x64xf32>) outs(%y4 : memref<12x32xf32>) {
  ^bb0(%t: tensor<12x64xf32>, %s: tensor<32x64xf32>):
    %r = mir.matmul %t, %s {transpose_rhs} : (tensor<12x64xf32>, tensor<32x64xf32>) -> tensor<12x32xf32>
    lir.yield %r : tensor<12x32xf32>
  }
  lir.io output "y" %y : memref<12x32xf32>
  lir.io output "y2" %y2 : memref<12x48xf32>
  lir.io output "y3" %y3 : memref<12x32xf32>
  lir.kernel "q4_K" ins(%x2, %k4 : memref<2x256xf32>, memref<8x256x!mir.quant<q4_K>>) outs(%y5 : memref<2x8xf32>) {
  ^bb0(%t: tensor<2x256xf32>, %s: tensor<8x256x!mir.quant<q4_K>>):
    %r = mir.matmul %t, %s {transpose_rhs} : (tensor<2x256xf32>, tensor<8x256x!mir.quant<q4_K>>) -> tensor<2x8xf32>
    lir.yield %r : tensor<2x8xf32>
  }
  lir.io output "y4" %y4 : memref<12x32xf32>
  lir.io output "y5" %y5 : memref<2x8xf32>
  lir.kernel "q6_K" ins(%x2, %k6 : memref<2x256xf32>, memref<8x256x!mir.quant<q6_K>>) outs(%y6 : memref<2x8xf32>) {
  ^bb0(%t: tensor<2x256xf32>, %s: tensor<8x256x!mir.quant<q6_K>>):
    %r = mir.matmul %t, %s {transpose_rhs} : (tensor<2x256xf32>, tensor<8x256x!mir.quant<q6_K>>) -> tensor<2x8xf32>
    lir.yield %r : tensor<2x8xf32>
  }
  lir.io output "y6" %y6 : memref<2x8xf32>
}

// -----

/// q5_K (a Q5_K_M file's matrices) interleaves; q3_K has no x8 form.
// CHECK-LABEL: lir.entry @k_quants
// CHECK: lir.io param "k5" %{{.*}} {layout = #lir.layout<x8>} : memref<8x256x!mir.quant<q5_K>>
// CHECK: lir.io param "k3" %{{.*}} : memref<8x256x!mir.quant<q3_K>>
// CHECK-NOT: layout
// DEFAULT-LABEL: lir.entry @k_quants
// DEFAULT-NOT: layout
lir.entry @k_quants arena_size = 32768, param_size = 32768, alignment = 64 {
  %x = lir.view arena[0] : memref<2x256xf32>
  %k5 = lir.view params[0] : memref<8x256x!mir.quant<q5_K>>
  %k3 = lir.view params[1408] : memref<8x256x!mir.quant<q3_K>>
  %y5 = lir.view arena[2048] : memref<2x8xf32>
  %y3 = lir.view arena[2112] : memref<2x8xf32>
  lir.io input "x" %x : memref<2x256xf32>
  lir.io param "k5" %k5 : memref<8x256x!mir.quant<q5_K>>
  lir.io param "k3" %k3 : memref<8x256x!mir.quant<q3_K>>
  lir.kernel "q5_K" ins(%x, %k5 : memref<2x256xf32>, memref<8x256x!mir.quant<q5_K>>) outs(%y5 : memref<2x8xf32>) {
  ^bb0(%t: tensor<2x256xf32>, %s: tensor<8x256x!mir.quant<q5_K>>):
    %r = mir.matmul %t, %s {transpose_rhs} : (tensor<2x256xf32>, tensor<8x256x!mir.quant<q5_K>>) -> tensor<2x8xf32>
    lir.yield %r : tensor<2x8xf32>
  }
  lir.kernel "q3_K" ins(%x, %k3 : memref<2x256xf32>, memref<8x256x!mir.quant<q3_K>>) outs(%y3 : memref<2x8xf32>) {
  ^bb0(%t: tensor<2x256xf32>, %s: tensor<8x256x!mir.quant<q3_K>>):
    %r = mir.matmul %t, %s {transpose_rhs} : (tensor<2x256xf32>, tensor<8x256x!mir.quant<q3_K>>) -> tensor<2x8xf32>
    lir.yield %r : tensor<2x8xf32>
  }
  lir.io output "y5" %y5 : memref<2x8xf32>
  lir.io output "y3" %y3 : memref<2x8xf32>
}

// -----

/// A q8_0 table read by an embedding gather and the LM head (tied): the
/// gather finds each row in its group of 8 (rlx_dequantize_x8_rows).
// CHECK-LABEL: lir.entry @tied_embedding
// CHECK: lir.io param "emb" %{{.*}} {layout = #lir.layout<x8>} : memref<16x256x!mir.quant<q8_0>>
// DEFAULT-LABEL: lir.entry @tied_embedding
// DEFAULT-NOT: layout
lir.entry @tied_embedding arena_size = 32768, param_size = 32768, alignment = 64 {
  %ids = lir.view arena[0] : memref<4xi32>
  %e = lir.view params[0] : memref<16x256x!mir.quant<q8_0>>
  %g = lir.view arena[64] : memref<4x256xf32>
  %z = lir.view arena[4160] : memref<4x16xf32>
  lir.io input "ids" %ids : memref<4xi32>
  lir.io param "emb" %e : memref<16x256x!mir.quant<q8_0>>
  lir.kernel "gather" ins(%e, %ids : memref<16x256x!mir.quant<q8_0>>, memref<4xi32>) outs(%g : memref<4x256xf32>) {
  ^bb0(%t: tensor<16x256x!mir.quant<q8_0>>, %i: tensor<4xi32>):
    %q = mir.gather %t, %i : (tensor<16x256x!mir.quant<q8_0>>, tensor<4xi32>) -> tensor<4x256xf32>
    lir.yield %q : tensor<4x256xf32>
  }
  lir.kernel "lm_head" ins(%g, %e : memref<4x256xf32>, memref<16x256x!mir.quant<q8_0>>) outs(%z : memref<4x16xf32>) {
  ^bb0(%t: tensor<4x256xf32>, %s: tensor<16x256x!mir.quant<q8_0>>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x256xf32>, tensor<16x256x!mir.quant<q8_0>>) -> tensor<4x16xf32>
    lir.yield %q : tensor<4x16xf32>
  }
  lir.io output "z" %z : memref<4x16xf32>
}

// -----

/// A tied bf16 table is x8 too: a kernel that only gathers its rows into
/// bf16 rows puts each back as stored (rlx_uk_unpack).
// CHECK-LABEL: lir.entry @tied_bf16_embedding
// CHECK: lir.io param "emb" %{{.*}} {layout = #lir.layout<x8>} : memref<16x256xbf16>
lir.entry @tied_bf16_embedding arena_size = 32768, param_size = 32768, alignment = 64 {
  %ids = lir.view arena[0] : memref<4xi32>
  %e = lir.view params[0] : memref<16x256xbf16>
  %g = lir.view arena[64] : memref<4x256xbf16>
  %x = lir.view arena[2112] : memref<4x256xf32>
  %z = lir.view arena[6208] : memref<4x16xf32>
  lir.io input "ids" %ids : memref<4xi32>
  lir.io param "emb" %e : memref<16x256xbf16>
  lir.io input "x" %x : memref<4x256xf32>
  lir.kernel "gather" ins(%e, %ids : memref<16x256xbf16>, memref<4xi32>) outs(%g : memref<4x256xbf16>) {
  ^bb0(%t: tensor<16x256xbf16>, %i: tensor<4xi32>):
    %q = mir.gather %t, %i : (tensor<16x256xbf16>, tensor<4xi32>) -> tensor<4x256xbf16>
    lir.yield %q : tensor<4x256xbf16>
  }
  lir.kernel "lm_head" ins(%x, %e : memref<4x256xf32>, memref<16x256xbf16>) outs(%z : memref<4x16xf32>) {
  ^bb0(%t: tensor<4x256xf32>, %s: tensor<16x256xbf16>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x256xf32>, tensor<16x256xbf16>) -> tensor<4x16xf32>
    lir.yield %q : tensor<4x16xf32>
  }
  lir.io output "g" %g : memref<4x256xbf16>
  lir.io output "z" %z : memref<4x16xf32>
}

// -----

/// A bf16 gather fused with other work in its kernel reads the table as the
/// shared kernel layer does (rows as stored): the table stays as it is.
// CHECK-LABEL: lir.entry @fused_bf16_gather
// CHECK-NOT: layout
lir.entry @fused_bf16_gather arena_size = 32768, param_size = 32768, alignment = 64 {
  %ids = lir.view arena[0] : memref<4xi32>
  %e = lir.view params[0] : memref<16x256xbf16>
  %g = lir.view arena[64] : memref<4x256xbf16>
  %x = lir.view arena[2112] : memref<4x256xf32>
  %z = lir.view arena[6208] : memref<4x16xf32>
  lir.io input "ids" %ids : memref<4xi32>
  lir.io param "emb" %e : memref<16x256xbf16>
  lir.io input "x" %x : memref<4x256xf32>
  lir.kernel "gather" ins(%e, %ids : memref<16x256xbf16>, memref<4xi32>) outs(%g : memref<4x256xbf16>) {
  ^bb0(%t: tensor<16x256xbf16>, %i: tensor<4xi32>):
    %q = mir.gather %t, %i : (tensor<16x256xbf16>, tensor<4xi32>) -> tensor<4x256xbf16>
    %d = mir.add %q, %q : (tensor<4x256xbf16>, tensor<4x256xbf16>) -> tensor<4x256xbf16>
    lir.yield %d : tensor<4x256xbf16>
  }
  lir.kernel "lm_head" ins(%x, %e : memref<4x256xf32>, memref<16x256xbf16>) outs(%z : memref<4x16xf32>) {
  ^bb0(%t: tensor<4x256xf32>, %s: tensor<16x256xbf16>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x256xf32>, tensor<16x256xbf16>) -> tensor<4x16xf32>
    lir.yield %q : tensor<4x16xf32>
  }
  lir.io output "g" %g : memref<4x256xbf16>
  lir.io output "z" %z : memref<4x16xf32>
}

// -----

/// N = 12 is not a multiple of 8; a q8_0 table that a kernel dequantizes
/// whole (mir.dequantize) keeps its stored rows; a source of 4 rows splits a
/// group of 8; a q3_K weight has no x8 form; a param no kernel reads stays
/// as it is.
// CHECK-LABEL: lir.entry @negative_interleaves
// CHECK-NOT: layout
lir.entry @negative_interleaves arena_size = 32768, param_size = 32768, alignment = 64 {
  %x = lir.view arena[0] : memref<4x256xf32>
  %ids = lir.view arena[4096] : memref<4xi32>
  %w = lir.view params[0] : memref<12x256x!mir.quant<q4_0>>
  %e = lir.view params[2048] : memref<16x256x!mir.quant<q8_0>>
  %d = lir.view params[8192] : memref<16x256x!mir.quant<q4_0>>
  %k = lir.view params[12288] : memref<8x256x!mir.quant<q3_K>>
  %u = lir.view params[14336] : memref<8x256x!mir.quant<q4_0>>
  %y = lir.view arena[4160] : memref<4x12xf32>
  %g = lir.view arena[4416] : memref<4x256xf32>
  %z = lir.view arena[8512] : memref<4x16xf32>
  %v = lir.view arena[8768] : memref<4x16xf32>
  %kk = lir.view arena[9024] : memref<4x8xf32>
  %w16 = lir.view arena[9152] : memref<16x256xf32>
  lir.io input "x" %x : memref<4x256xf32>
  lir.io input "ids" %ids : memref<4xi32>
  lir.io param "w" %w : memref<12x256x!mir.quant<q4_0>>
  lir.io param "emb" %e : memref<16x256x!mir.quant<q8_0>>
  lir.io param "d" %d {sources = ["a", "b"], concat_axis = 0 : i64, source_sizes = array<i64: 4, 12>} : memref<16x256x!mir.quant<q4_0>>
  lir.io param "k" %k : memref<8x256x!mir.quant<q3_K>>
  lir.io param "unused" %u : memref<8x256x!mir.quant<q4_0>>
  lir.kernel "matmul" ins(%x, %w : memref<4x256xf32>, memref<12x256x!mir.quant<q4_0>>) outs(%y : memref<4x12xf32>) {
  ^bb0(%t: tensor<4x256xf32>, %s: tensor<12x256x!mir.quant<q4_0>>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x256xf32>, tensor<12x256x!mir.quant<q4_0>>) -> tensor<4x12xf32>
    lir.yield %q : tensor<4x12xf32>
  }
  lir.kernel "dequantize" ins(%e : memref<16x256x!mir.quant<q8_0>>) outs(%w16 : memref<16x256xf32>) {
  ^bb0(%t: tensor<16x256x!mir.quant<q8_0>>):
    %q = mir.dequantize %t : (tensor<16x256x!mir.quant<q8_0>>) -> tensor<16x256xf32>
    lir.yield %q : tensor<16x256xf32>
  }
  lir.kernel "lm_head" ins(%g, %e : memref<4x256xf32>, memref<16x256x!mir.quant<q8_0>>) outs(%z : memref<4x16xf32>) {
  ^bb0(%t: tensor<4x256xf32>, %s: tensor<16x256x!mir.quant<q8_0>>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x256xf32>, tensor<16x256x!mir.quant<q8_0>>) -> tensor<4x16xf32>
    lir.yield %q : tensor<4x16xf32>
  }
  lir.kernel "proj" ins(%x, %d : memref<4x256xf32>, memref<16x256x!mir.quant<q4_0>>) outs(%v : memref<4x16xf32>) {
  ^bb0(%t: tensor<4x256xf32>, %s: tensor<16x256x!mir.quant<q4_0>>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x256xf32>, tensor<16x256x!mir.quant<q4_0>>) -> tensor<4x16xf32>
    lir.yield %q : tensor<4x16xf32>
  }
  lir.kernel "q3_K" ins(%x, %k : memref<4x256xf32>, memref<8x256x!mir.quant<q3_K>>) outs(%kk : memref<4x8xf32>) {
  ^bb0(%t: tensor<4x256xf32>, %s: tensor<8x256x!mir.quant<q3_K>>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<4x256xf32>, tensor<8x256x!mir.quant<q3_K>>) -> tensor<4x8xf32>
    lir.yield %q : tensor<4x8xf32>
  }
  lir.io output "y" %y : memref<4x12xf32>
  lir.io output "z" %z : memref<4x16xf32>
  lir.io output "v" %v : memref<4x16xf32>
  lir.io output "kk" %kk : memref<4x8xf32>
}
