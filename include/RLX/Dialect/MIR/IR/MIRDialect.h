//===- MIRDialect.h - MIR dialect declaration -------------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_IR_MIRDIALECT_H
#define RLX_DIALECT_MIR_IR_MIRDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Dialect.h"

#include "RLX/Dialect/MIR/IR/MIRDialect.h.inc"

#endif // RLX_DIALECT_MIR_IR_MIRDIALECT_H
