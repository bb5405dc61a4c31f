//===- LIRDialect.h - LIR dialect declaration --------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_LIR_IR_LIRDIALECT_H
#define RLX_DIALECT_LIR_IR_LIRDIALECT_H

#include "mlir/IR/Dialect.h"

#include "RLX/Dialect/LIR/IR/LIRDialect.h.inc"

#endif // RLX_DIALECT_LIR_IR_LIRDIALECT_H
