// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct | FileCheck %s --check-prefixes=CHECK,DIRECT
// RUN: rlx-opt %s --convert-hir-to-mir=policy=fusable | FileCheck %s --check-prefixes=CHECK,FUSABLE

/// Every HIR op lowers under both policies: `direct` emits the fused MIR ops,
/// `fusable` only primitives (no fused op survives).

// CHECK-LABEL: func.func @embed_and_heads
func.func @embed_and_heads(%ids: tensor<2x7xi32>, %m: tensor<2x7xi32>) -> (tensor<2x1x100xf32>, tensor<2x64xf32>, tensor<2x64xf32>) {
  %t = hir.param "embed" : tensor<100x64xf32>
  // CHECK: %[[T:.*]] = mir.param "embed" : tensor<100x64xf32>
  // CHECK: %[[H:.*]] = mir.gather %[[T]], %{{.*}} :
  %h = hir.embed %ids, %t : (tensor<2x7xi32>, tensor<100x64xf32>) -> tensor<2x7x64xf32>
  // CHECK: mir.slice %[[H]] {axis = 1 : i64, size = 1 : i64, start = -1 : i64}
  %last = hir.gather_last_token %h : (tensor<2x7x64xf32>) -> tensor<2x1x64xf32>
  // CHECK: mir.matmul %{{.*}}, %[[T]] {transpose_rhs}
  %logits = hir.lm_head %last, %t {tied} : (tensor<2x1x64xf32>, tensor<100x64xf32>) -> tensor<2x1x100xf32>
  // CHECK: mir.div
  // CHECK-NEXT: mir.tanh
  // CHECK-NEXT: mir.mul
  %capped = hir.logit_softcap %logits {cap = 30.0 : f32} : (tensor<2x1x100xf32>) -> tensor<2x1x100xf32>
  // CHECK: %[[FIRST:.*]] = mir.slice %[[H]] {axis = 1 : i64, size = 1 : i64, start = 0 : i64}
  // CHECK: mir.reshape %[[FIRST]] : (tensor<2x1x64xf32>) -> tensor<2x64xf32>
  %cls = hir.cls_pool %h : (tensor<2x7x64xf32>) -> tensor<2x64xf32>
  // CHECK: mir.cast %{{.*}} : (tensor<2x7xi32>) -> tensor<2x7xf32>
  // CHECK: mir.reduce_sum
  // CHECK: mir.max
  // CHECK: mir.div
  %mean = hir.mean_pool %h mask(%m) : (tensor<2x7x64xf32>, tensor<2x7xi32>) -> tensor<2x64xf32>
  return %capped, %cls, %mean : tensor<2x1x100xf32>, tensor<2x64xf32>, tensor<2x64xf32>
}

// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<2x7x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>) -> tensor<2x7x128xf32> {
  // DIRECT: mir.fused_matmul %{{.*}}, %{{.*}} bias(%{{.*}}) {activation = #mir<activation gelu>, transpose_rhs}
  // FUSABLE: %[[M:.*]] = mir.matmul %{{.*}}, %{{.*}} {transpose_rhs}
  // FUSABLE: %[[A:.*]] = mir.add %[[M]], %{{.*}}
  // FUSABLE: mir.gelu %[[A]]
  %y = hir.linear %x, %w bias(%b) {activation = #hir<activation gelu>} : (tensor<2x7x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<2x7x128xf32>
  return %y : tensor<2x7x128xf32>
}

// An activation without an op of its own is a mir.activation when unfused.
// CHECK-LABEL: func.func @linear_mish
func.func @linear_mish(%x: tensor<2x7x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>) -> tensor<2x7x128xf32> {
  // DIRECT: mir.fused_matmul %{{.*}}, %{{.*}} bias(%{{.*}}) {activation = #mir<activation mish>, transpose_rhs}
  // FUSABLE: %[[M:.*]] = mir.matmul %{{.*}}, %{{.*}} {transpose_rhs}
  // FUSABLE: %[[A:.*]] = mir.add %[[M]], %{{.*}}
  // FUSABLE: mir.activation %[[A]] {activation = #mir<activation mish>}
  %y = hir.linear %x, %w bias(%b) {activation = #hir<activation mish>} : (tensor<2x7x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<2x7x128xf32>
  return %y : tensor<2x7x128xf32>
}

// CHECK-LABEL: func.func @swiglu
func.func @swiglu(%x: tensor<1x7x64xf32>) -> tensor<1x7x64xf32> {
  %g = hir.param "gate" : tensor<128x64xf32>
  %u = hir.param "up" : tensor<128x64xf32>
  %d = hir.param "down" : tensor<64x128xf32>
  // DIRECT: %[[GU:.*]] = mir.param "gate+up" {concat_axis = 0 : i64, source_sizes = array<i64: 128, 128>, sources = ["gate", "up"]} : tensor<256x64xf32>
  // DIRECT: %[[MM:.*]] = mir.matmul %{{.*}}, %[[GU]] {transpose_rhs}
  // DIRECT: mir.fused_glu %[[MM]] :
  // FUSABLE: mir.matmul
  // FUSABLE: mir.silu
  // FUSABLE: mir.matmul
  // FUSABLE: mir.mul
  // FUSABLE: mir.matmul
  %y = hir.swiglu %x, %g, %u, %d : (tensor<1x7x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x7x64xf32>
  return %y : tensor<1x7x64xf32>
}

// CHECK-LABEL: func.func @attention_causal
func.func @attention_causal(%q: tensor<1x7x64xf32>, %k: tensor<1x7x32xf32>, %v: tensor<1x7x32xf32>) -> tensor<1x7x64xf32> {
  // DIRECT: mir.attention %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 16 : i64, mask_kind = #mir<mask causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32}
  // FUSABLE: mir.broadcast {{.*}} -> tensor<1x2x2x7x16xf32>
  // FUSABLE: mir.batch_matmul {{.*}} {transpose_rhs}
  // FUSABLE: mir.iota
  // FUSABLE: mir.compare {{.*}} {predicate = #mir<cmp le>}
  // FUSABLE: mir.select
  // FUSABLE: mir.softmax
  // FUSABLE: mir.batch_matmul
  // FUSABLE-NOT: mir.attention
  %o = hir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x7x64xf32>, tensor<1x7x32xf32>, tensor<1x7x32xf32>) -> tensor<1x7x64xf32>
  return %o : tensor<1x7x64xf32>
}

// CHECK-LABEL: func.func @llama_layer
func.func @llama_layer(%x: tensor<1x7x64xf32>, %pos: tensor<7xi32>) -> tensor<1x7x64xf32> {
  %n = hir.param "n" : tensor<64xf32>
  %wq = hir.param "q" : tensor<64x64xf32>
  %wk = hir.param "k" : tensor<32x64xf32>
  %wv = hir.param "v" : tensor<32x64xf32>
  %wo = hir.param "o" : tensor<64x64xf32>
  %n2 = hir.param "n2" : tensor<64xf32>
  %g = hir.param "g" : tensor<128x64xf32>
  %u = hir.param "u" : tensor<128x64xf32>
  %d = hir.param "d" : tensor<64x128xf32>
  // DIRECT: mir.param "q+k+v" {concat_axis = 0 : i64, source_sizes = array<i64: 64, 32, 32>
  // DIRECT: mir.attention_block {{.*}} positions(%{{.*}}) {{{.*}}mask_kind = #mir<mask causal>
  // DIRECT: mir.fused_residual_rms_norm
  // DIRECT: mir.fused_glu
  // DIRECT: mir.fused_matmul {{.*}} residual(%{{.*}})
  // FUSABLE: mir.rms_norm
  // FUSABLE: mir.rope
  // FUSABLE: mir.rope
  // FUSABLE: mir.softmax
  // FUSABLE: mir.add
  // FUSABLE: mir.rms_norm
  // FUSABLE-NOT: mir.fused
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%n2) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x7x64xf32>, tensor<7xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x7x64xf32>
  return %y : tensor<1x7x64xf32>
}

// CHECK-LABEL: func.func @llama_cached_decoder_layer
func.func @llama_cached_decoder_layer(%x: tensor<1x1x64xf32>, %pos: tensor<1xi32>, %pk: tensor<1x6x32xf32>, %pv: tensor<1x6x32xf32>) -> (tensor<1x1x64xf32>, tensor<1x7x32xf32>) {
  %n = hir.param "n" : tensor<64xf32>
  %wq = hir.param "q" : tensor<64x64xf32>
  %wk = hir.param "k" : tensor<32x64xf32>
  %wv = hir.param "v" : tensor<32x64xf32>
  %wo = hir.param "o" : tensor<64x64xf32>
  %n2 = hir.param "n2" : tensor<64xf32>
  %g = hir.param "g" : tensor<128x64xf32>
  %u = hir.param "u" : tensor<128x64xf32>
  %d = hir.param "d" : tensor<64x128xf32>
  // CHECK: %[[K:.*]] = mir.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<1x6x32xf32>, tensor<1x1x32xf32>) -> tensor<1x7x32xf32>
  // DIRECT: mir.attention %{{.*}}, %[[K]], %{{.*}} {{{.*}}mask_kind = #mir<mask causal>
  // CHECK: return %{{.*}}, %[[K]]
  %y, %k, %v = hir.llama_cached_decoder_layer %x, %pos past(%pk, %pv) attn(%n, %wq, %wk, %wv, %wo) post_norm(%n2) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x1x64xf32>, tensor<1xi32>, tensor<1x6x32xf32>, tensor<1x6x32xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> (tensor<1x1x64xf32>, tensor<1x7x32xf32>, tensor<1x7x32xf32>)
  return %y, %k : tensor<1x1x64xf32>, tensor<1x7x32xf32>
}

// CHECK-LABEL: func.func @llama_layer_biases
func.func @llama_layer_biases(%x: tensor<1x5x64xf32>, %pos: tensor<5xi32>) -> tensor<1x5x64xf32> {
  %n = hir.param "n" : tensor<64xf32>
  %wq = hir.param "q" : tensor<64x64xf32>
  %wk = hir.param "k" : tensor<32x64xf32>
  %wv = hir.param "v" : tensor<32x64xf32>
  %wo = hir.param "o" : tensor<64x64xf32>
  %bq = hir.param "bq" : tensor<64xf32>
  %bk = hir.param "bk" : tensor<32xf32>
  %bv = hir.param "bv" : tensor<32xf32>
  %bo = hir.param "bo" : tensor<64xf32>
  %g = hir.param "g" : tensor<128x64xf32>
  %u = hir.param "u" : tensor<128x64xf32>
  %d = hir.param "d" : tensor<64x128xf32>
  %bg = hir.param "bg" : tensor<128xf32>
  %bu = hir.param "bu" : tensor<128xf32>
  %bd = hir.param "bd" : tensor<64xf32>
  // DIRECT: %[[BQKV:.*]] = mir.param "bq+bk+bv" {{.*}} : tensor<128xf32>
  // DIRECT: mir.attention_block {{.*}} qkv_bias(%[[BQKV]]) out_bias(%{{.*}})
  // DIRECT: %[[BGU:.*]] = mir.param "bg+bu" {{.*}} : tensor<256xf32>
  // DIRECT: mir.fused_matmul %{{.*}}, %{{.*}} bias(%[[BGU]])
  // DIRECT: mir.fused_glu {{.*}} {activation = #mir<activation relu>}
  // DIRECT: mir.fused_matmul {{.*}} bias(%{{.*}}) residual(%{{.*}})
  // FUSABLE: mir.relu
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) qkv_bias(%bq, %bk, %bv) o_bias(%bo) post_norm(%n) mlp(%g, %u, %d) mlp_bias(%bg, %bu, %bd) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, mlp_activation = #hir<activation relu>} : (tensor<1x5x64xf32>, tensor<5xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<64xf32>) -> tensor<1x5x64xf32>
  return %y : tensor<1x5x64xf32>
}

// CHECK-LABEL: func.func @gemma3_qk_norm
func.func @gemma3_qk_norm(%x: tensor<1x5x64xf32>, %pos: tensor<5xi32>) -> tensor<1x5x64xf32> {
  %n = hir.param "n" : tensor<64xf32>
  %hn = hir.param "hn" : tensor<16xf32>
  %wq = hir.param "q" : tensor<64x64xf32>
  %wk = hir.param "k" : tensor<32x64xf32>
  %wo = hir.param "o" : tensor<64x64xf32>
  %g = hir.param "g" : tensor<128x64xf32>
  %d = hir.param "d" : tensor<64x128xf32>
  // DIRECT: mir.attention_block {{.*}} q_norm(%{{.*}}) k_norm(%{{.*}}) {{{.*}}norm_unit_offset
  // FUSABLE: mir.rms_norm {{.*}} {{{.*}}unit_offset{{.*}}} : (tensor<1x5x4x16xf32>, tensor<16xf32>)
  %y = hir.gemma_decoder_layer %x, %pos attn(%n, %wq, %wk, %wk, %wo) norms(%n, %n, %n) qk_norm(%hn, %hn) mlp(%g, %g, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x5x64xf32>, tensor<5xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x5x64xf32>
  return %y : tensor<1x5x64xf32>
}

// CHECK-LABEL: func.func @gemma_and_qwen3
func.func @gemma_and_qwen3(%x: tensor<1x5x64xf32>, %pos: tensor<5xi32>) -> (tensor<1x5x64xf32>, tensor<1x5x64xf32>) {
  %n = hir.param "n" : tensor<64xf32>
  %hn = hir.param "hn" : tensor<16xf32>
  %wq = hir.param "q" : tensor<64x64xf32>
  %wk = hir.param "k" : tensor<32x64xf32>
  %wv = hir.param "v" : tensor<32x64xf32>
  %wo = hir.param "o" : tensor<64x64xf32>
  %g = hir.param "g" : tensor<128x64xf32>
  %u = hir.param "u" : tensor<128x64xf32>
  %d = hir.param "d" : tensor<64x128xf32>
  // DIRECT: mir.rms_norm {{.*}} {unit_offset}
  // DIRECT: mir.attention_block {{.*}}mask_kind = #mir<mask sliding_window>{{.*}}softcap = 5.000000e+01 : f32{{.*}}window = 4 : i64
  // DIRECT: mir.fused_glu {{.*}} {activation = #mir<activation gelu_tanh>}
  // FUSABLE: mir.gelu {{.*}} {tanh_approx}
  %y = hir.gemma_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) norms(%n, %n, %n) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, attn_softcap = 50.0 : f32, window = 4 : i64} : (tensor<1x5x64xf32>, tensor<5xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x5x64xf32>
  // DIRECT: mir.attention_block {{.*}} q_norm(%{{.*}}) k_norm(%{{.*}})
  // FUSABLE: mir.reshape {{.*}} -> tensor<1x5x4x16xf32>
  // FUSABLE: mir.rms_norm {{.*}} : (tensor<1x5x4x16xf32>, tensor<16xf32>)
  %z = hir.qwen3_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%n) qk_norm(%hn, %hn) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x5x64xf32>, tensor<5xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x5x64xf32>
  return %y, %z : tensor<1x5x64xf32>, tensor<1x5x64xf32>
}

// CHECK-LABEL: func.func @bert_layer
func.func @bert_layer(%x: tensor<2x5x64xf32>, %m: tensor<2x5xi32>) -> tensor<2x5x64xf32> {
  %w = hir.param "w" : tensor<64x64xf32>
  %b = hir.param "b" : tensor<64xf32>
  %wi = hir.param "wi" : tensor<128x64xf32>
  %bi = hir.param "bi" : tensor<128xf32>
  %w2 = hir.param "w2" : tensor<64x128xf32>
  // DIRECT: mir.attention_block {{.*}} qkv_bias(%{{.*}}) out_bias(%{{.*}}) mask(%{{.*}}) {{{.*}}mask_kind = #mir<mask padding>
  // DIRECT: mir.fused_residual_layer_norm
  // DIRECT: mir.fused_matmul {{.*}} {activation = #mir<activation gelu>, transpose_rhs}
  // DIRECT: mir.fused_residual_layer_norm
  // FUSABLE: mir.compare {{.*}} {predicate = #mir<cmp ne>}
  // FUSABLE: mir.layer_norm
  // FUSABLE: mir.gelu
  // FUSABLE: mir.layer_norm
  %y = hir.bert_encoder_layer %x mask(%m) attn(%w, %b, %w, %b, %w, %b, %w, %b) ln1(%b, %b) ffn(%wi, %bi, %w2, %b) ln2(%b, %b) {num_heads = 4 : i64, head_dim = 16 : i64} : (tensor<2x5x64xf32>, tensor<2x5xi32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x5x64xf32>
  return %y : tensor<2x5x64xf32>
}

// CHECK-LABEL: func.func @custom_inlined
func.func @custom_inlined(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NOT: hir.custom
  // CHECK: %[[T:.*]] = mir.tanh %{{.*}}
  // CHECK: return %[[T]]
  %y = hir.custom "t"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %t = mir.tanh %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
    hir.yield %t : tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}

/// A weight with a storage type lowers to the stored mir.param, widened by
/// mir.dequantize where the blocks read it (mir-fuse-dequantize then lets
/// the matmul read the blocks).
// CHECK-LABEL: func.func @stored_weight
// CHECK: %[[Q:.*]] = mir.param "w" : tensor<32x256x!mir.quant<q4_K>>
// CHECK: %[[F:.*]] = mir.dequantize %[[Q]] : (tensor<32x256x!mir.quant<q4_K>>) -> tensor<32x256xf32>
// CHECK: mir.matmul %{{.*}}, %[[F]] {transpose_rhs}
func.func @stored_weight(%x: tensor<1x4x256xf32>) -> tensor<1x4x32xf32> {
  %w = hir.param "w" {storage = !mir.quant<q4_K>} : tensor<32x256xf32>
  %y = hir.linear %x, %w : (tensor<1x4x256xf32>, tensor<32x256xf32>) -> tensor<1x4x32xf32>
  return %y : tensor<1x4x32xf32>
}
