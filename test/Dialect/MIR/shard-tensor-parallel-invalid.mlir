// RUN: rlx-opt %s -split-input-file -verify-diagnostics --mir-shard-tensor-parallel="ranks=4 rank=1"

/// What mir-shard-tensor-parallel refuses, over 4 ranks. Each error names
/// the size that does not split or the op that is not partitioned, and the
/// function is left unchanged.

func.func @negative_heads_not_divisible(%x: tensor<1x8x96xf32>, %pos: tensor<8xi64>) -> tensor<1x8x96xf32> {
  %wqkv = mir.param "qkv" : tensor<128x96xf32>
  %wo = mir.param "o" : tensor<96x96xf32>
  // expected-error @+1 {{tensor parallelism over 4 ranks needs num_heads (6) divisible by the ranks}}
  %a = mir.attention_block %x, %wqkv, %wo positions(%pos) {head_dim = 16 : i64, num_heads = 6 : i64, num_kv_heads = 1 : i64, rotary_dim = 16 : i64, scale = 2.500000e-01 : f32} : (tensor<1x8x96xf32>, tensor<128x96xf32>, tensor<96x96xf32>, tensor<8xi64>) -> tensor<1x8x96xf32>
  return %a : tensor<1x8x96xf32>
}

// -----

func.func @negative_kv_heads_do_not_split(%x: tensor<1x8x192xf32>) -> tensor<1x8x192xf32> {
  %wqkv = mir.param "qkv" : tensor<288x192xf32>
  %wo = mir.param "o" : tensor<192x192xf32>
  // expected-error @+1 {{tensor parallelism over 4 ranks needs num_kv_heads (3) to divide or be divisible by the ranks}}
  %a = mir.attention_block %x, %wqkv, %wo {head_dim = 16 : i64, num_heads = 12 : i64, num_kv_heads = 3 : i64, scale = 2.500000e-01 : f32} : (tensor<1x8x192xf32>, tensor<288x192xf32>, tensor<192x192xf32>) -> tensor<1x8x192xf32>
  return %a : tensor<1x8x192xf32>
}

// -----

func.func @negative_intermediate_not_divisible(%x: tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
  %wgu = mir.param "gate_up" : tensor<180x64xf32>
  %wd = mir.param "down" : tensor<64x90xf32>
  %gu = mir.matmul %x, %wgu {transpose_rhs} : (tensor<1x8x64xf32>, tensor<180x64xf32>) -> tensor<1x8x180xf32>
  // expected-error @+1 {{tensor parallelism over 4 ranks needs the MLP intermediate size (90) divisible by the ranks}}
  %g = mir.fused_glu %gu : (tensor<1x8x180xf32>) -> tensor<1x8x90xf32>
  %y = mir.matmul %g, %wd {transpose_rhs} : (tensor<1x8x90xf32>, tensor<64x90xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

// expected-error @+1 {{tensor parallelism expects a decoder layer in fused MIR form: a mir.attention_block and/or an MLP (matmul -> mir.fused_glu -> matmul); lower with --convert-hir-to-mir=policy=direct or run --mir-fuse-all first}}
func.func @negative_not_a_decoder_layer(%x: tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
  %w = mir.param "norm" : tensor<64xf32>
  %y = mir.rms_norm %x, %w : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

func.func @negative_primitive_attention(%s: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{tensor parallelism does not partition 'mir.softmax' outside a mir.attention_block or mir.attention (primitive attention); run --mir-fuse-all first}}
  %p = mir.softmax %s : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %p : tensor<1x4x8x8xf32>
}

// -----

/// A lookup whose vocabulary does not split (1001 over 4) is replicated;
/// with nothing else to split, the function is not a decoder layer.
// expected-error @+1 {{tensor parallelism expects a decoder layer in fused MIR form}}
func.func @negative_only_replicated_embedding(%ids: tensor<1x8xi64>) -> tensor<1x8x64xf32> {
  %t = mir.param "embed_tokens" : tensor<1001x64xf32>
  %e = mir.gather %t, %ids : (tensor<1001x64xf32>, tensor<1x8xi64>) -> tensor<1x8x64xf32>
  return %e : tensor<1x8x64xf32>
}

// -----

func.func @negative_embedding_not_rows(%ids: tensor<8xi64>) -> tensor<64x8xf32> {
  %t = mir.param "table" : tensor<64x1000xf32>
  // expected-error @+1 {{tensor parallelism splits an embedding over the vocabulary only as a mir.gather along axis 0 of a static 2-D float or stored-weight table}}
  %e = mir.gather %t, %ids {axis = 1 : i64} : (tensor<64x1000xf32>, tensor<8xi64>) -> tensor<64x8xf32>
  return %e : tensor<64x8xf32>
}

// -----

func.func @negative_projection_with_residual(%x: tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
  %w = mir.param "proj" : tensor<64x64xf32>
  // expected-error @+1 {{tensor parallelism does not partition this projection: not part of an attention block or MLP, and not an LM head (a transposed mir.matmul or mir.fused_matmul without residual)}}
  %y = mir.fused_matmul %x, %w residual(%x) {transpose_rhs} : (tensor<1x8x64xf32>, tensor<64x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

// expected-error @+1 {{tensor parallelism over 4 ranks needs grid @tp of shape 4}}
shard.grid @tp(shape = 2)

func.func @negative_grid_shape(%x: tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
  %wgu = mir.param "gate_up" : tensor<256x64xf32>
  %wd = mir.param "down" : tensor<64x128xf32>
  %gu = mir.matmul %x, %wgu {transpose_rhs} : (tensor<1x8x64xf32>, tensor<256x64xf32>) -> tensor<1x8x256xf32>
  %g = mir.fused_glu %gu : (tensor<1x8x256xf32>) -> tensor<1x8x128xf32>
  %y = mir.matmul %g, %wd {transpose_rhs} : (tensor<1x8x128xf32>, tensor<64x128xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

func.func @negative_cache_not_an_argument(%x: tensor<1x1x64xf32>, %pk: tensor<1x7x32xf32>, %pv: tensor<1x7x32xf32>) -> tensor<1x1x64xf32> {
  %w = mir.param "qkv" : tensor<128x64xf32>
  %wo = mir.param "o" : tensor<64x64xf32>
  %qkv = mir.matmul %x, %w {transpose_rhs} : (tensor<1x1x64xf32>, tensor<128x64xf32>) -> tensor<1x1x128xf32>
  %q = mir.slice %qkv {axis = 2 : i64, size = 64 : i64, start = 0 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x64xf32>
  %k = mir.slice %qkv {axis = 2 : i64, size = 32 : i64, start = 64 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, size = 32 : i64, start = 96 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x32xf32>
  %pk2 = mir.exp %pk : (tensor<1x7x32xf32>) -> tensor<1x7x32xf32>
  // expected-error @+1 {{tensor parallelism cannot partition this attention: a KV cache must be a function argument concatenated once, along the tokens, before the new keys or values}}
  %kc = mir.concat %pk2, %k {axis = 1 : i64} : (tensor<1x7x32xf32>, tensor<1x1x32xf32>) -> tensor<1x8x32xf32>
  %vc = mir.concat %pv, %v {axis = 1 : i64} : (tensor<1x7x32xf32>, tensor<1x1x32xf32>) -> tensor<1x8x32xf32>
  %a = mir.attention %q, %kc, %vc {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x1x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x1x64xf32>
  %o = mir.matmul %a, %wo {transpose_rhs} : (tensor<1x1x64xf32>, tensor<64x64xf32>) -> tensor<1x1x64xf32>
  return %o : tensor<1x1x64xf32>
}

// -----

func.func @negative_unknown_op_between(%x: tensor<1x1x64xf32>) -> tensor<1x1x64xf32> {
  %w = mir.param "qkv" : tensor<128x64xf32>
  %wo = mir.param "o" : tensor<64x64xf32>
  %qkv = mir.matmul %x, %w {transpose_rhs} : (tensor<1x1x64xf32>, tensor<128x64xf32>) -> tensor<1x1x128xf32>
  %q = mir.slice %qkv {axis = 2 : i64, size = 64 : i64, start = 0 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x64xf32>
  %k = mir.slice %qkv {axis = 2 : i64, size = 32 : i64, start = 64 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, size = 32 : i64, start = 96 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x32xf32>
  // expected-error @+1 {{tensor parallelism cannot partition this attention: 'mir.exp' between the QKV projection and mir.attention is not partitioned}}
  %qe = mir.exp %q : (tensor<1x1x64xf32>) -> tensor<1x1x64xf32>
  %a = mir.attention %qe, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x1x64xf32>, tensor<1x1x32xf32>, tensor<1x1x32xf32>) -> tensor<1x1x64xf32>
  %o = mir.matmul %a, %wo {transpose_rhs} : (tensor<1x1x64xf32>, tensor<64x64xf32>) -> tensor<1x1x64xf32>
  return %o : tensor<1x1x64xf32>
}

// -----

func.func @negative_qkv_used_elsewhere(%x: tensor<1x1x64xf32>) -> (tensor<1x1x64xf32>, tensor<1x1x128xf32>) {
  %w = mir.param "qkv" : tensor<128x64xf32>
  %wo = mir.param "o" : tensor<64x64xf32>
  %qkv = mir.matmul %x, %w {transpose_rhs} : (tensor<1x1x64xf32>, tensor<128x64xf32>) -> tensor<1x1x128xf32>
  %q = mir.slice %qkv {axis = 2 : i64, size = 64 : i64, start = 0 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x64xf32>
  %k = mir.slice %qkv {axis = 2 : i64, size = 32 : i64, start = 64 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, size = 32 : i64, start = 96 : i64} : (tensor<1x1x128xf32>) -> tensor<1x1x32xf32>
  %a = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x1x64xf32>, tensor<1x1x32xf32>, tensor<1x1x32xf32>) -> tensor<1x1x64xf32>
  %o = mir.matmul %a, %wo {transpose_rhs} : (tensor<1x1x64xf32>, tensor<64x64xf32>) -> tensor<1x1x64xf32>
  // expected-error @+1 {{tensor parallelism cannot partition this attention: the QKV projection has a use outside q, k and v}}
  return %o, %qkv : tensor<1x1x64xf32>, tensor<1x1x128xf32>
}

// -----

func.func @negative_mixture_of_experts(%logits: tensor<1x8x4xf32>) -> tensor<1x8x2xi64> {
  // expected-error @+1 {{tensor parallelism does not split mixture-of-experts layers (a router's mir.top_k): run the model in one process}}
  %v, %i = mir.top_k %logits {k = 2 : i64} : (tensor<1x8x4xf32>) -> (tensor<1x8x2xf32>, tensor<1x8x2xi64>)
  return %i : tensor<1x8x2xi64>
}

// -----

func.func @negative_already_rounded(%x: tensor<1x8x64xf32>) -> tensor<1x8x256xf32> {
  %w = mir.param "w" : tensor<256x64xf32>
  // expected-error @+1 {{tensor parallelism splits the model before mir-compute-precision rounds its activations; this op already rounds its results (round_to)}}
  %y = mir.fused_matmul %x, %w {transpose_rhs, round_to = bf16} : (tensor<1x8x64xf32>, tensor<256x64xf32>) -> tensor<1x8x256xf32>
  return %y : tensor<1x8x256xf32>
}
