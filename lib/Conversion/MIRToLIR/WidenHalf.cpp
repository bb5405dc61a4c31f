//===- WidenHalf.cpp - Half-precision ops computed in f32 -----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Both back ends compute RoPE, attention and the GEMMs in f32 (an f32 query
// or left-hand side may read keys, values or weights kept in f16 / bf16).
// The MIR verifier accepts f16 and bf16 for these ops, so before
// bufferization such an op on f16 / bf16 activations becomes casts to f32,
// the op in f32 and a cast back: np.float16(op(x.astype(np.float32))).
//
//===----------------------------------------------------------------------===//

#include "RLX/Conversion/MIRToLIR/MIRToLIR.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::rlx;

namespace {

static bool isHalf(Value value) {
  Type elt = getElementTypeOrSelf(value.getType());
  return elt.isF16() || elt.isBF16();
}

/// Clones `op` with its f16 / bf16 operands cast to f32 and its result in
/// f32, then casts the result back to the original type.
static void computeInF32(PatternRewriter &rewriter, Operation *op) {
  Location loc = op->getLoc();
  SmallVector<Value> operands;
  for (Value operand : op->getOperands()) {
    auto type = cast<RankedTensorType>(operand.getType());
    operands.push_back(
        isHalf(operand)
            ? mir::CastOp::create(rewriter, loc,
                                  type.clone(rewriter.getF32Type()), operand)
                  .getResult()
            : operand);
  }
  Operation *clone = rewriter.clone(*op);
  clone->setOperands(operands);
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  clone->getResult(0).setType(type.clone(rewriter.getF32Type()));
  rewriter.replaceOpWithNewOp<mir::CastOp>(op, type, clone->getResult(0));
}

/// An op computed in f32 when its first operand (RoPE's input, attention's
/// query, a GEMM's left-hand side) is f16 / bf16. An f32 one reading keys,
/// values or a weight kept in f16 / bf16 is computed as it is.
template <typename OpTy> struct WidenHalf : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!isHalf(op->getOperand(0)))
      return failure();
    computeInF32(rewriter, op);
    return success();
  }
};

} // namespace

void mlir::rlx::populateWidenHalfPrecisionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<WidenHalf<mir::RopeOp>, WidenHalf<mir::AttentionOp>,
               WidenHalf<mir::MatmulOp>, WidenHalf<mir::BatchMatmulOp>,
               WidenHalf<mir::FusedMatmulOp>>(patterns.getContext());
}
