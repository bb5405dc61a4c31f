//===- custom-flow.cpp - The README's flow, complete ----------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The README's C++ snippet with everything it uses defined: a two-layer
// LLaMA written as a flow of blocks, its weights and layer specs from a
// Hugging Face directory, compiled with the flow's profile and run on a
// prompt:
//
//   rlx-example-custom-flow MODEL_DIR [ID,ID,...]
//
// prints the logits' argmax of the last token (the next token a greedy
// generation picks).
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"
#include "RLX/Flow/Recipes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <numeric>

static int fail(llvm::Error err) {
  llvm::errs() << "rlx-example-custom-flow: " << llvm::toString(std::move(err))
               << "\n";
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    llvm::errs() << "usage: rlx-example-custom-flow MODEL_DIR [ID,ID,...]\n";
    return 2;
  }
  std::vector<int32_t> prompt = {1, 2, 3};
  if (argc > 2) {
    prompt.clear();
    for (llvm::StringRef id : llvm::split(llvm::StringRef(argv[2]), ',')) {
      int32_t v;
      if (id.trim().getAsInteger(10, v)) {
        llvm::errs() << "rlx-example-custom-flow: '" << id
                     << "' is not a token id\n";
        return 2;
      }
      prompt.push_back(v);
    }
  }
  // What the snippet uses: the checkpoint's weights, each layer's spec
  // (attention shape, RoPE, norms) from its config, the inputs and the
  // compile options.
  llvm::Expected<rlx::LoadedModel> loaded = rlx::loadModel(argv[1]);
  if (!loaded)
    return fail(loaded.takeError());
  const rlx::WeightSource &weights = *loaded->weights;
  rlx::Llama32Flow recipe(loaded->config);
  auto spec = [&](unsigned i) { return recipe.layerSpec(i); };
  int64_t t = prompt.size();
  std::vector<int32_t> positions(t);
  std::iota(positions.begin(), positions.end(), 0);
  rlx::Tensor ids = rlx::Tensor::fromI32({1, t}, prompt);
  rlx::Tensor pos = rlx::Tensor::fromI32({1, t}, positions);
  rlx::CompileOptions options;
  options.inputShapes["tokens"] = {1, t};
  options.inputShapes["positions"] = {1, t};

  // The README's snippet, verbatim (README.md, "From C++").
  // clang-format off
  rlx::ModelFlow flow("tiny");
  flow.input("tokens", {1, rlx::kDynamic}, rlx::DType::I32)
      .input("positions", {1, rlx::kDynamic}, rlx::DType::I32)
      .tokenEmbed()
      .repeatLayers(2, [&](unsigned i) { return rlx::llamaPrefillLayerFused(i, spec(i)); })
      .finalNorm(1e-5)
      .gatherLastToken()
      .lmHead(/*tied=*/true)
      .output("logits");
  auto built = flow.build(weights);                    // HIR, weights checked
  if (!built)
    return fail(built.takeError());
  rlx::Session session;                                // CPU
  auto model = session.compile(*built, options);       // the flow's profile
  if (!model)
    return fail(model.takeError());
  if (llvm::Error err = model->loadParams(weights))    // + what it synthesized
    return fail(std::move(err));
  auto outputs = model->run({{"tokens", ids}, {"positions", pos}});
  // clang-format on

  if (!outputs)
    return fail(outputs.takeError());
  llvm::ArrayRef<float> logits = outputs->at("logits").data<float>();
  size_t best = std::max_element(logits.begin(), logits.end()) - logits.begin();
  llvm::outs() << "next token: " << best << "\n";
  return 0;
}
