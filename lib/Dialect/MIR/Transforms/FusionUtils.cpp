//===- FusionUtils.cpp - Helpers shared by the MIR fusions ----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::fusion;

std::string MIRMatchResult::describe() const {
  if (miss.detail.empty())
    return miss.reason;
  return miss.reason + ": " + miss.detail;
}

Operation *fusion::getSingleUser(Value v) {
  if (!v || !v.hasOneUse())
    return nullptr;
  return *v.getUsers().begin();
}

std::string fusion::describeValue(Value v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto arg = dyn_cast<BlockArgument>(v))
    os << "block argument " << arg.getArgNumber();
  else
    os << "the result of '" << v.getDefiningOp()->getName() << "'";
  return s;
}

/// The splat elements of a `mir.constant`, or null.
static SplatElementsAttr getSplat(Value v) {
  auto cst = v ? v.getDefiningOp<mir::ConstantOp>() : nullptr;
  if (!cst)
    return nullptr;
  return dyn_cast<SplatElementsAttr>(cst.getValue());
}

std::optional<double> fusion::getScalarConstant(Value v) {
  SplatElementsAttr splat = getSplat(v);
  if (!splat || llvm::any_of(splat.getType().getShape(),
                             [](int64_t d) { return d != 1; }))
    return std::nullopt;
  Type elt = splat.getElementType();
  if (isa<FloatType>(elt))
    return splat.getSplatValue<APFloat>().convertToDouble();
  if (elt.isInteger(1))
    return splat.getSplatValue<bool>() ? 1.0 : 0.0;
  if (isa<IntegerType>(elt))
    return static_cast<double>(splat.getSplatValue<APInt>().getSExtValue());
  return std::nullopt;
}

std::optional<APFloat> fusion::getSplatFloat(Value v) {
  SplatElementsAttr splat = getSplat(v);
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>();
}

std::optional<Activation> fusion::getActivation(Operation *op) {
  if (!op)
    return std::nullopt;
  if (isa<mir::ReluOp>(op))
    return Activation::Relu;
  if (auto gelu = dyn_cast<mir::GeluOp>(op))
    return gelu.getTanhApprox() ? Activation::GeluTanh : Activation::Gelu;
  if (isa<mir::SiluOp>(op))
    return Activation::Silu;
  if (isa<mir::SigmoidOp>(op))
    return Activation::Sigmoid;
  if (isa<mir::TanhOp>(op))
    return Activation::Tanh;
  if (auto act = dyn_cast<mir::ActivationOp>(op))
    return act.getActivation();
  return std::nullopt;
}

bool fusion::isPlainParam(Value v) {
  auto param = v.getDefiningOp<mir::ParamOp>();
  return param && !param.getSources();
}

void fusion::eraseDeadOps(RewriterBase &rewriter, ArrayRef<Operation *> ops) {
  llvm::SetVector<Operation *> live(ops.begin(), ops.end());
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation *op : llvm::reverse(live.getArrayRef())) {
      if (!op->use_empty())
        continue;
      live.remove(op);
      rewriter.eraseOp(op);
      changed = true;
      break;
    }
  }
}

MIRMatchResult fusion::multiConsumer(Operation *op, StringRef hint) {
  return MIRMatchResult::missed(
      kMultiConsumer,
      Twine("the result of '") + op->getName().getStringRef() +
          "' has other uses",
      hint.empty() ? StringRef("the intermediate must be materialized for its "
                               "other users; compute it once per user or drop "
                               "the extra use")
                   : hint);
}
