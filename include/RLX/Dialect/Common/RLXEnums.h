//===- RLXEnums.h - Enums shared by the RLX dialects -------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_COMMON_RLXENUMS_H
#define RLX_DIALECT_COMMON_RLXENUMS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringRef.h"
#include <optional>

#include "RLX/Dialect/Common/RLXEnums.h.inc"

#endif // RLX_DIALECT_COMMON_RLXENUMS_H
