//===- FusionTest.cpp - MIR fusion C++ API --------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The parts of MIR fusion that lit cannot reach: control functions, the
// target table, and the agreement between profile and fusion names.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/Transforms/Transforms.h"
#include "RLX/InitAllDialects.h"
#include "RLX/Profile/CompileProfile.h"
#include "RLX/Transforms/Pipelines.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::rlx;

namespace {

/// A SwiGLU MLP on parameters: shared-input, swiglu and epilogue all fire.
constexpr const char *kMlp = R"mlir(
func.func @mlp(%x: tensor<4x16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %wg = mir.param "gate" : tensor<32x16xf32>
  %wu = mir.param "up" : tensor<32x16xf32>
  %wd = mir.param "down" : tensor<16x32xf32>
  %0 = mir.matmul %x, %wg {transpose_rhs} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %1 = mir.silu %0 : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %2 = mir.matmul %x, %wu {transpose_rhs} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %3 = mir.mul %1, %2 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %4 = mir.matmul %3, %wd {transpose_rhs} : (tensor<4x32xf32>, tensor<16x32xf32>) -> tensor<4x16xf32>
  %5 = mir.add %r, %4 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %5 : tensor<4x16xf32>
}
)mlir";

class FusionTest : public ::testing::Test {
protected:
  FusionTest() {
    DialectRegistry registry;
    registerAllRLXDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }

  OwningOpRef<ModuleOp> parse(const char *text) {
    return parseSourceString<ModuleOp>(text, &ctx);
  }

  static unsigned count(ModuleOp module, StringRef name) {
    unsigned n = 0;
    module->walk(
        [&](Operation *op) { n += op->getName().getStringRef() == name; });
    return n;
  }

  MLIRContext ctx;
};

TEST_F(FusionTest, AllFusionsInOrder) {
  OwningOpRef<ModuleOp> module = parse(kMlp);
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(applyMIRFusions(*module, getMIRFusionOrder())));
  EXPECT_EQ(count(*module, "mir.fused_glu"), 1u);
  EXPECT_EQ(count(*module, "mir.fused_matmul"), 1u);
  EXPECT_EQ(count(*module, "mir.matmul"), 1u);
  EXPECT_TRUE(findMissedMIRFusions(*module, getMIRFusionOrder()).empty());
}

TEST_F(FusionTest, ControlFunctionVetoes) {
  OwningOpRef<ModuleOp> module = parse(kMlp);
  ASSERT_TRUE(module);
  // Veto every GLU: the gate/up matmuls still merge, the epilogue still
  // takes the down projection.
  unsigned asked = 0;
  MIRFusionControlFn noGlu = [&](Operation *root) {
    ++asked;
    return !isa<mir::MulOp>(root);
  };
  ASSERT_TRUE(succeeded(applyMIRFusions(*module, getMIRFusionOrder(), noGlu)));
  EXPECT_GT(asked, 0u);
  EXPECT_EQ(count(*module, "mir.fused_glu"), 0u);
  EXPECT_EQ(count(*module, "mir.fused_matmul"), 1u);
  // The vetoed GLU is reported as matched but not fused.
  SmallVector<MIRMissedFusion> misses =
      findMissedMIRFusions(*module, {MIRFusionKind::Swiglu});
  ASSERT_EQ(misses.size(), 1u);
  EXPECT_EQ(misses[0].miss.reason, "not fused");
  EXPECT_EQ(misses[0].opName, "mir.mul");
}

TEST_F(FusionTest, MatchersReportReasons) {
  OwningOpRef<ModuleOp> module = parse(kMlp);
  ASSERT_TRUE(module);
  // Before shared-input fusion, the GLU's projections are separate.
  module->walk([&](mir::MulOp mul) {
    SwigluMatch match;
    MIRMatchResult result = matchSwiglu(mul, match);
    EXPECT_TRUE(result.isMissed());
    EXPECT_EQ(result.getMiss().reason, "projections not concatenated");
  });
}

TEST_F(FusionTest, TargetTable) {
  for (MIRFusionKind kind : getMIRFusionOrder())
    EXPECT_TRUE(doesMIRFusionTargetClaim(::rlx::Target::Cpu, kind));
  EXPECT_FALSE(doesMIRFusionTargetClaim(::rlx::Target::Spirv,
                                        MIRFusionKind::AttentionBlock));
  FailureOr<SmallVector<MIRFusionKind>> spirv =
      getMIRFusionKinds(::rlx::Target::Spirv, {"swiglu"});
  ASSERT_TRUE(succeeded(spirv));
  // SPIR-V claims all but attention-block (its kernels decode stored
  // weights too).
  EXPECT_TRUE(doesMIRFusionTargetClaim(::rlx::Target::Spirv,
                                       MIRFusionKind::Dequantize));
  EXPECT_EQ(spirv->size(), getMIRFusionOrder().size() - 2);
  EXPECT_FALSE(llvm::is_contained(*spirv, MIRFusionKind::Swiglu));
  std::string error;
  EXPECT_TRUE(failed(getMIRFusionKinds(::rlx::Target::Cpu, {"nope"}, &error)));
  EXPECT_NE(error.find("unknown fusion 'nope'"), std::string::npos);
}

TEST_F(FusionTest, ProfileNamesAreFusionNames) {
  // Every name a profile accepts in [fusion].disable names a fusion, and
  // every fusion can be disabled from a profile.
  for (llvm::StringRef name : ::rlx::knownFusionPatterns())
    EXPECT_TRUE(symbolizeMIRFusionKind(name).has_value()) << name.str();
  EXPECT_EQ(::rlx::knownFusionPatterns().size(), getMIRFusionOrder().size());
  for (MIRFusionKind kind : getMIRFusionOrder())
    EXPECT_EQ(symbolizeMIRFusionKind(stringifyMIRFusionKind(kind)), kind);
}

TEST_F(FusionTest, BuildCompilePipelineFromEveryPreset) {
  for (llvm::StringRef name : ::rlx::CompileProfile::presetNames()) {
    std::optional<::rlx::CompileProfile> profile =
        ::rlx::CompileProfile::preset(name);
    ASSERT_TRUE(profile.has_value());
    PassManager pm(&ctx);
    std::string error;
    EXPECT_TRUE(succeeded(
        buildCompilePipeline(pm, *profile, ::rlx::Target::Cpu, &error)))
        << name.str() << ": " << error;
  }
}

} // namespace
