// RUN: rlx-opt %s --rlx-split-large-functions=calls-per-function=2 -split-input-file | FileCheck %s
// RUN: rlx-opt %s --rlx-split-large-functions=calls-per-function=0 -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-split-large-functions{calls-per-function=3})' -split-input-file | FileCheck %s --check-prefix=THREE

// Five calls in chunks of two, in order; each chunk recomputes the pure
// values it needs from the arguments, and the entry keeps only the calls.
// CHECK-LABEL: llvm.func @entry(
// CHECK-SAME: %[[P:.*]]: !llvm.ptr, %[[N:.*]]: i64)
// CHECK-NEXT: llvm.call @entry_part0(%[[P]], %[[N]])
// CHECK-NEXT: llvm.call @entry_part1(%[[P]], %[[N]])
// CHECK-NEXT: llvm.call @entry_part2(%[[P]], %[[N]])
// CHECK-NEXT: llvm.return
// CHECK: llvm.func internal @entry_part0(%[[P0:.*]]: !llvm.ptr, %[[N0:.*]]: i64) attributes {no_inline}
// CHECK: %[[G0:.*]] = llvm.getelementptr %[[P0]]
// CHECK: llvm.call @a(%[[G0]], %[[N0]])
// CHECK: %[[S0:.*]] = llvm.add %[[N0]]
// CHECK: llvm.call @b(%[[P0]], %[[S0]])
// CHECK-NEXT: llvm.return
// CHECK: llvm.func internal @entry_part1(
// CHECK: llvm.call @a(
// CHECK: llvm.call @b(
// CHECK-NEXT: llvm.return
// CHECK: llvm.func internal @entry_part2(%[[P2:.*]]: !llvm.ptr, %[[N2:.*]]: i64)
// CHECK: %[[G2:.*]] = llvm.getelementptr %[[P2]]
// CHECK: %[[S2:.*]] = llvm.add %[[N2]]
// CHECK: llvm.call @a(%[[G2]], %[[S2]])
// CHECK-NEXT: llvm.return

// OFF-LABEL: llvm.func @entry(
// OFF-NEXT: llvm.mlir.constant
// THREE-LABEL: llvm.func @entry(
// THREE-NEXT: llvm.call @entry_part0
// THREE-NEXT: llvm.call @entry_part1
// THREE-NEXT: llvm.return
module {
  llvm.func @a(!llvm.ptr, i64)
  llvm.func @b(!llvm.ptr, i64)
  llvm.func @entry(%p: !llvm.ptr, %n: i64) {
    %c = llvm.mlir.constant(8 : i64) : i64
    %g = llvm.getelementptr %p[%c] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.call @a(%g, %n) : (!llvm.ptr, i64) -> ()
    %s = llvm.add %n, %c : i64
    llvm.call @b(%p, %s) : (!llvm.ptr, i64) -> ()
    llvm.call @a(%g, %n) : (!llvm.ptr, i64) -> ()
    llvm.call @b(%p, %s) : (!llvm.ptr, i64) -> ()
    llvm.call @a(%g, %s) : (!llvm.ptr, i64) -> ()
    llvm.return
  }
}

// -----

// Left alone: a store (a side effect besides the calls) could not move.
// CHECK-LABEL: llvm.func @with_store(
// CHECK-NOT: _part
// CHECK: llvm.call @a
// CHECK-NEXT: llvm.store
// CHECK-COUNT-2: llvm.call @a
module {
  llvm.func @a(!llvm.ptr, i64)
  llvm.func @with_store(%p: !llvm.ptr, %n: i64) {
    llvm.call @a(%p, %n) : (!llvm.ptr, i64) -> ()
    llvm.store %n, %p : i64, !llvm.ptr
    llvm.call @a(%p, %n) : (!llvm.ptr, i64) -> ()
    llvm.call @a(%p, %n) : (!llvm.ptr, i64) -> ()
    llvm.return
  }
}

// -----

// Left alone: a call's result is used, and a function of several blocks.
// CHECK-LABEL: llvm.func @uses_result(
// CHECK-NOT: _part
// CHECK-LABEL: llvm.func @two_blocks(
// CHECK-NOT: _part
module {
  llvm.func @f(i64) -> i64
  llvm.func @uses_result(%n: i64) {
    %0 = llvm.call @f(%n) : (i64) -> i64
    %1 = llvm.call @f(%0) : (i64) -> i64
    %2 = llvm.call @f(%1) : (i64) -> i64
    llvm.return
  }
  llvm.func @two_blocks(%n: i64) {
    %0 = llvm.call @f(%n) : (i64) -> i64
    llvm.br ^bb1
  ^bb1:
    %1 = llvm.call @f(%n) : (i64) -> i64
    %2 = llvm.call @f(%n) : (i64) -> i64
    llvm.return
  }
}

// -----

// Chunk names do not clash with existing symbols.
// CHECK-LABEL: llvm.func @g(
// CHECK-NEXT: llvm.call @g_part1(
// CHECK-NEXT: llvm.call @g_part2(
// CHECK: llvm.func @g_part0()
module {
  llvm.func @h()
  llvm.func @g() {
    llvm.call @h() : () -> ()
    llvm.call @h() : () -> ()
    llvm.call @h() : () -> ()
    llvm.return
  }
  llvm.func @g_part0() {
    llvm.return
  }
}
