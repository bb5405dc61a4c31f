// RUN: rlx-opt %s -split-input-file -verify-diagnostics

// The verifiers of hir.stack and of the decoder layers' mixture-of-experts
// form (hir_decoder_layer_c11), one case per diagnostic.

func.func @stack_c1_types(%a: tensor<4x8xf32>, %b: tensor<4x9xf32>) {
  // expected-error @+1 {{'hir.stack' op requires all operands to have the same type}}
  %s = hir.stack %a, %b : (tensor<4x8xf32>, tensor<4x9xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @stack_c1_result(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'hir.stack' op result must be 'tensor<2x4x8xf32>', got 'tensor<8x8xf32>'}}
  %s = hir.stack %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @stack_c1_empty() {
  // expected-error @+1 {{'hir.stack' op stacks at least one tensor}}
  %s = hir.stack : () -> tensor<0x4xf32>
  return
}

// -----

func.func @moe_c11_no_router(%x: tensor<1x5x64xf32>, %pos: tensor<5xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wv: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<48x64xf32>, %u: tensor<48x64xf32>, %d: tensor<64x48xf32>) {
  // expected-error @+1 {{'hir.llama_decoder_layer' op sets experts_per_token, norm_topk_prob or a shared expert without a router (moe)}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%n) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, experts_per_token = 2 : i64} : (tensor<1x5x64xf32>, tensor<5xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<48x64xf32>, tensor<48x64xf32>, tensor<64x48xf32>) -> tensor<1x5x64xf32>
  return
}

// -----

func.func @moe_c11_dense_weights(%x: tensor<1x5x64xf32>, %pos: tensor<5xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wv: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<48x64xf32>, %u: tensor<48x64xf32>, %d: tensor<64x48xf32>, %r: tensor<4x64xf32>) {
  // expected-error @+1 {{'hir.llama_decoder_layer' op expects w_gate of rank 3, got 'tensor<48x64xf32>'}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%n) mlp(%g, %u, %d) moe(%r) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, experts_per_token = 2 : i64} : (tensor<1x5x64xf32>, tensor<5xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<48x64xf32>, tensor<48x64xf32>, tensor<64x48xf32>, tensor<4x64xf32>) -> tensor<1x5x64xf32>
  return
}

// -----

func.func @moe_c11_down_shape(%x: tensor<1x5x64xf32>, %pos: tensor<5xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wv: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<4x48x64xf32>, %u: tensor<4x48x64xf32>, %d: tensor<4x48x64xf32>, %r: tensor<4x64xf32>) {
  // expected-error @+1 {{'hir.llama_decoder_layer' op expects w_down of shape [4, 64, 48], got 'tensor<4x48x64xf32>'}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%n) mlp(%g, %u, %d) moe(%r) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, experts_per_token = 2 : i64} : (tensor<1x5x64xf32>, tensor<5xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<4x48x64xf32>, tensor<4x48x64xf32>, tensor<4x48x64xf32>, tensor<4x64xf32>) -> tensor<1x5x64xf32>
  return
}

// -----

func.func @moe_c11_router_hidden(%x: tensor<1x5x64xf32>, %pos: tensor<5xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wv: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<4x48x64xf32>, %u: tensor<4x48x64xf32>, %d: tensor<4x64x48xf32>, %r: tensor<4x32xf32>) {
  // expected-error @+1 {{'hir.llama_decoder_layer' op expects router of shape [4, 64], got 'tensor<4x32xf32>'}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%n) mlp(%g, %u, %d) moe(%r) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, experts_per_token = 2 : i64} : (tensor<1x5x64xf32>, tensor<5xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<4x48x64xf32>, tensor<4x48x64xf32>, tensor<4x64x48xf32>, tensor<4x32xf32>) -> tensor<1x5x64xf32>
  return
}

// -----

func.func @moe_c11_k_too_large(%x: tensor<1x5x64xf32>, %pos: tensor<5xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wv: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<4x48x64xf32>, %u: tensor<4x48x64xf32>, %d: tensor<4x64x48xf32>, %r: tensor<4x64xf32>) {
  // expected-error @+1 {{'hir.llama_decoder_layer' op experts_per_token = 5 must be in [1, 4] (the router's experts)}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%n) mlp(%g, %u, %d) moe(%r) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, experts_per_token = 5 : i64} : (tensor<1x5x64xf32>, tensor<5xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<4x48x64xf32>, tensor<4x48x64xf32>, tensor<4x64x48xf32>, tensor<4x64xf32>) -> tensor<1x5x64xf32>
  return
}

// -----

func.func @moe_c11_k_missing(%x: tensor<1x5x64xf32>, %pos: tensor<5xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wv: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<4x48x64xf32>, %u: tensor<4x48x64xf32>, %d: tensor<4x64x48xf32>, %r: tensor<4x64xf32>) {
  // expected-error @+1 {{'hir.llama_decoder_layer' op experts_per_token = 0 must be in [1, 4] (the router's experts)}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%n) mlp(%g, %u, %d) moe(%r) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, norm_topk_prob} : (tensor<1x5x64xf32>, tensor<5xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<4x48x64xf32>, tensor<4x48x64xf32>, tensor<4x64x48xf32>, tensor<4x64xf32>) -> tensor<1x5x64xf32>
  return
}

// -----

func.func @moe_mlp_c1_rank(%x: tensor<5x8xf32>, %r: tensor<3x8xf32>, %g: tensor<3x4x8xf32>, %u: tensor<3x4x8xf32>, %d: tensor<3x8x4xf32>) {
  // expected-error @+1 {{'hir.moe_mlp' op expects input of rank 3, got 'tensor<5x8xf32>'}}
  %y = hir.moe_mlp %x router(%r) experts(%g, %u, %d) {experts_per_token = 1 : i64} : (tensor<5x8xf32>, tensor<3x8xf32>, tensor<3x4x8xf32>, tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<5x8xf32>
  return
}

// -----

func.func @moe_mlp_k_positive(%x: tensor<1x5x8xf32>, %r: tensor<3x8xf32>, %g: tensor<3x4x8xf32>, %u: tensor<3x4x8xf32>, %d: tensor<3x8x4xf32>) {
  // expected-error @+1 {{'hir.moe_mlp' op attribute 'experts_per_token' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %y = hir.moe_mlp %x router(%r) experts(%g, %u, %d) {experts_per_token = 0 : i64} : (tensor<1x5x8xf32>, tensor<3x8xf32>, tensor<3x4x8xf32>, tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<1x5x8xf32>
  return
}

// -----

func.func @moe_mlp_c11_experts(%x: tensor<1x5x8xf32>, %r: tensor<3x8xf32>, %g: tensor<2x4x8xf32>, %u: tensor<3x4x8xf32>, %d: tensor<3x8x4xf32>) {
  // expected-error @+1 {{'hir.moe_mlp' op expects w_gate of shape [3, 4, 8], got 'tensor<2x4x8xf32>'}}
  %y = hir.moe_mlp %x router(%r) experts(%g, %u, %d) {experts_per_token = 1 : i64} : (tensor<1x5x8xf32>, tensor<3x8xf32>, tensor<2x4x8xf32>, tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<1x5x8xf32>
  return
}
