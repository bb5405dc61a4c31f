//===- custom-layers.cpp - A recipe with a hook and a custom stage -------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The LLaMA recipe of a checkpoint, changed without touching RLX: a layer
// hook composes layer 1 from primitive blocks while the other layers stay
// fused, and a tier-2 custom stage (Emitter, ops by name) scales the
// embeddings by a parameter the flow synthesizes (ones: the numbers stay
// the checkpoint's):
//
//   rlx-example-custom-layers MODEL_DIR [ID,ID,...]
//
// prints how many layers stay fused, the synthesized parameters, the fused
// ops and the next token a greedy generation picks.
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"
#include "RLX/Flow/Recipes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <numeric>

static int fail(llvm::Error err) {
  llvm::errs() << "rlx-example-custom-layers: "
               << llvm::toString(std::move(err)) << "\n";
  return 1;
}

/// Tier 2: x * scale, the scale synthesized by the flow (not in the
/// checkpoint).
static llvm::Error scaleByOnes(rlx::FlowContext &ctx, int64_t hidden) {
  rlx::Emitter e(ctx);
  mlir::Value x = e.current();
  llvm::Expected<mlir::Value> scale = e.synthParam(
      "example.embed_scale", {hidden}, std::vector<float>(hidden, 1.0f));
  if (!scale)
    return scale.takeError();
  llvm::Expected<mlir::Operation *> scaled =
      e.create("hir.layer_scale", x.getType(), {x, *scale});
  if (!scaled)
    return scaled.takeError();
  e.setCurrent((*scaled)->getResult(0));
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    llvm::errs() << "usage: rlx-example-custom-layers MODEL_DIR [ID,ID,...]\n";
    return 2;
  }
  std::vector<int32_t> prompt = {1, 2, 3};
  if (argc > 2) {
    prompt.clear();
    for (llvm::StringRef id : llvm::split(llvm::StringRef(argv[2]), ',')) {
      int32_t v;
      if (id.trim().getAsInteger(10, v)) {
        llvm::errs() << "rlx-example-custom-layers: '" << id
                     << "' is not a token id\n";
        return 2;
      }
      prompt.push_back(v);
    }
  }
  llvm::Expected<rlx::LoadedModel> loaded = rlx::loadModel(argv[1]);
  if (!loaded)
    return fail(loaded.takeError());
  int64_t hidden = loaded->config.hidden;

  rlx::Llama32Flow recipe(loaded->config);
  recipe.forPrefill().lastTokenLogits();
  recipe.beforeLayers(
      [hidden](rlx::FlowContext &ctx) { return scaleByOnes(ctx, hidden); });
  recipe.layer([](rlx::LayerCtx &ctx) -> rlx::Stage {
    if (ctx.index() == 1)
      return rlx::llamaPrefillLayerComposed(1, ctx.spec());
    return ctx.defaultStage();
  });
  llvm::Expected<rlx::BuiltModel> built = recipe.build(*loaded->weights);
  if (!built)
    return fail(built.takeError());
  // The HIR: fused layers are one op each, composed ones many.
  llvm::outs() << "fused layers: "
               << llvm::StringRef(built->mlir).count("hir.llama_decoder_layer")
               << " of " << loaded->config.numLayers << "\n"
               << "synthesized:";
  for (const std::string &name : built->synthesized->names())
    llvm::outs() << " " << name;
  llvm::outs() << "\n";

  int64_t t = prompt.size();
  rlx::CompileOptions options;
  options.inputShapes["tokens"] = {1, t};
  options.inputShapes["positions"] = {1, t};
  rlx::Session session;
  llvm::Expected<rlx::CompiledModel> model = session.compile(*built, options);
  if (!model)
    return fail(model.takeError());
  llvm::outs() << "fused ops: " << session.lastStats().fusedOps << "\n";
  // The synthesized scale comes with the model: the checkpoint alone loads.
  if (llvm::Error err = model->loadParams(*loaded->weights))
    return fail(std::move(err));
  std::vector<int32_t> positions(t);
  std::iota(positions.begin(), positions.end(), 0);
  rlx::TensorMap_t inputs;
  inputs.emplace("tokens", rlx::Tensor::fromI32({1, t}, prompt));
  inputs.emplace("positions", rlx::Tensor::fromI32({1, t}, positions));
  llvm::Expected<rlx::TensorMap_t> outputs = model->run(inputs);
  if (!outputs)
    return fail(outputs.takeError());
  llvm::ArrayRef<float> logits = outputs->at("logits").data<float>();
  size_t best = std::max_element(logits.begin(), logits.end()) - logits.begin();
  llvm::outs() << "next token: " << best << "\n";
  return 0;
}
