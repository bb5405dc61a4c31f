//===- Passes.td - LIR passes ------------------------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_LIR_TRANSFORMS_PASSES_TD
#define RLX_DIALECT_LIR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

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
