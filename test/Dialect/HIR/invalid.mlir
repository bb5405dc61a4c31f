// RUN: rlx-opt %s -split-input-file -verify-diagnostics

// Each case names the constraint of docs/Dialects/HIR.md it violates.

func.func @param_c1_empty_name() {
  // expected-error @+1 {{requires a non-empty parameter name}}
  %w = hir.param "" : tensor<4xf32>
  return
}

// -----

func.func @param_c2_dynamic_shape() {
  // expected-error @+1 {{requires a static shape, got 'tensor<?xf32>'}}
  %w = hir.param "w" : tensor<?xf32>
  return
}

// -----

func.func @embed_c1_ids_rank(%ids: tensor<8xi32>, %t: tensor<100x64xf32>) {
  // expected-error @+1 {{expects ids of rank 2, got 'tensor<8xi32>'}}
  %h = hir.embed %ids, %t : (tensor<8xi32>, tensor<100x64xf32>) -> tensor<1x8x64xf32>
  return
}

// -----

func.func @embed_c2_result_shape(%ids: tensor<1x8xi32>, %t: tensor<100x64xf32>) {
  // expected-error @+1 {{expects result of shape [1, 8, 64], got 'tensor<1x8x32xf32>'}}
  %h = hir.embed %ids, %t : (tensor<1x8xi32>, tensor<100x64xf32>) -> tensor<1x8x32xf32>
  return
}

// -----

func.func @embed_c2_element_type(%ids: tensor<1x8xi32>, %t: tensor<100x64xf32>) {
  // expected-error @+1 {{result element type must match the table's}}
  %h = hir.embed %ids, %t : (tensor<1x8xi32>, tensor<100x64xf32>) -> tensor<1x8x64xf16>
  return
}

// -----

func.func @gather_last_token_c1(%h: tensor<1x?x64xf32>) {
  // expected-error @+1 {{expects result of shape [1, 1, 64], got 'tensor<1x2x64xf32>'}}
  %l = hir.gather_last_token %h : (tensor<1x?x64xf32>) -> tensor<1x2x64xf32>
  return
}

// -----

func.func @lm_head_c1_weight(%h: tensor<1x1x64xf32>, %w: tensor<100x32xf32>) {
  // expected-error @+1 {{expects weight of shape [100, 64], got 'tensor<100x32xf32>'}}
  %l = hir.lm_head %h, %w : (tensor<1x1x64xf32>, tensor<100x32xf32>) -> tensor<1x1x100xf32>
  return
}

// -----

func.func @lm_head_c2_result(%h: tensor<1x1x64xf32>, %w: tensor<100x64xf32>) {
  // expected-error @+1 {{expects result of shape [1, 1, 100], got 'tensor<1x1x64xf32>'}}
  %l = hir.lm_head %h, %w : (tensor<1x1x64xf32>, tensor<100x64xf32>) -> tensor<1x1x64xf32>
  return
}

// -----

func.func @logit_softcap_c1(%x: tensor<4xf32>) {
  // expected-error @+1 {{cap must be positive, got 0}}
  %y = hir.logit_softcap %x {cap = 0.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cls_pool_c1(%h: tensor<2x8x64xf32>) {
  // expected-error @+1 {{expects result of shape [2, 64], got 'tensor<2x8xf32>'}}
  %c = hir.cls_pool %h : (tensor<2x8x64xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @mean_pool_c1_mask(%h: tensor<2x8x64xf32>, %m: tensor<2x7xi32>) {
  // expected-error @+1 {{expects mask of shape [2, 8], got 'tensor<2x7xi32>'}}
  %c = hir.mean_pool %h mask(%m) : (tensor<2x8x64xf32>, tensor<2x7xi32>) -> tensor<2x64xf32>
  return
}

// -----

func.func @mean_pool_c1_rank(%h: tensor<8x64xf32>) {
  // expected-error @+1 {{expects input of rank 3, got 'tensor<8x64xf32>'}}
  %c = hir.mean_pool %h : (tensor<8x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

func.func @rms_norm_c1_weight(%x: tensor<1x?x64xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{expects weight of shape [64], got 'tensor<32xf32>'}}
  %y = hir.rms_norm %x, %w : (tensor<1x?x64xf32>, tensor<32xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @rms_norm_c1_rank(%x: tensor<f32>, %w: tensor<1xf32>) {
  // expected-error @+1 {{expects an input of rank >= 1}}
  %y = hir.rms_norm %x, %w : (tensor<f32>, tensor<1xf32>) -> tensor<f32>
  return
}

// -----

func.func @rms_norm_c2_epsilon(%x: tensor<1x?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{epsilon must be positive, got -1}}
  %y = hir.gemma_rms_norm %x, %w {epsilon = -1.0 : f32} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @layer_norm_c1_beta(%x: tensor<1x?x64xf32>, %g: tensor<64xf32>, %b: tensor<63xf32>) {
  // expected-error @+1 {{expects beta of shape [64], got 'tensor<63xf32>'}}
  %y = hir.layer_norm %x, %g, %b : (tensor<1x?x64xf32>, tensor<64xf32>, tensor<63xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @layer_scale_c1(%x: tensor<1x?x64xf32>, %g: tensor<63xf32>) {
  // expected-error @+1 {{expects gamma of shape [64], got 'tensor<63xf32>'}}
  %y = hir.layer_scale %x, %g : (tensor<1x?x64xf32>, tensor<63xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @linear_c1_weight(%x: tensor<2x64xf32>, %w: tensor<128x32xf32>) {
  // expected-error @+1 {{expects weight of shape [128, 64], got 'tensor<128x32xf32>'}}
  %y = hir.linear %x, %w : (tensor<2x64xf32>, tensor<128x32xf32>) -> tensor<2x128xf32>
  return
}

// -----

func.func @linear_c1_weight_rank(%x: tensor<2x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{expects weight of rank 2, got 'tensor<64xf32>'}}
  %y = hir.linear %x, %w : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
  return
}

// -----

func.func @linear_c1_input_rank(%x: tensor<f32>, %w: tensor<4x1xf32>) {
  // expected-error @+1 {{expects an input of rank >= 1}}
  %y = hir.linear %x, %w : (tensor<f32>, tensor<4x1xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @linear_c2_bias(%x: tensor<2x64xf32>, %w: tensor<128x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{expects bias of shape [128], got 'tensor<64xf32>'}}
  %y = hir.linear %x, %w bias(%b) : (tensor<2x64xf32>, tensor<128x64xf32>, tensor<64xf32>) -> tensor<2x128xf32>
  return
}

// -----

func.func @linear_c3_result(%x: tensor<2x64xf32>, %w: tensor<128x64xf32>) {
  // expected-error @+1 {{expects result of shape [2, 128], got 'tensor<2x64xf32>'}}
  %y = hir.linear %x, %w : (tensor<2x64xf32>, tensor<128x64xf32>) -> tensor<2x64xf32>
  return
}

// -----

func.func @rope_c1_head_multiple(%x: tensor<1x4x60xf32>, %p: tensor<4xi32>) {
  // expected-error @+1 {{last dimension (60) must be a multiple of head_dim (16)}}
  %y = hir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x4x60xf32>, tensor<4xi32>) -> tensor<1x4x60xf32>
  return
}

// -----

func.func @rope_c1_rank(%x: tensor<4x64xf32>, %p: tensor<4xi32>) {
  // expected-error @+1 {{expects input of rank 3, got 'tensor<4x64xf32>'}}
  %y = hir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<4x64xf32>, tensor<4xi32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @rope_c2_rotary_odd(%x: tensor<1x4x64xf32>, %p: tensor<4xi32>) {
  // expected-error @+1 {{rotary_dim (15) must be even and at most head_dim (16)}}
  %y = hir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 15 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @rope_c2_inv_freq(%x: tensor<1x4x64xf32>, %p: tensor<4xi32>, %f: tensor<16xf32>) {
  // expected-error @+1 {{expects inv_freq of shape [8], got 'tensor<16xf32>'}}
  %y = hir.rope %x, %p inv_freq(%f) {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<16xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @rope_c3_theta(%x: tensor<1x4x64xf32>, %p: tensor<4xi32>) {
  // expected-error @+1 {{theta must be positive, got 0}}
  %y = hir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 16 : i64, theta = 0.0 : f32} : (tensor<1x4x64xf32>, tensor<4xi32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @rope_c4_positions(%x: tensor<1x4x64xf32>, %p: tensor<5xi32>) {
  // expected-error @+1 {{expects positions of shape [4], got 'tensor<5xi32>'}}
  %y = hir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<5xi32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @rope_c4_positions_rank(%x: tensor<1x4x64xf32>, %p: tensor<1x1x4xi32>) {
  // expected-error @+1 {{expects positions of rank 1 or 2, got 'tensor<1x1x4xi32>'}}
  %y = hir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<1x1x4xi32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @attention_c1_kv_heads_divide_heads(%q: tensor<1x4x64xf32>, %k: tensor<1x4x48xf32>) {
  // expected-error @+1 {{num_kv_heads (3) must divide num_heads (4)}}
  %o = hir.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 3 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<1x4x48xf32>, tensor<1x4x48xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @attention_c2_k_width(%q: tensor<1x4x64xf32>, %k: tensor<1x4x64xf32>) {
  // expected-error @+1 {{expects k of shape [1, 4, 32], got 'tensor<1x4x64xf32>'}}
  %o = hir.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @attention_c2_rank(%q: tensor<4x64xf32>, %k: tensor<1x4x32xf32>) {
  // expected-error @+1 {{expects q, k and v of rank 3, got 'tensor<4x64xf32>'}}
  %o = hir.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @attention_c2_result(%q: tensor<1x4x64xf32>, %k: tensor<1x4x32xf32>) {
  // expected-error @+1 {{expects result of type 'tensor<1x4x64xf32>', got 'tensor<1x4x32xf32>'}}
  %o = hir.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  return
}

// -----

func.func @attention_c3_window_without_sliding(%q: tensor<1x4x64xf32>, %k: tensor<1x4x32xf32>) {
  // expected-error @+1 {{window must be positive exactly when the mask kind is sliding_window (mask causal, window 4)}}
  %o = hir.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, window = 4 : i64} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @attention_c4_padding_without_mask(%q: tensor<1x4x64xf32>, %k: tensor<1x4x32xf32>) {
  // expected-error @+1 {{a padding mask needs the mask operand}}
  %o = hir.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, mask_kind = #hir<mask padding>} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @attention_c4_mask_with_none(%q: tensor<1x4x64xf32>, %k: tensor<1x4x32xf32>, %m: tensor<1x4xi32>) {
  // expected-error @+1 {{mask kind none takes no mask operand (use padding)}}
  %o = hir.attention %q, %k, %k mask(%m) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, mask_kind = #hir<mask none>} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<1x4xi32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @attention_c5_softcap(%q: tensor<1x4x64xf32>, %k: tensor<1x4x32xf32>) {
  // expected-error @+1 {{softcap must be non-negative, got -1}}
  %o = hir.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, softcap = -1.0 : f32} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @attention_c5_scale(%q: tensor<1x4x64xf32>, %k: tensor<1x4x32xf32>) {
  // expected-error @+1 {{scale must be non-negative, got -2}}
  %o = hir.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = -2.0 : f32} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @attention_c6_mask_shape(%q: tensor<1x4x64xf32>, %k: tensor<1x4x32xf32>, %m: tensor<1x5xi32>) {
  // expected-error @+1 {{expects mask of shape [1, 4], got 'tensor<1x5xi32>'}}
  %o = hir.attention %q, %k, %k mask(%m) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, mask_kind = #hir<mask padding>} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<1x5xi32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @attention_heads_positive(%q: tensor<1x4x64xf32>, %k: tensor<1x4x32xf32>) {
  // expected-error @+1 {{attribute 'num_heads' failed to satisfy constraint}}
  %o = hir.attention %q, %k, %k {num_heads = 0 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @swiglu_c1_down(%x: tensor<1x4x64xf32>, %g: tensor<128x64xf32>, %d: tensor<128x64xf32>) {
  // expected-error @+1 {{expects w_down of shape [64, 128], got 'tensor<128x64xf32>'}}
  %y = hir.swiglu %x, %g, %g, %d : (tensor<1x4x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @geglu_c1_up(%x: tensor<1x4x64xf32>, %g: tensor<128x64xf32>, %u: tensor<96x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects w_up of shape [128, 64], got 'tensor<96x64xf32>'}}
  %y = hir.geglu %x, %g, %u, %d : (tensor<1x4x64xf32>, tensor<128x64xf32>, tensor<96x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @swiglu_c1_gate_rank(%x: tensor<1x4x64xf32>, %g: tensor<64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects w_gate of rank 2, got 'tensor<64xf32>'}}
  %y = hir.swiglu %x, %g, %g, %d : (tensor<1x4x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @swiglu_c1_input_rank(%x: tensor<f32>, %g: tensor<4x1xf32>, %d: tensor<1x4xf32>) {
  // expected-error @+1 {{expects an input of rank >= 1}}
  %y = hir.swiglu %x, %g, %g, %d : (tensor<f32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<1x4xf32>) -> tensor<f32>
  return
}

// -----

func.func @gelu_ffn_c1_b_in(%x: tensor<1x4x64xf32>, %w1: tensor<128x64xf32>, %b1: tensor<64xf32>, %w2: tensor<64x128xf32>) {
  // expected-error @+1 {{expects b_in of shape [128], got 'tensor<64xf32>'}}
  %y = hir.gelu_ffn %x, %w1, %b1, %w2, %b1 : (tensor<1x4x64xf32>, tensor<128x64xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @gelu_ffn_c1_w_in_rank(%x: tensor<1x4x64xf32>, %w1: tensor<64xf32>, %w2: tensor<64x128xf32>) {
  // expected-error @+1 {{expects w_in of rank 2, got 'tensor<64xf32>'}}
  %y = hir.gelu_ffn %x, %w1, %w1, %w2, %w1 : (tensor<1x4x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @gelu_ffn_c1_input_rank(%x: tensor<f32>, %w1: tensor<4x1xf32>, %b1: tensor<4xf32>, %w2: tensor<1x4xf32>, %b2: tensor<1xf32>) {
  // expected-error @+1 {{expects an input of rank >= 1}}
  %y = hir.gelu_ffn %x, %w1, %b1, %w2, %b2 : (tensor<f32>, tensor<4x1xf32>, tensor<4xf32>, tensor<1x4xf32>, tensor<1xf32>) -> tensor<f32>
  return
}

// -----

func.func @decoder_layer_c1_result(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects result of type 'tensor<1x4x64xf32>', got 'tensor<1x4x32xf32>'}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x32xf32>
  return
}

// -----

func.func @decoder_layer_c1_rank(%x: tensor<4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects input of rank 3, got 'tensor<4x64xf32>'}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @decoder_layer_c2_heads(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<48x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{num_kv_heads (3) must divide num_heads (4)}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 3 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<48x64xf32>, tensor<48x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c3_positions(%x: tensor<1x4x64xf32>, %pos: tensor<1x3xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects positions of shape [1, 4], got 'tensor<1x3xi32>'}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<1x3xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c4_wq(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<32x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects wq of shape [64, 64], got 'tensor<32x64xf32>'}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c4_q_norm(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects q_norm of shape [16], got 'tensor<64xf32>'}}
  %y = hir.qwen3_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) qk_norm(%n, %n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c4_gemma_norm(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %bad: tensor<32xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects pre_ffn_norm of shape [64], got 'tensor<32xf32>'}}
  %y = hir.gemma_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) norms(%n, %bad, %n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<32xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c5_mlp(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x96xf32>) {
  // expected-error @+1 {{expects w_down of shape [64, 128], got 'tensor<64x96xf32>'}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x96xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c6_rotary(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{rotary_dim (32) must be even and at most head_dim (16)}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, rotary_dim = 32 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c6_theta(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{rope_theta must be positive, got -1}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, rope_theta = -1.0 : f32} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c7_epsilon(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{rms_epsilon must be positive, got 0}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, rms_epsilon = 0.0 : f32} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c7_window(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{window must be non-negative, got -3}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, window = -3 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c7_softcap(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{attn_softcap must be non-negative, got -50}}
  %y = hir.gemma_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) norms(%n, %n, %n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, attn_softcap = -50.0 : f32} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c8_cache_type(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %pk: tensor<1x3x32xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{operand #2 must be ranked tensor of floating-point values}}
  %y, %k, %v = hir.llama_cached_decoder_layer %x, %pos past(%pk, %pk) attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<1x3x32xi32>, tensor<1x3x32xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> (tensor<1x4x64xf32>, tensor<1x7x32xf32>, tensor<1x7x32xf32>)
  return
}

// -----

func.func @decoder_layer_c8_half_cache_beside_half_input(%x: tensor<1x4x64xf16>, %pos: tensor<4xi32>, %pk: tensor<1x3x32xbf16>, %n: tensor<64xf16>, %wq: tensor<64x64xf16>, %wk: tensor<32x64xf16>, %wo: tensor<64x64xf16>, %g: tensor<128x64xf16>, %d: tensor<64x128xf16>) {
  // expected-error @+1 {{keeps its KV cache in 'bf16', which must be the input's element type ('f16') or f16/bf16 beside f32}}
  %y, %k, %v = hir.llama_cached_decoder_layer %x, %pos past(%pk, %pk) attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf16>, tensor<4xi32>, tensor<1x3x32xbf16>, tensor<1x3x32xbf16>, tensor<64xf16>, tensor<64x64xf16>, tensor<32x64xf16>, tensor<32x64xf16>, tensor<64x64xf16>, tensor<64xf16>, tensor<128x64xf16>, tensor<128x64xf16>, tensor<64x128xf16>) -> (tensor<1x4x64xf16>, tensor<1x7x32xbf16>, tensor<1x7x32xbf16>)
  return
}

// -----

func.func @decoder_layer_c8_present_type(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %pk: tensor<1x3x32xf16>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{returns present keys of element type 'f32', not the past's 'f16'}}
  %y, %k, %v = hir.llama_cached_decoder_layer %x, %pos past(%pk, %pk) attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<1x3x32xf16>, tensor<1x3x32xf16>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> (tensor<1x4x64xf32>, tensor<1x7x32xf32>, tensor<1x7x32xf32>)
  return
}

// -----

func.func @decoder_layer_c8_present_length(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %pk: tensor<1x3x32xf32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects present_k of shape [1, 7, 32], got 'tensor<1x6x32xf32>'}}
  %y, %k, %v = hir.llama_cached_decoder_layer %x, %pos past(%pk, %pk) attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> (tensor<1x4x64xf32>, tensor<1x6x32xf32>, tensor<1x6x32xf32>)
  return
}

// -----

func.func @decoder_layer_c8_past_width(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %pk: tensor<1x3x64xf32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects past_k of shape [1, 3, 32], got 'tensor<1x3x64xf32>'}}
  %y, %k, %v = hir.llama_cached_decoder_layer %x, %pos past(%pk, %pk) attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<1x3x64xf32>, tensor<1x3x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> (tensor<1x4x64xf32>, tensor<1x7x32xf32>, tensor<1x7x32xf32>)
  return
}

// -----

func.func @decoder_layer_c8_past_v_type(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %pk: tensor<1x3x32xf32>, %pv: tensor<1x2x32xf32>, %n: tensor<64xf32>, %qn: tensor<16xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects past_v of type 'tensor<1x3x32xf32>', got 'tensor<1x2x32xf32>'}}
  %y, %k, %v = hir.qwen3_cached_decoder_layer %x, %pos past(%pk, %pv) attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) qk_norm(%qn, %qn) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<1x3x32xf32>, tensor<1x2x32xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> (tensor<1x4x64xf32>, tensor<1x7x32xf32>, tensor<1x7x32xf32>)
  return
}

// -----

func.func @bert_encoder_layer_c1_heads(%x: tensor<1x4x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>, %wi: tensor<128x64xf32>, %bi: tensor<128xf32>, %wo: tensor<64x128xf32>) {
  // expected-error @+1 {{num_heads * head_dim (48) must equal the hidden size (64)}}
  %y = hir.bert_encoder_layer %x attn(%w, %b, %w, %b, %w, %b, %w, %b) ln1(%b, %b) ffn(%wi, %bi, %wo, %b) ln2(%b, %b) {num_heads = 3 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @bert_encoder_layer_c2_bias(%x: tensor<1x4x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>, %bad: tensor<32xf32>, %wi: tensor<128x64xf32>, %bi: tensor<128xf32>, %wo: tensor<64x128xf32>) {
  // expected-error @+1 {{expects bk of shape [64], got 'tensor<32xf32>'}}
  %y = hir.bert_encoder_layer %x attn(%w, %b, %w, %bad, %w, %b, %w, %b) ln1(%b, %b) ffn(%wi, %bi, %wo, %b) ln2(%b, %b) {num_heads = 4 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @bert_encoder_layer_c2_ffn(%x: tensor<1x4x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>, %wi: tensor<128x64xf32>, %bi: tensor<128xf32>, %wo: tensor<64x96xf32>) {
  // expected-error @+1 {{expects w_out of shape [64, 128], got 'tensor<64x96xf32>'}}
  %y = hir.bert_encoder_layer %x attn(%w, %b, %w, %b, %w, %b, %w, %b) ln1(%b, %b) ffn(%wi, %bi, %wo, %b) ln2(%b, %b) {num_heads = 4 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<64x96xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @bert_encoder_layer_c3_epsilon(%x: tensor<1x4x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>, %wi: tensor<128x64xf32>, %bi: tensor<128xf32>, %wo: tensor<64x128xf32>) {
  // expected-error @+1 {{ln_epsilon must be positive, got 0}}
  %y = hir.bert_encoder_layer %x attn(%w, %b, %w, %b, %w, %b, %w, %b) ln1(%b, %b) ffn(%wi, %bi, %wo, %b) ln2(%b, %b) {num_heads = 4 : i64, head_dim = 16 : i64, ln_epsilon = 0.0 : f32} : (tensor<1x4x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @custom_c1_block_arguments(%x: tensor<4xf32>) {
  // expected-error @+1 {{block argument types must match the operand types}}
  %y = hir.custom "bad"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<8xf32>):
    hir.yield %x : tensor<4xf32>
  }
  return
}

// -----

func.func @custom_c2_yield_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{yielded types must match the result types}}
  %y = hir.custom "bad"(%x) : (tensor<4xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<4xf32>):
    hir.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @custom_c3_no_hir_inside(%x: tensor<4xf32>) {
  %y = hir.custom "bad"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{is not allowed inside hir.custom}}
    %w = hir.param "w" : tensor<4xf32>
    hir.yield %w : tensor<4xf32>
  }
  return
}

// -----

/// rlx.* attributes belong to the rlx dialect: rlx.name is a non-empty
/// string on function arguments and results; nothing else exists.
// expected-error @+1 {{rlx.name on argument 0 must be a non-empty string, got 3 : i64}}
func.func @rlx_name_not_a_string(%x: tensor<4xf32> {rlx.name = 3}) {
  return
}

// -----

// expected-error @+1 {{unknown RLX attribute 'rlx.nme' on result 0 (RLX knows rlx.name on function arguments and results, and rlx.index_bound on arguments)}}
func.func @rlx_unknown_result_attr(%x: tensor<4xf32>) -> (tensor<4xf32> {rlx.nme = "y"}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{unknown RLX attribute 'rlx.packed_params' (RLX knows rlx.name on function arguments and results, and rlx.param_pages and rlx.rank on modules)}}
module attributes {rlx.packed_params = ["w"]} {
}

// -----

// expected-error @+1 {{rlx.index_bound on argument 0 must be a positive integer, got 0 : i64}}
func.func @rlx_index_bound_not_positive(%ids: tensor<4xi64> {rlx.index_bound = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{rlx.index_bound on argument 0 needs integer ids, got 'tensor<4xf32>'}}
func.func @rlx_index_bound_on_floats(%x: tensor<4xf32> {rlx.index_bound = 8 : i64}) {
  return
}

// -----

func.func @param_c3_storage_not_lower() {
  // expected-error @+1 {{stores an f32 weight as f16, bf16 or ggml blocks only, got storage 'f32'}}
  %w = hir.param "w" {storage = f32} : tensor<4x32xf32>
  return
}

// -----

func.func @param_c3_storage_partial_block() {
  // expected-error @+1 {{a weight stored as 'tensor<4x48x!mir.quant<q8_0>>' must have a last dimension that is a multiple of the block size 32}}
  %w = hir.param "w" {storage = !mir.quant<q8_0>} : tensor<4x48xf32>
  return
}

// -----

func.func @decoder_layer_c10_partial_qkv_bias(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{takes q, k and v biases together (qkv_bias)}}
  %y = "hir.llama_decoder_layer"(%x, %pos, %n, %wq, %wk, %wk, %wo, %n, %n, %g, %g, %d) <{num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>}> : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c10_bias_shape(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects bk of shape [32], got 'tensor<64xf32>'}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) qkv_bias(%n, %n, %n) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_c10_mlp_bias_shape(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{expects b_gate of shape [128], got 'tensor<64xf32>'}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) mlp_bias(%n, %n, %n) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_bad_activation(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+2 {{expected one of [none, relu, gelu, gelu_tanh, silu, sigmoid, tanh, quick_gelu, relu2, relu6, leaky_relu, mish, gelu_10, laplace, hardswish, sqrtsoftplus] for pointwise activation function, got: xielu}}
  // expected-error @+1 {{failed to parse HIR_ActivationAttr parameter 'value'}}
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) post_norm(%n) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, mlp_activation = #hir<activation xielu>} : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @decoder_layer_gemma_q_norm_alone(%x: tensor<1x4x64xf32>, %pos: tensor<4xi32>, %n: tensor<64xf32>, %hn: tensor<16xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>) {
  // expected-error @+1 {{takes q and k norms together (qk_norm)}}
  %y = "hir.gemma_decoder_layer"(%x, %pos, %n, %wq, %wk, %wk, %wo, %n, %n, %n, %hn, %g, %g, %d) <{num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>}> : (tensor<1x4x64xf32>, tensor<4xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<16xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x4x64xf32>
  return
}

// -----

// expected-error @+1 {{'builtin.module' op rlx.rank has rank 2 of 2 ranks; ranks must be at least 2 and rank in [0, ranks)}}
module attributes {rlx.rank = {rank = 2 : i64, ranks = 2 : i64}} {
}

// -----

// expected-error @+1 {{'builtin.module' op rlx.rank must be a dictionary of exactly the integers 'rank' and 'ranks', got 1 : i64}}
module attributes {rlx.rank = 1 : i64} {
}

// -----

module {
  // expected-error @+1 {{'func.func' op rlx.rank belongs on a builtin.module}}
  func.func @f() attributes {rlx.rank = {rank = 0 : i64, ranks = 2 : i64}} {
    return
  }
}
