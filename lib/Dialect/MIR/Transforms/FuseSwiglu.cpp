//===- FuseSwiglu.cpp - Fuse the gated linear unit ------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// IN:  %g = mir.slice %gu {axis = last, start = 0, size = I}
//      %a = mir.silu %g                  (or mir.gelu {tanh_approx}, ...)
//      %u = mir.slice %gu {axis = last, start = I, size = I}
//      %h = mir.mul %a, %u               (gu: [..., 2I])
// OUT: %h = mir.fused_glu %gu {activation = silu}
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRFUSESWIGLUPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::fusion;

/// The projection input of `v` when it is `mir.matmul %x, %w`.
static Value getMatmulInput(Value v) {
  auto mm = v.getDefiningOp<mir::MatmulOp>();
  return mm ? mm.getLhs() : Value();
}

/// Matches with `act` on operand `a` and the up half on `b`.
static MIRMatchResult matchOrdered(mir::MulOp op, Value a, Value b,
                                   SwigluMatch &match) {
  Operation *act = a.getDefiningOp();
  std::optional<Activation> kind = getActivation(act);
  if (!kind)
    return MIRMatchResult::noMatch();
  Value actIn = act->getOperand(0);
  auto gate = actIn.getDefiningOp<mir::SliceOp>();
  auto up = b.getDefiningOp<mir::SliceOp>();
  if (!gate || !up || gate.getInput() != up.getInput()) {
    // Gate and up still separate projections.
    Value xg = getMatmulInput(actIn), xu = getMatmulInput(b);
    if (!xg || !xu || actIn.getType() != b.getType())
      return MIRMatchResult::noMatch();
    if (xg == xu)
      return MIRMatchResult::missed(
          kNotConcatenated, "gate and up are two matmuls on one input",
          "run mir-fuse-shared-input-matmuls first (both weights must be "
          "mir.param)");
    return MIRMatchResult::missed(
        kNotShared, "gate and up are projected from different inputs",
        "project gate and up from one tensor so they can share one matmul");
  }
  Value gu = gate.getInput();
  auto guType = cast<RankedTensorType>(gu.getType());
  int64_t last = guType.getRank() - 1;
  if (gate.getAxis() != last || up.getAxis() != last ||
      gate.getSize() != up.getSize() || gate.getStep() != 1 ||
      up.getStep() != 1)
    return MIRMatchResult::noMatch();
  int64_t width = guType.getDimSize(last), half = gate.getSize();
  if (ShapedType::isDynamic(width))
    return MIRMatchResult::missed(
        kDynamic, "the gate/up projection has a dynamic last dim",
        "give the projection a static width so the halves can be checked");
  if (width != 2 * half)
    return MIRMatchResult::noMatch();
  auto normalize = [&](int64_t start) {
    return start < 0 ? start + width : start;
  };
  int64_t gateStart = normalize(gate.getStart()),
          upStart = normalize(up.getStart());
  if (gateStart == half && upStart == 0)
    return MIRMatchResult::missed(
        kWrongOrder, "the activation is applied to the second half",
        "concatenate the gate projection first (gate rows, then up rows): "
        "mir.fused_glu activates the first half");
  if (gateStart != 0 || upStart != half)
    return MIRMatchResult::noMatch();
  for (Operation *inner : {act, gate.getOperation(), up.getOperation()})
    if (!inner->getResult(0).hasOneUse())
      return multiConsumer(inner);
  match.mul = op;
  match.gateUp = gu;
  match.activationOp = act;
  match.gate = gate;
  match.up = up;
  match.activation = *kind;
  return MIRMatchResult::matched();
}

MIRMatchResult mlir::rlx::matchSwiglu(mir::MulOp op, SwigluMatch &match) {
  MIRMatchResult first = matchOrdered(op, op.getLhs(), op.getRhs(), match);
  if (first.getStatus() != MIRMatchResult::Status::NoMatch)
    return first;
  return matchOrdered(op, op.getRhs(), op.getLhs(), match);
}

FailureOr<mir::FusedGluOp> mlir::rlx::fuseSwiglu(RewriterBase &rewriter,
                                                 const SwigluMatch &match) {
  mir::MulOp mul = match.mul;
  mir::SliceOp gate = match.gate, up = match.up;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(mul);
  MIRBuilder mb(rewriter, mul.getLoc());
  Value glu = mb.fusedGlu(match.gateUp, match.activation);
  if (glu.getType() != mul.getType()) {
    rewriter.eraseOp(glu.getDefiningOp());
    return failure();
  }
  rewriter.replaceOp(mul, glu);
  eraseDeadOps(rewriter, {gate, match.activationOp, up});
  return glu.getDefiningOp<mir::FusedGluOp>();
}

void mlir::rlx::populateMIRFuseSwigluPatterns(
    RewritePatternSet &patterns, const MIRFusionControlFn &control) {
  patterns.add<FusionPattern<mir::MulOp, SwigluMatch, matchSwiglu, fuseSwiglu>>(
      patterns.getContext(), control);
}

namespace {
struct MIRFuseSwigluPass
    : public mlir::rlx::impl::MIRFuseSwigluPassBase<MIRFuseSwigluPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(applyMIRFusions(getOperation(), {MIRFusionKind::Swiglu})))
      signalPassFailure();
  }
};
} // namespace
