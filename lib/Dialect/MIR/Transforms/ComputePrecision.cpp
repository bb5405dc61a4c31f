//===- ComputePrecision.cpp - Activations held in bf16 or f16 -------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// IN:  %h = mir.fused_matmul %x, %w : ... -> tensor<1x8x64xf32>
//      %y = mir.rms_norm %h, %g ...
// OUT: %h = mir.fused_matmul %x, %w : ... -> tensor<1x8x64xf32>
//      %r = mir.elementwise %h {
//      ^bb0(%a: f32):
//        %n = arith.truncf %a : f32 to bf16
//        %e = arith.extf %n : bf16 to f32
//        mir.yield %e : f32
//      } : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
//      %y = mir.rms_norm %r, %g ...
// Every activation passed between ops is rounded to the compute type; the
// kernels keep computing in f32. A producing or consuming mir.elementwise
// takes the round trip into its body instead of a kernel of its own; a
// norm, a GLU, a fused matmul or an attention block producing it rounds its
// results itself (`round_to`), and a plain mir.matmul becomes the
// mir.fused_matmul that does. A collective (shard.all_reduce,
// shard.all_gather) of an activation moves it in the compute type: a
// mir.cast to it, the collective, a mir.cast back.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRCOMPUTEPRECISIONPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;

namespace {

static bool isF32Tensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getElementType().isF32();
}

/// Ops that only move elements: their results hold their operands' values.
static bool movesData(Operation *op) {
  return isa<mir::ReshapeOp, mir::TransposeOp, mir::SliceOp, mir::SplitOp,
             mir::ConcatOp, mir::TileOp>(op);
}

/// `x` (f32) rounded to `type` and widened back, at the builder's point.
static Value roundScalar(OpBuilder &b, Location loc, Value x, FloatType type) {
  Value narrow = arith::TruncFOp::create(b, loc, type, x);
  return arith::ExtFOp::create(b, loc, b.getF32Type(), narrow);
}

/// A mir.elementwise rounding `v` to `type` and back.
static Value roundTensor(OpBuilder &b, Value v, FloatType type) {
  Location loc = v.getLoc();
  auto op = mir::ElementwiseOp::create(b, loc, v.getType(), ValueRange{v});
  OpBuilder::InsertionGuard guard(b);
  Block *body =
      b.createBlock(&op.getBody(), {}, {b.getF32Type()}, {v.getLoc()});
  mir::YieldOp::create(b, loc, roundScalar(b, loc, body->getArgument(0), type));
  return op.getResult();
}

/// Rounds what `op`'s body yields.
static void roundYield(mir::ElementwiseOp op, FloatType type) {
  Operation *yield = op.getBody().front().getTerminator();
  OpBuilder b(yield);
  yield->setOperand(
      0, roundScalar(b, yield->getLoc(), yield->getOperand(0), type));
}

/// Rounds body argument `index` of `op` where the body reads it.
static void roundArgument(mir::ElementwiseOp op, unsigned index,
                          FloatType type) {
  Block &body = op.getBody().front();
  BlockArgument arg = body.getArgument(index);
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  auto narrow = arith::TruncFOp::create(b, op.getLoc(), type, arg);
  Value wide =
      arith::ExtFOp::create(b, op.getLoc(), b.getF32Type(), narrow.getResult());
  arg.replaceAllUsesExcept(wide, narrow.getOperation());
}

/// Whether `op` converts to `type` (its rounding: no round trip before it).
static bool castsTo(Operation *op, FloatType type) {
  auto cast = dyn_cast<mir::CastOp>(op);
  return cast && cast.getType().getElementType() == type;
}

/// The collective `op` of an f32 activation moves it in `type`: its operand
/// cast to `type` (which rounds it), the collective on `type`, its result
/// widened back. A 16-bit all-reduce sums each pair in f32 and rounds it
/// once (rlx_all_reduce_bf16), so over 2 ranks the result is the f32 sum
/// of the rounded partials rounded once, as with an f32 collective and a
/// round trip after it, for half the bytes.
static void narrowCollective(Operation *op, FloatType type) {
  Value in = op->getOperand(0);
  OpBuilder b(op);
  auto narrow = mir::CastOp::create(
      b, op->getLoc(), cast<RankedTensorType>(in.getType()).clone(type), in);
  op->setOperand(0, narrow);
  Value result = op->getResult(0);
  auto wideType = cast<RankedTensorType>(result.getType());
  result.setType(wideType.clone(type));
  b.setInsertionPointAfter(op);
  auto wide = mir::CastOp::create(b, op->getLoc(), wideType, result);
  result.replaceAllUsesExcept(wide, wide);
}

/// Whether the function returns some result of `op`.
static bool isReturned(Operation *op) {
  return llvm::any_of(op->getUsers(), [](Operation *user) {
    return isa<func::ReturnOp>(user);
  });
}

/// Whether `op` rounds its results itself when given `round_to` (the
/// norms, the GLU, a fused matmul and an attention block, whose kernels
/// round as they store), and none of them is returned (the function returns
/// values as computed).
static bool canRoundResults(Operation *op) {
  if (!isa_and_nonnull<mir::RmsNormOp, mir::LayerNormOp,
                       mir::FusedResidualRmsNormOp,
                       mir::FusedResidualLayerNormOp, mir::FusedGluOp,
                       mir::FusedMatmulOp, mir::AttentionBlockOp>(op))
    return false;
  return !isReturned(op);
}

/// A mir.matmul whose result is to be rounded, as the mir.fused_matmul
/// (no bias, residual or activation) that then rounds it as it stores: one
/// with a rank-2 right-hand side and no transposed left-hand side, which is
/// what a fused matmul computes. Null for any other op.
static Operation *asFusedMatmul(Operation *op) {
  auto matmul = dyn_cast_or_null<mir::MatmulOp>(op);
  if (!matmul || matmul.getTransposeLhs() ||
      matmul.getRhs().getType().getRank() != 2 ||
      matmul.getLhs().getType().getRank() < 2)
    return nullptr;
  OpBuilder b(matmul);
  MIRBuilder mb(b, matmul.getLoc());
  Value fused =
      mb.fusedMatmul(matmul.getLhs(), matmul.getRhs(), nullptr, nullptr,
                     Activation::None, matmul.getTransposeRhs());
  if (fused.getType() != matmul.getType()) {
    fused.getDefiningOp()->erase();
    return nullptr;
  }
  matmul.replaceAllUsesWith(fused);
  matmul.erase();
  return fused.getDefiningOp();
}

/// Rounds activation `v` for every op that reads it, except the function's
/// return (which keeps the values as computed) and casts to `type`.
static void roundUses(Value v, FloatType type) {
  if (llvm::all_of(v.getUsers(), [&](Operation *user) {
        return isa<func::ReturnOp>(user) || castsTo(user, type);
      }))
    return;
  Operation *producer = v.getDefiningOp();
  if (isa_and_nonnull<mir::MatmulOp>(producer) && !isReturned(producer))
    if (Operation *fused = asFusedMatmul(producer))
      producer = fused;
  if (canRoundResults(producer)) {
    // Every result (a fused residual norm's sum and normed alike) rounded
    // as the kernel stores it: no round trip of its own.
    producer->setAttr("round_to", TypeAttr::get(type));
    return;
  }
  if (auto elementwise = dyn_cast_or_null<mir::ElementwiseOp>(producer)) {
    // Every reader, a return included, then sees rounded values (a value
    // the function also returns is then returned in `type`'s precision).
    roundYield(elementwise, type);
    return;
  }
  SmallVector<OpOperand *> others;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (isa<func::ReturnOp>(user) || castsTo(user, type))
      continue;
    if (auto elementwise = dyn_cast<mir::ElementwiseOp>(user))
      roundArgument(elementwise, use.getOperandNumber(), type);
    else
      others.push_back(&use);
  }
  if (others.empty())
    return;
  OpBuilder b(v.getContext());
  b.setInsertionPointAfterValue(v);
  Value rounded = roundTensor(b, v, type);
  for (OpOperand *use : others)
    use->set(rounded);
}

/// Rounds the activations of `func` to `type`.
static void roundActivations(func::FuncOp func, FloatType type) {
  // Values computed from the arguments, and those of them already holding
  // values of `type` (or taken as they come: the arguments, among them a
  // decode step's past keys and values, which earlier steps rounded).
  llvm::DenseSet<Value> active, exact;
  for (BlockArgument arg : func.getArguments()) {
    active.insert(arg);
    exact.insert(arg);
  }
  SmallVector<Value> toRound;
  for (Operation &op : func.getBody().getOps()) {
    if (op.hasTrait<OpTrait::IsTerminator>() ||
        llvm::none_of(op.getOperands(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    if (isa<shard::AllReduceOp, shard::AllGatherOp>(op) &&
        isF32Tensor(op.getOperand(0)))
      narrowCollective(&op, type);
    bool fromExact = false;
    if (auto cast = dyn_cast<mir::CastOp>(op))
      fromExact = cast.getInput().getType().getElementType() == type;
    else if (movesData(&op))
      fromExact = llvm::all_of(op.getOperands(), [&](Value v) {
        return !isF32Tensor(v) || exact.contains(v);
      });
    for (Value result : op.getResults()) {
      active.insert(result);
      if (!isF32Tensor(result))
        continue;
      exact.insert(result);
      if (!fromExact)
        toRound.push_back(result);
    }
  }
  for (Value v : toRound)
    roundUses(v, type);
}

struct MIRComputePrecisionPass
    : public mlir::rlx::impl::MIRComputePrecisionPassBase<
          MIRComputePrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    Builder b(&getContext());
    FloatType t = llvm::StringSwitch<FloatType>(type)
                      .Case("bf16", b.getBF16Type())
                      .Case("f16", b.getF16Type())
                      .Case("f32", b.getF32Type())
                      .Default(nullptr);
    if (!t) {
      getOperation()->emitError()
          << "mir-compute-precision: type must be f32, bf16 or f16, got '"
          << type << "'";
      return signalPassFailure();
    }
    if (t.isF32())
      return;
    getOperation()->walk([&](func::FuncOp func) {
      if (!func.isExternal())
        roundActivations(func, t);
    });
  }
};

} // namespace
