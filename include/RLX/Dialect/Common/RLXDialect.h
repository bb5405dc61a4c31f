//===- RLXDialect.h - The rlx dialect of shared attributes ------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_COMMON_RLXDIALECT_H
#define RLX_DIALECT_COMMON_RLXDIALECT_H

#include "mlir/IR/Dialect.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include "RLX/Dialect/Common/RLXDialect.h.inc"

namespace mlir::rlx {
/// `rlx.name`: the manifest name of a compiled function's argument or result.
constexpr llvm::StringLiteral kNameAttr = "rlx.name";
/// On an integer function argument: its values index a table of that many
/// rows (the runtime rejects others). mir-shard-tensor-parallel sets it on
/// the ids of a vocabulary-parallel embedding.
constexpr llvm::StringLiteral kIndexBoundAttr = "rlx.index_bound";
/// On a module: where the stored bytes of some params start within a page
/// of the file the runtime loads them from,
/// `{page_size = 4096 : i64, phases = {"name" = 96 : i64, ...}}`
/// (convert-mir-to-lir places those params in phase).
constexpr llvm::StringLiteral kParamPagesAttr = "rlx.param_pages";

/// The contents of a module's kParamPagesAttr.
struct ParamPages {
  /// A power of two; 0 when the module has no kParamPagesAttr.
  int64_t pageSize = 0;
  /// Phases in [0, pageSize), by param name.
  llvm::StringMap<int64_t> phases;
};
/// Reads `op`'s kParamPagesAttr; emits an error on `op` naming what is
/// wrong when it is malformed.
FailureOr<ParamPages> getParamPages(Operation *op);

/// On a module: the module is rank `rank`'s program of a tensor-parallel
/// split over `ranks` processes, `{rank = 1 : i64, ranks = 2 : i64}`
/// (mir-shard-tensor-parallel sets it; the runtime refuses to run the
/// program as another rank).
constexpr llvm::StringLiteral kRankAttr = "rlx.rank";

/// The contents of a module's kRankAttr.
struct ProgramRank {
  /// In [0, ranks); -1 when the module has no kRankAttr.
  int64_t rank = -1;
  int64_t ranks = 0;
};
/// Reads `op`'s kRankAttr; emits an error on `op` naming what is wrong when
/// it is malformed.
FailureOr<ProgramRank> getProgramRank(Operation *op);
} // namespace mlir::rlx

#endif // RLX_DIALECT_COMMON_RLXDIALECT_H
