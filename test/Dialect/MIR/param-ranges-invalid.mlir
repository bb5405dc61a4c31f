// RUN: rlx-opt %s -split-input-file -verify-diagnostics

// Sliced parameters (`source_starts`): one case per verifier diagnostic,
// named after the constraint (docs/Dialects/MIR.md, mir_param_cN).

func.func @param_c8_starts_without_sources() {
  // expected-error @+1 {{'mir.param' op 'source_starts' requires 'sources'}}
  %w = mir.param "w" {source_starts = array<i64: 0>} : tensor<8x4xf32>
  return
}

// -----

func.func @param_c8_starts_count() {
  // expected-error @+1 {{'mir.param' op source_starts must give one non-negative start per source, got array<i64: 0>}}
  %w = mir.param "q[0:4]+k[0:4]" {sources = ["q", "k"], concat_axis = 0 : i64, source_sizes = array<i64: 4, 4>, source_starts = array<i64: 0>} : tensor<8x4xf32>
  return
}

// -----

func.func @param_c8_negative_start() {
  // expected-error @+1 {{'mir.param' op source_starts must give one non-negative start per source, got array<i64: -4>}}
  %w = mir.param "q[-4:4]" {sources = ["q"], concat_axis = 0 : i64, source_sizes = array<i64: 8>, source_starts = array<i64: -4>} : tensor<8x4xf32>
  return
}

// -----

func.func @param_c4_no_source_with_starts() {
  // expected-error @+1 {{'mir.param' op requires at least one non-empty source name, got [""]}}
  %w = mir.param "w" {sources = [""], concat_axis = 0 : i64, source_sizes = array<i64: 8>, source_starts = array<i64: 0>} : tensor<8x4xf32>
  return
}

// -----

func.func @param_c9_quant_range_splits_block() {
  // expected-error @+1 {{'mir.param' op range [16, 48) of ggml blocks along the blocked (innermost) dimension must start and end on a block boundary (32 elements)}}
  %w = mir.param "w[:,16:48]" {sources = ["w"], concat_axis = 1 : i64, source_sizes = array<i64: 32>, source_starts = array<i64: 16>} : tensor<4x32x!mir.quant<q8_0>>
  return
}

// -----

func.func @param_c7_concat_blocked_dim_without_ranges() {
  // expected-error @+1 {{concatenates ggml blocks along the blocked (innermost) dimension}}
  %w = mir.param "w" {sources = ["a", "b"], concat_axis = 1 : i64, source_sizes = array<i64: 32, 32>} : tensor<4x64x!mir.quant<q8_0>>
  return
}

// -----

// A sliced param of one source, and block-aligned ranges of ggml blocks
// along the blocked dimension, verify.
func.func @param_ranges_valid() {
  %a = mir.param "w[2:6]" {sources = ["w"], concat_axis = 0 : i64, source_sizes = array<i64: 4>, source_starts = array<i64: 2>} : tensor<4x4xf32>
  %b = mir.param "w[:,32:64]+v[:,0:32]" {sources = ["w", "v"], concat_axis = 1 : i64, source_sizes = array<i64: 32, 32>, source_starts = array<i64: 32, 0>} : tensor<4x64x!mir.quant<q8_0>>
  return
}
