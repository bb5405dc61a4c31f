// RUN: rlx-opt %s --convert-hir-to-mir=policy=fusable -split-input-file -verify-diagnostics
// RUN: not rlx-opt %s --convert-hir-to-mir=policy=eager 2>&1 | FileCheck %s --check-prefix=POLICY

// POLICY: for the --policy option: Cannot find option named 'eager'!

/// The fusable form of a causal attention builds its mask from iota, which
/// needs static sequence lengths.
func.func @negative_fusable_dynamic_causal(%q: tensor<1x?x64xf32>, %k: tensor<1x?x32xf32>) -> tensor<1x?x64xf32> {
  // expected-error @+2 {{the fusable lowering of a causal attention needs static sequence lengths}}
  // expected-error @+1 {{could not be lowered to MIR}}
  %o = hir.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64} : (tensor<1x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>) -> tensor<1x?x64xf32>
  return %o : tensor<1x?x64xf32>
}

// -----

/// The vision blocks lower on specialized shapes: the image's size decides
/// the patch grid, the batch how often the learned tokens are repeated.
func.func @negative_dynamic_image(%px: tensor<1x3x?x32xf32>, %w: tensor<16x3x8x8xf32>, %b: tensor<16xf32>) -> tensor<1x?x16xf32> {
  // expected-error @+2 {{needs static channels, height and width to lower; specialize the shapes first}}
  // expected-error @+1 {{could not be lowered to MIR}}
  %p = hir.patch_embed %px, %w, %b {patch_size = 8 : i64}
      : (tensor<1x3x?x32xf32>, tensor<16x3x8x8xf32>, tensor<16xf32>) -> tensor<1x?x16xf32>
  return %p : tensor<1x?x16xf32>
}

// -----

func.func @negative_dynamic_batch(%x: tensor<?x4x16xf32>, %t: tensor<1x1x16xf32>) -> tensor<?x5x16xf32> {
  // expected-error @+2 {{needs a static batch and sequence to lower; specialize the shapes first}}
  // expected-error @+1 {{could not be lowered to MIR}}
  %y = hir.insert_tokens %x, %t : (tensor<?x4x16xf32>, tensor<1x1x16xf32>) -> tensor<?x5x16xf32>
  return %y : tensor<?x5x16xf32>
}
