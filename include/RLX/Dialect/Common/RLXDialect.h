//===- RLXDialect.h - The rlx dialect of shared attributes ------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_COMMON_RLXDIALECT_H
#define RLX_DIALECT_COMMON_RLXDIALECT_H

#include "mlir/IR/Dialect.h"
#include "llvm/ADT/StringRef.h"

#include "RLX/Dialect/Common/RLXDialect.h.inc"

namespace mlir::rlx {
/// `rlx.name`: the manifest name of a compiled function's argument or result.
constexpr llvm::StringLiteral kNameAttr = "rlx.name";
/// On an integer function argument: its values index a table of that many
/// rows (the runtime rejects others). mir-shard-tensor-parallel sets it on
/// the ids of a vocabulary-parallel embedding.
constexpr llvm::StringLiteral kIndexBoundAttr = "rlx.index_bound";
} // namespace mlir::rlx

#endif // RLX_DIALECT_COMMON_RLXDIALECT_H
