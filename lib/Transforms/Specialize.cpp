//===- Specialize.cpp - Bind dynamic shapes of a template -----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The second step of the three-step compile (template, specialize, compile):
// concrete argument shapes flow through the function and every dynamic dim
// of every result becomes static. HIR ops have simple shape rules written
// here; MIR ops use their InferTypeOpInterface or the same-shape rule.
//
//===----------------------------------------------------------------------===//

#include "RLX/Transforms/Specialize.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rlx;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// The shape of an HIR op's result `index`, from its (refined) operands.
static std::optional<SmallVector<int64_t>> hirResultShape(Operation *op,
                                                          unsigned index) {
  using Shape = SmallVector<int64_t>;
  auto withLast = [](Value v, int64_t last) {
    Shape s(shapeOf(v));
    s.back() = last;
    return s;
  };
  auto present = [&](Value past, Value x) -> Shape {
    ArrayRef<int64_t> p = shapeOf(past), xs = shapeOf(x);
    return {p[0], p[1] + xs[1], p[2]};
  };
  return llvm::TypeSwitch<Operation *, std::optional<Shape>>(op)
      .Case([](hir::EmbedOp o) {
        return Shape{shapeOf(o.getIds())[0], shapeOf(o.getIds())[1],
                     shapeOf(o.getTable())[1]};
      })
      .Case([](hir::GatherLastTokenOp o) {
        return Shape{shapeOf(o.getInput())[0], 1, shapeOf(o.getInput())[2]};
      })
      .Case([&](hir::LmHeadOp o) {
        return withLast(o.getInput(), shapeOf(o.getWeight())[0]);
      })
      .Case<hir::ClsPoolOp, hir::MeanPoolOp>([](auto o) {
        return Shape{shapeOf(o.getInput())[0], shapeOf(o.getInput())[2]};
      })
      .Case([](hir::PatchEmbedOp o) {
        ArrayRef<int64_t> px = shapeOf(o.getPixels());
        int64_t p = o.getPatchSize();
        return Shape{px[0], (px[2] / p) * (px[3] / p),
                     shapeOf(o.getWeight())[0]};
      })
      .Case([](hir::InsertTokensOp o) {
        ArrayRef<int64_t> in = shapeOf(o.getInput());
        return Shape{in[0], in[1] + shapeOf(o.getTokens())[1], in[2]};
      })
      .Case([&](hir::LinearOp o) {
        return withLast(o.getInput(), shapeOf(o.getWeight())[0]);
      })
      .Case([](hir::AttentionOp o) { return Shape(shapeOf(o.getQ())); })
      .Case<hir::LlamaCachedDecoderLayerOp, hir::Qwen3CachedDecoderLayerOp,
            hir::GemmaCachedDecoderLayerOp>(
          [&](auto o) -> std::optional<Shape> {
            if (index == 0)
              return Shape(shapeOf(o.getInput()));
            return present(o.getPastK(), o.getInput());
          })
      .Case<hir::CustomOp, hir::ParamOp>(
          [](Operation *) -> std::optional<Shape> { return std::nullopt; })
      .Default([](Operation *o) -> std::optional<Shape> {
        // Every other HIR op returns the shape of its first operand.
        if (o->getNumOperands() == 0)
          return std::nullopt;
        return Shape(shapeOf(o->getOperand(0)));
      });
}

static LogicalResult refine(Operation *op);

/// hir.custom: the body sees the refined operand types; its yield gives the
/// results.
static LogicalResult refineCustom(hir::CustomOp op) {
  Block &body = op.getBody().front();
  for (auto [arg, in] : llvm::zip(body.getArguments(), op.getInputs()))
    arg.setType(in.getType());
  for (Operation &inner : body.without_terminator())
    if (failed(refine(&inner)))
      return failure();
  for (auto [r, v] :
       llvm::zip(op.getResults(), body.getTerminator()->getOperands()))
    r.setType(v.getType());
  return success();
}

/// Refines the result types of `op` from its operands.
static LogicalResult refine(Operation *op) {
  if (auto custom = dyn_cast<hir::CustomOp>(op))
    return refineCustom(custom);
  SmallVector<Type> types;
  if (isa<hir::HIRDialect>(op->getDialect())) {
    for (OpResult r : op->getResults()) {
      auto ty = cast<RankedTensorType>(r.getType());
      if (ty.hasStaticShape()) {
        types.push_back(ty);
        continue;
      }
      std::optional<SmallVector<int64_t>> shape =
          hirResultShape(op, r.getResultNumber());
      if (!shape)
        return op->emitOpError("cannot be specialized: write it with static "
                               "shapes");
      types.push_back(RankedTensorType::get(*shape, ty.getElementType()));
    }
  } else if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getAttrDictionary(), op->getPropertiesStorage(),
            op->getRegions(), types)))
      return op->emitOpError("result types could not be inferred while "
                             "specializing");
  } else {
    for (OpResult r : op->getResults()) {
      auto ty = dyn_cast<RankedTensorType>(r.getType());
      if (!ty || ty.hasStaticShape()) {
        types.push_back(r.getType());
        continue;
      }
      if (auto reshape = dyn_cast<mir::ReshapeOp>(op)) {
        // One dynamic dim takes whatever the element count leaves.
        auto in = cast<RankedTensorType>(reshape.getInput().getType());
        int64_t known = 1, dynamic = 0;
        for (int64_t d : ty.getShape())
          ShapedType::isDynamic(d) ? ++dynamic : known *= d;
        if (dynamic != 1 || !in.hasStaticShape())
          return op->emitOpError("cannot specialize a reshape to ") << ty;
        SmallVector<int64_t> shape(ty.getShape());
        for (int64_t &d : shape)
          if (ShapedType::isDynamic(d))
            d = in.getNumElements() / known;
        types.push_back(RankedTensorType::get(shape, ty.getElementType()));
        continue;
      }
      if (op->getNumOperands() == 0)
        return op->emitOpError("has a dynamic result and no operand to take "
                               "its shape from");
      // Same-shape ops (unary, norms, rope, attention, casts, broadcasts of
      // the same rank).
      auto in = cast<RankedTensorType>(op->getOperand(0).getType());
      if (in.getRank() != ty.getRank())
        return op->emitOpError("cannot specialize result type ") << ty;
      SmallVector<int64_t> shape(ty.getShape());
      for (auto [d, s] : llvm::zip(shape, in.getShape()))
        if (ShapedType::isDynamic(d))
          d = s;
      types.push_back(RankedTensorType::get(shape, ty.getElementType()));
    }
  }
  for (auto [r, t] : llvm::zip(op->getResults(), types))
    r.setType(t);
  return success();
}

LogicalResult
mlir::rlx::specializeFunction(func::FuncOp func,
                              ArrayRef<SmallVector<int64_t, 4>> shapes) {
  Block &body = func.getBody().front();
  if (shapes.size() != body.getNumArguments())
    return func.emitOpError("specialization needs ")
           << body.getNumArguments() << " shapes, got " << shapes.size();
  for (auto [arg, shape] : llvm::zip(body.getArguments(), shapes)) {
    auto ty = cast<RankedTensorType>(arg.getType());
    bool ok = ty.getRank() == static_cast<int64_t>(shape.size());
    for (auto [d, s] : llvm::zip(ty.getShape(), shape))
      ok = ok && (ShapedType::isDynamic(d) || d == s) && s >= 0;
    if (!ok) {
      std::string str;
      llvm::raw_string_ostream os(str);
      llvm::interleave(shape, os, "x");
      return func.emitOpError("argument ")
             << arg.getArgNumber() << " of type " << ty
             << " cannot take the shape " << str;
    }
    arg.setType(RankedTensorType::get(shape, ty.getElementType()));
  }
  WalkResult walk = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == func.getOperation() || isa<func::ReturnOp>(op))
      return WalkResult::advance();
    if (failed(refine(op)))
      return WalkResult::interrupt();
    // hir.custom refined its body; mir.elementwise bodies are scalar.
    return op->getNumRegions() ? WalkResult::skip() : WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                 ret.getOperandTypes()));
  return verify(func);
}
