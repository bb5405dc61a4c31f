// RUN: rlx-opt %s --split-input-file --convert-lir-to-loops | FileCheck %s
// RUN: rlx-opt %s --split-input-file --convert-lir-to-llvm | FileCheck %s --check-prefix=LLVM

/// An entry becomes two C-interface functions over the arena and the
/// parameter pool: @<entry>_spmd, which every thread of the runtime's pool
/// calls with the execution context and its id, and @<entry>, which runs it
/// on one thread. Views are memref.view (plus reinterpret_cast when
/// strided); kernels that compute the same thing on the same types share one
/// function and take the thread arguments; a GEMM whose weight cannot be
/// packed (N = 40 is not a multiple of 16) calls cblas_sgemm on a slice of
/// the columns; elementwise kernels are vectorized with a scalar tail inside
/// a loop whose chunks threads claim with compare-and-swap.

// CHECK-LABEL: func.func @forward(%{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi8>) attributes {llvm.emit_c_interface
// CHECK: call @forward_spmd(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?xi8>, memref<?xi8>, !llvm.ptr, index, index) -> ()
// CHECK: func.func @forward_spmd(%{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi8>, %[[CTX:.*]]: !llvm.ptr, %[[TID:.*]]: index, %[[N:.*]]: index) attributes {llvm.emit_c_interface}
// CHECK: memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<4x40xf32>
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [4, 20], strides: [40, 1]
// CHECK: call @[[MM:forward_k0_matmul]]({{.*}}, %[[CTX]], %[[TID]], %[[N]])
// CHECK: call @[[EXP:forward_k1_exp]](
// CHECK: call @[[EXP]](
// CHECK-NOT: call
// CHECK: return
// CHECK-NOT: rlx.packed_params

// CHECK: func.func private @[[MM]]
// CHECK: call @cblas_sgemm

// CHECK: func.func private @[[EXP]]
// CHECK: scf.while
// CHECK: llvm.cmpxchg
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: vector.load {{.*}} : memref<4x20xf32, strided<[40, 1]>>, vector<16xf32>
// CHECK: math.exp {{.*}} : vector<16xf32>
// CHECK: vector.store
// CHECK: memref.load
// CHECK: math.exp {{.*}} : f32
// CHECK: llvm.atomicrmw add

// LLVM-LABEL: llvm.func @forward(
// LLVM: llvm.call @forward_spmd
// LLVM-LABEL: llvm.func @_mlir_ciface_forward(
// LLVM-LABEL: llvm.func @forward_spmd(
// LLVM: llvm.call @forward_k0_matmul
// LLVM-LABEL: llvm.func @_mlir_ciface_forward_spmd(
// LLVM-NOT: math.
// LLVM-NOT: scf.
lir.entry @forward arena_size = 1536, param_size = 3200, alignment = 64 {
  %x = lir.view arena[0] : memref<4x20xf32>
  %w = lir.view params[0] : memref<40x20xf32>
  %y = lir.view arena[320] : memref<4x40xf32>
  %a = lir.view arena[320] source(%y : memref<4x40xf32>) : memref<4x20xf32, strided<[40, 1]>>
  %b = lir.view arena[400] source(%y : memref<4x40xf32>) : memref<4x20xf32, strided<[40, 1]>>
  %o1 = lir.view arena[960] : memref<4x20xf32>
  %o2 = lir.view arena[0] : memref<4x20xf32>
  lir.io input "x" %x : memref<4x20xf32>
  lir.io param "w" %w : memref<40x20xf32>
  lir.kernel "matmul" ins(%x, %w : memref<4x20xf32>, memref<40x20xf32>) outs(%y : memref<4x40xf32>) {
  ^bb0(%t: tensor<4x20xf32>, %u: tensor<40x20xf32>):
    %r = mir.matmul %t, %u {transpose_rhs} : (tensor<4x20xf32>, tensor<40x20xf32>) -> tensor<4x40xf32>
    lir.yield %r : tensor<4x40xf32>
  }
  lir.kernel "exp" ins(%a : memref<4x20xf32, strided<[40, 1]>>) outs(%o1 : memref<4x20xf32>) {
  ^bb0(%t: tensor<4x20xf32>):
    %r = mir.exp %t : (tensor<4x20xf32>) -> tensor<4x20xf32>
    lir.yield %r : tensor<4x20xf32>
  }
  lir.kernel "exp" ins(%b : memref<4x20xf32, strided<[40, 1]>>) outs(%o2 : memref<4x20xf32>) {
  ^bb0(%t: tensor<4x20xf32>):
    %r = mir.exp %t : (tensor<4x20xf32>) -> tensor<4x20xf32>
    lir.yield %r : tensor<4x20xf32>
  }
  lir.io output "a" %o1 : memref<4x20xf32>
  lir.io output "b" %o2 : memref<4x20xf32>
}

// -----

/// One row against a [N, K] weight left row-major (a tied LM head: the
/// embedding gather reads the same table) calls cblas_sgemv on each
/// thread's slice of the weight's rows (OpenBLAS's sgemm with M = 1 reads
/// the weight at a quarter of sgemv's rate). Two rows stay a GEMM.

// CHECK-LABEL: func.func private @lm_head_k0_matmul
// CHECK: call @cblas_sgemv({{.*}}) : (i32, i32, i32, i32, f32, !llvm.ptr, i32, !llvm.ptr, i32, f32, !llvm.ptr, i32) -> ()
// CHECK-NOT: cblas_sgemm
// CHECK-LABEL: func.func private @lm_head_k1_matmul
// CHECK: call @cblas_sgemm
// CHECK-NOT: cblas_sgemv
lir.entry @lm_head arena_size = 4096, param_size = 3200, alignment = 64 {
  %x = lir.view arena[0] : memref<1x1x20xf32>
  %r = lir.view arena[128] : memref<1x1x40xf32>
  %x2 = lir.view arena[512] : memref<2x20xf32>
  %w = lir.view params[0] : memref<40x20xf32>
  %y = lir.view arena[1024] : memref<1x1x40xf32>
  %y2 = lir.view arena[2048] : memref<2x40xf32>
  lir.io input "x" %x : memref<1x1x20xf32>
  lir.io input "r" %r : memref<1x1x40xf32>
  lir.io input "x2" %x2 : memref<2x20xf32>
  lir.io param "w" %w : memref<40x20xf32>
  lir.kernel "matmul" ins(%x, %w, %r : memref<1x1x20xf32>, memref<40x20xf32>, memref<1x1x40xf32>) outs(%y : memref<1x1x40xf32>) {
  ^bb0(%t: tensor<1x1x20xf32>, %u: tensor<40x20xf32>, %v: tensor<1x1x40xf32>):
    %o = mir.fused_matmul %t, %u residual(%v) {transpose_rhs} : (tensor<1x1x20xf32>, tensor<40x20xf32>, tensor<1x1x40xf32>) -> tensor<1x1x40xf32>
    lir.yield %o : tensor<1x1x40xf32>
  }
  lir.kernel "matmul" ins(%x2, %w : memref<2x20xf32>, memref<40x20xf32>) outs(%y2 : memref<2x40xf32>) {
  ^bb0(%t: tensor<2x20xf32>, %u: tensor<40x20xf32>):
    %o = mir.matmul %t, %u {transpose_rhs} : (tensor<2x20xf32>, tensor<40x20xf32>) -> tensor<2x40xf32>
    lir.yield %o : tensor<2x40xf32>
  }
  lir.io output "y" %y : memref<1x1x40xf32>
  lir.io output "y2" %y2 : memref<2x40xf32>
}

// -----

/// The decisions made on LIR are followed: a weight stored nk16
/// (lir-pack-params) is multiplied by the generated GEMM with the tile of its
/// `config` (lir-select-strategy): A is packed into the shared scratch
/// buffer, register tiles accumulate with vector.fma over the packed panels,
/// and the fused epilogue (bias, GELU, residual) is applied before the
/// single store. A `glu_gemm` kernel (lir-fuse-glu-gemm) is one function
/// with the GLU in the GEMM's epilogue.

// CHECK-NOT: rlx.packed_params
// CHECK: memref.global "private" @__rlx_scratch : memref<{{[0-9]+}}xf32> = uninitialized
// CHECK-LABEL: func.func @packed_gemms_spmd
// CHECK: call @[[FM:packed_gemms_k0_fused_matmul]](
// CHECK: call @[[GLU:packed_gemms_k1_matmul_glu]](
// CHECK-NOT: call
// CHECK: return

// CHECK: func.func private @[[FM]]
// CHECK-NOT: cblas_sgemm
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [2, 64, 16], strides: [1024, 16, 1]
// CHECK: memref.get_global @__rlx_scratch
// CHECK: vector.fma
// CHECK: math.erf
// CHECK: vector.store

// CHECK: func.func private @[[GLU]]
// CHECK: vector.fma
// CHECK: arith.mulf
// CHECK: vector.store
lir.entry @packed_gemms arena_size = 32768, param_size = 32768, alignment = 64 {
  %x = lir.view arena[0] : memref<1x12x64xf32>
  %w = lir.view params[0] : memref<32x64xf32>
  %b = lir.view params[8192] : memref<32xf32>
  %r = lir.view arena[3072] : memref<1x12x32xf32>
  %y = lir.view arena[4608] : memref<1x12x32xf32>
  %gu = lir.view params[8320] : memref<64x32xf32>
  %h = lir.view arena[6144] : memref<1x12x64xf32>
  %o = lir.view arena[9216] : memref<1x12x32xf32>
  lir.io input "x" %x : memref<1x12x64xf32>
  lir.io input "r" %r : memref<1x12x32xf32>
  lir.io param "w" %w {layout = #lir.layout<nk16>} : memref<32x64xf32>
  lir.io param "b" %b : memref<32xf32>
  lir.io param "gu" %gu {sources = ["g", "u"], concat_axis = 0 : i64, source_sizes = array<i64: 32, 32>, layout = #lir.layout<nk16>} : memref<64x32xf32>
  lir.kernel "fused_matmul" ins(%x, %w, %b, %r : memref<1x12x64xf32>, memref<32x64xf32>, memref<32xf32>, memref<1x12x32xf32>) outs(%y : memref<1x12x32xf32>) attributes {config = #lir.config<gemm_generated, tile = [8, 2, 64]>} {
  ^bb0(%t: tensor<1x12x64xf32>, %u: tensor<32x64xf32>, %v: tensor<32xf32>, %s: tensor<1x12x32xf32>):
    %q = mir.fused_matmul %t, %u bias(%v) residual(%s) {activation = #mir<activation gelu>, transpose_rhs} : (tensor<1x12x64xf32>, tensor<32x64xf32>, tensor<32xf32>, tensor<1x12x32xf32>) -> tensor<1x12x32xf32>
    lir.yield %q : tensor<1x12x32xf32>
  }
  lir.kernel "matmul_glu" ins(%y, %gu : memref<1x12x32xf32>, memref<64x32xf32>) outs(%h, %o : memref<1x12x64xf32>, memref<1x12x32xf32>) attributes {config = #lir.config<glu_gemm, tile = [8, 1, 32]>} {
  ^bb0(%t: tensor<1x12x32xf32>, %u: tensor<64x32xf32>):
    %q = mir.matmul %t, %u {transpose_rhs} : (tensor<1x12x32xf32>, tensor<64x32xf32>) -> tensor<1x12x64xf32>
    %g = mir.fused_glu %q {activation = #mir<activation silu>} : (tensor<1x12x64xf32>) -> tensor<1x12x32xf32>
    lir.yield %q, %g : tensor<1x12x64xf32>, tensor<1x12x32xf32>
  }
  lir.io output "o" %o : memref<1x12x32xf32>
}

// -----

/// Attention with one query per head (a decode step) multiplies each key
/// row as stored with the queries of its tile, and a block's 16 products
/// reduce together in a shuffle tree (halves of the lanes per key, 16 -> 8
/// -> 4 -> 2 -> 1) instead of one horizontal sum each; more queries per
/// head transpose the keys into the scratch buffer first.

// CHECK-LABEL: func.func private @decode_attention_k0_attention
// CHECK-NOT:     __rlx_scratch
// CHECK-NOT:     fastmath<reassoc>
// CHECK:         vector.shuffle %{{.*}}, %{{.*}} [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31] : vector<16xf32>, vector<16xf32>
// CHECK:         vector.shuffle %{{.*}}, %{{.*}} [2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31] : vector<16xf32>, vector<16xf32>
// CHECK:         vector.shuffle %{{.*}}, %{{.*}} [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31] : vector<16xf32>, vector<16xf32>
// CHECK-NOT:     __rlx_scratch
// CHECK:       // -----
lir.entry @decode_attention arena_size = 8192, param_size = 0, alignment = 64 {
  %q = lir.view arena[0] : memref<1x1x64xf32>
  %k = lir.view arena[256] : memref<1x20x32xf32>
  %v = lir.view arena[2816] : memref<1x20x32xf32>
  %o = lir.view arena[5376] : memref<1x1x64xf32>
  lir.io input "q" %q : memref<1x1x64xf32>
  lir.io input "k" %k : memref<1x20x32xf32>
  lir.io input "v" %v : memref<1x20x32xf32>
  lir.kernel "attention" ins(%q, %k, %v : memref<1x1x64xf32>, memref<1x20x32xf32>, memref<1x20x32xf32>) outs(%o : memref<1x1x64xf32>) {
  ^bb0(%a: tensor<1x1x64xf32>, %b: tensor<1x20x32xf32>, %c: tensor<1x20x32xf32>):
    %r = mir.attention %a, %b, %c {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x1x64xf32>, tensor<1x20x32xf32>, tensor<1x20x32xf32>) -> tensor<1x1x64xf32>
    lir.yield %r : tensor<1x1x64xf32>
  }
  lir.io output "o" %o : memref<1x1x64xf32>
}

// -----

// CHECK-LABEL: func.func private @prefill_attention_k0_attention
// CHECK:         __rlx_scratch
// CHECK-NOT:     fastmath<reassoc>
lir.entry @prefill_attention arena_size = 8192, param_size = 0, alignment = 64 {
  %q = lir.view arena[0] : memref<1x3x64xf32>
  %k = lir.view arena[256] : memref<1x20x32xf32>
  %v = lir.view arena[2816] : memref<1x20x32xf32>
  %o = lir.view arena[5376] : memref<1x3x64xf32>
  lir.io input "q" %q : memref<1x3x64xf32>
  lir.io input "k" %k : memref<1x20x32xf32>
  lir.io input "v" %v : memref<1x20x32xf32>
  lir.kernel "attention" ins(%q, %k, %v : memref<1x3x64xf32>, memref<1x20x32xf32>, memref<1x20x32xf32>) outs(%o : memref<1x3x64xf32>) {
  ^bb0(%a: tensor<1x3x64xf32>, %b: tensor<1x20x32xf32>, %c: tensor<1x20x32xf32>):
    %r = mir.attention %a, %b, %c {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x3x64xf32>, tensor<1x20x32xf32>, tensor<1x20x32xf32>) -> tensor<1x3x64xf32>
    lir.yield %r : tensor<1x3x64xf32>
  }
  lir.io output "o" %o : memref<1x3x64xf32>
}

// -----

/// The compute type's rounding (round_to) is the last step of the GEMM's
/// epilogue, in registers before the single store: a generated GEMM rounds
/// after its residual; a glu_gemm kernel rounds gate and up (its GEMM's
/// round_to), then the GLU's product (the GLU's).

// CHECK-LABEL: func.func private @rounding_gemms_k0_fused_matmul
// CHECK: vector.fma
// CHECK: arith.addf %{{.*}} : vector<16xf32>
// CHECK-NEXT: %[[N:.*]] = arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[N]] : vector<16xbf16> to vector<16xf32>
// CHECK-NEXT: vector.store %[[W]]
// CHECK-LABEL: func.func private @rounding_gemms_k1_matmul_glu
// CHECK: vector.fma
// CHECK: arith.truncf %{{.*}} : vector<16xf32> to vector<16xf16>
// CHECK: arith.truncf %{{.*}} : vector<16xf32> to vector<16xf16>
// CHECK: %[[S:.*]] = arith.mulf
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[S]], %{{.*}} : vector<16xf32>
// CHECK-NEXT: %[[PN:.*]] = arith.truncf %[[P]] : vector<16xf32> to vector<16xf16>
// CHECK-NEXT: %[[PW:.*]] = arith.extf %[[PN]]
// CHECK-NEXT: vector.store %[[PW]]
lir.entry @rounding_gemms arena_size = 32768, param_size = 32768, alignment = 64 {
  %x = lir.view arena[0] : memref<1x12x64xf32>
  %w = lir.view params[0] : memref<32x64xf32>
  %r = lir.view arena[3072] : memref<1x12x32xf32>
  %y = lir.view arena[4608] : memref<1x12x32xf32>
  %gu = lir.view params[8320] : memref<64x32xf32>
  %h = lir.view arena[6144] : memref<1x12x64xf32>
  %o = lir.view arena[9216] : memref<1x12x32xf32>
  lir.io input "x" %x : memref<1x12x64xf32>
  lir.io input "r" %r : memref<1x12x32xf32>
  lir.io param "w" %w {layout = #lir.layout<nk16>} : memref<32x64xf32>
  lir.io param "gu" %gu {layout = #lir.layout<nk16>} : memref<64x32xf32>
  lir.kernel "fused_matmul" ins(%x, %w, %r : memref<1x12x64xf32>, memref<32x64xf32>, memref<1x12x32xf32>) outs(%y : memref<1x12x32xf32>) attributes {config = #lir.config<gemm_generated, tile = [8, 2, 64]>} {
  ^bb0(%t: tensor<1x12x64xf32>, %u: tensor<32x64xf32>, %s: tensor<1x12x32xf32>):
    %q = mir.fused_matmul %t, %u residual(%s) {transpose_rhs, round_to = bf16} : (tensor<1x12x64xf32>, tensor<32x64xf32>, tensor<1x12x32xf32>) -> tensor<1x12x32xf32>
    lir.yield %q : tensor<1x12x32xf32>
  }
  lir.kernel "matmul_glu" ins(%y, %gu : memref<1x12x32xf32>, memref<64x32xf32>) outs(%h, %o : memref<1x12x64xf32>, memref<1x12x32xf32>) attributes {config = #lir.config<glu_gemm, tile = [4, 2, 32]>} {
  ^bb0(%t: tensor<1x12x32xf32>, %u: tensor<64x32xf32>):
    %q = mir.fused_matmul %t, %u {transpose_rhs, round_to = f16} : (tensor<1x12x32xf32>, tensor<64x32xf32>) -> tensor<1x12x64xf32>
    %g = mir.fused_glu %q {round_to = f16} : (tensor<1x12x64xf32>) -> tensor<1x12x32xf32>
    lir.yield %q, %g : tensor<1x12x64xf32>, tensor<1x12x32xf32>
  }
  lir.io output "o" %o : memref<1x12x32xf32>
}
