//===- exec.cpp - Run an AOT model with RLX::Runtime only -----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Loads the library tiny-flow wrote (`tiny-flow <prefix>`), gives it the same
// weights and input, runs it and checks it against the naive loops. It links
// the MLIR-free runtime only.
//
//   tiny-exec <prefix>
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/CompiledModel.h"
#include "TinyModel.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace rlx;

static int fail(llvm::Error err) {
  llvm::WithColor::error(llvm::errs(), "tiny-exec")
      << llvm::toString(std::move(err)) << "\n";
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: tiny-exec <prefix> (reads <prefix>.so and "
                    "<prefix>.json)\n";
    return 2;
  }
  std::string prefix = argv[1];
  auto model = CompiledModel::loadLibrary(prefix + ".so", prefix + ".json");
  if (!model)
    return fail(model.takeError());
  tiny::Weights weights;
  TensorMap source("tiny weights");
  if (llvm::Error err = tiny::addWeights(weights, source))
    return fail(std::move(err));
  if (llvm::Error err = model->loadParams(source))
    return fail(std::move(err));
  std::vector<float> x = tiny::input();
  TensorMap_t feeds;
  feeds.emplace("x", Tensor::fromF32({1, tiny::kTokens, tiny::kHidden}, x));
  auto outputs = model->run(feeds);
  if (!outputs)
    return fail(outputs.takeError());
  return tiny::check("aot", outputs->at("y").data<float>(),
                     tiny::reference(weights, x))
             ? 0
             : 1;
}
