// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --mlir-print-op-generic | rlx-opt | FileCheck %s

// Every HIR op, round-tripped in its pretty and generic forms. Shapes: hidden
// 64, 4 query heads and 2 KV heads of 16, intermediate 128, vocab 100.

// CHECK-LABEL: func.func @param_and_embed
func.func @param_and_embed(%ids: tensor<1x?xi32>) -> tensor<1x?x64xf32> {
  // CHECK: %[[T:.*]] = hir.param "model.embed_tokens.weight" : tensor<100x64xf32>
  %t = hir.param "model.embed_tokens.weight" : tensor<100x64xf32>
  // CHECK: hir.embed %{{.*}}, %[[T]]
  %h = hir.embed %ids, %t : (tensor<1x?xi32>, tensor<100x64xf32>) -> tensor<1x?x64xf32>
  // CHECK: hir.embed_scale %{{.*}} {scale = 8.000000e+00 : f32}
  %s = hir.embed_scale %h {scale = 8.0 : f32} : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return %s : tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<1x?x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<1x?x64xf32> {
  // CHECK: hir.rms_norm
  %0 = hir.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  // CHECK: hir.gemma_rms_norm
  %1 = hir.gemma_rms_norm %0, %w : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  // CHECK: hir.layer_norm
  %2 = hir.layer_norm %1, %w, %b {epsilon = 1.0e-12 : f32} : (tensor<1x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  // CHECK: hir.layer_scale
  %3 = hir.layer_scale %2, %w : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  // CHECK: hir.add
  %4 = hir.add %3, %x : (tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return %4 : tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @linear_with_bias_and_activation
func.func @linear_with_bias_and_activation(%x: tensor<2x7x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>) -> (tensor<2x7x128xf32>, tensor<2x7x128xf32>) {
  // CHECK: hir.linear %{{.*}}, %{{.*}} bias(%{{.*}}) {activation = #hir<activation gelu>}
  %0 = hir.linear %x, %w bias(%b) {activation = #hir<activation gelu>} : (tensor<2x7x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<2x7x128xf32>
  // CHECK: hir.linear %{{.*}}, %{{.*}} :
  %1 = hir.linear %x, %w : (tensor<2x7x64xf32>, tensor<128x64xf32>) -> tensor<2x7x128xf32>
  return %0, %1 : tensor<2x7x128xf32>, tensor<2x7x128xf32>
}

// CHECK-LABEL: func.func @linear_every_new_activation
func.func @linear_every_new_activation(%x: tensor<2x7x64xf32>, %w: tensor<64x64xf32>) -> tensor<2x7x64xf32> {
  // CHECK: hir.linear %{{.*}}, %{{.*}} {activation = #hir<activation quick_gelu>}
  %0 = hir.linear %x, %w {activation = #hir<activation quick_gelu>} : (tensor<2x7x64xf32>, tensor<64x64xf32>) -> tensor<2x7x64xf32>
  // CHECK: hir.linear %{{.*}}, %{{.*}} {activation = #hir<activation relu2>}
  %1 = hir.linear %0, %w {activation = #hir<activation relu2>} : (tensor<2x7x64xf32>, tensor<64x64xf32>) -> tensor<2x7x64xf32>
  // CHECK: hir.linear %{{.*}}, %{{.*}} {activation = #hir<activation relu6>}
  %2 = hir.linear %1, %w {activation = #hir<activation relu6>} : (tensor<2x7x64xf32>, tensor<64x64xf32>) -> tensor<2x7x64xf32>
  // CHECK: hir.linear %{{.*}}, %{{.*}} {activation = #hir<activation leaky_relu>}
  %3 = hir.linear %2, %w {activation = #hir<activation leaky_relu>} : (tensor<2x7x64xf32>, tensor<64x64xf32>) -> tensor<2x7x64xf32>
  // CHECK: hir.linear %{{.*}}, %{{.*}} {activation = #hir<activation mish>}
  %4 = hir.linear %3, %w {activation = #hir<activation mish>} : (tensor<2x7x64xf32>, tensor<64x64xf32>) -> tensor<2x7x64xf32>
  // CHECK: hir.linear %{{.*}}, %{{.*}} {activation = #hir<activation gelu_10>}
  %5 = hir.linear %4, %w {activation = #hir<activation gelu_10>} : (tensor<2x7x64xf32>, tensor<64x64xf32>) -> tensor<2x7x64xf32>
  // CHECK: hir.linear %{{.*}}, %{{.*}} {activation = #hir<activation laplace>}
  %6 = hir.linear %5, %w {activation = #hir<activation laplace>} : (tensor<2x7x64xf32>, tensor<64x64xf32>) -> tensor<2x7x64xf32>
  // CHECK: hir.linear %{{.*}}, %{{.*}} {activation = #hir<activation hardswish>}
  %7 = hir.linear %6, %w {activation = #hir<activation hardswish>} : (tensor<2x7x64xf32>, tensor<64x64xf32>) -> tensor<2x7x64xf32>
  // CHECK: hir.linear %{{.*}}, %{{.*}} {activation = #hir<activation sqrtsoftplus>}
  %8 = hir.linear %7, %w {activation = #hir<activation sqrtsoftplus>} : (tensor<2x7x64xf32>, tensor<64x64xf32>) -> tensor<2x7x64xf32>
  return %8 : tensor<2x7x64xf32>
}

// CHECK-LABEL: func.func @rope_and_attention
func.func @rope_and_attention(%q: tensor<1x?x64xf32>, %k: tensor<1x?x32xf32>, %v: tensor<1x?x32xf32>, %pos: tensor<1x?xi32>, %f: tensor<8xf32>, %m: tensor<1x?xi32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) {
  // CHECK: hir.rope %{{.*}}, %{{.*}} {head_dim = 16 : i64, rotary_dim = 16 : i64, theta = 5.000000e+05 : f32}
  %q2 = hir.rope %q, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64, theta = 500000.0 : f32} : (tensor<1x?x64xf32>, tensor<1x?xi32>) -> tensor<1x?x64xf32>
  // CHECK: hir.rope %{{.*}}, %{{.*}} inv_freq(%{{.*}}) {head_dim = 16 : i64, rotary_dim = 16 : i64, style = #hir<rope_style interleaved>}
  %k2 = hir.rope %k, %pos inv_freq(%f) {head_dim = 16 : i64, rotary_dim = 16 : i64, style = #hir<rope_style interleaved>} : (tensor<1x?x32xf32>, tensor<1x?xi32>, tensor<8xf32>) -> tensor<1x?x32xf32>
  // CHECK: hir.attention {{.*}} {head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
  %o = hir.attention %q2, %k2, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>) -> tensor<1x?x64xf32>
  // CHECK: hir.attention {{.*}} mask(%{{.*}}) {{.*}}mask_kind = #hir<mask padding>
  %p = hir.attention %q2, %k2, %v mask(%m) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, mask_kind = #hir<mask padding>} : (tensor<1x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?xi32>) -> tensor<1x?x64xf32>
  // CHECK: hir.attention {{.*}}mask_kind = #hir<mask sliding_window>{{.*}}softcap = 5.000000e+01 : f32, window = 4 : i64
  %s = hir.attention %q2, %k2, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, mask_kind = #hir<mask sliding_window>, window = 4 : i64, scale = 0.25 : f32, softcap = 50.0 : f32} : (tensor<1x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>) -> tensor<1x?x64xf32>
  return %o, %p, %s : tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @ffns
func.func @ffns(%x: tensor<1x?x64xf32>, %g: tensor<128x64xf32>, %u: tensor<128x64xf32>, %d: tensor<64x128xf32>, %b1: tensor<128xf32>, %b2: tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) {
  // CHECK: hir.swiglu
  %0 = hir.swiglu %x, %g, %u, %d : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x?x64xf32>
  // CHECK: hir.geglu
  %1 = hir.geglu %x, %g, %u, %d : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x?x64xf32>
  // CHECK: hir.gelu_ffn {{.*}} {tanh_approx}
  %2 = hir.gelu_ffn %x, %g, %b1, %d, %b2 {tanh_approx} : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return %0, %1, %2 : tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @llama_layers
func.func @llama_layers(%x: tensor<1x?x64xf32>, %pos: tensor<1x?xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wv: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %u: tensor<128x64xf32>, %d: tensor<64x128xf32>, %pk: tensor<1x?x32xf32>, %pv: tensor<1x?x32xf32>, %f: tensor<8xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x32xf32>) {
  // CHECK: hir.llama_decoder_layer %{{.*}}, %{{.*}} attn(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) mlp(%{{.*}}, %{{.*}}, %{{.*}}) inv_freq(%{{.*}})
  %0 = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%n) mlp(%g, %u, %d) inv_freq(%f) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, rope_theta = 500000.0 : f32} : (tensor<1x?x64xf32>, tensor<1x?xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<8xf32>) -> tensor<1x?x64xf32>
  // CHECK: hir.llama_cached_decoder_layer %{{.*}}, %{{.*}} past(%{{.*}}, %{{.*}}) attn
  %1, %k, %v = hir.llama_cached_decoder_layer %0, %pos past(%pk, %pv) attn(%n, %wq, %wk, %wv, %wo) post_norm(%n) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x?x64xf32>, tensor<1x?xi32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>)
  return %1, %k : tensor<1x?x64xf32>, tensor<1x?x32xf32>
}

// CHECK-LABEL: func.func @llama_layer_biases
func.func @llama_layer_biases(%x: tensor<1x?x64xf32>, %pos: tensor<1x?xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %bk: tensor<32xf32>, %g: tensor<128x64xf32>, %d: tensor<64x128xf32>, %bg: tensor<128xf32>) -> tensor<1x?x64xf32> {
  // CHECK: hir.llama_decoder_layer %{{.*}}, %{{.*}} attn({{.*}}) qkv_bias(%{{.*}}, %{{.*}}, %{{.*}}) o_bias(%{{.*}}) post_norm(%{{.*}}) mlp({{.*}}) mlp_bias(%{{.*}}, %{{.*}}, %{{.*}}) {{{.*}}mlp_activation = #hir<activation gelu>
  %0 = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) qkv_bias(%n, %bk, %bk) o_bias(%n) post_norm(%n) mlp(%g, %g, %d) mlp_bias(%bg, %bg, %n) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, mlp_activation = #hir<activation gelu>} : (tensor<1x?x64xf32>, tensor<1x?xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return %0 : tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @qwen3_layers
func.func @qwen3_layers(%x: tensor<1x5x64xf32>, %pos: tensor<5xi64>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wv: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %qn: tensor<16xf32>, %kn: tensor<16xf32>, %g: tensor<128x64xf32>, %u: tensor<128x64xf32>, %d: tensor<64x128xf32>, %pk: tensor<1x3x32xf32>, %pv: tensor<1x3x32xf32>) -> (tensor<1x5x64xf32>, tensor<1x8x32xf32>) {
  // CHECK: hir.qwen3_decoder_layer {{.*}} post_norm(%{{.*}}) qk_norm(%{{.*}}, %{{.*}}) mlp
  %0 = hir.qwen3_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%n) qk_norm(%qn, %kn) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, rms_epsilon = 1.0e-6 : f32} : (tensor<1x5x64xf32>, tensor<5xi64>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x5x64xf32>
  // CHECK: hir.qwen3_cached_decoder_layer {{.*}} past
  %1, %k, %v = hir.qwen3_cached_decoder_layer %0, %pos past(%pk, %pv) attn(%n, %wq, %wk, %wv, %wo) post_norm(%n) qk_norm(%qn, %kn) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x5x64xf32>, tensor<5xi64>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> (tensor<1x5x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>)
  return %1, %k : tensor<1x5x64xf32>, tensor<1x8x32xf32>
}

// CHECK-LABEL: func.func @gemma_layers
func.func @gemma_layers(%x: tensor<1x?x64xf32>, %pos: tensor<1x?xi32>, %n: tensor<64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>, %wv: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %g: tensor<128x64xf32>, %u: tensor<128x64xf32>, %d: tensor<64x128xf32>, %pk: tensor<1x?x32xf32>, %pv: tensor<1x?x32xf32>) -> tensor<1x?x64xf32> {
  // CHECK: hir.gemma_decoder_layer {{.*}} norms(%{{.*}}, %{{.*}}, %{{.*}}) mlp{{.*}}attn_softcap = 5.000000e+01 : f32
  %0 = hir.gemma_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) norms(%n, %n, %n) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, attn_softcap = 50.0 : f32, window = 8 : i64} : (tensor<1x?x64xf32>, tensor<1x?xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x?x64xf32>
  // CHECK: hir.gemma_cached_decoder_layer
  %1, %k, %v = hir.gemma_cached_decoder_layer %0, %pos past(%pk, %pv) attn(%n, %wq, %wk, %wv, %wo) norms(%n, %n, %n) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x?x64xf32>, tensor<1x?xi32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>)
  return %1 : tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @bert_layer
func.func @bert_layer(%x: tensor<2x?x64xf32>, %m: tensor<2x?xi32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>, %wi: tensor<128x64xf32>, %bi: tensor<128xf32>, %wo: tensor<64x128xf32>) -> tensor<2x?x64xf32> {
  // CHECK: hir.bert_encoder_layer %{{.*}} mask(%{{.*}}) attn({{.*}}) ln1({{.*}}) ffn({{.*}}) ln2({{.*}})
  %0 = hir.bert_encoder_layer %x mask(%m) attn(%w, %b, %w, %b, %w, %b, %w, %b) ln1(%b, %b) ffn(%wi, %bi, %wo, %b) ln2(%b, %b) {num_heads = 4 : i64, head_dim = 16 : i64} : (tensor<2x?x64xf32>, tensor<2x?xi32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x?x64xf32>
  // CHECK: hir.bert_encoder_layer %{{.*}} attn(
  %1 = hir.bert_encoder_layer %0 attn(%w, %b, %w, %b, %w, %b, %w, %b) ln1(%b, %b) ffn(%wi, %bi, %wo, %b) ln2(%b, %b) {num_heads = 4 : i64, head_dim = 16 : i64} : (tensor<2x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x?x64xf32>
  return %1 : tensor<2x?x64xf32>
}

// CHECK-LABEL: func.func @heads_and_pooling
func.func @heads_and_pooling(%h: tensor<2x?x64xf32>, %w: tensor<100x64xf32>, %m: tensor<2x?xi32>) -> (tensor<2x1x100xf32>, tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x64xf32>) {
  // CHECK: hir.gather_last_token
  %last = hir.gather_last_token %h : (tensor<2x?x64xf32>) -> tensor<2x1x64xf32>
  // CHECK: hir.lm_head %{{.*}}, %{{.*}} {tied}
  %logits = hir.lm_head %last, %w {tied} : (tensor<2x1x64xf32>, tensor<100x64xf32>) -> tensor<2x1x100xf32>
  // CHECK: hir.logit_softcap
  %capped = hir.logit_softcap %logits {cap = 30.0 : f32} : (tensor<2x1x100xf32>) -> tensor<2x1x100xf32>
  // CHECK: hir.cls_pool
  %cls = hir.cls_pool %h : (tensor<2x?x64xf32>) -> tensor<2x64xf32>
  // CHECK: hir.mean_pool %{{.*}} mask(%{{.*}})
  %mean = hir.mean_pool %h mask(%m) : (tensor<2x?x64xf32>, tensor<2x?xi32>) -> tensor<2x64xf32>
  // CHECK: hir.mean_pool %{{.*}} :
  %mean2 = hir.mean_pool %h : (tensor<2x?x64xf32>) -> tensor<2x64xf32>
  return %capped, %cls, %mean, %mean2 : tensor<2x1x100xf32>, tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x64xf32>
}

// CHECK-LABEL: func.func @custom_escape_hatch
func.func @custom_escape_hatch(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: hir.custom "scaled_tanh"(%{{.*}}) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: mir.matmul
  // CHECK: hir.yield
  %y = hir.custom "scaled_tanh"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %w = mir.param "w" : tensor<8x8xf32>
    %t = mir.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    hir.yield %t : tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}
