//===- Passes.h - RLX cross-dialect passes ----------------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_TRANSFORMS_PASSES_H
#define RLX_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::rlx {

#define GEN_PASS_DECL
#include "RLX/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "RLX/Transforms/Passes.h.inc"

} // namespace mlir::rlx

#endif // RLX_TRANSFORMS_PASSES_H
