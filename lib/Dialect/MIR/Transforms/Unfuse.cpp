//===- Unfuse.cpp - Fused MIR ops back into primitives --------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mir-unfuse: every fused MIR op becomes the composition of primitive ops its
// description defines, built with the same helpers the `fusable` HIR lowering
// uses (RLX/Dialect/MIR/Utils/Compose.h). What cannot be expressed stays
// fused, and the pass says so with a remark.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Transforms/Transforms.h"
#include "RLX/Dialect/MIR/Utils/Compose.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRUNFUSEPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;

//===----------------------------------------------------------------------===//
// What cannot be unfused
//===----------------------------------------------------------------------===//

/// The MIR op a scalar op of a mir.elementwise body stands for, or "".
static StringRef primitiveOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, StringRef>(op)
      .Case([](arith::AddFOp) { return "mir.add"; })
      .Case([](arith::SubFOp) { return "mir.sub"; })
      .Case([](arith::MulFOp) { return "mir.mul"; })
      .Case([](arith::DivFOp) { return "mir.div"; })
      .Case([](arith::MaximumFOp) { return "mir.max"; })
      .Case([](arith::MinimumFOp) { return "mir.min"; })
      .Case([](math::PowFOp) { return "mir.pow"; })
      .Case([](math::ExpOp) { return "mir.exp"; })
      .Case([](math::LogOp) { return "mir.log"; })
      .Case([](math::SqrtOp) { return "mir.sqrt"; })
      .Case([](math::RsqrtOp) { return "mir.rsqrt"; })
      .Case([](math::TanhOp) { return "mir.tanh"; })
      .Case([](math::ErfOp) { return "mir.erf"; })
      .Case([](math::SinOp) { return "mir.sin"; })
      .Case([](math::CosOp) { return "mir.cos"; })
      .Case([](arith::NegFOp) { return "mir.neg"; })
      .Case([](math::AbsFOp) { return "mir.abs"; })
      .Case([](math::FloorOp) { return "mir.floor"; })
      .Case([](math::CeilOp) { return "mir.ceil"; })
      .Case([](math::RoundEvenOp) { return "mir.round"; })
      .Default([](Operation *) { return StringRef(); });
}

/// Why `op` (a fused MIR op) cannot be expanded, or "" when it can.
static std::string blocker(Operation *op) {
  if (auto attn = dyn_cast<mir::AttentionOp>(op)) {
    if (!canComposeAttention(attn.getQuery(), attn.getKey(),
                             attn.getMaskKind()))
      return "its causal / sliding-window mask needs static sequence lengths";
    return "";
  }
  if (auto block = dyn_cast<mir::AttentionBlockOp>(op)) {
    if (!canComposeAttention(block.getInput(), block.getInput(),
                             block.getMaskKind()))
      return "its causal / sliding-window mask needs a static sequence length";
    return "";
  }
  if (auto glu = dyn_cast<mir::FusedGluOp>(op)) {
    auto ty = MIRBuilder::typeOf(glu.getGateUp());
    if (ShapedType::isDynamic(ty.getDimSize(ty.getRank() - 1)))
      return "the gate/up width is dynamic";
    return "";
  }
  if (auto ew = dyn_cast<mir::ElementwiseOp>(op)) {
    for (Operation &inner : ew.getBody().front().without_terminator()) {
      if (isa<arith::ConstantOp>(inner) &&
          isa<FloatAttr>(cast<arith::ConstantOp>(inner).getValue()))
        continue;
      if (primitiveOf(&inner).empty())
        return ("its body op '" + inner.getName().getStringRef() +
                "' has no MIR counterpart")
            .str();
    }
    if (!isa<FloatType>(MIRBuilder::typeOf(ew.getResult()).getElementType()))
      return "its result is not a float tensor";
    return "";
  }
  return "";
}

static bool isFused(Operation *op) {
  return isa<mir::FusedMatmulOp, mir::FusedResidualRmsNormOp,
             mir::FusedResidualLayerNormOp, mir::FusedGluOp, mir::AttentionOp,
             mir::AttentionBlockOp, mir::ElementwiseOp>(op);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {

/// The type a fused op rounds its results to (`round_to`; the expansions
/// end with that round trip as two mir.cast ops), or null.
template <typename OpTy> static Type roundingOf(OpTy op) {
  return op.getRoundTo().value_or(Type());
}

template <typename OpTy> struct UnfusePattern : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    std::string why = blocker(op);
    if (!why.empty())
      return rewriter.notifyMatchFailure(op, why);
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(op, expand(mb, op));
    return success();
  }
  SmallVector<Value> expand(MIRBuilder &mb, OpTy op) const;
};

template <>
SmallVector<Value>
UnfusePattern<mir::FusedMatmulOp>::expand(MIRBuilder &mb,
                                          mir::FusedMatmulOp op) const {
  Value y = mb.matmul(op.getInput(), op.getWeight(), op.getTransposeRhs());
  if (op.getBias())
    y = mb.add(y, op.getBias());
  y = mb.activation(y, op.getActivation());
  if (op.getResidual())
    y = mb.add(y, op.getResidual());
  return {mb.roundTo(y, roundingOf(op))};
}

template <>
SmallVector<Value> UnfusePattern<mir::FusedResidualRmsNormOp>::expand(
    MIRBuilder &mb, mir::FusedResidualRmsNormOp op) const {
  Value sum = mb.add(op.getInput(), op.getResidual());
  Value normed =
      mb.rmsNorm(sum, op.getWeight(), op.getEpsilon(), op.getUnitOffset());
  return {mb.roundTo(sum, roundingOf(op)), mb.roundTo(normed, roundingOf(op))};
}

template <>
SmallVector<Value> UnfusePattern<mir::FusedResidualLayerNormOp>::expand(
    MIRBuilder &mb, mir::FusedResidualLayerNormOp op) const {
  Value sum = mb.add(op.getInput(), op.getResidual());
  Value normed =
      mb.layerNorm(sum, op.getGamma(), op.getBeta(), op.getEpsilon());
  return {mb.roundTo(sum, roundingOf(op)), mb.roundTo(normed, roundingOf(op))};
}

template <>
SmallVector<Value>
UnfusePattern<mir::FusedGluOp>::expand(MIRBuilder &mb,
                                       mir::FusedGluOp op) const {
  auto ty = MIRBuilder::typeOf(op.getGateUp());
  int64_t last = ty.getRank() - 1, half = ty.getDimSize(last) / 2;
  Value gate = mb.slice(op.getGateUp(), last, 0, half);
  Value up = mb.slice(op.getGateUp(), last, half, half);
  return {mb.roundTo(mb.mul(mb.activation(gate, op.getActivation()), up),
                     roundingOf(op))};
}

template <>
SmallVector<Value>
UnfusePattern<mir::AttentionOp>::expand(MIRBuilder &mb,
                                        mir::AttentionOp op) const {
  return {composeAttention(mb, op.getQuery(), op.getKey(), op.getValue(),
                           op.getMask(), AttentionConfig::of(op))};
}

template <>
SmallVector<Value>
UnfusePattern<mir::AttentionBlockOp>::expand(MIRBuilder &mb,
                                             mir::AttentionBlockOp op) const {
  return {expandAttentionBlock(mb, op, /*composeCore=*/true)};
}

template <>
SmallVector<Value>
UnfusePattern<mir::ElementwiseOp>::expand(MIRBuilder &mb,
                                          mir::ElementwiseOp op) const {
  Block &body = op.getBody().front();
  IRMapping map;
  map.map(body.getArguments(), op.getInputs());
  for (Operation &inner : body.without_terminator()) {
    Value result;
    if (auto cst = dyn_cast<arith::ConstantOp>(inner)) {
      auto attr = cast<FloatAttr>(cst.getValue());
      result = mb.scalar(attr.getValueAsDouble(), attr.getType());
    } else if (inner.getNumOperands() == 1) {
      result = mb.unary(primitiveOf(&inner), map.lookup(inner.getOperand(0)));
    } else {
      result = mb.binary(primitiveOf(&inner), map.lookup(inner.getOperand(0)),
                         map.lookup(inner.getOperand(1)));
    }
    map.map(inner.getResult(0), result);
  }
  Value out = map.lookup(cast<mir::YieldOp>(body.getTerminator()).getValue());
  // A body that yields an input (or a constant) of a smaller shape: the
  // result is its broadcast.
  auto type = MIRBuilder::typeOf(op.getResult());
  if (out.getType() != type)
    out = mb.broadcast(out, type.getShape());
  return {out};
}

struct MIRUnfusePass
    : public mlir::rlx::impl::MIRUnfusePassBase<MIRUnfusePass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMIRUnfusePatterns(patterns);
    FrozenRewritePatternSet frozen(std::move(patterns));
    bool failedToConverge = false;
    forEachMIRFunction(getOperation(), [&](Operation *f) {
      if (failed(applyPatternsGreedily(f, frozen))) {
        f->emitError("mir-unfuse did not converge");
        failedToConverge = true;
        return;
      }
      f->walk([](Operation *op) {
        if (isFused(op))
          op->emitRemark("left fused by mir-unfuse: ") << blocker(op);
      });
    });
    if (failedToConverge)
      return signalPassFailure();
  }
};

} // namespace

void mlir::rlx::populateMIRUnfusePatterns(RewritePatternSet &patterns) {
  patterns.add<UnfusePattern<mir::FusedMatmulOp>,
               UnfusePattern<mir::FusedResidualRmsNormOp>,
               UnfusePattern<mir::FusedResidualLayerNormOp>,
               UnfusePattern<mir::FusedGluOp>, UnfusePattern<mir::AttentionOp>,
               UnfusePattern<mir::AttentionBlockOp>,
               UnfusePattern<mir::ElementwiseOp>>(patterns.getContext());
}
