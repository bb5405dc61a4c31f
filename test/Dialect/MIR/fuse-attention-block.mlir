// RUN: rlx-opt %s --mir-fuse-attention-block --split-input-file | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(func.func(mir-fuse-attention-block))' --split-input-file | FileCheck %s

/// Attention block. IN: a QKV projection (matmul {transpose_rhs}, optionally
/// plus a bias) → three slices [q | k | v] → optional QK-norm (reshape,
/// rms_norm, reshape) → optional mir.rope of q and k → mir.attention → output
/// projection (matmul {transpose_rhs}, optionally plus a bias). OUT: one
/// `mir.attention_block`.

// CHECK-LABEL: func.func @fuse_llama_block
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x64xf32>, %[[POS:.*]]: tensor<8xi64>)
// CHECK-DAG: %[[WQKV:.*]] = mir.param "qkv"
// CHECK-DAG: %[[WO:.*]] = mir.param "o"
// CHECK: %[[Y:.*]] = mir.attention_block %[[X]], %[[WQKV]], %[[WO]] positions(%[[POS]]) {head_dim = 16 : i64, mask_kind = #mir<mask causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 5.000000e+05 : f32, rotary_dim = 16 : i64, scale = 2.500000e-01 : f32} : (tensor<1x8x64xf32>, tensor<128x64xf32>, tensor<64x64xf32>, tensor<8xi64>) -> tensor<1x8x64xf32>
// CHECK-NOT: mir.slice
// CHECK-NOT: mir.rope
// CHECK-NOT: mir.matmul
// CHECK: return %[[Y]]
func.func @fuse_llama_block(%x: tensor<1x8x64xf32>, %pos: tensor<8xi64>) -> tensor<1x8x64xf32> {
  %wqkv = mir.param "qkv" : tensor<128x64xf32>
  %wo = mir.param "o" : tensor<64x64xf32>
  %qkv = mir.matmul %x, %wqkv {transpose_rhs} : (tensor<1x8x64xf32>, tensor<128x64xf32>) -> tensor<1x8x128xf32>
  %q = mir.slice %qkv {axis = 2 : i64, start = 0 : i64, size = 64 : i64} : (tensor<1x8x128xf32>) -> tensor<1x8x64xf32>
  %k = mir.slice %qkv {axis = 2 : i64, start = 64 : i64, size = 32 : i64} : (tensor<1x8x128xf32>) -> tensor<1x8x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, start = 96 : i64, size = 32 : i64} : (tensor<1x8x128xf32>) -> tensor<1x8x32xf32>
  %q2 = mir.rope %q, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64, theta = 5.0e+05 : f32} : (tensor<1x8x64xf32>, tensor<8xi64>) -> tensor<1x8x64xf32>
  %k2 = mir.rope %k, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64, theta = 5.0e+05 : f32} : (tensor<1x8x32xf32>, tensor<8xi64>) -> tensor<1x8x32xf32>
  %a = mir.attention %q2, %k2, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x8x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x8x64xf32>
  %y = mir.matmul %a, %wo {transpose_rhs} : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

/// BERT: biases on both projections, a padding mask, no RoPE.

// CHECK-LABEL: func.func @fuse_bert_block
// CHECK-SAME: (%[[X:.*]]: tensor<2x?x64xf32>, %[[M:.*]]: tensor<2x?xi32>)
// CHECK: %[[Y:.*]] = mir.attention_block %[[X]], %{{.*}}, %{{.*}} qkv_bias(%{{.*}}) out_bias(%{{.*}}) mask(%[[M]]) {head_dim = 16 : i64, mask_kind = #mir<mask padding>, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 2.500000e-01 : f32}
// CHECK-NOT: mir.add
// CHECK: return %[[Y]]
func.func @fuse_bert_block(%x: tensor<2x?x64xf32>, %m: tensor<2x?xi32>) -> tensor<2x?x64xf32> {
  %wqkv = mir.param "qkv.w" : tensor<192x64xf32>
  %bqkv = mir.param "qkv.b" : tensor<192xf32>
  %wo = mir.param "o.w" : tensor<64x64xf32>
  %bo = mir.param "o.b" : tensor<64xf32>
  %p = mir.matmul %x, %wqkv {transpose_rhs} : (tensor<2x?x64xf32>, tensor<192x64xf32>) -> tensor<2x?x192xf32>
  %qkv = mir.add %p, %bqkv : (tensor<2x?x192xf32>, tensor<192xf32>) -> tensor<2x?x192xf32>
  %q = mir.slice %qkv {axis = 2 : i64, start = 0 : i64, size = 64 : i64} : (tensor<2x?x192xf32>) -> tensor<2x?x64xf32>
  %k = mir.slice %qkv {axis = 2 : i64, start = 64 : i64, size = 64 : i64} : (tensor<2x?x192xf32>) -> tensor<2x?x64xf32>
  %v = mir.slice %qkv {axis = 2 : i64, start = 128 : i64, size = 64 : i64} : (tensor<2x?x192xf32>) -> tensor<2x?x64xf32>
  %a = mir.attention %q, %k, %v mask(%m) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask padding>} : (tensor<2x?x64xf32>, tensor<2x?x64xf32>, tensor<2x?x64xf32>, tensor<2x?xi32>) -> tensor<2x?x64xf32>
  %o = mir.matmul %a, %wo {transpose_rhs} : (tensor<2x?x64xf32>, tensor<64x64xf32>) -> tensor<2x?x64xf32>
  %y = mir.add %o, %bo : (tensor<2x?x64xf32>, tensor<64xf32>) -> tensor<2x?x64xf32>
  return %y : tensor<2x?x64xf32>
}

// -----

/// The projections may already be fused matmuls with a bias (when the
/// epilogue fusion ran first).

// CHECK-LABEL: func.func @fuse_block_from_fused_matmuls
// CHECK: mir.attention_block %{{.*}}, %{{.*}}, %{{.*}} qkv_bias(%{{.*}}) out_bias(%{{.*}}) {head_dim = 16 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32}
// CHECK-NOT: mir.fused_matmul
func.func @fuse_block_from_fused_matmuls(%x: tensor<1x4x32xf32>, %wqkv: tensor<96x32xf32>, %bqkv: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<1x4x32xf32> {
  %qkv = mir.fused_matmul %x, %wqkv bias(%bqkv) {transpose_rhs} : (tensor<1x4x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<1x4x96xf32>
  %q = mir.slice %qkv {axis = 2 : i64, start = 0 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %k = mir.slice %qkv {axis = 2 : i64, start = 32 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, start = 64 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %a = mir.attention %q, %k, %v {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  %y = mir.fused_matmul %a, %wo bias(%bo) {transpose_rhs} : (tensor<1x4x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<1x4x32xf32>
  return %y : tensor<1x4x32xf32>
}

// -----

/// Qwen3: per-head RMSNorm of q and k before RoPE (QK-norm).

// CHECK-LABEL: func.func @fuse_qwen3_block
// CHECK-DAG: %[[QN:.*]] = mir.param "q_norm"
// CHECK-DAG: %[[KN:.*]] = mir.param "k_norm"
// CHECK: mir.attention_block %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}}) q_norm(%[[QN]]) k_norm(%[[KN]]) {{{.*}}norm_epsilon = 9.99999974E-6 : f32{{.*}}}
// CHECK-NOT: mir.rms_norm
func.func @fuse_qwen3_block(%x: tensor<1x8x64xf32>, %pos: tensor<8xi64>) -> tensor<1x8x64xf32> {
  %wqkv = mir.param "qkv" : tensor<128x64xf32>
  %wo = mir.param "o" : tensor<64x64xf32>
  %qn = mir.param "q_norm" : tensor<16xf32>
  %kn = mir.param "k_norm" : tensor<16xf32>
  %qkv = mir.matmul %x, %wqkv {transpose_rhs} : (tensor<1x8x64xf32>, tensor<128x64xf32>) -> tensor<1x8x128xf32>
  %q = mir.slice %qkv {axis = 2 : i64, start = 0 : i64, size = 64 : i64} : (tensor<1x8x128xf32>) -> tensor<1x8x64xf32>
  %k = mir.slice %qkv {axis = 2 : i64, start = 64 : i64, size = 32 : i64} : (tensor<1x8x128xf32>) -> tensor<1x8x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, start = 96 : i64, size = 32 : i64} : (tensor<1x8x128xf32>) -> tensor<1x8x32xf32>
  %q1 = mir.reshape %q : (tensor<1x8x64xf32>) -> tensor<1x8x4x16xf32>
  %q2 = mir.rms_norm %q1, %qn {epsilon = 1.0e-5 : f32} : (tensor<1x8x4x16xf32>, tensor<16xf32>) -> tensor<1x8x4x16xf32>
  %q3 = mir.reshape %q2 : (tensor<1x8x4x16xf32>) -> tensor<1x8x64xf32>
  %k1 = mir.reshape %k : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %k2 = mir.rms_norm %k1, %kn {epsilon = 1.0e-5 : f32} : (tensor<1x8x2x16xf32>, tensor<16xf32>) -> tensor<1x8x2x16xf32>
  %k3 = mir.reshape %k2 : (tensor<1x8x2x16xf32>) -> tensor<1x8x32xf32>
  %q4 = mir.rope %q3, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x8x64xf32>, tensor<8xi64>) -> tensor<1x8x64xf32>
  %k4 = mir.rope %k3, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x8x32xf32>, tensor<8xi64>) -> tensor<1x8x32xf32>
  %a = mir.attention %q4, %k4, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x8x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x8x64xf32>
  %y = mir.matmul %a, %wo {transpose_rhs} : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

/// A decode step reads K and V from the cache: not a block.

// CHECK-LABEL: func.func @negative_kv_cache
// CHECK-NOT: mir.attention_block
// CHECK: mir.attention
func.func @negative_kv_cache(%x: tensor<1x1x64xf32>, %pos: tensor<1xi64>, %pk: tensor<1x7x32xf32>, %pv: tensor<1x7x32xf32>) -> tensor<1x1x64xf32> {
  %wqkv = mir.param "qkv" : tensor<128x64xf32>
  %wo = mir.param "o" : tensor<64x64xf32>
  %qkv = mir.matmul %x, %wqkv {transpose_rhs} : (tensor<1x1x64xf32>, tensor<128x64xf32>) -> tensor<1x1x128xf32>
  %q = mir.slice %qkv {axis = 2 : i64, start = 0 : i64, size = 64 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x64xf32>
  %k = mir.slice %qkv {axis = 2 : i64, start = 64 : i64, size = 32 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, start = 96 : i64, size = 32 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x32xf32>
  %q2 = mir.rope %q, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x1x64xf32>, tensor<1xi64>) -> tensor<1x1x64xf32>
  %k2 = mir.rope %k, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x1x32xf32>, tensor<1xi64>) -> tensor<1x1x32xf32>
  %kc = mir.concat %pk, %k2 {axis = 1 : i64} : (tensor<1x7x32xf32>, tensor<1x1x32xf32>) -> tensor<1x8x32xf32>
  %vc = mir.concat %pv, %v {axis = 1 : i64} : (tensor<1x7x32xf32>, tensor<1x1x32xf32>) -> tensor<1x8x32xf32>
  %a = mir.attention %q2, %kc, %vc {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x1x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x1x64xf32>
  %y = mir.matmul %a, %wo {transpose_rhs} : (tensor<1x1x64xf32>, tensor<64x64xf32>) -> tensor<1x1x64xf32>
  return %y : tensor<1x1x64xf32>
}

// -----

/// Q, K and V still three matmuls: run mir-fuse-shared-input-matmuls first.

// CHECK-LABEL: func.func @negative_projections_not_concatenated
// CHECK-NOT: mir.attention_block
func.func @negative_projections_not_concatenated(%x: tensor<1x4x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x32xf32>, %wv: tensor<32x32xf32>, %wo: tensor<32x32xf32>) -> tensor<1x4x32xf32> {
  %q = mir.matmul %x, %wq {transpose_rhs} : (tensor<1x4x32xf32>, tensor<32x32xf32>) -> tensor<1x4x32xf32>
  %k = mir.matmul %x, %wk {transpose_rhs} : (tensor<1x4x32xf32>, tensor<32x32xf32>) -> tensor<1x4x32xf32>
  %v = mir.matmul %x, %wv {transpose_rhs} : (tensor<1x4x32xf32>, tensor<32x32xf32>) -> tensor<1x4x32xf32>
  %a = mir.attention %q, %k, %v {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  %y = mir.matmul %a, %wo {transpose_rhs} : (tensor<1x4x32xf32>, tensor<32x32xf32>) -> tensor<1x4x32xf32>
  return %y : tensor<1x4x32xf32>
}

// -----

/// K sliced first: the slices are not the [q | k | v] layout of w_qkv.

// CHECK-LABEL: func.func @negative_slices_out_of_order
// CHECK-NOT: mir.attention_block
func.func @negative_slices_out_of_order(%x: tensor<1x4x32xf32>, %w: tensor<96x32xf32>, %wo: tensor<32x32xf32>) -> tensor<1x4x32xf32> {
  %qkv = mir.matmul %x, %w {transpose_rhs} : (tensor<1x4x32xf32>, tensor<96x32xf32>) -> tensor<1x4x96xf32>
  %k = mir.slice %qkv {axis = 2 : i64, start = 0 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %q = mir.slice %qkv {axis = 2 : i64, start = 32 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, start = 64 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %a = mir.attention %q, %k, %v {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  %y = mir.matmul %a, %wo {transpose_rhs} : (tensor<1x4x32xf32>, tensor<32x32xf32>) -> tensor<1x4x32xf32>
  return %y : tensor<1x4x32xf32>
}

// -----

/// RoPE on q only.

// CHECK-LABEL: func.func @negative_rope_on_q_only
// CHECK-NOT: mir.attention_block
func.func @negative_rope_on_q_only(%x: tensor<1x4x32xf32>, %w: tensor<96x32xf32>, %wo: tensor<32x32xf32>, %pos: tensor<4xi64>) -> tensor<1x4x32xf32> {
  %qkv = mir.matmul %x, %w {transpose_rhs} : (tensor<1x4x32xf32>, tensor<96x32xf32>) -> tensor<1x4x96xf32>
  %q = mir.slice %qkv {axis = 2 : i64, start = 0 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %k = mir.slice %qkv {axis = 2 : i64, start = 32 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, start = 64 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %q2 = mir.rope %q, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x4x32xf32>, tensor<4xi64>) -> tensor<1x4x32xf32>
  %a = mir.attention %q2, %k, %v {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  %y = mir.matmul %a, %wo {transpose_rhs} : (tensor<1x4x32xf32>, tensor<32x32xf32>) -> tensor<1x4x32xf32>
  return %y : tensor<1x4x32xf32>
}

// -----

/// The attention output is also returned.

// CHECK-LABEL: func.func @negative_attention_multi_consumer
// CHECK-NOT: mir.attention_block
func.func @negative_attention_multi_consumer(%x: tensor<1x4x32xf32>, %w: tensor<96x32xf32>, %wo: tensor<32x32xf32>) -> (tensor<1x4x32xf32>, tensor<1x4x32xf32>) {
  %qkv = mir.matmul %x, %w {transpose_rhs} : (tensor<1x4x32xf32>, tensor<96x32xf32>) -> tensor<1x4x96xf32>
  %q = mir.slice %qkv {axis = 2 : i64, start = 0 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %k = mir.slice %qkv {axis = 2 : i64, start = 32 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, start = 64 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %a = mir.attention %q, %k, %v {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  %y = mir.matmul %a, %wo {transpose_rhs} : (tensor<1x4x32xf32>, tensor<32x32xf32>) -> tensor<1x4x32xf32>
  return %y, %a : tensor<1x4x32xf32>, tensor<1x4x32xf32>
}
