//===- Recipes.h - Model recipes with hooks ----------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Recipes wire the blocks of a ModelFlow for an architecture from its HF
// config.json: LLaMA 3.2, Qwen3, Gemma 2 (decoders) and BERT (encoder). Each
// is a ModelRecipe (config parsing, weight-name mapping, flow construction,
// hooks) registered by model_type in the RecipeRegistry, where a user's own
// recipe registers the same way (docs/Flow.md, "Writing a recipe").
// Hooks customize them without IR: `layer(ctx)` replaces a layer's stage
// (ctx.defaultStage() is the recipe's own; ctx.withAttention() replaces
// only its attention), `beforeLayers` / `afterLayers` add stages,
// `patchFlow` edits the assembled flow.
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
#include "RLX/Flow/Stages.h"
#include <optional>

namespace rlx {

class BertFlow;

/// What a layer hook sees: the layer's index and spec, and the recipe's own
/// layer as parts (DecoderLayer), so that a hook can replace one part and
/// keep the rest.
class LayerCtx {
public:
  /// A context for an opaque layer (`defaultStage` without parts).
  LayerCtx(unsigned index, DecoderLayerSpec spec, Stage defaultStage)
      : layerSpec(std::move(spec)), parts(index, std::move(defaultStage)) {}
  /// A context for `layer`, of kind `kind` in its LayerComposition.
  LayerCtx(DecoderLayerSpec spec, DecoderLayer layer, unsigned kind = 0)
      : layerSpec(std::move(spec)), parts(std::move(layer)), k(kind) {}
  unsigned index() const { return parts.index(); }
  const DecoderLayerSpec &spec() const { return layerSpec; }
  /// The recipe's own stage for this layer.
  Stage defaultStage() const { return parts.stage(); }
  /// The recipe's own layer, as parts (copy it to replace some).
  const DecoderLayer &layer() const { return parts; }
  /// Which kind of the recipe's LayerComposition the layer is (0, or 1 for
  /// the odd layers of an alternating pair such as Gemma 2's global ones).
  unsigned kind() const { return k; }
  /// The recipe's layer with its attention replaced (the norms, residuals
  /// and feed-forward block stay the recipe's).
  Stage withAttention(std::shared_ptr<const AttentionStage> attention) const;
  /// The recipe's layer with its feed-forward block replaced.
  Stage withFfn(std::shared_ptr<const FfnStage> ffn) const;

private:
  DecoderLayerSpec layerSpec;
  DecoderLayer parts;
  unsigned k = 0;
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

/// Whether a recipe builds a decoder-only LM (DecoderFlow), a text encoder
/// (BertFlow), or an image encoder (VisionFlow).
enum class RecipeKind { Decoder, Encoder, Vision };

/// What a recipe builds a flow for: the config, the graph and its options,
/// and the hooks of the DecoderFlow or BertFlow that asks.
struct FlowRequest {
  TransformerConfig config;
  /// The flow's name before "_prefill" / "_decode" (decoders).
  std::string name;
  DecoderGraph graph = DecoderGraph::Prefill;
  bool lastTokenLogits = false;
  /// The resolved compile profile (with the precision overrides applied).
  CompileProfile profile;
  std::function<Stage(LayerCtx &)> layerHook;
  std::vector<Stage> before, after;
  std::vector<std::function<void(ModelFlow &)>> patches;
  // Encoders.
  /// Weight keys carry this prefix ("bert." for BertFor* checkpoints).
  std::string weightPrefix;
  bool meanPooled = false;
  std::function<Stage(unsigned, const BertLayerSpec &)> encoderLayerHook;
  // Image encoders.
  /// The image the flow takes (0: the config's image_size).
  int64_t imageHeight = 0, imageWidth = 0;
  /// ViT: the checkpoint has the pooler, computed as pooler_output.
  bool pooler = false;

  bool decode() const { return graph == DecoderGraph::Decode; }
};

/// An architecture: how its config is parsed, how its checkpoint's weights
/// are named, and how its flow is built. The built-in recipes (LLaMA,
/// Qwen3, Gemma 2/3, BERT) implement it, and so does a user's recipe for
/// another architecture, in their own code: registered with registerRecipe,
/// it is what loadModel, decoderFlowFor and the tools (rlx-run --model) use
/// for its model_type.
///
/// The default flow() builds a decoder-only LM from the virtual parts below
/// (LLaMA's unless overridden): inputs; embedding(); beforeLayers(); the
/// layers of composition(), each through layer(); afterLayers(); head();
/// the "logits" output; patchFlow(). The hooks of the DecoderFlow that asks
/// (FlowRequest) run after the recipe's own.
class ModelRecipe {
public:
  virtual ~ModelRecipe();

  /// The recipe's name: "llama", "qwen3", "gemma", "bert", ... (flows are
  /// named after it).
  virtual llvm::StringRef name() const = 0;
  virtual RecipeKind kind() const { return RecipeKind::Decoder; }

  // Config parsing.

  /// The config of a checkpoint from its config.json text (default:
  /// TransformerConfig::fromJSON, which reads the common keys of a
  /// model_type it does not know and lists the others in unknownKeys).
  virtual llvm::Expected<TransformerConfig>
  parseConfig(llvm::StringRef json, llvm::StringRef fileName) const;

  // Weight-name mapping.

  /// The checkpoint as the recipe reads it, under the names its flow uses
  /// (default: as it is). Phi-3's fused matrices are split here.
  virtual llvm::Expected<std::unique_ptr<WeightSource>>
  mapWeights(const TransformerConfig &config,
             std::unique_ptr<WeightSource> weights) const;

  // Flow construction.

  /// The whole flow for `request`.
  virtual ModelFlow flow(const FlowRequest &request) const;
  /// The spec of decoder layer `index` (attention, norms, weight prefix).
  virtual DecoderLayerSpec layerSpec(const TransformerConfig &config,
                                     unsigned index) const;
  /// The token embedding (after the inputs).
  virtual void embedding(ModelFlow &f, const FlowRequest &request) const;
  /// The layers, each the recipe's defaultLayer (homogeneous, or an
  /// alternating pair when the config's sliding-window layers alternate).
  /// The composition refers to this recipe, which must outlive it.
  virtual LayerComposition composition(const FlowRequest &request) const;
  /// Layer `index` as parts (norms, SelfAttention, GatedMlp) with the fused
  /// HIR composite of `spec` (prefill) or its KV-cache form (decode).
  virtual DecoderLayer defaultLayer(const FlowRequest &request, unsigned index,
                                    const DecoderLayerSpec &spec) const;
  /// The final norm, the last position (decode or lastTokenLogits) and the
  /// LM head.
  virtual void head(ModelFlow &f, const FlowRequest &request) const;

  // Hooks (a recipe derived from another overrides them).

  /// Layer `ctx.index()` (default: the composition's, ctx.layer()).
  virtual DecoderLayer layer(LayerCtx &ctx) const { return ctx.layer(); }
  /// Stages before the first layer.
  virtual void beforeLayers(ModelFlow &f, const FlowRequest &request) const {}
  /// Stages after the last layer.
  virtual void afterLayers(ModelFlow &f, const FlowRequest &request) const {}
  /// Edits the assembled flow.
  virtual void patchFlow(ModelFlow &f, const FlowRequest &request) const {}

  /// Tensors of a checkpoint that the recipe knowingly leaves out (heads it
  /// does not compute): a warning, not an unused-weight error.
  virtual bool isIgnoredHead(llvm::StringRef name,
                             const FlowRequest &request) const {
    return false;
  }
};

/// The built-in recipe called `name` ("llama", "qwen3", "gemma", "bert").
std::shared_ptr<const ModelRecipe> builtinRecipe(llvm::StringRef name);

/// Recipes by config.json model_type (a GGUF's architecture maps to one) and
/// by Hugging Face `architectures` entries. The built-in recipes are
/// registered first, the same way.
class RecipeRegistry {
public:
  /// The process's registry.
  static RecipeRegistry &global();

  /// Registers `recipe` for `modelTypes` and `architectures` (e.g.
  /// "LlamaForCausalLM"; loadModel looks a config.json up by its first
  /// architecture when it has no model_type). A name registered already is
  /// an error naming it.
  llvm::Error add(std::shared_ptr<const ModelRecipe> recipe,
                  llvm::ArrayRef<std::string> modelTypes,
                  llvm::ArrayRef<std::string> architectures = {});
  /// Unregisters a model_type (and the architectures of its recipe that no
  /// other model_type uses); false if it was not registered.
  bool remove(llvm::StringRef modelType);
  /// The recipe of `modelType`, or null.
  std::shared_ptr<const ModelRecipe> lookup(llvm::StringRef modelType) const;
  /// The recipe of an `architectures` entry, or null.
  std::shared_ptr<const ModelRecipe>
  lookupArchitecture(llvm::StringRef architecture) const;
  /// The registered model types of `kind`, in registration order.
  std::vector<std::string> modelTypes(RecipeKind kind) const;

private:
  RecipeRegistry();
  struct Impl;
  std::shared_ptr<Impl> impl;
};

/// RecipeRegistry::global().add(...).
llvm::Error registerRecipe(std::shared_ptr<const ModelRecipe> recipe,
                           llvm::ArrayRef<std::string> modelTypes,
                           llvm::ArrayRef<std::string> architectures = {});

/// The registered recipe for `config.modelType`, or an error listing the
/// registered ones.
llvm::Expected<std::shared_ptr<const ModelRecipe>>
recipeFor(const TransformerConfig &config);

/// A decoder-only LM built by a ModelRecipe: the graph (prefill or decode),
/// its options and the hooks of this instance (run after the recipe's).
class DecoderFlow {
public:
  /// The built-in recipe of `family` ("llama", "qwen3", "gemma"; another
  /// name builds LLaMA layers under that name).
  DecoderFlow(TransformerConfig config, std::string family);
  /// The decoder `recipe` builds.
  DecoderFlow(TransformerConfig config,
              std::shared_ptr<const ModelRecipe> recipe);

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
  /// The prompt graph's and the decode graph's profiles apart (a profile
  /// file read over each graph's preset, say).
  DecoderFlow &profile(CompileProfile prefill, CompileProfile decode);
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
  /// `[precision] compute` of the flows: the element type of the
  /// activations between ops (mir-compute-precision; the kernels compute in
  /// f32. Default: the profile's, F32 in the presets).
  DecoderFlow &computePrecision(ComputePrecision precision);
  /// `[parallel] tensor` of the flows: the graphs compile into this MPI
  /// rank's share of an N-way tensor-parallel model (default: the
  /// profile's, 1 in the presets).
  DecoderFlow &tensorParallel(int64_t ranks);

  const TransformerConfig &config() const { return cfg; }
  const ModelRecipe &recipe() const { return *arch; }
  DecoderGraph graph() const { return kind; }
  /// The spec of layer `i` (attention config, weight prefix, norms).
  DecoderLayerSpec layerSpec(unsigned i) const;
  /// What the recipe is asked to build.
  FlowRequest request() const;
  /// The assembled flow.
  ModelFlow flow() const;
  llvm::Expected<BuiltModel> build(const WeightSource &weights) const;

private:
  TransformerConfig cfg;
  std::shared_ptr<const ModelRecipe> arch;
  std::string family;
  DecoderGraph kind = DecoderGraph::Prefill;
  bool lastOnly = false;
  std::optional<CompileProfile> userProfile, userDecodeProfile;
  std::optional<WeightPrecision> weights;
  std::optional<ComputePrecision> kvCache, compute;
  std::optional<int64_t> tensorRanks;
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

/// The decoder of the recipe registered for `config.modelType` (llama,
/// mistral, qwen2, qwen3, gemma2, gemma3_text, phi3, and any a user
/// registered).
llvm::Expected<DecoderFlow> decoderFlowFor(const TransformerConfig &config);

/// The checkpoint as the recipe registered for `config` reads it
/// (ModelRecipe::mapWeights): Phi-3's fused `qkv_proj` and `gate_up_proj`
/// matrices become the separate q/k/v and gate/up ones (a RowSplitWeights
/// view, no copy); a source of a model_type without a recipe comes back as
/// it is.
llvm::Expected<std::unique_ptr<WeightSource>>
recipeWeights(const TransformerConfig &config,
              std::unique_ptr<WeightSource> weights);

/// A checkpoint's config and the weights its recipe reads.
struct LoadedModel {
  TransformerConfig config;
  std::unique_ptr<WeightSource> weights;
};

/// Opens a model as rlx-run --model does: an HF-style directory
/// (config.json, parsed by the recipe registered for its model_type, or for
/// its first `architectures` entry when it has none; safetensors viewed
/// through the recipe's mapWeights) or a GGUF file (its `<arch>.*` metadata as
/// the config, tensors under Hugging Face names).
llvm::Expected<LoadedModel> loadModel(llvm::StringRef path);

/// BERT encoders (BertModel): embeddings (word + position + token type,
/// LayerNorm), post-LN encoder layers; outputs the last hidden state and,
/// with `meanPooled`, the attention-masked mean (sentence-transformers).
class BertFlow {
public:
  explicit BertFlow(TransformerConfig config);
  /// The encoder `recipe` builds (ModelRecipe::flow with the request's
  /// weightPrefix, meanPooled and encoderLayerHook).
  BertFlow(TransformerConfig config, std::shared_ptr<const ModelRecipe> recipe);
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
  std::shared_ptr<const ModelRecipe> arch;
  bool pooled = false;
  std::optional<std::string> prefix;
  bool allowUnused = false;
  std::function<Stage(unsigned, const BertLayerSpec &)> layerHook;
  std::vector<std::function<void(ModelFlow &)>> patches;
};

/// Image encoders (ViTModel, Dinov2Model, Dinov2WithRegistersModel):
/// patch embedding, [CLS] (and register) tokens, position embeddings
/// resized to the image's patch grid, pre-LN encoder layers (DINOv2's with
/// LayerScale and optionally the SwiGLU-FFN), the final LayerNorm. Takes
/// `pixel_values` `[batch, channels, height, width]` (f32) and gives
/// `last_hidden_state` and `pooler_output` (ViT: its pooler, when the
/// checkpoint has one, else none; DINOv2: the [CLS] row).
class VisionFlow {
public:
  explicit VisionFlow(TransformerConfig config);
  static llvm::Expected<VisionFlow> fromModelDir(llvm::StringRef dir);

  /// The image size the flow is built for (default: the config's
  /// image_size, square). Another size resizes the position embeddings as
  /// transformers does with interpolate_pos_encoding (which DINOv2 always
  /// does and ViT does when asked); rows and columns past the last whole
  /// patch are dropped, as the patch convolution does.
  VisionFlow &imageSize(int64_t height, int64_t width);
  /// Weight keys carry this prefix ("vit.", "dinov2." for the
  /// *ForImageClassification checkpoints); detected when not given.
  VisionFlow &weightPrefix(std::string prefix);
  /// As DecoderFlow::allowUnusedWeights. Classifier heads and the
  /// masked-image-modeling mask token are never an error (a warning).
  VisionFlow &allowUnusedWeights(bool allow = true);

  const TransformerConfig &config() const { return cfg; }
  /// The image height and width the flow takes.
  std::pair<int64_t, int64_t> image() const;
  ModelFlow flow(llvm::StringRef prefix, bool pooler = false) const;
  llvm::Expected<BuiltModel> build(const WeightSource &weights) const;

private:
  TransformerConfig cfg;
  std::shared_ptr<const ModelRecipe> arch;
  int64_t height = 0, width = 0;
  std::optional<std::string> prefix;
  bool allowUnused = false;
};

} // namespace rlx

#endif // RLX_FLOW_RECIPES_H
