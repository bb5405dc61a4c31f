// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct --mir-fusion-report 2>&1 | FileCheck %s
// RUN: rlx-opt %s --convert-hir-to-mir=policy=fusable --mir-fusion-report=record-baseline --mir-fuse-all --mir-fusion-report=assert-clean 2>&1 | FileCheck %s
// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct --mir-fuse-all --mir-fusion-report=assert-clean 2>&1 | FileCheck %s

/// Parity on a Gemma 2 decoder layer: sliding-window attention with a
/// softcap, GeGLU, and the extra post-attention / post-FFN norms (which stay
/// plain mir.rms_norm, as does the final residual add, in both policies).

// CHECK: remark: fusion report (cpu): 0 missed; fused ops {{.*}}after: {mir.attention_block = 1, mir.fused_glu = 1, mir.fused_residual_rms_norm = 1}
// CHECK-LABEL: func.func @gemma_decoder_layer
// CHECK-NOT: mir.{{(sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: mir.rms_norm %{{.*}}, %{{.*}} {unit_offset}
// CHECK-NOT: mir.{{(sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[ATTN:.*]] = mir.attention_block {{.*}}mask_kind = #mir<mask sliding_window>, {{.*}}scale = 2.500000e-01 : f32, softcap = 5.000000e+01 : f32, window = 4 : i64}
// CHECK-NOT: mir.{{(sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[PA:.*]] = mir.rms_norm %[[ATTN]], %{{.*}} {unit_offset}
// CHECK-NOT: mir.{{(sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[SUM:.*]], %{{.*}} = mir.fused_residual_rms_norm %[[PA]], %{{.*}}, %{{.*}} {unit_offset}
// CHECK-NOT: mir.{{(sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: mir.matmul
// CHECK-NOT: mir.{{(sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: mir.fused_glu %{{.*}} {activation = #mir<activation gelu_tanh>}
// CHECK-NOT: mir.{{(sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: mir.matmul
// CHECK-NOT: mir.{{(sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[PF:.*]] = mir.rms_norm %{{.*}}, %{{.*}} {unit_offset}
// CHECK-NOT: mir.{{(sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: %[[Y:.*]] = mir.add %[[SUM]], %[[PF]]
// CHECK-NOT: mir.{{(sub|mul|div|silu|gelu|tanh|softmax|batch_matmul|slice|rope|reshape|transpose|select|layer_norm)}} 
// CHECK: return %[[Y]]

func.func @gemma_decoder_layer(%x: tensor<1x8x64xf32>, %pos: tensor<8xi64>) -> tensor<1x8x64xf32> {
  %n = hir.param "l0.input_norm" : tensor<64xf32>
  %wq = hir.param "l0.q" : tensor<64x64xf32>
  %wk = hir.param "l0.k" : tensor<32x64xf32>
  %wv = hir.param "l0.v" : tensor<32x64xf32>
  %wo = hir.param "l0.o" : tensor<64x64xf32>
  %n1 = hir.param "l0.post_attn_norm" : tensor<64xf32>
  %n2 = hir.param "l0.pre_ffn_norm" : tensor<64xf32>
  %n3 = hir.param "l0.post_ffn_norm" : tensor<64xf32>
  %g = hir.param "l0.gate" : tensor<128x64xf32>
  %u = hir.param "l0.up" : tensor<128x64xf32>
  %d = hir.param "l0.down" : tensor<64x128xf32>
  %0 = hir.gemma_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) norms(%n1, %n2, %n3) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, attn_softcap = 50.0 : f32, window = 4 : i64} : (tensor<1x8x64xf32>, tensor<8xi64>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x8x64xf32>
  return %0 : tensor<1x8x64xf32>
}
