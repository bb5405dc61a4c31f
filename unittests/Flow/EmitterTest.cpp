//===- EmitterTest.cpp - Tier-2 custom stages -----------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Custom stages that create ops by name with the Emitter and read
// parameters the flow synthesizes (synthParam, synthZeros): built, compiled
// and run on the CPU against a reference written here, plus the errors of
// each Emitter call. This file includes no RLX dialect header: the Emitter
// is usable with ModelFlow.h and MLIR's own headers.
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"
#include "RLX/Flow/ModelFlow.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace rlx;
using llvm::Error;
using llvm::Expected;

namespace {

constexpr int64_t T = 3, H = 4;
const std::vector<float> gammaValues = {1.0f, 2.0f, -0.5f, 0.25f};
const std::vector<float> scaleValues = {0.5f, 1.5f, 2.0f, -1.0f};
const std::vector<float> biasValues = {0.1f, -0.2f, 0.3f, 0.0f};

/// LayerNorm with synthesized gamma and zero beta, scaled by the
/// checkpoint's "w", then a hir.custom of MIR ops: tanh(y + bias) with a
/// synthesized bias, plus the input (a residual).
Error emitNormScale(Emitter &e) {
  mlir::Value x = e.current();
  Expected<mlir::Value> gamma = e.synthParam("custom.gamma", {H}, gammaValues);
  if (!gamma)
    return gamma.takeError();
  Expected<mlir::Value> beta = e.synthZeros("custom.beta", {H});
  if (!beta)
    return beta.takeError();
  Expected<mlir::Operation *> norm =
      e.create("hir.layer_norm", x.getType(), {x, *gamma, *beta},
               {e.f32Attr("epsilon", 1e-5f)});
  if (!norm)
    return norm.takeError();
  Expected<mlir::Value> w = e.param("w", {H});
  if (!w)
    return w.takeError();
  Expected<mlir::Operation *> scaled =
      e.create("hir.layer_scale", x.getType(), {(*norm)->getResult(0), *w});
  if (!scaled)
    return scaled.takeError();
  e.setNamed("scaled", (*scaled)->getResult(0));
  e.setCurrent((*scaled)->getResult(0));
  return Error::success();
}

Error emitBiasTanhResidual(Emitter &e) {
  mlir::Value y = e.current(), x = e.named("x");
  // The second stage synthesizes beta again: same shape and values, so
  // the same parameter.
  Expected<mlir::Value> beta = e.synthZeros("custom.beta", {H});
  if (!beta)
    return beta.takeError();
  Expected<mlir::Value> bias = e.synthParam("custom.bias", {H}, biasValues);
  if (!bias)
    return bias.takeError();
  Expected<mlir::Operation *> custom =
      e.create("hir.custom", y.getType(), {y, *bias, *beta},
               {e.stringAttr("name", "bias_tanh")}, /*regions=*/1);
  if (!custom)
    return custom.takeError();
  mlir::OpBuilder &b = e.builder();
  {
    mlir::OpBuilder::InsertionGuard guard(b);
    mlir::Block *body = b.createBlock(&(*custom)->getRegion(0));
    for (mlir::Value in : {y, *bias, *beta})
      body->addArgument(in.getType(), e.loc());
    auto sum = e.create("mir.add", y.getType(),
                        {body->getArgument(0), body->getArgument(1)});
    if (!sum)
      return sum.takeError();
    auto shifted = e.create("mir.add", y.getType(),
                            {(*sum)->getResult(0), body->getArgument(2)});
    if (!shifted)
      return shifted.takeError();
    auto t = e.create("mir.tanh", y.getType(), (*shifted)->getResult(0));
    if (!t)
      return t.takeError();
    auto yield = e.create("hir.yield", {}, (*t)->getResult(0));
    if (!yield)
      return yield.takeError();
  }
  Expected<mlir::Operation *> out =
      e.create("hir.add", y.getType(), {(*custom)->getResult(0), x});
  if (!out)
    return out.takeError();
  e.setCurrent((*out)->getResult(0));
  return Error::success();
}

std::vector<float> reference(llvm::ArrayRef<float> x, llvm::ArrayRef<float> w) {
  std::vector<float> out(x.size());
  for (int64_t t = 0; t < T; ++t) {
    const float *row = x.data() + t * H;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < H; ++i)
      mean += row[i];
    mean /= H;
    for (int64_t i = 0; i < H; ++i)
      var += (row[i] - mean) * (row[i] - mean);
    var /= H;
    for (int64_t i = 0; i < H; ++i) {
      double n = (row[i] - mean) / std::sqrt(var + 1e-5) * gammaValues[i];
      double y = n * w[i];
      out[t * H + i] = std::tanh(y + biasValues[i]) + row[i];
    }
  }
  return out;
}

TensorMap checkpoint(const std::vector<float> &w) {
  TensorMap m("test checkpoint");
  llvm::cantFail(m.add("w", {H}, w));
  return m;
}

ModelFlow customFlow() {
  ModelFlow f("custom_synth");
  f.input("x", {1, T, H}, DType::F32)
      .custom("norm_scale", emitNormScale)
      .custom("bias_tanh", emitBiasTanhResidual)
      .output("y");
  return f;
}

TEST(Emitter, SynthesizedParamsBuildAndRun) {
  TensorMap w = checkpoint(scaleValues);
  Expected<BuiltModel> built = customFlow().build(w);
  ASSERT_TRUE(static_cast<bool>(built)) << llvm::toString(built.takeError());
  // The synthesized parameters travel with the model, not with the
  // checkpoint's weights.
  ASSERT_TRUE(built->synthesized);
  EXPECT_EQ(
      built->synthesized->names(),
      (std::vector<std::string>{"custom.gamma", "custom.beta", "custom.bias"}));
  EXPECT_EQ(built->params, (std::vector<std::string>{"w"}));
  Expected<llvm::ArrayRef<float>> beta =
      built->synthesized->viewF32("custom.beta");
  ASSERT_TRUE(static_cast<bool>(beta)) << llvm::toString(beta.takeError());
  EXPECT_EQ(beta->vec(), std::vector<float>(H, 0.0f));
  EXPECT_NE(built->mlir.find("hir.custom \"bias_tanh\""), std::string::npos)
      << built->mlir;

  Session session;
  Expected<CompiledModel> model = session.compileString(built->mlir, {});
  ASSERT_TRUE(static_cast<bool>(model)) << llvm::toString(model.takeError());
  WeightSourceStack all({&w, built->synthesized.get()});
  Error err = model->loadParams(all);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  std::vector<float> x = {0.3f, -1.2f, 2.0f, 0.7f,  1.0f, 1.0f,
                          1.5f, -0.5f, 0.0f, -2.0f, 0.9f, 0.4f};
  TensorMap_t feeds;
  feeds.emplace("x", Tensor::fromF32({1, T, H}, x));
  Expected<TensorMap_t> out = model->run(feeds);
  ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
  auto y = out->at("y").data<float>();
  std::vector<float> want = reference(x, scaleValues);
  ASSERT_EQ(y.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(y[i], want[i], 1e-5f) << "at " << i;
}

/// Builds a flow of input x and one custom stage `fn`; returns the error.
std::string buildError(std::function<Error(Emitter &)> fn) {
  TensorMap w = checkpoint(scaleValues);
  ModelFlow f("bad");
  f.input("x", {1, T, H}, DType::F32).custom("stage", std::move(fn));
  Expected<BuiltModel> built = f.build(w);
  if (built)
    return "<built>";
  return llvm::toString(built.takeError());
}

TEST(Emitter, SynthParamErrors) {
  EXPECT_EQ(
      buildError([](Emitter &e) { return e.synthZeros("w", {H}).takeError(); }),
      "custom stage 'stage': synthesized parameter 'w' would shadow "
      "the weight of that name in test checkpoint");
  EXPECT_EQ(buildError([](Emitter &e) -> Error {
              if (Error err = e.synthZeros("z", {H}).takeError())
                return err;
              return e.synthParam("z", {H}, {1, 1, 1, 1}).takeError();
            }),
            "custom stage 'stage': parameter 'z' is synthesized twice, as "
            "[4] and as [4] with other values");
  std::string count = buildError([](Emitter &e) {
    return e.synthParam("z", {2, 2}, {1, 2, 3}).takeError();
  });
  EXPECT_NE(count.find("shape [2, 2] has 4 elements, but 3 values were given"),
            std::string::npos)
      << count;
  EXPECT_EQ(buildError([](Emitter &e) {
              return e.synthZeros("z", {kDynamic}).takeError();
            }),
            "custom stage 'stage': synthesized parameter 'z' needs a static "
            "shape, got [?]");
}

TEST(Emitter, CreateErrors) {
  EXPECT_EQ(buildError([](Emitter &e) {
              return e.create("hir.nope", {}, {}).takeError();
            }),
            "custom stage 'stage': no op 'hir.nope' (expected an hir or mir "
            "op)");
  // hir.add of a [1, 3, 4] tensor and a [4] parameter: the verifier's
  // message comes back.
  std::string invalid = buildError([](Emitter &e) -> Error {
    Expected<mlir::Value> g = e.synthZeros("g", {H});
    if (!g)
      return g.takeError();
    return e.create("hir.add", e.current().getType(), {e.current(), *g})
        .takeError();
  });
  EXPECT_NE(invalid.find("custom stage 'stage': invalid 'hir.add': "),
            std::string::npos)
      << invalid;
  EXPECT_NE(invalid.find("all of {lhs, rhs, result} have same type"),
            std::string::npos)
      << invalid;
  EXPECT_EQ(buildError([](Emitter &e) {
              return e.parseAttr("mask", "#mir<nope").takeError();
            }).rfind("custom stage 'stage': attribute 'mask' = '#mir<nope'", 0),
            0u);
}

TEST(Emitter, ParsedAttributesAndShapes) {
  TensorMap w = checkpoint(scaleValues);
  ModelFlow f("attrs");
  f.input("x", {1, kDynamic, H}, DType::F32)
      .custom("scale", [](Emitter &e) -> Error {
        EXPECT_EQ(e.shape(e.current()),
                  (llvm::SmallVector<int64_t, 4>{1, kDynamic, H}));
        EXPECT_EQ(e.tensorType({2, kDynamic}),
                  mlir::RankedTensorType::get({2, mlir::ShapedType::kDynamic},
                                              e.builder().getF32Type()));
        Expected<mlir::NamedAttribute> scale =
            e.parseAttr("scale", "3.0 : f32");
        if (!scale)
          return scale.takeError();
        Expected<mlir::Operation *> op = e.create(
            "hir.embed_scale", e.current().getType(), e.current(), *scale);
        if (!op)
          return op.takeError();
        e.setCurrent((*op)->getResult(0));
        return Error::success();
      });
  Expected<BuiltModel> built = f.build(w);
  ASSERT_TRUE(static_cast<bool>(built)) << llvm::toString(built.takeError());
  EXPECT_NE(built->mlir.find("scale = 3.000000e+00 : f32"), std::string::npos)
      << built->mlir;
}

} // namespace

namespace {

/// x + norm_scale(x), then an RMSNorm: the residual add and the norm fuse
/// unless the profile skips fusion.
ModelFlow residualFlow(CompileProfile profile) {
  ModelFlow f("residual_synth");
  f.input("x", {1, T, H}, DType::F32)
      .residualSave()
      .custom("norm_scale", emitNormScale)
      .residualAdd()
      .rmsNorm("norm", 1e-5f)
      .output("y")
      .profile(std::move(profile));
  return f;
}

TensorMap residualCheckpoint() {
  TensorMap m("test checkpoint");
  llvm::cantFail(m.add("w", {H}, scaleValues));
  llvm::cantFail(m.add("norm", {H}, gammaValues));
  return m;
}

std::vector<float> runResidual(CompiledModel &model, const WeightSource &w) {
  Error err = model.loadParams(w);
  EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  std::vector<float> x = {0.3f, -1.2f, 2.0f, 0.7f,  1.0f, 1.0f,
                          1.5f, -0.5f, 0.0f, -2.0f, 0.9f, 0.4f};
  TensorMap_t feeds;
  feeds.emplace("x", Tensor::fromF32({1, T, H}, x));
  Expected<TensorMap_t> out = model.run(feeds);
  if (!out) {
    ADD_FAILURE() << llvm::toString(out.takeError());
    return {};
  }
  auto y = out->at("y").data<float>();
  return std::vector<float>(y.begin(), y.end());
}

} // namespace

TEST(Emitter, SessionCompilesABuiltModelWithItsProfile) {
  TensorMap w = residualCheckpoint();
  CompileProfile skip;
  skip.fusion.skip = true;
  Expected<BuiltModel> unfused = residualFlow(skip).build(w);
  ASSERT_TRUE(static_cast<bool>(unfused))
      << llvm::toString(unfused.takeError());
  Session session;
  // The flow's profile: nothing fused (compileString with the default
  // options fuses the residual add into the norm).
  Expected<CompiledModel> model = session.compile(*unfused);
  ASSERT_TRUE(static_cast<bool>(model)) << llvm::toString(model.takeError());
  EXPECT_EQ(session.lastStats().fusedOps, "none");
  EXPECT_TRUE(session.lastStats().notes.empty());
  // The synthesized parameters come along: the checkpoint alone loads.
  std::vector<float> got = runResidual(*model, w);

  Expected<CompiledModel> byText = session.compileString(unfused->mlir, {});
  ASSERT_TRUE(static_cast<bool>(byText)) << llvm::toString(byText.takeError());
  EXPECT_NE(session.lastStats().fusedOps.find("fused_residual_rms_norm"),
            std::string::npos)
      << session.lastStats().fusedOps;
  Error missing = byText->loadParams(w);
  ASSERT_TRUE(static_cast<bool>(missing));
  EXPECT_NE(llvm::toString(std::move(missing)).find("missing weight 'custom."),
            std::string::npos);
  WeightSourceStack all({&w, unfused->synthesized.get()});
  std::vector<float> want = runResidual(*byText, all);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5f) << "at " << i;

  // An option away from its default overrides the flow's field, and the
  // compile says so; the flow's other fields stay.
  CompileOptions o;
  o.profile.backend.cpu.threads = 1;
  Expected<CompiledModel> single = session.compile(*unfused, o);
  ASSERT_TRUE(static_cast<bool>(single)) << llvm::toString(single.takeError());
  EXPECT_EQ(session.lastStats().fusedOps, "none");
  ASSERT_EQ(session.lastStats().notes.size(), 1u);
  EXPECT_EQ(session.lastStats().notes[0],
            "the options set backend.cpu.threads = 1 over the flow's profile "
            "(0)");
  std::vector<float> again = runResidual(*single, w);
  EXPECT_EQ(again, got);
}
