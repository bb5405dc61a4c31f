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
#include "RLX/Dialect/MIR/Utils/Compose.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::rlx;

namespace {

struct ExpandAttentionBlock : public OpRewritePattern<mir::AttentionBlockOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(mir::AttentionBlockOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(op, expandAttentionBlock(mb, op, /*composeCore=*/false));
    return success();
  }
};

} // namespace

void mlir::rlx::populateExpandFusedForCPUPatterns(RewritePatternSet &patterns) {
  patterns.add<ExpandAttentionBlock>(patterns.getContext());
}
