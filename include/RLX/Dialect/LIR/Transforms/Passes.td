//===- Passes.td - LIR passes ------------------------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_LIR_TRANSFORMS_PASSES_TD
#define RLX_DIALECT_LIR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def LIRPlanArenaPass : Pass<"lir-plan-arena", "ModuleOp"> {
  let summary = "Place the unplanned buffers of each entry in one arena";
  let description = [{
    Computes the live range of every `lir.alloc` over the kernel schedule
    (from the kernel that writes it, or the start for inputs, to the last
    kernel that reads it or any view aliasing it, or the end for outputs),
    lets an elementwise kernel write over a same-sized input buffer it is
    the last to read (`inplace`), places the buffers best-fit at the
    entry's alignment, replaces each `lir.alloc` by a `lir.view arena[...]`
    (views aliasing it move with it) and sets the entry's `arena_size`.
    Entries without `lir.alloc` are left unchanged. With `stats`, a remark
    per entry gives the arena size, the naive sum of all buffers and the
    peak live set.

    ```mlir
    // Before:
    %x = lir.alloc : memref<4x16xf32>
    %y = lir.alloc : memref<4x16xf32>
    // After (%x dies when %y is written, so they share storage):
    %x = lir.view arena[0] : memref<4x16xf32>
    %y = lir.view arena[0] : memref<4x16xf32>
    ```
  }];
  let options = [
    Option<"inplace", "inplace", "bool", /*default=*/"true",
           "Let elementwise kernels write over an input they read last">,
    Option<"stats", "stats", "bool", /*default=*/"false",
           "Report arena bytes, the naive sum and the peak live set">
  ];
}

def LIRVerifyPlanPass : Pass<"lir-verify-plan", "ModuleOp"> {
  let summary = "Check that no two simultaneously live buffers overlap";
  let description = [{
    For every `lir.entry`, computes the live range of each storage-owning
    arena view (from the first kernel that writes it, or the start for
    inputs, to the last kernel that reads it or any view aliasing it, or the
    end for outputs) and fails if two views overlap in bytes while both are
    live. The one legal overlap is in place: a kernel marked `inplace` may
    write a view over an input that it is the last to read. Also fails when
    a kernel reads an arena view that nothing wrote. Run it after
    `convert-mir-to-lir` to check the planner, or on hand-written LIR.
  }];
}

#endif // RLX_DIALECT_LIR_TRANSFORMS_PASSES_TD
