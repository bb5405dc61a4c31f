//===- Config.cpp - Hugging Face model configurations ---------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Flow/Config.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/JSON.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cmath>

using namespace rlx;
namespace json = llvm::json;

static llvm::Error bad(llvm::StringRef file, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 file + ": " + msg);
}

/// The largest size a config may give: every product of two sizes stays in
/// 64 bits, and per-layer loops stay short. No real model comes near.
static constexpr int64_t kMaxSize = INT32_MAX;
static constexpr int64_t kMaxLayers = 4096;

static int64_t maxFor(llvm::StringRef key) {
  return key == "num_hidden_layers" ? kMaxLayers : kMaxSize;
}

llvm::Expected<TransformerConfig>
TransformerConfig::fromJSON(llvm::StringRef text, llvm::StringRef fileName) {
  llvm::Expected<json::Value> parsed = parseJSON(text);
  if (!parsed)
    return bad(fileName, "invalid JSON: " + llvm::toString(parsed.takeError()));
  const json::Object *o = parsed->getAsObject();
  if (!o)
    return bad(fileName, "a config must be a JSON object");
  TransformerConfig c;
  if (auto t = o->getString("model_type"))
    c.modelType = t->str();
  else
    return bad(fileName, "missing 'model_type'");

  // Integer fields: required ones must be positive integers.
  auto integer = [&](llvm::StringRef key, int64_t &out,
                     bool required) -> llvm::Error {
    const json::Value *v = o->get(key);
    if (!v || v->kind() == json::Value::Null) {
      if (required)
        return bad(fileName, "missing '" + key + "'");
      return llvm::Error::success();
    }
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i <= 0)
      return bad(fileName, "'" + key + "' must be a positive integer");
    if (*i > maxFor(key))
      return bad(fileName, "'" + key + "' = " + llvm::Twine(*i) +
                               " is larger than " + llvm::Twine(maxFor(key)));
    out = *i;
    return llvm::Error::success();
  };
  auto number = [&](llvm::StringRef key, double &out) -> llvm::Error {
    const json::Value *v = o->get(key);
    if (!v || v->kind() == json::Value::Null)
      return llvm::Error::success();
    std::optional<double> d = v->getAsNumber();
    if (!d)
      return bad(fileName, "'" + key + "' must be a number");
    out = *d;
    return llvm::Error::success();
  };
  bool bert = c.modelType == "bert";
  for (auto [key, field, required] :
       {std::tuple<llvm::StringRef, int64_t *, bool>{"vocab_size", &c.vocabSize,
                                                     true},
        {"hidden_size", &c.hidden, true},
        {"intermediate_size", &c.intermediate, true},
        {"num_hidden_layers", &c.numLayers, true},
        {"num_attention_heads", &c.numHeads, true},
        {"num_key_value_heads", &c.numKvHeads, false},
        {"head_dim", &c.headDim, false},
        {"max_position_embeddings", &c.maxPositions, false},
        {"sliding_window", &c.slidingWindow, false},
        {"type_vocab_size", &c.typeVocabSize, false}})
    if (llvm::Error err = integer(key, *field, required))
      return std::move(err);
  if (!c.numKvHeads)
    c.numKvHeads = c.numHeads;
  if (!c.headDim)
    c.headDim = c.hidden / c.numHeads;
  if (c.numHeads % c.numKvHeads != 0)
    return bad(fileName, "num_key_value_heads (" + llvm::Twine(c.numKvHeads) +
                             ") must divide num_attention_heads (" +
                             llvm::Twine(c.numHeads) + ")");
  if (bert && c.hidden % c.numHeads != 0)
    return bad(fileName, "hidden_size must be a multiple of "
                         "num_attention_heads");
  if (llvm::Error err =
          number(bert ? "layer_norm_eps" : "rms_norm_eps", c.normEpsilon))
    return std::move(err);
  if (llvm::Error err = number("rope_theta", c.ropeTheta))
    return std::move(err);
  if (llvm::Error err = number("query_pre_attn_scalar", c.queryPreAttnScalar))
    return std::move(err);
  if (llvm::Error err = number("final_logit_softcapping", c.finalLogitSoftcap))
    return std::move(err);
  if (llvm::Error err = number("attn_logit_softcapping", c.attnLogitSoftcap))
    return std::move(err);
  if (auto tie = o->getBoolean("tie_word_embeddings"))
    c.tieEmbeddings = *tie;
  else
    c.tieEmbeddings = c.modelType == "gemma2";
  if (auto act = o->getString("hidden_act"))
    c.hiddenAct = act->str();
  if (auto act = o->getString("hidden_activation"))
    c.hiddenAct = act->str();

  // RoPE parameters: `rope_theta` + `rope_scaling` (transformers 4) or
  // `rope_parameters` (transformers 5).
  const json::Object *rope = o->getObject("rope_parameters");
  if (!rope)
    rope = o->getObject("rope_scaling");
  if (rope) {
    if (auto theta = rope->getNumber("rope_theta"))
      c.ropeTheta = *theta;
    auto type = rope->getString("rope_type");
    if (!type)
      type = rope->getString("type");
    if (type && *type == "llama3") {
      Llama3RopeScaling s;
      s.factor = rope->getNumber("factor").value_or(s.factor);
      s.lowFreqFactor =
          rope->getNumber("low_freq_factor").value_or(s.lowFreqFactor);
      s.highFreqFactor =
          rope->getNumber("high_freq_factor").value_or(s.highFreqFactor);
      s.originalMaxPositions =
          rope->getInteger("original_max_position_embeddings")
              .value_or(s.originalMaxPositions);
      c.llama3Scaling = s;
    } else if (type && *type != "default") {
      return bad(fileName, "unsupported rope_type '" + *type +
                               "' (supported: default, llama3)");
    }
  }

  // Gemma 2 alternates sliding-window (even) and global (odd) layers, or
  // lists them in `layer_types`.
  if (c.modelType == "gemma2") {
    if (const json::Array *types = o->getArray("layer_types")) {
      for (const json::Value &t : *types)
        c.slidingLayers.push_back(t.getAsString() &&
                                  *t.getAsString() == "sliding_attention");
    } else {
      for (int64_t i = 0; i < c.numLayers; ++i)
        c.slidingLayers.push_back(i % 2 == 0);
    }
    if (static_cast<int64_t>(c.slidingLayers.size()) != c.numLayers)
      return bad(fileName, "layer_types must have num_hidden_layers entries");
    if (!c.queryPreAttnScalar)
      c.queryPreAttnScalar = c.headDim;
  }
  return c;
}

llvm::Expected<TransformerConfig>
TransformerConfig::fromFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return bad(path, buffer.getError().message());
  return fromJSON((*buffer)->getBuffer(), path);
}

llvm::Expected<TransformerConfig>
TransformerConfig::fromGGUF(const GGUFFile &file) {
  llvm::Expected<LlamaGGUFConfig> g = LlamaGGUFConfig::fromGGUF(file);
  if (!g)
    return g.takeError();
  TransformerConfig c;
  c.modelType = "llama";
  c.vocabSize = g->vocabSize;
  c.hidden = g->hiddenSize;
  c.intermediate = g->intermediateSize;
  c.numLayers = g->numLayers;
  c.numHeads = g->numHeads;
  c.numKvHeads = g->numKVHeads;
  c.headDim = g->headDim();
  c.maxPositions = g->contextLength ? g->contextLength : 2048;
  c.normEpsilon = g->rmsNormEps;
  c.ropeTheta = g->ropeTheta;
  c.tieEmbeddings = !file.ggmlType("output.weight").has_value();
  for (auto [key, value] : {std::pair<llvm::StringRef, uint64_t>{
                                "token_embd.weight rows", g->vocabSize},
                            {"llama.embedding_length", g->hiddenSize},
                            {"llama.feed_forward_length", g->intermediateSize},
                            {"llama.block_count", g->numLayers},
                            {"llama.attention.head_count", g->numHeads},
                            {"llama.attention.head_count_kv", g->numKVHeads},
                            {"llama.context_length", g->contextLength}}) {
    uint64_t limit = key == "llama.block_count" ? kMaxLayers : kMaxSize;
    if (value > limit)
      return bad(file.description(), "'" + key + "' = " + llvm::Twine(value) +
                                         " is larger than " +
                                         llvm::Twine(limit));
  }
  return c;
}

std::vector<float> TransformerConfig::inverseFrequencies(int64_t rotary) const {
  std::vector<float> inv;
  for (int64_t i = 0; i < rotary; i += 2)
    inv.push_back(1.0f /
                  std::pow(static_cast<float>(ropeTheta),
                           static_cast<float>(i) / static_cast<float>(rotary)));
  if (!llama3Scaling)
    return inv;
  // transformers' _compute_llama3_parameters.
  const Llama3RopeScaling &s = *llama3Scaling;
  double lowWavelen = s.originalMaxPositions / s.lowFreqFactor;
  double highWavelen = s.originalMaxPositions / s.highFreqFactor;
  for (float &f : inv) {
    double wavelen = 2 * M_PI / f;
    if (wavelen > lowWavelen) {
      f = static_cast<float>(f / s.factor);
    } else if (wavelen >= highWavelen) {
      double smooth = (s.originalMaxPositions / wavelen - s.lowFreqFactor) /
                      (s.highFreqFactor - s.lowFreqFactor);
      f = static_cast<float>((1 - smooth) * f / s.factor + smooth * f);
    }
  }
  return inv;
}
