//===- FuseDequantize.cpp - Read weights as they are stored ---------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// IN:  %f = mir.dequantize %w      (%w: f16, bf16 or !mir.quant<...>)
//      %y = mir.matmul %x, %f {transpose_rhs}
//      %e = mir.gather %f, %ids
//      (and an attention block's w_qkv / w_o)
// OUT: %y = mir.matmul %x, %w {transpose_rhs}      (reads the blocks)
//      %e = mir.gather %w, %ids                     (rows dequantized)
//      (an f16/bf16 table: %e = mir.cast (mir.gather %w, %ids))
//
// The weight stays in its stored precision up to the kernel that reads it;
// decode then streams the stored bytes, not an f32 copy.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRFUSEDEQUANTIZEPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::fusion;

/// Whether `use` (an operand reading a dequantized weight) can read the
/// stored weight instead.
static bool canReadStored(OpOperand &use) {
  Operation *user = use.getOwner();
  unsigned n = use.getOperandNumber();
  if (auto mm = dyn_cast<mir::MatmulOp>(user))
    return n == 1 && mm.getTransposeRhs() && !mm.getTransposeLhs() &&
           mm.getLhs().getType().getElementType().isF32();
  if (auto fm = dyn_cast<mir::FusedMatmulOp>(user))
    return use.get() == fm.getWeight() && fm.getTransposeRhs() &&
           fm.getInput().getType().getElementType().isF32();
  if (auto g = dyn_cast<mir::GatherOp>(user))
    return n == 0 && g.getAxis() == 0 && g.getTable().getType().getRank() == 2;
  // An attention block's projections, [N, K] weights read as its matmuls
  // read them.
  if (auto block = dyn_cast<mir::AttentionBlockOp>(user))
    return (use.get() == block.getWQkv() || use.get() == block.getWO()) &&
           block.getInput().getType().getElementType().isF32();
  return false;
}

MIRMatchResult mlir::rlx::matchDequantize(mir::DequantizeOp op,
                                          DequantizeMatch &match) {
  if (op.getType().getElementType() != Float32Type::get(op.getContext()))
    return MIRMatchResult::missed(
        kNotFused, "the weight is dequantized to a type other than f32",
        "dequantize to f32: the kernels read stored weights into f32");
  match = DequantizeMatch();
  match.dequantize = op;
  for (OpOperand &use : op->getUses()) {
    if (!canReadStored(use))
      return MIRMatchResult::missed(
          kStoredWeight,
          ("'" + use.getOwner()->getName().getStringRef() +
           "' reads the dequantized weight")
              .str(),
          "only transposed matmuls (weights [N, K]), attention blocks' "
          "projections and row gathers read weights as they are stored; "
          "keep other uses in f32");
    match.uses.push_back(&use);
  }
  if (match.uses.empty())
    return MIRMatchResult::noMatch();
  return MIRMatchResult::matched();
}

FailureOr<mir::DequantizeOp>
mlir::rlx::fuseDequantize(RewriterBase &rewriter,
                          const DequantizeMatch &match) {
  mir::DequantizeOp op = match.dequantize;
  Value stored = op.getInput();
  bool quant = isa<mir::QuantType>(op.getInput().getType().getElementType());
  // Copy: rewriting a use removes it from the use list.
  SmallVector<std::pair<Operation *, unsigned>> uses;
  for (OpOperand *use : match.uses)
    uses.push_back({use->getOwner(), use->getOperandNumber()});
  for (auto [user, n] : uses) {
    auto gather = dyn_cast<mir::GatherOp>(user);
    if (!gather || quant) {
      // Matmuls read any stored type; a gather dequantizes ggml rows itself.
      rewriter.modifyOpInPlace(user, [&] { user->setOperand(n, stored); });
      continue;
    }
    // f16/bf16 rows: gather them as stored, widen the (few) rows gathered.
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(gather);
    auto narrow = mir::GatherOp::create(rewriter, gather.getLoc(), stored,
                                        gather.getIndices(), gather.getAxis());
    auto wide = mir::CastOp::create(rewriter, gather.getLoc(), gather.getType(),
                                    narrow.getResult());
    rewriter.replaceOp(gather, wide.getResult());
  }
  if (op->use_empty())
    rewriter.eraseOp(op);
  return op;
}

void mlir::rlx::populateMIRFuseDequantizePatterns(
    RewritePatternSet &patterns, const MIRFusionControlFn &control) {
  patterns.add<FusionPattern<mir::DequantizeOp, DequantizeMatch,
                             matchDequantize, fuseDequantize>>(
      patterns.getContext(), control);
}

namespace {
struct MIRFuseDequantizePass
    : public mlir::rlx::impl::MIRFuseDequantizePassBase<MIRFuseDequantizePass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(applyMIRFusions(getOperation(), {MIRFusionKind::Dequantize})))
      signalPassFailure();
  }
};
} // namespace
