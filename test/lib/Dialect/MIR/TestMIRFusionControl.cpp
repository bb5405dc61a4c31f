//===- TestMIRFusionControl.cpp - Exercise the fusion control functions ---===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `test-mir-fusion-control` runs one fusion through its populate function
// with a control function built from the pass options, as a pipeline that
// keeps policy out of the patterns would: roots tagged `test.no_fuse` are
// refused, and with `only-function` so is every root outside that function.
// The lit test test/Dialect/MIR/fusion-control.mlir checks that the patterns
// consult the control function and leave refused roots untouched.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/Transforms/Transforms.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::rlx;

namespace {
struct TestMIRFusionControlPass
    : public PassWrapper<TestMIRFusionControlPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestMIRFusionControlPass)

  TestMIRFusionControlPass() = default;
  TestMIRFusionControlPass(const TestMIRFusionControlPass &other)
      : PassWrapper(other) {}

  StringRef getArgument() const final { return "test-mir-fusion-control"; }
  StringRef getDescription() const final {
    return "Run one MIR fusion with a control function that refuses roots "
           "tagged test.no_fuse (and, with only-function, roots elsewhere)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<mir::MIRDialect>();
  }

  void runOnOperation() override {
    std::optional<MIRFusionKind> kind = symbolizeMIRFusionKind(fusion);
    if (!kind) {
      getOperation().emitError("test-mir-fusion-control: unknown fusion '")
          << fusion << "'";
      return signalPassFailure();
    }
    unsigned asked = 0;
    MIRFusionControlFn control = [&](Operation *root) {
      ++asked;
      if (root->hasAttr("test.no_fuse"))
        return false;
      auto fn = root->getParentOfType<func::FuncOp>();
      return onlyFunction.empty() || (fn && fn.getSymName() == onlyFunction);
    };
    RewritePatternSet patterns(&getContext());
    populateMIRFusionPatterns(patterns, *kind, control);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // The patterns must have asked: a control function nobody calls is a
    // policy that does not exist.
    mlir::emitRemark(getOperation().getLoc())
        << "control function asked " << asked << " time(s)";
  }

  Option<std::string> fusion{*this, "fusion",
                             llvm::cl::desc("The fusion to run (swiglu, "
                                            "matmul-epilogue, ...)"),
                             llvm::cl::init("swiglu")};
  Option<std::string> onlyFunction{
      *this, "only-function",
      llvm::cl::desc("Refuse every root outside this function")};
};
} // namespace

namespace mlir::rlx::test {
void registerTestMIRFusionControlPass() {
  PassRegistration<TestMIRFusionControlPass>();
}
} // namespace mlir::rlx::test
