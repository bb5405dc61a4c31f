//===- FuseResidualNorm.cpp - Fuse a residual add and its norm ------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// IN:  %h = mir.add %x, %attn           (%x: the residual stream)
//      %n = mir.rms_norm %h, %w {epsilon, unit_offset}
// OUT: %h, %n = mir.fused_residual_rms_norm %attn, %x, %w {epsilon, ...}
// The same for mir.layer_norm → mir.fused_residual_layer_norm. The fused op
// is placed at the add, so the sum is available to the add's other users.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"
#include "mlir/IR/Dominance.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRFUSERESIDUALNORMPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::fusion;

/// True if `v` is used by ops other than `op`.
static bool hasOtherUsers(Value v, Operation *op) {
  return llvm::any_of(v.getUsers(),
                      [&](Operation *user) { return user != op; });
}

MIRMatchResult mlir::rlx::matchResidualNorm(Operation *norm,
                                            ResidualNormMatch &match) {
  if (!isa<mir::RmsNormOp, mir::LayerNormOp>(norm))
    return MIRMatchResult::noMatch();
  auto add = norm->getOperand(0).getDefiningOp<mir::AddOp>();
  if (!add || add->getBlock() != norm->getBlock())
    return MIRMatchResult::noMatch();
  Value lhs = add.getLhs(), rhs = add.getRhs();
  auto type = add.getType();
  if (lhs.getType() != type || rhs.getType() != type) {
    // A residual add of two activations whose types differ only in static
    // versus dynamic dims; anything else is a broadcast (e.g. a bias add).
    auto lt = cast<RankedTensorType>(lhs.getType());
    auto rt = cast<RankedTensorType>(rhs.getType());
    if (lt.getRank() != type.getRank() || rt.getRank() != type.getRank())
      return MIRMatchResult::noMatch();
    for (int64_t i = 0, e = type.getRank(); i < e; ++i)
      if (lt.getDimSize(i) != rt.getDimSize(i) &&
          (!ShapedType::isDynamic(lt.getDimSize(i)) &&
           !ShapedType::isDynamic(rt.getDimSize(i))))
        return MIRMatchResult::noMatch();
    return MIRMatchResult::missed(
        kDynamic, Twine("the residual add mixes static and dynamic dims"),
        "give both operands of the residual add one type (specialize the "
        "shapes)");
  }
  // The residual stream is the operand that lives on after the add.
  bool lhsLives = hasOtherUsers(lhs, add), rhsLives = hasOtherUsers(rhs, add);
  match.add = add;
  match.norm = norm;
  match.residual = (rhsLives && !lhsLives) ? rhs : lhs;
  match.input = match.residual == lhs ? rhs : lhs;
  return MIRMatchResult::matched();
}

FailureOr<Operation *>
mlir::rlx::fuseResidualNorm(RewriterBase &rewriter,
                            const ResidualNormMatch &match) {
  mir::AddOp add = match.add;
  // The norm's weights must be available at the add; parameters and
  // constants defined later are moved up.
  DominanceInfo dom;
  SmallVector<Operation *> hoist;
  for (Value w : match.norm->getOperands().drop_front()) {
    if (dom.properlyDominates(w, add))
      continue;
    Operation *def = w.getDefiningOp();
    if (!def || !isa<mir::ParamOp, mir::ConstantOp>(def) ||
        def->getBlock() != add->getBlock())
      return failure();
    hoist.push_back(def);
  }
  for (Operation *def : hoist)
    rewriter.moveOpBefore(def, add);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(add);
  MIRBuilder mb(rewriter,
                rewriter.getFusedLoc({add.getLoc(), match.norm->getLoc()}));
  std::pair<Value, Value> results;
  if (auto rms = dyn_cast<mir::RmsNormOp>(match.norm))
    results =
        mb.fusedResidualRmsNorm(match.input, match.residual, rms.getWeight(),
                                rms.getEpsilon(), rms.getUnitOffset());
  else {
    auto ln = cast<mir::LayerNormOp>(match.norm);
    results =
        mb.fusedResidualLayerNorm(match.input, match.residual, ln.getGamma(),
                                  ln.getBeta(), ln.getEpsilon());
  }
  Operation *fused = results.first.getDefiningOp();
  rewriter.replaceOp(match.norm, results.second);
  rewriter.replaceOp(add, results.first);
  return fused;
}

namespace {
/// The pattern, once per norm kind.
template <typename NormOp>
struct ResidualNormPattern : public OpRewritePattern<NormOp> {
  ResidualNormPattern(MLIRContext *ctx, MIRFusionControlFn control)
      : OpRewritePattern<NormOp>(ctx), control(std::move(control)) {}

  LogicalResult matchAndRewrite(NormOp op,
                                PatternRewriter &rewriter) const override {
    ResidualNormMatch match;
    MIRMatchResult result = matchResidualNorm(op, match);
    if (!result.isMatched())
      return rewriter.notifyMatchFailure(
          op, result.isMissed() ? result.describe() : "not the pattern");
    if (control && !control(op))
      return rewriter.notifyMatchFailure(op, "vetoed by the control function");
    if (failed(fuseResidualNorm(rewriter, match)))
      return rewriter.notifyMatchFailure(op, "the weights are not available "
                                             "at the residual add");
    return success();
  }

  MIRFusionControlFn control;
};

struct MIRFuseResidualNormPass
    : public mlir::rlx::impl::MIRFuseResidualNormPassBase<
          MIRFuseResidualNormPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(applyMIRFusions(getOperation(), {MIRFusionKind::ResidualNorm})))
      signalPassFailure();
  }
};
} // namespace

void mlir::rlx::populateMIRFuseResidualNormPatterns(
    RewritePatternSet &patterns, const MIRFusionControlFn &control) {
  patterns.add<ResidualNormPattern<mir::RmsNormOp>,
               ResidualNormPattern<mir::LayerNormOp>>(patterns.getContext(),
                                                      control);
}
