// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct --mir-fusion-report 2>&1 | FileCheck %s
// RUN: rlx-opt %s --convert-hir-to-mir=policy=fusable --mir-fusion-report=record-baseline --mir-fuse-all --mir-fusion-report=assert-clean 2>&1 | FileCheck %s
// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct --mir-fuse-all --mir-fusion-report=assert-clean 2>&1 | FileCheck %s

/// Parity on a LLaMA decode step (one new token, 7 cached): K and V come from
/// the cache, so both policies keep the QKV matmul, its slices, RoPE and the
/// cache concatenations around one mir.attention (no attention block).

// CHECK: remark: fusion report (cpu): 0 missed; fused ops {{.*}}after: {mir.attention = 1, mir.fused_glu = 1, mir.fused_matmul = 1, mir.fused_residual_rms_norm = 1}
// CHECK-LABEL: func.func @llama_cached_decoder_layer
// CHECK: mir.rms_norm
// CHECK: %[[QKV:.*]] = mir.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<1x1x64xf32>, tensor<128x64xf32>) -> tensor<1x1x128xf32>
// CHECK-COUNT-3: mir.slice %[[QKV]]
// CHECK-COUNT-2: mir.rope
// CHECK-COUNT-2: mir.concat
// CHECK: %[[ATTN:.*]] = mir.attention {{.*}}mask_kind = #mir<mask causal>
// CHECK: %[[O:.*]] = mir.matmul %[[ATTN]]
// CHECK: mir.fused_residual_rms_norm %[[O]]
// CHECK: mir.matmul
// CHECK: mir.fused_glu
// CHECK: mir.fused_matmul
// CHECK: return

func.func @llama_cached_decoder_layer(%x: tensor<1x1x64xf32>, %pos: tensor<1xi64>, %pk: tensor<1x7x32xf32>, %pv: tensor<1x7x32xf32>) -> (tensor<1x1x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) {
  %n = hir.param "l0.input_norm" : tensor<64xf32>
  %wq = hir.param "l0.q" : tensor<64x64xf32>
  %wk = hir.param "l0.k" : tensor<32x64xf32>
  %wv = hir.param "l0.v" : tensor<32x64xf32>
  %wo = hir.param "l0.o" : tensor<64x64xf32>
  %pn = hir.param "l0.post_norm" : tensor<64xf32>
  %g = hir.param "l0.gate" : tensor<128x64xf32>
  %u = hir.param "l0.up" : tensor<128x64xf32>
  %d = hir.param "l0.down" : tensor<64x128xf32>
  %0, %k, %v = hir.llama_cached_decoder_layer %x, %pos past(%pk, %pv) attn(%n, %wq, %wk, %wv, %wo) post_norm(%pn) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x1x64xf32>, tensor<1xi64>, tensor<1x7x32xf32>, tensor<1x7x32xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> (tensor<1x1x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>)
  return %0, %k, %v : tensor<1x1x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>
}
