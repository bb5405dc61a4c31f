//===- MIROps.cpp - MIR op implementations --------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Verifiers, type inference, folds and canonicalizations of the MIR ops.
// Comments `mir_<op>_cN` cite the numbered constraints of docs/Dialects/MIR.md.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::mir;

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  // mir_param_c1
  if (getName().empty())
    return emitOpError("requires a non-empty parameter name");
  // mir_param_c2
  if (!getType().hasStaticShape())
    return emitOpError("requires a static shape, got ") << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() { return success(); }

#define GET_OP_CLASSES
#include "RLX/Dialect/MIR/IR/MIROps.cpp.inc"
