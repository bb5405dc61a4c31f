//===- HIRDialect.h - HIR dialect declaration --------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_HIR_IR_HIRDIALECT_H
#define RLX_DIALECT_HIR_IR_HIRDIALECT_H

#include "mlir/IR/Dialect.h"

#include "RLX/Dialect/HIR/IR/HIRDialect.h.inc"

#endif // RLX_DIALECT_HIR_IR_HIRDIALECT_H
