//===- llama-generate.cpp - Generate from a checkpoint --------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A decoder from a Hugging Face directory (config.json + safetensors) or a
// GGUF file, its recipe chosen by the config's model_type, generating with
// a KV cache:
//
//   rlx-example-llama-generate MODEL [ID,ID,...] [NEW_TOKENS]
//
// prints the generated token ids (greedy).
//
//===----------------------------------------------------------------------===//

#include "RLX/Flow/Generate.h"
#include "RLX/Flow/Recipes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

static int fail(llvm::StringRef what, llvm::Error err) {
  llvm::errs() << "rlx-example-llama-generate: " << what << ": "
               << llvm::toString(std::move(err)) << "\n";
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    llvm::errs()
        << "usage: rlx-example-llama-generate MODEL [ID,ID,...] [NEW_TOKENS]\n";
    return 2;
  }
  std::vector<int32_t> prompt = {1, 2, 3};
  if (argc > 2) {
    prompt.clear();
    for (llvm::StringRef id : llvm::split(llvm::StringRef(argv[2]), ',')) {
      int32_t v;
      if (id.trim().getAsInteger(10, v)) {
        llvm::errs() << "rlx-example-llama-generate: '" << id
                     << "' is not a token id\n";
        return 2;
      }
      prompt.push_back(v);
    }
  }
  unsigned newTokens = 8;
  if (argc > 3 && llvm::StringRef(argv[3]).getAsInteger(10, newTokens)) {
    llvm::errs() << "rlx-example-llama-generate: '" << argv[3]
                 << "' is not a number of tokens\n";
    return 2;
  }

  // The config and the weights (memory-mapped), then the recipe for the
  // config's model_type.
  llvm::Expected<rlx::LoadedModel> model = rlx::loadModel(argv[1]);
  if (!model)
    return fail(argv[1], model.takeError());
  llvm::Expected<rlx::DecoderFlow> recipe = rlx::decoderFlowFor(model->config);
  if (!recipe)
    return fail(argv[1], recipe.takeError());

  // Decode graphs compile per bucket of the past as the cache fills.
  rlx::Session session;
  llvm::Expected<std::unique_ptr<rlx::Generator>> generator =
      rlx::Generator::create(session, *recipe, *model->weights,
                             prompt.size() + newTokens);
  if (!generator)
    return fail(argv[1], generator.takeError());
  llvm::Expected<std::vector<int32_t>> tokens =
      (*generator)->generate(prompt, newTokens, rlx::SamplingOptions());
  if (!tokens)
    return fail("generation", tokens.takeError());
  llvm::outs() << "tokens:";
  for (int32_t t : *tokens)
    llvm::outs() << " " << t;
  llvm::outs() << "\n";
  return 0;
}
