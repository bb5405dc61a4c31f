// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct --mir-fusion-report 2>&1 | FileCheck %s
// RUN: rlx-opt %s --convert-hir-to-mir=policy=fusable --mir-fusion-report=record-baseline --mir-fuse-all --mir-fusion-report=assert-clean 2>&1 | FileCheck %s
// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct --mir-fuse-all --mir-fusion-report=assert-clean 2>&1 | FileCheck %s

/// Parity of the two lowering policies on a LLaMA decoder layer (B=1, T=8,
/// hidden 64, 4 heads and 2 KV heads of 16, intermediate 128): `direct`
/// emits the fused ops; `fusable` emits primitives that mir-fuse-all must
/// fuse into the same ops, with no miss; fusing the direct form changes
/// nothing. The same CHECK lines run on the three outputs.

// CHECK: remark: fusion report (cpu): 0 missed; fused ops {{.*}}after: {mir.attention_block = 1, mir.fused_glu = 1, mir.fused_matmul = 1, mir.fused_residual_rms_norm = 1}
// CHECK-LABEL: func.func @llama_decoder_layer
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x64xf32>, %[[POS:.*]]: tensor<8xi64>)
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[N:.*]] = mir.rms_norm %[[X]]
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[WQKV:.*]] = mir.param "l0.q+l0.k+l0.v" {concat_axis = 0 : i64, {{.*}}sources = ["l0.q", "l0.k", "l0.v"]} : tensor<128x64xf32>
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[ATTN:.*]] = mir.attention_block %[[N]], %[[WQKV]], %{{.*}} positions(%[[POS]]) {head_dim = 16 : i64, mask_kind = #mir<mask causal>, {{.*}}num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 5.000000e+05 : f32, rotary_dim = 16 : i64, scale = 2.500000e-01 : f32}
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[SUM:.*]], %[[N2:.*]] = mir.fused_residual_rms_norm %[[ATTN]], %[[X]], %{{.*}}
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[WGU:.*]] = mir.param "l0.gate+l0.up" {concat_axis = 0 : i64, {{.*}}sources = ["l0.gate", "l0.up"]} : tensor<256x64xf32>
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[GU:.*]] = mir.matmul %[[N2]], %[[WGU]] {transpose_rhs}
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[G:.*]] = mir.fused_glu %[[GU]] : (tensor<1x8x256xf32>) -> tensor<1x8x128xf32>
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[Y:.*]] = mir.fused_matmul %[[G]], %{{.*}} residual(%[[SUM]]) {transpose_rhs}
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: return %[[Y]]

func.func @llama_decoder_layer(%x: tensor<1x8x64xf32>, %pos: tensor<8xi64>) -> tensor<1x8x64xf32> {
  %n = hir.param "l0.input_norm" : tensor<64xf32>
  %wq = hir.param "l0.q" : tensor<64x64xf32>
  %wk = hir.param "l0.k" : tensor<32x64xf32>
  %wv = hir.param "l0.v" : tensor<32x64xf32>
  %wo = hir.param "l0.o" : tensor<64x64xf32>
  %pn = hir.param "l0.post_norm" : tensor<64xf32>
  %g = hir.param "l0.gate" : tensor<128x64xf32>
  %u = hir.param "l0.up" : tensor<128x64xf32>
  %d = hir.param "l0.down" : tensor<64x128xf32>
  %0 = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%pn) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, rope_theta = 500000.0 : f32} : (tensor<1x8x64xf32>, tensor<8xi64>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x8x64xf32>
  return %0 : tensor<1x8x64xf32>
}
