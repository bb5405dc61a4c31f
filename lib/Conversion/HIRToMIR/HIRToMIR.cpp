//===- HIRToMIR.cpp - The convert-hir-to-mir pass -------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Conversion/HIRToMIR/HIRToMIR.h"
#include "PopulatePatterns.h"
#include "RLX/Conversion/Passes.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_CONVERTHIRTOMIRPASS
#include "RLX/Conversion/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;

void mlir::rlx::populateHIRToMIRPatterns(RewritePatternSet &patterns,
                                         ::rlx::FusionPolicy policy) {
  populateBlockPatterns(patterns, policy);
  populateVisionPatterns(patterns, policy);
  populateLayerPatterns(patterns, policy);
}

namespace {
struct ConvertHIRToMIRPass
    : public mlir::rlx::impl::ConvertHIRToMIRPassBase<ConvertHIRToMIRPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateHIRToMIRPatterns(patterns, policy);
    // Each HIR op is replaced once, in program order; no fixed point needed.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    // Anything left is an op no pattern could lower (it emitted why).
    WalkResult left = getOperation().walk([&](Operation *op) {
      if (!isa<hir::HIRDialect>(op->getDialect()))
        return WalkResult::advance();
      if (isa<hir::YieldOp>(op))
        return WalkResult::advance();
      op->emitOpError("could not be lowered to MIR");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
