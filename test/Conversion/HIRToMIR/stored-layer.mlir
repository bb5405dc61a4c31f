// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct --split-input-file | FileCheck %s
// RUN: rlx-opt %s --convert-hir-to-mir=policy=direct --mir-fuse-all --mir-fusion-report=assert-clean --split-input-file 2>&1 | FileCheck %s --check-prefix=FUSED

/// A LLaMA layer whose weights are kept as stored (q8_0 blocks): the
/// projections joined for one matmul (q+k+v, gate+up) are joined as stored
/// params, their rows concatenated at load time, each widened by one
/// mir.dequantize; no run-time mir.concat of widened weights. After
/// mir-fuse-all no dequantize is left standing: the attention block's w_qkv
/// and w_o and the matmuls read the blocks.

// CHECK-LABEL: func.func @stored_layer
// CHECK-NOT: mir.concat
// CHECK: %[[QKV:.*]] = mir.param "l0.q+l0.k+l0.v" {concat_axis = 0 : i64, {{.*}}sources = ["l0.q", "l0.k", "l0.v"]} : tensor<128x64x!mir.quant<q8_0>>
// CHECK-NEXT: %[[FQKV:.*]] = mir.dequantize %[[QKV]] : (tensor<128x64x!mir.quant<q8_0>>) -> tensor<128x64xf32>
// CHECK-NOT: mir.concat
// CHECK: mir.attention_block %{{.*}}, %[[FQKV]], %{{.*}}
// CHECK: %[[GU:.*]] = mir.param "l0.gate+l0.up" {{.*}} : tensor<256x64x!mir.quant<q8_0>>
// CHECK-NEXT: mir.dequantize %[[GU]]
// CHECK-NOT: mir.concat

// FUSED: remark: fusion report (cpu): 0 missed
// FUSED-LABEL: func.func @stored_layer
// FUSED-NOT: mir.dequantize
// FUSED-DAG: %[[O:.*]] = mir.param "l0.o" : tensor<64x64x!mir.quant<q8_0>>
// FUSED-DAG: %[[QKV:.*]] = mir.param "l0.q+l0.k+l0.v" {{.*}} : tensor<128x64x!mir.quant<q8_0>>
// FUSED: mir.attention_block %{{.*}}, %[[QKV]], %[[O]] {{.*}} : (tensor<1x8x64xf32>, tensor<128x64x!mir.quant<q8_0>>, tensor<64x64x!mir.quant<q8_0>>, tensor<8xi64>) -> tensor<1x8x64xf32>
// FUSED-NOT: mir.dequantize
func.func @stored_layer(%x: tensor<1x8x64xf32>, %pos: tensor<8xi64>) -> tensor<1x8x64xf32> {
  %n = hir.param "l0.input_norm" : tensor<64xf32>
  %wq = hir.param "l0.q" {storage = !mir.quant<q8_0>} : tensor<64x64xf32>
  %wk = hir.param "l0.k" {storage = !mir.quant<q8_0>} : tensor<32x64xf32>
  %wv = hir.param "l0.v" {storage = !mir.quant<q8_0>} : tensor<32x64xf32>
  %wo = hir.param "l0.o" {storage = !mir.quant<q8_0>} : tensor<64x64xf32>
  %pn = hir.param "l0.post_norm" : tensor<64xf32>
  %g = hir.param "l0.gate" {storage = !mir.quant<q8_0>} : tensor<128x64xf32>
  %u = hir.param "l0.up" {storage = !mir.quant<q8_0>} : tensor<128x64xf32>
  %d = hir.param "l0.down" {storage = !mir.quant<q8_0>} : tensor<64x128xf32>
  %0 = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%pn) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, rope_theta = 500000.0 : f32} : (tensor<1x8x64xf32>, tensor<8xi64>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x8x64xf32>
  return %0 : tensor<1x8x64xf32>
}

// -----

/// Weights stored in different types (a Q4_K_M file: q and k in q4_K, v in
/// q6_K) do not join: the projections stay a matmul each, reading their
/// own blocks, rather than a run-time concatenation of widened copies; the
/// same for gate and up.

// CHECK-LABEL: func.func @mixed_types
// CHECK-NOT: mir.concat
// CHECK-NOT: mir.attention_block
// CHECK-NOT: mir.concat
// FUSED-LABEL: func.func @mixed_types
// FUSED-NOT: mir.dequantize
// FUSED-NOT: mir.concat
// FUSED: mir.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<1x8x256xf32>, tensor<256x256x!mir.quant<q4_K>>) -> tensor<1x8x256xf32>
// FUSED-NOT: mir.dequantize
// FUSED-NOT: mir.concat
func.func @mixed_types(%x: tensor<1x8x256xf32>, %pos: tensor<8xi64>) -> tensor<1x8x256xf32> {
  %n = hir.param "l0.input_norm" : tensor<256xf32>
  %wq = hir.param "l0.q" {storage = !mir.quant<q4_K>} : tensor<256x256xf32>
  %wk = hir.param "l0.k" {storage = !mir.quant<q4_K>} : tensor<128x256xf32>
  %wv = hir.param "l0.v" {storage = !mir.quant<q6_K>} : tensor<128x256xf32>
  %wo = hir.param "l0.o" {storage = !mir.quant<q4_K>} : tensor<256x256xf32>
  %pn = hir.param "l0.post_norm" : tensor<256xf32>
  %g = hir.param "l0.gate" {storage = !mir.quant<q4_K>} : tensor<512x256xf32>
  %u = hir.param "l0.up" {storage = !mir.quant<q6_K>} : tensor<512x256xf32>
  %d = hir.param "l0.down" {storage = !mir.quant<q6_K>} : tensor<256x512xf32>
  %0 = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%pn) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, rope_theta = 500000.0 : f32} : (tensor<1x8x256xf32>, tensor<8xi64>, tensor<256xf32>, tensor<256x256xf32>, tensor<128x256xf32>, tensor<128x256xf32>, tensor<256x256xf32>, tensor<256xf32>, tensor<512x256xf32>, tensor<512x256xf32>, tensor<256x512xf32>) -> tensor<1x8x256xf32>
  return %0 : tensor<1x8x256xf32>
}
