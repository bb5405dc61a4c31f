//===- FuseElementwise.cpp - Fuse elementwise chains into regions ---------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// IN:  %c = mir.constant dense<3.0e+01> : tensor<f32>
//      %0 = mir.div %x, %c
//      %1 = mir.tanh %0
//      %2 = mir.mul %1, %c
// OUT: %2 = mir.elementwise %x {
//      ^bb0(%a: f32):
//        %c = arith.constant 3.0e+01 : f32
//        %0 = arith.divf %a, %c : f32
//        %1 = math.tanh %0 : f32
//        %2 = arith.mulf %1, %c : f32
//        mir.yield %2 : f32
//      } : (tensor<...>) -> tensor<...>
// The region is the maximal tree of float elementwise ops ending at the root
// in which every intermediate has all its uses inside the region.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Utils/ActivationMath.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRFUSEELEMENTWISEPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::fusion;

bool mlir::rlx::isFusableElementwiseOp(Operation *op) {
  if (!isa_and_nonnull<mir::AddOp, mir::SubOp, mir::MulOp, mir::DivOp,
                       mir::MaxOp, mir::MinOp, mir::PowOp, mir::ExpOp,
                       mir::LogOp, mir::SqrtOp, mir::RsqrtOp, mir::TanhOp,
                       mir::ErfOp, mir::SinOp, mir::CosOp, mir::SigmoidOp,
                       mir::SiluOp, mir::GeluOp, mir::ReluOp, mir::NegOp,
                       mir::ActivationOp, mir::AbsOp, mir::FloorOp, mir::CeilOp,
                       mir::RoundOp, mir::SignOp, mir::ClipOp>(op))
    return false;
  return isa<FloatType>(
      cast<RankedTensorType>(op->getResult(0).getType()).getElementType());
}

/// True if `op` is the root of a structured pattern that a region must not
/// swallow: a gated linear unit, fused or not (the fusion report then still
/// explains why, e.g. gate/up in the wrong order).
static bool isClaimedByStructuredFusion(Operation *op) {
  auto mul = dyn_cast<mir::MulOp>(op);
  SwigluMatch match;
  return mul &&
         matchSwiglu(mul, match).getStatus() != MIRMatchResult::Status::NoMatch;
}

/// True if `op` may join an elementwise region.
static bool isRegionOp(Operation *op) {
  return isFusableElementwiseOp(op) && !isClaimedByStructuredFusion(op);
}

/// True if `op` is absorbed by a consumer region: its only user is a fusable
/// elementwise op of the same element type in the same block.
static bool feedsRegion(Operation *op) {
  Operation *user = getSingleUser(op->getResult(0));
  return user && isRegionOp(user) && user->getBlock() == op->getBlock() &&
         getElementTypeOrSelf(user->getResult(0).getType()) ==
             getElementTypeOrSelf(op->getResult(0).getType());
}

/// A rank-0 splat constant, inlined into the body.
static bool isInlinedConstant(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank() == 0 &&
         getSplatFloat(v).has_value();
}

MIRMatchResult
mlir::rlx::matchElementwiseRegion(Operation *root,
                                  ElementwiseRegionMatch &match) {
  if (!isRegionOp(root) || feedsRegion(root))
    return MIRMatchResult::noMatch();
  Type elt =
      cast<RankedTensorType>(root->getResult(0).getType()).getElementType();
  llvm::SetVector<Operation *> region;
  region.insert(root);
  // Grow to a fixed point: a producer joins once all its users are inside.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < region.size(); ++i) {
      for (Value operand : region[i]->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || region.contains(def) || !isRegionOp(def) ||
            def->getBlock() != root->getBlock() ||
            getElementTypeOrSelf(operand.getType()) != elt ||
            !llvm::all_of(def->getUsers(), [&](Operation *user) {
              return region.contains(user);
            }))
          continue;
        region.insert(def);
        changed = true;
      }
    }
  }
  if (region.size() < 2)
    return MIRMatchResult::noMatch();
  match.ops.assign(region.begin(), region.end());
  llvm::sort(match.ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  llvm::SetVector<Value> inputs;
  for (Operation *op : match.ops)
    for (Value operand : op->getOperands())
      if (!region.contains(operand.getDefiningOp()) &&
          !isInlinedConstant(operand))
        inputs.insert(operand);
  if (inputs.empty())
    return MIRMatchResult::noMatch();
  match.inputs.assign(inputs.begin(), inputs.end());
  // The region's result is the broadcast of its inputs.
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value input : match.inputs)
    shapes.push_back(cast<RankedTensorType>(input.getType()).getShape());
  FailureOr<SmallVector<int64_t>> shape = mir::broadcastShapes(shapes);
  if (failed(shape) ||
      ArrayRef<int64_t>(*shape) !=
          cast<RankedTensorType>(root->getResult(0).getType()).getShape())
    return MIRMatchResult::noMatch();
  return MIRMatchResult::matched();
}

//===----------------------------------------------------------------------===//
// Body construction
//===----------------------------------------------------------------------===//

namespace {
/// Emits the scalar form of MIR elementwise ops.
class ScalarEmitter {
public:
  ScalarEmitter(OpBuilder &b, Location loc, Type elt)
      : b(b), loc(loc), elt(elt) {}

  Value constant(double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(elt, v));
  }
  Value constant(const APFloat &v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(elt, v));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  /// 1 / (1 + e^-x).
  Value sigmoid(Value x) {
    Value one = constant(1.0);
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    Value den = add(one, e);
    return div(one, den);
  }

  /// The scalar result of `op` on scalar `args`.
  Value emit(Operation *op, ArrayRef<Value> a) {
    return llvm::TypeSwitch<Operation *, Value>(op)
        .Case([&](mir::AddOp) { return add(a[0], a[1]); })
        .Case([&](mir::SubOp) {
          return arith::SubFOp::create(b, loc, a[0], a[1]).getResult();
        })
        .Case([&](mir::MulOp) { return mul(a[0], a[1]); })
        .Case([&](mir::DivOp) { return div(a[0], a[1]); })
        .Case([&](mir::MaxOp) {
          return arith::MaximumFOp::create(b, loc, a[0], a[1]).getResult();
        })
        .Case([&](mir::MinOp) {
          return arith::MinimumFOp::create(b, loc, a[0], a[1]).getResult();
        })
        .Case([&](mir::PowOp) {
          return math::PowFOp::create(b, loc, a[0], a[1]).getResult();
        })
        .Case([&](mir::ExpOp) {
          return math::ExpOp::create(b, loc, a[0]).getResult();
        })
        .Case([&](mir::LogOp) {
          return math::LogOp::create(b, loc, a[0]).getResult();
        })
        .Case([&](mir::SqrtOp) {
          return math::SqrtOp::create(b, loc, a[0]).getResult();
        })
        .Case([&](mir::RsqrtOp) {
          return math::RsqrtOp::create(b, loc, a[0]).getResult();
        })
        .Case([&](mir::TanhOp) {
          return math::TanhOp::create(b, loc, a[0]).getResult();
        })
        .Case([&](mir::ErfOp) {
          return math::ErfOp::create(b, loc, a[0]).getResult();
        })
        .Case([&](mir::SinOp) {
          return math::SinOp::create(b, loc, a[0]).getResult();
        })
        .Case([&](mir::CosOp) {
          return math::CosOp::create(b, loc, a[0]).getResult();
        })
        .Case([&](mir::NegOp) {
          return arith::NegFOp::create(b, loc, a[0]).getResult();
        })
        .Case([&](mir::AbsOp) {
          return math::AbsFOp::create(b, loc, a[0]).getResult();
        })
        .Case([&](mir::FloorOp) {
          return math::FloorOp::create(b, loc, a[0]).getResult();
        })
        .Case([&](mir::CeilOp) {
          return math::CeilOp::create(b, loc, a[0]).getResult();
        })
        // Halves to even, as np.round.
        .Case([&](mir::RoundOp) {
          return math::RoundEvenOp::create(b, loc, a[0]).getResult();
        })
        // np.sign: 1, -1, or x itself for zeros and NaN.
        .Case([&](mir::SignOp) {
          Value x = a[0];
          Value zero = constant(0.0);
          Value positive =
              arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero);
          Value negative =
              arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero);
          Value minusOne = constant(-1.0);
          Value r = arith::SelectOp::create(b, loc, negative, minusOne, x);
          Value one = constant(1.0);
          return arith::SelectOp::create(b, loc, positive, one, r).getResult();
        })
        // max first: NaN stays NaN (maximumf and minimumf propagate it).
        .Case([&](mir::ClipOp clip) {
          Value lo = constant(clip.getMin());
          Value hi = constant(clip.getMax());
          Value x = arith::MaximumFOp::create(b, loc, a[0], lo);
          return arith::MinimumFOp::create(b, loc, x, hi).getResult();
        })
        .Case([&](mir::SigmoidOp) { return sigmoid(a[0]); })
        // silu(x) = x * sigmoid(x).
        .Case([&](mir::SiluOp) {
          Value sig = sigmoid(a[0]);
          return mul(a[0], sig);
        })
        // relu(x) = max(x, 0).
        .Case([&](mir::ReluOp) {
          Value zero = constant(0.0);
          return arith::MaximumFOp::create(b, loc, a[0], zero).getResult();
        })
        .Case([&](mir::ActivationOp act) {
          return buildActivation(b, loc, act.getActivation(), a[0]);
        })
        .Case([&](mir::GeluOp gelu) {
          // Each step is its own statement: the order of the emitted ops
          // must not depend on the order C++ evaluates arguments in.
          Value x = a[0];
          Value inner;
          if (gelu.getTanhApprox()) {
            // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
            Value x2 = mul(x, x);
            Value x3 = mul(x2, x);
            Value c = constant(0.044715);
            Value poly = add(x, mul(c, x3));
            Value k = constant(std::sqrt(2.0 / M_PI));
            inner = math::TanhOp::create(b, loc, mul(k, poly));
          } else {
            // 0.5 x (1 + erf(x / sqrt(2))).
            Value r2 = constant(std::sqrt(2.0));
            inner = math::ErfOp::create(b, loc, div(x, r2));
          }
          Value half = constant(0.5);
          Value hx = mul(half, x);
          Value one = constant(1.0);
          Value sum = add(one, inner);
          return mul(hx, sum);
        })
        .Default([](Operation *) { return Value(); });
  }

private:
  OpBuilder &b;
  Location loc;
  Type elt;
};
} // namespace

FailureOr<mir::ElementwiseOp>
mlir::rlx::fuseElementwiseRegion(RewriterBase &rewriter,
                                 const ElementwiseRegionMatch &match) {
  if (match.ops.size() < 2 || match.inputs.empty())
    return failure();
  Operation *root = match.ops.back();
  auto type = cast<RankedTensorType>(root->getResult(0).getType());
  Type elt = type.getElementType();
  SmallVector<Location> locs;
  for (Operation *op : match.ops)
    locs.push_back(op->getLoc());
  Location loc = rewriter.getFusedLoc(locs);

  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(root);
  auto fused = mir::ElementwiseOp::create(rewriter, loc, type, match.inputs);
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (Value input : match.inputs) {
    argTypes.push_back(
        cast<RankedTensorType>(input.getType()).getElementType());
    argLocs.push_back(input.getLoc());
  }
  Block *body = rewriter.createBlock(&fused.getBody(), {}, argTypes, argLocs);
  rewriter.setInsertionPointToStart(body);
  ScalarEmitter emitter(rewriter, loc, elt);
  DenseMap<Value, Value> scalars;
  for (auto [input, arg] : llvm::zip(match.inputs, body->getArguments()))
    scalars[input] = arg;
  for (Operation *op : match.ops) {
    SmallVector<Value> args;
    for (Value operand : op->getOperands()) {
      auto it = scalars.find(operand);
      if (it == scalars.end())
        it =
            scalars
                .try_emplace(operand, emitter.constant(*getSplatFloat(operand)))
                .first;
      args.push_back(it->second);
    }
    Value result = emitter.emit(op, args);
    if (!result) {
      rewriter.eraseOp(fused);
      return failure();
    }
    scalars[op->getResult(0)] = result;
  }
  mir::YieldOp::create(rewriter, loc, scalars[root->getResult(0)]);
  rewriter.replaceOp(root, fused);
  SmallVector<Operation *> dead(match.ops.begin(), match.ops.end() - 1);
  eraseDeadOps(rewriter, dead);
  return fused;
}

namespace {
/// Rooted at any op: the matcher decides whether it ends a region.
struct ElementwisePattern : public RewritePattern {
  ElementwisePattern(MLIRContext *ctx, MIRFusionControlFn control)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        control(std::move(control)) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isFusableElementwiseOp(op))
      return failure();
    ElementwiseRegionMatch match;
    if (!matchElementwiseRegion(op, match).isMatched())
      return rewriter.notifyMatchFailure(op, "not the end of a region of two "
                                             "or more elementwise ops");
    if (control && !control(op))
      return rewriter.notifyMatchFailure(op, "vetoed by the control function");
    if (failed(fuseElementwiseRegion(rewriter, match)))
      return rewriter.notifyMatchFailure(op, "the transform failed");
    return success();
  }

  MIRFusionControlFn control;
};

struct MIRFuseElementwisePass
    : public mlir::rlx::impl::MIRFuseElementwisePassBase<
          MIRFuseElementwisePass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(applyMIRFusions(getOperation(),
                               {MIRFusionKind::ElementwiseRegion})))
      signalPassFailure();
  }
};
} // namespace

void mlir::rlx::populateMIRFuseElementwisePatterns(
    RewritePatternSet &patterns, const MIRFusionControlFn &control) {
  patterns.add<ElementwisePattern>(patterns.getContext(), control);
}
