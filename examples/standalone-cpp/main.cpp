//===- main.cpp - Build, compile and run a model with RLX::Flow -----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Builds TinyModel.h's block with the flow API from in-memory weights,
// compiles it for the CPU (JIT), runs it and checks it against the naive
// loops; exits non-zero on any error or mismatch. Given a prefix, it also
// compiles the block ahead of time to <prefix>.so and <prefix>.json, which
// tiny-exec runs without MLIR.
//
//   tiny-flow [<prefix>]
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"
#include "RLX/Flow/ModelFlow.h"
#include "TinyModel.h"
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
