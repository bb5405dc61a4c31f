// RUN: rlx-opt %s --mir-fold-param-slices --split-input-file | FileCheck %s

/// Slices of parameters. IN: a static `mir.slice` (step 1) of a `mir.param`.
/// OUT: one sliced `mir.param` (`source_starts`) named `source[a:b]` (axis 0)
/// or `source[:,a:b]` (axis 1), which the loader reads as that range only.

// CHECK-LABEL: func.func @fold_row_slice
// CHECK: %[[W:.*]] = mir.param "l0.q[32:64]" {concat_axis = 0 : i64, source_sizes = array<i64: 32>, source_starts = array<i64: 32>, sources = ["l0.q"]} : tensor<32x64xf32>
// CHECK-NOT: mir.slice
// CHECK: return %[[W]]
func.func @fold_row_slice() -> tensor<32x64xf32> {
  %q = mir.param "l0.q" : tensor<64x64xf32>
  %s = mir.slice %q {axis = 0 : i64, start = 32 : i64, size = 32 : i64} : (tensor<64x64xf32>) -> tensor<32x64xf32>
  return %s : tensor<32x64xf32>
}

// -----

/// A negative start counts from the end, as for `mir.slice` itself.
// CHECK-LABEL: func.func @fold_column_slice
// CHECK: %[[W:.*]] = mir.param "l0.o[:,16:48]" {concat_axis = 1 : i64, source_sizes = array<i64: 32>, source_starts = array<i64: 16>, sources = ["l0.o"]} : tensor<64x32xf32>
// CHECK-NOT: mir.slice
// CHECK: return %[[W]]
func.func @fold_column_slice() -> tensor<64x32xf32> {
  %o = mir.param "l0.o" : tensor<64x64xf32>
  %s = mir.slice %o {axis = 1 : i64, start = -48 : i64, size = 32 : i64} : (tensor<64x64xf32>) -> tensor<64x32xf32>
  return %s : tensor<64x32xf32>
}

// -----

/// Concatenation of slices. IN: a rank's Q, K and V rows joined by
/// `mir.concat`. OUT: one derived param with a range per source.
// CHECK-LABEL: func.func @fold_concat_of_slices
// CHECK: %[[W:.*]] = mir.param "l0.q[0:32]+l0.k[16:32]+l0.v[16:32]" {concat_axis = 0 : i64, source_sizes = array<i64: 32, 16, 16>, source_starts = array<i64: 0, 16, 16>, sources = ["l0.q", "l0.k", "l0.v"]} : tensor<64x64xf32>
// CHECK-NOT: mir.slice
// CHECK-NOT: mir.concat
// CHECK: return %[[W]]
func.func @fold_concat_of_slices() -> tensor<64x64xf32> {
  %q = mir.param "l0.q" : tensor<64x64xf32>
  %k = mir.param "l0.k" : tensor<32x64xf32>
  %v = mir.param "l0.v" : tensor<32x64xf32>
  %q0 = mir.slice %q {axis = 0 : i64, start = 0 : i64, size = 32 : i64} : (tensor<64x64xf32>) -> tensor<32x64xf32>
  %k0 = mir.slice %k {axis = 0 : i64, start = 16 : i64, size = 16 : i64} : (tensor<32x64xf32>) -> tensor<16x64xf32>
  %v0 = mir.slice %v {axis = 0 : i64, start = 16 : i64, size = 16 : i64} : (tensor<32x64xf32>) -> tensor<16x64xf32>
  %w = mir.concat %q0, %k0, %v0 {axis = 0 : i64} : (tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<64x64xf32>
  return %w : tensor<64x64xf32>
}

// -----

/// Whole parameters concatenated stay a derived param without ranges, and
/// adjacent ranges of one source merge (here back into the whole source).
// CHECK-LABEL: func.func @fold_concat_of_whole_params
// CHECK: %[[W:.*]] = mir.param "a+b" {concat_axis = 0 : i64, source_sizes = array<i64: 8, 4>, sources = ["a", "b"]} : tensor<12x4xf32>
// CHECK: return %[[W]]
func.func @fold_concat_of_whole_params() -> tensor<12x4xf32> {
  %a = mir.param "a" : tensor<8x4xf32>
  %b = mir.param "b" : tensor<4x4xf32>
  %a0 = mir.slice %a {axis = 0 : i64, start = 0 : i64, size = 4 : i64} : (tensor<8x4xf32>) -> tensor<4x4xf32>
  %a1 = mir.slice %a {axis = 0 : i64, start = 4 : i64, size = 4 : i64} : (tensor<8x4xf32>) -> tensor<4x4xf32>
  %w = mir.concat %a0, %a1, %b {axis = 0 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<12x4xf32>
  return %w : tensor<12x4xf32>
}

// -----

/// A slice of a derived param that spans two of its sources maps to those
/// sources' sub-ranges.
// CHECK-LABEL: func.func @fold_slice_of_derived_param
// CHECK: %[[W:.*]] = mir.param "q[48:64]+k[0:8]" {concat_axis = 0 : i64, source_sizes = array<i64: 16, 8>, source_starts = array<i64: 48, 0>, sources = ["q", "k"]} : tensor<24x64xf32>
// CHECK-NOT: mir.slice
// CHECK: return %[[W]]
func.func @fold_slice_of_derived_param() -> tensor<24x64xf32> {
  %qkv = mir.param "q+k+v" {sources = ["q", "k", "v"], concat_axis = 0 : i64, source_sizes = array<i64: 64, 32, 32>} : tensor<128x64xf32>
  %s = mir.slice %qkv {axis = 0 : i64, start = 48 : i64, size = 24 : i64} : (tensor<128x64xf32>) -> tensor<24x64xf32>
  return %s : tensor<24x64xf32>
}

// -----

/// A slice of a sliced param narrows its range (offsets add).
// CHECK-LABEL: func.func @fold_slice_of_sliced_param
// CHECK: %[[W:.*]] = mir.param "w[:,40:48]" {concat_axis = 1 : i64, source_sizes = array<i64: 8>, source_starts = array<i64: 40>, sources = ["w"]} : tensor<4x8xf32>
// CHECK: return %[[W]]
func.func @fold_slice_of_sliced_param() -> tensor<4x8xf32> {
  %w = mir.param "w[:,32:64]" {sources = ["w"], concat_axis = 1 : i64, source_sizes = array<i64: 32>, source_starts = array<i64: 32>} : tensor<4x32xf32>
  %s = mir.slice %w {axis = 1 : i64, start = 8 : i64, size = 8 : i64} : (tensor<4x32xf32>) -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

/// ggml blocks along the blocked (last) dimension: block-aligned ranges fold;
/// one that splits a block stays a slice.
// CHECK-LABEL: func.func @fold_quant_column_slice
// CHECK-DAG: mir.param "w[:,32:64]" {concat_axis = 1 : i64, source_sizes = array<i64: 32>, source_starts = array<i64: 32>, sources = ["w"]} : tensor<4x32x!mir.quant<q8_0>>
// CHECK-DAG: %[[W:.*]] = mir.param "w" : tensor<4x64x!mir.quant<q8_0>>
// CHECK: mir.slice %[[W]] {axis = 1 : i64, size = 16 : i64, start = 16 : i64}
func.func @fold_quant_column_slice() -> (tensor<4x32x!mir.quant<q8_0>>, tensor<4x16x!mir.quant<q8_0>>) {
  %w = mir.param "w" : tensor<4x64x!mir.quant<q8_0>>
  %a = mir.slice %w {axis = 1 : i64, start = 32 : i64, size = 32 : i64} : (tensor<4x64x!mir.quant<q8_0>>) -> tensor<4x32x!mir.quant<q8_0>>
  %b = mir.slice %w {axis = 1 : i64, start = 16 : i64, size = 16 : i64} : (tensor<4x64x!mir.quant<q8_0>>) -> tensor<4x16x!mir.quant<q8_0>>
  return %a, %b : tensor<4x32x!mir.quant<q8_0>>, tensor<4x16x!mir.quant<q8_0>>
}

// -----

/// Left as they are: a slice of what is not a param, a slice with a step,
/// a slice across a derived param's axis, and a concat along another axis
/// than an operand's derivation.
// CHECK-LABEL: func.func @negative_fold_param_slices
// CHECK: mir.slice %{{.*}} {axis = 0 : i64, size = 2 : i64, start = 0 : i64}
// CHECK: mir.slice %{{.*}} {axis = 0 : i64, size = 2 : i64, start = 3 : i64, step = -1 : i64}
// CHECK: mir.slice %{{.*}} {axis = 1 : i64, size = 2 : i64, start = 0 : i64}
// CHECK: mir.concat %{{.*}}, %{{.*}} {axis = 1 : i64}
func.func @negative_fold_param_slices(%x: tensor<4x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<8x2xf32>, tensor<8x8xf32>) {
  %a = mir.slice %x {axis = 0 : i64, start = 0 : i64, size = 2 : i64} : (tensor<4x4xf32>) -> tensor<2x4xf32>
  %w = mir.param "w" : tensor<4x4xf32>
  %b = mir.slice %w {axis = 0 : i64, start = 3 : i64, size = 2 : i64, step = -1 : i64} : (tensor<4x4xf32>) -> tensor<2x4xf32>
  %d = mir.param "a+b" {sources = ["a", "b"], concat_axis = 0 : i64, source_sizes = array<i64: 4, 4>} : tensor<8x4xf32>
  %c = mir.slice %d {axis = 1 : i64, start = 0 : i64, size = 2 : i64} : (tensor<8x4xf32>) -> tensor<8x2xf32>
  %e = mir.concat %d, %d {axis = 1 : i64} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
  return %a, %b, %c, %e : tensor<2x4xf32>, tensor<2x4xf32>, tensor<8x2xf32>, tensor<8x8xf32>
}

// -----

/// A concat with an operand that is not a param stays.
// CHECK-LABEL: func.func @negative_concat_with_activation
// CHECK: mir.concat
func.func @negative_concat_with_activation(%x: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %w = mir.param "w" : tensor<4x4xf32>
  %c = mir.concat %w, %x {axis = 0 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// -----

/// Weights read in a stored precision: a slice or concat of widened params
/// (`mir.dequantize` of a `mir.param`) becomes the widened sliced param.
// CHECK-LABEL: func.func @fold_slices_of_dequantized_params
// CHECK: %[[W:.*]] = mir.param "q[0:32]+k[0:16]" {concat_axis = 0 : i64, source_sizes = array<i64: 32, 16>, source_starts = array<i64: 0, 0>, sources = ["q", "k"]} : tensor<48x64xbf16>
// CHECK: %[[D:.*]] = mir.dequantize %[[W]] : (tensor<48x64xbf16>) -> tensor<48x64xf32>
// CHECK-NOT: mir.concat
// CHECK: return %[[D]]
func.func @fold_slices_of_dequantized_params() -> tensor<48x64xf32> {
  %q = mir.param "q" : tensor<64x64xbf16>
  %k = mir.param "k" : tensor<32x64xbf16>
  %qf = mir.dequantize %q : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %kf = mir.dequantize %k : (tensor<32x64xbf16>) -> tensor<32x64xf32>
  %q0 = mir.slice %qf {axis = 0 : i64, start = 0 : i64, size = 32 : i64} : (tensor<64x64xf32>) -> tensor<32x64xf32>
  %k0 = mir.slice %kf {axis = 0 : i64, start = 0 : i64, size = 16 : i64} : (tensor<32x64xf32>) -> tensor<16x64xf32>
  %w = mir.concat %q0, %k0 {axis = 0 : i64} : (tensor<32x64xf32>, tensor<16x64xf32>) -> tensor<48x64xf32>
  return %w : tensor<48x64xf32>
}
