// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --mlir-print-op-generic | rlx-opt | FileCheck %s

// Round trip of every MIR op, with dynamic dims where the op allows them.

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @param_plain
func.func @param_plain() -> tensor<2048xf32> {
  // CHECK: mir.param "model.norm.weight" : tensor<2048xf32>
  %w = mir.param "model.norm.weight" : tensor<2048xf32>
  return %w : tensor<2048xf32>
}

// CHECK-LABEL: func.func @param_derived_concat
func.func @param_derived_concat() -> tensor<384x64xf32> {
  // CHECK: mir.param "qkv" {concat_axis = 0 : i64, source_sizes = array<i64: 256, 64, 64>, sources = ["q", "k", "v"]} : tensor<384x64xf32>
  %w = mir.param "qkv" {sources = ["q", "k", "v"], concat_axis = 0 : i64, source_sizes = array<i64: 256, 64, 64>} : tensor<384x64xf32>
  return %w : tensor<384x64xf32>
}

// CHECK-LABEL: func.func @constant_dense_and_splat
func.func @constant_dense_and_splat() -> (tensor<4xf32>, tensor<2xi64>) {
  // CHECK: mir.constant dense<1.000000e+00> : tensor<4xf32>
  %a = mir.constant dense<1.0> : tensor<4xf32>
  // CHECK: mir.constant dense<[3, 4]> : tensor<2xi64>
  %b = mir.constant dense<[3, 4]> : tensor<2xi64>
  return %a, %b : tensor<4xf32>, tensor<2xi64>
}

// CHECK-LABEL: func.func @iota_int_and_float
func.func @iota_int_and_float() -> (tensor<128xi64>, tensor<4x8xf32>) {
  // CHECK: mir.iota {axis = 0 : i64} : tensor<128xi64>
  %a = mir.iota {axis = 0 : i64} : tensor<128xi64>
  // CHECK: mir.iota {axis = 1 : i64} : tensor<4x8xf32>
  %b = mir.iota {axis = 1 : i64} : tensor<4x8xf32>
  return %a, %b : tensor<128xi64>, tensor<4x8xf32>
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul_hf_weight_dynamic_seq
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x64xf32>, %[[W:.*]]: tensor<128x64xf32>)
func.func @matmul_hf_weight_dynamic_seq(%x: tensor<1x?x64xf32>, %w: tensor<128x64xf32>) -> tensor<1x?x128xf32> {
  // CHECK: mir.matmul %[[X]], %[[W]] {transpose_rhs} : (tensor<1x?x64xf32>, tensor<128x64xf32>) -> tensor<1x?x128xf32>
  %y = mir.matmul %x, %w {transpose_rhs} : (tensor<1x?x64xf32>, tensor<128x64xf32>) -> tensor<1x?x128xf32>
  return %y : tensor<1x?x128xf32>
}

// CHECK-LABEL: func.func @matmul_transpose_lhs_bf16
func.func @matmul_transpose_lhs_bf16(%x: tensor<64x8xbf16>, %w: tensor<64x32xbf16>) -> tensor<8x32xbf16> {
  // CHECK: mir.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<64x8xbf16>, tensor<64x32xbf16>) -> tensor<8x32xbf16>
  %y = mir.matmul %x, %w {transpose_lhs} : (tensor<64x8xbf16>, tensor<64x32xbf16>) -> tensor<8x32xbf16>
  return %y : tensor<8x32xbf16>
}

// CHECK-LABEL: func.func @batch_matmul_scores
func.func @batch_matmul_scores(%q: tensor<1x4x?x16xf32>, %k: tensor<1x4x?x16xf32>) -> tensor<1x4x?x?xf32> {
  // CHECK: mir.batch_matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x?xf32>
  %s = mir.batch_matmul %q, %k {transpose_rhs} : (tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x?xf32>
  return %s : tensor<1x4x?x?xf32>
}

//===----------------------------------------------------------------------===//
// Binary broadcasting ops, comparison, selection
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @binary_broadcasting_family
// CHECK-SAME: (%[[A:.*]]: tensor<1x?x64xf32>, %[[B:.*]]: tensor<64xf32>)
func.func @binary_broadcasting_family(%a: tensor<1x?x64xf32>, %b: tensor<64xf32>) -> tensor<1x?x64xf32> {
  // CHECK: %[[ADD:.*]] = mir.add %[[A]], %[[B]] : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %0 = mir.add %a, %b : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  // CHECK: %[[SUB:.*]] = mir.sub %[[ADD]], %[[B]]
  %1 = mir.sub %0, %b : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  // CHECK: %[[MUL:.*]] = mir.mul %[[SUB]], %[[B]]
  %2 = mir.mul %1, %b : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  // CHECK: %[[DIV:.*]] = mir.div %[[MUL]], %[[B]]
  %3 = mir.div %2, %b : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  // CHECK: %[[MAX:.*]] = mir.max %[[DIV]], %[[B]]
  %4 = mir.max %3, %b : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  // CHECK: %[[MIN:.*]] = mir.min %[[MAX]], %[[B]]
  %5 = mir.min %4, %b : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  // CHECK: mir.pow %[[MIN]], %[[B]]
  %6 = mir.pow %5, %b : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return %6 : tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @binary_dynamic_meets_static_and_one
func.func @binary_dynamic_meets_static_and_one(%a: tensor<?x1xi64>, %b: tensor<4x?xi64>) -> tensor<4x?xi64> {
  // CHECK: mir.add %{{.*}}, %{{.*}} : (tensor<?x1xi64>, tensor<4x?xi64>) -> tensor<4x?xi64>
  %0 = mir.add %a, %b : (tensor<?x1xi64>, tensor<4x?xi64>) -> tensor<4x?xi64>
  return %0 : tensor<4x?xi64>
}

// CHECK-LABEL: func.func @compare_causal_mask
func.func @compare_causal_mask(%i: tensor<?x1xi64>, %j: tensor<?xi64>) -> tensor<?x?xi1> {
  // CHECK: mir.compare %{{.*}}, %{{.*}} {predicate = #mir<cmp le>} : (tensor<?x1xi64>, tensor<?xi64>) -> tensor<?x?xi1>
  %m = mir.compare %i, %j {predicate = #mir<cmp le>} : (tensor<?x1xi64>, tensor<?xi64>) -> tensor<?x?xi1>
  return %m : tensor<?x?xi1>
}

// CHECK-LABEL: func.func @select_three_way_broadcast
func.func @select_three_way_broadcast(%m: tensor<?x?xi1>, %s: tensor<1x4x?x?xf32>, %c: tensor<f32>) -> tensor<1x4x?x?xf32> {
  // CHECK: mir.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?xi1>, tensor<1x4x?x?xf32>, tensor<f32>) -> tensor<1x4x?x?xf32>
  %y = mir.select %m, %s, %c : (tensor<?x?xi1>, tensor<1x4x?x?xf32>, tensor<f32>) -> tensor<1x4x?x?xf32>
  return %y : tensor<1x4x?x?xf32>
}

//===----------------------------------------------------------------------===//
// Unary float ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @unary_float_family
func.func @unary_float_family(%x: tensor<2x?xf16>) -> tensor<2x?xf16> {
  // CHECK: mir.exp %{{.*}} : (tensor<2x?xf16>) -> tensor<2x?xf16>
  %0 = mir.exp %x : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.log
  %1 = mir.log %0 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.sqrt
  %2 = mir.sqrt %1 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.rsqrt
  %3 = mir.rsqrt %2 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.tanh
  %4 = mir.tanh %3 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.erf
  %e = mir.erf %4 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.sin
  %s = mir.sin %e : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.cos
  %5 = mir.cos %s : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.sigmoid
  %6 = mir.sigmoid %5 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.silu
  %7 = mir.silu %6 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.gelu %{{.*}} : (tensor<2x?xf16>)
  %8 = mir.gelu %7 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.gelu %{{.*}} {tanh_approx} : (tensor<2x?xf16>)
  %9 = mir.gelu %8 {tanh_approx} : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.relu
  %10 = mir.relu %9 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.neg
  %11 = mir.neg %10 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.abs %{{.*}} : (tensor<2x?xf16>) -> tensor<2x?xf16>
  %12 = mir.abs %11 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.floor
  %13 = mir.floor %12 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.ceil
  %14 = mir.ceil %13 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.round
  %15 = mir.round %14 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: mir.sign
  %16 = mir.sign %15 : (tensor<2x?xf16>) -> tensor<2x?xf16>
  return %16 : tensor<2x?xf16>
}

// The activations without an op of their own, in every spelling RLX has.
// CHECK-LABEL: func.func @activation_every_kind
func.func @activation_every_kind(%x: tensor<2x?xbf16>) -> tensor<2x?xbf16> {
  // CHECK: mir.activation %{{.*}} {activation = #mir<activation quick_gelu>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  %0 = mir.activation %x {activation = #mir<activation quick_gelu>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  // CHECK: mir.activation %{{.*}} {activation = #mir<activation relu2>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  %1 = mir.activation %0 {activation = #mir<activation relu2>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  // CHECK: mir.activation %{{.*}} {activation = #mir<activation relu6>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  %2 = mir.activation %1 {activation = #mir<activation relu6>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  // CHECK: mir.activation %{{.*}} {activation = #mir<activation leaky_relu>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  %3 = mir.activation %2 {activation = #mir<activation leaky_relu>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  // CHECK: mir.activation %{{.*}} {activation = #mir<activation mish>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  %4 = mir.activation %3 {activation = #mir<activation mish>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  // CHECK: mir.activation %{{.*}} {activation = #mir<activation gelu_10>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  %5 = mir.activation %4 {activation = #mir<activation gelu_10>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  // CHECK: mir.activation %{{.*}} {activation = #mir<activation laplace>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  %6 = mir.activation %5 {activation = #mir<activation laplace>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  // CHECK: mir.activation %{{.*}} {activation = #mir<activation hardswish>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  %7 = mir.activation %6 {activation = #mir<activation hardswish>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  // CHECK: mir.activation %{{.*}} {activation = #mir<activation sqrtsoftplus>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  %8 = mir.activation %7 {activation = #mir<activation sqrtsoftplus>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  // CHECK: mir.activation %{{.*}} {activation = #mir<activation relu>}
  %r = mir.activation %8 {activation = #mir<activation relu>} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  return %r : tensor<2x?xbf16>
}

//===----------------------------------------------------------------------===//
// Reductions, softmax, normalization
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reductions_keep_and_drop
func.func @reductions_keep_and_drop(%x: tensor<1x?x64xf32>) -> (tensor<1x?x1xf32>, tensor<?xf32>, tensor<1x1x64xf32>) {
  // CHECK: mir.reduce_sum %{{.*}} {axes = array<i64: 2>, keep_dims} : (tensor<1x?x64xf32>) -> tensor<1x?x1xf32>
  %0 = mir.reduce_sum %x {axes = array<i64: 2>, keep_dims} : (tensor<1x?x64xf32>) -> tensor<1x?x1xf32>
  // CHECK: mir.reduce_mean %{{.*}} {axes = array<i64: 0, 2>} : (tensor<1x?x64xf32>) -> tensor<?xf32>
  %1 = mir.reduce_mean %x {axes = array<i64: 0, 2>} : (tensor<1x?x64xf32>) -> tensor<?xf32>
  // CHECK: mir.reduce_max %{{.*}} {axes = array<i64: 1>, keep_dims} : (tensor<1x?x64xf32>) -> tensor<1x1x64xf32>
  %2 = mir.reduce_max %x {axes = array<i64: 1>, keep_dims} : (tensor<1x?x64xf32>) -> tensor<1x1x64xf32>
  return %0, %1, %2 : tensor<1x?x1xf32>, tensor<?xf32>, tensor<1x1x64xf32>
}

// CHECK-LABEL: func.func @softmax_default_and_negative_axis
func.func @softmax_default_and_negative_axis(%s: tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32> {
  // CHECK: mir.softmax %{{.*}} : (tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32>
  %0 = mir.softmax %s : (tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32>
  // CHECK: mir.softmax %{{.*}} {axis = -2 : i64}
  %1 = mir.softmax %0 {axis = -2 : i64} : (tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32>
  return %1 : tensor<1x4x?x?xf32>
}

// CHECK-LABEL: func.func @reduce_min_prod_and_log_softmax
func.func @reduce_min_prod_and_log_softmax(%x: tensor<2x?x8xf32>, %i: tensor<3x4xi64>) -> (tensor<2x?x1xf32>, tensor<?xf32>, tensor<3xi64>, tensor<2x?x8xf32>) {
  // CHECK: mir.reduce_min %{{.*}} {axes = array<i64: 2>, keep_dims} : (tensor<2x?x8xf32>) -> tensor<2x?x1xf32>
  %0 = mir.reduce_min %x {axes = array<i64: 2>, keep_dims} : (tensor<2x?x8xf32>) -> tensor<2x?x1xf32>
  // CHECK: mir.reduce_prod %{{.*}} {axes = array<i64: 0, 2>} : (tensor<2x?x8xf32>) -> tensor<?xf32>
  %1 = mir.reduce_prod %x {axes = array<i64: 0, 2>} : (tensor<2x?x8xf32>) -> tensor<?xf32>
  // CHECK: mir.reduce_prod %{{.*}} {axes = array<i64: 1>} : (tensor<3x4xi64>) -> tensor<3xi64>
  %2 = mir.reduce_prod %i {axes = array<i64: 1>} : (tensor<3x4xi64>) -> tensor<3xi64>
  // CHECK: mir.log_softmax %{{.*}} {axis = 1 : i64} : (tensor<2x?x8xf32>) -> tensor<2x?x8xf32>
  %3 = mir.log_softmax %x {axis = 1 : i64} : (tensor<2x?x8xf32>) -> tensor<2x?x8xf32>
  return %0, %1, %2, %3 : tensor<2x?x1xf32>, tensor<?xf32>, tensor<3xi64>, tensor<2x?x8xf32>
}

// CHECK-LABEL: func.func @argmax_argmin_cumsum
func.func @argmax_argmin_cumsum(%x: tensor<2x?x8xf32>, %i: tensor<3x4xi32>) -> (tensor<2x?xi64>, tensor<1x4xi64>, tensor<2x?x8xf32>) {
  // CHECK: mir.argmax %{{.*}} : (tensor<2x?x8xf32>) -> tensor<2x?xi64>
  %0 = mir.argmax %x : (tensor<2x?x8xf32>) -> tensor<2x?xi64>
  // CHECK: mir.argmin %{{.*}} {axis = -2 : i64, keep_dims} : (tensor<3x4xi32>) -> tensor<1x4xi64>
  %1 = mir.argmin %i {axis = -2 : i64, keep_dims} : (tensor<3x4xi32>) -> tensor<1x4xi64>
  // CHECK: mir.cumsum %{{.*}} {axis = 1 : i64} : (tensor<2x?x8xf32>) -> tensor<2x?x8xf32>
  %2 = mir.cumsum %x {axis = 1 : i64} : (tensor<2x?x8xf32>) -> tensor<2x?x8xf32>
  return %0, %1, %2 : tensor<2x?xi64>, tensor<1x4xi64>, tensor<2x?x8xf32>
}

// CHECK-LABEL: func.func @tile_pad_one_hot
func.func @tile_pad_one_hot(%x: tensor<2x?xf32>, %i: tensor<4xi64>) -> (tensor<4x?xf32>, tensor<3x?xf32>, tensor<10x4xf16>) {
  // CHECK: mir.tile %{{.*}} {multiples = array<i64: 2, 3>} : (tensor<2x?xf32>) -> tensor<4x?xf32>
  %0 = mir.tile %x {multiples = array<i64: 2, 3>} : (tensor<2x?xf32>) -> tensor<4x?xf32>
  // CHECK: mir.pad %{{.*}} {high = array<i64: 1, 2>, low = array<i64: 0, 1>, value = 1.500000e+00 : f64} : (tensor<2x?xf32>) -> tensor<3x?xf32>
  %1 = mir.pad %x {low = array<i64: 0, 1>, high = array<i64: 1, 2>, value = 1.5 : f64} : (tensor<2x?xf32>) -> tensor<3x?xf32>
  // CHECK: mir.one_hot %{{.*}} {axis = 0 : i64, depth = 10 : i64} : (tensor<4xi64>) -> tensor<10x4xf16>
  %2 = mir.one_hot %i {depth = 10 : i64, axis = 0 : i64} : (tensor<4xi64>) -> tensor<10x4xf16>
  return %0, %1, %2 : tensor<4x?xf32>, tensor<3x?xf32>, tensor<10x4xf16>
}

// CHECK-LABEL: func.func @clip_bounds
func.func @clip_bounds(%x: tensor<2x?xbf16>) -> tensor<2x?xbf16> {
  // CHECK: mir.clip %{{.*}} {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  %0 = mir.clip %x {min = 0.0 : f32, max = 6.0 : f32} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  // CHECK: mir.clip %{{.*}} {max = 0x7F800000 : f32, min = -1.000000e+00 : f32}
  %1 = mir.clip %0 {min = -1.0 : f32, max = 0x7F800000 : f32} : (tensor<2x?xbf16>) -> tensor<2x?xbf16>
  return %1 : tensor<2x?xbf16>
}

// CHECK-LABEL: func.func @rms_norm_gemma_unit_offset
func.func @rms_norm_gemma_unit_offset(%x: tensor<1x?x64xf32>, %w: tensor<64xf32>) -> tensor<1x?x64xf32> {
  // CHECK: mir.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32, unit_offset} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %y = mir.rms_norm %x, %w {epsilon = 1.0e-6 : f32, unit_offset} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @layer_norm_default_epsilon
func.func @layer_norm_default_epsilon(%x: tensor<1x?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<1x?x64xf32> {
  // CHECK: mir.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %y = mir.layer_norm %x, %g, %b : (tensor<1x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}

//===----------------------------------------------------------------------===//
// Rotary position embedding
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @rope_half_seq_positions
func.func @rope_half_seq_positions(%x: tensor<1x?x64xf32>, %pos: tensor<?xi64>) -> tensor<1x?x64xf32> {
  // CHECK: mir.rope %{{.*}}, %{{.*}} {head_dim = 16 : i64, rotary_dim = 16 : i64, theta = 5.000000e+05 : f32} : (tensor<1x?x64xf32>, tensor<?xi64>) -> tensor<1x?x64xf32>
  %y = mir.rope %x, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64, theta = 5.0e5 : f32} : (tensor<1x?x64xf32>, tensor<?xi64>) -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @rope_interleaved_partial_inv_freq
// CHECK-SAME: %[[F:[^:]*]]: tensor<4xf32>
func.func @rope_interleaved_partial_inv_freq(%x: tensor<2x?x64xf32>, %pos: tensor<2x?xi32>, %f: tensor<4xf32>) -> tensor<2x?x64xf32> {
  // CHECK: mir.rope %{{.*}}, %{{.*}} inv_freq(%[[F]]) {head_dim = 16 : i64, rotary_dim = 8 : i64, style = #mir<rope_style interleaved>}
  %y = mir.rope %x, %pos inv_freq(%f) {head_dim = 16 : i64, rotary_dim = 8 : i64, style = #mir<rope_style interleaved>} : (tensor<2x?x64xf32>, tensor<2x?xi32>, tensor<4xf32>) -> tensor<2x?x64xf32>
  return %y : tensor<2x?x64xf32>
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @gather_embedding_lookup
func.func @gather_embedding_lookup(%t: tensor<1000x64xf32>, %ids: tensor<1x?xi64>) -> tensor<1x?x64xf32> {
  // CHECK: mir.gather %{{.*}}, %{{.*}} : (tensor<1000x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  %e = mir.gather %t, %ids : (tensor<1000x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  return %e : tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @gather_inner_axis
func.func @gather_inner_axis(%t: tensor<4x10x3xf32>, %ids: tensor<2xi32>) -> tensor<4x2x3xf32> {
  // CHECK: mir.gather %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x10x3xf32>, tensor<2xi32>) -> tensor<4x2x3xf32>
  %e = mir.gather %t, %ids {axis = 1 : i64} : (tensor<4x10x3xf32>, tensor<2xi32>) -> tensor<4x2x3xf32>
  return %e : tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @reshape_split_heads_dynamic_seq
func.func @reshape_split_heads_dynamic_seq(%x: tensor<1x?x64xf32>) -> tensor<1x?x4x16xf32> {
  // CHECK: mir.reshape %{{.*}} : (tensor<1x?x64xf32>) -> tensor<1x?x4x16xf32>
  %y = mir.reshape %x : (tensor<1x?x64xf32>) -> tensor<1x?x4x16xf32>
  return %y : tensor<1x?x4x16xf32>
}

// CHECK-LABEL: func.func @transpose_heads_to_front
func.func @transpose_heads_to_front(%x: tensor<1x?x4x16xf32>) -> tensor<1x4x?x16xf32> {
  // CHECK: mir.transpose %{{.*}} {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x16xf32>) -> tensor<1x4x?x16xf32>
  %y = mir.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x16xf32>) -> tensor<1x4x?x16xf32>
  return %y : tensor<1x4x?x16xf32>
}

// CHECK-LABEL: func.func @slice_last_row_of_dynamic_seq
func.func @slice_last_row_of_dynamic_seq(%x: tensor<1x?x64xf32>) -> tensor<1x1x64xf32> {
  // CHECK: mir.slice %{{.*}} {axis = 1 : i64, size = 1 : i64, start = -1 : i64} : (tensor<1x?x64xf32>) -> tensor<1x1x64xf32>
  %y = mir.slice %x {axis = 1 : i64, start = -1 : i64, size = 1 : i64} : (tensor<1x?x64xf32>) -> tensor<1x1x64xf32>
  return %y : tensor<1x1x64xf32>
}

// CHECK-LABEL: func.func @slice_with_negative_step
func.func @slice_with_negative_step(%x: tensor<2x?xf32>) -> tensor<2x3xf32> {
  // CHECK: mir.slice %{{.*}} {axis = 1 : i64, size = 3 : i64, start = 5 : i64, step = -2 : i64} : (tensor<2x?xf32>) -> tensor<2x3xf32>
  %y = mir.slice %x {axis = 1 : i64, start = 5 : i64, size = 3 : i64, step = -2 : i64} : (tensor<2x?xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @split_dynamic_dim
func.func @split_dynamic_dim(%x: tensor<?x96xf32>) -> (tensor<?x64xf32>, tensor<?x0xf32>, tensor<?x32xf32>) {
  // CHECK: %{{.*}}:3 = mir.split %{{.*}} {axis = -1 : i64, sizes = array<i64: 64, 0, 32>} : (tensor<?x96xf32>) -> (tensor<?x64xf32>, tensor<?x0xf32>, tensor<?x32xf32>)
  %y:3 = mir.split %x {axis = -1 : i64, sizes = array<i64: 64, 0, 32>} : (tensor<?x96xf32>) -> (tensor<?x64xf32>, tensor<?x0xf32>, tensor<?x32xf32>)
  return %y#0, %y#1, %y#2 : tensor<?x64xf32>, tensor<?x0xf32>, tensor<?x32xf32>
}

// CHECK-LABEL: func.func @concat_kv_cache_append
func.func @concat_kv_cache_append(%past: tensor<1x?x32xf32>, %new: tensor<1x1x32xf32>) -> tensor<1x?x32xf32> {
  // CHECK: mir.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<1x?x32xf32>, tensor<1x1x32xf32>) -> tensor<1x?x32xf32>
  %y = mir.concat %past, %new {axis = 1 : i64} : (tensor<1x?x32xf32>, tensor<1x1x32xf32>) -> tensor<1x?x32xf32>
  return %y : tensor<1x?x32xf32>
}

// CHECK-LABEL: func.func @concat_static_sum
func.func @concat_static_sum(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<?x1xf32>) -> tensor<2x9xf32> {
  // CHECK: mir.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<?x1xf32>) -> tensor<2x9xf32>
  %y = mir.concat %a, %b, %c {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<?x1xf32>) -> tensor<2x9xf32>
  return %y : tensor<2x9xf32>
}

// CHECK-LABEL: func.func @broadcast_bias_and_dynamic_copy
func.func @broadcast_bias_and_dynamic_copy(%b: tensor<64xf32>, %x: tensor<?x1xf32>) -> (tensor<8x64xf32>, tensor<2x?x4xf32>) {
  // CHECK: mir.broadcast %{{.*}} : (tensor<64xf32>) -> tensor<8x64xf32>
  %0 = mir.broadcast %b : (tensor<64xf32>) -> tensor<8x64xf32>
  // CHECK: mir.broadcast %{{.*}} : (tensor<?x1xf32>) -> tensor<2x?x4xf32>
  %1 = mir.broadcast %x : (tensor<?x1xf32>) -> tensor<2x?x4xf32>
  return %0, %1 : tensor<8x64xf32>, tensor<2x?x4xf32>
}

// CHECK-LABEL: func.func @cast_bf16_f32_i1_f32
func.func @cast_bf16_f32_i1_f32(%x: tensor<1x?x64xbf16>, %m: tensor<?x?xi1>) -> (tensor<1x?x64xf32>, tensor<?x?xf32>) {
  // CHECK: mir.cast %{{.*}} : (tensor<1x?x64xbf16>) -> tensor<1x?x64xf32>
  %0 = mir.cast %x : (tensor<1x?x64xbf16>) -> tensor<1x?x64xf32>
  // CHECK: mir.cast %{{.*}} : (tensor<?x?xi1>) -> tensor<?x?xf32>
  %1 = mir.cast %m : (tensor<?x?xi1>) -> tensor<?x?xf32>
  return %0, %1 : tensor<1x?x64xf32>, tensor<?x?xf32>
}

//===----------------------------------------------------------------------===//
// Fused ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @fused_matmul_bias_gelu_residual
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x64xf32>, %[[W:.*]]: tensor<128x64xf32>, %[[B:.*]]: tensor<128xf32>, %[[R:.*]]: tensor<1x?x128xf32>)
func.func @fused_matmul_bias_gelu_residual(%x: tensor<1x?x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>, %r: tensor<1x?x128xf32>) -> tensor<1x?x128xf32> {
  // CHECK: mir.fused_matmul %[[X]], %[[W]] bias(%[[B]]) residual(%[[R]]) {activation = #mir<activation gelu>, transpose_rhs} : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<1x?x128xf32>) -> tensor<1x?x128xf32>
  %y = mir.fused_matmul %x, %w bias(%b) residual(%r) {transpose_rhs, activation = #mir<activation gelu>} : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<128xf32>, tensor<1x?x128xf32>) -> tensor<1x?x128xf32>
  return %y : tensor<1x?x128xf32>
}

// CHECK-LABEL: func.func @fused_matmul_residual_only
// CHECK-SAME: %[[R:[^:]*]]: tensor<4x32xf32>
func.func @fused_matmul_residual_only(%x: tensor<4x64xf32>, %w: tensor<64x32xf32>, %r: tensor<4x32xf32>) -> tensor<4x32xf32> {
  // CHECK: mir.fused_matmul %{{.*}}, %{{.*}} residual(%[[R]]) : (tensor<4x64xf32>, tensor<64x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = mir.fused_matmul %x, %w residual(%r) : (tensor<4x64xf32>, tensor<64x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// CHECK-LABEL: func.func @fused_residual_rms_norm_two_results
func.func @fused_residual_rms_norm_two_results(%x: tensor<1x?x64xf32>, %r: tensor<1x?x64xf32>, %w: tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>) {
  // CHECK: %[[SUM:.*]], %[[NORMED:.*]] = mir.fused_residual_rms_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>)
  %sum, %normed = mir.fused_residual_rms_norm %x, %r, %w {epsilon = 1.0e-6 : f32} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>)
  // CHECK: return %[[SUM]], %[[NORMED]]
  return %sum, %normed : tensor<1x?x64xf32>, tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @fused_residual_layer_norm_two_results
func.func @fused_residual_layer_norm_two_results(%x: tensor<1x?x64xf32>, %r: tensor<1x?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>) {
  // CHECK: mir.fused_residual_layer_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999996E-13 : f32} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>)
  %sum, %normed = mir.fused_residual_layer_norm %x, %r, %g, %b {epsilon = 1.0e-12 : f32} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>)
  return %sum, %normed : tensor<1x?x64xf32>, tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @fused_glu_swiglu_and_geglu
func.func @fused_glu_swiglu_and_geglu(%gu: tensor<1x?x256xf32>, %d: tensor<2x?xf32>) -> (tensor<1x?x128xf32>, tensor<2x?xf32>) {
  // CHECK: mir.fused_glu %{{.*}} : (tensor<1x?x256xf32>) -> tensor<1x?x128xf32>
  %0 = mir.fused_glu %gu : (tensor<1x?x256xf32>) -> tensor<1x?x128xf32>
  // CHECK: mir.fused_glu %{{.*}} {activation = #mir<activation gelu_tanh>} : (tensor<2x?xf32>) -> tensor<2x?xf32>
  %1 = mir.fused_glu %d {activation = #mir<activation gelu_tanh>} : (tensor<2x?xf32>) -> tensor<2x?xf32>
  return %0, %1 : tensor<1x?x128xf32>, tensor<2x?xf32>
}

// CHECK-LABEL: func.func @fused_matmul_and_glu_new_activations
func.func @fused_matmul_and_glu_new_activations(%x: tensor<1x?x64xf32>, %w: tensor<128x64xf32>) -> (tensor<1x?x128xf32>, tensor<1x?x64xf32>) {
  // CHECK: mir.fused_matmul %{{.*}}, %{{.*}} {activation = #mir<activation mish>, transpose_rhs}
  %0 = mir.fused_matmul %x, %w {transpose_rhs, activation = #mir<activation mish>} : (tensor<1x?x64xf32>, tensor<128x64xf32>) -> tensor<1x?x128xf32>
  // CHECK: mir.fused_glu %{{.*}} {activation = #mir<activation quick_gelu>}
  %1 = mir.fused_glu %0 {activation = #mir<activation quick_gelu>} : (tensor<1x?x128xf32>) -> tensor<1x?x64xf32>
  return %0, %1 : tensor<1x?x128xf32>, tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @attention_gqa_causal_decode
func.func @attention_gqa_causal_decode(%q: tensor<1x1x64xf32>, %k: tensor<1x?x32xf32>, %v: tensor<1x?x32xf32>) -> tensor<1x1x64xf32> {
  // CHECK: mir.attention %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 16 : i64, mask_kind = #mir<mask causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32} : (tensor<1x1x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>) -> tensor<1x1x64xf32>
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x1x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>) -> tensor<1x1x64xf32>
  return %o : tensor<1x1x64xf32>
}

// CHECK-LABEL: func.func @attention_sliding_window_softcap
func.func @attention_sliding_window_softcap(%q: tensor<1x?x64xbf16>, %k: tensor<1x?x64xbf16>, %v: tensor<1x?x64xbf16>) -> tensor<1x?x64xbf16> {
  // CHECK: mir.attention {{.*}} {head_dim = 16 : i64, mask_kind = #mir<mask sliding_window>, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 2.500000e-01 : f32, softcap = 5.000000e+01 : f32, window = 4096 : i64}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, softcap = 50.0 : f32, mask_kind = #mir<mask sliding_window>, window = 4096 : i64} : (tensor<1x?x64xbf16>, tensor<1x?x64xbf16>, tensor<1x?x64xbf16>) -> tensor<1x?x64xbf16>
  return %o : tensor<1x?x64xbf16>
}

// CHECK-LABEL: func.func @attention_padding_mask
// CHECK-SAME: %[[M:[^:]*]]: tensor<2x?xi64>
func.func @attention_padding_mask(%q: tensor<2x?x64xf32>, %k: tensor<2x?x64xf32>, %v: tensor<2x?x64xf32>, %m: tensor<2x?xi64>) -> tensor<2x?x64xf32> {
  // CHECK: mir.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%[[M]]) {{.*}}mask_kind = #mir<mask padding>
  %o = mir.attention %q, %k, %v mask(%m) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask padding>} : (tensor<2x?x64xf32>, tensor<2x?x64xf32>, tensor<2x?x64xf32>, tensor<2x?xi64>) -> tensor<2x?x64xf32>
  return %o : tensor<2x?x64xf32>
}

// CHECK-LABEL: func.func @attention_block_llama_rope
// CHECK-SAME: %[[POS:[^:]*]]: tensor<?xi64>
func.func @attention_block_llama_rope(%x: tensor<1x?x64xf32>, %wqkv: tensor<128x64xf32>, %wo: tensor<64x64xf32>, %pos: tensor<?xi64>) -> tensor<1x?x64xf32> {
  // CHECK: mir.attention_block %{{.*}}, %{{.*}}, %{{.*}} positions(%[[POS]]) {head_dim = 16 : i64, mask_kind = #mir<mask causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, rotary_dim = 16 : i64, scale = 2.500000e-01 : f32} : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<64x64xf32>, tensor<?xi64>) -> tensor<1x?x64xf32>
  %y = mir.attention_block %x, %wqkv, %wo positions(%pos) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, rotary_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<64x64xf32>, tensor<?xi64>) -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}

/// The projection weights may be kept as stored (ggml blocks, f16, bf16)
/// with an f32 input.
// CHECK-LABEL: func.func @attention_block_stored_weights
func.func @attention_block_stored_weights(%x: tensor<1x?x64xf32>, %wqkv: tensor<128x64x!mir.quant<q8_0>>, %wo: tensor<64x64xbf16>) -> tensor<1x?x64xf32> {
  // CHECK: mir.attention_block {{.*}} : (tensor<1x?x64xf32>, tensor<128x64x!mir.quant<q8_0>>, tensor<64x64xbf16>) -> tensor<1x?x64xf32>
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<128x64x!mir.quant<q8_0>>, tensor<64x64xbf16>) -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @attention_block_every_optional_operand
// CHECK-SAME: (%[[X:[^:]*]]: {{[^,]*}}, %[[WQKV:[^:]*]]: {{[^,]*}}, %[[WO:[^:]*]]: {{[^,]*}}, %[[POS:[^:]*]]: {{[^,]*}}, %[[F:[^:]*]]: {{[^,]*}}, %[[QN:[^:]*]]: {{[^,]*}}, %[[KN:[^:]*]]: {{[^,]*}}, %[[BQ:[^:]*]]: {{[^,]*}}, %[[BO:[^:]*]]: {{[^,]*}}, %[[M:[^:]*]]: {{[^)]*}})
func.func @attention_block_every_optional_operand(%x: tensor<2x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<32x64xf32>, %pos: tensor<2x?xi32>, %f: tensor<4xf32>, %qn: tensor<16xf32>, %kn: tensor<16xf32>, %bq: tensor<192xf32>, %bo: tensor<32xf32>, %m: tensor<2x?xi1>) -> tensor<2x?x32xf32> {
  // CHECK: mir.attention_block %[[X]], %[[WQKV]], %[[WO]] positions(%[[POS]]) inv_freq(%[[F]]) q_norm(%[[QN]]) k_norm(%[[KN]]) qkv_bias(%[[BQ]]) out_bias(%[[BO]]) mask(%[[M]]) {{.*}} -> tensor<2x?x32xf32>
  %y = mir.attention_block %x, %wqkv, %wo positions(%pos) inv_freq(%f) q_norm(%qn) k_norm(%kn) qkv_bias(%bq) out_bias(%bo) mask(%m) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, rotary_dim = 8 : i64, rope_theta = 1.0e6 : f32, rope_style = #mir<rope_style interleaved>, scale = 0.25 : f32, softcap = 30.0 : f32, mask_kind = #mir<mask padding>, norm_epsilon = 1.0e-5 : f32, norm_unit_offset} : (tensor<2x?x64xf32>, tensor<192x64xf32>, tensor<32x64xf32>, tensor<2x?xi32>, tensor<4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<192xf32>, tensor<32xf32>, tensor<2x?xi1>) -> tensor<2x?x32xf32>
  return %y : tensor<2x?x32xf32>
}

// CHECK-LABEL: func.func @elementwise_scalar_region
// CHECK-SAME: (%[[A:.*]]: tensor<1x?x64xf32>, %[[B:.*]]: tensor<64xf16>)
func.func @elementwise_scalar_region(%a: tensor<1x?x64xf32>, %b: tensor<64xf16>) -> tensor<1x?x64xf32> {
  // CHECK: mir.elementwise %[[A]], %[[B]] {
  // CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f16):
  // CHECK-NEXT: %[[E:.*]] = arith.extf %[[Y]] : f16 to f32
  // CHECK-NEXT: %[[C:.*]] = arith.constant 2.000000e+00 : f32
  // CHECK-NEXT: %[[M:.*]] = arith.mulf %[[X]], %[[C]] : f32
  // CHECK-NEXT: %[[S:.*]] = arith.addf %[[M]], %[[E]] : f32
  // CHECK-NEXT: %[[T:.*]] = math.tanh %[[S]] : f32
  // CHECK-NEXT: mir.yield %[[T]] : f32
  // CHECK-NEXT: } : (tensor<1x?x64xf32>, tensor<64xf16>) -> tensor<1x?x64xf32>
  %y = mir.elementwise %a, %b {
  ^bb0(%x: f32, %h: f16):
    %e = arith.extf %h : f16 to f32
    %c = arith.constant 2.0 : f32
    %m = arith.mulf %x, %c : f32
    %s = arith.addf %m, %e : f32
    %t = math.tanh %s : f32
    mir.yield %t : f32
  } : (tensor<1x?x64xf32>, tensor<64xf16>) -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}

// Weights in their stored precision: ggml blocks and bf16 read by matmuls
// and gathers, and dequantized.
// CHECK-LABEL: func.func @stored_weights
func.func @stored_weights(%x: tensor<1x?x64xf32>, %ids: tensor<1x?xi32>) -> (tensor<1x?x32xf32>, tensor<1x?x64xf32>, tensor<32x256xf32>) {
  // CHECK: %[[Q:.*]] = mir.param "w" : tensor<32x64x!mir.quant<q4_0>>
  %q = mir.param "w" : tensor<32x64x!mir.quant<q4_0>>
  // CHECK: mir.matmul %{{.*}}, %[[Q]] {transpose_rhs} : (tensor<1x?x64xf32>, tensor<32x64x!mir.quant<q4_0>>) -> tensor<1x?x32xf32>
  %y = mir.matmul %x, %q {transpose_rhs} : (tensor<1x?x64xf32>, tensor<32x64x!mir.quant<q4_0>>) -> tensor<1x?x32xf32>
  %e = mir.param "emb" : tensor<100x64xbf16>
  // CHECK: mir.gather %{{.*}} : (tensor<100x64xbf16>, tensor<1x?xi32>) -> tensor<1x?x64xbf16>
  %g = mir.gather %e, %ids : (tensor<100x64xbf16>, tensor<1x?xi32>) -> tensor<1x?x64xbf16>
  %c = mir.cast %g : (tensor<1x?x64xbf16>) -> tensor<1x?x64xf32>
  %k = mir.param "k" : tensor<32x256x!mir.quant<q6_K>>
  // CHECK: mir.dequantize %{{.*}} : (tensor<32x256x!mir.quant<q6_K>>) -> tensor<32x256xf32>
  %d = mir.dequantize %k : (tensor<32x256x!mir.quant<q6_K>>) -> tensor<32x256xf32>
  return %y, %c, %d : tensor<1x?x32xf32>, tensor<1x?x64xf32>, tensor<32x256xf32>
}
