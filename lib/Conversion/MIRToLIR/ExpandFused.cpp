//===- ExpandFused.cpp - Fused MIR ops that run as kernel sequences -------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Before bufferization, mir.attention_block becomes the kernels the CPU runs
// it as: the QKV GEMM (with its bias), zero-copy slices of its result, the
// optional per-head QK RMSNorm, RoPE, the fused attention kernel and the
// output GEMM. The GEMMs go to BLAS and the slices are views, so the block
// costs no copy beyond its q/k rotations.
//
//===----------------------------------------------------------------------===//

#include "RLX/Conversion/MIRToLIR/MIRToLIR.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::rlx;

namespace {

/// Per-head RMSNorm of [B, T, n*hd] with a [hd] weight.
static Value headNorm(MIRBuilder &mb, Value x, Value w, int64_t n, int64_t hd,
                      float eps, bool unitOffset) {
  auto ty = MIRBuilder::typeOf(x);
  Value r = mb.reshape(x, {ty.getDimSize(0), ty.getDimSize(1), n, hd});
  r = mb.rmsNorm(r, w, eps, unitOffset);
  return mb.reshape(r, ty.getShape());
}

struct ExpandAttentionBlock : public OpRewritePattern<mir::AttentionBlockOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(mir::AttentionBlockOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    int64_t heads = op.getNumHeads(), kv = op.getNumKvHeads();
    int64_t hd = op.getHeadDim();
    int64_t qDim = heads * hd, kvDim = kv * hd;
    Value qkv = op.getQkvBias()
                    ? mb.fusedMatmul(op.getInput(), op.getWQkv(),
                                     op.getQkvBias(), nullptr, Activation::None)
                    : mb.matmul(op.getInput(), op.getWQkv());
    Value q = mb.slice(qkv, 2, 0, qDim);
    Value k = mb.slice(qkv, 2, qDim, kvDim);
    Value v = mb.slice(qkv, 2, qDim + kvDim, kvDim);
    if (op.getQNorm()) {
      q = headNorm(mb, q, op.getQNorm(), heads, hd, op.getNormEpsilon(),
                   op.getNormUnitOffset());
      k = headNorm(mb, k, op.getKNorm(), kv, hd, op.getNormEpsilon(),
                   op.getNormUnitOffset());
    }
    if (op.getRotaryDim() > 0) {
      q = mb.rope(q, op.getPositions(), op.getInvFreq(), hd, op.getRotaryDim(),
                  op.getRopeTheta(), op.getRopeStyle());
      k = mb.rope(k, op.getPositions(), op.getInvFreq(), hd, op.getRotaryDim(),
                  op.getRopeTheta(), op.getRopeStyle());
    }
    SmallVector<Value> operands = {q, k, v};
    if (op.getMask())
      operands.push_back(op.getMask());
    Value attn =
        mb.create("mir.attention", q.getType(), operands,
                  {mb.i64("num_heads", heads), mb.i64("num_kv_heads", kv),
                   mb.i64("head_dim", hd), mb.f32("scale", op.getScale()),
                   mb.f32("softcap", op.getSoftcap()),
                   mb.attr("mask_kind", op.getMaskKindAttr()),
                   mb.i64("window", op.getWindow())})
            ->getResult(0);
    Value out = op.getOutBias()
                    ? mb.fusedMatmul(attn, op.getWO(), op.getOutBias(), nullptr,
                                     Activation::None)
                    : mb.matmul(attn, op.getWO());
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::rlx::populateExpandFusedForCPUPatterns(RewritePatternSet &patterns) {
  patterns.add<ExpandAttentionBlock>(patterns.getContext());
}
