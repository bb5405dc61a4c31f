//===- Passes.h - LIR passes -------------------------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_LIR_TRANSFORMS_PASSES_H
#define RLX_DIALECT_LIR_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::rlx::lir {

class EntryOp;

#define GEN_PASS_DECL
#include "RLX/Dialect/LIR/Transforms/Passes.h.inc"

/// Checks the storage plan of `entry` (see lir-verify-plan); emits an error
/// on the offending view and fails.
LogicalResult verifyPlan(EntryOp entry);

#define GEN_PASS_REGISTRATION
#include "RLX/Dialect/LIR/Transforms/Passes.h.inc"

} // namespace mlir::rlx::lir

#endif // RLX_DIALECT_LIR_TRANSFORMS_PASSES_H
