//===- HIRDialect.cpp - HIR dialect registration --------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/HIR/IR/HIRDialect.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/MIR/IR/MIRDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rlx::hir;

#include "RLX/Dialect/HIR/IR/HIRDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "RLX/Dialect/HIR/IR/HIRAttrs.cpp.inc"

void HIRDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "RLX/Dialect/HIR/IR/HIROps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "RLX/Dialect/HIR/IR/HIRAttrs.cpp.inc"
      >();
}
