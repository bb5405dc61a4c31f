// RUN: rlx-opt %s -split-input-file -lir-verify-plan -verify-diagnostics | FileCheck %s

/// A plan that reuses bytes only after their buffer died, and an in-place
/// kernel: accepted unchanged.
// CHECK-LABEL: lir.entry @reuse_after_death
lir.entry @reuse_after_death arena_size = 192, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<16xf32>
  %a = lir.view arena[64] : memref<16xf32>
  %b = lir.view arena[0] : memref<16xf32>
  %c = lir.view arena[64] : memref<16xf32>
  lir.io input "x" %x : memref<16xf32>
  lir.kernel "exp" ins(%x : memref<16xf32>) outs(%a : memref<16xf32>) {
  ^bb0(%t: tensor<16xf32>):
    %r = mir.exp %t : (tensor<16xf32>) -> tensor<16xf32>
    lir.yield %r : tensor<16xf32>
  }
  lir.kernel "neg" ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%t: tensor<16xf32>):
    %r = mir.neg %t : (tensor<16xf32>) -> tensor<16xf32>
    lir.yield %r : tensor<16xf32>
  }
  lir.kernel "tanh" ins(%b : memref<16xf32>) outs(%c : memref<16xf32>) attributes {inplace} {
  ^bb0(%t: tensor<16xf32>):
    %r = mir.tanh %t : (tensor<16xf32>) -> tensor<16xf32>
    lir.yield %r : tensor<16xf32>
  }
  lir.io output "y" %c : memref<16xf32>
}

// -----

/// The output of the second kernel is placed over an input still read by the
/// third.
lir.entry @negative_overlap_while_live arena_size = 128, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<16xf32>
  %a = lir.view arena[64] : memref<16xf32>
  // expected-error @+1 {{overlaps the view at arena [0, 64) live from start to kernel 2 while this one, at [0, 64), is live from kernel 1 to end}}
  %b = lir.view arena[0] : memref<16xf32>
  lir.io input "x" %x : memref<16xf32>
  lir.kernel "exp" ins(%x : memref<16xf32>) outs(%a : memref<16xf32>) {
  ^bb0(%t: tensor<16xf32>):
    %r = mir.exp %t : (tensor<16xf32>) -> tensor<16xf32>
    lir.yield %r : tensor<16xf32>
  }
  lir.kernel "neg" ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%t: tensor<16xf32>):
    %r = mir.neg %t : (tensor<16xf32>) -> tensor<16xf32>
    lir.yield %r : tensor<16xf32>
  }
  lir.kernel "add" ins(%x, %b : memref<16xf32>, memref<16xf32>) outs(%a : memref<16xf32>) {
  ^bb0(%t: tensor<16xf32>, %u: tensor<16xf32>):
    %r = mir.add %t, %u : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    lir.yield %r : tensor<16xf32>
  }
  lir.io output "y" %b : memref<16xf32>
}

// -----

/// Writing over a dying input is only legal in a kernel marked inplace.
lir.entry @negative_inplace_not_allowed arena_size = 64, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<16xf32>
  // expected-error @+1 {{overlaps the view at arena [0, 64) live from start to kernel 0}}
  %y = lir.view arena[0] : memref<16xf32>
  lir.io input "x" %x : memref<16xf32>
  lir.kernel "exp" ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%t: tensor<16xf32>):
    %r = mir.exp %t : (tensor<16xf32>) -> tensor<16xf32>
    lir.yield %r : tensor<16xf32>
  }
  lir.io output "y" %y : memref<16xf32>
}

// -----

lir.entry @negative_read_before_write arena_size = 128, param_size = 0, alignment = 64 {
  %a = lir.view arena[0] : memref<16xf32>
  %b = lir.view arena[64] : memref<16xf32>
  // expected-error @+1 {{reads arena bytes [0, 64) before anything wrote them}}
  lir.kernel "exp" ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%t: tensor<16xf32>):
    %r = mir.exp %t : (tensor<16xf32>) -> tensor<16xf32>
    lir.yield %r : tensor<16xf32>
  }
  lir.io output "y" %b : memref<16xf32>
}
