//===- FuseMatmulEpilogue.cpp - Fuse bias, activation, residual -----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// IN:  %y = mir.matmul %x, %w {transpose_rhs}
//      %b1 = mir.add %y, %bias          ([N] bias, optional)
//      %a = mir.gelu %b1                (activation, optional)
//      %r = mir.add %res, %a            (residual of the result type, optional)
// OUT: %r = mir.fused_matmul %x, %w bias(%bias) residual(%res)
//          {transpose_rhs, activation = gelu}
// A residual add whose sum feeds a norm is left to mir-fuse-residual-norm.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRFUSEMATMULEPILOGUEPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::fusion;

/// `add(cur, bias)` with a 1-D `[N]` bias: returns the bias.
static Value getBias(Operation *user, Value cur) {
  auto add = dyn_cast_or_null<mir::AddOp>(user);
  if (!add || add.getType() != cur.getType())
    return nullptr;
  Value other = add.getLhs() == cur ? add.getRhs() : add.getLhs();
  auto type = cast<RankedTensorType>(other.getType());
  int64_t n = cast<RankedTensorType>(cur.getType()).getShape().back();
  if (other == cur || type.getRank() != 1 ||
      !mir::areDimsCompatible(type.getDimSize(0), n))
    return nullptr;
  return other;
}

/// True if the sum `v` is normalized by a mir.rms_norm or mir.layer_norm.
static bool feedsNorm(Value v) {
  return llvm::any_of(v.getUsers(), [&](Operation *user) {
    return isa<mir::RmsNormOp, mir::LayerNormOp>(user) &&
           user->getOperand(0) == v;
  });
}

/// `add(cur, residual)` with a residual of cur's type whose sum does not feed
/// a norm: returns the residual.
static Value getResidual(Operation *user, Value cur) {
  auto add = dyn_cast_or_null<mir::AddOp>(user);
  if (!add || add.getType() != cur.getType())
    return nullptr;
  Value other = add.getLhs() == cur ? add.getRhs() : add.getLhs();
  if (other == cur || other.getType() != cur.getType() ||
      feedsNorm(add.getResult()))
    return nullptr;
  return other;
}

/// Float unary ops that fused_matmul cannot take as its activation.
static bool isUnsupportedActivation(Operation *op, Value cur) {
  return isa_and_nonnull<mir::ExpOp, mir::LogOp, mir::SqrtOp, mir::RsqrtOp,
                         mir::ErfOp, mir::SinOp, mir::CosOp, mir::NegOp>(op) &&
         op->getOperand(0) == cur;
}

static constexpr StringLiteral kActivationHint =
    "mir.fused_matmul takes gelu, gelu (tanh), silu, relu, sigmoid, tanh or "
    "a mir.activation; the op stays separate";

/// Diagnoses the result `cur` of a matmul (or of a fused matmul without
/// activation) whose epilogue cannot be extended.
static MIRMatchResult diagnoseTail(Value cur, bool canTakeBias) {
  if (cur.hasOneUse()) {
    Operation *user = *cur.getUsers().begin();
    if (isUnsupportedActivation(user, cur))
      return MIRMatchResult::missed(
          kUnsupportedActivation,
          Twine("'") + user->getName().getStringRef() + "'", kActivationHint);
    return MIRMatchResult::noMatch();
  }
  for (Operation *user : cur.getUsers())
    if ((canTakeBias && getBias(user, cur)) || getActivation(user))
      return multiConsumer(cur.getDefiningOp(),
                           "the matmul result is also used before its "
                           "epilogue; the epilogue op stays separate");
  return MIRMatchResult::noMatch();
}

MIRMatchResult mlir::rlx::matchMatmulEpilogue(mir::MatmulOp op,
                                              MatmulEpilogueMatch &match) {
  Value cur = op.getResult();
  Operation *user = getSingleUser(cur);
  if (op.getTransposeLhs()) {
    if (user && (getBias(user, cur) || getActivation(user)))
      return MIRMatchResult::missed(
          kLayout, "the matmul transposes its lhs",
          "mir.fused_matmul has no transpose_lhs; transpose the input "
          "explicitly");
    return MIRMatchResult::noMatch();
  }
  match.matmul = op;
  match.last = op;
  if (Value bias = user ? getBias(user, cur) : Value()) {
    match.biasAdd = cast<mir::AddOp>(user);
    match.bias = bias;
    cur = user->getResult(0);
    match.last = user;
    user = getSingleUser(cur);
  }
  if (std::optional<Activation> act = getActivation(user)) {
    match.activationOp = user;
    match.activation = *act;
    cur = user->getResult(0);
    match.last = user;
    user = getSingleUser(cur);
  }
  if (Value residual = user ? getResidual(user, cur) : Value()) {
    match.residualAdd = cast<mir::AddOp>(user);
    match.residual = residual;
    match.last = user;
  }
  if (match.last != op)
    return MIRMatchResult::matched();
  return diagnoseTail(op.getResult(), /*canTakeBias=*/true);
}

FailureOr<mir::FusedMatmulOp>
mlir::rlx::fuseMatmulEpilogue(RewriterBase &rewriter,
                              const MatmulEpilogueMatch &match) {
  mir::MatmulOp matmul = match.matmul;
  if (match.last == matmul.getOperation())
    return failure();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(match.last);
  MIRBuilder mb(rewriter, match.last->getLoc());
  Value fused = mb.fusedMatmul(matmul.getLhs(), matmul.getRhs(), match.bias,
                               match.residual, match.activation,
                               matmul.getTransposeRhs());
  if (fused.getType() != match.last->getResult(0).getType())
    return failure();
  SmallVector<Operation *> chain = {matmul};
  if (match.biasAdd)
    chain.push_back(match.biasAdd);
  if (match.activationOp)
    chain.push_back(match.activationOp);
  rewriter.replaceOp(match.last, fused);
  llvm::erase(chain, match.last);
  eraseDeadOps(rewriter, chain);
  return fused.getDefiningOp<mir::FusedMatmulOp>();
}

MIRMatchResult fusion::diagnoseFusedMatmulEpilogue(mir::FusedMatmulOp op) {
  if (op.getActivation() != Activation::None || op.getResidual())
    return MIRMatchResult::noMatch();
  return diagnoseTail(op.getResult(), /*canTakeBias=*/false);
}

void mlir::rlx::populateMIRFuseMatmulEpiloguePatterns(
    RewritePatternSet &patterns, const MIRFusionControlFn &control) {
  patterns.add<FusionPattern<mir::MatmulOp, MatmulEpilogueMatch,
                             matchMatmulEpilogue, fuseMatmulEpilogue>>(
      patterns.getContext(), control);
}

namespace {
struct MIRFuseMatmulEpiloguePass
    : public mlir::rlx::impl::MIRFuseMatmulEpiloguePassBase<
          MIRFuseMatmulEpiloguePass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(
            applyMIRFusions(getOperation(), {MIRFusionKind::MatmulEpilogue})))
      signalPassFailure();
  }
};
} // namespace
