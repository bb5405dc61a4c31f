//===- main.cpp - Build, compile and run a model with RLX::Flow -----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Builds TinyModel.h's block with the flow API from in-memory weights,
// compiles it for the CPU (JIT), runs it and checks it against the naive
// loops; exits non-zero on any error or mismatch. A second flow adds a
// tier-2 custom stage (ops created by name, a synthesized parameter), which
// needs no RLX dialect header. Given a prefix, it also
// compiles the block ahead of time to <prefix>.so and <prefix>.json, which
// tiny-exec runs without MLIR.
//
//   tiny-flow [<prefix>]
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"
#include "RLX/Flow/ModelFlow.h"
#include "TinyModel.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace rlx;

static int fail(llvm::Error err) {
  llvm::WithColor::error(llvm::errs(), "tiny-flow")
      << llvm::toString(std::move(err)) << "\n";
  return 1;
}

/// Tier 2: y = x * scale + x with `scale` synthesized by the stage, built
/// and run; checked against a loop.
static llvm::Error runCustomStage(Session &session) {
  std::vector<float> scale(tiny::kHidden);
  for (int64_t i = 0; i < tiny::kHidden; ++i)
    scale[i] = 0.5f + 0.25f * i;
  ModelFlow flow("tiny_custom");
  flow.input("x", {1, tiny::kTokens, tiny::kHidden}, DType::F32)
      .custom("scale_residual",
              [&](Emitter &e) -> llvm::Error {
                mlir::Value x = e.current();
                auto s = e.synthParam("scale_residual.scale", {tiny::kHidden},
                                      scale);
                if (!s)
                  return s.takeError();
                auto scaled = e.create("hir.layer_scale", x.getType(), {x, *s});
                if (!scaled)
                  return scaled.takeError();
                auto sum = e.create("hir.add", x.getType(),
                                    {(*scaled)->getResult(0), x});
                if (!sum)
                  return sum.takeError();
                e.setCurrent((*sum)->getResult(0));
                return llvm::Error::success();
              })
      .output("y");
  TensorMap none("no weights");
  auto built = flow.build(none);
  if (!built)
    return built.takeError();
  auto model = session.compileString(built->mlir, {});
  if (!model)
    return model.takeError();
  // The synthesized parameter is loaded like a weight.
  if (llvm::Error err = model->loadParams(*built->synthesized))
    return err;
  std::vector<float> x = tiny::input();
  TensorMap_t feeds;
  feeds.emplace("x", Tensor::fromF32({1, tiny::kTokens, tiny::kHidden}, x));
  auto outputs = model->run(feeds);
  if (!outputs)
    return outputs.takeError();
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    want[i] = x[i] * scale[i % tiny::kHidden] + x[i];
  if (!tiny::check("custom stage", outputs->at("y").data<float>(), want))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the custom stage's result is wrong");
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  tiny::Weights weights;
  TensorMap source("tiny weights");
  if (llvm::Error err = tiny::addWeights(weights, source))
    return fail(std::move(err));

  // The model: its input, then blocks that read their weights by name.
  ModelFlow flow("tiny_swiglu");
  flow.input("x", {1, kDynamic, tiny::kHidden}, DType::F32)
      .residualSave()
      .rmsNorm("norm.weight", tiny::kEps)
      .swigluHfMlp("mlp.")
      .residualAdd()
      .output("y");
  auto built = flow.build(source);
  if (!built)
    return fail(built.takeError());

  // Compile for this many tokens, load the weights, run.
  CompileOptions options;
  options.profile = built->profile;
  options.inputShapes["x"] = {1, tiny::kTokens, tiny::kHidden};
  Session session;
  auto model = session.compileString(built->mlir, options);
  if (!model)
    return fail(model.takeError());
  if (llvm::Error err = model->loadParams(source))
    return fail(std::move(err));
  std::vector<float> x = tiny::input();
  TensorMap_t feeds;
  feeds.emplace("x", Tensor::fromF32({1, tiny::kTokens, tiny::kHidden}, x));
  auto outputs = model->run(feeds);
  if (!outputs)
    return fail(outputs.takeError());
  llvm::outs() << "compiled '" << built->name << "' in "
               << session.lastStats().phaseSummary() << "\n";
  if (!tiny::check("jit", outputs->at("y").data<float>(),
                   tiny::reference(weights, x)))
    return 1;
  if (llvm::Error err = runCustomStage(session))
    return fail(std::move(err));

  // Ahead of time: <prefix>.so and <prefix>.json for tiny-exec.
  if (argc > 1) {
    std::string prefix = argv[1];
    std::string mlirPath = prefix + ".mlir";
    llvm::StringRef dir = llvm::sys::path::parent_path(mlirPath);
    std::error_code ec;
    if (!dir.empty() && (ec = llvm::sys::fs::create_directories(dir)))
      return fail(llvm::createStringError(ec, dir + ": " + ec.message()));
    {
      llvm::raw_fd_ostream os(mlirPath, ec, llvm::sys::fs::OF_Text);
      if (ec)
        return fail(
            llvm::createStringError(ec, mlirPath + ": " + ec.message()));
      os << built->mlir;
    }
    if (llvm::Error err =
            session.compileFileToLibrary(mlirPath, prefix, options))
      return fail(std::move(err));
    llvm::outs() << "wrote " << prefix << ".so and " << prefix << ".json\n";
  }
  return 0;
}
