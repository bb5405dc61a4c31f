//===- RLXDialect.cpp - The rlx dialect of shared attributes --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/Common/RLXDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"

using namespace mlir;
using namespace mlir::rlx;

#include "RLX/Dialect/Common/RLXDialect.cpp.inc"

void RLXDialect::initialize() {}

static LogicalResult verifyName(Operation *op, NamedAttribute attr,
                                StringRef where) {
  if (attr.getName() != kNameAttr)
    return op->emitOpError("unknown RLX attribute '")
           << attr.getName().getValue() << "' on " << where
           << " (RLX knows rlx.name on function arguments and results)";
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitOpError("rlx.name on ")
           << where << " must be a non-empty string, got " << attr.getValue();
  return success();
}

LogicalResult RLXDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                   unsigned argIndex,
                                                   NamedAttribute attr) {
  return verifyName(op, attr, "argument " + std::to_string(argIndex));
}

LogicalResult RLXDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                      unsigned resultIndex,
                                                      NamedAttribute attr) {
  return verifyName(op, attr, "result " + std::to_string(resultIndex));
}

LogicalResult RLXDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  return op->emitOpError("unknown RLX attribute '")
         << attr.getName().getValue()
         << "' (RLX knows rlx.name on function arguments and results)";
}
