//===- Recipes.cpp - Model recipes with hooks -----------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Flow/Recipes.h"
#include "EmitterOps.h"
#include "FlowContext.h"
#include "RLX/Support/FileIO.h"
#include "RLX/Support/Messages.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/JSON.h"
#include "RLX/Weights/SafeTensors.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include <cmath>
#include <mutex>

using namespace rlx;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static Expected<TransformerConfig> configIn(StringRef dir,
                                            llvm::ArrayRef<StringRef> types) {
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "config.json");
  auto cfg = TransformerConfig::fromFile(path);
  if (!cfg)
    return cfg.takeError();
  if (!llvm::is_contained(types, cfg->modelType))
    return fail(path + ": model_type '" + echoed(cfg->modelType) +
                "' is not one this recipe builds");
  return cfg;
}

/// The recipe's patchFlow, then the asking flow's patches.
static void applyPatches(const ModelRecipe &recipe, ModelFlow &f,
                         const FlowRequest &request) {
  recipe.patchFlow(f, request);
  for (const auto &patch : request.patches)
    patch(f);
}

//===----------------------------------------------------------------------===//
// LayerCtx
//===----------------------------------------------------------------------===//

Stage LayerCtx::withAttention(
    std::shared_ptr<const AttentionStage> attention) const {
  DecoderLayer l = parts;
  if (!l.hasParts()) {
    unsigned i = index();
    return [i](FlowContext &ctx) -> Error {
      return ctx.impl.fail("layer " + llvm::Twine(i) +
                           " is opaque: its attention cannot be replaced");
    };
  }
  return l.setAttention(std::move(attention)).stage();
}

Stage LayerCtx::withFfn(std::shared_ptr<const FfnStage> ffn) const {
  DecoderLayer l = parts;
  if (!l.hasParts()) {
    unsigned i = index();
    return [i](FlowContext &ctx) -> Error {
      return ctx.impl.fail("layer " + llvm::Twine(i) +
                           " is opaque: its feed-forward block cannot be "
                           "replaced");
    };
  }
  return l.setFfn(std::move(ffn)).stage();
}

//===----------------------------------------------------------------------===//
// ModelRecipe: the default (LLaMA) decoder
//===----------------------------------------------------------------------===//

ModelRecipe::~ModelRecipe() = default;

Expected<TransformerConfig> ModelRecipe::parseConfig(StringRef json,
                                                     StringRef fileName) const {
  return TransformerConfig::fromJSON(json, fileName);
}

Expected<std::unique_ptr<WeightSource>>
ModelRecipe::mapWeights(const TransformerConfig &,
                        std::unique_ptr<WeightSource> weights) const {
  return std::move(weights);
}

/// The spec of decoder layer `i` of `cfg`; `gemma` and `qkNorm` as the
/// family has them.
static DecoderLayerSpec decoderLayerSpec(const TransformerConfig &cfg,
                                         unsigned i, bool gemma, bool qkNorm) {
  DecoderLayerSpec s;
  AttentionSpec &a = s.attention;
  a.numHeads = cfg.numHeads;
  a.numKvHeads = cfg.numKvHeads;
  a.headDim = cfg.headDim;
  a.rotaryDim = cfg.headDim;
  a.ropeTheta = cfg.ropeTheta;
  if (gemma) {
    a.scale = 1.0f / std::sqrt(static_cast<float>(cfg.queryPreAttnScalar));
    a.softcap = cfg.attnLogitSoftcap;
  }
  bool sliding = i < cfg.slidingLayers.size() && cfg.slidingLayers[i];
  if (sliding)
    a.window = cfg.slidingWindow;
  // Gemma 3's sliding layers rotate with their own, unscaled RoPE.
  bool localRope = sliding && cfg.localRopeTheta > 0;
  if (localRope)
    a.ropeTheta = cfg.localRopeTheta;
  s.qkvBias = cfg.qkvBias;
  s.outBias = cfg.outBias;
  s.mlpBias = cfg.mlpBias;
  s.mlpActivation = cfg.activation;
  s.hidden = cfg.hidden;
  s.intermediate = cfg.intermediate;
  s.rmsEpsilon = cfg.normEpsilon;
  s.prefix = "model.layers." + std::to_string(i) + ".";
  if (i < cfg.moeLayers.size() && cfg.moeLayers[i]) {
    MoeSpec &m = s.moe;
    m.numExperts = cfg.numExperts;
    m.expertsPerToken = cfg.expertsPerToken;
    m.intermediate = cfg.moeIntermediate;
    m.normTopKProb = cfg.normTopKProb;
    m.sharedIntermediate = cfg.sharedExpertIntermediate;
    m.mixtralNames = cfg.modelType == "mixtral";
  }
  s.qkNorm = qkNorm;
  s.gemma = gemma;
  if (cfg.scaledRope() && !localRope) {
    s.invFreqKey = "rope.inv_freq";
    // YaRN and LongRoPE scale cos and sin, so the scores by the square.
    if (cfg.ropeAttentionFactor != 1.0) {
      float base =
          a.scale ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.headDim));
      a.scale = static_cast<float>(base * cfg.ropeAttentionFactor *
                                   cfg.ropeAttentionFactor);
    }
  }
  return s;
}

DecoderLayerSpec ModelRecipe::layerSpec(const TransformerConfig &config,
                                        unsigned index) const {
  return decoderLayerSpec(config, index, /*gemma=*/false, /*qkNorm=*/false);
}

void ModelRecipe::embedding(ModelFlow &f, const FlowRequest &) const {
  f.tokenEmbed();
}

LayerComposition ModelRecipe::composition(const FlowRequest &request) const {
  const TransformerConfig &cfg = request.config;
  // The composition may outlive `request`: it keeps a copy (the recipe must
  // outlive it).
  auto layerAt = [this, request](unsigned i) {
    return defaultLayer(request, i, layerSpec(request.config, i));
  };
  unsigned n = static_cast<unsigned>(cfg.numLayers);
  // Sliding-window layers at the even indices, global ones at the odd
  // (Gemma 2): a local/global pair.
  bool alternates = n > 1 && cfg.slidingLayers.size() == n;
  for (unsigned i = 0; alternates && i < n; ++i)
    alternates = cfg.slidingLayers[i] == (i % 2 == 0);
  if (alternates)
    return LayerComposition::alternating(n, layerAt, layerAt);
  return LayerComposition::homogeneous(n, layerAt);
}

DecoderLayer ModelRecipe::defaultLayer(const FlowRequest &request,
                                       unsigned index,
                                       const DecoderLayerSpec &spec) const {
  const std::string &p = spec.prefix;
  float eps = spec.rmsEpsilon;
  bool g = spec.gemma;
  auto norm = [&](const char *name) {
    return std::make_shared<RmsNormStage>(p + name + ".weight", eps, g);
  };
  DecoderLayer layer(
      index, norm("input_layernorm"), SelfAttention::forLayer(spec),
      norm(g ? "pre_feedforward_layernorm" : "post_attention_layernorm"),
      GatedMlp::forLayer(spec));
  if (g)
    layer.setPostAttentionNorm(norm("post_attention_layernorm"))
        .setPostFfnNorm(norm("post_feedforward_layernorm"));
  bool decode = request.decode();
  layer.setFused(decode ? decodeLayer(index, spec)
                        : llamaPrefillLayerFused(index, spec));
  layer.setKvCacheDecode(decode);
  return layer;
}

void ModelRecipe::head(ModelFlow &f, const FlowRequest &request) const {
  f.finalNorm(request.config.normEpsilon);
  if (request.decode() || request.lastTokenLogits)
    f.gatherLastToken();
  f.lmHead(request.config.tieEmbeddings);
}

ModelFlow ModelRecipe::flow(const FlowRequest &request) const {
  const TransformerConfig &cfg = request.config;
  bool decode = request.decode();
  std::string base = request.name.empty() ? name().str() : request.name;
  ModelFlow f(base + (decode ? "_decode" : "_prefill"));
  const CompileProfile &profile = request.profile;
  f.profile(profile);
  f.input("tokens", {1, kDynamic}, DType::I32)
      .input("positions", {1, kDynamic}, DType::I32);
  int64_t kv = cfg.numKvHeads * cfg.headDim;
  if (decode) {
    DType cache =
        profile.precision.kvCache == ComputePrecision::F16    ? DType::F16
        : profile.precision.kvCache == ComputePrecision::BF16 ? DType::BF16
                                                              : DType::F32;
    for (int64_t i = 0; i < cfg.numLayers; ++i)
      f.input("past_k." + std::to_string(i), {1, kDynamic, kv}, cache)
          .input("past_v." + std::to_string(i), {1, kDynamic, kv}, cache);
    f.input("kv_mask", {1, kDynamic}, DType::I32);
  }
  // The first input (tokens) is the active tensor again after the inputs.
  f.stage([](FlowContext &ctx) {
    ctx.impl.current = ctx.impl.named.lookup("tokens");
    return Error::success();
  });
  if (cfg.scaledRope()) {
    std::vector<float> inv = cfg.inverseFrequencies(cfg.headDim);
    f.stage([inv](FlowContext &ctx) {
      return ctx.impl.synthesize("rope.inv_freq",
                                 {static_cast<int64_t>(inv.size())}, inv);
    });
  }
  embedding(f, request);
  beforeLayers(f, request);
  for (const Stage &s : request.before)
    f.stage(s);
  LayerComposition layers = composition(request);
  f.repeatLayers(layers.size(), [&](unsigned i) {
    LayerCtx ctx(layerSpec(cfg, i), layers.layer(i), layers.kindOf(i));
    DecoderLayer own = layer(ctx);
    if (!request.layerHook)
      return own.stage();
    LayerCtx hooked(ctx.spec(), std::move(own), ctx.kind());
    return request.layerHook(hooked);
  });
  afterLayers(f, request);
  for (const Stage &s : request.after)
    f.stage(s);
  head(f, request);
  f.output("logits");
  applyPatches(*this, f, request);
  return f;
}

//===----------------------------------------------------------------------===//
// The built-in recipes
//===----------------------------------------------------------------------===//

namespace {
/// LLaMA layers (and Mistral, Qwen2, Phi-3: LLaMA layers with options).
class LlamaRecipe final : public ModelRecipe {
public:
  StringRef name() const override { return "llama"; }
  Expected<std::unique_ptr<WeightSource>>
  mapWeights(const TransformerConfig &config,
             std::unique_ptr<WeightSource> weights) const override;
};

/// Qwen3: LLaMA layers with per-head QK RMSNorm.
class Qwen3Recipe final : public ModelRecipe {
public:
  StringRef name() const override { return "qwen3"; }
  DecoderLayerSpec layerSpec(const TransformerConfig &config,
                             unsigned index) const override {
    return decoderLayerSpec(config, index, /*gemma=*/false, /*qkNorm=*/true);
  }
};

/// Gemma 2 and 3: (1+w) sandwich norms, GeGLU, embedding scale, soft-capped
/// attention and logits.
class GemmaRecipe final : public ModelRecipe {
public:
  StringRef name() const override { return "gemma"; }
  DecoderLayerSpec layerSpec(const TransformerConfig &config,
                             unsigned index) const override {
    return decoderLayerSpec(config, index, /*gemma=*/true,
                            /*qkNorm=*/config.modelType == "gemma3_text");
  }
  void embedding(ModelFlow &f, const FlowRequest &request) const override {
    f.tokenEmbed().embedScale(
        std::sqrt(static_cast<float>(request.config.hidden)));
  }
  void head(ModelFlow &f, const FlowRequest &request) const override {
    const TransformerConfig &cfg = request.config;
    f.gemmaRmsNorm("model.norm.weight", cfg.normEpsilon);
    if (request.decode() || request.lastTokenLogits)
      f.gatherLastToken();
    f.lmHead(cfg.tieEmbeddings);
    if (cfg.finalLogitSoftcap > 0)
      f.logitSoftcap(cfg.finalLogitSoftcap);
  }
};

/// BERT encoders.
class BertRecipe final : public ModelRecipe {
public:
  StringRef name() const override { return "bert"; }
  RecipeKind kind() const override { return RecipeKind::Encoder; }
  ModelFlow flow(const FlowRequest &request) const override;
  bool isIgnoredHead(StringRef name,
                     const FlowRequest &request) const override {
    return name.starts_with("pooler.") || name.starts_with("cls.") ||
           name.starts_with(request.weightPrefix + "pooler.");
  }
};

/// ViT and DINOv2 image encoders.
class VisionRecipe final : public ModelRecipe {
public:
  StringRef name() const override { return "vision"; }
  RecipeKind kind() const override { return RecipeKind::Vision; }
  ModelFlow flow(const FlowRequest &request) const override;
  bool isIgnoredHead(StringRef name,
                     const FlowRequest &request) const override {
    const std::string &p = request.weightPrefix;
    return name.starts_with("classifier.") ||
           name == p + "embeddings.mask_token" ||
           (!request.pooler && name.starts_with(p + "pooler."));
  }
};
} // namespace

std::shared_ptr<const ModelRecipe> rlx::builtinRecipe(StringRef name) {
  static const auto llama = std::make_shared<LlamaRecipe>();
  static const auto qwen3 = std::make_shared<Qwen3Recipe>();
  static const auto gemma = std::make_shared<GemmaRecipe>();
  static const auto bert = std::make_shared<BertRecipe>();
  static const auto vision = std::make_shared<VisionRecipe>();
  if (name == "llama")
    return llama;
  if (name == "qwen3")
    return qwen3;
  if (name == "gemma")
    return gemma;
  if (name == "bert")
    return bert;
  if (name == "vision")
    return vision;
  return nullptr;
}

Expected<std::unique_ptr<WeightSource>>
LlamaRecipe::mapWeights(const TransformerConfig &config,
                        std::unique_ptr<WeightSource> weights) const {
  if (config.modelType != "phi3")
    return std::move(weights);
  auto split = std::make_unique<RowSplitWeights>(std::move(weights));
  int64_t q = config.numHeads * config.headDim;
  int64_t kv = config.numKvHeads * config.headDim;
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    if (Error err = split->split(p + "self_attn.qkv_proj.weight",
                                 {{p + "self_attn.q_proj.weight", q},
                                  {p + "self_attn.k_proj.weight", kv},
                                  {p + "self_attn.v_proj.weight", kv}}))
      return std::move(err);
    // transformers' Phi3MLP: gate, up = gate_up_proj(x).chunk(2).
    if (Error err =
            split->split(p + "mlp.gate_up_proj.weight",
                         {{p + "mlp.gate_proj.weight", config.intermediate},
                          {p + "mlp.up_proj.weight", config.intermediate}}))
      return std::move(err);
  }
  return std::unique_ptr<WeightSource>(std::move(split));
}

//===----------------------------------------------------------------------===//
// RecipeRegistry
//===----------------------------------------------------------------------===//

struct RecipeRegistry::Impl {
  mutable std::mutex mutex;
  /// model_type -> recipe, in registration order.
  std::vector<std::pair<std::string, std::shared_ptr<const ModelRecipe>>> types;
  llvm::StringMap<std::shared_ptr<const ModelRecipe>> architectures;
};

RecipeRegistry::RecipeRegistry() : impl(std::make_shared<Impl>()) {
  // The built-ins, registered as a user's recipe is. The order of the
  // decoders' model types is the one messages list.
  auto add = [&](StringRef recipe, llvm::ArrayRef<std::string> types,
                 llvm::ArrayRef<std::string> archs) {
    Error err = this->add(builtinRecipe(recipe), types, archs);
    assert(!err && "built-in recipes register once");
    llvm::consumeError(std::move(err));
  };
  add("llama", {"llama", "mistral", "qwen2"},
      {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"});
  add("qwen3", {"qwen3"}, {"Qwen3ForCausalLM"});
  add("gemma", {"gemma2", "gemma3_text"},
      {"Gemma2ForCausalLM", "Gemma3ForCausalLM"});
  add("llama", {"phi3"}, {"Phi3ForCausalLM"});
  // Mixtures of experts: the same layers with a routed MLP.
  add("llama", {"mixtral", "qwen2_moe"},
      {"MixtralForCausalLM", "Qwen2MoeForCausalLM"});
  add("qwen3", {"qwen3_moe"}, {"Qwen3MoeForCausalLM"});
  add("bert", {"bert"}, {"BertModel"});
  add("vision", {"vit", "dinov2", "dinov2_with_registers"},
      {"ViTModel", "Dinov2Model", "Dinov2WithRegistersModel"});
}

RecipeRegistry &RecipeRegistry::global() {
  static RecipeRegistry registry;
  return registry;
}

Error RecipeRegistry::add(std::shared_ptr<const ModelRecipe> recipe,
                          llvm::ArrayRef<std::string> modelTypes,
                          llvm::ArrayRef<std::string> architectures) {
  if (!recipe)
    return fail("registerRecipe: no recipe");
  if (modelTypes.empty())
    return fail("registerRecipe: recipe '" + recipe->name() +
                "' names no model_type");
  std::lock_guard<std::mutex> lock(impl->mutex);
  for (const std::string &t : modelTypes)
    for (const auto &[have, r] : impl->types)
      if (have == t)
        return fail("registerRecipe: model_type '" + t +
                    "' already has the recipe '" + r->name() + "'");
  for (const std::string &a : architectures)
    if (auto it = impl->architectures.find(a);
        it != impl->architectures.end() && it->second != recipe)
      return fail("registerRecipe: architecture '" + a +
                  "' already has the recipe '" + it->second->name() + "'");
  for (const std::string &t : modelTypes)
    impl->types.push_back({t, recipe});
  for (const std::string &a : architectures)
    impl->architectures[a] = recipe;
  return Error::success();
}

bool RecipeRegistry::remove(StringRef modelType) {
  std::lock_guard<std::mutex> lock(impl->mutex);
  auto it = llvm::find_if(impl->types,
                          [&](const auto &e) { return e.first == modelType; });
  if (it == impl->types.end())
    return false;
  std::shared_ptr<const ModelRecipe> recipe = it->second;
  impl->types.erase(it);
  bool stillUsed = llvm::any_of(
      impl->types, [&](const auto &e) { return e.second == recipe; });
  if (!stillUsed) {
    llvm::SmallVector<std::string> archs;
    for (const auto &e : impl->architectures)
      if (e.second == recipe)
        archs.push_back(e.getKey().str());
    for (const std::string &a : archs)
      impl->architectures.erase(a);
  }
  return true;
}

std::shared_ptr<const ModelRecipe>
RecipeRegistry::lookup(StringRef modelType) const {
  std::lock_guard<std::mutex> lock(impl->mutex);
  for (const auto &[t, r] : impl->types)
    if (t == modelType)
      return r;
  return nullptr;
}

std::shared_ptr<const ModelRecipe>
RecipeRegistry::lookupArchitecture(StringRef architecture) const {
  std::lock_guard<std::mutex> lock(impl->mutex);
  return impl->architectures.lookup(architecture);
}

std::vector<std::string> RecipeRegistry::modelTypes(RecipeKind kind) const {
  std::lock_guard<std::mutex> lock(impl->mutex);
  std::vector<std::string> out;
  for (const auto &[t, r] : impl->types)
    if (r->kind() == kind)
      out.push_back(t);
  return out;
}

Error rlx::registerRecipe(std::shared_ptr<const ModelRecipe> recipe,
                          llvm::ArrayRef<std::string> modelTypes,
                          llvm::ArrayRef<std::string> architectures) {
  return RecipeRegistry::global().add(std::move(recipe), modelTypes,
                                      architectures);
}

Expected<std::shared_ptr<const ModelRecipe>>
rlx::recipeFor(const TransformerConfig &config) {
  if (auto recipe = RecipeRegistry::global().lookup(config.modelType))
    return recipe;
  std::string known;
  for (RecipeKind kind :
       {RecipeKind::Decoder, RecipeKind::Encoder, RecipeKind::Vision})
    for (const std::string &t : RecipeRegistry::global().modelTypes(kind))
      known += (known.empty() ? "" : ", ") + t;
  return fail("no recipe for model_type '" + echoed(config.modelType) +
              "' (registered: " + known + ")");
}

//===----------------------------------------------------------------------===//
// DecoderFlow
//===----------------------------------------------------------------------===//

DecoderFlow::DecoderFlow(TransformerConfig config, std::string family)
    : cfg(std::move(config)), family(std::move(family)) {
  arch = builtinRecipe(this->family);
  if (!arch || arch->kind() != RecipeKind::Decoder)
    arch = builtinRecipe("llama");
}

DecoderFlow::DecoderFlow(TransformerConfig config,
                         std::shared_ptr<const ModelRecipe> recipe)
    : cfg(std::move(config)), arch(std::move(recipe)) {
  assert(arch && "DecoderFlow needs a recipe");
  family = arch->name().str();
}

DecoderFlow &DecoderFlow::forPrefill() {
  kind = DecoderGraph::Prefill;
  return *this;
}
DecoderFlow &DecoderFlow::forDecode() {
  kind = DecoderGraph::Decode;
  return *this;
}
DecoderFlow &DecoderFlow::lastTokenLogits(bool enable) {
  lastOnly = enable;
  return *this;
}
DecoderFlow &DecoderFlow::layer(std::function<Stage(LayerCtx &)> hook) {
  layerHook = std::move(hook);
  return *this;
}
DecoderFlow &DecoderFlow::beforeLayers(Stage s) {
  before.push_back(std::move(s));
  return *this;
}
DecoderFlow &DecoderFlow::afterLayers(Stage s) {
  after.push_back(std::move(s));
  return *this;
}
DecoderFlow &DecoderFlow::patchFlow(std::function<void(ModelFlow &)> patch) {
  patches.push_back(std::move(patch));
  return *this;
}

DecoderLayerSpec DecoderFlow::layerSpec(unsigned i) const {
  return arch->layerSpec(cfg, i);
}

DecoderFlow &DecoderFlow::profile(CompileProfile p) {
  userDecodeProfile = p;
  userProfile = std::move(p);
  return *this;
}

DecoderFlow &DecoderFlow::profile(CompileProfile prefill,
                                  CompileProfile decode) {
  userProfile = std::move(prefill);
  userDecodeProfile = std::move(decode);
  return *this;
}

DecoderFlow &DecoderFlow::weightPrecision(WeightPrecision precision) {
  weights = precision;
  return *this;
}

DecoderFlow &DecoderFlow::kvCachePrecision(ComputePrecision precision) {
  kvCache = precision;
  return *this;
}

DecoderFlow &DecoderFlow::computePrecision(ComputePrecision precision) {
  compute = precision;
  return *this;
}

DecoderFlow &DecoderFlow::tensorParallel(int64_t ranks) {
  tensorRanks = ranks;
  return *this;
}

FlowRequest DecoderFlow::request() const {
  FlowRequest r;
  r.config = cfg;
  r.name = family;
  r.graph = kind;
  r.lastTokenLogits = lastOnly;
  bool decode = kind == DecoderGraph::Decode;
  if (decode)
    r.profile = userDecodeProfile.value_or(CompileProfile::llama32Decode());
  else
    r.profile = userProfile.value_or(CompileProfile::llama32Prefill());
  if (weights)
    r.profile.precision.weights = *weights;
  if (kvCache)
    r.profile.precision.kvCache = *kvCache;
  if (compute)
    r.profile.precision.compute = *compute;
  if (tensorRanks)
    r.profile.parallel.tensor = *tensorRanks;
  r.layerHook = layerHook;
  r.before = before;
  r.after = after;
  r.patches = patches;
  return r;
}

ModelFlow DecoderFlow::flow() const { return arch->flow(request()); }

/// The embedding table must be [vocab_size, hidden_size] of the config: the
/// tools check token ids against the config's vocabulary.
static Error checkEmbedding(const WeightSource &weights, StringRef key,
                            const TransformerConfig &cfg) {
  const TensorInfo *embed = weights.lookup(key);
  if (!embed)
    return Error::success(); // The flow reports the missing weight.
  llvm::SmallVector<int64_t> want = {cfg.vocabSize, cfg.hidden};
  if (llvm::ArrayRef<int64_t>(embed->shape) != llvm::ArrayRef<int64_t>(want))
    return fail("weight '" + weights.displayName(key) + "' in " +
                weights.description() + " has shape " +
                formatShape(embed->shape) + ", expected " + formatShape(want) +
                " (vocab_size, hidden_size)");
  return Error::success();
}

/// Buffers some checkpoints carry that no model reads (transformers
/// recomputes them).
static bool isBuffer(StringRef name) {
  return name.ends_with("rotary_emb.inv_freq") ||
         name.ends_with("embeddings.position_ids");
}

/// Lists up to 8 names for a message.
static std::string listNames(llvm::ArrayRef<std::string> names) {
  std::string text;
  for (auto [i, n] : llvm::enumerate(names)) {
    if (i == 8) {
      text += ", ... (" + std::to_string(names.size()) + " in all)";
      break;
    }
    text += (i ? ", '" : "'") + n + "'";
  }
  return text;
}

/// The tensors of `weights` the model does not read: an error unless
/// `allow`, then warnings. `head(name)` marks tensors of heads the recipe
/// knowingly leaves out (a warning only).
static Error checkUnused(const WeightSource &weights, BuiltModel &built,
                         bool allow,
                         llvm::function_ref<bool(StringRef)> head = {}) {
  std::vector<std::string> unused, heads;
  for (const std::string &name : weights.names()) {
    if (std::binary_search(built.params.begin(), built.params.end(), name) ||
        isBuffer(name))
      continue;
    (head && head(name) ? heads : unused).push_back(weights.displayName(name));
  }
  if (!heads.empty())
    built.warnings.push_back(
        "ignoring " + std::to_string(heads.size()) +
        " tensors of heads RLX does not compute: " + listNames(heads));
  if (unused.empty())
    return Error::success();
  std::string msg = (weights.description() + ": " + llvm::Twine(unused.size()) +
                     " tensors the model does not use: " + listNames(unused))
                        .str();
  if (!allow)
    return fail(msg + " (the checkpoint does not match its config; allow "
                      "them with --allow-unused-weights)");
  built.warnings.push_back(msg);
  return Error::success();
}

/// Warnings about config keys RLX does not know.
static void warnUnknownKeys(const TransformerConfig &cfg, BuiltModel &built) {
  for (const std::string &key : cfg.unknownKeys)
    built.warnings.push_back("config key '" + echoed(key) + "' (model_type '" +
                             echoed(cfg.modelType) +
                             "') is not known to RLX and was ignored");
}

/// An encoder's built flow after the checks: tensors it does not read (the
/// heads `recipe` leaves out for `request` are warnings) and config keys RLX
/// does not know.
static Expected<BuiltModel>
checkEncoderBuild(const ModelRecipe &recipe, const TransformerConfig &cfg,
                  const WeightSource &weights, Expected<BuiltModel> built,
                  const FlowRequest &request, bool allowUnused) {
  if (!built)
    return built.takeError();
  auto head = [&](StringRef name) {
    return recipe.isIgnoredHead(name, request);
  };
  if (Error err = checkUnused(weights, *built, allowUnused, head))
    return std::move(err);
  warnUnknownKeys(cfg, *built);
  return built;
}

DecoderFlow &DecoderFlow::allowUnusedWeights(bool allow) {
  allowUnused = allow;
  return *this;
}

/// llama.cpp writes LLaMA 3's RoPE scaling as a tensor of per-frequency
/// divisors.
static constexpr const char *kRopeFactorsKey = "rope_freqs.weight";

Expected<BuiltModel> DecoderFlow::build(const WeightSource &weights) const {
  if (Error err = checkEmbedding(weights, "model.embed_tokens.weight", cfg))
    return std::move(err);
  const TensorInfo *factors = weights.lookup(kRopeFactorsKey);
  if (factors && cfg.ropeFreqFactors.empty()) {
    // Build once with the factors read into the config.
    int64_t pairs = cfg.headDim / 2;
    if (factors->shape != llvm::SmallVector<int64_t>{pairs})
      return fail("weight '" + llvm::Twine(kRopeFactorsKey) + "' in " +
                  weights.description() + " has shape " +
                  formatShape(factors->shape) + ", expected [" +
                  llvm::Twine(pairs) + "] (head_dim / 2)");
    Expected<std::vector<float>> values = weights.loadF32(kRopeFactorsKey);
    if (!values)
      return values.takeError();
    for (float f : *values)
      if (!(f > 0) || !std::isfinite(f))
        return fail("weight '" + llvm::Twine(kRopeFactorsKey) + "' in " +
                    weights.description() +
                    " has a factor that is not positive and finite");
    DecoderFlow scaled = *this;
    scaled.cfg.ropeFreqFactors = std::move(*values);
    return scaled.build(weights);
  }
  Expected<BuiltModel> built = flow().build(weights);
  if (!built)
    return built.takeError();
  if (factors)
    built->params.push_back(kRopeFactorsKey);
  // A Phi-3 GGUF's LongRoPE factors, read into the config (fromGGUF).
  if (!cfg.longropeShortFactors.empty())
    for (const char *key :
         {"rope_factors_short.weight", "rope_factors_long.weight"})
      if (weights.lookup(key))
        built->params.push_back(key);
  llvm::sort(built->params);
  FlowRequest req = request();
  auto head = [&](StringRef name) { return arch->isIgnoredHead(name, req); };
  if (Error err = checkUnused(weights, *built, allowUnused, head))
    return std::move(err);
  warnUnknownKeys(cfg, *built);
  return built;
}

Expected<Llama32Flow> Llama32Flow::fromModelDir(StringRef dir) {
  auto cfg = configIn(dir, {"llama"});
  if (!cfg)
    return cfg.takeError();
  return Llama32Flow(std::move(*cfg));
}

Expected<Qwen3Flow> Qwen3Flow::fromModelDir(StringRef dir) {
  auto cfg = configIn(dir, {"qwen3"});
  if (!cfg)
    return cfg.takeError();
  return Qwen3Flow(std::move(*cfg));
}

Expected<GemmaFlow> GemmaFlow::fromModelDir(StringRef dir) {
  auto cfg = configIn(dir, {"gemma2", "gemma3_text"});
  if (!cfg)
    return cfg.takeError();
  return GemmaFlow(std::move(*cfg));
}

Expected<DecoderFlow> rlx::decoderFlowFor(const TransformerConfig &config) {
  // Mistral (sliding window), Qwen2 (QKV biases) and Phi-3 (fused
  // matrices, split by mapWeights) are registered as LLaMA layers with
  // options.
  std::shared_ptr<const ModelRecipe> recipe =
      RecipeRegistry::global().lookup(config.modelType);
  if (recipe && recipe->kind() == RecipeKind::Decoder)
    return DecoderFlow(config, std::move(recipe));
  // The families built by their own flows say where to go.
  if (config.isVision())
    return fail("model_type '" + config.modelType +
                "' is an image encoder: run it with --image pixels.npy "
                "(VisionFlow)");
  if (config.modelType == "qwen3_next" || config.modelType == "qwen3_5_text")
    return fail("model_type '" + config.modelType +
                "' is not a DecoderFlow: its graphs are "
                "Qwen3NextFlow's (they carry each layer's convolution and "
                "recurrent state) and Qwen3NextGenerator generates with them");
  std::vector<std::string> types =
      RecipeRegistry::global().modelTypes(RecipeKind::Decoder);
  return fail("no decoder recipe for model_type '" + echoed(config.modelType) +
              "' (supported: " + llvm::join(types, ", ") + ")");
}

Expected<std::unique_ptr<WeightSource>>
rlx::recipeWeights(const TransformerConfig &config,
                   std::unique_ptr<WeightSource> weights) {
  std::shared_ptr<const ModelRecipe> recipe =
      RecipeRegistry::global().lookup(config.modelType);
  if (!recipe)
    return std::move(weights);
  return recipe->mapWeights(config, std::move(weights));
}

/// The recipe registered for the config.json `text`: by its model_type, or
/// by its first `architectures` entry when it has no model_type (the
/// recipe's parseConfig then says what the model_type is); null when
/// neither is registered or the text does not say (TransformerConfig::
/// fromJSON reports that).
static std::shared_ptr<const ModelRecipe> recipeForJSON(StringRef text) {
  text.consume_front("\xEF\xBB\xBF");
  // parseJSON refuses deep nesting (llvm::json recurses per level); the
  // config's own reader then reports the error.
  Expected<llvm::json::Value> parsed = parseJSON(text);
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return nullptr;
  }
  const llvm::json::Object *o = parsed->getAsObject();
  if (!o)
    return nullptr;
  RecipeRegistry &registry = RecipeRegistry::global();
  if (std::optional<StringRef> type = o->getString("model_type"))
    return registry.lookup(*type);
  if (const llvm::json::Array *archs = o->getArray("architectures"))
    if (!archs->empty())
      if (std::optional<StringRef> arch = archs->front().getAsString())
        return registry.lookupArchitecture(*arch);
  return nullptr;
}

Expected<LoadedModel> rlx::loadModel(StringRef path) {
  LoadedModel m;
  if (path.ends_with(".gguf")) {
    auto gguf = GGUFLlamaWeights::open(path);
    if (!gguf)
      return gguf.takeError();
    auto cfg = TransformerConfig::fromGGUF((*gguf)->file());
    if (!cfg)
      return cfg.takeError();
    m.config = std::move(*cfg);
    auto viewed = recipeWeights(m.config, std::move(*gguf));
    if (!viewed)
      return viewed.takeError();
    m.weights = std::move(*viewed);
    return m;
  }
  if (!llvm::sys::fs::is_directory(path))
    return fail(path + ": not a model directory (config.json + safetensors) "
                       "or a .gguf file");
  llvm::SmallString<128> cfgPath(path);
  llvm::sys::path::append(cfgPath, "config.json");
  // A FIFO or a device would block or never end: regular files only.
  Expected<std::unique_ptr<llvm::MemoryBuffer>> text = readRegularFile(cfgPath);
  if (!text)
    return text.takeError();
  StringRef json = (*text)->getBuffer();
  std::shared_ptr<const ModelRecipe> recipe = recipeForJSON(json);
  auto cfg = recipe ? recipe->parseConfig(json, cfgPath)
                    : TransformerConfig::fromJSON(json, cfgPath);
  if (!cfg)
    return cfg.takeError();
  auto weights = SafeTensorsFile::openModelDir(path);
  if (!weights)
    return weights.takeError();
  m.config = std::move(*cfg);
  if (!recipe)
    recipe = RecipeRegistry::global().lookup(m.config.modelType);
  if (!recipe) {
    m.weights = std::move(*weights);
    return m;
  }
  auto viewed = recipe->mapWeights(m.config, std::move(*weights));
  if (!viewed)
    return viewed.takeError();
  m.weights = std::move(*viewed);
  return m;
}

//===----------------------------------------------------------------------===//
// BERT
//===----------------------------------------------------------------------===//

ModelFlow BertRecipe::flow(const FlowRequest &request) const {
  const TransformerConfig &cfg = request.config;
  const std::string &pre = request.weightPrefix;
  ModelFlow f("bert");
  f.profileEncoder();
  f.input("input_ids", {kDynamic, kDynamic}, DType::I32)
      .input("attention_mask", {kDynamic, kDynamic}, DType::I32)
      .input("position_ids", {kDynamic, kDynamic}, DType::I32)
      .input("token_type_ids", {kDynamic, kDynamic}, DType::I32);
  float eps = cfg.normEpsilon;
  f.tokenEmbed(pre + "embeddings.word_embeddings.weight")
      .gatherAdd("position_ids", pre + "embeddings.position_embeddings.weight")
      .gatherAdd("token_type_ids",
                 pre + "embeddings.token_type_embeddings.weight")
      .layerNorm(pre + "embeddings.LayerNorm", eps);
  beforeLayers(f, request);
  for (const Stage &s : request.before)
    f.stage(s);
  f.repeatLayers(cfg.numLayers, [&](unsigned i) {
    BertLayerSpec spec;
    spec.numHeads = cfg.numHeads;
    spec.headDim = cfg.hidden / cfg.numHeads;
    spec.hidden = cfg.hidden;
    spec.intermediate = cfg.intermediate;
    spec.layerNormEpsilon = eps;
    spec.prefix = pre + "encoder.layer." + std::to_string(i) + ".";
    spec.activation = cfg.activation;
    if (request.encoderLayerHook)
      return request.encoderLayerHook(i, spec);
    return Stage([spec](FlowContext &ctx) -> Error {
      std::vector<Stage> s = ModelFlow("").bertEncoderLayer(spec).takeStages();
      return s.front()(ctx);
    });
  });
  afterLayers(f, request);
  for (const Stage &s : request.after)
    f.stage(s);
  f.output("last_hidden_state");
  if (request.meanPooled)
    f.meanPool("attention_mask").output("sentence_embedding");
  applyPatches(*this, f, request);
  return f;
}

BertFlow::BertFlow(TransformerConfig config)
    : cfg(std::move(config)), arch(builtinRecipe("bert")) {}

BertFlow::BertFlow(TransformerConfig config,
                   std::shared_ptr<const ModelRecipe> recipe)
    : cfg(std::move(config)), arch(std::move(recipe)) {
  assert(arch && "BertFlow needs a recipe");
}

Expected<BertFlow> BertFlow::fromModelDir(StringRef dir) {
  auto cfg = configIn(dir, {"bert"});
  if (!cfg)
    return cfg.takeError();
  return BertFlow(std::move(*cfg));
}

BertFlow &BertFlow::meanPooled(bool enable) {
  pooled = enable;
  return *this;
}
BertFlow &
BertFlow::layer(std::function<Stage(unsigned, const BertLayerSpec &)> hook) {
  layerHook = std::move(hook);
  return *this;
}
BertFlow &BertFlow::patchFlow(std::function<void(ModelFlow &)> patch) {
  patches.push_back(std::move(patch));
  return *this;
}
BertFlow &BertFlow::weightPrefix(std::string p) {
  prefix = std::move(p);
  return *this;
}

ModelFlow BertFlow::flow(StringRef p) const {
  FlowRequest r;
  r.config = cfg;
  r.name = arch->name().str();
  r.profile = CompileProfile::encoder();
  r.weightPrefix = p.str();
  r.meanPooled = pooled;
  r.encoderLayerHook = layerHook;
  r.patches = patches;
  return arch->flow(r);
}

Expected<BuiltModel> BertFlow::build(const WeightSource &weights) const {
  std::string p;
  if (prefix) {
    p = *prefix;
  } else if (weights.contains("embeddings.word_embeddings.weight")) {
    p = "";
  } else if (weights.contains("bert.embeddings.word_embeddings.weight")) {
    p = "bert.";
  } else {
    return fail(weights.description() +
                ": no BERT embeddings (expected "
                "'embeddings.word_embeddings.weight', optionally under "
                "'bert.')");
  }
  if (Error err =
          checkEmbedding(weights, p + "embeddings.word_embeddings.weight", cfg))
    return std::move(err);
  const TensorInfo *positions =
      weights.lookup(p + "embeddings.position_embeddings.weight");
  if (positions && positions->shape.size() == 2 &&
      positions->shape[0] != cfg.maxPositions)
    return fail("weight '" + p + "embeddings.position_embeddings.weight' in " +
                weights.description() + " has " +
                llvm::Twine(positions->shape[0]) +
                " positions, but max_position_embeddings is " +
                llvm::Twine(cfg.maxPositions));
  FlowRequest request;
  request.weightPrefix = p;
  return checkEncoderBuild(*arch, cfg, weights, flow(p).build(weights), request,
                           allowUnused);
}

BertFlow &BertFlow::allowUnusedWeights(bool allow) {
  allowUnused = allow;
  return *this;
}

//===----------------------------------------------------------------------===//
// Image encoders
//===----------------------------------------------------------------------===//

ModelFlow VisionRecipe::flow(const FlowRequest &request) const {
  const TransformerConfig &cfg = request.config;
  const std::string &pre = request.weightPrefix;
  int64_t h = request.imageHeight ? request.imageHeight : cfg.imageSize;
  int64_t w = request.imageWidth ? request.imageWidth : cfg.imageSize;
  int64_t p = cfg.patchSize;
  bool dino = cfg.layerScale;
  float eps = cfg.normEpsilon;
  ModelFlow f(cfg.modelType);
  // The fusable lowering lets the q/k/v projections (biased linears) merge
  // into one GEMM and the attention block fuse; direct leaves three.
  CompileProfile profile = CompileProfile::encoder();
  profile.fusion.policy = FusionPolicy::Fusable;
  f.profile(profile);
  f.input("pixel_values", {kDynamic, cfg.numChannels, h, w}, DType::F32);
  f.patchEmbed(pre + "embeddings.patch_embeddings.projection", p)
      .insertTokens(pre + "embeddings.cls_token")
      .positionEmbed(pre + "embeddings.position_embeddings", h / p, w / p, 1,
                     cfg.antialiasPositions);
  // Registers join after the position embeddings, behind [CLS].
  if (cfg.numRegisters > 0)
    f.insertTokens(pre + "embeddings.register_tokens", 1);
  beforeLayers(f, request);
  for (const Stage &s : request.before)
    f.stage(s);
  AttentionSpec attn;
  attn.numHeads = attn.numKvHeads = cfg.numHeads;
  attn.headDim = cfg.hidden / cfg.numHeads;
  attn.causal = false;
  f.repeatLayers(cfg.numLayers, [&](unsigned i) {
    std::string lp = pre + "encoder.layer." + std::to_string(i) + ".";
    ModelFlow l("");
    l.residualSave()
        .layerNorm(lp + (dino ? "norm1" : "layernorm_before"), eps)
        .vitSelfAttn(lp + "attention.", attn, cfg.qkvBias);
    if (dino)
      l.layerScale(lp + "layer_scale1.lambda1");
    l.residualAdd().residualSave().layerNorm(
        lp + (dino ? "norm2" : "layernorm_after"), eps);
    if (cfg.swigluFfn)
      l.visionSwiGluFfn(lp + "mlp.");
    else if (dino)
      l.denseMlp(lp + "mlp.fc1", lp + "mlp.fc2", cfg.activation);
    else
      l.denseMlp(lp + "intermediate.dense", lp + "output.dense",
                 cfg.activation);
    if (dino)
      l.layerScale(lp + "layer_scale2.lambda1");
    l.residualAdd();
    return Stage([stages = l.takeStages()](FlowContext &ctx) -> Error {
      for (const Stage &s : stages)
        if (Error err = s(ctx))
          return err;
      return Error::success();
    });
  });
  afterLayers(f, request);
  for (const Stage &s : request.after)
    f.stage(s);
  f.layerNorm(pre + "layernorm", eps).output("last_hidden_state");
  // DINOv2's pooler_output is the [CLS] row; ViT's its pooler, when the
  // checkpoint has one (ViTModel without it has no pooler_output).
  if (dino || request.pooler) {
    f.clsPool();
    if (request.pooler) {
      // ViT's pooler: pooler_act(dense([CLS])).
      std::string key = pre + "pooler.dense";
      std::string act = cfg.poolerActivation;
      int64_t size = cfg.poolerSize;
      f.custom("pooler", [key, act, size](Emitter &e) -> Error {
        auto y = emitterLinear(e, e.current(), key, size, /*bias=*/true);
        if (!y)
          return y.takeError();
        auto a = e.parseAttr("activation", "#hir<activation " + act + ">");
        if (!a)
          return a.takeError();
        y->getDefiningOp()->setAttr(a->getName(), a->getValue());
        e.setCurrent(*y);
        return Error::success();
      });
    }
    f.output("pooler_output");
  }
  applyPatches(*this, f, request);
  return f;
}

VisionFlow::VisionFlow(TransformerConfig config)
    : cfg(std::move(config)), arch(builtinRecipe("vision")) {}

Expected<VisionFlow> VisionFlow::fromModelDir(StringRef dir) {
  auto cfg = configIn(dir, {"vit", "dinov2", "dinov2_with_registers"});
  if (!cfg)
    return cfg.takeError();
  return VisionFlow(std::move(*cfg));
}

VisionFlow &VisionFlow::imageSize(int64_t h, int64_t w) {
  height = h;
  width = w;
  return *this;
}

VisionFlow &VisionFlow::weightPrefix(std::string p) {
  prefix = std::move(p);
  return *this;
}

VisionFlow &VisionFlow::allowUnusedWeights(bool allow) {
  allowUnused = allow;
  return *this;
}

std::pair<int64_t, int64_t> VisionFlow::image() const {
  return {height ? height : cfg.imageSize, width ? width : cfg.imageSize};
}

ModelFlow VisionFlow::flow(StringRef p, bool pooler) const {
  FlowRequest r;
  r.config = cfg;
  r.name = cfg.modelType;
  r.profile = CompileProfile::encoder();
  r.weightPrefix = p.str();
  std::tie(r.imageHeight, r.imageWidth) = image();
  r.pooler = pooler;
  return arch->flow(r);
}

Expected<BuiltModel> VisionFlow::build(const WeightSource &weights) const {
  auto [h, w] = image();
  if (h < cfg.patchSize || w < cfg.patchSize)
    return fail("an image of " + llvm::Twine(h) + "x" + llvm::Twine(w) +
                " holds no whole " + llvm::Twine(cfg.patchSize) + "x" +
                llvm::Twine(cfg.patchSize) + " patch (patch_size)");
  std::string p;
  if (prefix) {
    p = *prefix;
  } else {
    bool found = false;
    for (StringRef candidate : {"", "vit.", "dinov2."})
      if (weights.contains((candidate + "embeddings.cls_token").str())) {
        p = candidate.str();
        found = true;
        break;
      }
    if (!found)
      return fail(weights.description() +
                  ": no image-encoder embeddings (expected "
                  "'embeddings.cls_token', optionally under 'vit.' or "
                  "'dinov2.')");
  }
  bool pooler =
      cfg.modelType == "vit" && weights.contains(p + "pooler.dense.weight");
  FlowRequest request;
  request.weightPrefix = p;
  request.pooler = pooler;
  return checkEncoderBuild(*arch, cfg, weights, flow(p, pooler).build(weights),
                           request, allowUnused);
}
