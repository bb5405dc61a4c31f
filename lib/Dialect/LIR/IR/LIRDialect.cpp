//===- LIRDialect.cpp - LIR dialect registration --------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/LIR/IR/LIRDialect.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/MIR/IR/MIRDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rlx::lir;

#include "RLX/Dialect/LIR/IR/LIRDialect.cpp.inc"
#include "RLX/Dialect/LIR/IR/LIREnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "RLX/Dialect/LIR/IR/LIRAttrs.cpp.inc"

void LIRDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "RLX/Dialect/LIR/IR/LIROps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "RLX/Dialect/LIR/IR/LIRAttrs.cpp.inc"
      >();
}
