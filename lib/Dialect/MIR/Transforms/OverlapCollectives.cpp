//===- OverlapCollectives.cpp - Projections and all-reduces per token range
//===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// IN:  %p = mir.matmul %h, %w : (tensor<1x8x64xf32>, ...) -> tensor<1x8x32xf32>
//      %r = shard.all_reduce %p on @tp grid_axes = [0]
// OUT: per token range i of `chunks`:
//        %hi = mir.slice %h {axis = 1, start = s_i, size = n_i}
//        %pi = mir.matmul %hi, %w
//        %ri = shard.all_reduce %pi on @tp grid_axes = [0]
//      %r = mir.concat %r0, ..., {axis = 1}
// Each range's sum can then travel (lir-async-collectives) while the next
// range's projection computes.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Utils/Compose.h"
#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIROVERLAPCOLLECTIVESPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;

/// Tokens of a row-wise op's result `[..., tokens, features]` (static), or
/// nullopt.
static std::optional<int64_t> tokensOf(Value v) {
  auto ty = dyn_cast<RankedTensorType>(v.getType());
  if (!ty || ty.getRank() < 2 || ty.isDynamicDim(ty.getRank() - 2))
    return std::nullopt;
  return ty.getDimSize(ty.getRank() - 2);
}

/// Whether `op` computes each element from the same element of its one
/// operand (the compute type's casts and round trips between a projection
/// and its all-reduce, mir-compute-precision).
static bool isElementwiseStep(Operation *op) {
  return isa<mir::CastOp, mir::ElementwiseOp>(op) && op->getNumOperands() == 1;
}

/// What `reduce` sums, split-ready: a projection computing row by row over
/// the tokens (a matmul, or one expanded from an attention block) of an
/// input of its result's rank, then elementwise steps; each used only by
/// the next and the last by `reduce`. Returns them in program order, or
/// nothing.
static SmallVector<Operation *> rowParallelChain(shard::AllReduceOp reduce,
                                                 int64_t chunks) {
  std::optional<int64_t> tokens = tokensOf(reduce.getInput());
  if (!tokens || *tokens < chunks)
    return {};
  SmallVector<Operation *> chain;
  Value v = reduce.getInput();
  while (v.hasOneUse() && v.getDefiningOp() &&
         isElementwiseStep(v.getDefiningOp())) {
    chain.push_back(v.getDefiningOp());
    v = v.getDefiningOp()->getOperand(0);
  }
  if (!v.hasOneUse())
    return {};
  Operation *producer = v.getDefiningOp();
  if (auto block = dyn_cast_or_null<mir::AttentionBlockOp>(producer)) {
    OpBuilder b(block);
    MIRBuilder mb(b, block.getLoc());
    Value out = expandAttentionBlock(mb, block, /*composeCore=*/false);
    block.getResult().replaceAllUsesWith(out);
    block.erase();
    producer = out.getDefiningOp();
  }
  if (!isa_and_nonnull<mir::MatmulOp, mir::FusedMatmulOp>(producer))
    return {};
  auto inTy = cast<RankedTensorType>(producer->getOperand(0).getType());
  auto outTy = cast<RankedTensorType>(producer->getResult(0).getType());
  if (inTy.getRank() != outTy.getRank())
    return {};
  chain.push_back(producer);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

/// `chain` (a projection, then elementwise steps) and `reduce` as `chunks`
/// token ranges and a concat.
static void splitOverTokens(ArrayRef<Operation *> chain,
                            shard::AllReduceOp reduce, int64_t chunks) {
  Operation *projection = chain.front();
  auto resultTy = cast<RankedTensorType>(reduce.getInput().getType());
  int64_t axis = resultTy.getRank() - 2;
  int64_t tokens = resultTy.getDimSize(axis);
  OpBuilder b(reduce);
  MIRBuilder mb(b, reduce.getLoc());
  // Operands read row by row: the input, and a fused matmul's residual.
  SmallVector<Value> rowOperands = {projection->getOperand(0)};
  if (auto fused = dyn_cast<mir::FusedMatmulOp>(projection))
    if (Value residual = fused.getResidual())
      rowOperands.push_back(residual);
  SmallVector<Value> sums;
  for (int64_t i = 0, start = 0; i < chunks; ++i) {
    int64_t size = tokens / chunks + (i < tokens % chunks ? 1 : 0);
    IRMapping map;
    for (Value v : rowOperands)
      map.map(v, mb.slice(v, axis, start, size));
    auto rows = [&](Value v) {
      auto ty = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(ty.getShape());
      shape[axis] = size;
      return ty.clone(shape);
    };
    for (Operation *op : chain) {
      Operation *part = b.clone(*op, map);
      part->getResult(0).setType(rows(op->getResult(0)));
      map.map(op->getResult(0), part->getResult(0));
    }
    Operation *sum = b.clone(*reduce, map);
    sum->getResult(0).setType(rows(reduce.getResult()));
    sums.push_back(sum->getResult(0));
    start += size;
  }
  reduce.getResult().replaceAllUsesWith(mb.concat(sums, axis));
  reduce.erase();
  for (Operation *op : llvm::reverse(chain))
    op->erase();
}

namespace {
struct MIROverlapCollectivesPass
    : public mlir::rlx::impl::MIROverlapCollectivesPassBase<
          MIROverlapCollectivesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (chunks < 1) {
      getOperation().emitError("mir-overlap-collectives: chunks must be at "
                               "least 1, got ")
          << static_cast<int64_t>(chunks);
      return signalPassFailure();
    }
    if (chunks == 1)
      return;
    SmallVector<shard::AllReduceOp> reduces;
    getOperation().walk([&](shard::AllReduceOp r) { reduces.push_back(r); });
    for (shard::AllReduceOp reduce : reduces)
      if (SmallVector<Operation *> chain = rowParallelChain(reduce, chunks);
          !chain.empty())
        splitOverTokens(chain, reduce, chunks);
  }
};
} // namespace
