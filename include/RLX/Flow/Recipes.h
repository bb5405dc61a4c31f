//===- Recipes.h - Model recipes with hooks ----------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Recipes wire the blocks of a ModelFlow for an architecture from its HF
// config.json: LLaMA 3.2, Qwen3, Gemma 2 (decoders) and BERT (encoder).
// Hooks customize them without IR: `layer(ctx)` replaces a layer's stage
// (ctx.defaultStage() is the recipe's own), `beforeLayers` / `afterLayers`
// add stages, `patchFlow` edits the assembled flow.
//
//   auto recipe = Llama32Flow::fromModelDir("tiny-llama");
//   recipe->lastTokenLogits().layer([&](LayerCtx &ctx) {
//     return ctx.index() == 0 ? llamaPrefillLayerComposed(0, ctx.spec())
//                             : ctx.defaultStage();
//   });
//   auto built = recipe->build(weights);
//
//===----------------------------------------------------------------------===//

#ifndef RLX_FLOW_RECIPES_H
#define RLX_FLOW_RECIPES_H

#include "RLX/Flow/Config.h"
#include "RLX/Flow/ModelFlow.h"
#include <optional>

namespace rlx {

/// What a layer hook sees.
class LayerCtx {
public:
  LayerCtx(unsigned index, DecoderLayerSpec spec, Stage defaultStage)
      : idx(index), layerSpec(std::move(spec)), def(std::move(defaultStage)) {}
  unsigned index() const { return idx; }
  const DecoderLayerSpec &spec() const { return layerSpec; }
  /// The recipe's own stage for this layer.
  Stage defaultStage() const { return def; }

private:
  unsigned idx;
  DecoderLayerSpec layerSpec;
  Stage def;
};

/// The graph a decoder recipe builds.
enum class DecoderGraph {
  /// tokens, positions -> logits (all positions, or the last one).
  Prefill,
  /// tokens, positions, past_k.N, past_v.N, kv_mask -> logits of the last
  /// position, present_k.N, present_v.N (the KV-cache step; with an empty
  /// past it is the prefill that fills the cache).
  Decode,
};

/// A decoder-only LM recipe (LLaMA, Qwen3 and Gemma 2 share it).
class DecoderFlow {
public:
  DecoderFlow(TransformerConfig config, std::string family);

  DecoderFlow &forPrefill();
  DecoderFlow &forDecode();
  /// Logits of the last position only (default for Decode).
  DecoderFlow &lastTokenLogits(bool enable = true);
  DecoderFlow &layer(std::function<Stage(LayerCtx &)> hook);
  DecoderFlow &beforeLayers(Stage s);
  DecoderFlow &afterLayers(Stage s);
  DecoderFlow &patchFlow(std::function<void(ModelFlow &)> patch);
  /// The compile profile of the flows (default: the llama32Prefill or
  /// llama32Decode preset, as the graph is).
  DecoderFlow &profile(CompileProfile p);
  /// `[precision] weights` of the flows: Stored keeps matrices stored in
  /// f16, bf16 or ggml blocks so down to the kernels (default: the
  /// profile's, F32 in the presets).
  DecoderFlow &weightPrecision(WeightPrecision precision);
  /// Tensors of the checkpoint the recipe does not read are an error naming
  /// them; with `allow`, a warning in BuiltModel::warnings.
  DecoderFlow &allowUnusedWeights(bool allow = true);
  /// `[precision] kv_cache` of the flows: the element type of the past and
  /// present keys and values of the decode graph (default: the profile's,
  /// F32 in the presets).
  DecoderFlow &kvCachePrecision(ComputePrecision precision);

  const TransformerConfig &config() const { return cfg; }
  DecoderGraph graph() const { return kind; }
  /// The spec of layer `i` (attention config, weight prefix, norms).
  DecoderLayerSpec layerSpec(unsigned i) const;
  /// The assembled flow.
  ModelFlow flow() const;
  llvm::Expected<BuiltModel> build(const WeightSource &weights) const;

private:
  TransformerConfig cfg;
  std::string family;
  DecoderGraph kind = DecoderGraph::Prefill;
  bool lastOnly = false;
  std::optional<CompileProfile> userProfile;
  std::optional<WeightPrecision> weights;
  std::optional<ComputePrecision> kvCache;
  bool allowUnused = false;
  std::function<Stage(LayerCtx &)> layerHook;
  std::vector<Stage> before, after;
  std::vector<std::function<void(ModelFlow &)>> patches;
};

/// LLaMA 3.2 (and any LLaMA-architecture checkpoint).
class Llama32Flow : public DecoderFlow {
public:
  explicit Llama32Flow(TransformerConfig config)
      : DecoderFlow(std::move(config), "llama") {}
  static llvm::Expected<Llama32Flow> fromModelDir(llvm::StringRef dir);
};

/// Qwen3: LLaMA layers with per-head QK RMSNorm.
class Qwen3Flow : public DecoderFlow {
public:
  explicit Qwen3Flow(TransformerConfig config)
      : DecoderFlow(std::move(config), "qwen3") {}
  static llvm::Expected<Qwen3Flow> fromModelDir(llvm::StringRef dir);
};

/// Gemma 2: (1+w) sandwich norms, GeGLU, embedding scale, soft-capped
/// attention and logits, alternating sliding-window and global layers.
class GemmaFlow : public DecoderFlow {
public:
  explicit GemmaFlow(TransformerConfig config)
      : DecoderFlow(std::move(config), "gemma") {}
  static llvm::Expected<GemmaFlow> fromModelDir(llvm::StringRef dir);
};

/// The decoder recipe for `config.modelType` (llama, qwen3, gemma2).
llvm::Expected<DecoderFlow> decoderFlowFor(const TransformerConfig &config);

/// The checkpoint as the recipe for `config` reads it: Phi-3's fused
/// `qkv_proj` and `gate_up_proj` matrices become the separate q/k/v and
/// gate/up ones (a RowSplitWeights view, no copy); other models' sources
/// come back as they are.
llvm::Expected<std::unique_ptr<WeightSource>>
recipeWeights(const TransformerConfig &config,
              std::unique_ptr<WeightSource> weights);

/// A checkpoint's config and the weights its recipe reads.
struct LoadedModel {
  TransformerConfig config;
  std::unique_ptr<WeightSource> weights;
};

/// Opens a model as rlx-run --model does: an HF-style directory
/// (config.json + safetensors, viewed through recipeWeights) or a GGUF file
/// (its `<arch>.*` metadata as the config, tensors under Hugging Face names).
llvm::Expected<LoadedModel> loadModel(llvm::StringRef path);

/// BERT encoders (BertModel): embeddings (word + position + token type,
/// LayerNorm), post-LN encoder layers; outputs the last hidden state and,
/// with `meanPooled`, the attention-masked mean (sentence-transformers).
class BertFlow {
public:
  explicit BertFlow(TransformerConfig config);
  static llvm::Expected<BertFlow> fromModelDir(llvm::StringRef dir);

  BertFlow &meanPooled(bool enable = true);
  BertFlow &layer(std::function<Stage(unsigned, const BertLayerSpec &)> hook);
  BertFlow &patchFlow(std::function<void(ModelFlow &)> patch);
  /// Weight keys carry this prefix (e.g. "bert." for BertFor* checkpoints);
  /// detected from the weights when empty.
  BertFlow &weightPrefix(std::string prefix);
  /// As DecoderFlow::allowUnusedWeights. The pooler and pretraining heads
  /// (`pooler.*`, `cls.*`) are never an error: RLX computes the encoder's
  /// hidden states, and says so in a warning.
  BertFlow &allowUnusedWeights(bool allow = true);

  const TransformerConfig &config() const { return cfg; }
  ModelFlow flow(llvm::StringRef prefix) const;
  llvm::Expected<BuiltModel> build(const WeightSource &weights) const;

private:
  TransformerConfig cfg;
  bool pooled = false;
  std::optional<std::string> prefix;
  bool allowUnused = false;
  std::function<Stage(unsigned, const BertLayerSpec &)> layerHook;
  std::vector<std::function<void(ModelFlow &)>> patches;
};

} // namespace rlx

#endif // RLX_FLOW_RECIPES_H
