// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct --mir-fusion-report 2>&1 | FileCheck %s
// RUN: rlx-opt %s --convert-hir-to-mir=policy=fusable --mir-fusion-report=record-baseline --mir-fuse-all --mir-fusion-report=assert-clean 2>&1 | FileCheck %s
// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct --mir-fuse-all --mir-fusion-report=assert-clean 2>&1 | FileCheck %s

/// Parity of the two lowering policies on a BERT encoder layer (B=1, T=8,
/// hidden 64, 4 heads of 16, intermediate 128, padding mask): the same fused
/// ops with and without fusion, no miss.

// CHECK: remark: fusion report (cpu): 0 missed; fused ops {{.*}}after: {mir.attention_block = 1, mir.fused_matmul = 2, mir.fused_residual_layer_norm = 2}
// CHECK-LABEL: func.func @bert_encoder_layer
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x64xf32>, %[[M:.*]]: tensor<1x8xi32>)
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[WQKV:.*]] = mir.param "l0.q.w+l0.k.w+l0.v.w" {{{.*}}} : tensor<192x64xf32>
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[BQKV:.*]] = mir.param "l0.q.b+l0.k.b+l0.v.b" {{{.*}}} : tensor<192xf32>
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[ATTN:.*]] = mir.attention_block %[[X]], %[[WQKV]], %{{.*}} qkv_bias(%[[BQKV]]) out_bias(%{{.*}}) mask(%[[M]]) {head_dim = 16 : i64, mask_kind = #mir<mask padding>, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 2.500000e-01 : f32}
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %{{.*}}, %[[A:.*]] = mir.fused_residual_layer_norm %[[ATTN]], %[[X]], %{{.*}}, %{{.*}} {epsilon = 9.99999996E-13 : f32}
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[H:.*]] = mir.fused_matmul %[[A]], %{{.*}} bias(%{{.*}}) {activation = #mir<activation gelu>, transpose_rhs}
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[O:.*]] = mir.fused_matmul %[[H]], %{{.*}} bias(%{{.*}}) {transpose_rhs}
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %{{.*}}, %[[Y:.*]] = mir.fused_residual_layer_norm %[[O]], %[[A]], %{{.*}}, %{{.*}}
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: return %[[Y]]

func.func @bert_encoder_layer(%x: tensor<1x8x64xf32>, %m: tensor<1x8xi32>) -> tensor<1x8x64xf32> {
  %wq = hir.param "l0.q.w" : tensor<64x64xf32>
  %bq = hir.param "l0.q.b" : tensor<64xf32>
  %wk = hir.param "l0.k.w" : tensor<64x64xf32>
  %bk = hir.param "l0.k.b" : tensor<64xf32>
  %wv = hir.param "l0.v.w" : tensor<64x64xf32>
  %bv = hir.param "l0.v.b" : tensor<64xf32>
  %wo = hir.param "l0.o.w" : tensor<64x64xf32>
  %bo = hir.param "l0.o.b" : tensor<64xf32>
  %g1 = hir.param "l0.ln1.g" : tensor<64xf32>
  %b1 = hir.param "l0.ln1.b" : tensor<64xf32>
  %wi = hir.param "l0.in.w" : tensor<128x64xf32>
  %bi = hir.param "l0.in.b" : tensor<128xf32>
  %wo2 = hir.param "l0.out.w" : tensor<64x128xf32>
  %bo2 = hir.param "l0.out.b" : tensor<64xf32>
  %g2 = hir.param "l0.ln2.g" : tensor<64xf32>
  %b2 = hir.param "l0.ln2.b" : tensor<64xf32>
  %0 = hir.bert_encoder_layer %x mask(%m) attn(%wq, %bq, %wk, %bk, %wv, %bv, %wo, %bo) ln1(%g1, %b1) ffn(%wi, %bi, %wo2, %bo2) ln2(%g2, %b2) {num_heads = 4 : i64, head_dim = 16 : i64} : (tensor<1x8x64xf32>, tensor<1x8xi32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
  return %0 : tensor<1x8x64xf32>
}
