//===- MIROps.h - MIR operations ---------------------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_IR_MIROPS_H
#define RLX_DIALECT_MIR_IR_MIROPS_H

#include "RLX/Dialect/Common/RLXEnums.h"
#include "RLX/Dialect/MIR/IR/MIRDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_ATTRDEF_CLASSES
#include "RLX/Dialect/MIR/IR/MIRAttrs.h.inc"

#define GET_OP_CLASSES
#include "RLX/Dialect/MIR/IR/MIROps.h.inc"

#endif // RLX_DIALECT_MIR_IR_MIROPS_H
