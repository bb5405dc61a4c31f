//===- FusionUtils.h - Helpers shared by the MIR fusions --------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Dialect/MIR/Transforms: use-count checks, scalar constants,
// activations, dead-op cleanup and the thin pattern template every fusion
// uses.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_DIALECT_MIR_TRANSFORMS_FUSIONUTILS_H
#define RLX_LIB_DIALECT_MIR_TRANSFORMS_FUSIONUTILS_H

#include "RLX/Dialect/MIR/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::rlx::fusion {

/// Reasons, shared by the matchers and the report (docs/Fusion.md).
inline constexpr StringLiteral kMultiConsumer = "multi-consumer intermediate";
inline constexpr StringLiteral kUnsupportedActivation =
    "unsupported epilogue activation";
inline constexpr StringLiteral kWrongOrder = "gate/up in the wrong order";
inline constexpr StringLiteral kNotShared = "matmuls not on a shared input";
inline constexpr StringLiteral kNotConcatenated =
    "projections not concatenated";
inline constexpr StringLiteral kNotParams = "weights not parameters";
inline constexpr StringLiteral kDynamic = "dynamic shapes";
inline constexpr StringLiteral kUnsupportedMask = "unsupported mask";
inline constexpr StringLiteral kUnsupportedScores =
    "unsupported score modifier";
inline constexpr StringLiteral kLayout = "unsupported layout";
inline constexpr StringLiteral kMismatch = "q/k preprocessing differs";
inline constexpr StringLiteral kNotFused = "not fused";
inline constexpr StringLiteral kStoredWeight =
    "a consumer needs the dequantized weight";

/// The user of `v` if it has exactly one use, else null.
Operation *getSingleUser(Value v);

/// "the result of 'mir.x'" / "block argument N", for miss details.
std::string describeValue(Value v);

/// The value of a splat constant (`mir.constant`) whose shape has only size-1
/// dims (rank 0 included), as a double; std::nullopt otherwise.
std::optional<double> getScalarConstant(Value v);

/// The same for any splat constant, whatever its shape, as an APFloat when
/// the element type is a float.
std::optional<APFloat> getSplatFloat(Value v);

/// The activation `op` computes (mir.relu, gelu, silu, sigmoid, tanh,
/// activation), or std::nullopt.
std::optional<Activation> getActivation(Operation *op);

/// True if `v` is a plain (not derived) `mir.param`.
bool isPlainParam(Value v);

/// Erases the ops of `ops` (in any order) that have no uses, repeatedly, so
/// that chains die back to front.
void eraseDeadOps(RewriterBase &rewriter, ArrayRef<Operation *> ops);

/// A miss "multi-consumer intermediate" naming `op`.
MIRMatchResult multiConsumer(Operation *op, StringRef hint = {});

/// For the report: a fused matmul without activation whose result feeds an
/// activation it could not take (unsupported, or the result has other uses).
MIRMatchResult diagnoseFusedMatmulEpilogue(mir::FusedMatmulOp op);

/// The misses mir-fuse-all records, between a `record-baseline` report and
/// the final report, in the module attribute `mir.fusion_misses`.
bool hasMIRFusionBaseline(Operation *module);
void recordMIRFusionMisses(Operation *module, ArrayRef<MIRMissedFusion> misses);
SmallVector<MIRMissedFusion> takeRecordedMIRFusionMisses(Operation *module);

/// The thin pattern around a matcher and a transform.
template <typename OpTy, typename MatchT, auto Matcher, auto Transform>
struct FusionPattern : public OpRewritePattern<OpTy> {
  FusionPattern(MLIRContext *ctx, MIRFusionControlFn control,
                PatternBenefit benefit = 1)
      : OpRewritePattern<OpTy>(ctx, benefit), control(std::move(control)) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    MatchT match;
    MIRMatchResult result = Matcher(op, match);
    if (!result.isMatched())
      return rewriter.notifyMatchFailure(
          op, result.isMissed() ? result.describe() : "not the pattern");
    if (control && !control(op))
      return rewriter.notifyMatchFailure(op, "vetoed by the control function");
    if (failed(Transform(rewriter, match)))
      return rewriter.notifyMatchFailure(op, "the transform failed");
    return success();
  }

  MIRFusionControlFn control;
};

} // namespace mlir::rlx::fusion

#endif // RLX_LIB_DIALECT_MIR_TRANSFORMS_FUSIONUTILS_H
