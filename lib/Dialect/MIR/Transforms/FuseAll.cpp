//===- FuseAll.cpp - Fusion kinds, targets and the mir-fuse-all pass ------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The table of fusions (name, pass flag, fused ops), the table of which
// fusions each target claims, and the driver that runs them in order.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRFUSEALLPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;

//===----------------------------------------------------------------------===//
// Kinds
//===----------------------------------------------------------------------===//

namespace {
struct FusionInfo {
  MIRFusionKind kind;
  StringLiteral name;
  StringLiteral pass;
  ArrayRef<StringRef> ops;
};
} // namespace

static constexpr StringRef kGluOps[] = {"mir.fused_glu"};
static constexpr StringRef kAttentionOps[] = {"mir.attention"};
static constexpr StringRef kBlockOps[] = {"mir.attention_block"};
static constexpr StringRef kNormOps[] = {"mir.fused_residual_layer_norm",
                                         "mir.fused_residual_rms_norm"};
static constexpr StringRef kMatmulOps[] = {"mir.fused_matmul"};
static constexpr StringRef kRegionOps[] = {"mir.elementwise"};

/// Every fusion, in run order. The order matters:
/// - dequantize first: the other fusions match matmuls on parameters;
/// - shared-input next: swiglu and attention-block match its slices;
/// - swiglu before matmul-epilogue, which would otherwise take the gate
///   activation of an unmerged gate projection;
/// - attention before attention-block, which is rooted at mir.attention;
/// - attention-block before matmul-epilogue and residual-norm, which would
///   otherwise take the output projection's bias and the QKV bias;
/// - residual-norm before matmul-epilogue: a residual add feeding a norm
///   goes to the norm (the epilogue also declines it on its own);
/// - elementwise-region last, on what the structured fusions left.
static const FusionInfo kFusions[] = {
    {MIRFusionKind::Dequantize, "dequantize", "mir-fuse-dequantize", {}},
    {MIRFusionKind::SharedInputMatmul,
     "shared-input-matmul",
     "mir-fuse-shared-input-matmuls",
     {}},
    {MIRFusionKind::Swiglu, "swiglu", "mir-fuse-swiglu", kGluOps},
    {MIRFusionKind::Attention, "attention", "mir-fuse-attention",
     kAttentionOps},
    {MIRFusionKind::AttentionBlock, "attention-block",
     "mir-fuse-attention-block", kBlockOps},
    {MIRFusionKind::ResidualNorm, "residual-norm", "mir-fuse-residual-norm",
     kNormOps},
    {MIRFusionKind::MatmulEpilogue, "matmul-epilogue",
     "mir-fuse-matmul-epilogue", kMatmulOps},
    {MIRFusionKind::ElementwiseRegion, "elementwise-region",
     "mir-fuse-elementwise", kRegionOps},
};

static const FusionInfo &getInfo(MIRFusionKind kind) {
  for (const FusionInfo &info : kFusions)
    if (info.kind == kind)
      return info;
  llvm_unreachable("unknown fusion kind");
}

ArrayRef<MIRFusionKind> mlir::rlx::getMIRFusionOrder() {
  static const MIRFusionKind order[] = {
      MIRFusionKind::Dequantize,     MIRFusionKind::SharedInputMatmul,
      MIRFusionKind::Swiglu,         MIRFusionKind::Attention,
      MIRFusionKind::AttentionBlock, MIRFusionKind::ResidualNorm,
      MIRFusionKind::MatmulEpilogue, MIRFusionKind::ElementwiseRegion};
  return order;
}

StringRef mlir::rlx::stringifyMIRFusionKind(MIRFusionKind kind) {
  return getInfo(kind).name;
}

std::optional<MIRFusionKind> mlir::rlx::symbolizeMIRFusionKind(StringRef name) {
  for (const FusionInfo &info : kFusions)
    if (info.name == name)
      return info.kind;
  return std::nullopt;
}

StringRef mlir::rlx::getMIRFusionPassArgument(MIRFusionKind kind) {
  return getInfo(kind).pass;
}

ArrayRef<StringRef> mlir::rlx::getMIRFusionResultOps(MIRFusionKind kind) {
  return getInfo(kind).ops;
}

ArrayRef<StringRef> mlir::rlx::getMIRFusedOpNames() {
  static constexpr StringRef names[] = {"mir.attention",
                                        "mir.attention_block",
                                        "mir.elementwise",
                                        "mir.fused_glu",
                                        "mir.fused_matmul",
                                        "mir.fused_residual_layer_norm",
                                        "mir.fused_residual_rms_norm"};
  return names;
}

//===----------------------------------------------------------------------===//
// Targets
//===----------------------------------------------------------------------===//

void mlir::rlx::forEachMIRFunction(Operation *root,
                                   function_ref<void(Operation *)> fn) {
  if (isa<func::FuncOp>(root)) {
    fn(root);
    return;
  }
  root->walk([&](func::FuncOp f) { fn(f); });
}

bool mlir::rlx::doesMIRFusionTargetClaim(::rlx::Target target,
                                         MIRFusionKind kind) {
  switch (target) {
  case ::rlx::Target::Cpu:
    // The CPU back end implements every fused op: one kernel per op, and
    // the attention block reuses the attention kernel between two GEMMs.
    return true;
  case ::rlx::Target::Spirv:
    // A whole attention block is two GEMMs, RoPE and attention: on a GPU
    // these are separate dispatches with different workgroup shapes, so
    // SPIR-V keeps mir.attention and the projections apart. Its matmuls
    // and gathers read stored weights themselves (those it cannot decode
    // are refused by name when lowered).
    return kind != MIRFusionKind::AttentionBlock;
  }
  llvm_unreachable("unknown fusion target");
}

FailureOr<SmallVector<MIRFusionKind>> mlir::rlx::getMIRFusionKinds(
    ::rlx::Target target, ArrayRef<std::string> disabled, std::string *error) {
  SmallVector<MIRFusionKind> off;
  for (const std::string &name : disabled) {
    std::optional<MIRFusionKind> kind = symbolizeMIRFusionKind(name);
    if (!kind) {
      if (error) {
        SmallVector<StringRef> names;
        for (const FusionInfo &info : kFusions)
          names.push_back(info.name);
        *error = "unknown fusion '" + name + "' (expected one of " +
                 llvm::join(names, ", ") + ")";
      }
      return failure();
    }
    off.push_back(*kind);
  }
  SmallVector<MIRFusionKind> kinds;
  for (MIRFusionKind kind : getMIRFusionOrder())
    if (doesMIRFusionTargetClaim(target, kind) &&
        !llvm::is_contained(off, kind))
      kinds.push_back(kind);
  return kinds;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

void mlir::rlx::populateMIRFusionPatterns(RewritePatternSet &patterns,
                                          MIRFusionKind kind,
                                          const MIRFusionControlFn &control) {
  switch (kind) {
  case MIRFusionKind::Dequantize:
    return populateMIRFuseDequantizePatterns(patterns, control);
  case MIRFusionKind::SharedInputMatmul:
    return populateMIRFuseSharedInputMatmulsPatterns(patterns, control);
  case MIRFusionKind::Swiglu:
    return populateMIRFuseSwigluPatterns(patterns, control);
  case MIRFusionKind::Attention:
    return populateMIRFuseAttentionPatterns(patterns, control);
  case MIRFusionKind::AttentionBlock:
    return populateMIRFuseAttentionBlockPatterns(patterns, control);
  case MIRFusionKind::ResidualNorm:
    return populateMIRFuseResidualNormPatterns(patterns, control);
  case MIRFusionKind::MatmulEpilogue:
    return populateMIRFuseMatmulEpiloguePatterns(patterns, control);
  case MIRFusionKind::ElementwiseRegion:
    return populateMIRFuseElementwisePatterns(patterns, control);
  }
}

LogicalResult
mlir::rlx::applyMIRFusions(Operation *root, ArrayRef<MIRFusionKind> kinds,
                           const MIRFusionControlFn &control,
                           SmallVectorImpl<MIRMissedFusion> *misses) {
  // Functions only: MIR already inside LIR kernels is left alone.
  SmallVector<Operation *> funcs;
  forEachMIRFunction(root, [&](Operation *f) { funcs.push_back(f); });
  for (MIRFusionKind kind : kinds) {
    RewritePatternSet patterns(root->getContext());
    populateMIRFusionPatterns(patterns, kind, control);
    FrozenRewritePatternSet frozen(std::move(patterns));
    // Fusion only: no folding and no constant hoisting, so the IR changes
    // exactly where a pattern fired.
    GreedyRewriteConfig config;
    config.enableFolding(false).enableConstantCSE(false);
    for (Operation *f : funcs)
      if (failed(applyPatternsGreedily(f, frozen, config)))
        return mlir::emitError(f->getLoc(), "MIR fusion '")
               << stringifyMIRFusionKind(kind) << "' did not converge";
    if (misses)
      llvm::append_range(*misses, findMissedMIRFusions(root, {kind}));
  }
  return success();
}

namespace {
struct MIRFuseAllPass
    : public mlir::rlx::impl::MIRFuseAllPassBase<MIRFuseAllPass> {
  using Base::Base;
  void runOnOperation() override {
    ::rlx::Target t = target;
    std::string error;
    FailureOr<SmallVector<MIRFusionKind>> kinds =
        getMIRFusionKinds(t, disable, &error);
    if (failed(kinds)) {
      mlir::emitError(getOperation()->getLoc(), "mir-fuse-all: ") << error;
      return signalPassFailure();
    }
    // Between a baseline and the final report, keep what each fusion left:
    // the report explains it even when a later fusion absorbed the ops.
    bool record = fusion::hasMIRFusionBaseline(getOperation());
    SmallVector<MIRMissedFusion> misses;
    if (failed(applyMIRFusions(getOperation(), *kinds, {},
                               record ? &misses : nullptr)))
      return signalPassFailure();
    if (record)
      fusion::recordMIRFusionMisses(getOperation(), misses);
  }
};
} // namespace
