// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct | FileCheck %s --check-prefixes=CHECK,DIRECT
// RUN: rlx-opt %s --convert-hir-to-mir=policy=fusable | FileCheck %s --check-prefixes=CHECK,FUSABLE
// RUN: rlx-opt %s | rlx-opt | FileCheck %s --check-prefix=ROUND

// A mixture-of-experts decoder layer: the per-expert weights are stacked by
// hir.stack (one parameter joined at load time, viewed as [experts, ...]),
// the router's softmax picks each token's experts with mir.top_k, and the
// experts run as grouped matmuls over [B, T, k, H] rows, summed with the
// routing weights; the shared expert is a dense SwiGLU scaled by a sigmoid
// gate.

// ROUND-LABEL: func.func @moe_layer
// ROUND: hir.stack
// ROUND: hir.llama_decoder_layer {{.*}} moe(%{{.*}}) shared_expert(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}}experts_per_token = 2 : i64{{.*}}norm_topk_prob

// CHECK-LABEL: func.func @moe_layer
// CHECK: mir.param "e0.g+e1.g+e2.g+e3.g" {{.*}}sources = ["e0.g", "e1.g", "e2.g", "e3.g"]{{.*}} : tensor<192x64xf32>
// CHECK: mir.reshape {{.*}} -> tensor<4x48x64xf32>
// DIRECT: mir.fused_residual_rms_norm
// FUSABLE: mir.rms_norm
// CHECK: %[[LOGITS:.*]] = mir.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<1x5x64xf32>, tensor<4x64xf32>) -> tensor<1x5x4xf32>
// CHECK: %[[P:.*]] = mir.softmax %[[LOGITS]]
// CHECK: %[[W:.*]], %[[E:.*]] = mir.top_k %[[P]] {k = 2 : i64} : (tensor<1x5x4xf32>) -> (tensor<1x5x2xf32>, tensor<1x5x2xi64>)
// CHECK: mir.reduce_sum %[[W]] {axes = array<i64: 2>, keep_dims}
// CHECK: %[[ROWS:.*]] = mir.broadcast %{{.*}} : (tensor<1x5x1x64xf32>) -> tensor<1x5x2x64xf32>
// CHECK: %[[ORD:.*]], %[[OFF:.*]] = mir.sort_groups %[[E]] {num_groups = 4 : i64} : (tensor<1x5x2xi64>) -> (tensor<10xi64>, tensor<5xi64>)
// CHECK: mir.grouped_matmul %[[ROWS]], %{{.*}}, %[[E]] sorted(%[[ORD]], %[[OFF]]) : (tensor<1x5x2x64xf32>, tensor<4x48x64xf32>, tensor<1x5x2xi64>, tensor<10xi64>, tensor<5xi64>) -> tensor<1x5x2x48xf32>
// CHECK: mir.grouped_matmul %[[ROWS]], %{{.*}}, %[[E]] sorted(%[[ORD]], %[[OFF]])
// CHECK: mir.grouped_matmul %{{.*}}, %{{.*}}, %[[E]] sorted(%[[ORD]], %[[OFF]]) : (tensor<1x5x2x48xf32>, tensor<4x64x48xf32>, tensor<1x5x2xi64>, tensor<10xi64>, tensor<5xi64>) -> tensor<1x5x2x64xf32>
// CHECK: mir.reduce_sum %{{.*}} {axes = array<i64: 2>} : (tensor<1x5x2x64xf32>) -> tensor<1x5x64xf32>
// CHECK: mir.sigmoid
// CHECK-NOT: hir.
func.func @moe_layer(%x: tensor<1x5x64xf32>, %pos: tensor<5xi32>) -> tensor<1x5x64xf32> {
  %n = hir.param "n" : tensor<64xf32>
  %wq = hir.param "q" : tensor<64x64xf32>
  %wk = hir.param "k" : tensor<32x64xf32>
  %wv = hir.param "v" : tensor<32x64xf32>
  %wo = hir.param "o" : tensor<64x64xf32>
  %g0 = hir.param "e0.g" : tensor<48x64xf32>
  %g1 = hir.param "e1.g" : tensor<48x64xf32>
  %g2 = hir.param "e2.g" : tensor<48x64xf32>
  %g3 = hir.param "e3.g" : tensor<48x64xf32>
  %u0 = hir.param "e0.u" : tensor<48x64xf32>
  %u1 = hir.param "e1.u" : tensor<48x64xf32>
  %u2 = hir.param "e2.u" : tensor<48x64xf32>
  %u3 = hir.param "e3.u" : tensor<48x64xf32>
  %d0 = hir.param "e0.d" : tensor<64x48xf32>
  %d1 = hir.param "e1.d" : tensor<64x48xf32>
  %d2 = hir.param "e2.d" : tensor<64x48xf32>
  %d3 = hir.param "e3.d" : tensor<64x48xf32>
  %g = hir.stack %g0, %g1, %g2, %g3 : (tensor<48x64xf32>, tensor<48x64xf32>, tensor<48x64xf32>, tensor<48x64xf32>) -> tensor<4x48x64xf32>
  %u = hir.stack %u0, %u1, %u2, %u3 : (tensor<48x64xf32>, tensor<48x64xf32>, tensor<48x64xf32>, tensor<48x64xf32>) -> tensor<4x48x64xf32>
  %d = hir.stack %d0, %d1, %d2, %d3 : (tensor<64x48xf32>, tensor<64x48xf32>, tensor<64x48xf32>, tensor<64x48xf32>) -> tensor<4x64x48xf32>
  %r = hir.param "router" : tensor<4x64xf32>
  %sg = hir.param "s.g" : tensor<80x64xf32>
  %su = hir.param "s.u" : tensor<80x64xf32>
  %sd = hir.param "s.d" : tensor<64x80xf32>
  %sgate = hir.param "s.gate" : tensor<1x64xf32>
  %y = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%n) mlp(%g, %u, %d) moe(%r) shared_expert(%sg, %su, %sd, %sgate) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, experts_per_token = 2 : i64, norm_topk_prob} : (tensor<1x5x64xf32>, tensor<5xi32>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<4x48x64xf32>, tensor<4x48x64xf32>, tensor<4x64x48xf32>, tensor<4x64xf32>, tensor<80x64xf32>, tensor<80x64xf32>, tensor<64x80xf32>, tensor<1x64xf32>) -> tensor<1x5x64xf32>
  return %y : tensor<1x5x64xf32>
}

// The same mixture of experts as a block of its own (ModelFlow::moeMlp).
// ROUND-LABEL: func.func @moe_block
// ROUND: hir.moe_mlp %{{.*}} router(%{{.*}}) experts(%{{.*}}, %{{.*}}, %{{.*}}) {experts_per_token = 1 : i64}
// CHECK-LABEL: func.func @moe_block
// CHECK: mir.top_k %{{.*}} {k = 1 : i64} : (tensor<1x5x3xf32>) -> (tensor<1x5x1xf32>, tensor<1x5x1xi64>)
// CHECK-NOT: mir.reduce_sum %{{.*}} {axes = array<i64: 2>, keep_dims}
// CHECK: mir.grouped_matmul
// CHECK: mir.grouped_matmul
// CHECK: mir.grouped_matmul
// CHECK: mir.reduce_sum %{{.*}} {axes = array<i64: 2>} : (tensor<1x5x1x8xf32>) -> tensor<1x5x8xf32>
// CHECK-NOT: mir.sigmoid
// CHECK-NOT: hir.
func.func @moe_block(%x: tensor<1x5x8xf32>, %r: tensor<3x8xf32>, %g: tensor<3x4x8xf32>, %u: tensor<3x4x8xf32>, %d: tensor<3x8x4xf32>) -> tensor<1x5x8xf32> {
  %y = hir.moe_mlp %x router(%r) experts(%g, %u, %d) {experts_per_token = 1 : i64} : (tensor<1x5x8xf32>, tensor<3x8xf32>, tensor<3x4x8xf32>, tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<1x5x8xf32>
  return %y : tensor<1x5x8xf32>
}
