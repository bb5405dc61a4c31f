// RUN: rlx-opt %s -split-input-file --mir-shard-tensor-parallel="ranks=2 rank=0" | FileCheck %s --check-prefixes=CHECK,R0
// RUN: rlx-opt %s -split-input-file --mir-shard-tensor-parallel="ranks=2 rank=1" | rlx-opt -split-input-file | FileCheck %s --check-prefixes=CHECK,R1
// RUN: rlx-opt %s -split-input-file --mir-shard-tensor-parallel="ranks=4 rank=3" | FileCheck %s --check-prefix=REP
// RUN: not rlx-opt %s -split-input-file --mir-shard-tensor-parallel="ranks=2 emulate=true" 2>&1 | FileCheck %s --check-prefix=EMU

/// A decode step's attention (explicit projections, a KV cache read and
/// returned) on 2 ranks. IN: one QKV projection sliced into q, k, v;
/// Qwen3's per-head norms (reshape, rms_norm, reshape), RoPE, the new keys
/// and values rounded to the f16 cache, concatenated after the cache
/// arguments; mir.attention; the output projection. OUT (rank r): the QKV
/// projection of the rank's rows (its 2 query heads, its KV head), the same
/// ops on the rank's channels, the cache arguments and results of the
/// rank's KV head ([1, 7, 16] in, [1, 8, 16] out: the signature changes),
/// the attention on 2 heads / 1 KV head, the rank's columns of w_o and one
/// shard.all_reduce. With 4 ranks and 2 KV heads, ranks 2 and 3 share KV
/// head 1 (replicated). The emulate form cannot hold per-rank caches.

// CHECK-LABEL: func.func @qwen3_decode_step
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x1x64xf32>, %[[POS:[^:]*]]: tensor<1xi64>, %[[PK:[^:]*]]: tensor<1x7x16xf16>, %[[PV:[^:]*]]: tensor<1x7x16xf16>)
// CHECK-SAME: -> (tensor<1x1x64xf32>, tensor<1x8x16xf16>, tensor<1x8x16xf16>)
// CHECK-DAG: %[[Q:.*]] = mir.param "l0.q" : tensor<64x64xf32>
// R0-DAG: %[[QR:.*]] = mir.slice %[[Q]] {axis = 0 : i64, size = 32 : i64, start = 0 : i64}
// R1-DAG: %[[QR:.*]] = mir.slice %[[Q]] {axis = 0 : i64, size = 32 : i64, start = 32 : i64}
// CHECK-DAG: %[[O:.*]] = mir.param "l0.o" : tensor<64x64xf32>
// CHECK-DAG: %[[K:.*]] = mir.param "l0.k" : tensor<32x64xf32>
// R0-DAG: %[[KR:.*]] = mir.slice %[[K]] {axis = 0 : i64, size = 16 : i64, start = 0 : i64}
// R1-DAG: %[[KR:.*]] = mir.slice %[[K]] {axis = 0 : i64, size = 16 : i64, start = 16 : i64}
// CHECK: %[[W:.*]] = mir.concat %[[QR]], %[[KR]], %{{.*}} {axis = 0 : i64} : {{.*}} -> tensor<64x64xf32>
// CHECK: %[[QKV:.*]] = mir.matmul %{{.*}}, %[[W]] {transpose_rhs} : (tensor<1x1x64xf32>, tensor<64x64xf32>) -> tensor<1x1x64xf32>
// CHECK: mir.slice %[[QKV]] {axis = 2 : i64, size = 32 : i64, start = 0 : i64} : (tensor<1x1x64xf32>) -> tensor<1x1x32xf32>
// CHECK: mir.slice %[[QKV]] {axis = 2 : i64, size = 16 : i64, start = 32 : i64} : (tensor<1x1x64xf32>) -> tensor<1x1x16xf32>
// CHECK: mir.slice %[[QKV]] {axis = 2 : i64, size = 16 : i64, start = 48 : i64} : (tensor<1x1x64xf32>) -> tensor<1x1x16xf32>
// CHECK: mir.reshape {{.*}} -> tensor<1x1x2x16xf32>
// CHECK: mir.rms_norm {{.*}} : (tensor<1x1x2x16xf32>, tensor<16xf32>) -> tensor<1x1x2x16xf32>
// CHECK: mir.reshape {{.*}} -> tensor<1x1x1x16xf32>
// CHECK: mir.rope {{.*}} -> tensor<1x1x32xf32>
// CHECK: mir.cast {{.*}} : (tensor<1x1x16xf32>) -> tensor<1x1x16xf16>
// CHECK: %[[KC:.*]] = mir.concat %[[PK]], %{{.*}} {axis = 1 : i64} : (tensor<1x7x16xf16>, tensor<1x1x16xf16>) -> tensor<1x8x16xf16>
// CHECK: %[[VC:.*]] = mir.concat %[[PV]], %{{.*}} {axis = 1 : i64} : (tensor<1x7x16xf16>, tensor<1x1x16xf16>) -> tensor<1x8x16xf16>
// CHECK: %[[A:.*]] = mir.attention %{{.*}}, %[[KC]], %[[VC]] {{.*}}num_heads = 2 : i64, num_kv_heads = 1 : i64{{.*}} -> tensor<1x1x32xf32>
// R0: %[[OR:.*]] = mir.slice %[[O]] {axis = 1 : i64, size = 32 : i64, start = 0 : i64}
// R1: %[[OR:.*]] = mir.slice %[[O]] {axis = 1 : i64, size = 32 : i64, start = 32 : i64}
// CHECK: %[[P:.*]] = mir.matmul %[[A]], %[[OR]] {transpose_rhs} : (tensor<1x1x32xf32>, tensor<64x32xf32>) -> tensor<1x1x64xf32>
// CHECK: %[[S:.*]] = shard.all_reduce %[[P]] on @tp grid_axes = [0] : tensor<1x1x64xf32> -> tensor<1x1x64xf32>
// CHECK: %[[Y:.*]] = mir.add %[[S]], %[[X]]
// CHECK: return %[[Y]], %[[KC]], %[[VC]]

// REP-LABEL: func.func @qwen3_decode_step
// REP-SAME: tensor<1x7x16xf16>, %{{.*}}: tensor<1x7x16xf16>) -> (tensor<1x1x64xf32>, tensor<1x8x16xf16>, tensor<1x8x16xf16>)
// REP: mir.slice %{{.*}} {axis = 0 : i64, size = 16 : i64, start = 48 : i64} : (tensor<64x64xf32>) -> tensor<16x64xf32>
// REP: mir.slice %{{.*}} {axis = 0 : i64, size = 16 : i64, start = 16 : i64} : (tensor<32x64xf32>) -> tensor<16x64xf32>
// REP: mir.attention {{.*}}num_heads = 1 : i64, num_kv_heads = 1 : i64

// EMU: error: tensor parallelism cannot emulate an attention with explicit projections (a decode step's): each rank keeps its own KV cache

func.func @qwen3_decode_step(%x: tensor<1x1x64xf32>, %pos: tensor<1xi64>, %pk: tensor<1x7x32xf16>, %pv: tensor<1x7x32xf16>) -> (tensor<1x1x64xf32>, tensor<1x8x32xf16>, tensor<1x8x32xf16>) {
  %n = mir.param "l0.input_norm" : tensor<64xf32>
  %wqkv = mir.param "l0.q+l0.k+l0.v" {concat_axis = 0 : i64, source_sizes = array<i64: 64, 32, 32>, sources = ["l0.q", "l0.k", "l0.v"]} : tensor<128x64xf32>
  %qn = mir.param "l0.q_norm" : tensor<16xf32>
  %kn = mir.param "l0.k_norm" : tensor<16xf32>
  %wo = mir.param "l0.o" : tensor<64x64xf32>
  %h = mir.rms_norm %x, %n : (tensor<1x1x64xf32>, tensor<64xf32>) -> tensor<1x1x64xf32>
  %qkv = mir.matmul %h, %wqkv {transpose_rhs} : (tensor<1x1x64xf32>, tensor<128x64xf32>) -> tensor<1x1x128xf32>
  %q = mir.slice %qkv {axis = 2 : i64, size = 64 : i64, start = 0 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x64xf32>
  %k = mir.slice %qkv {axis = 2 : i64, size = 32 : i64, start = 64 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, size = 32 : i64, start = 96 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x32xf32>
  %q4 = mir.reshape %q : (tensor<1x1x64xf32>) -> tensor<1x1x4x16xf32>
  %qn4 = mir.rms_norm %q4, %qn : (tensor<1x1x4x16xf32>, tensor<16xf32>) -> tensor<1x1x4x16xf32>
  %q3 = mir.reshape %qn4 : (tensor<1x1x4x16xf32>) -> tensor<1x1x64xf32>
  %k4 = mir.reshape %k : (tensor<1x1x32xf32>) -> tensor<1x1x2x16xf32>
  %kn4 = mir.rms_norm %k4, %kn : (tensor<1x1x2x16xf32>, tensor<16xf32>) -> tensor<1x1x2x16xf32>
  %k3 = mir.reshape %kn4 : (tensor<1x1x2x16xf32>) -> tensor<1x1x32xf32>
  %qr = mir.rope %q3, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x1x64xf32>, tensor<1xi64>) -> tensor<1x1x64xf32>
  %kr = mir.rope %k3, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x1x32xf32>, tensor<1xi64>) -> tensor<1x1x32xf32>
  %kh = mir.cast %kr : (tensor<1x1x32xf32>) -> tensor<1x1x32xf16>
  %vh = mir.cast %v : (tensor<1x1x32xf32>) -> tensor<1x1x32xf16>
  %kc = mir.concat %pk, %kh {axis = 1 : i64} : (tensor<1x7x32xf16>, tensor<1x1x32xf16>) -> tensor<1x8x32xf16>
  %vc = mir.concat %pv, %vh {axis = 1 : i64} : (tensor<1x7x32xf16>, tensor<1x1x32xf16>) -> tensor<1x8x32xf16>
  %a = mir.attention %qr, %kc, %vc {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x1x64xf32>, tensor<1x8x32xf16>, tensor<1x8x32xf16>) -> tensor<1x1x64xf32>
  %o = mir.fused_matmul %a, %wo residual(%x) {transpose_rhs} : (tensor<1x1x64xf32>, tensor<64x64xf32>, tensor<1x1x64xf32>) -> tensor<1x1x64xf32>
  return %o, %kc, %vc : tensor<1x1x64xf32>, tensor<1x8x32xf16>, tensor<1x8x32xf16>
}
