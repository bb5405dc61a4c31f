// RUN: rlx-opt %s -split-input-file --lir-async-collectives | FileCheck %s
// RUN: rlx-opt %s -split-input-file --lir-async-collectives --lir-plan-arena --lir-verify-plan | FileCheck %s --check-prefix=PLAN
// RUN: rlx-opt %s -split-input-file --lir-async-collectives --lir-plan-arena --convert-lir-to-loops | FileCheck %s --check-prefix=LOOPS

/// lir-async-collectives: an all_reduce kernel whose next kernel does not
/// touch its buffers becomes a `start` kernel, and a `wait` kernel on the
/// same buffers goes right before the first kernel that touches one (or at
/// the end of the entry).

/// Two token ranges of a row-parallel projection (mir-overlap-collectives):
/// each range's sum travels while the next range's matmul computes; both
/// are waited for before the concat reads them.
// CHECK-LABEL: lir.entry @ranges
// CHECK: lir.kernel "matmul" ins(%[[X0:.*]], %[[W:.*]] : {{.*}}) outs(%[[P0:.*]] : memref<1x2x8xf32>)
// CHECK: lir.kernel "all_reduce" ins(%[[P0]] : memref<1x2x8xf32>) outs(%[[R0:.*]] : memref<1x2x8xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: lir.all_reduce %{{.*}} group_size 2 phase start : tensor<1x2x8xf32>
// CHECK: lir.kernel "matmul" ins(%[[X1:.*]], %[[W]] : {{.*}}) outs(%[[P1:.*]] : memref<1x2x8xf32>)
// CHECK: lir.kernel "all_reduce" ins(%[[P1]] : memref<1x2x8xf32>) outs(%[[R1:.*]] : memref<1x2x8xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: lir.all_reduce %{{.*}} group_size 2 phase start
// CHECK: lir.kernel "all_reduce_wait" ins(%[[P0]] : memref<1x2x8xf32>) outs(%[[R0]] : memref<1x2x8xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: lir.all_reduce %{{.*}} group_size 2 phase wait
// CHECK: lir.kernel "all_reduce_wait" ins(%[[P1]] : memref<1x2x8xf32>) outs(%[[R1]] : memref<1x2x8xf32>)
// CHECK: lir.kernel "concat" ins(%[[R0]], %[[R1]] : {{.*}})
/// Planned: the sums' buffers stay live until their waits (lir-verify-plan
/// checks that no two live buffers overlap).
// PLAN-LABEL: lir.entry @ranges
// PLAN: phase start
// PLAN: phase start
// PLAN: phase wait
// PLAN: phase wait
/// On the CPU: MPI_Iallreduce through the runtime, the independent matmul,
/// then the waits (on the sums' buffers), then the concat.
// LOOPS-LABEL: func.func @ranges_spmd(
// LOOPS: call @ranges_k{{[0-9]+}}_matmul
// LOOPS: call @ranges_k{{[0-9]+}}_all_reduce(
// LOOPS: call @ranges_k{{[0-9]+}}_matmul
// LOOPS: call @ranges_k{{[0-9]+}}_all_reduce(
// LOOPS: call @ranges_k{{[0-9]+}}_all_reduce_wait(
// LOOPS: call @ranges_k{{[0-9]+}}_all_reduce_wait(
// LOOPS: call @ranges_k{{[0-9]+}}_concat
// LOOPS-DAG: call @rlx_all_reduce_start_f32(
// LOOPS-DAG: call @rlx_all_reduce_wait(
lir.entry @ranges arena_size = 0, param_size = 0, alignment = 64 {
  %x = lir.alloc : memref<1x4x8xf32>
  %w = lir.alloc : memref<8x8xf32>
  %x0 = lir.view arena[0] source(%x : memref<1x4x8xf32>) : memref<1x2x8xf32, strided<[32, 8, 1]>>
  %p0 = lir.alloc : memref<1x2x8xf32>
  %r0 = lir.alloc : memref<1x2x8xf32>
  %x1 = lir.view arena[64] source(%x : memref<1x4x8xf32>) : memref<1x2x8xf32, strided<[32, 8, 1]>>
  %p1 = lir.alloc : memref<1x2x8xf32>
  %r1 = lir.alloc : memref<1x2x8xf32>
  %y = lir.alloc : memref<1x4x8xf32>
  lir.io input "x" %x : memref<1x4x8xf32>
  lir.io input "w" %w : memref<8x8xf32>
  lir.kernel "matmul" ins(%x0, %w : memref<1x2x8xf32, strided<[32, 8, 1]>>, memref<8x8xf32>) outs(%p0 : memref<1x2x8xf32>) {
  ^bb0(%a: tensor<1x2x8xf32>, %b: tensor<8x8xf32>):
    %m = mir.matmul %a, %b {transpose_rhs} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
    lir.yield %m : tensor<1x2x8xf32>
  }
  lir.kernel "all_reduce" ins(%p0 : memref<1x2x8xf32>) outs(%r0 : memref<1x2x8xf32>) {
  ^bb0(%a: tensor<1x2x8xf32>):
    %s = lir.all_reduce %a group_size 2 : tensor<1x2x8xf32>
    lir.yield %s : tensor<1x2x8xf32>
  }
  lir.kernel "matmul" ins(%x1, %w : memref<1x2x8xf32, strided<[32, 8, 1]>>, memref<8x8xf32>) outs(%p1 : memref<1x2x8xf32>) {
  ^bb0(%a: tensor<1x2x8xf32>, %b: tensor<8x8xf32>):
    %m = mir.matmul %a, %b {transpose_rhs} : (tensor<1x2x8xf32>, tensor<8x8xf32>) -> tensor<1x2x8xf32>
    lir.yield %m : tensor<1x2x8xf32>
  }
  lir.kernel "all_reduce" ins(%p1 : memref<1x2x8xf32>) outs(%r1 : memref<1x2x8xf32>) {
  ^bb0(%a: tensor<1x2x8xf32>):
    %s = lir.all_reduce %a group_size 2 : tensor<1x2x8xf32>
    lir.yield %s : tensor<1x2x8xf32>
  }
  lir.kernel "concat" ins(%r0, %r1 : memref<1x2x8xf32>, memref<1x2x8xf32>) outs(%y : memref<1x4x8xf32>) {
  ^bb0(%a: tensor<1x2x8xf32>, %b: tensor<1x2x8xf32>):
    %c = mir.concat %a, %b {axis = 1 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x4x8xf32>
    lir.yield %c : tensor<1x4x8xf32>
  }
  lir.io output "y" %y : memref<1x4x8xf32>
}

// -----

/// Left whole: the next kernel reads the sum (a decode step's residual).
// CHECK-LABEL: lir.entry @next_reads
// CHECK: lir.all_reduce %{{.*}} group_size 2 : tensor<4xf32>
// CHECK-NOT: phase
// CHECK-NOT: all_reduce_wait
lir.entry @next_reads arena_size = 0, param_size = 0, alignment = 64 {
  %p = lir.alloc : memref<4xf32>
  %r = lir.alloc : memref<4xf32>
  %e = lir.alloc : memref<4xf32>
  %f = lir.alloc : memref<4xf32>
  lir.io input "p" %p : memref<4xf32>
  lir.kernel "all_reduce" ins(%p : memref<4xf32>) outs(%r : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %s = lir.all_reduce %a group_size 2 : tensor<4xf32>
    lir.yield %s : tensor<4xf32>
  }
  lir.kernel "exp" ins(%r : memref<4xf32>) outs(%e : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %x = mir.exp %a : (tensor<4xf32>) -> tensor<4xf32>
    lir.yield %x : tensor<4xf32>
  }
  lir.kernel "exp" ins(%p : memref<4xf32>) outs(%f : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %x = mir.exp %a : (tensor<4xf32>) -> tensor<4xf32>
    lir.yield %x : tensor<4xf32>
  }
  lir.io output "e" %e : memref<4xf32>
  lir.io output "f" %f : memref<4xf32>
}

// -----

/// The wait goes before the first kernel touching either buffer: here one
/// reading the input through a view of it (the sum is only an output, read
/// after the entry returns).
// CHECK-LABEL: lir.entry @alias
// CHECK: lir.kernel "all_reduce"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: phase start
// CHECK: lir.kernel "exp" ins(%{{.*}} : memref<4xf32>) outs(%[[F:.*]] : memref<4xf32>)
// CHECK: lir.kernel "all_reduce_wait"
// CHECK: lir.kernel "exp" ins(%[[HALF:.*]] : memref<2xf32>)
lir.entry @alias arena_size = 0, param_size = 0, alignment = 64 {
  %p = lir.alloc : memref<4xf32>
  %q = lir.alloc : memref<4xf32>
  %r = lir.alloc : memref<4xf32>
  %f = lir.alloc : memref<4xf32>
  %g = lir.alloc : memref<2xf32>
  %half = lir.view arena[8] source(%p : memref<4xf32>) : memref<2xf32>
  lir.io input "p" %p : memref<4xf32>
  lir.io input "q" %q : memref<4xf32>
  lir.kernel "all_reduce" ins(%p : memref<4xf32>) outs(%r : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %s = lir.all_reduce %a group_size 2 : tensor<4xf32>
    lir.yield %s : tensor<4xf32>
  }
  lir.kernel "exp" ins(%q : memref<4xf32>) outs(%f : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %x = mir.exp %a : (tensor<4xf32>) -> tensor<4xf32>
    lir.yield %x : tensor<4xf32>
  }
  lir.kernel "exp" ins(%half : memref<2xf32>) outs(%g : memref<2xf32>) {
  ^bb0(%a: tensor<2xf32>):
    %x = mir.exp %a : (tensor<2xf32>) -> tensor<2xf32>
    lir.yield %x : tensor<2xf32>
  }
  lir.io output "r" %r : memref<4xf32>
  lir.io output "f" %f : memref<4xf32>
  lir.io output "g" %g : memref<2xf32>
}

// -----

/// No kernel after the independent one touches the buffers: the wait ends
/// the entry.
// CHECK-LABEL: lir.entry @at_end
// CHECK: phase start
// CHECK: lir.kernel "exp"
// CHECK: lir.kernel "all_reduce_wait"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: phase wait
// CHECK-NOT: lir.kernel
lir.entry @at_end arena_size = 0, param_size = 0, alignment = 64 {
  %p = lir.alloc : memref<4xf32>
  %q = lir.alloc : memref<4xf32>
  %r = lir.alloc : memref<4xf32>
  %f = lir.alloc : memref<4xf32>
  lir.io input "p" %p : memref<4xf32>
  lir.io input "q" %q : memref<4xf32>
  lir.kernel "all_reduce" ins(%p : memref<4xf32>) outs(%r : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %s = lir.all_reduce %a group_size 2 : tensor<4xf32>
    lir.yield %s : tensor<4xf32>
  }
  lir.kernel "exp" ins(%q : memref<4xf32>) outs(%f : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %x = mir.exp %a : (tensor<4xf32>) -> tensor<4xf32>
    lir.yield %x : tensor<4xf32>
  }
  lir.io output "r" %r : memref<4xf32>
  lir.io output "f" %f : memref<4xf32>
}
