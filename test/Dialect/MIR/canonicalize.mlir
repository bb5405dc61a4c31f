// RUN: rlx-opt %s -canonicalize | FileCheck %s

// Folds and canonicalization patterns of the MIR ops, each with the
// `negative_` cases where it must not fire.

//===----------------------------------------------------------------------===//
// Arithmetic identities
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @add_zero_folds
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x64xf32>)
// CHECK-NEXT: return %[[X]]
func.func @add_zero_folds(%x: tensor<1x?x64xf32>) -> tensor<1x?x64xf32> {
  %zero = mir.constant dense<0.0> : tensor<64xf32>
  %y = mir.add %x, %zero : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @add_zero_on_the_left_folds
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @add_zero_on_the_left_folds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = mir.constant dense<0.0> : tensor<f32>
  %y = mir.add %zero, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @sub_zero_folds
// CHECK-SAME: (%[[X:.*]]: tensor<4xi64>)
// CHECK-NEXT: return %[[X]]
func.func @sub_zero_folds(%x: tensor<4xi64>) -> tensor<4xi64> {
  %zero = mir.constant dense<0> : tensor<4xi64>
  %y = mir.sub %x, %zero : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %y : tensor<4xi64>
}

// CHECK-LABEL: func.func @mul_one_folds
// CHECK-SAME: (%[[X:.*]]: tensor<2x?xbf16>)
// CHECK-NEXT: return %[[X]]
func.func @mul_one_folds(%x: tensor<2x?xbf16>) -> tensor<2x?xbf16> {
  %one = mir.constant dense<1.0> : tensor<bf16>
  %y = mir.mul %x, %one : (tensor<2x?xbf16>, tensor<bf16>) -> tensor<2x?xbf16>
  return %y : tensor<2x?xbf16>
}

// CHECK-LABEL: func.func @div_one_folds
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @div_one_folds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = mir.constant dense<1.0> : tensor<4xf32>
  %y = mir.div %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @negative_add_zero_that_broadcasts_x
// CHECK: %[[Y:.*]] = mir.add
// CHECK-NEXT: return %[[Y]]
func.func @negative_add_zero_that_broadcasts_x(%x: tensor<64xf32>) -> tensor<4x64xf32> {
  %zero = mir.constant dense<0.0> : tensor<4x64xf32>
  %y = mir.add %x, %zero : (tensor<64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// CHECK-LABEL: func.func @negative_add_non_splat_constant
// CHECK: mir.add
func.func @negative_add_non_splat_constant(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = mir.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %y = mir.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// CHECK-LABEL: func.func @negative_mul_by_two
// CHECK: mir.mul
func.func @negative_mul_by_two(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = mir.constant dense<2.0> : tensor<4xf32>
  %y = mir.mul %x, %two : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @negative_zero_minus_x
// CHECK: mir.sub
func.func @negative_zero_minus_x(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = mir.constant dense<0.0> : tensor<4xf32>
  %y = mir.sub %zero, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @negative_one_over_x
// CHECK: mir.div
func.func @negative_one_over_x(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = mir.constant dense<1.0> : tensor<4xf32>
  %y = mir.div %one, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @neg_neg_folds
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @neg_neg_folds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mir.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = mir.neg %a : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// CHECK-LABEL: func.func @negative_single_neg
// CHECK: mir.neg
func.func @negative_single_neg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mir.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// mir.reshape
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reshape_identity_folds
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x64xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_identity_folds(%x: tensor<1x?x64xf32>) -> tensor<1x?x64xf32> {
  %y = mir.reshape %x : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @reshape_of_reshape_is_one_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x64xf32>)
// CHECK-NEXT: %[[Y:.*]] = mir.reshape %[[X]] : (tensor<1x?x64xf32>) -> tensor<?x4x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @reshape_of_reshape_is_one_reshape(%x: tensor<1x?x64xf32>) -> tensor<?x4x16xf32> {
  %a = mir.reshape %x : (tensor<1x?x64xf32>) -> tensor<1x?x4x16xf32>
  %b = mir.reshape %a : (tensor<1x?x4x16xf32>) -> tensor<?x4x16xf32>
  return %b : tensor<?x4x16xf32>
}

// CHECK-LABEL: func.func @reshape_round_trip_folds_away
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x64xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip_folds_away(%x: tensor<1x?x64xf32>) -> tensor<1x?x64xf32> {
  %a = mir.reshape %x : (tensor<1x?x64xf32>) -> tensor<1x?x4x16xf32>
  %b = mir.reshape %a : (tensor<1x?x4x16xf32>) -> tensor<1x?x64xf32>
  return %b : tensor<1x?x64xf32>
}

// CHECK-LABEL: func.func @reshape_of_constant_folds
// CHECK-NEXT: %[[C:.*]] = mir.constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi32>
// CHECK-NEXT: return %[[C]]
func.func @reshape_of_constant_folds() -> tensor<2x2xi32> {
  %c = mir.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %y = mir.reshape %c : (tensor<4xi32>) -> tensor<2x2xi32>
  return %y : tensor<2x2xi32>
}

// CHECK-LABEL: func.func @negative_reshape_single
// CHECK: mir.reshape
func.func @negative_reshape_single(%x: tensor<1x?x64xf32>) -> tensor<1x?x4x16xf32> {
  %y = mir.reshape %x : (tensor<1x?x64xf32>) -> tensor<1x?x4x16xf32>
  return %y : tensor<1x?x4x16xf32>
}

//===----------------------------------------------------------------------===//
// mir.transpose
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @transpose_identity_folds
// CHECK-SAME: (%[[X:.*]]: tensor<2x?xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_identity_folds(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %y = mir.transpose %x {permutation = array<i64: 0, 1>} : (tensor<2x?xf32>) -> tensor<2x?xf32>
  return %y : tensor<2x?xf32>
}

// CHECK-LABEL: func.func @transpose_of_transpose_composes
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[Y:.*]] = mir.transpose %[[X]] {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[Y]]
func.func @transpose_of_transpose_composes(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %a = mir.transpose %x {permutation = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = mir.transpose %a {permutation = array<i64: 2, 1, 0>} : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  return %b : tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @transpose_pair_cancels
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x4x16xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_pair_cancels(%x: tensor<1x?x4x16xf32>) -> tensor<1x?x4x16xf32> {
  %a = mir.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x16xf32>) -> tensor<1x4x?x16xf32>
  %b = mir.transpose %a {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x4x?x16xf32>) -> tensor<1x?x4x16xf32>
  return %b : tensor<1x?x4x16xf32>
}

// CHECK-LABEL: func.func @negative_transpose_single
// CHECK: mir.transpose
func.func @negative_transpose_single(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %y = mir.transpose %x {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

//===----------------------------------------------------------------------===//
// mir.slice
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @slice_full_range_folds
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]], %[[X]]
func.func @slice_full_range_folds(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %a = mir.slice %x {axis = 1 : i64, start = 0 : i64, size = 8 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = mir.slice %x {axis = 1 : i64, start = -8 : i64, size = 8 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @slice_of_slice_adds_starts
// CHECK-SAME: (%[[X:.*]]: tensor<4x?xf32>)
// CHECK-NEXT: %[[Y:.*]] = mir.slice %[[X]] {axis = 1 : i64, size = 2 : i64, start = 5 : i64} : (tensor<4x?xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: return %[[Y]]
func.func @slice_of_slice_adds_starts(%x: tensor<4x?xf32>) -> tensor<4x2xf32> {
  %a = mir.slice %x {axis = 1 : i64, start = 2 : i64, size = 6 : i64} : (tensor<4x?xf32>) -> tensor<4x6xf32>
  %b = mir.slice %a {axis = 1 : i64, start = -3 : i64, size = 2 : i64} : (tensor<4x6xf32>) -> tensor<4x2xf32>
  return %b : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @slice_of_slice_negative_inner_start_static_dim
// CHECK-SAME: (%[[X:.*]]: tensor<10xf32>)
// CHECK-NEXT: %[[Y:.*]] = mir.slice %[[X]] {axis = 0 : i64, size = 1 : i64, start = 7 : i64}
// CHECK-NEXT: return %[[Y]]
func.func @slice_of_slice_negative_inner_start_static_dim(%x: tensor<10xf32>) -> tensor<1xf32> {
  %a = mir.slice %x {axis = 0 : i64, start = -4 : i64, size = 3 : i64} : (tensor<10xf32>) -> tensor<3xf32>
  %b = mir.slice %a {axis = 0 : i64, start = 1 : i64, size = 1 : i64} : (tensor<3xf32>) -> tensor<1xf32>
  return %b : tensor<1xf32>
}

// CHECK-LABEL: func.func @negative_slice_of_slice_other_axis
// CHECK: %[[A:.*]] = mir.slice %{{.*}} {axis = 0 : i64
// CHECK: mir.slice %[[A]] {axis = 1 : i64
func.func @negative_slice_of_slice_other_axis(%x: tensor<4x8xf32>) -> tensor<2x2xf32> {
  %a = mir.slice %x {axis = 0 : i64, start = 1 : i64, size = 2 : i64} : (tensor<4x8xf32>) -> tensor<2x8xf32>
  %b = mir.slice %a {axis = 1 : i64, start = 3 : i64, size = 2 : i64} : (tensor<2x8xf32>) -> tensor<2x2xf32>
  return %b : tensor<2x2xf32>
}

// CHECK-LABEL: func.func @negative_slice_of_slice_negative_start_dynamic_dim
// CHECK: %[[A:.*]] = mir.slice %{{.*}} {axis = 1 : i64, size = 4 : i64, start = -4 : i64}
// CHECK: mir.slice %[[A]] {axis = 1 : i64, size = 1 : i64, start = 1 : i64}
func.func @negative_slice_of_slice_negative_start_dynamic_dim(%x: tensor<1x?xf32>) -> tensor<1x1xf32> {
  %a = mir.slice %x {axis = 1 : i64, start = -4 : i64, size = 4 : i64} : (tensor<1x?xf32>) -> tensor<1x4xf32>
  %b = mir.slice %a {axis = 1 : i64, start = 1 : i64, size = 1 : i64} : (tensor<1x4xf32>) -> tensor<1x1xf32>
  return %b : tensor<1x1xf32>
}

// CHECK-LABEL: func.func @negative_slice_partial_range
// CHECK: mir.slice
func.func @negative_slice_partial_range(%x: tensor<4x8xf32>) -> tensor<4x7xf32> {
  %a = mir.slice %x {axis = 1 : i64, start = 1 : i64, size = 7 : i64} : (tensor<4x8xf32>) -> tensor<4x7xf32>
  return %a : tensor<4x7xf32>
}

// CHECK-LABEL: func.func @negative_slice_whole_dynamic_dim_unknown
// CHECK: mir.slice
func.func @negative_slice_whole_dynamic_dim_unknown(%x: tensor<?xf32>) -> tensor<1xf32> {
  %a = mir.slice %x {axis = 0 : i64, start = 0 : i64, size = 1 : i64} : (tensor<?xf32>) -> tensor<1xf32>
  return %a : tensor<1xf32>
}

// CHECK-LABEL: func.func @negative_slice_whole_axis_reversed
// CHECK: mir.slice %{{.*}} {axis = 0 : i64, size = 4 : i64, start = 3 : i64, step = -1 : i64}
func.func @negative_slice_whole_axis_reversed(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mir.slice %x {axis = 0 : i64, start = 3 : i64, size = 4 : i64, step = -1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// CHECK-LABEL: func.func @slice_of_one_element_drops_step
// CHECK: mir.slice %{{.*}} {axis = 0 : i64, size = 1 : i64, start = 6 : i64} :
func.func @slice_of_one_element_drops_step(%x: tensor<8xf32>) -> tensor<1xf32> {
  %a = mir.slice %x {axis = 0 : i64, start = 6 : i64, size = 1 : i64, step = -3 : i64} : (tensor<8xf32>) -> tensor<1xf32>
  return %a : tensor<1xf32>
}

// CHECK-LABEL: func.func @slice_of_slice_multiplies_steps
// CHECK-SAME: (%[[X:.*]]: tensor<3x?xf32>)
// CHECK-NEXT: %[[Y:.*]] = mir.slice %[[X]] {axis = 1 : i64, size = 2 : i64, start = 7 : i64, step = -4 : i64} : (tensor<3x?xf32>) -> tensor<3x2xf32>
func.func @slice_of_slice_multiplies_steps(%x: tensor<3x?xf32>) -> tensor<3x2xf32> {
  // Inner: 9, 7, 5, 3, 1; outer: from its second element, every other one.
  %a = mir.slice %x {axis = 1 : i64, start = 9 : i64, size = 5 : i64, step = -2 : i64} : (tensor<3x?xf32>) -> tensor<3x5xf32>
  %b = mir.slice %a {axis = 1 : i64, start = -4 : i64, size = 2 : i64, step = 2 : i64} : (tensor<3x5xf32>) -> tensor<3x2xf32>
  return %b : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @negative_slice_of_slice_empty_stepped
// CHECK: %[[A:.*]] = mir.slice %{{.*}} {axis = 0 : i64, size = 3 : i64, start = 2 : i64, step = -1 : i64}
// CHECK: mir.slice %[[A]] {axis = 0 : i64, size = 0 : i64, start = 3 : i64}
func.func @negative_slice_of_slice_empty_stepped(%x: tensor<8xf32>) -> tensor<0xf32> {
  %a = mir.slice %x {axis = 0 : i64, start = 2 : i64, size = 3 : i64, step = -1 : i64} : (tensor<8xf32>) -> tensor<3xf32>
  %b = mir.slice %a {axis = 0 : i64, start = 3 : i64, size = 0 : i64} : (tensor<3xf32>) -> tensor<0xf32>
  return %b : tensor<0xf32>
}

// CHECK-LABEL: func.func @split_single_piece_folds
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @split_single_piece_folds(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = mir.split %x {axis = 1 : i64, sizes = array<i64: 8>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @negative_split_single_piece_dynamic_dim
// CHECK: mir.split
func.func @negative_split_single_piece_dynamic_dim(%x: tensor<?x8xf32>) -> tensor<3x8xf32> {
  %a = mir.split %x {axis = 0 : i64, sizes = array<i64: 3>} : (tensor<?x8xf32>) -> tensor<3x8xf32>
  return %a : tensor<3x8xf32>
}

//===----------------------------------------------------------------------===//
// mir.concat, mir.broadcast, mir.cast
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @concat_single_input_folds
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @concat_single_input_folds(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
  %y = mir.concat %x {axis = 1 : i64} : (tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}

// CHECK-LABEL: func.func @negative_concat_two_inputs
// CHECK: mir.concat
func.func @negative_concat_two_inputs(%x: tensor<2xf32>) -> tensor<4xf32> {
  %y = mir.concat %x, %x {axis = 0 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @broadcast_same_type_folds
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @broadcast_same_type_folds(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = mir.broadcast %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @broadcast_of_splat_constant_folds
// CHECK-NEXT: %[[C:.*]] = mir.constant dense<2.000000e+00> : tensor<3x4xf32>
// CHECK-NEXT: return %[[C]]
func.func @broadcast_of_splat_constant_folds() -> tensor<3x4xf32> {
  %c = mir.constant dense<2.0> : tensor<4xf32>
  %y = mir.broadcast %c : (tensor<4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @negative_broadcast_to_larger_shape
// CHECK: mir.broadcast
func.func @negative_broadcast_to_larger_shape(%x: tensor<4xf32>) -> tensor<3x4xf32> {
  %y = mir.broadcast %x : (tensor<4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @cast_same_type_folds
// CHECK-SAME: (%[[X:.*]]: tensor<4xf16>)
// CHECK-NEXT: return %[[X]]
func.func @cast_same_type_folds(%x: tensor<4xf16>) -> tensor<4xf16> {
  %y = mir.cast %x : (tensor<4xf16>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// CHECK-LABEL: func.func @negative_cast_changes_element_type
// CHECK: mir.cast
func.func @negative_cast_changes_element_type(%x: tensor<4xf16>) -> tensor<4xf32> {
  %y = mir.cast %x : (tensor<4xf16>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Dead pure ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @unused_pure_ops_are_erased
// CHECK-NEXT: return
func.func @unused_pure_ops_are_erased(%x: tensor<1x?x64xf32>) {
  %w = mir.param "w" : tensor<64xf32>
  %y = mir.rms_norm %x, %w : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  return
}

// CHECK-LABEL: func.func @abs_abs_folds
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[A:.*]] = mir.abs %[[X]]
// CHECK-NEXT: return %[[A]]
func.func @abs_abs_folds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mir.abs %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = mir.abs %a : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// CHECK-LABEL: func.func @abs_of_neg_reads_x
// CHECK-SAME: (%[[X:.*]]: tensor<4xf16>)
// CHECK-NEXT: %[[A:.*]] = mir.abs %[[X]]
// CHECK-NEXT: return %[[A]]
func.func @abs_of_neg_reads_x(%x: tensor<4xf16>) -> tensor<4xf16> {
  %n = mir.neg %x : (tensor<4xf16>) -> tensor<4xf16>
  %a = mir.abs %n : (tensor<4xf16>) -> tensor<4xf16>
  return %a : tensor<4xf16>
}

// CHECK-LABEL: func.func @rounding_of_integer_values_folds
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[F:.*]] = mir.floor %[[X]]
// CHECK-NEXT: return %[[F]]
func.func @rounding_of_integer_values_folds(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %f = mir.floor %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = mir.ceil %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = mir.round %c : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %g = mir.floor %r : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %g : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @sign_sign_folds
// CHECK-NEXT: %[[S:.*]] = mir.sign
// CHECK-NEXT: return %[[S]]
func.func @sign_sign_folds(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %a = mir.sign %x : (tensor<4xbf16>) -> tensor<4xbf16>
  %b = mir.sign %a : (tensor<4xbf16>) -> tensor<4xbf16>
  return %b : tensor<4xbf16>
}

// CHECK-LABEL: func.func @negative_round_of_abs
// CHECK: mir.abs
// CHECK-NEXT: mir.round
func.func @negative_round_of_abs(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mir.abs %x : (tensor<4xf32>) -> tensor<4xf32>
  %r = mir.round %a : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @negative_sign_of_abs
// CHECK: mir.abs
// CHECK-NEXT: mir.sign
func.func @negative_sign_of_abs(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mir.abs %x : (tensor<4xf32>) -> tensor<4xf32>
  %s = mir.sign %a : (tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// CHECK-LABEL: func.func @clip_unbounded_folds
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @clip_unbounded_folds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = mir.clip %x {min = 0xFF800000 : f32, max = 0x7F800000 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @clip_of_narrower_clip_folds
// CHECK-NEXT: %[[C:.*]] = mir.clip %{{.*}} {max = 1.000000e+00 : f32, min = 0.000000e+00 : f32}
// CHECK-NEXT: return %[[C]]
func.func @clip_of_narrower_clip_folds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mir.clip %x {min = 0.0 : f32, max = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %b = mir.clip %a {min = -1.0 : f32, max = 6.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// CHECK-LABEL: func.func @negative_clip_of_wider_clip
// CHECK: mir.clip
// CHECK-NEXT: mir.clip
func.func @negative_clip_of_wider_clip(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mir.clip %x {min = -1.0 : f32, max = 6.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %b = mir.clip %a {min = 0.0 : f32, max = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// CHECK-LABEL: func.func @negative_clip_one_bound
// CHECK: mir.clip
func.func @negative_clip_one_bound(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = mir.clip %x {min = 0.0 : f32, max = 0x7F800000 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @tile_and_pad_identity_fold
// CHECK-SAME: (%[[X:.*]]: tensor<2x?xf32>)
// CHECK-NEXT: return %[[X]]
func.func @tile_and_pad_identity_fold(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %t = mir.tile %x {multiples = array<i64: 1, 1>} : (tensor<2x?xf32>) -> tensor<2x?xf32>
  %p = mir.pad %t {low = array<i64: 0, 0>, high = array<i64: 0, 0>, value = 3.0 : f64} : (tensor<2x?xf32>) -> tensor<2x?xf32>
  return %p : tensor<2x?xf32>
}

// CHECK-LABEL: func.func @negative_tile_and_pad
// CHECK: mir.tile
// CHECK: mir.pad
func.func @negative_tile_and_pad(%x: tensor<2x3xf32>) -> tensor<2x7xf32> {
  %t = mir.tile %x {multiples = array<i64: 1, 2>} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  %p = mir.pad %t {low = array<i64: 0, 1>, high = array<i64: 0, 0>} : (tensor<2x6xf32>) -> tensor<2x7xf32>
  return %p : tensor<2x7xf32>
}
