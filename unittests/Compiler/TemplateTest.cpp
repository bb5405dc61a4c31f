//===- TemplateTest.cpp - The three-step compile --------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Session::buildTemplate -> Template::specialize -> Specialized::compile:
// the template is fused MIR with symbolic dims, each specialization plans
// its own arena, and the code computes what Session::compile's does.
//
//===----------------------------------------------------------------------===//

#include "NormProj.h"
#include "RLX/Compiler/Session.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"

using namespace rlx;

namespace {

std::string errorOf(llvm::Error err) { return llvm::toString(std::move(err)); }

TEST(Template, ThreeStepsComputeWhatCompileDoes) {
  Session session;
  llvm::Expected<Template> tmpl =
      session.buildTemplateFromString(test::kNormProj);
  ASSERT_TRUE(bool(tmpl)) << errorOf(tmpl.takeError());
  ASSERT_EQ(tmpl->inputs().size(), 1u);
  EXPECT_EQ(tmpl->inputs()[0].name, "x");
  EXPECT_EQ(tmpl->inputs()[0].dtype, DType::F32);
  EXPECT_EQ(tmpl->inputs()[0].shape,
            (llvm::SmallVector<int64_t, 4>{1, -1, 64}));
  // Fused MIR, symbolic: no HIR left, the dynamic dim kept.
  std::string ir = tmpl->ir();
  EXPECT_EQ(ir.find("hir."), std::string::npos) << ir;
  EXPECT_NE(ir.find("mir.rms_norm"), std::string::npos) << ir;
  EXPECT_NE(ir.find("tensor<1x?x64xf32>"), std::string::npos) << ir;
  EXPECT_NE(tmpl->fusionReport().find("fusion report"), std::string::npos);

  // Two specializations of one template, each with its own arena plan.
  std::vector<float> outputs[2];
  uint64_t arenas[2];
  for (auto [i, tokens] : llvm::enumerate(std::vector<int64_t>{5, 9})) {
    llvm::Expected<Specialized> spec =
        tmpl->specialize({{"x", {1, tokens, 64}}});
    ASSERT_TRUE(bool(spec)) << errorOf(spec.takeError());
    EXPECT_FALSE(spec->cached());
    const ManifestEntry *x = spec->manifest().find(IOKind::Input, "x");
    ASSERT_NE(x, nullptr);
    EXPECT_EQ(x->shape, (llvm::SmallVector<int64_t, 4>{1, tokens, 64}));
    arenas[i] = spec->manifest().arenaSize;
    EXPECT_EQ(spec->stats().arenaBytes, arenas[i]);
    llvm::Expected<CompiledModel> model = spec->compile();
    ASSERT_TRUE(bool(model)) << errorOf(model.takeError());
    outputs[i] = test::runNormProj(*model, tokens);
    // Once only.
    llvm::Expected<CompiledModel> again = spec->compile();
    ASSERT_FALSE(bool(again));
    EXPECT_NE(errorOf(again.takeError()).find("compiled already"),
              std::string::npos);
  }
  EXPECT_LT(arenas[0], arenas[1]);

  // The one-step compile gives the same numbers, bit for bit.
  CompileOptions o;
  o.inputShapes["x"] = {1, 9, 64};
  llvm::Expected<CompiledModel> direct =
      session.compileString(test::kNormProj, o);
  ASSERT_TRUE(bool(direct)) << errorOf(direct.takeError());
  EXPECT_EQ(test::runNormProj(*direct, 9), outputs[1]);
}

TEST(Template, SpecializeChecksTheShapes) {
  Session session;
  llvm::Expected<Template> tmpl =
      session.buildTemplateFromString(test::kNormProj);
  ASSERT_TRUE(bool(tmpl)) << errorOf(tmpl.takeError());
  llvm::Expected<Specialized> missing = tmpl->specialize({});
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(errorOf(missing.takeError()).find("'x'"), std::string::npos);
  llvm::Expected<Specialized> unknown =
      tmpl->specialize({{"x", {1, 3, 64}}, {"y", {1}}});
  ASSERT_FALSE(bool(unknown));
  EXPECT_NE(errorOf(unknown.takeError()).find("'y'"), std::string::npos);
  llvm::Expected<Specialized> wrong = tmpl->specialize({{"x", {1, 3, 32}}});
  ASSERT_FALSE(bool(wrong));
  EXPECT_NE(errorOf(wrong.takeError()).find("cannot take the shape"),
            std::string::npos);
}

TEST(Template, SavedTemplateLoadsBack) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("rlx-template", dir));
  std::string path = (dir + "/norm_proj.mlir").str();
  Session session;
  llvm::Expected<Template> tmpl =
      session.buildTemplateFromString(test::kNormProj);
  ASSERT_TRUE(bool(tmpl)) << errorOf(tmpl.takeError());
  ASSERT_FALSE(bool(tmpl->save(path)));
  Session other;
  llvm::Expected<Template> loaded = other.loadTemplate(path);
  ASSERT_TRUE(bool(loaded)) << errorOf(loaded.takeError());
  EXPECT_EQ(loaded->ir(), tmpl->ir());
  llvm::Expected<Specialized> spec = loaded->specialize({{"x", {1, 4, 64}}});
  ASSERT_TRUE(bool(spec)) << errorOf(spec.takeError());
  llvm::Expected<CompiledModel> model = spec->compile();
  ASSERT_TRUE(bool(model)) << errorOf(model.takeError());
  test::runNormProj(*model, 4);
  llvm::Expected<Template> none =
      other.loadTemplate((dir + "/missing.mlir").str());
  ASSERT_FALSE(bool(none));
  EXPECT_NE(errorOf(none.takeError()).find("missing.mlir"), std::string::npos);
  llvm::sys::fs::remove_directories(dir);
}

TEST(Template, SpecializationsUseTheCompileCache) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("rlx-template", dir));
  Session session;
  CompileOptions o;
  o.cacheDir = std::string(dir);
  llvm::Expected<Template> tmpl =
      session.buildTemplateFromString(test::kNormProj, o);
  ASSERT_TRUE(bool(tmpl)) << errorOf(tmpl.takeError());
  std::vector<float> out[2];
  for (int run = 0; run < 2; ++run) {
    llvm::Expected<Specialized> spec = tmpl->specialize({{"x", {1, 6, 64}}});
    ASSERT_TRUE(bool(spec)) << errorOf(spec.takeError());
    // The second knows before compiling that the code is stored.
    EXPECT_EQ(spec->cached(), run == 1);
    EXPECT_GT(spec->manifest().arenaSize, 0u);
    llvm::Expected<CompiledModel> model = spec->compile();
    ASSERT_TRUE(bool(model)) << errorOf(model.takeError());
    EXPECT_EQ(session.lastStats().cached, run == 1);
    out[run] = test::runNormProj(*model, 6);
  }
  EXPECT_EQ(out[0], out[1]);
  llvm::sys::fs::remove_directories(dir);
}

TEST(Template, LIRIsNotATemplate) {
  Session session;
  llvm::Expected<Template> tmpl = session.buildTemplateFromString(R"mlir(
lir.entry @forward arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<8x4xf32>
  lir.io input "x" %x : memref<8x4xf32>
  lir.io output "y" %x : memref<8x4xf32>
}
)mlir");
  ASSERT_FALSE(bool(tmpl));
  EXPECT_NE(errorOf(tmpl.takeError()).find("is LIR already"),
            std::string::npos);
}

} // namespace
