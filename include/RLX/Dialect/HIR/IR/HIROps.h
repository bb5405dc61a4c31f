//===- HIROps.h - HIR operations ---------------------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_HIR_IR_HIROPS_H
#define RLX_DIALECT_HIR_IR_HIROPS_H

#include "RLX/Dialect/Common/RLXEnums.h"
#include "RLX/Dialect/HIR/IR/HIRDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_ATTRDEF_CLASSES
#include "RLX/Dialect/HIR/IR/HIRAttrs.h.inc"

#define GET_OP_CLASSES
#include "RLX/Dialect/HIR/IR/HIROps.h.inc"

#endif // RLX_DIALECT_HIR_IR_HIROPS_H
