//===- sentence-embeddings.cpp - A BERT encoder's embedding ---------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A BERT checkpoint (Hugging Face directory) as a sentence encoder: the
// hidden states mean-pooled over the tokens:
//
//   rlx-example-sentence-embeddings MODEL_DIR ID,ID,...
//
// prints the embedding, one value per line.
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"
#include "RLX/Flow/Recipes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <numeric>

static int fail(llvm::Error err) {
  llvm::errs() << "rlx-example-sentence-embeddings: "
               << llvm::toString(std::move(err)) << "\n";
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    llvm::errs() << "usage: rlx-example-sentence-embeddings MODEL_DIR "
                    "ID,ID,...\n";
    return 2;
  }
  std::vector<int32_t> ids;
  for (llvm::StringRef id : llvm::split(llvm::StringRef(argv[2]), ',')) {
    int32_t v;
    if (id.trim().getAsInteger(10, v)) {
      llvm::errs() << "rlx-example-sentence-embeddings: '" << id
                   << "' is not a token id\n";
      return 2;
    }
    ids.push_back(v);
  }
  llvm::Expected<rlx::LoadedModel> loaded = rlx::loadModel(argv[1]);
  if (!loaded)
    return fail(loaded.takeError());
  rlx::BertFlow recipe(loaded->config);
  recipe.meanPooled();
  llvm::Expected<rlx::BuiltModel> built = recipe.build(*loaded->weights);
  if (!built)
    return fail(built.takeError());

  int64_t t = ids.size();
  rlx::CompileOptions options;
  for (const char *input :
       {"input_ids", "attention_mask", "position_ids", "token_type_ids"})
    options.inputShapes[input] = {1, t};
  rlx::Session session;
  llvm::Expected<rlx::CompiledModel> model = session.compile(*built, options);
  if (!model)
    return fail(model.takeError());
  if (llvm::Error err = model->loadParams(*loaded->weights))
    return fail(std::move(err));
  std::vector<int32_t> ones(t, 1), positions(t), zeros(t, 0);
  std::iota(positions.begin(), positions.end(), 0);
  rlx::TensorMap_t inputs;
  inputs.emplace("input_ids", rlx::Tensor::fromI32({1, t}, ids));
  inputs.emplace("attention_mask", rlx::Tensor::fromI32({1, t}, ones));
  inputs.emplace("position_ids", rlx::Tensor::fromI32({1, t}, positions));
  inputs.emplace("token_type_ids", rlx::Tensor::fromI32({1, t}, zeros));
  llvm::Expected<rlx::TensorMap_t> outputs = model->run(inputs);
  if (!outputs)
    return fail(outputs.takeError());
  for (float v : outputs->at("sentence_embedding").data<float>())
    llvm::outs() << llvm::format("%.9g", v) << "\n";
  return 0;
}
