//===- RecipeTest.cpp - Recipes as an interface ---------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A recipe written here, outside lib/, for an architecture RLX does not
// know (a LLaMA with parallel attention and MLP blocks, one norm per layer
// and a fused QKV matrix): registered by model_type, it loads a checkpoint
// directory this test writes, builds, compiles and runs through the calls
// rlx-run makes (loadModel, decoderFlowFor, build, Session), and matches a
// naive reference computed here. Then the stage interfaces: the attention
// of layer 3 of the built-in LLaMA recipe replaced by a hook, the rest of
// the layer kept; and the layer compositions of the built-in decoders.
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"
#include "RLX/Flow/Recipes.h"
#include "RLX/Flow/Stages.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <cmath>
#include <map>
#include <random>

using namespace rlx;
using llvm::Error;
using llvm::Expected;

namespace {

constexpr int64_t Vocab = 50, H = 32, I = 48, Heads = 4, KvHeads = 2, Hd = 8;

//===----------------------------------------------------------------------===//
// The user's recipe
//===----------------------------------------------------------------------===//

/// A LLaMA whose layers run attention and MLP in parallel on one norm:
///   n = rms(x) * input_layernorm;  y = x + attn(n) + mlp(n)
/// Its checkpoint stores q, k and v fused as `self_attn.qkv_proj.weight`,
/// and its config.json says `"parallel_block": true`.
class ParallelLlamaRecipe final : public ModelRecipe {
public:
  llvm::StringRef name() const override { return "parallel_llama"; }

  Expected<TransformerConfig>
  parseConfig(llvm::StringRef json, llvm::StringRef fileName) const override {
    Expected<TransformerConfig> cfg = ModelRecipe::parseConfig(json, fileName);
    if (!cfg)
      return cfg.takeError();
    Expected<llvm::json::Value> v = llvm::json::parse(json);
    if (!v)
      return v.takeError();
    std::optional<bool> parallel =
        v->getAsObject()->getBoolean("parallel_block");
    if (!parallel || !*parallel)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     fileName +
                                         ": 'parallel_block' must be true");
    llvm::erase(cfg->unknownKeys, "parallel_block");
    return cfg;
  }

  Expected<std::unique_ptr<WeightSource>>
  mapWeights(const TransformerConfig &config,
             std::unique_ptr<WeightSource> weights) const override {
    auto split = std::make_unique<RowSplitWeights>(std::move(weights));
    int64_t q = config.numHeads * config.headDim;
    int64_t kv = config.numKvHeads * config.headDim;
    for (int64_t i = 0; i < config.numLayers; ++i) {
      std::string p = "model.layers." + std::to_string(i) + ".self_attn.";
      if (Error err =
              split->split(p + "qkv_proj.weight", {{p + "q_proj.weight", q},
                                                   {p + "k_proj.weight", kv},
                                                   {p + "v_proj.weight", kv}}))
        return std::move(err);
    }
    return std::unique_ptr<WeightSource>(std::move(split));
  }

  DecoderLayer defaultLayer(const FlowRequest &request, unsigned index,
                            const DecoderLayerSpec &spec) const override {
    std::shared_ptr<const AttentionStage> attention =
        SelfAttention::forLayer(spec);
    const std::string &p = spec.prefix;
    ModelFlow f("parallel_layer");
    f.residualSave("parallel.x")
        .rmsNorm(p + "input_layernorm.weight", spec.rmsEpsilon)
        .residualSave("parallel.normed")
        .stage([attention](FlowContext &ctx) { return attention->emit(ctx); })
        .residualAdd("parallel.x")
        .residualSave("parallel.xa")
        .custom("normed",
                [](Emitter &e) {
                  e.setCurrent(e.named("parallel.normed"));
                  return Error::success();
                })
        .swigluHfMlp(p + "mlp.")
        .residualAdd("parallel.xa");
    std::vector<Stage> stages = f.takeStages();
    return DecoderLayer(index, [stages](FlowContext &ctx) -> Error {
      for (const Stage &s : stages)
        if (Error err = s(ctx))
          return err;
      return Error::success();
    });
  }
};

//===----------------------------------------------------------------------===//
// Tiny checkpoints
//===----------------------------------------------------------------------===//

using Weights =
    std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>;

std::vector<float> random(size_t n, std::mt19937 &rng, float scale,
                          float offset = 0.0f) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = offset + scale * d(rng);
  return v;
}

void put(Weights &w, const std::string &key, std::vector<int64_t> shape,
         std::mt19937 &rng, float scale = 0.2f, float offset = 0.0f) {
  size_t n = 1;
  for (int64_t d : shape)
    n *= d;
  w[key] = {shape, random(n, rng, scale, offset)};
}

/// Writes `w` as an f32 safetensors file.
void writeSafeTensors(llvm::StringRef path, const Weights &w) {
  llvm::json::Object header;
  uint64_t offset = 0;
  for (const auto &[key, t] : w) {
    uint64_t bytes = t.second.size() * sizeof(float);
    llvm::json::Array shape;
    for (int64_t d : t.first)
      shape.push_back(d);
    header[key] = llvm::json::Object{
        {"dtype", "F32"},
        {"shape", std::move(shape)},
        {"data_offsets", llvm::json::Array{offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(header));
  while (text.size() % 8)
    text += ' ';
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  ASSERT_FALSE(ec) << ec.message();
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    os << static_cast<char>((n >> (8 * i)) & 0xff);
  os << text;
  for (const auto &[key, t] : w)
    os.write(reinterpret_cast<const char *>(t.second.data()),
             t.second.size() * sizeof(float));
}

//===----------------------------------------------------------------------===//
// The naive reference
//===----------------------------------------------------------------------===//

using Mat = std::vector<float>; // row-major [rows, cols]

/// y[t, o] = sum_i x[t, i] * w[o, i]
Mat linear(const Mat &x, int64_t t, int64_t in, const Mat &w, int64_t out,
           int64_t rowOffset = 0) {
  Mat y(t * out, 0.0f);
  for (int64_t r = 0; r < t; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i)
        s += double(x[r * in + i]) * w[(rowOffset + o) * in + i];
      y[r * out + o] = static_cast<float>(s);
    }
  return y;
}

Mat rmsNorm(const Mat &x, int64_t t, const Mat &g, float eps) {
  Mat y(x.size());
  for (int64_t r = 0; r < t; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < H; ++i)
      ss += double(x[r * H + i]) * x[r * H + i];
    double inv = 1.0 / std::sqrt(ss / H + eps);
    for (int64_t i = 0; i < H; ++i)
      y[r * H + i] = static_cast<float>(x[r * H + i] * inv * g[i]);
  }
  return y;
}

/// HF rotate_half RoPE on [t, heads * Hd] at positions 0..t-1.
void rope(Mat &x, int64_t t, int64_t heads, double theta) {
  for (int64_t p = 0; p < t; ++p)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < Hd / 2; ++i) {
        double f = std::pow(theta, -2.0 * i / Hd) * p;
        float *v = &x[p * heads * Hd + h * Hd];
        double a = v[i], b = v[i + Hd / 2];
        v[i] = static_cast<float>(a * std::cos(f) - b * std::sin(f));
        v[i + Hd / 2] = static_cast<float>(b * std::cos(f) + a * std::sin(f));
      }
}

/// Causal GQA attention of q [t, Heads*Hd] over k, v [t, KvHeads*Hd].
Mat attention(const Mat &q, const Mat &k, const Mat &v, int64_t t) {
  Mat out(t * Heads * Hd, 0.0f);
  double scale = 1.0 / std::sqrt(double(Hd));
  for (int64_t h = 0; h < Heads; ++h) {
    int64_t kvh = h / (Heads / KvHeads);
    for (int64_t i = 0; i < t; ++i) {
      std::vector<double> s(i + 1);
      double mx = -1e300;
      for (int64_t j = 0; j <= i; ++j) {
        double d = 0;
        for (int64_t c = 0; c < Hd; ++c)
          d += double(q[i * Heads * Hd + h * Hd + c]) *
               k[j * KvHeads * Hd + kvh * Hd + c];
        s[j] = d * scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (double &e : s)
        sum += (e = std::exp(e - mx));
      for (int64_t c = 0; c < Hd; ++c) {
        double acc = 0;
        for (int64_t j = 0; j <= i; ++j)
          acc += s[j] / sum * v[j * KvHeads * Hd + kvh * Hd + c];
        out[i * Heads * Hd + h * Hd + c] = static_cast<float>(acc);
      }
    }
  }
  return out;
}

/// The parallel LLaMA's logits for `tokens`, from the checkpoint's tensors.
Mat parallelReference(const Weights &w, unsigned layers,
                      const std::vector<int32_t> &tokens, float eps,
                      double theta) {
  int64_t t = tokens.size();
  auto at = [&](const std::string &k) -> const Mat & { return w.at(k).second; };
  const Mat &embed = at("model.embed_tokens.weight");
  Mat x(t * H);
  for (int64_t r = 0; r < t; ++r)
    std::copy_n(&embed[tokens[r] * H], H, &x[r * H]);
  for (unsigned l = 0; l < layers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    Mat n = rmsNorm(x, t, at(p + "input_layernorm.weight"), eps);
    const Mat &qkv = at(p + "self_attn.qkv_proj.weight");
    Mat q = linear(n, t, H, qkv, Heads * Hd);
    Mat k = linear(n, t, H, qkv, KvHeads * Hd, Heads * Hd);
    Mat v = linear(n, t, H, qkv, KvHeads * Hd, (Heads + KvHeads) * Hd);
    rope(q, t, Heads, theta);
    rope(k, t, KvHeads, theta);
    Mat a = linear(attention(q, k, v, t), t, Heads * Hd,
                   at(p + "self_attn.o_proj.weight"), H);
    Mat g = linear(n, t, H, at(p + "mlp.gate_proj.weight"), I);
    Mat u = linear(n, t, H, at(p + "mlp.up_proj.weight"), I);
    for (size_t i = 0; i < g.size(); ++i)
      g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    Mat m = linear(g, t, I, at(p + "mlp.down_proj.weight"), H);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += a[i] + m[i];
  }
  x = rmsNorm(x, t, at("model.norm.weight"), eps);
  return linear(x, t, H, embed, Vocab);
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

/// Compiles and runs a decoder prefill graph, as rlx-run does; returns the
/// logits.
std::vector<float> runPrefill(const BuiltModel &built, const WeightSource &w,
                              const std::vector<int32_t> &tokens) {
  Session session;
  CompileOptions o;
  o.profile = built.profile;
  int64_t t = tokens.size();
  o.inputShapes["tokens"] = {1, t};
  o.inputShapes["positions"] = {1, t};
  auto model = session.compileString(built.mlir, o);
  EXPECT_TRUE(static_cast<bool>(model)) << llvm::toString(model.takeError());
  if (!model)
    return {};
  WeightSourceStack all({&w, built.synthesized.get()});
  Error err = model->loadParams(all);
  EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  std::vector<int32_t> pos(t);
  for (int64_t i = 0; i < t; ++i)
    pos[i] = i;
  TensorMap_t feeds;
  feeds.emplace("tokens", Tensor::fromI32({1, t}, tokens));
  feeds.emplace("positions", Tensor::fromI32({1, t}, pos));
  auto result = model->run(feeds);
  EXPECT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  if (!result)
    return {};
  auto v = result->at("logits").data<float>();
  return {v.begin(), v.end()};
}

/// The largest difference, relative to the largest magnitude of `b`.
float relDiff(llvm::ArrayRef<float> a, llvm::ArrayRef<float> b) {
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size() || a.empty())
    return INFINITY;
  float scale = 1.0f, d = 0.0f;
  for (float x : b)
    scale = std::max(scale, std::fabs(x));
  for (size_t i = 0; i < a.size(); ++i)
    d = std::max(d, std::fabs(a[i] - b[i]));
  return d / scale;
}

/// A temporary directory, removed at the end of the test.
struct TempDir {
  llvm::SmallString<128> path;
  TempDir() {
    std::error_code ec =
        llvm::sys::fs::createUniqueDirectory("rlx-recipe-test", path);
    EXPECT_FALSE(ec) << ec.message();
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
};

constexpr unsigned ParallelLayers = 2;
constexpr float Eps = 1e-5f;
constexpr double Theta = 10000.0;

/// Writes the parallel LLaMA checkpoint; returns its tensors.
Weights writeParallelModel(llvm::StringRef dir, bool parallelBlock = true) {
  std::mt19937 rng(7);
  Weights w;
  put(w, "model.embed_tokens.weight", {Vocab, H}, rng, 1.0f);
  put(w, "model.norm.weight", {H}, rng, 0.1f, 1.0f);
  for (unsigned l = 0; l < ParallelLayers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    put(w, p + "input_layernorm.weight", {H}, rng, 0.1f, 1.0f);
    put(w, p + "self_attn.qkv_proj.weight", {(Heads + 2 * KvHeads) * Hd, H},
        rng);
    put(w, p + "self_attn.o_proj.weight", {H, Heads * Hd}, rng);
    put(w, p + "mlp.gate_proj.weight", {I, H}, rng);
    put(w, p + "mlp.up_proj.weight", {I, H}, rng);
    put(w, p + "mlp.down_proj.weight", {H, I}, rng);
  }
  llvm::SmallString<128> file(dir);
  llvm::sys::path::append(file, "model.safetensors");
  writeSafeTensors(file, w);
  llvm::json::Object cfg{
      {"model_type", "parallel_llama"},
      {"architectures", llvm::json::Array{"ParallelLlamaForCausalLM"}},
      {"vocab_size", Vocab},
      {"hidden_size", H},
      {"intermediate_size", I},
      {"num_hidden_layers", ParallelLayers},
      {"num_attention_heads", Heads},
      {"num_key_value_heads", KvHeads},
      {"rms_norm_eps", Eps},
      {"rope_theta", Theta},
      {"hidden_act", "silu"},
      {"tie_word_embeddings", true},
      {"parallel_block", parallelBlock}};
  llvm::SmallString<128> cfgPath(dir);
  llvm::sys::path::append(cfgPath, "config.json");
  std::error_code ec;
  llvm::raw_fd_ostream os(cfgPath, ec);
  EXPECT_FALSE(ec) << ec.message();
  os << llvm::json::Value(std::move(cfg));
  return w;
}

/// Registers the parallel recipe for the test's lifetime.
struct ParallelRegistration {
  ParallelRegistration() {
    Error err =
        registerRecipe(std::make_shared<ParallelLlamaRecipe>(),
                       {"parallel_llama"}, {"ParallelLlamaForCausalLM"});
    EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  }
  ~ParallelRegistration() {
    EXPECT_TRUE(RecipeRegistry::global().remove("parallel_llama"));
  }
};

TEST(Recipe, UserRecipeRunsThroughTheRegistry) {
  ParallelRegistration registration;
  TempDir dir;
  Weights w = writeParallelModel(dir.path);

  // What rlx-run --model does: load, find the decoder, build, compile, run.
  Expected<LoadedModel> m = loadModel(dir.path);
  ASSERT_TRUE(static_cast<bool>(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->config.modelType, "parallel_llama");
  EXPECT_TRUE(m->config.unknownKeys.empty());
  // mapWeights split the fused matrix.
  EXPECT_TRUE(m->weights->contains("model.layers.1.self_attn.k_proj.weight"));
  EXPECT_FALSE(
      m->weights->contains("model.layers.1.self_attn.qkv_proj.weight"));
  Expected<DecoderFlow> recipe = decoderFlowFor(m->config);
  ASSERT_TRUE(static_cast<bool>(recipe)) << llvm::toString(recipe.takeError());
  EXPECT_EQ(recipe->recipe().name(), "parallel_llama");
  recipe->forPrefill();
  Expected<BuiltModel> built = recipe->build(*m->weights);
  ASSERT_TRUE(static_cast<bool>(built)) << llvm::toString(built.takeError());
  EXPECT_EQ(built->name, "parallel_llama_prefill");
  EXPECT_TRUE(built->warnings.empty());
  // No fused LLaMA layer: the recipe's own layers.
  EXPECT_EQ(built->mlir.find("hir.llama_decoder_layer"), std::string::npos);

  std::vector<int32_t> tokens = {3, 41, 7, 0, 19, 28};
  std::vector<float> got = runPrefill(*built, *m->weights, tokens);
  Mat want = parallelReference(w, ParallelLayers, tokens, Eps, Theta);
  EXPECT_LT(relDiff(got, want), 1e-4f);

  // The built-in LLaMA recipe reads the same checkpoint as a sequential
  // model: a different function, so the check above can tell them apart
  // (its second norm is missing, so give it the input norm's).
  DecoderFlow llama(m->config, builtinRecipe("llama"));
  llama.forPrefill().allowUnusedWeights();
  TensorMap withNorms("llama view");
  for (const std::string &n : m->weights->names()) {
    auto data = m->weights->loadF32(n);
    ASSERT_TRUE(static_cast<bool>(data)) << llvm::toString(data.takeError());
    ASSERT_FALSE(static_cast<bool>(
        withNorms.add(n, m->weights->lookup(n)->shape, *data)));
    llvm::StringRef key(n);
    if (key.consume_back("input_layernorm.weight")) {
      ASSERT_FALSE(static_cast<bool>(
          withNorms.add((key + "post_attention_layernorm.weight").str(),
                        m->weights->lookup(n)->shape, *data)));
    }
  }
  Expected<BuiltModel> sequential = llama.build(withNorms);
  ASSERT_TRUE(static_cast<bool>(sequential))
      << llvm::toString(sequential.takeError());
  EXPECT_GT(relDiff(runPrefill(*sequential, withNorms, tokens), want), 1e-2f);
}

TEST(Recipe, UserRecipeParsesItsConfig) {
  ParallelRegistration registration;
  TempDir dir;
  writeParallelModel(dir.path, /*parallelBlock=*/false);
  Expected<LoadedModel> m = loadModel(dir.path);
  ASSERT_FALSE(static_cast<bool>(m));
  EXPECT_NE(llvm::toString(m.takeError()).find("'parallel_block' must be true"),
            std::string::npos);
}

TEST(Recipe, RegistryRefusesAndLists) {
  // A built-in model_type cannot be taken over.
  Error err =
      registerRecipe(std::make_shared<ParallelLlamaRecipe>(), {"qwen3"});
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "registerRecipe: model_type 'qwen3' already has the recipe "
            "'qwen3'");
  TransformerConfig cfg;
  cfg.modelType = "parallel_llama";
  Expected<DecoderFlow> none = decoderFlowFor(cfg);
  ASSERT_FALSE(static_cast<bool>(none));
  EXPECT_EQ(llvm::toString(none.takeError()),
            "no decoder recipe for model_type 'parallel_llama' (supported: "
            "llama, mistral, qwen2, qwen3, gemma2, gemma3_text, phi3, mixtral, "
            "qwen2_moe, qwen3_moe)");
  {
    ParallelRegistration registration;
    Expected<DecoderFlow> found = decoderFlowFor(cfg);
    ASSERT_TRUE(static_cast<bool>(found)) << llvm::toString(found.takeError());
    EXPECT_EQ(RecipeRegistry::global().modelTypes(RecipeKind::Decoder).back(),
              "parallel_llama");
    EXPECT_EQ(RecipeRegistry::global()
                  .lookupArchitecture("ParallelLlamaForCausalLM")
                  .get(),
              &found->recipe());
  }
  EXPECT_FALSE(RecipeRegistry::global().lookup("parallel_llama"));
  EXPECT_FALSE(
      RecipeRegistry::global().lookupArchitecture("ParallelLlamaForCausalLM"));
  // BERT is registered, as an encoder.
  cfg.modelType = "bert";
  Expected<std::shared_ptr<const ModelRecipe>> bert = recipeFor(cfg);
  ASSERT_TRUE(static_cast<bool>(bert)) << llvm::toString(bert.takeError());
  EXPECT_EQ((*bert)->kind(), RecipeKind::Encoder);
}

//===----------------------------------------------------------------------===//
// Stage interfaces
//===----------------------------------------------------------------------===//

constexpr unsigned LlamaLayers = 4;

TransformerConfig llamaConfig() {
  TransformerConfig cfg;
  cfg.modelType = "llama";
  cfg.vocabSize = Vocab;
  cfg.hidden = H;
  cfg.intermediate = I;
  cfg.numLayers = LlamaLayers;
  cfg.numHeads = Heads;
  cfg.numKvHeads = KvHeads;
  cfg.headDim = Hd;
  cfg.tieEmbeddings = true;
  cfg.activation = "silu";
  return cfg;
}

TensorMap llamaWeights() {
  std::mt19937 rng(3);
  Weights w;
  put(w, "model.embed_tokens.weight", {Vocab, H}, rng, 1.0f);
  put(w, "model.norm.weight", {H}, rng, 0.1f, 1.0f);
  for (unsigned l = 0; l < LlamaLayers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    put(w, p + "input_layernorm.weight", {H}, rng, 0.1f, 1.0f);
    put(w, p + "post_attention_layernorm.weight", {H}, rng, 0.1f, 1.0f);
    put(w, p + "self_attn.q_proj.weight", {Heads * Hd, H}, rng);
    put(w, p + "self_attn.k_proj.weight", {KvHeads * Hd, H}, rng);
    put(w, p + "self_attn.v_proj.weight", {KvHeads * Hd, H}, rng);
    put(w, p + "self_attn.o_proj.weight", {H, Heads * Hd}, rng);
    put(w, p + "mlp.gate_proj.weight", {I, H}, rng);
    put(w, p + "mlp.up_proj.weight", {I, H}, rng);
    put(w, p + "mlp.down_proj.weight", {H, I}, rng);
  }
  TensorMap map("test weights");
  for (auto &[key, t] : w)
    EXPECT_FALSE(static_cast<bool>(map.add(key, t.first, t.second)));
  return map;
}

/// An attention that attends to nothing: zeros of the input's shape.
class NoAttention final : public AttentionStage {
public:
  Error emit(FlowContext &ctx) const override {
    Emitter e(ctx);
    mlir::Value x = e.current();
    mlir::OperationState st(e.loc(), "hir.embed_scale");
    st.addOperands(x);
    st.addTypes(x.getType());
    st.addAttribute("scale", e.builder().getF32FloatAttr(0.0f));
    e.setCurrent(e.builder().create(st)->getResult(0));
    return Error::success();
  }
};

size_t count(llvm::StringRef text, llvm::StringRef what) {
  return text.count(what);
}

TEST(Recipe, HookReplacesTheAttentionOfLayer3) {
  TensorMap w = llamaWeights();
  std::vector<int32_t> tokens = {5, 9, 44, 2, 31};

  Llama32Flow plain(llamaConfig());
  plain.forPrefill();
  auto base = plain.build(w);
  ASSERT_TRUE(static_cast<bool>(base)) << llvm::toString(base.takeError());
  EXPECT_EQ(count(base->mlir, "hir.llama_decoder_layer"), LlamaLayers);
  std::vector<float> baseLogits = runPrefill(*base, w, tokens);

  Llama32Flow hooked(llamaConfig());
  hooked.forPrefill().layer([](LayerCtx &ctx) {
    return ctx.index() == 3 ? ctx.withAttention(std::make_shared<NoAttention>())
                            : ctx.defaultStage();
  });
  // The replaced attention reads none of layer 3's attention weights: an
  // error naming them, unless allowed.
  auto refused = hooked.build(w);
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_NE(llvm::toString(refused.takeError())
                .find("'model.layers.3.self_attn.q_proj.weight'"),
            std::string::npos);
  hooked.allowUnusedWeights();
  auto built = hooked.build(w);
  ASSERT_TRUE(static_cast<bool>(built)) << llvm::toString(built.takeError());
  // Layers 0-2 stay the fused composite; layer 3 is composed.
  EXPECT_EQ(count(built->mlir, "hir.llama_decoder_layer"), LlamaLayers - 1);
  EXPECT_EQ(count(built->mlir, "hir.swiglu"), 1u);
  std::vector<float> got = runPrefill(*built, w, tokens);

  // The same model written out: layer 3 is x + mlp(norm(x)).
  ModelFlow ref("reference");
  ref.input("tokens", {1, kDynamic}, DType::I32)
      .input("positions", {1, kDynamic}, DType::I32)
      .tokenEmbed()
      .repeatLayers(LlamaLayers - 1,
                    [&](unsigned i) {
                      return llamaPrefillLayerFused(i, plain.layerSpec(i));
                    })
      .residualSave()
      .rmsNorm("model.layers.3.post_attention_layernorm.weight", 1e-5f)
      .swigluHfMlp("model.layers.3.mlp.")
      .residualAdd()
      .finalNorm(1e-5f)
      .lmHead(/*tied=*/true)
      .output("logits");
  auto refBuilt = ref.build(w);
  ASSERT_TRUE(static_cast<bool>(refBuilt))
      << llvm::toString(refBuilt.takeError());
  std::vector<float> want = runPrefill(*refBuilt, w, tokens);
  EXPECT_LT(relDiff(got, want), 1e-4f);
  // And the attention mattered.
  EXPECT_GT(relDiff(got, baseLogits), 1e-3f);
}

TEST(Recipe, ComposedBuiltinPartsMatchTheFusedLayer) {
  TensorMap w = llamaWeights();
  std::vector<int32_t> tokens = {1, 2, 3, 47};
  Llama32Flow plain(llamaConfig());
  Llama32Flow parts(llamaConfig());
  parts.layer([](LayerCtx &ctx) {
    // The recipe's own attention and MLP as stage interfaces: the layer is
    // composed from its parts (norms, SelfAttention, GatedMlp).
    if (ctx.index() % 2 == 1)
      return ctx.withFfn(GatedMlp::forLayer(ctx.spec()));
    return ctx.withAttention(SelfAttention::forLayer(ctx.spec()));
  });
  auto a = plain.build(w), b = parts.build(w);
  ASSERT_TRUE(static_cast<bool>(a)) << llvm::toString(a.takeError());
  ASSERT_TRUE(static_cast<bool>(b)) << llvm::toString(b.takeError());
  EXPECT_EQ(count(b->mlir, "hir.llama_decoder_layer"), 0u);
  EXPECT_EQ(count(b->mlir, "hir.attention"), LlamaLayers);
  EXPECT_LT(relDiff(runPrefill(*b, w, tokens), runPrefill(*a, w, tokens)),
            1e-4f);
}

TEST(Recipe, ReplacedPartsInADecodeGraphAreRefused) {
  TensorMap w = llamaWeights();
  Llama32Flow recipe(llamaConfig());
  recipe.forDecode().layer([](LayerCtx &ctx) {
    return ctx.index() == 3 ? ctx.withAttention(std::make_shared<NoAttention>())
                            : ctx.defaultStage();
  });
  auto built = recipe.build(w);
  ASSERT_FALSE(static_cast<bool>(built));
  EXPECT_EQ(
      llvm::toString(built.takeError()),
      "layer 3: decoder layer 3 has replaced parts, but a KV-cache decode "
      "layer is one fused op (replace the whole layer, or build the "
      "prefill graph)");
}

TEST(Recipe, PartsMustKeepTheShape) {
  TensorMap w = llamaWeights();
  Llama32Flow recipe(llamaConfig());
  recipe.layer([](LayerCtx &ctx) {
    // An "attention" that leaves the k projection's [.., 16] active.
    std::string key = ctx.spec().prefix + "self_attn.k_proj";
    return ctx.withAttention(AttentionStage::fromStage([key](FlowContext &c) {
      ModelFlow f("");
      return f.linear(key).takeStages().front()(c);
    }));
  });
  auto built = recipe.build(w);
  ASSERT_FALSE(static_cast<bool>(built));
  EXPECT_EQ(llvm::toString(built.takeError()),
            "layer 0: the attention leaves [1, ?, 16] active, expected "
            "[1, ?, 32] (its input)");
}

//===----------------------------------------------------------------------===//
// Layer compositions
//===----------------------------------------------------------------------===//

TEST(Recipe, LayerCompositions) {
  // Gemma 2: sliding-window layers at even indices, global at odd ones.
  TransformerConfig gemma = llamaConfig();
  gemma.modelType = "gemma2";
  gemma.queryPreAttnScalar = Hd;
  gemma.slidingWindow = 4;
  gemma.slidingLayers = {true, false, true, false};
  GemmaFlow g(gemma);
  LayerComposition pair = g.recipe().composition(g.request());
  EXPECT_FALSE(pair.isHomogeneous());
  EXPECT_EQ(pair.size(), LlamaLayers);
  EXPECT_EQ(pair.kindOf(0), 0u);
  EXPECT_EQ(pair.kindOf(3), 1u);
  std::vector<unsigned> kinds;
  std::vector<int64_t> windows;
  g.layer([&](LayerCtx &ctx) {
    kinds.push_back(ctx.kind());
    windows.push_back(ctx.spec().attention.window);
    EXPECT_TRUE(ctx.layer().postFfnNorm()) << "Gemma's sandwich norms";
    return ctx.defaultStage();
  });
  (void)g.flow();
  EXPECT_EQ(kinds, (std::vector<unsigned>{0, 1, 0, 1}));
  EXPECT_EQ(windows, (std::vector<int64_t>{4, 0, 4, 0}));

  // LLaMA: one kind.
  Llama32Flow llama(llamaConfig());
  LayerComposition same = llama.recipe().composition(llama.request());
  EXPECT_TRUE(same.isHomogeneous());
  EXPECT_EQ(same.kindOf(3), 0u);
  EXPECT_FALSE(same.layer(2).postFfnNorm());
  EXPECT_TRUE(same.layer(2).isFused());

  // A user's alternating pair: opaque layers of two kinds.
  std::vector<unsigned> built;
  LayerComposition mine = LayerComposition::alternating(
      5,
      [&](unsigned i) {
        built.push_back(10 + i);
        return DecoderLayer(i, Stage());
      },
      [&](unsigned i) {
        built.push_back(20 + i);
        return DecoderLayer(i, Stage());
      });
  for (unsigned i = 0; i < mine.size(); ++i)
    EXPECT_EQ(mine.layer(i).index(), i);
  EXPECT_EQ(built, (std::vector<unsigned>{10, 21, 12, 23, 14}));
}

} // namespace
