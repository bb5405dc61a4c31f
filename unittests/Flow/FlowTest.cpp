//===- FlowTest.cpp - The model-author API
//---------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Flows built from blocks, compiled and run on the CPU: fused and composed
// layers agree, hooks replace layers, custom stages emit IR, missing or
// mis-shaped weights name the key and the layer, and the NomicBERT layer
// matches a naive reference written here.
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Flow/Recipes.h"
#include "mlir/IR/Builders.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <cmath>
#include <random>

using namespace rlx;

namespace {

constexpr int64_t H = 32, I = 48, T = 5, Heads = 4, KvHeads = 2, Hd = 8;

std::vector<float> random(size_t n, std::mt19937 &rng, float scale = 0.2f,
                          float offset = 0.0f) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = offset + scale * d(rng);
  return v;
}

void add(TensorMap &w, const std::string &key, llvm::ArrayRef<int64_t> shape,
         std::mt19937 &rng, float scale = 0.2f, float offset = 0.0f) {
  size_t n = 1;
  for (int64_t d : shape)
    n *= d;
  ASSERT_FALSE(
      static_cast<bool>(w.add(key, shape, random(n, rng, scale, offset))));
}

/// Weights of a small LLaMA: embedding, `layers` layers, final norm.
TensorMap llamaWeights(unsigned layers, unsigned seed = 1) {
  std::mt19937 rng(seed);
  TensorMap w("test weights");
  add(w, "model.embed_tokens.weight", {64, H}, rng, 1.0f);
  add(w, "model.norm.weight", {H}, rng, 0.1f, 1.0f);
  for (unsigned l = 0; l < layers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    add(w, p + "input_layernorm.weight", {H}, rng, 0.1f, 1.0f);
    add(w, p + "post_attention_layernorm.weight", {H}, rng, 0.1f, 1.0f);
    add(w, p + "self_attn.q_proj.weight", {Heads * Hd, H}, rng);
    add(w, p + "self_attn.k_proj.weight", {KvHeads * Hd, H}, rng);
    add(w, p + "self_attn.v_proj.weight", {KvHeads * Hd, H}, rng);
    add(w, p + "self_attn.o_proj.weight", {H, Heads * Hd}, rng);
    add(w, p + "mlp.gate_proj.weight", {I, H}, rng);
    add(w, p + "mlp.up_proj.weight", {I, H}, rng);
    add(w, p + "mlp.down_proj.weight", {H, I}, rng);
  }
  return w;
}

DecoderLayerSpec layerSpec(unsigned l) {
  DecoderLayerSpec s;
  s.attention.numHeads = Heads;
  s.attention.numKvHeads = KvHeads;
  s.attention.headDim = Hd;
  s.hidden = H;
  s.intermediate = I;
  s.prefix = "model.layers." + std::to_string(l) + ".";
  return s;
}

ModelFlow llamaFlow(unsigned layers, std::function<Stage(unsigned)> layer) {
  ModelFlow f("tiny");
  f.input("tokens", {1, kDynamic}, DType::I32)
      .input("positions", {1, kDynamic}, DType::I32)
      .stage([](FlowContext &) { return llvm::Error::success(); })
      .tokenEmbed()
      .repeatLayers(layers, std::move(layer))
      .finalNorm(1e-5f)
      .lmHead(/*tied=*/true)
      .output("logits");
  return f;
}

/// Compiles and runs a built model on `tokens`; returns the named output.
std::vector<float> run(const BuiltModel &built, const WeightSource &w,
                       std::vector<int32_t> tokens,
                       const std::string &out = "logits",
                       CompileStats *stats = nullptr, bool unfuse = false) {
  Session session;
  CompileOptions o;
  o.profile = built.profile;
  o.profile.backend.cpu.unfuseRegions = unfuse;
  int64_t t = tokens.size();
  for (const std::string &in : built.inputs)
    o.inputShapes[in] = {1, t};
  auto model = session.compileString(built.mlir, o);
  if (stats)
    *stats = session.lastStats();
  EXPECT_TRUE(static_cast<bool>(model)) << llvm::toString(model.takeError());
  if (!model)
    return {};
  WeightSourceStack all({&w, built.synthesized.get()});
  llvm::Error err = model->loadParams(all);
  EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  std::vector<int32_t> pos(t);
  for (int64_t i = 0; i < t; ++i)
    pos[i] = i;
  TensorMap_t feeds;
  feeds.emplace("tokens", Tensor::fromI32({1, t}, tokens));
  if (llvm::is_contained(built.inputs, "positions"))
    feeds.emplace("positions", Tensor::fromI32({1, t}, pos));
  if (llvm::is_contained(built.inputs, "x"))
    feeds.erase("tokens");
  auto result = model->run(feeds);
  EXPECT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  if (!result)
    return {};
  auto v = result->at(out).data<float>();
  return {v.begin(), v.end()};
}

void expectClose(llvm::ArrayRef<float> a, llvm::ArrayRef<float> b,
                 float tol = 1e-4f) {
  ASSERT_EQ(a.size(), b.size());
  float scale = 1.0f;
  for (float x : b)
    scale = std::max(scale, std::fabs(x));
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], tol * scale) << "at " << i;
}

TEST(Flow, FusedAndComposedLayersAgree) {
  TensorMap w = llamaWeights(2);
  auto fused = llamaFlow(2, [](unsigned l) {
                 return llamaPrefillLayerFused(l, layerSpec(l));
               }).build(w);
  ASSERT_TRUE(static_cast<bool>(fused)) << llvm::toString(fused.takeError());
  auto composed = llamaFlow(2, [](unsigned l) {
                    return llamaPrefillLayerComposed(l, layerSpec(l));
                  }).build(w);
  ASSERT_TRUE(static_cast<bool>(composed))
      << llvm::toString(composed.takeError());
  EXPECT_NE(fused->mlir.find("hir.llama_decoder_layer"), std::string::npos);
  EXPECT_EQ(composed->mlir.find("hir.llama_decoder_layer"), std::string::npos);
  std::vector<int32_t> tokens = {3, 17, 5, 60, 1};
  expectClose(run(*composed, w, tokens), run(*fused, w, tokens));
}

// [backend.cpu] unfuse_regions: the fused layers run as primitive ops
// (mir-unfuse) and give the same logits.
TEST(Flow, UnfusedRegionsMatchFused) {
  TensorMap w = llamaWeights(2);
  auto built = llamaFlow(2, [](unsigned l) {
                 return llamaPrefillLayerFused(l, layerSpec(l));
               }).build(w);
  ASSERT_TRUE(static_cast<bool>(built)) << llvm::toString(built.takeError());
  std::vector<int32_t> tokens = {3, 17, 5, 60, 1};
  CompileStats fusedStats, plainStats;
  std::vector<float> fused = run(*built, w, tokens, "logits", &fusedStats);
  std::vector<float> plain =
      run(*built, w, tokens, "logits", &plainStats, /*unfuse=*/true);
  EXPECT_NE(fusedStats.fusedOps, "none");
  EXPECT_EQ(plainStats.fusedOps, "none");
  EXPECT_GT(plainStats.kernels, fusedStats.kernels);
  EXPECT_TRUE(plainStats.warnings.empty());
  expectClose(plain, fused);
}

TEST(Flow, MissingWeightNamesKeyAndLayer) {
  TensorMap w = llamaWeights(1);
  auto built = llamaFlow(2, [](unsigned l) {
                 return llamaPrefillLayerFused(l, layerSpec(l));
               }).build(w);
  ASSERT_FALSE(static_cast<bool>(built));
  EXPECT_EQ(llvm::toString(built.takeError()),
            "layer 1: missing weight 'model.layers.1.input_layernorm.weight' "
            "(expected [32]) in test weights");
}

TEST(Flow, MisshapedWeightNamesKeyAndLayer) {
  TensorMap w("test weights");
  std::mt19937 rng(0);
  TensorMap good = llamaWeights(1);
  for (const std::string &n : good.names()) {
    const TensorInfo *info = good.lookup(n);
    if (n == "model.layers.0.mlp.down_proj.weight")
      add(w, n, {H, I - 1}, rng);
    else
      add(w, n, info->shape, rng);
  }
  auto built = llamaFlow(1, [](unsigned l) {
                 return llamaPrefillLayerFused(l, layerSpec(l));
               }).build(w);
  ASSERT_FALSE(static_cast<bool>(built));
  EXPECT_EQ(llvm::toString(built.takeError()),
            "layer 0: weight 'model.layers.0.mlp.down_proj.weight' in test "
            "weights has shape [32, 47], expected [32, 48]");
}

TEST(Flow, RecipeLayerHookAndPatch) {
  TransformerConfig cfg;
  cfg.modelType = "llama";
  cfg.vocabSize = 64;
  cfg.hidden = H;
  cfg.intermediate = I;
  cfg.numLayers = 2;
  cfg.numHeads = Heads;
  cfg.numKvHeads = KvHeads;
  cfg.headDim = Hd;
  cfg.tieEmbeddings = true;
  TensorMap w = llamaWeights(2);
  Llama32Flow plain(cfg);
  Llama32Flow hooked(cfg);
  unsigned calls = 0;
  hooked.layer([&](LayerCtx &ctx) {
    ++calls;
    return ctx.index() == 0 ? llamaPrefillLayerComposed(0, ctx.spec())
                            : ctx.defaultStage();
  });
  bool patched = false;
  hooked.patchFlow([&](ModelFlow &) { patched = true; });
  auto a = plain.build(w), b = hooked.build(w);
  ASSERT_TRUE(static_cast<bool>(a)) << llvm::toString(a.takeError());
  ASSERT_TRUE(static_cast<bool>(b)) << llvm::toString(b.takeError());
  EXPECT_EQ(calls, 2u);
  EXPECT_TRUE(patched);
  std::vector<int32_t> tokens = {9, 8, 7};
  expectClose(run(*b, w, tokens), run(*a, w, tokens));
}

TEST(Flow, CustomStageEmitsIR) {
  TensorMap w("none");
  ModelFlow f("custom");
  f.input("x", {1, 4}, DType::F32)
      .custom("double",
              [](Emitter &e) -> llvm::Error {
                mlir::Value x = e.current();
                mlir::OpBuilder &b = e.builder();
                mlir::OperationState st(e.loc(), "hir.embed_scale");
                st.addOperands(x);
                st.addTypes(x.getType());
                st.addAttribute("scale", b.getF32FloatAttr(2.0f));
                e.setCurrent(b.create(st)->getResult(0));
                return llvm::Error::success();
              })
      .output("y");
  auto built = f.build(w);
  ASSERT_TRUE(static_cast<bool>(built)) << llvm::toString(built.takeError());
  Session session;
  auto model = session.compileString(built->mlir, {});
  ASSERT_TRUE(static_cast<bool>(model)) << llvm::toString(model.takeError());
  TensorMap_t feeds;
  feeds.emplace("x", Tensor::fromF32({1, 4}, {1, 2, 3, 4}));
  auto out = model->run(feeds);
  ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
  auto y = out->at("y").data<float>();
  EXPECT_EQ(std::vector<float>(y.begin(), y.end()),
            (std::vector<float>{2, 4, 6, 8}));
}

/// A chain of `n` kernels (softmax, rms_norm, rms_norm, softmax, ...) over
/// x: f32[1, 4, 8]. The period of 3 makes each chunk of 64 calls differ.
static std::string kernelChain(int n) {
  std::string text = "func.func @chain(%x: tensor<1x4x8xf32> {rlx.name = "
                     "\"x\"}) -> (tensor<1x4x8xf32> {rlx.name = \"y\"}) {\n"
                     "  %w = mir.param \"w\" : tensor<8xf32>\n";
  std::string prev = "%x";
  for (int i = 0; i < n; ++i) {
    std::string v = "%v" + std::to_string(i);
    if (i % 3 == 0)
      text += "  " + v + " = mir.softmax " + prev +
              " {axis = -1 : i64} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>\n";
    else
      text += "  " + v + " = mir.rms_norm " + prev +
              ", %w {epsilon = 1.0e-6 : f32} : (tensor<1x4x8xf32>, "
              "tensor<8xf32>) -> tensor<1x4x8xf32>\n";
    prev = v;
  }
  return text + "  return " + prev + " : tensor<1x4x8xf32>\n}\n";
}

TEST(Flow, ManyKernelsSplitEntryAndReportPhases) {
  // 300 kernels: the entry function is split into chunks of 64 calls
  // (rlx-split-large-functions); the result must still be the chain's.
  const int n = 300;
  Session session;
  CompileOptions o;
  std::vector<std::string> phases;
  o.onPhase = [&](llvm::StringRef phase, double seconds) {
    EXPECT_GE(seconds, 0);
    phases.push_back(phase.str());
  };
  auto model = session.compileString(kernelChain(n), o);
  ASSERT_TRUE(static_cast<bool>(model)) << llvm::toString(model.takeError());
  EXPECT_EQ(session.lastStats().kernels, static_cast<unsigned>(n));
  // onPhase saw every phase, in order.
  std::vector<std::string> recorded;
  for (const auto &[phase, seconds] : session.lastStats().phaseSeconds)
    recorded.push_back(phase);
  EXPECT_EQ(phases, recorded);
  EXPECT_TRUE(llvm::is_contained(phases, "jit"));

  std::vector<float> x(32), w(8, 1.0f);
  for (int i = 0; i < 32; ++i)
    x[i] = 0.1f * static_cast<float>(i % 7) - 0.2f;
  ASSERT_EQ(llvm::toString(model->setParam("w", w)), "");
  TensorMap_t feeds;
  feeds.emplace("x", Tensor::fromF32({1, 4, 8}, x));
  auto out = model->run(feeds);
  ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
  // The same chain in double precision.
  std::vector<double> ref(x.begin(), x.end());
  for (int i = 0; i < n; ++i)
    for (int r = 0; r < 4; ++r) {
      double *row = ref.data() + 8 * r;
      if (i % 3 == 0) {
        double m = *std::max_element(row, row + 8), sum = 0;
        for (int c = 0; c < 8; ++c)
          sum += (row[c] = std::exp(row[c] - m));
        for (int c = 0; c < 8; ++c)
          row[c] /= sum;
      } else {
        double ss = 0;
        for (int c = 0; c < 8; ++c)
          ss += row[c] * row[c];
        double scale = 1.0 / std::sqrt(ss / 8 + 1e-6);
        for (int c = 0; c < 8; ++c)
          row[c] *= scale;
      }
    }
  auto y = out->at("y").data<float>();
  for (int i = 0; i < 32; ++i)
    EXPECT_NEAR(y[i], ref[i], 1e-5) << i;
}

TEST(Flow, CustomStageErrorsAreLabelled) {
  TensorMap w("none");
  ModelFlow f("bad");
  f.input("x", {1, 4}, DType::F32).custom("broken", [](Emitter &) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "nope");
  });
  auto built = f.build(w);
  ASSERT_FALSE(static_cast<bool>(built));
  EXPECT_EQ(llvm::toString(built.takeError()), "custom stage 'broken': nope");
}

//===----------------------------------------------------------------------===//
// NomicBERT layer against a naive reference
//===----------------------------------------------------------------------===//

using Mat = std::vector<float>; // row-major

Mat matmulT(const Mat &x, const Mat &w, int64_t rows, int64_t in, int64_t out) {
  Mat y(rows * out, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = 0;
      for (int64_t k = 0; k < in; ++k)
        acc += double(x[r * in + k]) * w[o * in + k];
      y[r * out + o] = acc;
    }
  return y;
}

Mat layerNorm(const Mat &x, const Mat &g, const Mat &b, int64_t rows, int64_t n,
              float eps) {
  Mat y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i)
      mean += x[r * n + i];
    mean /= n;
    for (int64_t i = 0; i < n; ++i)
      var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
    var /= n;
    for (int64_t i = 0; i < n; ++i)
      y[r * n + i] = (x[r * n + i] - mean) / std::sqrt(var + eps) * g[i] + b[i];
  }
  return y;
}

void rope(Mat &x, int64_t rows, int64_t heads, int64_t hd, float theta) {
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < hd / 2; ++i) {
        float inv = 1.0f / std::pow(theta, float(2 * i) / float(hd));
        float a = float(t) * inv;
        float c = std::cos(a), s = std::sin(a);
        float &x1 = x[t * heads * hd + h * hd + i];
        float &x2 = x[t * heads * hd + h * hd + i + hd / 2];
        float y1 = x1 * c - x2 * s, y2 = x2 * c + x1 * s;
        x1 = y1;
        x2 = y2;
      }
}

TEST(Flow, NomicEncoderLayerMatchesReference) {
  const int64_t h = 32, inter = 40, heads = 4, hd = 8;
  const float theta = 1000.0f, eps = 1e-12f;
  std::mt19937 rng(11);
  TensorMap w("nomic weights");
  std::string p = "encoder.layers.0.";
  add(w, p + "attn.Wqkv.weight", {3 * h, h}, rng);
  add(w, p + "attn.out_proj.weight", {h, h}, rng);
  add(w, p + "norm1.weight", {h}, rng, 0.1f, 1.0f);
  add(w, p + "norm1.bias", {h}, rng, 0.1f);
  add(w, p + "mlp.fc11.weight", {inter, h}, rng);
  add(w, p + "mlp.fc12.weight", {inter, h}, rng);
  add(w, p + "mlp.fc2.weight", {h, inter}, rng);
  add(w, p + "norm2.weight", {h}, rng, 0.1f, 1.0f);
  add(w, p + "norm2.bias", {h}, rng, 0.1f);

  DecoderLayerSpec spec;
  spec.attention.numHeads = heads;
  spec.attention.numKvHeads = heads;
  spec.attention.headDim = hd;
  spec.attention.ropeTheta = theta;
  spec.hidden = h;
  spec.intermediate = inter;
  spec.rmsEpsilon = eps;
  spec.prefix = p;
  ModelFlow f("nomic");
  f.input("x", {1, kDynamic, h}, DType::F32)
      .input("positions", {1, kDynamic}, DType::I32)
      .nomicEncoderLayer(spec)
      .output("y");
  auto built = f.build(w);
  ASSERT_TRUE(static_cast<bool>(built)) << llvm::toString(built.takeError());

  Mat x = random(T * h, rng, 1.0f);
  Session session;
  CompileOptions o;
  o.inputShapes["x"] = {1, T, h};
  o.inputShapes["positions"] = {1, T};
  auto model = session.compileString(built->mlir, o);
  ASSERT_TRUE(static_cast<bool>(model)) << llvm::toString(model.takeError());
  ASSERT_FALSE(static_cast<bool>(model->loadParams(w)));
  TensorMap_t feeds;
  feeds.emplace("x", Tensor::fromF32({1, T, h}, x));
  std::vector<int32_t> pos(T);
  for (int64_t i = 0; i < T; ++i)
    pos[i] = i;
  feeds.emplace("positions", Tensor::fromI32({1, T}, pos));
  auto out = model->run(feeds);
  ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
  auto got = out->at("y").data<float>();

  auto weight = [&](const std::string &k) { return *w.loadF32(p + k); };
  Mat qkv = matmulT(x, weight("attn.Wqkv.weight"), T, h, 3 * h);
  Mat q(T * h), k(T * h), v(T * h);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < h; ++i) {
      q[t * h + i] = qkv[t * 3 * h + i];
      k[t * h + i] = qkv[t * 3 * h + h + i];
      v[t * h + i] = qkv[t * 3 * h + 2 * h + i];
    }
  rope(q, T, heads, hd, theta);
  rope(k, T, heads, hd, theta);
  Mat attn(T * h, 0.0f);
  for (int64_t hh = 0; hh < heads; ++hh)
    for (int64_t i = 0; i < T; ++i) {
      std::vector<double> s(T);
      double m = -1e300, sum = 0;
      for (int64_t j = 0; j < T; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < hd; ++d)
          dot += double(q[i * h + hh * hd + d]) * k[j * h + hh * hd + d];
        s[j] = dot / std::sqrt(double(hd));
        m = std::max(m, s[j]);
      }
      for (int64_t j = 0; j < T; ++j)
        sum += s[j] = std::exp(s[j] - m);
      for (int64_t d = 0; d < hd; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < T; ++j)
          acc += s[j] / sum * v[j * h + hh * hd + d];
        attn[i * h + hh * hd + d] = acc;
      }
    }
  Mat o1 = matmulT(attn, weight("attn.out_proj.weight"), T, h, h);
  for (int64_t i = 0; i < T * h; ++i)
    o1[i] += x[i];
  Mat h1 =
      layerNorm(o1, weight("norm1.weight"), weight("norm1.bias"), T, h, eps);
  Mat up = matmulT(h1, weight("mlp.fc11.weight"), T, h, inter);
  Mat gate = matmulT(h1, weight("mlp.fc12.weight"), T, h, inter);
  for (int64_t i = 0; i < T * inter; ++i)
    up[i] *= gate[i] / (1.0f + std::exp(-gate[i]));
  Mat y = matmulT(up, weight("mlp.fc2.weight"), T, inter, h);
  for (int64_t i = 0; i < T * h; ++i)
    y[i] += h1[i];
  Mat ref =
      layerNorm(y, weight("norm2.weight"), weight("norm2.bias"), T, h, eps);
  expectClose(got, ref);
}

} // namespace

//===----------------------------------------------------------------------===//
// Streams, named scopes and plugins
//===----------------------------------------------------------------------===//

/// Two streams bound from inputs, transformed together, then read back:
/// img' = img + txt, txt' = txt + img' (run and checked against the sums).
TEST(Flow, DualStreamTransformsBothStreams) {
  constexpr int64_t T = 3, H = 4;
  ModelFlow f("two_streams");
  f.input("image", {1, T, H}, DType::F32)
      .input("text", {1, T, H}, DType::F32)
      .bindInputsToStreams({{"image", stream::Img}, {"text", stream::Txt}})
      .dualStream(
          "mix", stream::Img, stream::Txt,
          [](Emitter &e, mlir::Value &img, mlir::Value &txt) -> llvm::Error {
            auto a = e.create("hir.add", img.getType(), {img, txt});
            if (!a)
              return a.takeError();
            img = (*a)->getResult(0);
            auto b = e.create("hir.add", txt.getType(), {txt, img});
            if (!b)
              return b.takeError();
            txt = (*b)->getResult(0);
            return llvm::Error::success();
          })
      .loadStream(stream::Img)
      .output("img")
      .loadStream(stream::Txt)
      .output("txt");
  TensorMap w("no weights");
  auto built = f.build(w);
  ASSERT_TRUE(static_cast<bool>(built)) << llvm::toString(built.takeError());
  Session session;
  auto model = session.compile(*built, CompileOptions());
  ASSERT_TRUE(static_cast<bool>(model)) << llvm::toString(model.takeError());
  ASSERT_FALSE(static_cast<bool>(model->loadParams(w)));
  std::vector<float> img(T * H), txt(T * H);
  for (int64_t i = 0; i < T * H; ++i) {
    img[i] = 0.5f * i;
    txt[i] = 1.0f - i;
  }
  TensorMap_t in;
  in.emplace("image", Tensor::fromF32({1, T, H}, img));
  in.emplace("text", Tensor::fromF32({1, T, H}, txt));
  auto out = model->run(in);
  ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
  auto gotImg = out->at("img").data<float>();
  auto gotTxt = out->at("txt").data<float>();
  for (int64_t i = 0; i < T * H; ++i) {
    EXPECT_FLOAT_EQ(gotImg[i], img[i] + txt[i]);
    EXPECT_FLOAT_EQ(gotTxt[i], txt[i] + img[i] + txt[i]);
  }
}

TEST(Flow, StreamErrorsNameTheStream) {
  TensorMap w("no weights");
  ModelFlow a("a");
  a.input("x", {1, 2}, DType::F32).storeStream("main").loadStream("img");
  auto built = a.build(w);
  ASSERT_FALSE(static_cast<bool>(built));
  EXPECT_EQ(llvm::toString(built.takeError()),
            "loadStream: no stream 'img' (streams: main)");
  ModelFlow b("b");
  b.input("x", {1, 2}, DType::F32).bindInputsToStreams({{"y", "txt"}});
  built = b.build(w);
  ASSERT_FALSE(static_cast<bool>(built));
  EXPECT_NE(llvm::toString(built.takeError()).find("'y'"), std::string::npos);
  ModelFlow c("c");
  c.input("x", {1, 2}, DType::F32)
      .storeStream("img")
      .dualStream("joint", "img", "txt",
                  [](Emitter &, mlir::Value &, mlir::Value &) {
                    return llvm::Error::success();
                  });
  built = c.build(w);
  ASSERT_FALSE(static_cast<bool>(built));
  EXPECT_EQ(llvm::toString(built.takeError()),
            "dual stream 'joint': dualStream: no stream 'txt' (streams: img)");
}

/// A plugin defined here, outside lib/: registered by name, placed in a flow
/// with its JSON arguments, built and run; an unknown name lists the
/// registered plugins; a plugin's own error names it.
TEST(Flow, PluginDefinedOutsideRLXBuildsAndRuns) {
  ASSERT_FALSE(static_cast<bool>(PluginRegistry::global().add(
      "test.scale",
      [](Emitter &e, const llvm::json::Object &args) -> llvm::Error {
        std::optional<double> by = args.getNumber("by");
        if (!by)
          return e.fail("needs a number 'by'");
        mlir::Value x = e.current();
        int64_t h = e.shape(x).back();
        auto g = e.synthParam("test.scale.by", {h},
                              std::vector<float>(h, static_cast<float>(*by)));
        if (!g)
          return g.takeError();
        auto y = e.create("hir.layer_scale", x.getType(), {x, *g});
        if (!y)
          return y.takeError();
        e.setCurrent((*y)->getResult(0));
        return llvm::Error::success();
      })));
  auto again = PluginRegistry::global().add(
      "test.scale", [](Emitter &, const llvm::json::Object &) {
        return llvm::Error::success();
      });
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_NE(llvm::toString(std::move(again)).find("registered already"),
            std::string::npos);

  TensorMap w("no weights");
  ModelFlow f("plugged");
  f.input("x", {1, 2, 4}, DType::F32)
      .plugin("test.scale", llvm::json::Object{{"by", 3.0}})
      .output("y");
  auto built = f.build(w);
  ASSERT_TRUE(static_cast<bool>(built)) << llvm::toString(built.takeError());
  Session session;
  auto model = session.compile(*built, CompileOptions());
  ASSERT_TRUE(static_cast<bool>(model)) << llvm::toString(model.takeError());
  ASSERT_FALSE(static_cast<bool>(
      model->loadParams(WeightSourceStack({&w, built->synthesized.get()}))));
  TensorMap_t in;
  in.emplace("x", Tensor::fromF32({1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}));
  auto out = model->run(in);
  ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
  auto y = out->at("y").data<float>();
  for (int i = 0; i < 8; ++i)
    EXPECT_FLOAT_EQ(y[i], 3.0f * (i + 1));

  ModelFlow bad("bad");
  bad.input("x", {1, 2, 4}, DType::F32).plugin("test.scale");
  built = bad.build(w);
  ASSERT_FALSE(static_cast<bool>(built));
  EXPECT_EQ(llvm::toString(built.takeError()),
            "plugin 'test.scale': needs a number 'by'");
  ModelFlow unknown("unknown");
  unknown.input("x", {1, 2, 4}, DType::F32).plugin("test.nope");
  built = unknown.build(w);
  ASSERT_FALSE(static_cast<bool>(built));
  std::string msg = llvm::toString(built.takeError());
  EXPECT_NE(msg.find("plugin 'test.nope': no plugin is registered under this "
                     "name (registered: "),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("test.scale"), std::string::npos) << msg;
  EXPECT_TRUE(PluginRegistry::global().remove("test.scale"));
  EXPECT_FALSE(PluginRegistry::global().remove("test.scale"));
}

TEST(Flow, NamedScopeLabelsErrors) {
  TensorMap w("no weights");
  ModelFlow f("scoped");
  f.input("x", {1, 2}, DType::F32)
      .named("block 7", [](FlowContext &ctx) -> llvm::Error {
        Emitter e(ctx);
        return e.fail("broken");
      });
  auto built = f.build(w);
  ASSERT_FALSE(static_cast<bool>(built));
  EXPECT_EQ(llvm::toString(built.takeError()), "block 7: broken");
}
