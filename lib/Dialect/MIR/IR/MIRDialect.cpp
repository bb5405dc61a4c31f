//===- MIRDialect.cpp - MIR dialect registration --------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/IR/MIRDialect.h"
#include "RLX/Dialect/Common/RLXDialect.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rlx::mir;

#include "RLX/Dialect/MIR/IR/MIRDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "RLX/Dialect/MIR/IR/MIRAttrs.cpp.inc"

void MIRDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "RLX/Dialect/MIR/IR/MIROps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "RLX/Dialect/MIR/IR/MIRAttrs.cpp.inc"
      >();
}

Operation *MIRDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
