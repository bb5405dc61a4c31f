// RUN: rlx-opt %s -split-input-file --lir-plan-arena -verify-diagnostics

/// lir-plan-arena sums buffer sizes: two live buffers of 2^62 bytes each fit
/// on their own, but not in one arena (2^63 bytes). The sum used to wrap to
/// a small arena_size.
// expected-error @+1 {{the arena of 2 buffers does not fit in 2^63 - 1 bytes}}
lir.entry @negative_arena_overflows arena_size = 0, param_size = 0, alignment = 64 {
  %x = lir.alloc : memref<1152921504606846976xf32>
  %y = lir.alloc : memref<1152921504606846976xf32>
  lir.io input "x" %x : memref<1152921504606846976xf32>
  lir.io output "y" %y : memref<1152921504606846976xf32>
  lir.kernel "neg" ins(%x : memref<1152921504606846976xf32>) outs(%y : memref<1152921504606846976xf32>) {
  ^bb0(%t: tensor<1152921504606846976xf32>):
    %r = mir.neg %t : (tensor<1152921504606846976xf32>) -> tensor<1152921504606846976xf32>
    lir.yield %r : tensor<1152921504606846976xf32>
  }
}

// -----

/// One buffer just under the limit still plans.
lir.entry @largest_arena arena_size = 0, param_size = 0, alignment = 64 {
  %x = lir.alloc : memref<1152921504606846976xf32>
  lir.io input "x" %x : memref<1152921504606846976xf32>
  lir.io output "y" %x : memref<1152921504606846976xf32>
}
