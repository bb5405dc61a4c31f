//===- RLXDialect.cpp - The rlx dialect of shared attributes --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/Common/RLXDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::rlx;

#include "RLX/Dialect/Common/RLXDialect.cpp.inc"

void RLXDialect::initialize() {}

static LogicalResult verifyName(Operation *op, NamedAttribute attr,
                                StringRef where) {
  if (attr.getName() != kNameAttr)
    return op->emitOpError("unknown RLX attribute '")
           << attr.getName().getValue() << "' on " << where
           << " (RLX knows rlx.name on function arguments and results, and "
              "rlx.index_bound on arguments)";
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitOpError("rlx.name on ")
           << where << " must be a non-empty string, got " << attr.getValue();
  return success();
}

LogicalResult RLXDialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned region,
                                                   unsigned argIndex,
                                                   NamedAttribute attr) {
  if (attr.getName() != kIndexBoundAttr)
    return verifyName(op, attr, "argument " + std::to_string(argIndex));
  // rlx.index_bound: the argument's values index a table of that many rows.
  auto bound = dyn_cast<IntegerAttr>(attr.getValue());
  if (!bound || bound.getInt() <= 0)
    return op->emitOpError("rlx.index_bound on argument ")
           << argIndex << " must be a positive integer, got "
           << attr.getValue();
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (fn && region == 0 && argIndex < fn.getNumArguments()) {
    auto type = dyn_cast<ShapedType>(fn.getArgumentTypes()[argIndex]);
    if (!type || !type.getElementType().isInteger())
      return op->emitOpError("rlx.index_bound on argument ")
             << argIndex << " needs integer ids, got "
             << fn.getArgumentTypes()[argIndex];
  }
  return success();
}

LogicalResult RLXDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                      unsigned resultIndex,
                                                      NamedAttribute attr) {
  return verifyName(op, attr, "result " + std::to_string(resultIndex));
}

FailureOr<ParamPages> mlir::rlx::getParamPages(Operation *op) {
  ParamPages pages;
  Attribute attr = op->getAttr(kParamPagesAttr);
  if (!attr)
    return pages;
  auto bad = [&](const Twine &what) {
    return op->emitOpError() << kParamPagesAttr << " " << what;
  };
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict)
    return bad("must be a dictionary {page_size = N, phases = {...}}");
  auto page = dict.getAs<IntegerAttr>("page_size");
  auto phases = dict.getAs<DictionaryAttr>("phases");
  if (!page || !phases || dict.size() != 2)
    return bad("must hold exactly an integer 'page_size' and a dictionary "
               "'phases'");
  pages.pageSize = page.getValue().getSExtValue();
  if (pages.pageSize <= 0 || !llvm::isPowerOf2_64(pages.pageSize))
    return bad("has page_size " + Twine(pages.pageSize) +
               "; it must be a power of two");
  for (NamedAttribute phase : phases) {
    auto value = dyn_cast<IntegerAttr>(phase.getValue());
    if (!value)
      return bad("gives param '" + phase.getName().getValue() +
                 "' a phase that is not an integer");
    int64_t v = value.getValue().getSExtValue();
    if (v < 0 || v >= pages.pageSize)
      return bad("gives param '" + phase.getName().getValue() + "' the phase " +
                 Twine(v) + "; phases are integers in [0, " +
                 Twine(pages.pageSize) + ")");
    pages.phases[phase.getName().getValue()] = v;
  }
  return pages;
}

FailureOr<ProgramRank> mlir::rlx::getProgramRank(Operation *op) {
  ProgramRank result;
  Attribute attr = op->getAttr(kRankAttr);
  if (!attr)
    return result;
  auto dict = dyn_cast<DictionaryAttr>(attr);
  auto rank = dict ? dict.getAs<IntegerAttr>("rank") : IntegerAttr();
  auto ranks = dict ? dict.getAs<IntegerAttr>("ranks") : IntegerAttr();
  if (!rank || !ranks || dict.size() != 2)
    return op->emitOpError()
           << kRankAttr
           << " must be a dictionary of exactly the integers 'rank' and "
              "'ranks', got "
           << attr;
  result.rank = rank.getValue().getSExtValue();
  result.ranks = ranks.getValue().getSExtValue();
  if (result.ranks < 2 || result.rank < 0 || result.rank >= result.ranks)
    return op->emitOpError()
           << kRankAttr << " has rank " << result.rank << " of " << result.ranks
           << " ranks; ranks must be at least 2 and rank in [0, ranks)";
  return result;
}

LogicalResult RLXDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  if (attr.getName() == kParamPagesAttr || attr.getName() == kRankAttr) {
    if (!isa<ModuleOp>(op))
      return op->emitOpError()
             << attr.getName().getValue() << " belongs on a builtin.module";
    if (attr.getName() == kRankAttr)
      return getProgramRank(op);
    return getParamPages(op);
  }
  return op->emitOpError("unknown RLX attribute '")
         << attr.getName().getValue()
         << "' (RLX knows rlx.name on function arguments and results, and "
            "rlx.param_pages and rlx.rank on modules)";
}
