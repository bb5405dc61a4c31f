// RUN: rlx-opt %s -split-input-file -verify-diagnostics

// Each case names the constraint of docs/Dialects/HIR.md it violates.

func.func @patch_embed_c1_pixels_rank(%px: tensor<3x32x32xf32>, %w: tensor<16x3x8x8xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{expects pixels of rank 4, got 'tensor<3x32x32xf32>'}}
  %p = hir.patch_embed %px, %w, %b {patch_size = 8 : i64} : (tensor<3x32x32xf32>, tensor<16x3x8x8xf32>, tensor<16xf32>) -> tensor<1x16x16xf32>
  return
}

// -----

func.func @patch_embed_c1_channels(%px: tensor<1x4x32x32xf32>, %w: tensor<16x3x8x8xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{expects weight of shape [16, 4, 8, 8], got 'tensor<16x3x8x8xf32>'}}
  %p = hir.patch_embed %px, %w, %b {patch_size = 8 : i64} : (tensor<1x4x32x32xf32>, tensor<16x3x8x8xf32>, tensor<16xf32>) -> tensor<1x16x16xf32>
  return
}

// -----

func.func @patch_embed_c1_patch_size(%px: tensor<1x3x32x32xf32>, %w: tensor<16x3x8x8xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{expects weight of shape [16, 3, 4, 4], got 'tensor<16x3x8x8xf32>'}}
  %p = hir.patch_embed %px, %w, %b {patch_size = 4 : i64} : (tensor<1x3x32x32xf32>, tensor<16x3x8x8xf32>, tensor<16xf32>) -> tensor<1x64x16xf32>
  return
}

// -----

func.func @patch_embed_c1_bias(%px: tensor<1x3x32x32xf32>, %w: tensor<16x3x8x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{expects bias of shape [16], got 'tensor<8xf32>'}}
  %p = hir.patch_embed %px, %w, %b {patch_size = 8 : i64} : (tensor<1x3x32x32xf32>, tensor<16x3x8x8xf32>, tensor<8xf32>) -> tensor<1x16x16xf32>
  return
}

// -----

func.func @patch_embed_c2_too_small(%px: tensor<1x3x4x32xf32>, %w: tensor<16x3x8x8xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{expects an image of at least one 8x8 patch, got 'tensor<1x3x4x32xf32>'}}
  %p = hir.patch_embed %px, %w, %b {patch_size = 8 : i64} : (tensor<1x3x4x32xf32>, tensor<16x3x8x8xf32>, tensor<16xf32>) -> tensor<1x0x16xf32>
  return
}

// -----

func.func @patch_embed_c3_result(%px: tensor<1x3x36x32xf32>, %w: tensor<16x3x8x8xf32>, %b: tensor<16xf32>) {
  // Partial patches are dropped: 36x32 holds a 4x4 grid.
  // expected-error @+1 {{expects result of shape [1, 16, 16], got 'tensor<1x18x16xf32>'}}
  %p = hir.patch_embed %px, %w, %b {patch_size = 8 : i64} : (tensor<1x3x36x32xf32>, tensor<16x3x8x8xf32>, tensor<16xf32>) -> tensor<1x18x16xf32>
  return
}

// -----

func.func @patch_embed_patch_size_positive(%px: tensor<1x3x32x32xf32>, %w: tensor<16x3x8x8xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{attribute 'patch_size' failed to satisfy constraint}}
  %p = hir.patch_embed %px, %w, %b {patch_size = 0 : i64} : (tensor<1x3x32x32xf32>, tensor<16x3x8x8xf32>, tensor<16xf32>) -> tensor<1x16x16xf32>
  return
}

// -----

func.func @insert_tokens_c1_tokens(%x: tensor<2x5x16xf32>, %t: tensor<2x1x16xf32>) {
  // expected-error @+1 {{expects tokens of shape [1, 1, 16], got 'tensor<2x1x16xf32>'}}
  %y = hir.insert_tokens %x, %t : (tensor<2x5x16xf32>, tensor<2x1x16xf32>) -> tensor<2x6x16xf32>
  return
}

// -----

func.func @insert_tokens_c1_hidden(%x: tensor<2x5x16xf32>, %t: tensor<1x1x8xf32>) {
  // expected-error @+1 {{expects tokens of shape [1, 1, 16], got 'tensor<1x1x8xf32>'}}
  %y = hir.insert_tokens %x, %t : (tensor<2x5x16xf32>, tensor<1x1x8xf32>) -> tensor<2x6x16xf32>
  return
}

// -----

func.func @insert_tokens_c1_none(%x: tensor<2x5x16xf32>, %t: tensor<1x0x16xf32>) {
  // expected-error @+1 {{expects at least one token to insert}}
  %y = hir.insert_tokens %x, %t : (tensor<2x5x16xf32>, tensor<1x0x16xf32>) -> tensor<2x5x16xf32>
  return
}

// -----

func.func @insert_tokens_c2_position(%x: tensor<2x5x16xf32>, %t: tensor<1x1x16xf32>) {
  // expected-error @+1 {{inserts at position 6 of a sequence of 5 tokens}}
  %y = hir.insert_tokens %x, %t {position = 6 : i64} : (tensor<2x5x16xf32>, tensor<1x1x16xf32>) -> tensor<2x6x16xf32>
  return
}

// -----

func.func @insert_tokens_c3_result(%x: tensor<2x5x16xf32>, %t: tensor<1x2x16xf32>) {
  // expected-error @+1 {{expects result of shape [2, 7, 16], got 'tensor<2x6x16xf32>'}}
  %y = hir.insert_tokens %x, %t : (tensor<2x5x16xf32>, tensor<1x2x16xf32>) -> tensor<2x6x16xf32>
  return
}

// -----

func.func @position_embed_c1_grid(%x: tensor<2x5x16xf32>, %t: tensor<1x5x16xf32>) {
  // expected-error @+1 {{expects a grid of two positive sizes, got [2, 0]}}
  %y = hir.position_embed %x, %t {grid = array<i64: 2, 0>} : (tensor<2x5x16xf32>, tensor<1x5x16xf32>) -> tensor<2x5x16xf32>
  return
}

// -----

func.func @position_embed_c1_tokens(%x: tensor<2x5x16xf32>, %t: tensor<1x5x16xf32>) {
  // expected-error @+1 {{expects input of shape [2, 7, 16], got 'tensor<2x5x16xf32>'}}
  %y = hir.position_embed %x, %t {grid = array<i64: 2, 3>} : (tensor<2x5x16xf32>, tensor<1x5x16xf32>) -> tensor<2x5x16xf32>
  return
}

// -----

func.func @position_embed_c2_not_square(%x: tensor<2x5x16xf32>, %t: tensor<1x7x16xf32>) {
  // expected-error @+1 {{expects a table of 1 leading rows and a square grid of patch rows, got 7 rows}}
  %y = hir.position_embed %x, %t {grid = array<i64: 2, 2>} : (tensor<2x5x16xf32>, tensor<1x7x16xf32>) -> tensor<2x5x16xf32>
  return
}

// -----

func.func @position_embed_c2_hidden(%x: tensor<2x5x16xf32>, %t: tensor<1x5x8xf32>) {
  // expected-error @+1 {{expects table of shape [1, 5, 16], got 'tensor<1x5x8xf32>'}}
  %y = hir.position_embed %x, %t {grid = array<i64: 2, 2>} : (tensor<2x5x16xf32>, tensor<1x5x8xf32>) -> tensor<2x5x16xf32>
  return
}

// -----

func.func @packed_swiglu_c1_odd(%x: tensor<2x4x16xf32>, %wi: tensor<47x16xf32>, %wo: tensor<16x24xf32>) {
  // expected-error @+1 {{expects w_in with an even number of rows (gate, then up), got 'tensor<47x16xf32>'}}
  %y = hir.packed_swiglu %x, %wi, %wo : (tensor<2x4x16xf32>, tensor<47x16xf32>, tensor<16x24xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @packed_swiglu_c1_out(%x: tensor<2x4x16xf32>, %wi: tensor<48x16xf32>, %wo: tensor<16x48xf32>) {
  // expected-error @+1 {{expects w_out of shape [16, 24], got 'tensor<16x48xf32>'}}
  %y = hir.packed_swiglu %x, %wi, %wo : (tensor<2x4x16xf32>, tensor<48x16xf32>, tensor<16x48xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @packed_swiglu_c1_bias(%x: tensor<2x4x16xf32>, %wi: tensor<48x16xf32>, %bi: tensor<24xf32>, %wo: tensor<16x24xf32>) {
  // expected-error @+1 {{expects b_in of shape [48], got 'tensor<24xf32>'}}
  %y = hir.packed_swiglu %x, %wi bias(%bi), %wo : (tensor<2x4x16xf32>, tensor<48x16xf32>, tensor<24xf32>, tensor<16x24xf32>) -> tensor<2x4x16xf32>
  return
}
