//===- EmitterOps.cpp - HIR blocks for custom stages ----------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "EmitterOps.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Weights/WeightSource.h"
#include <algorithm>

using namespace rlx;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using mlir::Value;

Expected<Value> rlx::emitterLinear(Emitter &e, Value x, StringRef prefix,
                                   int64_t out, bool bias) {
  int64_t in = e.shape(x).back();
  auto w = e.param((prefix + ".weight").str(), {out, in});
  if (!w)
    return w.takeError();
  llvm::SmallVector<Value, 3> operands = {x, *w};
  if (bias) {
    auto b = e.param((prefix + ".bias").str(), {out});
    if (!b)
      return b.takeError();
    operands.push_back(*b);
  }
  llvm::SmallVector<int64_t, 4> shape = e.shape(x);
  shape.back() = out;
  auto op = e.create("hir.linear", e.tensorType(shape), operands);
  if (!op)
    return op.takeError();
  return (*op)->getResult(0);
}

/// hir.attention with mask `kind` (and the padding `mask`).
static Expected<Value> attention(Emitter &e, Value q, Value k, Value v,
                                 Value mask, mlir::rlx::MaskKind kind,
                                 int64_t heads, int64_t kvHeads,
                                 int64_t headDim) {
  mlir::OpBuilder &b = e.builder();
  mlir::NamedAttribute attrs[] = {
      e.i64Attr("num_heads", heads), e.i64Attr("num_kv_heads", kvHeads),
      e.i64Attr("head_dim", headDim),
      b.getNamedAttr("mask_kind",
                     mlir::rlx::hir::MaskKindAttr::get(b.getContext(), kind))};
  llvm::SmallVector<Value, 4> operands = {q, k, v};
  if (mask)
    operands.push_back(mask);
  auto op = e.create("hir.attention", q.getType(), operands, attrs);
  if (!op)
    return op.takeError();
  return (*op)->getResult(0);
}

Expected<Value> rlx::emitterAttention(Emitter &e, Value q, Value k, Value v,
                                      int64_t heads, int64_t kvHeads,
                                      int64_t headDim, bool causal) {
  return attention(e, q, k, v, nullptr,
                   causal ? mlir::rlx::MaskKind::Causal
                          : mlir::rlx::MaskKind::None,
                   heads, kvHeads, headDim);
}

Expected<Value> rlx::emitterMaskedAttention(Emitter &e, Value q, Value k,
                                            Value v, Value mask, int64_t heads,
                                            int64_t kvHeads, int64_t headDim) {
  return attention(e, q, k, v, mask, mlir::rlx::MaskKind::Padding, heads,
                   kvHeads, headDim);
}

Error rlx::checkAllWeightsRead(const WeightSource &weights,
                               const BuiltModel &built, StringRef what) {
  std::vector<std::string> unused;
  for (const std::string &name : weights.names())
    if (!std::binary_search(built.params.begin(), built.params.end(), name))
      unused.push_back(name);
  if (unused.empty())
    return Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      weights.description() + ": " + llvm::Twine(unused.size()) + " tensors " +
          what + " does not use, first '" + unused.front() +
          "' (the checkpoint does not match its config)");
}
