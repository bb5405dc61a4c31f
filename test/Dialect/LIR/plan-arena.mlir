// RUN: rlx-opt %s -split-input-file --lir-plan-arena --lir-verify-plan -verify-diagnostics | FileCheck %s
// RUN: rlx-opt %s -split-input-file --lir-plan-arena=inplace=false -verify-diagnostics | FileCheck %s --check-prefix=NOINPLACE
// RUN: not rlx-opt %s -split-input-file --lir-plan-arena=stats -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS

/// lir-plan-arena places the lir.alloc buffers: a buffer dead before another
/// is written shares its bytes; an elementwise kernel writes over the input
/// it reads last (`inplace`); aliases move with their buffer; outputs live
/// to the end.

// CHECK-LABEL: lir.entry @chain arena_size = 192
// STATS: remark: arena 192 bytes (naive 256, peak live 192), params 0 bytes
func.func private @anchor()
lir.entry @chain arena_size = 0, param_size = 0, alignment = 64 {
  // CHECK-NOT: lir.alloc
  // CHECK: %[[X:.*]] = lir.view arena[[[XO:[0-9]+]]] : memref<16xf32>
  %x = lir.alloc : memref<16xf32>
  // CHECK: %[[A:.*]] = lir.view arena[[[AO:[0-9]+]]] : memref<4x8xf32>
  %a = lir.alloc : memref<4x8xf32>
  // CHECK: %[[S:.*]] = lir.view arena[{{[0-9]+}}] source(%[[A]] : memref<4x8xf32>) : memref<2x8xf32>
  %s = lir.view arena[64] source(%a : memref<4x8xf32>) : memref<2x8xf32>
  // CHECK: %[[B:.*]] = lir.view arena[[[AO]]] : memref<4x8xf32>
  %b = lir.alloc : memref<4x8xf32>
  %c = lir.alloc : memref<2x8xf32>
  %y = lir.alloc : memref<2x8xf32>
  lir.io input "x" %x : memref<16xf32>
  lir.io output "y" %y : memref<2x8xf32>
  lir.kernel "k0" ins(%x : memref<16xf32>) outs(%a : memref<4x8xf32>) {
  ^bb0(%t: tensor<16xf32>):
    %r = mir.reshape %t : (tensor<16xf32>) -> tensor<2x8xf32>
    %r2 = mir.concat %r, %r {axis = 0 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
    lir.yield %r2 : tensor<4x8xf32>
  }
  // In place: %a dies here and has %b's size.
  // CHECK: lir.kernel "exp" ins(%[[A]] : memref<4x8xf32>) outs(%[[B]] : memref<4x8xf32>) attributes {inplace}
  // NOINPLACE: lir.kernel "exp"
  // NOINPLACE-NOT: attributes {inplace}
  lir.kernel "exp" ins(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>) {
  ^bb0(%t: tensor<4x8xf32>):
    %r = mir.exp %t : (tensor<4x8xf32>) -> tensor<4x8xf32>
    lir.yield %r : tensor<4x8xf32>
  }
  lir.kernel "slice" ins(%b : memref<4x8xf32>) outs(%c : memref<2x8xf32>) {
  ^bb0(%t: tensor<4x8xf32>):
    %r = mir.slice %t {axis = 0 : i64, start = 0 : i64, size = 2 : i64} : (tensor<4x8xf32>) -> tensor<2x8xf32>
    lir.yield %r : tensor<2x8xf32>
  }
  // %c dies here: the output takes its bytes.
  // CHECK: lir.kernel "neg" {{.*}} attributes {inplace}
  lir.kernel "neg" ins(%c : memref<2x8xf32>) outs(%y : memref<2x8xf32>) {
  ^bb0(%t: tensor<2x8xf32>):
    %r = mir.neg %t : (tensor<2x8xf32>) -> tensor<2x8xf32>
    lir.yield %r : tensor<2x8xf32>
  }
}

// -----

/// The entry's inputs are never written over: no in-place kernel.
// CHECK-LABEL: lir.entry @no_inplace_over_input arena_size = 128
// CHECK: lir.kernel "neg"
// CHECK-NOT: inplace
lir.entry @no_inplace_over_input arena_size = 0, param_size = 0, alignment = 64 {
  %x = lir.alloc : memref<4xf32>
  %y = lir.alloc : memref<4xf32>
  lir.io input "x" %x : memref<4xf32>
  lir.io output "y" %y : memref<4xf32>
  lir.kernel "neg" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%t: tensor<4xf32>):
    %r = mir.neg %t : (tensor<4xf32>) -> tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
}

// -----

/// A planned entry has nothing to place: it is left as it is.
// CHECK-LABEL: lir.entry @planned arena_size = 128
// CHECK: lir.view arena[64] : memref<4xf32>
lir.entry @planned arena_size = 128, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4xf32>
  %y = lir.view arena[64] : memref<4xf32>
  lir.io input "x" %x : memref<4xf32>
  lir.io output "y" %y : memref<4xf32>
  lir.kernel "neg" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%t: tensor<4xf32>):
    %r = mir.neg %t : (tensor<4xf32>) -> tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
}

// -----

/// A KV-cache step: the past (an input) is the head of the concat's result,
/// so the kernel copies only the new rows into the tail and the input shares
/// the output's bytes.
// CHECK-LABEL: lir.entry @concat_head_in_place arena_size = 320
// CHECK: %[[P:.*]] = lir.view arena[0] : memref<1x6x8xf32>
// CHECK: %[[H:.*]] = lir.view arena[0] source(%[[P]] : memref<1x6x8xf32>) : memref<1x4x8xf32>
// CHECK: %[[T:.*]] = lir.view arena[128] source(%[[P]] : memref<1x6x8xf32>) : memref<1x2x8xf32>
// CHECK: lir.io input "past" %[[H]]
// CHECK: lir.kernel "concat" ins(%[[N:.*]] : memref<1x2x8xf32>) outs(%[[T]] : memref<1x2x8xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<1x2x8xf32>):
// CHECK-NEXT: mir.concat %[[A]] {axis = 1 : i64} : (tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
// CHECK: lir.io output "present" %[[P]]
// NOINPLACE-LABEL: lir.entry @concat_head_in_place
// NOINPLACE: lir.kernel "concat" ins({{.*}} : memref<1x4x8xf32>, memref<1x2x8xf32>)
lir.entry @concat_head_in_place arena_size = 0, param_size = 0, alignment = 64 {
  %past = lir.alloc : memref<1x4x8xf32>
  %x = lir.alloc : memref<1x2x8xf32>
  %new = lir.alloc : memref<1x2x8xf32>
  %present = lir.alloc : memref<1x6x8xf32>
  lir.io input "past" %past : memref<1x4x8xf32>
  lir.io input "x" %x : memref<1x2x8xf32>
  lir.kernel "neg" ins(%x : memref<1x2x8xf32>) outs(%new : memref<1x2x8xf32>) {
  ^bb0(%t: tensor<1x2x8xf32>):
    %r = mir.neg %t : (tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
    lir.yield %r : tensor<1x2x8xf32>
  }
  lir.kernel "concat" ins(%past, %new : memref<1x4x8xf32>, memref<1x2x8xf32>) outs(%present : memref<1x6x8xf32>) {
  ^bb0(%a: tensor<1x4x8xf32>, %b: tensor<1x2x8xf32>):
    %r = mir.concat %a, %b {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x2x8xf32>) -> tensor<1x6x8xf32>
    lir.yield %r : tensor<1x6x8xf32>
  }
  lir.io output "present" %present : memref<1x6x8xf32>
}

// -----

/// Not in place: the head is not contiguous in the result (dim 0 is 2), is
/// written again after the concat, or is aliased by a view.
// CHECK-LABEL: lir.entry @concat_head_not_in_place
// CHECK: lir.kernel "concat" ins({{.*}} : memref<2x4x8xf32>, memref<2x2x8xf32>)
// CHECK: lir.kernel "concat" ins({{.*}} : memref<1x4x8xf32>, memref<1x2x8xf32>)
// CHECK: lir.kernel "concat" ins({{.*}} : memref<1x4x8xf32>, memref<1x2x8xf32>)
lir.entry @concat_head_not_in_place arena_size = 0, param_size = 0, alignment = 64 {
  %a = lir.alloc : memref<2x4x8xf32>
  %b = lir.alloc : memref<2x2x8xf32>
  %ab = lir.alloc : memref<2x6x8xf32>
  %c = lir.alloc : memref<1x4x8xf32>
  %d = lir.alloc : memref<1x2x8xf32>
  %cd = lir.alloc : memref<1x6x8xf32>
  %e = lir.alloc : memref<1x4x8xf32>
  %e2 = lir.view arena[0] source(%e : memref<1x4x8xf32>) : memref<1x2x8xf32>
  %ed = lir.alloc : memref<1x6x8xf32>
  lir.io input "a" %a : memref<2x4x8xf32>
  lir.io input "b" %b : memref<2x2x8xf32>
  lir.io input "c" %c : memref<1x4x8xf32>
  lir.io input "d" %d : memref<1x2x8xf32>
  lir.io input "e" %e : memref<1x4x8xf32>
  lir.kernel "concat" ins(%a, %b : memref<2x4x8xf32>, memref<2x2x8xf32>) outs(%ab : memref<2x6x8xf32>) {
  ^bb0(%x: tensor<2x4x8xf32>, %y: tensor<2x2x8xf32>):
    %r = mir.concat %x, %y {axis = 1 : i64} : (tensor<2x4x8xf32>, tensor<2x2x8xf32>) -> tensor<2x6x8xf32>
    lir.yield %r : tensor<2x6x8xf32>
  }
  lir.kernel "concat" ins(%c, %d : memref<1x4x8xf32>, memref<1x2x8xf32>) outs(%cd : memref<1x6x8xf32>) {
  ^bb0(%x: tensor<1x4x8xf32>, %y: tensor<1x2x8xf32>):
    %r = mir.concat %x, %y {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x2x8xf32>) -> tensor<1x6x8xf32>
    lir.yield %r : tensor<1x6x8xf32>
  }
  lir.kernel "rewrite" ins(%d : memref<1x2x8xf32>) outs(%c : memref<1x4x8xf32>) {
  ^bb0(%x: tensor<1x2x8xf32>):
    %r = mir.concat %x, %x {axis = 1 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x4x8xf32>
    lir.yield %r : tensor<1x4x8xf32>
  }
  lir.kernel "concat" ins(%e, %e2 : memref<1x4x8xf32>, memref<1x2x8xf32>) outs(%ed : memref<1x6x8xf32>) {
  ^bb0(%x: tensor<1x4x8xf32>, %y: tensor<1x2x8xf32>):
    %r = mir.concat %x, %y {axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x2x8xf32>) -> tensor<1x6x8xf32>
    lir.yield %r : tensor<1x6x8xf32>
  }
  lir.io output "ab" %ab : memref<2x6x8xf32>
  lir.io output "cd" %cd : memref<1x6x8xf32>
  lir.io output "c" %c : memref<1x4x8xf32>
  lir.io output "ed" %ed : memref<1x6x8xf32>
}

// -----

lir.entry @negative_read_before_write arena_size = 0, param_size = 0, alignment = 64 {
  %x = lir.alloc : memref<4xf32>
  %y = lir.alloc : memref<4xf32>
  lir.io output "y" %y : memref<4xf32>
  // expected-error @+1 {{reads a buffer that no earlier kernel writes and that is not an input}}
  lir.kernel "neg" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%t: tensor<4xf32>):
    %r = mir.neg %t : (tensor<4xf32>) -> tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
}

// -----

lir.entry @negative_never_written arena_size = 0, param_size = 0, alignment = 64 {
  // expected-error @+1 {{is never written: no kernel writes it and it is not an input}}
  %y = lir.alloc : memref<4xf32>
  lir.io output "y" %y : memref<4xf32>
}
