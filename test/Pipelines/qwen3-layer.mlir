// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct --mir-fusion-report 2>&1 | FileCheck %s
// RUN: rlx-opt %s --convert-hir-to-mir=policy=fusable --mir-fusion-report=record-baseline --mir-fuse-all --mir-fusion-report=assert-clean 2>&1 | FileCheck %s
// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct --mir-fuse-all --mir-fusion-report=assert-clean 2>&1 | FileCheck %s

/// Parity on a Qwen3 decoder layer: LLaMA plus per-head RMSNorm of q and k
/// (QK-norm), which the attention block takes as q_norm/k_norm.

// CHECK: remark: fusion report (cpu): 0 missed; fused ops {{.*}}after: {mir.attention_block = 1, mir.fused_glu = 1, mir.fused_matmul = 1, mir.fused_residual_rms_norm = 1}
// CHECK-LABEL: func.func @qwen3_decoder_layer
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: mir.rms_norm
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[ATTN:.*]] = mir.attention_block %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}}) q_norm(%{{.*}}) k_norm(%{{.*}}) {head_dim = 16 : i64, mask_kind = #mir<mask causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, rotary_dim = 16 : i64, scale = 2.500000e-01 : f32}
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: mir.fused_residual_rms_norm %[[ATTN]]
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: mir.matmul
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: mir.fused_glu
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: mir.fused_matmul
// CHECK-NOT: mir.{{(add|sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: return

func.func @qwen3_decoder_layer(%x: tensor<1x8x64xf32>, %pos: tensor<8xi64>) -> tensor<1x8x64xf32> {
  %n = hir.param "l0.input_norm" : tensor<64xf32>
  %wq = hir.param "l0.q" : tensor<64x64xf32>
  %wk = hir.param "l0.k" : tensor<32x64xf32>
  %wv = hir.param "l0.v" : tensor<32x64xf32>
  %wo = hir.param "l0.o" : tensor<64x64xf32>
  %pn = hir.param "l0.post_norm" : tensor<64xf32>
  %qn = hir.param "l0.q_norm" : tensor<16xf32>
  %kn = hir.param "l0.k_norm" : tensor<16xf32>
  %g = hir.param "l0.gate" : tensor<128x64xf32>
  %u = hir.param "l0.up" : tensor<128x64xf32>
  %d = hir.param "l0.down" : tensor<64x128xf32>
  %0 = hir.qwen3_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%pn) qk_norm(%qn, %kn) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, rms_epsilon = 1.0e-6 : f32} : (tensor<1x8x64xf32>, tensor<8xi64>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x8x64xf32>
  return %0 : tensor<1x8x64xf32>
}
