// RUN: rlx-opt %s -split-input-file -verify-diagnostics

// One case per verifier diagnostic; each function is named after the
// constraint it breaks (docs/Dialects/MIR.md numbers them).

//===----------------------------------------------------------------------===//
// mir.param
//===----------------------------------------------------------------------===//

func.func @param_c1_empty_name() {
  // expected-error @+1 {{'mir.param' op requires a non-empty parameter name}}
  %w = mir.param "" : tensor<4xf32>
  return
}

// -----

func.func @param_c2_dynamic_shape() {
  // expected-error @+1 {{'mir.param' op requires a static shape, got 'tensor<?x4xf32>'}}
  %w = mir.param "w" : tensor<?x4xf32>
  return
}

// -----

func.func @param_c3_sources_without_axis() {
  // expected-error @+1 {{'mir.param' op requires 'sources', 'concat_axis' and 'source_sizes' together}}
  %w = mir.param "qkv" {sources = ["q", "k"]} : tensor<8x4xf32>
  return
}

// -----

func.func @param_c4_single_source() {
  // expected-error @+1 {{'mir.param' op requires at least two non-empty source names, got ["q"]}}
  %w = mir.param "qkv" {sources = ["q"], concat_axis = 0 : i64, source_sizes = array<i64: 8>} : tensor<8x4xf32>
  return
}

// -----

func.func @param_c4_empty_source_name() {
  // expected-error @+1 {{'mir.param' op requires at least two non-empty source names}}
  %w = mir.param "qkv" {sources = ["q", ""], concat_axis = 0 : i64, source_sizes = array<i64: 4, 4>} : tensor<8x4xf32>
  return
}

// -----

func.func @param_c5_concat_axis_out_of_range() {
  // expected-error @+1 {{'mir.param' op concat_axis 2 is out of range [0, 2)}}
  %w = mir.param "qkv" {sources = ["q", "k"], concat_axis = 2 : i64, source_sizes = array<i64: 4, 4>} : tensor<8x4xf32>
  return
}

// -----

func.func @param_c6_source_sizes_sum() {
  // expected-error @+1 {{'mir.param' op source_sizes must give one positive size per source adding up to dimension 0 (8)}}
  %w = mir.param "qkv" {sources = ["q", "k"], concat_axis = 0 : i64, source_sizes = array<i64: 4, 3>} : tensor<8x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// mir.constant and mir.iota
//===----------------------------------------------------------------------===//

func.func @constant_c1_value_type_is_result_type() {
  // expected-error @+1 {{'mir.constant' op failed to verify that all of {value, result} have same type}}
  %c = "mir.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<2xf32>
  return
}

// -----

func.func @iota_c1_dynamic_shape() {
  // expected-error @+1 {{'mir.iota' op requires a static shape of rank >= 1, got 'tensor<?xi64>'}}
  %i = mir.iota {axis = 0 : i64} : tensor<?xi64>
  return
}

// -----

func.func @iota_c1_rank_zero() {
  // expected-error @+1 {{'mir.iota' op requires a static shape of rank >= 1, got 'tensor<i64>'}}
  %i = mir.iota {axis = 0 : i64} : tensor<i64>
  return
}

// -----

func.func @iota_c2_axis_out_of_range() {
  // expected-error @+1 {{'mir.iota' op axis -1 is out of range [0, 2)}}
  %i = mir.iota {axis = -1 : i64} : tensor<4x8xi64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// mir.matmul and mir.batch_matmul
//===----------------------------------------------------------------------===//

func.func @matmul_c1_lhs_rank_one(%x: tensor<64xf32>, %w: tensor<64x8xf32>) {
  // expected-error @+1 {{'mir.matmul' op requires an lhs of rank >= 2, got 'tensor<64xf32>'}}
  %y = mir.matmul %x, %w : (tensor<64xf32>, tensor<64x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @matmul_c2_rhs_rank_three(%x: tensor<4x64xf32>, %w: tensor<1x64x8xf32>) {
  // expected-error @+1 {{'mir.matmul' op requires a rank-2 rhs, got 'tensor<1x64x8xf32>'}}
  %y = mir.matmul %x, %w : (tensor<4x64xf32>, tensor<1x64x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_c3_mixed_element_types(%x: tensor<4x64xf32>, %w: tensor<64x8xbf16>) {
  // expected-error @+1 {{'mir.matmul' op requires lhs and rhs of the same element type}}
  %y = mir.matmul %x, %w : (tensor<4x64xf32>, tensor<64x8xbf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_c4_k_mismatch_hf_layout(%x: tensor<1x?x64xf32>, %w: tensor<64x32xf32>) {
  // expected-error @+1 {{'mir.matmul' op contraction dims do not match: lhs has K = 64, rhs has K = 32}}
  %y = mir.matmul %x, %w {transpose_rhs} : (tensor<1x?x64xf32>, tensor<64x32xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @matmul_infer_c1_result_type(%x: tensor<4x64xf32>, %w: tensor<64x8xf32>) {
  // expected-error @+1 {{'mir.matmul' op result type 'tensor<4x9xf32>' does not match the inferred type 'tensor<4x8xf32>'}}
  %y = mir.matmul %x, %w : (tensor<4x64xf32>, tensor<64x8xf32>) -> tensor<4x9xf32>
  return
}

// -----

func.func @matmul_float_operands_only(%x: tensor<4x64xi32>, %w: tensor<64x8xi32>) {
  // expected-error @+1 {{'mir.matmul' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %y = mir.matmul %x, %w : (tensor<4x64xi32>, tensor<64x8xi32>) -> tensor<4x8xi32>
  return
}

// -----

func.func @batch_matmul_c1_rank_mismatch(%a: tensor<2x4x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{'mir.batch_matmul' op requires lhs and rhs of the same rank >= 3}}
  %y = mir.batch_matmul %a, %b : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @batch_matmul_c2_batch_mismatch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+1 {{'mir.batch_matmul' op batch dims do not match}}
  %y = mir.batch_matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @batch_matmul_c3_mixed_element_types(%a: tensor<2x4x8xf16>, %b: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'mir.batch_matmul' op requires lhs and rhs of the same element type}}
  %y = mir.batch_matmul %a, %b : (tensor<2x4x8xf16>, tensor<2x8x4xf32>) -> tensor<2x4x4xf16>
  return
}

// -----

func.func @batch_matmul_c4_k_mismatch_transposed(%a: tensor<2x4x8xf32>, %b: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'mir.batch_matmul' op contraction dims do not match: lhs has K = 8, rhs has K = 4}}
  %y = mir.batch_matmul %a, %b {transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Binary broadcasting ops, compare, select
//===----------------------------------------------------------------------===//

func.func @binary_c1_mixed_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'mir.add' op requires the same element type for all operands}}
  %y = mir.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @binary_c2_not_broadcastable(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'mir.mul' op operands are not broadcast-compatible: 'tensor<4x3xf32>' and 'tensor<4xf32>'}}
  %y = mir.mul %a, %b : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @binary_infer_c1_result_type(%a: tensor<?x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.sub' op result type 'tensor<?x8xf32>' does not match the inferred type 'tensor<4x8xf32>'}}
  %y = mir.sub %a, %b : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @pow_float_operands_only(%a: tensor<4xi32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'mir.pow' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %y = mir.pow %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @compare_c1_mixed_element_types(%a: tensor<4xi32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{'mir.compare' op requires the same element type for all operands}}
  %m = mir.compare %a, %b {predicate = #mir<cmp eq>} : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_c2_not_broadcastable(%a: tensor<4xi64>, %b: tensor<5xi64>) {
  // expected-error @+1 {{'mir.compare' op operands are not broadcast-compatible}}
  %m = mir.compare %a, %b {predicate = #mir<cmp lt>} : (tensor<4xi64>, tensor<5xi64>) -> tensor<4xi1>
  return
}

// -----

func.func @select_c1_mixed_value_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'mir.select' op requires on_true and on_false of the same element type}}
  %y = mir.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @select_c2_not_broadcastable(%c: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<f32>) {
  // expected-error @+1 {{'mir.select' op operands are not broadcast-compatible: 'tensor<3xi1>', 'tensor<4xf32>' and 'tensor<f32>'}}
  %y = mir.select %c, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Unary ops and reductions
//===----------------------------------------------------------------------===//

func.func @unary_c1_same_operand_and_result_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mir.exp' op requires the same type for all operands and results}}
  %y = mir.exp %x : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @unary_float_only(%x: tensor<4xi32>) {
  // expected-error @+1 {{'mir.relu' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %y = mir.relu %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @activation_c1_none(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mir.activation' op activation 'none' is the identity: use the input}}
  %y = mir.activation %x {activation = #mir<activation none>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @activation_unknown_name(%x: tensor<4xf32>) {
  // expected-error @+2 {{expected one of [none, relu, gelu, gelu_tanh, silu, sigmoid, tanh, quick_gelu, relu2, relu6, leaky_relu, mish, gelu_10, laplace, hardswish, sqrtsoftplus] for pointwise activation function, got: prelu}}
  // expected-error @+1 {{failed to parse MIR_ActivationAttr parameter 'value'}}
  %y = mir.activation %x {activation = #mir<activation prelu>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @activation_required(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mir.activation' op requires attribute 'activation'}}
  %y = mir.activation %x : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @activation_float_only(%x: tensor<4xi32>) {
  // expected-error @+1 {{'mir.activation' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %y = mir.activation %x {activation = #mir<activation mish>} : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @reduce_c1_no_axes(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.reduce_sum' op requires at least one axis}}
  %y = mir.reduce_sum %x {axes = array<i64>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_c2_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.reduce_max' op axis -1 is out of range [0, 2)}}
  %y = mir.reduce_max %x {axes = array<i64: -1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_c3_repeated_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.reduce_mean' op axis 1 appears more than once}}
  %y = mir.reduce_mean %x {axes = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_infer_c1_result_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.reduce_sum' op result type 'tensor<4xf32>' does not match the inferred type 'tensor<4x1xf32>'}}
  %y = mir.reduce_sum %x {axes = array<i64: 1>, keep_dims} : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_mean_float_only(%x: tensor<4x8xi32>) {
  // expected-error @+1 {{'mir.reduce_mean' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %y = mir.reduce_mean %x {axes = array<i64: 1>} : (tensor<4x8xi32>) -> tensor<4xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Softmax and normalization
//===----------------------------------------------------------------------===//

func.func @softmax_c1_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.softmax' op axis -3 is out of range [-2, 2)}}
  %y = mir.softmax %x {axis = -3 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_c1_weight_not_last_dim(%x: tensor<1x?x64xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{'mir.rms_norm' op weight must be 1-D and match the last dim of the input, got 'tensor<32xf32>' for 'tensor<1x?x64xf32>'}}
  %y = mir.rms_norm %x, %w : (tensor<1x?x64xf32>, tensor<32xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @rms_norm_c2_weight_element_type(%x: tensor<1x?x64xf32>, %w: tensor<64xbf16>) {
  // expected-error @+1 {{'mir.rms_norm' op weight must have the element type of the input, got 'tensor<64xbf16>' for 'tensor<1x?x64xf32>'}}
  %y = mir.rms_norm %x, %w : (tensor<1x?x64xf32>, tensor<64xbf16>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @rms_norm_c3_zero_epsilon(%x: tensor<1x?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'mir.rms_norm' op requires a positive epsilon, got 0}}
  %y = mir.rms_norm %x, %w {epsilon = 0.0 : f32} : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @layer_norm_c1_gamma_2d(%x: tensor<4x64xf32>, %g: tensor<1x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'mir.layer_norm' op gamma must be 1-D and match the last dim of the input}}
  %y = mir.layer_norm %x, %g, %b : (tensor<4x64xf32>, tensor<1x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @layer_norm_c2_beta_element_type(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf16>) {
  // expected-error @+1 {{'mir.layer_norm' op beta must have the element type of the input}}
  %y = mir.layer_norm %x, %g, %b : (tensor<4x64xf32>, tensor<64xf32>, tensor<64xf16>) -> tensor<4x64xf32>
  return
}

// -----

func.func @layer_norm_c3_negative_epsilon(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'mir.layer_norm' op requires a positive epsilon}}
  %y = mir.layer_norm %x, %g, %b {epsilon = -1.0e-5 : f32} : (tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// mir.rope
//===----------------------------------------------------------------------===//

func.func @rope_c1_input_rank_four(%x: tensor<1x?x4x16xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{'mir.rope' op requires a rank-3 input [B, T, N*head_dim], got 'tensor<1x?x4x16xf32>'}}
  %y = mir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x?x4x16xf32>, tensor<?xi64>) -> tensor<1x?x4x16xf32>
  return
}

// -----

func.func @rope_c2_zero_head_dim(%x: tensor<1x?x64xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{'mir.rope' op requires a positive head_dim, got 0}}
  %y = mir.rope %x, %p {head_dim = 0 : i64, rotary_dim = 16 : i64} : (tensor<1x?x64xf32>, tensor<?xi64>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @rope_c2_head_dim_does_not_divide(%x: tensor<1x?x64xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{'mir.rope' op last dim 64 of the input is not a multiple of head_dim 24}}
  %y = mir.rope %x, %p {head_dim = 24 : i64, rotary_dim = 16 : i64} : (tensor<1x?x64xf32>, tensor<?xi64>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @rope_c3_odd_rotary_dim(%x: tensor<1x?x64xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{'mir.rope' op requires an even rotary_dim in (0, head_dim = 16], got 7}}
  %y = mir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 7 : i64} : (tensor<1x?x64xf32>, tensor<?xi64>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @rope_c3_rotary_dim_above_head_dim(%x: tensor<1x?x64xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{'mir.rope' op requires an even rotary_dim in (0, head_dim = 16], got 32}}
  %y = mir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 32 : i64} : (tensor<1x?x64xf32>, tensor<?xi64>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @rope_c4_positions_wrong_batch(%x: tensor<2x?x64xf32>, %p: tensor<3x?xi64>) {
  // expected-error @+1 {{'mir.rope' op positions must be [B, T] or [T] = [2, ?], got 'tensor<3x?xi64>'}}
  %y = mir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<2x?x64xf32>, tensor<3x?xi64>) -> tensor<2x?x64xf32>
  return
}

// -----

func.func @rope_c5_inv_freq_wrong_size(%x: tensor<1x?x64xf32>, %p: tensor<?xi64>, %f: tensor<16xf32>) {
  // expected-error @+1 {{'mir.rope' op inv_freq must be [rotary_dim / 2] = [8], got 'tensor<16xf32>'}}
  %y = mir.rope %x, %p inv_freq(%f) {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x?x64xf32>, tensor<?xi64>, tensor<16xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @rope_c6_zero_theta(%x: tensor<1x?x64xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{'mir.rope' op requires a positive theta, got 0}}
  %y = mir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 16 : i64, theta = 0.0 : f32} : (tensor<1x?x64xf32>, tensor<?xi64>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @rope_float_positions_rejected(%x: tensor<1x?x64xf32>, %p: tensor<?xf32>) {
  // expected-error @+1 {{'mir.rope' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %y = mir.rope %x, %p {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x?x64xf32>, tensor<?xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

func.func @gather_c1_axis_out_of_range(%t: tensor<100x64xf32>, %i: tensor<?xi64>) {
  // expected-error @+1 {{'mir.gather' op axis 2 is out of range [0, 2)}}
  %e = mir.gather %t, %i {axis = 2 : i64} : (tensor<100x64xf32>, tensor<?xi64>) -> tensor<?x64xf32>
  return
}

// -----

func.func @gather_infer_c1_result_type(%t: tensor<100x64xf32>, %i: tensor<1x?xi64>) {
  // expected-error @+1 {{'mir.gather' op result type 'tensor<?x64xf32>' does not match the inferred type 'tensor<1x?x64xf32>'}}
  %e = mir.gather %t, %i : (tensor<100x64xf32>, tensor<1x?xi64>) -> tensor<?x64xf32>
  return
}

// -----

func.func @reshape_c1_element_type_changes(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.reshape' op requires the same element type}}
  %y = mir.reshape %x : (tensor<4x8xf32>) -> tensor<32xf16>
  return
}

// -----

func.func @reshape_c2_dynamic_dim_count(%x: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.reshape' op requires as many dynamic dims in the result as in the input}}
  %y = mir.reshape %x : (tensor<1x?x64xf32>) -> tensor<?x?xf32>
  return
}

// -----

func.func @reshape_c3_static_count_mismatch(%x: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.reshape' op requires equal products of the static dims, got 'tensor<1x?x64xf32>' and 'tensor<1x?x4x8xf32>'}}
  %y = mir.reshape %x : (tensor<1x?x64xf32>) -> tensor<1x?x4x8xf32>
  return
}

// -----

func.func @transpose_c1_permutation_length(%x: tensor<4x8x2xf32>) {
  // expected-error @+1 {{'mir.transpose' op permutation has 2 entries for an input of rank 3}}
  %y = mir.transpose %x {permutation = array<i64: 1, 0>} : (tensor<4x8x2xf32>) -> tensor<8x4x2xf32>
  return
}

// -----

func.func @transpose_c2_repeated_entry(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.transpose' op permutation is not a permutation of 0..1}}
  %y = mir.transpose %x {permutation = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @transpose_infer_c1_result_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.transpose' op result type 'tensor<4x8xf32>' does not match the inferred type 'tensor<8x4xf32>'}}
  %y = mir.transpose %x {permutation = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_c1_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.slice' op axis 2 is out of range [0, 2)}}
  %y = mir.slice %x {axis = 2 : i64, start = 0 : i64, size = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_c2_negative_size(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.slice' op requires a non-negative size, got -1}}
  %y = mir.slice %x {axis = 1 : i64, start = 0 : i64, size = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x0xf32>
  return
}

// -----

func.func @slice_c3_past_static_end(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.slice' op slice of 4 from 6 is out of range for a dim of 8}}
  %y = mir.slice %x {axis = 1 : i64, start = 6 : i64, size = 4 : i64} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @slice_c3_negative_start_before_static_begin(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.slice' op slice of 1 from -9 is out of range for a dim of 8}}
  %y = mir.slice %x {axis = 1 : i64, start = -9 : i64, size = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @slice_c3_negative_start_past_dynamic_end(%x: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.slice' op slice of 2 from -1 runs past the end of the axis}}
  %y = mir.slice %x {axis = 1 : i64, start = -1 : i64, size = 2 : i64} : (tensor<1x?x64xf32>) -> tensor<1x2x64xf32>
  return
}

// -----

func.func @slice_c4_zero_step(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.slice' op requires a non-zero step}}
  %y = mir.slice %x {axis = 1 : i64, start = 0 : i64, size = 2 : i64, step = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @slice_c3_step_past_static_end(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.slice' op slice of 3 from 2 with step 3 is out of range for a dim of 8}}
  %y = mir.slice %x {axis = 1 : i64, start = 2 : i64, size = 3 : i64, step = 3 : i64} : (tensor<4x8xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @slice_c3_negative_step_before_static_begin(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.slice' op slice of 3 from 3 with step -2 is out of range for a dim of 8}}
  %y = mir.slice %x {axis = 1 : i64, start = 3 : i64, size = 3 : i64, step = -2 : i64} : (tensor<4x8xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @slice_c3_negative_step_before_dynamic_begin(%x: tensor<1x?xf32>) {
  // expected-error @+1 {{'mir.slice' op slice of 3 from 2 with step -2 runs before the start of the axis}}
  %y = mir.slice %x {axis = 1 : i64, start = 2 : i64, size = 3 : i64, step = -2 : i64} : (tensor<1x?xf32>) -> tensor<1x3xf32>
  return
}

// -----

func.func @slice_c3_step_past_dynamic_end(%x: tensor<1x?xf32>) {
  // expected-error @+1 {{'mir.slice' op slice of 2 from -3 with step 4 runs past the end of the axis}}
  %y = mir.slice %x {axis = 1 : i64, start = -3 : i64, size = 2 : i64, step = 4 : i64} : (tensor<1x?xf32>) -> tensor<1x2xf32>
  return
}

// -----

func.func @slice_c3_step_overflow(%x: tensor<8xf32>) {
  // expected-error @+1 {{'mir.slice' op slice of 3 from 0 with step 9223372036854775807 overflows the axis positions}}
  %y = mir.slice %x {axis = 0 : i64, start = 0 : i64, size = 3 : i64, step = 9223372036854775807 : i64} : (tensor<8xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @split_c1_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.split' op axis -3 is out of range [-2, 2)}}
  %y:2 = mir.split %x {axis = -3 : i64, sizes = array<i64: 2, 2>} : (tensor<4x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @split_c2_no_sizes(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.split' op requires at least one size}}
  mir.split %x {axis = 0 : i64, sizes = array<i64>} : (tensor<4x8xf32>) -> ()
  return
}

// -----

func.func @split_c2_negative_size(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.split' op requires non-negative sizes, got -1}}
  %y:2 = mir.split %x {axis = 0 : i64, sizes = array<i64: 5, -1>} : (tensor<4x8xf32>) -> (tensor<5x8xf32>, tensor<0x8xf32>)
  return
}

// -----

func.func @split_c3_sizes_not_the_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.split' op sizes add up to 7, not to the dim of 8 they split}}
  %y:2 = mir.split %x {axis = -1 : i64, sizes = array<i64: 3, 4>} : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x4xf32>)
  return
}

// -----

func.func @split_infer_c1_wrong_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.split' op result type}}
  %y:2 = mir.split %x {axis = 1 : i64, sizes = array<i64: 3, 5>} : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x6xf32>)
  return
}

// -----

func.func @concat_c1_no_inputs() {
  // expected-error @+1 {{'mir.concat' op requires at least one input}}
  %y = mir.concat {axis = 0 : i64} : () -> tensor<1xf32>
  return
}

// -----

func.func @concat_c2_rank_mismatch(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'mir.concat' op requires inputs of the same rank and element type, got 'tensor<4x8xf32>' and 'tensor<8xf32>'}}
  %y = mir.concat %a, %b {axis = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<5x8xf32>
  return
}

// -----

func.func @concat_c3_axis_out_of_range(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.concat' op axis -1 is out of range [0, 2)}}
  %y = mir.concat %a, %b {axis = -1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @concat_c4_other_dim_mismatch(%a: tensor<4x8xf32>, %b: tensor<4x7xf32>) {
  // expected-error @+1 {{'mir.concat' op inputs differ in dim 1, which is not the concatenation axis}}
  %y = mir.concat %a, %b {axis = 0 : i64} : (tensor<4x8xf32>, tensor<4x7xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @concat_infer_c1_result_type(%a: tensor<?x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.concat' op result type 'tensor<8x8xf32>' does not match the inferred type 'tensor<?x8xf32>'}}
  %y = mir.concat %a, %b {axis = 0 : i64} : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @broadcast_c1_element_type_changes(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mir.broadcast' op requires the same element type}}
  %y = mir.broadcast %x : (tensor<4xf32>) -> tensor<2x4xf16>
  return
}

// -----

func.func @broadcast_c2_lower_rank(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'mir.broadcast' op cannot broadcast to a lower rank: 'tensor<2x4xf32>' to 'tensor<4xf32>'}}
  %y = mir.broadcast %x : (tensor<2x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @broadcast_c3_size_mismatch(%x: tensor<3xf32>) {
  // expected-error @+1 {{'mir.broadcast' op cannot broadcast 'tensor<3xf32>' to 'tensor<2x4xf32>'}}
  %y = mir.broadcast %x : (tensor<3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @broadcast_c4_dynamic_dim_from_one(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'mir.broadcast' op cannot broadcast 'tensor<1x4xf32>' to 'tensor<?x4xf32>'}}
  %y = mir.broadcast %x : (tensor<1x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @broadcast_c4_new_dynamic_leading_dim(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mir.broadcast' op cannot broadcast 'tensor<4xf32>' to 'tensor<?x4xf32>'}}
  %y = mir.broadcast %x : (tensor<4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @cast_c1_shape_changes(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.cast' op requires the same shape, got 'tensor<4x8xf32>' and 'tensor<8x4xf16>'}}
  %y = mir.cast %x : (tensor<4x8xf32>) -> tensor<8x4xf16>
  return
}

// -----

func.func @cast_f64_not_a_mir_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mir.cast' op result #0 must be ranked tensor of signless integer or 32-bit float or 16-bit float or bfloat16 type values}}
  %y = mir.cast %x : (tensor<4xf32>) -> tensor<4xf64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// mir.fused_matmul
//===----------------------------------------------------------------------===//

func.func @fused_matmul_c1_rank_three_weight(%x: tensor<4x64xf32>, %w: tensor<1x64x8xf32>) {
  // expected-error @+1 {{'mir.fused_matmul' op requires an input of rank >= 2 and a rank-2 weight}}
  %y = mir.fused_matmul %x, %w : (tensor<4x64xf32>, tensor<1x64x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @fused_matmul_c2_bias_element_type(%x: tensor<4x64xf32>, %w: tensor<64x8xf32>, %b: tensor<8xf16>) {
  // expected-error @+1 {{'mir.fused_matmul' op requires operands of one element type, got 'tensor<8xf16>' with input 'tensor<4x64xf32>'}}
  %y = mir.fused_matmul %x, %w bias(%b) : (tensor<4x64xf32>, tensor<64x8xf32>, tensor<8xf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @fused_matmul_c3_k_mismatch(%x: tensor<4x64xf32>, %w: tensor<8x32xf32>) {
  // expected-error @+1 {{'mir.fused_matmul' op contraction dims do not match: lhs has K = 64, rhs has K = 32}}
  %y = mir.fused_matmul %x, %w {transpose_rhs} : (tensor<4x64xf32>, tensor<8x32xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @fused_matmul_c4_bias_not_n(%x: tensor<4x64xf32>, %w: tensor<8x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'mir.fused_matmul' op bias must be [N] = [8], got 'tensor<64xf32>'}}
  %y = mir.fused_matmul %x, %w bias(%b) {transpose_rhs} : (tensor<4x64xf32>, tensor<8x64xf32>, tensor<64xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @fused_matmul_c5_residual_not_result_type(%x: tensor<4x64xf32>, %w: tensor<64x8xf32>, %r: tensor<1x8xf32>) {
  // expected-error @+1 {{'mir.fused_matmul' op residual must have the result type 'tensor<4x8xf32>', got 'tensor<1x8xf32>'}}
  %y = mir.fused_matmul %x, %w residual(%r) : (tensor<4x64xf32>, tensor<64x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Residual + norm and GLU
//===----------------------------------------------------------------------===//

func.func @fused_residual_rms_norm_c4_one_type(%x: tensor<4x64xf32>, %r: tensor<1x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'mir.fused_residual_rms_norm' op failed to verify that all of {input, residual, sum, normed} have same type}}
  %s, %n = mir.fused_residual_rms_norm %x, %r, %w : (tensor<4x64xf32>, tensor<1x64xf32>, tensor<64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>)
  return
}

// -----

func.func @fused_residual_rms_norm_c1_weight_not_last_dim(%x: tensor<4x64xf32>, %r: tensor<4x64xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'mir.fused_residual_rms_norm' op weight must be 1-D and match the last dim of the input}}
  %s, %n = mir.fused_residual_rms_norm %x, %r, %w : (tensor<4x64xf32>, tensor<4x64xf32>, tensor<4xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>)
  return
}

// -----

func.func @fused_residual_rms_norm_c2_weight_element_type(%x: tensor<4x64xf32>, %r: tensor<4x64xf32>, %w: tensor<64xf16>) {
  // expected-error @+1 {{'mir.fused_residual_rms_norm' op weight must have the element type of the input}}
  %s, %n = mir.fused_residual_rms_norm %x, %r, %w : (tensor<4x64xf32>, tensor<4x64xf32>, tensor<64xf16>) -> (tensor<4x64xf32>, tensor<4x64xf32>)
  return
}

// -----

func.func @fused_residual_rms_norm_c3_zero_epsilon(%x: tensor<4x64xf32>, %r: tensor<4x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'mir.fused_residual_rms_norm' op requires a positive epsilon, got 0}}
  %s, %n = mir.fused_residual_rms_norm %x, %r, %w {epsilon = 0.0 : f32} : (tensor<4x64xf32>, tensor<4x64xf32>, tensor<64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>)
  return
}

// -----

func.func @fused_residual_layer_norm_c1_gamma_not_last_dim(%x: tensor<4x64xf32>, %r: tensor<4x64xf32>, %g: tensor<4xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'mir.fused_residual_layer_norm' op gamma must be 1-D and match the last dim of the input}}
  %s, %n = mir.fused_residual_layer_norm %x, %r, %g, %b : (tensor<4x64xf32>, tensor<4x64xf32>, tensor<4xf32>, tensor<64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>)
  return
}

// -----

func.func @fused_residual_layer_norm_c2_beta_element_type(%x: tensor<4x64xf32>, %r: tensor<4x64xf32>, %g: tensor<64xf32>, %b: tensor<64xbf16>) {
  // expected-error @+1 {{'mir.fused_residual_layer_norm' op beta must have the element type of the input}}
  %s, %n = mir.fused_residual_layer_norm %x, %r, %g, %b : (tensor<4x64xf32>, tensor<4x64xf32>, tensor<64xf32>, tensor<64xbf16>) -> (tensor<4x64xf32>, tensor<4x64xf32>)
  return
}

// -----

func.func @fused_residual_layer_norm_c3_zero_epsilon(%x: tensor<4x64xf32>, %r: tensor<4x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'mir.fused_residual_layer_norm' op requires a positive epsilon, got 0}}
  %s, %n = mir.fused_residual_layer_norm %x, %r, %g, %b {epsilon = 0.0 : f32} : (tensor<4x64xf32>, tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>)
  return
}

// -----

func.func @fused_glu_c1_rank_zero(%x: tensor<f32>) {
  // expected-error @+1 {{'mir.fused_glu' op requires an input of rank >= 1}}
  %y = mir.fused_glu %x : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @fused_glu_c2_odd_last_dim(%x: tensor<1x?x255xf32>) {
  // expected-error @+1 {{'mir.fused_glu' op requires an even last dim (gate and up halves), got 255}}
  %y = mir.fused_glu %x : (tensor<1x?x255xf32>) -> tensor<1x?x127xf32>
  return
}

// -----

func.func @fused_glu_infer_c1_result_type(%x: tensor<1x?x256xf32>) {
  // expected-error @+1 {{'mir.fused_glu' op result type 'tensor<1x?x256xf32>' does not match the inferred type 'tensor<1x?x128xf32>'}}
  %y = mir.fused_glu %x : (tensor<1x?x256xf32>) -> tensor<1x?x256xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// mir.attention
//===----------------------------------------------------------------------===//

func.func @attention_c1_rank_four_query(%q: tensor<1x4x?x16xf32>, %k: tensor<1x?x64xf32>, %v: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.attention' op requires rank-3 query, key and value}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x4x?x16xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x4x?x16xf32>
  return
}

// -----

func.func @attention_c1_mixed_element_types(%q: tensor<1x?x64xf32>, %k: tensor<1x?x64xf16>, %v: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.attention' op requires key and value of one element type, the query's or f16/bf16 beside an f32 query}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<1x?x64xf16>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_c1_half_cache_beside_half_query(%q: tensor<1x?x64xf16>, %k: tensor<1x?x64xbf16>, %v: tensor<1x?x64xbf16>) {
  // expected-error @+1 {{'mir.attention' op requires key and value of one element type, the query's or f16/bf16 beside an f32 query}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf16>, tensor<1x?x64xbf16>, tensor<1x?x64xbf16>) -> tensor<1x?x64xf16>
  return
}

// -----

func.func @attention_c2_zero_kv_heads(%q: tensor<1x?x64xf32>, %k: tensor<1x?x64xf32>, %v: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.attention' op requires positive num_heads, num_kv_heads and head_dim, got 4, 0, 16}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 0 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_c3_kv_heads_divide_heads(%q: tensor<1x?x64xf32>, %k: tensor<1x?x48xf32>, %v: tensor<1x?x48xf32>) {
  // expected-error @+1 {{'mir.attention' op num_kv_heads (3) must divide num_heads (4)}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 3 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<1x?x48xf32>, tensor<1x?x48xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_c4_query_width(%q: tensor<1x?x32xf32>, %k: tensor<1x?x64xf32>, %v: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.attention' op query last dim must be num_heads*head_dim = 64, got 'tensor<1x?x32xf32>'}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x32xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x32xf32>
  return
}

// -----

func.func @attention_c5_kv_width(%q: tensor<1x?x64xf32>, %k: tensor<1x?x64xf32>, %v: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.attention' op key and value last dims must be num_kv_heads*head_dim = 32}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_c6_key_value_lengths(%q: tensor<1x?x64xf32>, %k: tensor<1x8x64xf32>, %v: tensor<1x9x64xf32>) {
  // expected-error @+1 {{'mir.attention' op requires one batch size and key and value of one length}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<1x8x64xf32>, tensor<1x9x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_c7_zero_scale(%q: tensor<1x?x64xf32>, %k: tensor<1x?x64xf32>, %v: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.attention' op requires a positive scale, got 0}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.0 : f32} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_c7_negative_softcap(%q: tensor<1x?x64xf32>, %k: tensor<1x?x64xf32>, %v: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.attention' op requires a non-negative softcap, got -1}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, softcap = -1.0 : f32} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_c8_sliding_window_without_window(%q: tensor<1x?x64xf32>, %k: tensor<1x?x64xf32>, %v: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.attention' op requires window > 0 exactly for mask_kind sliding_window, got window = 0 with mask_kind sliding_window}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask sliding_window>} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_c8_window_with_causal(%q: tensor<1x?x64xf32>, %k: tensor<1x?x64xf32>, %v: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.attention' op requires window > 0 exactly for mask_kind sliding_window, got window = 128 with mask_kind causal}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>, window = 128 : i64} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_c9_padding_without_mask(%q: tensor<1x?x64xf32>, %k: tensor<1x?x64xf32>, %v: tensor<1x?x64xf32>) {
  // expected-error @+1 {{'mir.attention' op requires a mask operand for mask_kind padding}}
  %o = mir.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask padding>} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_c9_mask_with_none(%q: tensor<1x?x64xf32>, %k: tensor<1x?x64xf32>, %v: tensor<1x?x64xf32>, %m: tensor<1x?xi1>) {
  // expected-error @+1 {{'mir.attention' op takes no mask operand with mask_kind none (use mask_kind padding)}}
  %o = mir.attention %q, %k, %v mask(%m) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask none>} : (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x?xi1>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_c10_mask_shape(%q: tensor<2x?x64xf32>, %k: tensor<2x8x64xf32>, %v: tensor<2x8x64xf32>, %m: tensor<2x7xi1>) {
  // expected-error @+1 {{'mir.attention' op mask must be [B, Tk] = [2, 8], got 'tensor<2x7xi1>'}}
  %o = mir.attention %q, %k, %v mask(%m) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask padding>} : (tensor<2x?x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x7xi1>) -> tensor<2x?x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// mir.attention_block
//===----------------------------------------------------------------------===//

func.func @attention_block_c1_rank_two_input(%x: tensor<?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>) {
  // expected-error @+1 {{'mir.attention_block' op requires a rank-3 input and rank-2 w_qkv and w_o}}
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @attention_block_c3_kv_heads_divide_heads(%x: tensor<1x?x64xf32>, %wqkv: tensor<160x64xf32>, %wo: tensor<64x64xf32>) {
  // expected-error @+1 {{'mir.attention_block' op num_kv_heads (3) must divide num_heads (4)}}
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 4 : i64, num_kv_heads = 3 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<160x64xf32>, tensor<64x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c4_w_qkv_rows(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>) {
  // expected-error @+1 {{'mir.attention_block' op w_qkv must be [(num_heads + 2*num_kv_heads)*head_dim, H] = [128, 64], got 'tensor<192x64xf32>'}}
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c5_w_o_columns(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x32xf32>) {
  // expected-error @+1 {{'mir.attention_block' op w_o must be [H_out, num_heads*head_dim = 64], got 'tensor<64x32xf32>'}}
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x32xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c6_qkv_bias_size(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'mir.attention_block' op qkv_bias must be [(num_heads + 2*num_kv_heads)*head_dim] = [192], got 'tensor<64xf32>'}}
  %y = mir.attention_block %x, %wqkv, %wo qkv_bias(%b) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c6_out_bias_size(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<32x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'mir.attention_block' op out_bias must be [H_out] = [32], got 'tensor<64xf32>'}}
  %y = mir.attention_block %x, %wqkv, %wo out_bias(%b) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<32x64xf32>, tensor<64xf32>) -> tensor<1x?x32xf32>
  return
}

// -----

func.func @attention_block_c7_zero_scale(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>) {
  // expected-error @+1 {{'mir.attention_block' op requires a positive scale, got 0}}
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.0 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c9_padding_without_mask(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>) {
  // expected-error @+1 {{'mir.attention_block' op requires a mask operand for mask_kind padding}}
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask padding>} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c10_mask_shape(%x: tensor<2x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>, %m: tensor<?xi1>) {
  // expected-error @+1 {{'mir.attention_block' op mask must be [B, Tk] = [2, ?], got 'tensor<?xi1>'}}
  %y = mir.attention_block %x, %wqkv, %wo mask(%m) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask padding>} : (tensor<2x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>, tensor<?xi1>) -> tensor<2x?x64xf32>
  return
}

// -----

func.func @attention_block_c11_q_norm_without_k_norm(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>, %qn: tensor<16xf32>) {
  // expected-error @+1 {{'mir.attention_block' op requires q_norm and k_norm together}}
  %y = mir.attention_block %x, %wqkv, %wo q_norm(%qn) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>, tensor<16xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c11_k_norm_size(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>, %qn: tensor<16xf32>, %kn: tensor<64xf32>) {
  // expected-error @+1 {{'mir.attention_block' op k_norm must be [head_dim] = [16], got 'tensor<64xf32>'}}
  %y = mir.attention_block %x, %wqkv, %wo q_norm(%qn) k_norm(%kn) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>, tensor<16xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c12_odd_rotary_dim(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{'mir.attention_block' op requires an even rotary_dim in (0, head_dim = 16], got 5}}
  %y = mir.attention_block %x, %wqkv, %wo positions(%p) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, rotary_dim = 5 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>, tensor<?xi64>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c13_rope_without_positions(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>) {
  // expected-error @+1 {{'mir.attention_block' op requires positions exactly when rotary_dim > 0, got rotary_dim = 16 without positions}}
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, rotary_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c13_positions_without_rope(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{'mir.attention_block' op requires positions exactly when rotary_dim > 0, got rotary_dim = 0 with positions}}
  %y = mir.attention_block %x, %wqkv, %wo positions(%p) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>, tensor<?xi64>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c13_positions_shape(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>, %p: tensor<1x1x?xi64>) {
  // expected-error @+1 {{'mir.attention_block' op positions must be [B, T] or [T] = [1, ?], got 'tensor<1x1x?xi64>'}}
  %y = mir.attention_block %x, %wqkv, %wo positions(%p) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, rotary_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>, tensor<1x1x?xi64>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c14_inv_freq_without_rope(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>, %f: tensor<8xf32>) {
  // expected-error @+1 {{'mir.attention_block' op inv_freq requires rotary_dim > 0}}
  %y = mir.attention_block %x, %wqkv, %wo inv_freq(%f) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>, tensor<8xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c14_inv_freq_size(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>, %p: tensor<?xi64>, %f: tensor<16xf32>) {
  // expected-error @+1 {{'mir.attention_block' op inv_freq must be [rotary_dim / 2] = [8], got 'tensor<16xf32>'}}
  %y = mir.attention_block %x, %wqkv, %wo positions(%p) inv_freq(%f) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, rotary_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>, tensor<?xi64>, tensor<16xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c15_zero_rope_theta(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{'mir.attention_block' op requires a positive rope_theta, got 0}}
  %y = mir.attention_block %x, %wqkv, %wo positions(%p) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, rotary_dim = 16 : i64, rope_theta = 0.0 : f32, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>, tensor<?xi64>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c15_zero_norm_epsilon(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<64x64xf32>) {
  // expected-error @+1 {{'mir.attention_block' op requires a positive norm_epsilon, got 0}}
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32, norm_epsilon = 0.0 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<64x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c16_weight_element_type(%x: tensor<1x?x64xf16>, %wqkv: tensor<192x64xbf16>, %wo: tensor<64x64xf16>) {
  // expected-error @+1 {{'mir.attention_block' op requires weights of the input's element type, got 'tensor<192x64xbf16>' with input 'tensor<1x?x64xf16>'}}
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf16>, tensor<192x64xbf16>, tensor<64x64xf16>) -> tensor<1x?x64xf16>
  return
}

// -----

func.func @attention_block_c16_stored_norm(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64x!mir.quant<q8_0>>, %wo: tensor<64x64xf32>, %n: tensor<16xf16>) {
  // expected-error @+1 {{'mir.attention_block' op requires weights of the input's element type, got 'tensor<16xf16>' with input 'tensor<1x?x64xf32>'}}
  %y = mir.attention_block %x, %wqkv, %wo q_norm(%n) k_norm(%n) {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64x!mir.quant<q8_0>>, tensor<64x64xf32>, tensor<16xf16>, tensor<16xf16>) -> tensor<1x?x64xf32>
  return
}

// -----

func.func @attention_block_c16_stored_blocks(%x: tensor<1x?x48xf32>, %wqkv: tensor<144x48x!mir.quant<q4_0>>, %wo: tensor<48x48xf32>) {
  // expected-error @+1 {{'mir.attention_block' op w_qkv 'tensor<144x48x!mir.quant<q4_0>>' must have a last dimension that is a multiple of the block size 32}}
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 3 : i64, num_kv_heads = 3 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x48xf32>, tensor<144x48x!mir.quant<q4_0>>, tensor<48x48xf32>) -> tensor<1x?x48xf32>
  return
}

// -----

func.func @attention_block_infer_c1_result_type(%x: tensor<1x?x64xf32>, %wqkv: tensor<192x64xf32>, %wo: tensor<32x64xf32>) {
  // expected-error @+1 {{'mir.attention_block' op result type 'tensor<1x?x64xf32>' does not match the inferred type 'tensor<1x?x32xf32>'}}
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x?x64xf32>, tensor<192x64xf32>, tensor<32x64xf32>) -> tensor<1x?x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// mir.elementwise and mir.yield
//===----------------------------------------------------------------------===//

func.func @elementwise_c1_no_inputs() {
  // expected-error @+1 {{'mir.elementwise' op requires at least one input}}
  %y = mir.elementwise {
  ^bb0:
    %c = arith.constant 1.0 : f32
    mir.yield %c : f32
  } : () -> tensor<4xf32>
  return
}

// -----

func.func @elementwise_c2_not_broadcastable(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{'mir.elementwise' op inputs are not broadcast-compatible}}
  %y = mir.elementwise %a, %b {
  ^bb0(%x: f32, %z: f32):
    mir.yield %x : f32
  } : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @elementwise_c2_result_not_broadcast_shape(%a: tensor<4x1xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'mir.elementwise' op result shape must be the broadcast of the input shapes, 'tensor<4x8xf32>', got 'tensor<4x1xf32>'}}
  %y = mir.elementwise %a, %b {
  ^bb0(%x: f32, %z: f32):
    mir.yield %x : f32
  } : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @elementwise_c3_argument_count(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'mir.elementwise' op body must have one argument per input (2), got 1}}
  %y = mir.elementwise %a, %b {
  ^bb0(%x: f32):
    mir.yield %x : f32
  } : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @elementwise_c3_argument_type(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'mir.elementwise' op body argument 1 must have the element type of input 1, got 'f32' for 'tensor<4xf16>'}}
  %y = mir.elementwise %a, %b {
  ^bb0(%x: f32, %z: f32):
    mir.yield %x : f32
  } : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @elementwise_c4_non_scalar_dialect_op(%a: tensor<4xf32>) {
  // expected-error @+1 {{'mir.elementwise' op body may hold only scalar arith and math ops without regions, got mir.constant}}
  %y = mir.elementwise %a {
  ^bb0(%x: f32):
    %c = mir.constant dense<1.0> : tensor<4xf32>
    mir.yield %x : f32
  } : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @elementwise_c4_vector_arith_op(%a: tensor<4xf32>) {
  // expected-error @+1 {{'mir.elementwise' op body may hold only scalar arith and math ops without regions, got arith.constant}}
  %y = mir.elementwise %a {
  ^bb0(%x: f32):
    %c = arith.constant dense<1.0> : vector<2xf32>
    mir.yield %x : f32
  } : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @elementwise_c5_yield_type(%a: tensor<4xf32>) {
  %y = mir.elementwise %a {
  ^bb0(%x: f32):
    %h = arith.truncf %x : f32 to f16
    // expected-error @+1 {{'mir.yield' op yields 'f16' but the result element type is 'f32'}}
    mir.yield %h : f16
  } : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @elementwise_isolated_from_above(%a: tensor<4xf32>, %s: f32) {
  // expected-note @+1 {{required by region isolation constraints}}
  %y = mir.elementwise %a {
  ^bb0(%x: f32):
    // expected-error @+1 {{'arith.addf' op using value defined outside the region}}
    %r = arith.addf %x, %s : f32
    mir.yield %r : f32
  } : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @yield_outside_elementwise(%x: f32) {
  // expected-error @+1 {{'mir.yield' op expects parent op 'mir.elementwise'}}
  mir.yield %x : f32
}

// -----

func.func @param_c7_partial_block() {
  // expected-error @+1 {{a parameter of type 'tensor<4x48x!mir.quant<q4_0>>' must have a last dimension that is a multiple of the block size 32}}
  %w = mir.param "w" : tensor<4x48x!mir.quant<q4_0>>
  return
}

// -----

func.func @param_c7_k_quant_block() {
  // expected-error @+1 {{must have a last dimension that is a multiple of the block size 256}}
  %w = mir.param "w" : tensor<4x128x!mir.quant<q4_K>>
  return
}

// -----

func.func @param_c7_concat_blocked_dim() {
  // expected-error @+1 {{concatenates ggml blocks along the blocked (innermost) dimension}}
  %w = mir.param "w" {sources = ["a", "b"], concat_axis = 1 : i64, source_sizes = array<i64: 32, 32>} : tensor<4x64x!mir.quant<q8_0>>
  return
}

// -----

func.func @matmul_c3_low_precision_untransposed(%x: tensor<4x64xf32>, %w: tensor<64x32xf16>) {
  // expected-error @+1 {{requires lhs and rhs of the same element type (or an [N, K] rhs stored in f16, bf16 or ggml blocks with transpose_rhs)}}
  %y = mir.matmul %x, %w : (tensor<4x64xf32>, tensor<64x32xf16>) -> tensor<4x32xf32>
  return
}

// -----

func.func @dequantize_c1_shape(%w: tensor<4x64xbf16>) {
  // expected-error @+1 {{requires equal shapes}}
  %d = mir.dequantize %w : (tensor<4x64xbf16>) -> tensor<4x32xf32>
  return
}

// -----

func.func @dequantize_c2_not_stored_lower(%w: tensor<4x64xf32>) {
  // expected-error @+1 {{widens a weight stored in f16, bf16 or ggml blocks to a float type at least as wide, got 'f32' to 'f16'}}
  %d = mir.dequantize %w : (tensor<4x64xf32>) -> tensor<4x64xf16>
  return
}

// -----

func.func @gather_c2_quant_axis(%t: tensor<2x64x!mir.quant<q8_0>>, %i: tensor<3xi32>) {
  // expected-error @+1 {{gathers a table of ggml blocks along axis 0 of a rank-2 table only}}
  %g = mir.gather %t, %i {axis = 1 : i64} : (tensor<2x64x!mir.quant<q8_0>>, tensor<3xi32>) -> tensor<2x3xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Rounding and sign
//===----------------------------------------------------------------------===//

func.func @abs_integer_operand(%x: tensor<4xi32>) {
  // expected-error @+1 {{'mir.abs' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xi32>'}}
  %y = mir.abs %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @floor_result_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mir.floor' op requires the same type for all operands and results}}
  %y = mir.floor %x : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @round_result_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mir.round' op requires the same type for all operands and results}}
  %y = mir.round %x : (tensor<4xf32>) -> tensor<1x4xf32>
  return
}

// -----

func.func @sign_integer_operand(%x: tensor<2xi1>) {
  // expected-error @+1 {{'mir.sign' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %y = mir.sign %x : (tensor<2xi1>) -> tensor<2xi1>
  return
}

// -----

func.func @clip_c1_nan_bound(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mir.clip' op bounds must not be NaN}}
  %y = mir.clip %x {min = 0x7FC00000 : f32, max = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @clip_c1_min_above_max(%x: tensor<4xf32>) {
  // expected-error @+1 {{'mir.clip' op min 2.000000e+00 is above max 1.000000e+00}}
  %y = mir.clip %x {min = 2.0 : f32, max = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @clip_integer_operand(%x: tensor<4xi32>) {
  // expected-error @+1 {{'mir.clip' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %y = mir.clip %x {min = 0.0 : f32, max = 1.0 : f32} : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @log_softmax_c1_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.log_softmax' op axis 2 is out of range [-2, 2)}}
  %y = mir.log_softmax %x {axis = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_min_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.reduce_min' op axis 2 is out of range [0, 2)}}
  %y = mir.reduce_min %x {axes = array<i64: 2>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_prod_repeated_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.reduce_prod' op axis 1 appears more than once}}
  %y = mir.reduce_prod %x {axes = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @argmax_c1_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.argmax' op axis -3 is out of range [-2, 2)}}
  %y = mir.argmax %x {axis = -3 : i64} : (tensor<4x8xf32>) -> tensor<4xi64>
  return
}

// -----

func.func @argmin_result_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.argmin' op result type 'tensor<8xi64>' does not match the inferred type 'tensor<4xi64>'}}
  %y = mir.argmin %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<8xi64>
  return
}

// -----

func.func @argmax_i32_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.argmax' op result #0 must be ranked tensor of 64-bit signless integer values}}
  %y = mir.argmax %x : (tensor<4x8xf32>) -> tensor<4xi32>
  return
}

// -----

func.func @argmax_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{'mir.argmax' op axis -1 is out of range [0, 0)}}
  %y = mir.argmax %x : (tensor<f32>) -> tensor<i64>
  return
}

// -----

func.func @cumsum_c1_axis_out_of_range(%x: tensor<4x8xi32>) {
  // expected-error @+1 {{'mir.cumsum' op axis 2 is out of range [-2, 2)}}
  %y = mir.cumsum %x {axis = 2 : i64} : (tensor<4x8xi32>) -> tensor<4x8xi32>
  return
}

// -----

func.func @cumsum_result_type(%x: tensor<4x8xi32>) {
  // expected-error @+1 {{'mir.cumsum' op requires the same type for all operands and results}}
  %y = mir.cumsum %x {axis = 1 : i64} : (tensor<4x8xi32>) -> tensor<4x8xi64>
  return
}

// -----

func.func @tile_c1_multiples_per_dim(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'mir.tile' op expects 2 multiples (one per dim), got 1}}
  %y = mir.tile %x {multiples = array<i64: 3>} : (tensor<2x5xf32>) -> tensor<2x15xf32>
  return
}

// -----

func.func @tile_c1_zero_multiple(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'mir.tile' op multiples must be >= 1, got 0}}
  %y = mir.tile %x {multiples = array<i64: 1, 0>} : (tensor<2x5xf32>) -> tensor<2x0xf32>
  return
}

// -----

func.func @tile_result_shape(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'mir.tile' op result type 'tensor<2x10xf32>' does not match the inferred type 'tensor<2x15xf32>'}}
  %y = mir.tile %x {multiples = array<i64: 1, 3>} : (tensor<2x5xf32>) -> tensor<2x10xf32>
  return
}

// -----

func.func @pad_c1_pads_per_dim(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'mir.pad' op expects 2 low and high pads (one per dim), got 2 and 1}}
  %y = mir.pad %x {low = array<i64: 0, 1>, high = array<i64: 1>} : (tensor<2x5xf32>) -> tensor<3x6xf32>
  return
}

// -----

func.func @pad_c1_negative(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'mir.pad' op pads must be >= 0, got -1}}
  %y = mir.pad %x {low = array<i64: 0, -1>, high = array<i64: 0, 0>} : (tensor<2x5xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @pad_c2_nan_integer(%x: tensor<2x5xi32>) {
  // expected-error @+1 {{'mir.pad' op pads an integer tensor with NaN}}
  %y = mir.pad %x {low = array<i64: 0, 0>, high = array<i64: 0, 1>, value = 0x7FF8000000000000 : f64} : (tensor<2x5xi32>) -> tensor<2x6xi32>
  return
}

// -----

func.func @one_hot_c1_depth(%i: tensor<4xi64>) {
  // expected-error @+1 {{'mir.one_hot' op depth must be >= 1, got 0}}
  %y = mir.one_hot %i {depth = 0 : i64} : (tensor<4xi64>) -> tensor<4x0xf32>
  return
}

// -----

func.func @one_hot_c2_axis(%i: tensor<4xi64>) {
  // expected-error @+1 {{'mir.one_hot' op axis 2 is out of range [-2, 2)}}
  %y = mir.one_hot %i {depth = 3 : i64, axis = 2 : i64} : (tensor<4xi64>) -> tensor<4x3xf32>
  return
}

// -----

func.func @one_hot_c3_shape(%i: tensor<4xi64>) {
  // expected-error @+1 {{'mir.one_hot' op result type 'tensor<3x4xf32>' does not match the shape 'tensor<4x3xf32>'}}
  %y = mir.one_hot %i {depth = 3 : i64} : (tensor<4xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @one_hot_float_indices(%i: tensor<4xf32>) {
  // expected-error @+1 {{'mir.one_hot' op operand #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %y = mir.one_hot %i {depth = 3 : i64} : (tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @argmax_c2_empty_axis(%x: tensor<4x0xf32>) {
  // expected-error @+1 {{'mir.argmax' op takes the index over an empty axis 1}}
  %y = mir.argmax %x {axis = 1 : i64} : (tensor<4x0xf32>) -> tensor<4xi64>
  return
}

// -----

func.func @round_to_c1_not_16_bit(%x: tensor<2x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'mir.rms_norm' op round_to must be f16 or bf16, got 'f32'}}
  %y = mir.rms_norm %x, %w {round_to = f32} : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
  return
}

// -----

func.func @round_to_c1_not_f32(%x: tensor<2x64xf16>, %g: tensor<64xf16>) {
  // expected-error @+1 {{'mir.layer_norm' op round_to rounds f32 results, got 'tensor<2x64xf16>'}}
  %y = mir.layer_norm %x, %g, %g {round_to = bf16} : (tensor<2x64xf16>, tensor<64xf16>, tensor<64xf16>) -> tensor<2x64xf16>
  return
}

// -----

func.func @round_to_c1_glu(%x: tensor<2x64xf32>) {
  // expected-error @+1 {{'mir.fused_glu' op round_to must be f16 or bf16, got 'i8'}}
  %y = mir.fused_glu %x {round_to = i8} : (tensor<2x64xf32>) -> tensor<2x32xf32>
  return
}

// -----

func.func @round_to_c1_fused_matmul(%x: tensor<2x64xf16>, %w: tensor<32x64xf16>) {
  // expected-error @+1 {{'mir.fused_matmul' op round_to rounds f32 results, got 'tensor<2x32xf16>'}}
  %y = mir.fused_matmul %x, %w {transpose_rhs, round_to = bf16} : (tensor<2x64xf16>, tensor<32x64xf16>) -> tensor<2x32xf16>
  return
}

// -----

func.func @round_to_c1_attention_block(%x: tensor<1x4x8xf32>, %wqkv: tensor<24x8xf32>, %wo: tensor<8x8xf32>) {
  // expected-error @+1 {{'mir.attention_block' op round_to must be f16 or bf16, got 'f64'}}
  %y = mir.attention_block %x, %wqkv, %wo {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, round_to = f64} : (tensor<1x4x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  return
}
