//===- LIROps.cpp - LIR op implementations --------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Verifiers of the LIR ops. Comments `lir_<op>_cN` cite the numbered
// constraints of docs/Dialects/LIR.md.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::lir;

LogicalResult EntryOp::verify() { return success(); }
LogicalResult ViewOp::verify() { return success(); }

#define GET_OP_CLASSES
#include "RLX/Dialect/LIR/IR/LIROps.cpp.inc"
