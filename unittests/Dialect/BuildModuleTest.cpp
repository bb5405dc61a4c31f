//===- BuildModuleTest.cpp - Build RLX IR with the C++ API ----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/InitAllDialects.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::rlx;

namespace {

class BuildModuleTest : public ::testing::Test {
protected:
  BuildModuleTest() {
    DialectRegistry registry;
    registerAllRLXDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }
  MLIRContext ctx;
};

TEST_F(BuildModuleTest, RmsNormVerifies) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module.getBody());
  auto f32 = b.getF32Type();
  auto xTy = RankedTensorType::get({1, ShapedType::kDynamic, 64}, f32);
  auto fn = func::FuncOp::create(b, loc, "f", b.getFunctionType({xTy}, {xTy}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value w = hir::ParamOp::create(b, loc, RankedTensorType::get({64}, f32),
                                 b.getStringAttr("norm.weight"));
  Value y = hir::RmsNormOp::create(b, loc, xTy, entry->getArgument(0), w,
                                   b.getF32FloatAttr(1e-6f));
  func::ReturnOp::create(b, loc, y);
  EXPECT_TRUE(succeeded(verify(module)));
  module->erase();
}

TEST_F(BuildModuleTest, RmsNormRejectsMismatchedWeight) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module.getBody());
  auto f32 = b.getF32Type();
  auto xTy = RankedTensorType::get({1, 8, 64}, f32);
  auto fn = func::FuncOp::create(b, loc, "f", b.getFunctionType({xTy}, {xTy}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value w = hir::ParamOp::create(b, loc, RankedTensorType::get({32}, f32),
                                 b.getStringAttr("norm.weight"));
  Value y = hir::RmsNormOp::create(b, loc, xTy, entry->getArgument(0), w,
                                   b.getF32FloatAttr(1e-6f));
  func::ReturnOp::create(b, loc, y);
  std::string diag;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    diag = d.str();
    return success();
  });
  EXPECT_TRUE(failed(verify(module)));
  EXPECT_NE(diag.find("expects weight of shape [64]"), std::string::npos)
      << diag;
  module->erase();
}

} // namespace
