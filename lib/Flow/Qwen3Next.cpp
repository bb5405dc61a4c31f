//===- Qwen3Next.cpp - Hybrid Gated DeltaNet / attention LMs --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// transformers' Qwen3NextForCausalLM as a flow. Every layer is
// zero-centred RMSNorm (hir.gemma_rms_norm), a token mixer, the residual,
// the norm again and a mixture of experts with a shared expert
// (ModelFlow::moeMlp) or a dense SwiGLU MLP. The two token mixers are
// custom stages over HIR and MIR ops:
//
// - Gated DeltaNet: in_proj_qkvz / in_proj_ba (grouped per key head), a
//   causal depthwise convolution over the q/k/v channels with SiLU,
//   beta = sigmoid(b), g = -exp(A_log) * softplus(a + dt_bias), the gated
//   delta rule with l2-normalized q and k (mir.gated_delta_rule), a gated
//   RMSNorm by SiLU(z) and out_proj.
// - Gated attention: q_proj gives each head's query and an output gate,
//   zero-centred q/k RMSNorm per head, partial RoPE, causal attention,
//   times sigmoid(gate), o_proj.
//
//===----------------------------------------------------------------------===//

#include "RLX/Flow/Qwen3Next.h"
#include "EmitterOps.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Support/FileIO.h"
#include "RLX/Support/Messages.h"
#include "RLX/Weights/JSON.h"
#include "RLX/Weights/WeightSource.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

using namespace rlx;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using mlir::Value;
using mlir::rlx::Activation;
using mlir::rlx::MIRBuilder;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

//===----------------------------------------------------------------------===//
// Config
//===----------------------------------------------------------------------===//

Expected<Qwen3NextConfig> Qwen3NextConfig::fromJSON(StringRef text,
                                                    StringRef file) {
  Expected<TransformerConfig> base = TransformerConfig::fromJSON(text, file);
  if (!base)
    return base.takeError();
  if (base->modelType != "qwen3_next" && base->modelType != "qwen3_5_text")
    return fail(file + ": model_type '" + echoed(base->modelType) +
                "' is not qwen3_next or qwen3_5_text");
  Expected<llvm::json::Value> parsed = parseJSON(text);
  if (!parsed)
    return parsed.takeError();
  const llvm::json::Object &o = *parsed->getAsObject();
  Qwen3NextConfig c;
  c.base = std::move(*base);
  // Qwen3.5 projects q/k/v, z, b and a with separate matrices.
  c.separateProjections = c.base.modelType == "qwen3_5_text";
  TransformerConfig &b = c.base;
  llvm::StringSet<> read;
  auto integer = [&](StringRef key, int64_t &out, bool positive) -> Error {
    read.insert(key);
    const llvm::json::Value *v = o.get(key);
    if (!v || v->kind() == llvm::json::Value::Null)
      return Error::success();
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i < (positive ? 1 : 0) || *i > (1 << 24))
      return fail(file + ": '" + key + "' must be a " +
                  (positive ? "positive" : "non-negative") + " integer");
    out = *i;
    return Error::success();
  };
  auto boolean = [&](StringRef key, bool &out) -> Error {
    read.insert(key);
    const llvm::json::Value *v = o.get(key);
    if (!v)
      return Error::success();
    std::optional<bool> x = v->getAsBoolean();
    if (!x)
      return fail(file + ": '" + key + "' must be true or false");
    out = *x;
    return Error::success();
  };
  b.numExperts = 0;
  b.expertsPerToken = 0;
  int64_t sparseStep = 1;
  for (auto [key, field, positive] :
       {std::tuple<StringRef, int64_t *, bool>{"linear_conv_kernel_dim",
                                               &c.convKernel, true},
        {"linear_num_key_heads", &c.keyHeads, true},
        {"linear_num_value_heads", &c.valueHeads, true},
        {"linear_key_head_dim", &c.keyDim, true},
        {"linear_value_head_dim", &c.valueDim, true},
        {"num_experts", &b.numExperts, false},
        {"num_experts_per_tok", &b.expertsPerToken, false},
        {"moe_intermediate_size", &b.moeIntermediate, false},
        {"shared_expert_intermediate_size", &b.sharedExpertIntermediate, false},
        {"decoder_sparse_step", &sparseStep, true}})
    if (Error err = integer(key, *field, positive))
      return std::move(err);
  if (c.valueHeads % c.keyHeads != 0)
    return fail(file + ": linear_num_key_heads (" + llvm::Twine(c.keyHeads) +
                ") must divide linear_num_value_heads (" +
                llvm::Twine(c.valueHeads) + ")");
  b.normTopKProb = false;
  if (Error err = boolean("norm_topk_prob", b.normTopKProb))
    return std::move(err);
  if (Error err = boolean("attention_bias", c.attentionBias))
    return std::move(err);
  if (c.attentionBias)
    return fail(file + ": 'attention_bias' = true is not supported");
  if (b.numExperts > 0 &&
      (b.expertsPerToken < 1 || b.expertsPerToken > b.numExperts ||
       b.moeIntermediate < 1))
    return fail(file + ": a mixture of experts needs num_experts_per_tok in "
                       "[1, num_experts] and moe_intermediate_size");
  if (b.hiddenAct != "silu")
    return fail(file + ": 'hidden_act' = \"" + echoed(b.hiddenAct) +
                "\" is not supported (silu)");
  // RoPE: rope_parameters (or the legacy top-level keys).
  read.insert("rope_parameters");
  read.insert("partial_rotary_factor");
  const llvm::json::Object *rope = o.getObject("rope_parameters");
  const llvm::json::Object &ropeKeys = rope ? *rope : o;
  if (std::optional<double> theta = ropeKeys.getNumber("rope_theta"))
    b.ropeTheta = *theta;
  if (std::optional<double> f = ropeKeys.getNumber("partial_rotary_factor"))
    c.partialRotary = *f;
  if (rope)
    for (const auto &kv : *rope) {
      StringRef k = kv.first;
      if (k == "rope_type" && kv.second.getAsString() == "default")
        continue;
      // Qwen3.5's multimodal RoPE: text positions are the same on its
      // three axes, which makes it the plain RoPE of the same frequencies.
      if (c.separateProjections &&
          (k == "mrope_section" || k == "mrope_interleaved"))
        continue;
      if (k != "rope_theta" && k != "partial_rotary_factor")
        return fail(file + ": rope_parameters key '" + echoed(k) +
                    "' is not supported (rope_type \"default\" only)");
    }
  int64_t rot = static_cast<int64_t>(b.headDim * c.partialRotary);
  if (c.partialRotary <= 0 || c.partialRotary > 1 || rot % 2)
    return fail(file + ": partial_rotary_factor " +
                std::to_string(c.partialRotary) +
                " must give an even number of rotary channels of head_dim " +
                std::to_string(b.headDim));
  // Which layers are linear attention, which run experts.
  read.insert("layer_types");
  if (const llvm::json::Array *types = o.getArray("layer_types")) {
    if (static_cast<int64_t>(types->size()) != b.numLayers)
      return fail(file + ": 'layer_types' has " + llvm::Twine(types->size()) +
                  " entries for " + llvm::Twine(b.numLayers) + " layers");
    for (const llvm::json::Value &t : *types) {
      std::optional<StringRef> s = t.getAsString();
      if (!s || (*s != "linear_attention" && *s != "full_attention"))
        return fail(file + ": 'layer_types' entries must be "
                           "\"linear_attention\" or \"full_attention\"");
      c.linearLayers.push_back(*s == "linear_attention");
    }
  } else {
    // transformers' default: full attention every fourth layer.
    for (int64_t i = 0; i < b.numLayers; ++i)
      c.linearLayers.push_back((i + 1) % 4 != 0);
  }
  std::vector<int64_t> mlpOnly;
  read.insert("mlp_only_layers");
  if (const llvm::json::Array *a = o.getArray("mlp_only_layers"))
    for (const llvm::json::Value &v : *a) {
      std::optional<int64_t> i = v.getAsInteger();
      if (!i || *i < 0 || *i >= b.numLayers)
        return fail(file + ": 'mlp_only_layers' entries must be layer "
                           "indices");
      mlpOnly.push_back(*i);
    }
  for (int64_t i = 0; i < b.numLayers; ++i)
    b.moeLayers.push_back(b.numExperts > 0 && (i + 1) % sparseStep == 0 &&
                          !llvm::is_contained(mlpOnly, i));
  // Training-only router keys.
  for (StringRef key : {"output_router_logits", "router_aux_loss_coef"})
    read.insert(key);
  for (const std::string &key : b.unknownKeys)
    if (!read.contains(key))
      return fail(file + ": config key '" + echoed(key) +
                  "' is not one RLX implements for " + b.modelType);
  b.unknownKeys.clear();
  return c;
}

//===----------------------------------------------------------------------===//
// Token mixers
//===----------------------------------------------------------------------===//

/// softplus(x) = log(1 + exp(x)), x itself above 20 (torch's threshold).
static Value softplus(MIRBuilder &mb, Value x) {
  mlir::Type f32 = mb.builder().getF32Type();
  Value soft =
      mb.unary("mir.log", mb.add(mb.unary("mir.exp", x), mb.scalar(1.0, f32)));
  Value big = mb.compare(x, mb.scalar(20.0, f32), mlir::rlx::CmpPredicate::GT);
  return mb.select(big, x, soft);
}

/// Gated DeltaNet on the [B, T, H] input `x` of layer `index`. With
/// `stateful`, the convolution's last inputs and the recurrence's state come
/// from inputs conv_state.N / recurrent_state.N (else zeros); both leave as
/// named values present_conv_state.N / present_recurrent_state.N.
static Expected<Value> gatedDeltaNet(Emitter &e, const Qwen3NextConfig &c,
                                     int64_t index, Value x, bool stateful) {
  std::string p = "model.layers." + std::to_string(index) + ".";
  std::string n = std::to_string(index);
  MIRBuilder mb(e.builder(), e.loc());
  auto s = e.shape(x);
  int64_t bsz = s[0], t = s[1];
  int64_t nk = c.keyHeads, nv = c.valueHeads, r = nv / nk;
  int64_t dk = c.keyDim, dv = c.valueDim;
  int64_t keyWidth = nk * dk, valueWidth = nv * dv;
  std::string base = p + "linear_attn.";
  // [q; k; v] for the convolution, the output gate z, b and a.
  Value mixed, z, b, a;
  if (c.separateProjections) {
    // Qwen3.5: one matrix each.
    auto qkv = emitterLinear(e, x, base + "in_proj_qkv",
                             2 * keyWidth + valueWidth, false);
    auto zp = emitterLinear(e, x, base + "in_proj_z", valueWidth, false);
    auto bp = emitterLinear(e, x, base + "in_proj_b", nv, false);
    auto ap = emitterLinear(e, x, base + "in_proj_a", nv, false);
    for (auto *proj : {&qkv, &zp, &bp, &ap})
      if (!*proj)
        return proj->takeError();
    mixed = *qkv;
    z = mb.reshape(*zp, {bsz, t, nv, dv});
    b = *bp;
    a = *ap;
  } else {
    // Qwen3-Next: per key head, [q (dk), k (dk), v (r*dv), z (r*dv)] and
    // [b (r), a (r)].
    auto qkvz = emitterLinear(e, x, base + "in_proj_qkvz",
                              2 * keyWidth + 2 * valueWidth, false);
    if (!qkvz)
      return qkvz.takeError();
    auto ba = emitterLinear(e, x, base + "in_proj_ba", 2 * nv, false);
    if (!ba)
      return ba.takeError();
    Value grouped = mb.reshape(*qkvz, {bsz, t, nk, 2 * dk + 2 * r * dv});
    auto part = [&](Value g, int64_t start, int64_t size, int64_t width) {
      return mb.reshape(mb.slice(g, 3, start, size), {bsz, t, width});
    };
    Value q = part(grouped, 0, dk, keyWidth);
    Value k = part(grouped, dk, dk, keyWidth);
    Value v = part(grouped, 2 * dk, r * dv, valueWidth);
    z = mb.reshape(part(grouped, 2 * dk + r * dv, r * dv, valueWidth),
                   {bsz, t, nv, dv});
    Value gba = mb.reshape(*ba, {bsz, t, nk, 2 * r});
    b = part(gba, 0, r, nv);
    a = part(gba, r, r, nv);
    mixed = mb.concat({q, k, v}, 2);
  }
  Value beta = mb.unary("mir.sigmoid", b);
  // The causal depthwise convolution over [q; k; v], then SiLU.
  int64_t conv = 2 * keyWidth + valueWidth, kw = c.convKernel;
  auto w = e.param(base + "conv1d.weight", {conv, 1, kw});
  if (!w)
    return w.takeError();
  Value taps = mb.reshape(*w, {conv, kw});
  // The window: the previous kw - 1 inputs (the carried state, or zeros
  // before the first token), then these.
  Value padded;
  if (stateful) {
    padded = mb.concat({e.named("conv_state." + n), mixed}, 1);
  } else {
    mlir::OpBuilder &ob = e.builder();
    padded =
        mb.create("mir.pad", e.tensorType({bsz, t + kw - 1, conv}), {mixed},
                  {mb.attr("low", ob.getDenseI64ArrayAttr({0, kw - 1, 0})),
                   mb.attr("high", ob.getDenseI64ArrayAttr({0, 0, 0})),
                   mb.attr("value", ob.getF64FloatAttr(0))})
            ->getResult(0);
  }
  e.setNamed("present_conv_state." + n, mb.slice(padded, 1, t, kw - 1));
  Value sum;
  for (int64_t j = 0; j < kw; ++j) {
    Value tap = mb.reshape(mb.slice(taps, 1, j, 1), {conv});
    Value term = mb.mul(mb.slice(padded, 1, j, t), tap);
    sum = sum ? mb.add(sum, term) : term;
  }
  Value act = mb.activation(sum, Activation::Silu);
  Value cq = mb.reshape(mb.slice(act, 2, 0, keyWidth), {bsz, t, nk, dk});
  Value ck = mb.reshape(mb.slice(act, 2, keyWidth, keyWidth), {bsz, t, nk, dk});
  Value cv =
      mb.reshape(mb.slice(act, 2, 2 * keyWidth, valueWidth), {bsz, t, nv, dv});
  // g = -exp(A_log) * softplus(a + dt_bias).
  auto aLog = e.param(base + "A_log", {nv});
  auto dtBias = e.param(base + "dt_bias", {nv});
  if (!aLog || !dtBias)
    return llvm::joinErrors(aLog.takeError(), dtBias.takeError());
  Value decay = mb.unary("mir.neg", mb.unary("mir.exp", *aLog));
  Value g = mb.mul(decay, softplus(mb, mb.add(a, *dtBias)));
  auto outTy = e.tensorType({bsz, t, nv, dv});
  auto stateTy = e.tensorType({bsz, nv, dk, dv});
  llvm::SmallVector<Value, 6> operands = {cq, ck, cv, g, beta};
  if (stateful)
    operands.push_back(e.named("recurrent_state." + n));
  mlir::Operation *rule = mb.create("mir.gated_delta_rule", {outTy, stateTy},
                                    operands, {mb.unit("qk_l2norm")});
  e.setNamed("present_recurrent_state." + n, rule->getResult(1));
  // The gated RMSNorm: norm(out) * weight * silu(z), per value head.
  auto nw = e.param(base + "norm.weight", {dv});
  if (!nw)
    return nw.takeError();
  Value normed = mb.rmsNorm(rule->getResult(0), *nw,
                            static_cast<float>(c.base.normEpsilon), false);
  Value gated = mb.mul(normed, mb.activation(z, Activation::Silu));
  return emitterLinear(e, mb.reshape(gated, {bsz, t, valueWidth}),
                       base + "out_proj", s[2], false);
}

/// Gated full attention on the [B, T, H] input `x` of layer `index`. With
/// `stateful`, the keys and values of the past come from inputs past_k.N /
/// past_v.N; all of them leave as named values present_k.N / present_v.N.
static Expected<Value> gatedAttention(Emitter &e, const Qwen3NextConfig &c,
                                      int64_t index, Value x, bool stateful) {
  std::string p = "model.layers." + std::to_string(index) + ".";
  std::string n = std::to_string(index);
  MIRBuilder mb(e.builder(), e.loc());
  const TransformerConfig &b = c.base;
  auto s = e.shape(x);
  int64_t bsz = s[0], t = s[1], nh = b.numHeads, kv = b.numKvHeads,
          hd = b.headDim;
  float eps = static_cast<float>(b.normEpsilon);
  std::string base = p + "self_attn.";
  auto qg = emitterLinear(e, x, base + "q_proj", 2 * nh * hd, false);
  auto k = emitterLinear(e, x, base + "k_proj", kv * hd, false);
  auto v = emitterLinear(e, x, base + "v_proj", kv * hd, false);
  if (!qg || !k || !v)
    return llvm::joinErrors(qg.takeError(),
                            llvm::joinErrors(k.takeError(), v.takeError()));
  // Each head's q_proj rows: the query, then its gate.
  Value heads = mb.reshape(*qg, {bsz, t, nh, 2 * hd});
  Value gate = mb.reshape(mb.slice(heads, 3, hd, hd), {bsz, t, nh * hd});
  auto qn = e.param(base + "q_norm.weight", {hd});
  auto kn = e.param(base + "k_norm.weight", {hd});
  if (!qn || !kn)
    return llvm::joinErrors(qn.takeError(), kn.takeError());
  Value q = mb.reshape(mb.rmsNorm(mb.slice(heads, 3, 0, hd), *qn, eps, true),
                       {bsz, t, nh * hd});
  Value kh =
      mb.reshape(mb.rmsNorm(mb.reshape(*k, {bsz, t, kv, hd}), *kn, eps, true),
                 {bsz, t, kv * hd});
  Value pos = e.named("positions");
  int64_t rot = static_cast<int64_t>(hd * c.partialRotary);
  float theta = static_cast<float>(b.ropeTheta);
  q = mb.rope(q, pos, nullptr, hd, rot, theta, mlir::rlx::RopeStyle::Half);
  kh = mb.rope(kh, pos, nullptr, hd, rot, theta, mlir::rlx::RopeStyle::Half);
  Value keys = kh, values = *v;
  if (stateful) {
    keys = mb.concat({e.named("past_k." + n), kh}, 1);
    values = mb.concat({e.named("past_v." + n), *v}, 1);
  }
  e.setNamed("present_k." + n, keys);
  e.setNamed("present_v." + n, values);
  // Causal attention is bottom-right aligned: the new queries follow the
  // past. A bucketed decode step (one token) sees the keys kv_mask keeps.
  Expected<Value> attn =
      e.named("kv_mask")
          ? emitterMaskedAttention(e, q, keys, values, e.named("kv_mask"), nh,
                                   kv, hd)
          : emitterAttention(e, q, keys, values, nh, kv, hd, /*causal=*/true);
  if (!attn)
    return attn.takeError();
  Value out = mb.mul(*attn, mb.unary("mir.sigmoid", gate));
  return emitterLinear(e, out, base + "o_proj", s[2], false);
}

//===----------------------------------------------------------------------===//
// Qwen3NextFlow
//===----------------------------------------------------------------------===//

Qwen3NextFlow::Qwen3NextFlow(Qwen3NextConfig config) : cfg(std::move(config)) {}

Expected<Qwen3NextFlow> Qwen3NextFlow::fromModelDir(StringRef dir) {
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "config.json");
  Expected<std::unique_ptr<llvm::MemoryBuffer>> text = readRegularFile(path);
  if (!text)
    return text.takeError();
  auto cfg = Qwen3NextConfig::fromJSON((*text)->getBuffer(), path);
  if (!cfg)
    return cfg.takeError();
  return Qwen3NextFlow(std::move(*cfg));
}

Qwen3NextFlow &Qwen3NextFlow::profile(CompileProfile p) {
  userProfile = std::move(p);
  return *this;
}

ModelFlow Qwen3NextFlow::flow(int64_t tokens, int64_t past, bool masked) const {
  Qwen3NextConfig c = cfg;
  const TransformerConfig &b = c.base;
  float eps = static_cast<float>(b.normEpsilon);
  bool stateful = past >= 0;
  int64_t conv = 2 * c.keyHeads * c.keyDim + c.valueHeads * c.valueDim;
  ModelFlow f(stateful ? b.modelType + "_decode" : b.modelType);
  f.profile(userProfile.value_or(CompileProfile::llama32Prefill()));
  f.input("tokens", {1, tokens}, DType::I32)
      .input("positions", {1, tokens}, DType::I32);
  if (stateful && masked)
    f.input("kv_mask", {1, past + tokens}, DType::I32);
  // The carried state of each layer (decode): the convolution's last
  // inputs and the recurrence's state, or the past keys and values.
  std::vector<std::string> outputs;
  for (int64_t i = 0; i < b.numLayers; ++i) {
    std::string n = std::to_string(i);
    std::vector<std::pair<std::string, std::vector<int64_t>>> state;
    if (c.linearLayers[i])
      state = {
          {"conv_state." + n, {1, c.convKernel - 1, conv}},
          {"recurrent_state." + n, {1, c.valueHeads, c.keyDim, c.valueDim}}};
    else
      state = {{"past_k." + n, {1, past, b.numKvHeads * b.headDim}},
               {"past_v." + n, {1, past, b.numKvHeads * b.headDim}}};
    for (auto &[name, shape] : state) {
      if (stateful)
        f.input(name, shape, DType::F32);
      StringRef stem = name;
      stem.consume_front("past_");
      outputs.push_back("present_" + stem.str());
    }
  }
  f.tokenEmbed("model.embed_tokens.weight");
  for (int64_t i = 0; i < b.numLayers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    bool linear = c.linearLayers[i];
    f.residualSave()
        .gemmaRmsNorm(p + "input_layernorm.weight", eps)
        .custom(linear ? "gated_delta_net" : "gated_attention",
                [c, i, linear, stateful](Emitter &e) -> Error {
                  auto y = linear
                               ? gatedDeltaNet(e, c, i, e.current(), stateful)
                               : gatedAttention(e, c, i, e.current(), stateful);
                  if (!y)
                    return y.takeError();
                  e.setCurrent(*y);
                  return Error::success();
                })
        .residualAdd()
        .residualSave()
        .gemmaRmsNorm(p + "post_attention_layernorm.weight", eps);
    if (b.moeLayers[i]) {
      MoeSpec spec;
      spec.numExperts = b.numExperts;
      spec.expertsPerToken = b.expertsPerToken;
      spec.intermediate = b.moeIntermediate;
      spec.normTopKProb = b.normTopKProb;
      spec.sharedIntermediate = b.sharedExpertIntermediate;
      f.moeMlp(p + "mlp.", spec);
    } else {
      f.swigluHfMlp(p + "mlp.");
    }
    f.residualAdd();
  }
  f.gemmaRmsNorm("model.norm.weight", eps)
      .lmHead(b.tieEmbeddings)
      .output("logits");
  for (const std::string &name : outputs)
    f.output(name, name);
  return f;
}

Expected<BuiltModel> Qwen3NextFlow::build(const WeightSource &weights,
                                          int64_t tokens, int64_t past,
                                          bool masked) const {
  if (masked && (past < 0 || tokens != 1))
    return fail("a masked Qwen3-Next graph is a decode step: one token "
                "after a past of 0 or more");
  Expected<BuiltModel> built = flow(tokens, past, masked).build(weights);
  if (!built)
    return built.takeError();
  if (Error err = checkAllWeightsRead(weights, *built, "the Qwen3-Next model"))
    return std::move(err);
  return built;
}

//===----------------------------------------------------------------------===//
// Qwen3NextGenerator
//===----------------------------------------------------------------------===//

Expected<std::unique_ptr<Qwen3NextGenerator>>
Qwen3NextGenerator::create(Session &session, Qwen3NextFlow recipe,
                           const WeightSource &weights,
                           CompileOptions options) {
  std::unique_ptr<Qwen3NextGenerator> g(new Qwen3NextGenerator(
      session, std::move(recipe), weights, std::move(options)));
  // The bucket sizes of the decode steps are the prompt profile's.
  g->buckets = g->recipe.flow(1).getProfile().execution;
  return std::move(g);
}

Expected<CompiledModel *> Qwen3NextGenerator::graph(int64_t past,
                                                    int64_t count) {
  auto key = std::make_pair(past, count);
  auto it = graphs.find(key);
  if (it != graphs.end())
    return it->second.get();
  // The prompt graph (past -1) or a masked decode step.
  Expected<BuiltModel> built = recipe.build(weights, count, past, past >= 0);
  if (!built)
    return built.takeError();
  CompileOptions o = options;
  o.profile = built->profile;
  Expected<CompiledModel> model = session.compileString(built->mlir, o);
  if (!model)
    return model.takeError();
  auto compiled = std::make_unique<CompiledModel>(std::move(*model));
  if (pool) {
    if (Error err = compiled->shareParams(*pool))
      return std::move(err);
  } else {
    // The checkpoint and whatever the flow synthesized.
    WeightSourceStack source({&weights, built->synthesized.get()});
    if (Error err = compiled->loadParams(source))
      return std::move(err);
    pool = compiled.get();
  }
  return graphs.emplace(key, std::move(compiled)).first->second.get();
}

/// The last row of `[1, T, vocab]` logits.
static std::vector<float> lastRow(const Tensor &logits) {
  llvm::ArrayRef<float> all = logits.data<float>();
  int64_t vocab = logits.shape().back();
  return std::vector<float>(all.end() - vocab, all.end());
}

Expected<std::vector<int32_t>> Qwen3NextGenerator::generate(
    llvm::ArrayRef<int32_t> prompt, unsigned maxNewTokens,
    const SamplingOptions &sampling, std::function<void(int32_t)> onToken,
    llvm::ArrayRef<int32_t> stopTokens) {
  if (Error err = checkSamplingOptions(sampling))
    return std::move(err);
  const TransformerConfig &b = recipe.config().base;
  int64_t n = prompt.size();
  if (n == 0)
    return fail("the prompt is empty");
  if (n + maxNewTokens > b.maxPositions)
    return fail("prompt of " + llvm::Twine(n) + " tokens + " +
                llvm::Twine(maxNewTokens) +
                " new tokens exceeds max_position_embeddings " +
                llvm::Twine(b.maxPositions));
  for (int32_t id : prompt)
    if (id < 0 || id >= b.vocabSize)
      return fail("prompt token " + llvm::Twine(id) +
                  " is outside the vocabulary [0, " + llvm::Twine(b.vocabSize) +
                  ")");
  std::vector<int32_t> out;
  if (maxNewTokens == 0)
    return out;
  std::mt19937_64 rng(sampling.seed);
  // The prompt: its logits, each layer's state, the keys and values.
  Expected<CompiledModel *> first = graph(-1, n);
  if (!first)
    return first.takeError();
  std::vector<int32_t> pos(n);
  std::iota(pos.begin(), pos.end(), 0);
  TensorMap_t feeds;
  feeds.emplace("tokens", Tensor::fromI32({1, n}, prompt));
  feeds.emplace("positions", Tensor::fromI32({1, n}, pos));
  Expected<TensorMap_t> result = (*first)->run(feeds);
  if (!result)
    return result.takeError();
  int64_t kvWidth = b.numKvHeads * b.headDim;
  // The carried states by input name; the cached rows per attention layer.
  std::map<std::string, Tensor> state;
  std::map<std::string, std::vector<float>> cache;
  auto carry = [&](TensorMap_t &outputs, int64_t rowAt, int64_t rows) {
    for (auto &[name, tensor] : outputs) {
      StringRef stem = name;
      if (!stem.consume_front("present_"))
        continue;
      if (stem.starts_with("k.") || stem.starts_with("v.")) {
        // Rows [rowAt, rowAt + rows) of [1, P, kv] are the new ones.
        llvm::ArrayRef<float> all = tensor.data<float>();
        std::vector<float> &kept = cache[("past_" + stem).str()];
        kept.insert(kept.end(), all.begin() + rowAt * kvWidth,
                    all.begin() + (rowAt + rows) * kvWidth);
        continue;
      }
      state[stem.str()] = std::move(tensor);
    }
  };
  carry(*result, 0, n);
  std::vector<float> logits = lastRow(result->at("logits"));
  for (int64_t start = n;; ++start) {
    int32_t next = sampleToken(logits, sampling, rng);
    out.push_back(next);
    if (onToken)
      onToken(next);
    if (out.size() == maxNewTokens || llvm::is_contained(stopTokens, next))
      return out;
    // One token over the past rounded up to a bucket: the cached rows
    // first, the rest masked out, the new key last.
    int64_t past = buckets.pastBucket(start);
    Expected<CompiledModel *> step = graph(past, 1);
    if (!step)
      return step.takeError();
    TensorMap_t in;
    int32_t position = static_cast<int32_t>(start);
    in.emplace("tokens", Tensor::fromI32({1, 1}, {next}));
    in.emplace("positions", Tensor::fromI32({1, 1}, {position}));
    std::vector<int32_t> mask(past + 1, 0);
    std::fill(mask.begin(), mask.begin() + start, 1);
    mask.back() = 1;
    in.emplace("kv_mask", Tensor::fromI32({1, past + 1}, mask));
    for (auto &[name, rows] : cache) {
      std::vector<float> padded(past * kvWidth, 0.0f);
      std::copy(rows.begin(), rows.end(), padded.begin());
      in.emplace(name, Tensor::fromF32({1, past, kvWidth}, padded));
    }
    for (auto &[name, tensor] : state)
      in.emplace(name, tensor);
    Expected<TensorMap_t> r = (*step)->run(in);
    if (!r)
      return r.takeError();
    carry(*r, past, 1);
    logits = lastRow(r->at("logits"));
  }
}
