//===- LIROps.h - LIR operations ---------------------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_LIR_IR_LIROPS_H
#define RLX_DIALECT_LIR_IR_LIROPS_H

#include "RLX/Dialect/LIR/IR/LIRDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "RLX/Dialect/LIR/IR/LIREnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "RLX/Dialect/LIR/IR/LIRAttrs.h.inc"

#define GET_OP_CLASSES
#include "RLX/Dialect/LIR/IR/LIROps.h.inc"

#endif // RLX_DIALECT_LIR_IR_LIROPS_H
