// RUN: rlx-opt %s -split-input-file --lir-select-strategy | FileCheck %s
// RUN: rlx-opt %s -split-input-file --lir-select-strategy="gemm-mr=4 gemm-nv=4 gemm-kc=0" | FileCheck %s --check-prefix=TILE
// RUN: rlx-opt %s -split-input-file --lir-select-strategy="gemm-mr=6 gemm-nv=1" | FileCheck %s --check-prefix=ONE
// RUN: rlx-opt %s -split-input-file --lir-select-strategy="gemm-mr=4 gemm-nv=3" | FileCheck %s --check-prefix=ODD

/// lir-select-strategy: a matmul over an nk16 weight gets the generated
/// GEMM and its register tile (prefill: the options, K block capped at K;
/// decode-like M <= mr: one row tile, four vectors, K whole); a glu_gemm
/// kernel gets its tile with an even vector count (gate and up in pairs) or
/// one (gate and up strips in turn); a matmul over
/// a row-major weight calls BLAS; other kernels are left alone.

// CHECK-LABEL: lir.entry @strategies
// CHECK: lir.kernel "prefill" {{.*}}config = #lir.config<gemm_generated, tile = [8, 2, 64]>
// TILE: lir.kernel "prefill" {{.*}}config = #lir.config<gemm_generated, tile = [4, 4, 64]>
// CHECK: lir.kernel "decode" {{.*}}config = #lir.config<gemm_generated, tile = [1, 4, 64]>
// CHECK: lir.kernel "glu" {{.*}}config = #lir.config<glu_gemm, tile = [8, 2, 64]>
// TILE: lir.kernel "glu" {{.*}}config = #lir.config<glu_gemm, tile = [4, 4, 64]>
// ONE: lir.kernel "prefill" {{.*}}config = #lir.config<gemm_generated, tile = [6, 1, 64]>
// ONE: lir.kernel "glu" {{.*}}config = #lir.config<glu_gemm, tile = [6, 1, 64]>
// ODD: lir.kernel "prefill" {{.*}}config = #lir.config<gemm_generated, tile = [4, 3, 64]>
// ODD: lir.kernel "glu" {{.*}}config = #lir.config<glu_gemm, tile = [4, 2, 64]>
// CHECK: lir.kernel "blas" {{.*}}config = #lir.config<gemm_blas>
// CHECK: lir.kernel "exp"
// CHECK-NOT: config
lir.entry @strategies arena_size = 65536, param_size = 65536, alignment = 64 {
  %x = lir.view arena[0] : memref<12x64xf32>
  %x1 = lir.view arena[4096] : memref<1x64xf32>
  %w = lir.view params[0] : memref<32x64xf32>
  %gu = lir.view params[8192] : memref<64x64xf32>
  %r = lir.view params[32768] : memref<24x64xf32>
  %y = lir.view arena[8192] : memref<12x32xf32>
  %y1 = lir.view arena[12288] : memref<1x32xf32>
  %g = lir.view arena[16384] : memref<12x64xf32>
  %h = lir.view arena[20480] : memref<12x32xf32>
  %z = lir.view arena[24576] : memref<12x24xf32>
  %e = lir.view arena[28672] : memref<12x24xf32>
  lir.io input "x" %x : memref<12x64xf32>
  lir.io input "x1" %x1 : memref<1x64xf32>
  lir.io param "w" %w {layout = #lir.layout<nk16>} : memref<32x64xf32>
  lir.io param "gu" %gu {layout = #lir.layout<nk16>} : memref<64x64xf32>
  lir.io param "r" %r : memref<24x64xf32>
  lir.kernel "prefill" ins(%x, %w : memref<12x64xf32>, memref<32x64xf32>) outs(%y : memref<12x32xf32>) {
  ^bb0(%t: tensor<12x64xf32>, %s: tensor<32x64xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<12x64xf32>, tensor<32x64xf32>) -> tensor<12x32xf32>
    lir.yield %q : tensor<12x32xf32>
  }
  lir.kernel "decode" ins(%x1, %w : memref<1x64xf32>, memref<32x64xf32>) outs(%y1 : memref<1x32xf32>) {
  ^bb0(%t: tensor<1x64xf32>, %s: tensor<32x64xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<1x64xf32>, tensor<32x64xf32>) -> tensor<1x32xf32>
    lir.yield %q : tensor<1x32xf32>
  }
  lir.kernel "glu" ins(%x, %gu : memref<12x64xf32>, memref<64x64xf32>) outs(%g, %h : memref<12x64xf32>, memref<12x32xf32>) attributes {config = #lir.config<glu_gemm>} {
  ^bb0(%t: tensor<12x64xf32>, %s: tensor<64x64xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<12x64xf32>, tensor<64x64xf32>) -> tensor<12x64xf32>
    %o = mir.fused_glu %q {activation = #mir<activation silu>} : (tensor<12x64xf32>) -> tensor<12x32xf32>
    lir.yield %q, %o : tensor<12x64xf32>, tensor<12x32xf32>
  }
  lir.kernel "blas" ins(%x, %r : memref<12x64xf32>, memref<24x64xf32>) outs(%z : memref<12x24xf32>) {
  ^bb0(%t: tensor<12x64xf32>, %s: tensor<24x64xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<12x64xf32>, tensor<24x64xf32>) -> tensor<12x24xf32>
    lir.yield %q : tensor<12x24xf32>
  }
  lir.kernel "exp" ins(%z : memref<12x24xf32>) outs(%e : memref<12x24xf32>) {
  ^bb0(%t: tensor<12x24xf32>):
    %q = mir.exp %t : (tensor<12x24xf32>) -> tensor<12x24xf32>
    lir.yield %q : tensor<12x24xf32>
  }
  lir.io output "y" %y : memref<12x32xf32>
  lir.io output "y1" %y1 : memref<1x32xf32>
  lir.io output "h" %h : memref<12x32xf32>
  lir.io output "e" %e : memref<12x24xf32>
}

// -----

/// A matmul over a weight kept as stored (ggml blocks, bf16, f16) calls the
/// runtime's micro-kernels, whatever the tile options say; the f32 one next
/// to it keeps its strategy.
// CHECK-LABEL: lir.entry @stored
// CHECK: lir.kernel "q4_0" {{.*}}config = #lir.config<ukernel>
// CHECK: lir.kernel "bf16" {{.*}}config = #lir.config<ukernel>
// CHECK: lir.kernel "f32" {{.*}}config = #lir.config<gemm_blas>
// TILE-LABEL: lir.entry @stored
// TILE: lir.kernel "q4_0" {{.*}}config = #lir.config<ukernel>
lir.entry @stored arena_size = 65536, param_size = 65536, alignment = 64 {
  %x = lir.view arena[0] : memref<12x64xf32>
  %q = lir.view params[0] : memref<32x64x!mir.quant<q4_0>>
  %b = lir.view params[1152] : memref<32x64xbf16>
  %f = lir.view params[8192] : memref<32x64xf32>
  %y = lir.view arena[8192] : memref<12x32xf32>
  %y2 = lir.view arena[12288] : memref<12x32xf32>
  %y3 = lir.view arena[16384] : memref<12x32xf32>
  lir.io input "x" %x : memref<12x64xf32>
  lir.io param "q" %q : memref<32x64x!mir.quant<q4_0>>
  lir.io param "b" %b : memref<32x64xbf16>
  lir.io param "f" %f : memref<32x64xf32>
  lir.kernel "q4_0" ins(%x, %q : memref<12x64xf32>, memref<32x64x!mir.quant<q4_0>>) outs(%y : memref<12x32xf32>) {
  ^bb0(%t: tensor<12x64xf32>, %s: tensor<32x64x!mir.quant<q4_0>>):
    %r = mir.matmul %t, %s {transpose_rhs} : (tensor<12x64xf32>, tensor<32x64x!mir.quant<q4_0>>) -> tensor<12x32xf32>
    lir.yield %r : tensor<12x32xf32>
  }
  lir.kernel "bf16" ins(%x, %b : memref<12x64xf32>, memref<32x64xbf16>) outs(%y2 : memref<12x32xf32>) {
  ^bb0(%t: tensor<12x64xf32>, %s: tensor<32x64xbf16>):
    %r = mir.matmul %t, %s {transpose_rhs} : (tensor<12x64xf32>, tensor<32x64xbf16>) -> tensor<12x32xf32>
    lir.yield %r : tensor<12x32xf32>
  }
  lir.kernel "f32" ins(%x, %f : memref<12x64xf32>, memref<32x64xf32>) outs(%y3 : memref<12x32xf32>) {
  ^bb0(%t: tensor<12x64xf32>, %s: tensor<32x64xf32>):
    %r = mir.matmul %t, %s {transpose_rhs} : (tensor<12x64xf32>, tensor<32x64xf32>) -> tensor<12x32xf32>
    lir.yield %r : tensor<12x32xf32>
  }
  lir.io output "y" %y : memref<12x32xf32>
  lir.io output "y2" %y2 : memref<12x32xf32>
  lir.io output "y3" %y3 : memref<12x32xf32>
}

// -----

/// Rows x K whose row block of A (296 rows over all of K = 2688: 3.2 MB)
/// passes 3 MiB: the K blocks run outermost, each shared by a chunk of
/// column blocks (the tile's fourth size); so does a GLU tile with gate and
/// up in pairs. The GLU with strips (one vector) keeps the column-block
/// order, as does a K that fits (K = 2048) and a decode-like row.
// CHECK-LABEL: lir.entry @k_outer
// CHECK: lir.kernel "long_k" {{.*}}config = #lir.config<gemm_generated, tile = [8, 2, 256, 1]>
// CHECK: lir.kernel "glu_long_k" {{.*}}config = #lir.config<glu_gemm, tile = [8, 2, 256, 1]>
// CHECK: lir.kernel "short_k" {{.*}}config = #lir.config<gemm_generated, tile = [8, 2, 256]>
// ONE: lir.kernel "long_k" {{.*}}config = #lir.config<gemm_generated, tile = [6, 1, 256, 1]>
// ONE: lir.kernel "glu_long_k" {{.*}}config = #lir.config<glu_gemm, tile = [6, 1, 256]>
// ONE: lir.kernel "short_k" {{.*}}config = #lir.config<gemm_generated, tile = [6, 1, 256]>
// TILE: lir.kernel "long_k" {{.*}}config = #lir.config<gemm_generated, tile = [4, 4, 2688]>
lir.entry @k_outer arena_size = 16777216, param_size = 16777216, alignment = 64 {
  %x = lir.view arena[0] : memref<300x2688xf32>
  %xs = lir.view arena[0] : memref<300x2048xf32>
  %y = lir.view arena[4194304] : memref<300x64xf32>
  %g = lir.view arena[8388608] : memref<300x128xf32>
  %h = lir.view arena[12582912] : memref<300x64xf32>
  %w = lir.view params[0] : memref<64x2688xf32>
  %gu = lir.view params[1048576] : memref<128x2688xf32>
  %ws = lir.view params[4194304] : memref<64x2048xf32>
  lir.io input "x" %x : memref<300x2688xf32>
  lir.io param "w" %w {layout = #lir.layout<nk16>} : memref<64x2688xf32>
  lir.io param "gu" %gu {layout = #lir.layout<nk16>} : memref<128x2688xf32>
  lir.io param "ws" %ws {layout = #lir.layout<nk16>} : memref<64x2048xf32>
  lir.kernel "long_k" ins(%x, %w : memref<300x2688xf32>, memref<64x2688xf32>) outs(%y : memref<300x64xf32>) {
  ^bb0(%t: tensor<300x2688xf32>, %s: tensor<64x2688xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<300x2688xf32>, tensor<64x2688xf32>) -> tensor<300x64xf32>
    lir.yield %q : tensor<300x64xf32>
  }
  lir.kernel "glu_long_k" ins(%x, %gu : memref<300x2688xf32>, memref<128x2688xf32>) outs(%g, %h : memref<300x128xf32>, memref<300x64xf32>) attributes {config = #lir.config<glu_gemm>} {
  ^bb0(%t: tensor<300x2688xf32>, %s: tensor<128x2688xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<300x2688xf32>, tensor<128x2688xf32>) -> tensor<300x128xf32>
    %o = mir.fused_glu %q {activation = #mir<activation silu>} : (tensor<300x128xf32>) -> tensor<300x64xf32>
    lir.yield %q, %o : tensor<300x128xf32>, tensor<300x64xf32>
  }
  lir.kernel "short_k" ins(%xs, %ws : memref<300x2048xf32>, memref<64x2048xf32>) outs(%y : memref<300x64xf32>) {
  ^bb0(%t: tensor<300x2048xf32>, %s: tensor<64x2048xf32>):
    %q = mir.matmul %t, %s {transpose_rhs} : (tensor<300x2048xf32>, tensor<64x2048xf32>) -> tensor<300x64xf32>
    lir.yield %q : tensor<300x64xf32>
  }
  lir.io output "y" %y : memref<300x64xf32>
  lir.io output "h" %h : memref<300x64xf32>
}
