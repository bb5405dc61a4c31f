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
