//===- Flux.cpp - FLUX double-stream transformers -------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// diffusers' FluxTransformer2DModel as a flow: the conditioning vector
// (sinusoidal timestep embedding, optional guidance embedding, pooled text
// projection), the image and text streams, double-stream blocks through
// ModelFlow::dualStream, single-stream blocks on the joined stream, the
// final modulated norm and projection. The heavy ops are HIR blocks
// (hir.linear, hir.layer_norm, hir.attention, lowered and fused as every
// model's); the glue between them (chunks of the modulation, the
// concatenated tokens, per-axis RoPE) is MIR built in place.
//
//===----------------------------------------------------------------------===//

#include "RLX/Flow/Flux.h"
#include "EmitterOps.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"
#include "RLX/Support/FileIO.h"
#include "RLX/Support/Messages.h"
#include "RLX/Weights/JSON.h"
#include "RLX/Weights/WeightSource.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"
#include <cmath>

using namespace rlx;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using mlir::Value;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

//===----------------------------------------------------------------------===//
// Config
//===----------------------------------------------------------------------===//

Expected<FluxConfig> FluxConfig::fromJSON(StringRef text, StringRef file) {
  Expected<llvm::json::Value> parsed = parseJSON(text);
  if (!parsed)
    return fail(file + ": invalid JSON: " + toString(parsed.takeError()));
  const llvm::json::Object *o = parsed->getAsObject();
  if (!o)
    return fail(file + ": a config must be a JSON object");
  FluxConfig c;
  llvm::StringSet<> seen;
  std::optional<StringRef> cls = o->getString("_class_name");
  seen.insert("_class_name");
  if (!cls || *cls != "FluxTransformer2DModel")
    return fail(file + ": '_class_name' must be \"FluxTransformer2DModel\"" +
                (cls ? ", found \"" + echoed(*cls) + "\"" : std::string()));
  auto integer = [&](StringRef key, int64_t &out, bool nullable) -> Error {
    seen.insert(key);
    const llvm::json::Value *v = o->get(key);
    if (!v || (nullable && v->kind() == llvm::json::Value::Null))
      return Error::success();
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i <= 0 || *i > (1 << 20))
      return fail(file + ": '" + key + "' must be a positive integer");
    out = *i;
    return Error::success();
  };
  for (auto [key, field, nullable] :
       {std::tuple<StringRef, int64_t *, bool>{"patch_size", &c.patchSize,
                                               false},
        {"in_channels", &c.inChannels, false},
        {"out_channels", &c.outChannels, true},
        {"num_layers", &c.numLayers, false},
        {"num_single_layers", &c.numSingleLayers, false},
        {"attention_head_dim", &c.headDim, false},
        {"num_attention_heads", &c.numHeads, false},
        {"joint_attention_dim", &c.jointDim, false},
        {"pooled_projection_dim", &c.pooledDim, false}})
    if (Error err = integer(key, *field, nullable))
      return std::move(err);
  seen.insert("guidance_embeds");
  if (const llvm::json::Value *v = o->get("guidance_embeds")) {
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      return fail(file + ": 'guidance_embeds' must be true or false");
    c.guidance = *b;
  }
  seen.insert("axes_dims_rope");
  if (const llvm::json::Value *v = o->get("axes_dims_rope")) {
    const llvm::json::Array *a = v->getAsArray();
    if (!a || a->empty())
      return fail(file + ": 'axes_dims_rope' must be a list of even sizes");
    c.axesDims.clear();
    for (const llvm::json::Value &d : *a) {
      std::optional<int64_t> i = d.getAsInteger();
      if (!i || *i <= 0 || *i % 2)
        return fail(file + ": 'axes_dims_rope' must be a list of even sizes");
      c.axesDims.push_back(*i);
    }
  }
  int64_t sum = 0;
  for (int64_t d : c.axesDims)
    sum += d;
  if (sum != c.headDim)
    return fail(file + ": 'axes_dims_rope' sums to " + llvm::Twine(sum) +
                ", not attention_head_dim " + llvm::Twine(c.headDim));
  // diffusers' bookkeeping.
  for (StringRef key : {"_diffusers_version", "_name_or_path"})
    seen.insert(key);
  for (const auto &kv : *o)
    if (!seen.contains(kv.first))
      return fail(file + ": config key '" + echoed(kv.first) +
                  "' is not one RLX implements for FluxTransformer2DModel");
  return c;
}

//===----------------------------------------------------------------------===//
// Blocks
//===----------------------------------------------------------------------===//

namespace {
/// The FLUX blocks on one Emitter: HIR ops by name, MIR glue in place.
class FluxBuilder {
public:
  FluxBuilder(Emitter &e, const FluxConfig &cfg)
      : e(e), mb(e.builder(), e.loc()), cfg(cfg), d(cfg.inner()) {}

  /// `x · Wᵀ + b` for weight `prefix.weight` [out, in].
  Expected<Value> linear(Value x, StringRef prefix, int64_t out) {
    return emitterLinear(e, x, prefix, out, /*bias=*/true);
  }

  /// LayerNorm without affine parameters (eps 1e-6), as FLUX's norms.
  Expected<Value> layerNorm(Value x) {
    int64_t h = e.shape(x).back();
    auto ones = e.synthParam("flux.ones." + std::to_string(h), {h},
                             std::vector<float>(h, 1.0f));
    if (!ones)
      return ones.takeError();
    auto zeros = e.synthZeros("flux.zeros." + std::to_string(h), {h});
    if (!zeros)
      return zeros.takeError();
    Value operands[] = {x, *ones, *zeros};
    mlir::NamedAttribute attrs[] = {e.f32Attr("epsilon", 1e-6f)};
    auto op = e.create("hir.layer_norm", x.getType(), operands, attrs);
    if (!op)
      return op.takeError();
    return (*op)->getResult(0);
  }

  /// Chunk `i` of size d of a [B, n*d] modulation, as [B, 1, d].
  Value chunk(Value mod, int64_t i) {
    int64_t b = e.shape(mod)[0];
    return mb.reshape(mb.slice(mod, 1, i * d, d), {b, 1, d});
  }

  /// `x * (1 + scale) + shift` (adaptive LayerNorm modulation).
  Value modulate(Value x, Value scale, Value shift) {
    Value one = mb.scalar(1.0, mb.builder().getF32Type());
    return mb.add(mb.mul(x, mb.add(scale, one)), shift);
  }

  /// The modulation vectors of a block: linear(silu(temb)) in `n` chunks.
  Expected<std::vector<Value>> modulation(Value temb, StringRef prefix,
                                          int64_t n) {
    Value act = mb.activation(temb, mlir::rlx::Activation::Silu);
    auto mod = linear(act, prefix, n * d);
    if (!mod)
      return mod.takeError();
    std::vector<Value> parts;
    for (int64_t i = 0; i < n; ++i)
      parts.push_back(chunk(*mod, i));
    return parts;
  }

  /// Per-head RMSNorm of a [B, T, H*hd] projection with weight `key` [hd].
  Expected<Value> headNorm(Value x, StringRef key) {
    auto s = e.shape(x);
    auto w = e.param(key, {cfg.headDim});
    if (!w)
      return w.takeError();
    Value heads = mb.reshape(x, {s[0], s[1], cfg.numHeads, cfg.headDim});
    return mb.reshape(mb.rmsNorm(heads, *w, 1e-6f, false), s);
  }

  /// FLUX's RoPE: the head dim split between the id axes, each pair of
  /// channels rotated by its axis' position (interleaved pairs, theta
  /// 10000). `positions[a]` is [B, T] of axis a.
  Value rope(Value x, llvm::ArrayRef<Value> positions) {
    auto s = e.shape(x);
    int64_t h = cfg.numHeads;
    Value heads = mb.reshape(x, {s[0], s[1], h, cfg.headDim});
    llvm::SmallVector<Value> parts;
    int64_t offset = 0;
    for (auto [a, dim] : llvm::enumerate(cfg.axesDims)) {
      Value part =
          mb.reshape(mb.slice(heads, 3, offset, dim), {s[0], s[1], h * dim});
      part = mb.rope(part, positions[a], nullptr, dim, dim, 10000.0f,
                     mlir::rlx::RopeStyle::Interleaved);
      parts.push_back(mb.reshape(part, {s[0], s[1], h, dim}));
      offset += dim;
    }
    return mb.reshape(mb.concat(parts, 3), s);
  }

  /// Unmasked attention over [B, T, H*hd] tensors.
  Expected<Value> attention(Value q, Value k, Value v) {
    return emitterAttention(e, q, k, v, cfg.numHeads, cfg.numHeads, cfg.headDim,
                            /*causal=*/false);
  }

  /// q, k (normed) and v of `x` under `prefix` with the given projection
  /// and norm names.
  Expected<std::array<Value, 3>> qkv(Value x, StringRef prefix,
                                     llvm::ArrayRef<StringRef> proj,
                                     llvm::ArrayRef<StringRef> norms) {
    std::array<Value, 3> out;
    for (int i = 0; i < 3; ++i) {
      auto p = linear(x, (prefix + proj[i]).str(), d);
      if (!p)
        return p.takeError();
      out[i] = *p;
    }
    for (int i = 0; i < 2; ++i) {
      auto n = headNorm(out[i], (prefix + norms[i] + ".weight").str());
      if (!n)
        return n.takeError();
      out[i] = *n;
    }
    return out;
  }

  /// The GELU (tanh) feed-forward `prefix.net.0.proj` -> `prefix.net.2`.
  Expected<Value> feedForward(Value x, StringRef prefix) {
    auto h = linear(x, (prefix + ".net.0.proj").str(), 4 * d);
    if (!h)
      return h.takeError();
    return linear(mb.activation(*h, mlir::rlx::Activation::GeluTanh),
                  (prefix + ".net.2").str(), d);
  }

  Emitter &e;
  mlir::rlx::MIRBuilder mb;
  const FluxConfig &cfg;
  int64_t d;
};
} // namespace

/// The sinusoidal timestep embedding of diffusers' Timesteps(256,
/// flip_sin_to_cos=True, downscale_freq_shift=0): [cos(t f), sin(t f)] with
/// f = exp(-ln(10000) i / 128), computed in f32 as torch does.
static Value timestepProjection(FluxBuilder &fb, Value t) {
  constexpr int64_t half = 128;
  std::vector<float> freqs(half);
  for (int64_t i = 0; i < half; ++i)
    freqs[i] = std::exp(-std::log(10000.0f) * static_cast<float>(i) /
                        static_cast<float>(half));
  mlir::rlx::MIRBuilder &mb = fb.mb;
  auto ty = mlir::RankedTensorType::get({1, half}, mb.builder().getF32Type());
  Value f = mb.create("mir.constant", ty, {},
                      {mb.attr("value", mlir::DenseElementsAttr::get(
                                            ty, llvm::ArrayRef<float>(freqs)))})
                ->getResult(0);
  int64_t b = fb.e.shape(t)[0];
  Value angles = mb.mul(mb.reshape(t, {b, 1}), f);
  Value cos = mb.unary("mir.cos", angles), sin = mb.unary("mir.sin", angles);
  return mb.concat({cos, sin}, 1);
}

/// TimestepEmbedding: linear_2(silu(linear_1(x))).
static Expected<Value> embedMlp(FluxBuilder &fb, Value x, StringRef prefix) {
  auto h = fb.linear(x, (prefix + ".linear_1").str(), fb.d);
  if (!h)
    return h.takeError();
  return fb.linear(fb.mb.activation(*h, mlir::rlx::Activation::Silu),
                   (prefix + ".linear_2").str(), fb.d);
}

/// The conditioning vector temb [B, D] into named value "temb".
static Error conditioning(Emitter &e, const FluxConfig &cfg) {
  FluxBuilder fb(e, cfg);
  Value thousand = fb.mb.scalar(1000.0, e.builder().getF32Type());
  auto embed = [&](StringRef input, StringRef prefix) -> Expected<Value> {
    Value t = fb.mb.mul(e.named(input), thousand);
    return embedMlp(fb, timestepProjection(fb, t), prefix);
  };
  auto temb = embed("timestep", "time_text_embed.timestep_embedder");
  if (!temb)
    return temb.takeError();
  Value c = *temb;
  if (cfg.guidance) {
    auto g = embed("guidance", "time_text_embed.guidance_embedder");
    if (!g)
      return g.takeError();
    c = fb.mb.add(c, *g);
  }
  auto pooled = embedMlp(fb, e.named("pooled_projections"),
                         "time_text_embed.text_embedder");
  if (!pooled)
    return pooled.takeError();
  e.setNamed("temb", fb.mb.add(c, *pooled));
  return Error::success();
}

/// The per-axis positions [B, T] of the joined sequence (text, then image).
static void positions(Emitter &e, const FluxConfig &cfg, int64_t batch) {
  mlir::rlx::MIRBuilder mb(e.builder(), e.loc());
  Value ids = mb.concat({e.named("txt_ids"), e.named("img_ids")}, 0);
  int64_t n = e.shape(ids)[0];
  for (size_t a = 0; a < cfg.axesDims.size(); ++a) {
    Value axis = mb.reshape(mb.slice(ids, 1, a, 1), {1, n});
    e.setNamed("flux.pos." + std::to_string(a), mb.broadcast(axis, {batch, n}));
  }
}

static std::vector<Value> namedPositions(Emitter &e, const FluxConfig &cfg) {
  std::vector<Value> pos;
  for (size_t a = 0; a < cfg.axesDims.size(); ++a)
    pos.push_back(e.named("flux.pos." + std::to_string(a)));
  return pos;
}

/// One double-stream block on the image stream `x` and the text stream `c`.
static Error doubleBlock(Emitter &e, const FluxConfig &cfg, unsigned index,
                         Value &x, Value &c) {
  FluxBuilder fb(e, cfg);
  mlir::rlx::MIRBuilder &mb = fb.mb;
  std::string p = "transformer_blocks." + std::to_string(index) + ".";
  Value temb = e.named("temb");
  auto m = fb.modulation(temb, p + "norm1.linear", 6);
  if (!m)
    return m.takeError();
  auto cm = fb.modulation(temb, p + "norm1_context.linear", 6);
  if (!cm)
    return cm.takeError();
  // [0..5]: shift, scale, gate of the attention; shift, scale, gate of
  // the MLP.
  auto nx = fb.layerNorm(x);
  auto nc = fb.layerNorm(c);
  if (!nx || !nc)
    return llvm::joinErrors(nx.takeError(), nc.takeError());
  auto img = fb.qkv(fb.modulate(*nx, (*m)[1], (*m)[0]), p + "attn.",
                    {"to_q", "to_k", "to_v"}, {"norm_q", "norm_k"});
  if (!img)
    return img.takeError();
  auto txt = fb.qkv(fb.modulate(*nc, (*cm)[1], (*cm)[0]), p + "attn.",
                    {"add_q_proj", "add_k_proj", "add_v_proj"},
                    {"norm_added_q", "norm_added_k"});
  if (!txt)
    return txt.takeError();
  // Joint attention over [text; image].
  std::vector<Value> pos = namedPositions(e, cfg);
  Value q = fb.rope(mb.concat({(*txt)[0], (*img)[0]}, 1), pos);
  Value k = fb.rope(mb.concat({(*txt)[1], (*img)[1]}, 1), pos);
  Value v = mb.concat({(*txt)[2], (*img)[2]}, 1);
  auto attn = fb.attention(q, k, v);
  if (!attn)
    return attn.takeError();
  int64_t nt = e.shape(c)[1], ni = e.shape(x)[1];
  auto xa = fb.linear(mb.slice(*attn, 1, nt, ni), p + "attn.to_out.0", fb.d);
  auto ca = fb.linear(mb.slice(*attn, 1, 0, nt), p + "attn.to_add_out", fb.d);
  if (!xa || !ca)
    return llvm::joinErrors(xa.takeError(), ca.takeError());
  // Each stream: gated attention residual, modulated norm, gated MLP.
  auto stream = [&](Value s, Value a, const std::vector<Value> &mod,
                    StringRef ff) -> Expected<Value> {
    s = mb.add(s, mb.mul(mod[2], a));
    auto n = fb.layerNorm(s);
    if (!n)
      return n.takeError();
    auto f = fb.feedForward(fb.modulate(*n, mod[4], mod[3]), ff);
    if (!f)
      return f.takeError();
    return mb.add(s, mb.mul(mod[5], *f));
  };
  auto x2 = stream(x, *xa, *m, p + "ff");
  if (!x2)
    return x2.takeError();
  auto c2 = stream(c, *ca, *cm, p + "ff_context");
  if (!c2)
    return c2.takeError();
  x = *x2;
  c = *c2;
  return Error::success();
}

/// One single-stream block on the joined stream.
static Expected<Value> singleBlock(Emitter &e, const FluxConfig &cfg,
                                   unsigned index, Value h) {
  FluxBuilder fb(e, cfg);
  mlir::rlx::MIRBuilder &mb = fb.mb;
  std::string p = "single_transformer_blocks." + std::to_string(index) + ".";
  auto m = fb.modulation(e.named("temb"), p + "norm.linear", 3);
  if (!m)
    return m.takeError();
  auto n = fb.layerNorm(h);
  if (!n)
    return n.takeError();
  Value nh = fb.modulate(*n, (*m)[1], (*m)[0]);
  auto mlp = fb.linear(nh, p + "proj_mlp", 4 * fb.d);
  if (!mlp)
    return mlp.takeError();
  auto qkv =
      fb.qkv(nh, p + "attn.", {"to_q", "to_k", "to_v"}, {"norm_q", "norm_k"});
  if (!qkv)
    return qkv.takeError();
  std::vector<Value> pos = namedPositions(e, cfg);
  auto attn =
      fb.attention(fb.rope((*qkv)[0], pos), fb.rope((*qkv)[1], pos), (*qkv)[2]);
  if (!attn)
    return attn.takeError();
  Value act = mb.activation(*mlp, mlir::rlx::Activation::GeluTanh);
  auto out = fb.linear(mb.concat({*attn, act}, 2), p + "proj_out", fb.d);
  if (!out)
    return out.takeError();
  return mb.add(h, mb.mul((*m)[2], *out));
}

//===----------------------------------------------------------------------===//
// FluxFlow
//===----------------------------------------------------------------------===//

FluxFlow::FluxFlow(FluxConfig config) : cfg(std::move(config)) {}

Expected<FluxFlow> FluxFlow::fromModelDir(StringRef dir) {
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "config.json");
  Expected<std::unique_ptr<llvm::MemoryBuffer>> text = readRegularFile(path);
  if (!text)
    return text.takeError();
  auto cfg = FluxConfig::fromJSON((*text)->getBuffer(), path);
  if (!cfg)
    return cfg.takeError();
  return FluxFlow(std::move(*cfg));
}

FluxFlow &FluxFlow::shape(int64_t b, int64_t image, int64_t text) {
  batch = b;
  imageTokens = image;
  textTokens = text;
  return *this;
}

ModelFlow FluxFlow::flow() const {
  FluxConfig c = cfg;
  int64_t b = batch, ni = imageTokens, nt = textTokens, d = c.inner();
  ModelFlow f("flux");
  f.profileEncoder();
  f.input("hidden_states", {b, ni, c.inChannels}, DType::F32)
      .input("encoder_hidden_states", {b, nt, c.jointDim}, DType::F32)
      .input("pooled_projections", {b, c.pooledDim}, DType::F32)
      .input("timestep", {b}, DType::F32)
      .input("img_ids", {ni, 3}, DType::I32)
      .input("txt_ids", {nt, 3}, DType::I32);
  if (c.guidance)
    f.input("guidance", {b}, DType::F32);
  f.custom("conditioning",
           [c](Emitter &e) -> Error { return conditioning(e, c); });
  f.custom("positions", [c, b](Emitter &e) -> Error {
    positions(e, c, b);
    return Error::success();
  });
  f.bindInputsToStreams(
      {{"hidden_states", stream::Img}, {"encoder_hidden_states", stream::Txt}});
  // The image and text tokens in the model's width.
  f.loadStream(stream::Img)
      .linear("x_embedder", true)
      .storeStream(stream::Img)
      .loadStream(stream::Txt)
      .linear("context_embedder", true)
      .storeStream(stream::Txt);
  for (int64_t i = 0; i < c.numLayers; ++i)
    f.dualStream("transformer_blocks." + std::to_string(i), stream::Img,
                 stream::Txt, [c, i](Emitter &e, Value &x, Value &t) {
                   return doubleBlock(e, c, i, x, t);
                 });
  // One stream from here: [text; image].
  f.dualStream("join", stream::Txt, stream::Img,
               [](Emitter &e, Value &t, Value &x) -> Error {
                 mlir::rlx::MIRBuilder mb(e.builder(), e.loc());
                 e.setStream(stream::Main, mb.concat({t, x}, 1));
                 return Error::success();
               });
  f.loadStream(stream::Main);
  for (int64_t i = 0; i < c.numSingleLayers; ++i)
    f.named("single_transformer_blocks." + std::to_string(i),
            [c, i](FlowContext &ctx) -> Error {
              Emitter e(ctx);
              auto h = singleBlock(e, c, i, e.current());
              if (!h)
                return h.takeError();
              e.setCurrent(*h);
              return Error::success();
            });
  // The image tokens, modulated by norm_out (scale, then shift) and
  // projected to the latent channels.
  f.custom("norm_out", [c, nt, ni, d](Emitter &e) -> Error {
    FluxBuilder fb(e, c);
    Value x = fb.mb.slice(e.current(), 1, nt, ni);
    auto m = fb.modulation(e.named("temb"), "norm_out.linear", 2);
    if (!m)
      return m.takeError();
    auto n = fb.layerNorm(x);
    if (!n)
      return n.takeError();
    e.setCurrent(fb.modulate(*n, (*m)[0], (*m)[1]));
    (void)d;
    return Error::success();
  });
  f.linear("proj_out", true).output("sample");
  return f;
}

Expected<BuiltModel> FluxFlow::build(const WeightSource &weights) const {
  Expected<BuiltModel> built = flow().build(weights);
  if (!built)
    return built.takeError();
  if (Error err = checkAllWeightsRead(weights, *built, "the FLUX transformer"))
    return std::move(err);
  return built;
}
