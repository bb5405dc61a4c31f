//===- Passes.h - MIR fusion passes -----------------------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_TRANSFORMS_PASSES_H
#define RLX_DIALECT_MIR_TRANSFORMS_PASSES_H

#include "RLX/Support/Enums.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class ModuleOp;
namespace rlx {

#define GEN_PASS_DECL
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"

} // namespace rlx
} // namespace mlir

#endif // RLX_DIALECT_MIR_TRANSFORMS_PASSES_H
