//===- HIROps.cpp - HIR op implementations --------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Verifiers for the HIR ops. Comments `hir_<op>_cN` cite the numbered
// constraints of docs/Dialects/HIR.md; test/Dialect/HIR/invalid.mlir has a case
// for each.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::hir;

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  // hir_param_c1: the name is not empty.
  if (getName().empty())
    return emitOpError("requires a non-empty parameter name");
  // hir_param_c2: the shape is static.
  if (!getType().hasStaticShape())
    return emitOpError("requires a static shape, got ") << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// RmsNormOp
//===----------------------------------------------------------------------===//

LogicalResult RmsNormOp::verify() {
  auto xTy = getInput().getType();
  auto wTy = getWeight().getType();
  // hir_rms_norm_c1: weight is [hidden].
  if (wTy.getRank() != 1 || xTy.getRank() < 1 ||
      (!xTy.isDynamicDim(xTy.getRank() - 1) &&
       wTy.getDimSize(0) != xTy.getDimSize(xTy.getRank() - 1)))
    return emitOpError("weight must be 1-D and match the last dimension of the "
                       "input, got ")
           << wTy << " for " << xTy;
  // hir_rms_norm_c2: epsilon is positive.
  if (!(getEpsilon().convertToFloat() > 0.0f))
    return emitOpError("epsilon must be positive");
  return success();
}

#define GET_OP_CLASSES
#include "RLX/Dialect/HIR/IR/HIROps.cpp.inc"
