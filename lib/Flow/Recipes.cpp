//===- Recipes.cpp - Model recipes with hooks -----------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Flow/Recipes.h"
#include "FlowContext.h"
#include "RLX/Support/Messages.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/SafeTensors.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <cmath>

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

//===----------------------------------------------------------------------===//
// Decoders
//===----------------------------------------------------------------------===//

DecoderFlow::DecoderFlow(TransformerConfig config, std::string family)
    : cfg(std::move(config)), family(std::move(family)) {}

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
  DecoderLayerSpec s;
  bool gemma = family == "gemma";
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
  s.qkNorm = family == "qwen3" || cfg.modelType == "gemma3_text";
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

DecoderFlow &DecoderFlow::profile(CompileProfile p) {
  userProfile = std::move(p);
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

ModelFlow DecoderFlow::flow() const {
  bool decode = kind == DecoderGraph::Decode;
  bool gemma = family == "gemma";
  ModelFlow f(family + (decode ? "_decode" : "_prefill"));
  CompileProfile profile = userProfile ? *userProfile
                           : decode    ? CompileProfile::llama32Decode()
                                       : CompileProfile::llama32Prefill();
  if (weights)
    profile.precision.weights = *weights;
  if (kvCache)
    profile.precision.kvCache = *kvCache;
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
  f.tokenEmbed();
  if (gemma)
    f.embedScale(std::sqrt(static_cast<float>(cfg.hidden)));
  for (const Stage &s : before)
    f.stage(s);
  f.repeatLayers(cfg.numLayers, [&](unsigned i) {
    DecoderLayerSpec spec = layerSpec(i);
    Stage def = decode ? decodeLayer(i, spec) : llamaPrefillLayerFused(i, spec);
    if (!layerHook)
      return def;
    LayerCtx ctx(i, spec, def);
    return layerHook(ctx);
  });
  for (const Stage &s : after)
    f.stage(s);
  if (gemma)
    f.gemmaRmsNorm("model.norm.weight", cfg.normEpsilon);
  else
    f.finalNorm(cfg.normEpsilon);
  if (decode || lastOnly)
    f.gatherLastToken();
  f.lmHead(cfg.tieEmbeddings);
  if (gemma && cfg.finalLogitSoftcap > 0)
    f.logitSoftcap(cfg.finalLogitSoftcap);
  f.output("logits");
  for (const auto &patch : patches)
    patch(f);
  return f;
}

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
  if (Error err = checkUnused(weights, *built, allowUnused))
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
  // matrices, split by recipeWeights) are LLaMA layers with options.
  if (config.modelType == "llama" || config.modelType == "mistral" ||
      config.modelType == "qwen2" || config.modelType == "phi3")
    return DecoderFlow(config, "llama");
  if (config.modelType == "qwen3")
    return Qwen3Flow(config);
  if (config.modelType == "gemma2" || config.modelType == "gemma3_text")
    return GemmaFlow(config);
  return fail("no decoder recipe for model_type '" + echoed(config.modelType) +
              "' (supported: llama, mistral, qwen2, qwen3, gemma2, "
              "gemma3_text, phi3)");
}

Expected<std::unique_ptr<WeightSource>>
rlx::recipeWeights(const TransformerConfig &config,
                   std::unique_ptr<WeightSource> weights) {
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
  auto cfg = TransformerConfig::fromFile(cfgPath);
  if (!cfg)
    return cfg.takeError();
  auto weights = SafeTensorsFile::openModelDir(path);
  if (!weights)
    return weights.takeError();
  m.config = std::move(*cfg);
  auto viewed = recipeWeights(m.config, std::move(*weights));
  if (!viewed)
    return viewed.takeError();
  m.weights = std::move(*viewed);
  return m;
}

//===----------------------------------------------------------------------===//
// BERT
//===----------------------------------------------------------------------===//

BertFlow::BertFlow(TransformerConfig config) : cfg(std::move(config)) {}

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
  std::string pre = p.str();
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
  f.repeatLayers(cfg.numLayers, [&](unsigned i) {
    BertLayerSpec spec;
    spec.numHeads = cfg.numHeads;
    spec.headDim = cfg.hidden / cfg.numHeads;
    spec.hidden = cfg.hidden;
    spec.intermediate = cfg.intermediate;
    spec.layerNormEpsilon = eps;
    spec.prefix = pre + "encoder.layer." + std::to_string(i) + ".";
    spec.activation = cfg.activation;
    if (layerHook)
      return layerHook(i, spec);
    return Stage([spec](FlowContext &ctx) -> Error {
      std::vector<Stage> s = ModelFlow("").bertEncoderLayer(spec).takeStages();
      return s.front()(ctx);
    });
  });
  f.output("last_hidden_state");
  if (pooled)
    f.meanPool("attention_mask").output("sentence_embedding");
  for (const auto &patch : patches)
    patch(f);
  return f;
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
  Expected<BuiltModel> built = flow(p).build(weights);
  if (!built)
    return built.takeError();
  auto head = [&](StringRef name) {
    return name.starts_with("pooler.") || name.starts_with("cls.") ||
           name.starts_with(p + "pooler.");
  };
  if (Error err = checkUnused(weights, *built, allowUnused, head))
    return std::move(err);
  warnUnknownKeys(cfg, *built);
  return built;
}

BertFlow &BertFlow::allowUnusedWeights(bool allow) {
  allowUnused = allow;
  return *this;
}
