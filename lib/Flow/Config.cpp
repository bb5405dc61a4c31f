//===- Config.cpp - Hugging Face model configurations ---------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A config.json is read key by key: each key RLX uses is type-checked, each
// value RLX does not implement is refused by name, and what remains is either
// known not to change inference (dropout, generation defaults, labels...) or
// reported as unknown. docs/Checkpoints.md is the table of these keys.
//
//===----------------------------------------------------------------------===//

#include "RLX/Flow/Config.h"
#include "RLX/Support/FileIO.h"
#include "RLX/Support/Messages.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/JSON.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cmath>

using namespace rlx;
namespace json = llvm::json;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static Error bad(StringRef file, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 file + ": " + msg);
}

/// The largest size a config may give: every product of two sizes stays in
/// 64 bits, and per-layer loops stay short. No real model comes near.
static constexpr int64_t kMaxSize = INT32_MAX;
static constexpr int64_t kMaxLayers = 4096;

/// A value as JSON text for messages, cut at 60 characters.
static std::string render(const json::Value &v) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (v.kind() == json::Value::Number && !v.getAsInteger())
    os << llvm::format("%g", *v.getAsNumber());
  else
    os << v;
  if (text.size() > 60)
    text = text.substr(0, 57) + "...";
  return text;
}

/// Keys every transformers config may carry that do not change inference:
/// training settings, labels, generation defaults, bookkeeping.
static const llvm::StringSet<> &harmlessKeys() {
  static const llvm::StringSet<> keys = {
      "_name_or_path",
      "_attn_implementation_autoset",
      "add_cross_attention",
      "architectures",
      "attention_dropout",
      "attention_probs_dropout_prob",
      "bad_words_ids",
      "begin_suppress_tokens",
      "bos_token_id",
      "chunk_size_feed_forward",
      "classifier_dropout",
      "cross_attention_hidden_size",
      "decoder_start_token_id",
      "diversity_penalty",
      "do_sample",
      "dtype",
      "early_stopping",
      "embd_pdrop",
      "encoder_no_repeat_ngram_size",
      "eos_token_id",
      "exponential_decay_length_penalty",
      "finetuning_task",
      "forced_bos_token_id",
      "forced_eos_token_id",
      "gradient_checkpointing",
      "hidden_dropout_prob",
      "id2label",
      "initializer_range",
      "is_encoder_decoder",
      "label2id",
      "length_penalty",
      "max_length",
      "min_length",
      "no_repeat_ngram_size",
      "num_beam_groups",
      "num_beams",
      "num_labels",
      "num_return_sequences",
      "output_attentions",
      "output_hidden_states",
      "output_scores",
      "pad_token_id",
      "prefix",
      "pretraining_tp",
      "problem_type",
      "pruned_heads",
      "remove_invalid_values",
      "repetition_penalty",
      "resid_pdrop",
      "return_dict",
      "return_dict_in_generate",
      "sep_token_id",
      "suppress_tokens",
      "task_specific_params",
      "temperature",
      "tf_legacy_loss",
      "tie_encoder_decoder",
      "tokenizer_class",
      "top_k",
      "top_p",
      "torch_dtype",
      "torchscript",
      "transformers_version",
      "typical_p",
      "use_bfloat16",
      "use_cache",
  };
  return keys;
}

namespace {
/// Reads the keys of a config object with their JSON types checked, and
/// remembers which keys were read.
class ConfigReader {
public:
  /// `prefix` names a nested object in messages ("rope_parameters.").
  ConfigReader(const json::Object &o, StringRef file, StringRef prefix = "")
      : o(o), fileName(file), prefix(prefix) {}

  /// `key` quoted as messages name it.
  std::string name(StringRef key) const { return "'" + path(key) + "'"; }
  /// `key` with the prefix, unquoted.
  std::string path(StringRef key) const { return prefix + key.str(); }

  /// Whether `key` is given as JSON null.
  bool isNull(StringRef key) const {
    const json::Value *v = o.get(key);
    return v && v->kind() == json::Value::Null;
  }

  /// The value of `key`, or null when absent or JSON null.
  const json::Value *get(StringRef key) {
    seen.insert(key);
    const json::Value *v = o.get(key);
    return v && v->kind() != json::Value::Null ? v : nullptr;
  }

  Error fail(const llvm::Twine &msg) const { return bad(fileName, msg); }
  StringRef file() const { return fileName; }

  Error wrongType(StringRef key, const json::Value &v, StringRef want) const {
    return fail(name(key) + " must be " + want + ", found " + jsonKind(v) +
                " (" + render(v) + ")");
  }

  /// An integer in [1, max]; `required` ones must be present.
  Error integer(StringRef key, int64_t &out, bool required,
                int64_t max = kMaxSize) {
    const json::Value *v = get(key);
    if (!v)
      return required ? fail("missing " + name(key)) : Error::success();
    std::optional<int64_t> i = v->getAsInteger();
    if (!i)
      return wrongType(key, *v, "a positive integer");
    if (*i <= 0)
      return fail(name(key) + " must be a positive integer, found " +
                  llvm::Twine(*i));
    if (*i > max)
      return fail(name(key) + " = " + llvm::Twine(*i) + " is larger than " +
                  llvm::Twine(max));
    out = *i;
    return Error::success();
  }

  /// A finite number; `positive` ones must be > 0, others >= 0.
  Error number(StringRef key, double &out, bool positive) {
    const json::Value *v = get(key);
    if (!v)
      return Error::success();
    std::optional<double> d = v->getAsNumber();
    if (!d)
      return wrongType(key, *v, "a number");
    if (!std::isfinite(*d) || (positive ? *d <= 0 : *d < 0))
      return fail(name(key) + " must be " +
                  (positive ? "positive" : "non-negative") + ", found " +
                  render(*v));
    out = *d;
    return Error::success();
  }

  Error boolean(StringRef key, bool &out) {
    const json::Value *v = get(key);
    if (!v)
      return Error::success();
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      return wrongType(key, *v, "true or false");
    out = *b;
    return Error::success();
  }

  Error string(StringRef key, std::string &out) {
    const json::Value *v = get(key);
    if (!v)
      return Error::success();
    std::optional<StringRef> s = v->getAsString();
    if (!s)
      return wrongType(key, *v, "a string");
    out = s->str();
    return Error::success();
  }

  /// Refuses `key` unless it is absent or equal to `allowed` (JSON text),
  /// naming what RLX supports.
  Error only(StringRef key, StringRef allowed, StringRef what) {
    const json::Value *v = get(key);
    if (!v || render(*v) == allowed)
      return Error::success();
    return fail(name(key) + " = " + render(*v) + " is not supported (" + what +
                ")");
  }

  /// The keys not read and not known to be harmless.
  std::vector<std::string> unknown() const {
    std::vector<std::string> keys;
    for (const auto &kv : o) {
      StringRef k = kv.first;
      if (!seen.contains(k) && !harmlessKeys().contains(k))
        keys.push_back(k.str());
    }
    llvm::sort(keys);
    return keys;
  }

private:
  const json::Object &o;
  StringRef fileName;
  std::string prefix;
  llvm::StringSet<> seen;
};
} // namespace

/// transformers' activation names (ACT2FN) mapped to RLX's activations;
/// empty for the ones RLX does not implement (prelu and xielu: modules with
/// learned parameters in the state dict).
static StringRef activationFor(StringRef act) {
  return llvm::StringSwitch<StringRef>(act)
      .Cases({"silu", "swish"}, "silu")
      .Cases({"gelu", "gelu_python"}, "gelu")
      // The same tanh approximation, computed differently.
      .Cases({"gelu_new", "gelu_pytorch_tanh", "gelu_python_tanh", "gelu_fast",
              "gelu_accurate"},
             "gelu_tanh")
      .Case("relu", "relu")
      .Case("sigmoid", "sigmoid")
      .Case("tanh", "tanh")
      .Case("linear", "none")
      // RLX's names are transformers' for the rest.
      .Cases({"quick_gelu", "relu2", "relu6", "leaky_relu", "mish", "gelu_10",
              "laplace", "hardswish", "sqrtsoftplus"},
             act)
      .Default("");
}

static constexpr const char *kSupportedActivations =
    "supported: silu, swish, gelu, gelu_python, gelu_new, gelu_pytorch_tanh, "
    "gelu_python_tanh, gelu_fast, gelu_accurate, gelu_10, quick_gelu, relu, "
    "relu2, relu6, leaky_relu, mish, laplace, hardswish, sqrtsoftplus, "
    "sigmoid, tanh, linear; not prelu or xielu, which carry learned "
    "parameters RLX does not read yet";

/// The model types with a recipe, for messages.
static constexpr const char *kModelTypes =
    "llama, mistral, qwen2, qwen3, gemma2, gemma3_text, phi3, mixtral, "
    "qwen2_moe, qwen3_moe, bert, vit, dinov2, dinov2_with_registers";

static Error readRopeFields(ConfigReader &rr, TransformerConfig &c);

/// transformers' get_mscale.
static double yarnMscale(double scale, double mscale = 1) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

/// rope_type "yarn" (transformers' _compute_yarn_parameters).
static Error readYarn(ConfigReader &rr, TransformerConfig &c) {
  YarnRopeScaling y;
  if (Error err = rr.integer("original_max_position_embeddings",
                             y.originalMaxPositions, true))
    return err;
  y.factor = 0;
  if (Error err = rr.number("factor", y.factor, true))
    return err;
  if (!y.factor)
    y.factor = static_cast<double>(c.maxPositions) / y.originalMaxPositions;
  double attention = 0, mscale = 0, mscaleAllDim = 0;
  for (auto [key, out] :
       {std::pair<StringRef, double *>{"attention_factor", &attention},
        {"mscale", &mscale},
        {"mscale_all_dim", &mscaleAllDim},
        {"beta_fast", &y.betaFast},
        {"beta_slow", &y.betaSlow}})
    if (Error err = rr.number(key, *out, true))
      return err;
  if (Error err = rr.boolean("truncate", y.truncate))
    return err;
  if (!attention)
    attention = mscale && mscaleAllDim ? yarnMscale(y.factor, mscale) /
                                             yarnMscale(y.factor, mscaleAllDim)
                                       : yarnMscale(y.factor);
  c.ropeAttentionFactor = attention;
  c.yarnScaling = y;
  return Error::success();
}

/// rope_type "longrope" (Phi-3): the short factors, up to
/// original_max_position_embeddings.
static Error readLongrope(ConfigReader &rr, TransformerConfig &c) {
  int64_t original = 0;
  if (Error err =
          rr.integer("original_max_position_embeddings", original, true))
    return err;
  auto factors = [&](StringRef key, std::vector<float> &out) -> Error {
    const json::Value *v = rr.get(key);
    if (!v)
      return rr.fail("missing " + rr.name(key));
    const json::Array *a = v->getAsArray();
    if (!a)
      return rr.wrongType(key, *v, "an array of numbers");
    for (const json::Value &f : *a) {
      std::optional<double> d = f.getAsNumber();
      if (!d || !(*d > 0) || !std::isfinite(*d))
        return rr.fail(rr.name(key) + " must hold positive numbers, found " +
                       render(f));
      out.push_back(static_cast<float>(*d));
    }
    if (static_cast<int64_t>(out.size()) != c.headDim / 2)
      return rr.fail(rr.name(key) + " has " + llvm::Twine(out.size()) +
                     " factors for " + llvm::Twine(c.headDim / 2) +
                     " frequencies (head_dim / 2)");
    return Error::success();
  };
  std::vector<float> shortFactors, longFactors;
  if (Error err = factors("short_factor", shortFactors))
    return err;
  if (Error err = factors("long_factor", longFactors))
    return err;
  double factor = 0, attention = 0;
  if (Error err = rr.number("factor", factor, true))
    return err;
  if (Error err = rr.number("attention_factor", attention, true))
    return err;
  if (!factor)
    factor = static_cast<double>(c.maxPositions) / original;
  if (!attention)
    attention =
        factor <= 1
            ? 1.0
            : std::sqrt(1 + std::log(factor) / std::log(double(original)));
  c.ropeAttentionFactor = attention;
  c.longropeShortFactors = std::move(shortFactors);
  // Beyond it transformers switches every position to the long factors.
  c.maxPositions = std::min(c.maxPositions, original);
  return Error::success();
}
static Error readRopePerLayerType(ConfigReader &r, TransformerConfig &c);

/// Reads `rope_parameters` (transformers 5) or `rope_scaling`.
static Error readRope(ConfigReader &r, TransformerConfig &c) {
  const json::Value *v = r.get("rope_parameters");
  StringRef key = "rope_parameters";
  if (const json::Value *old = r.get("rope_scaling");
      old && old->kind() != json::Value::Null) {
    // transformers 5 writes both, the same; an older rope_scaling edited
    // beside them would otherwise be ignored.
    if (v && *v != *old)
      return r.fail("'rope_scaling' = " + render(*old) +
                    " disagrees with 'rope_parameters' = " + render(*v) +
                    " (give one, or both the same)");
    v = old;
    key = "rope_scaling";
  }
  if (!v)
    return Error::success();
  const json::Object *rope = v->getAsObject();
  if (!rope)
    return r.wrongType(key, *v, "an object");
  ConfigReader rr(*rope, r.file(), (key + ".").str());
  // Gemma 3 (transformers 5): one set of parameters per layer type.
  if (c.modelType == "gemma3_text" && rope->get("full_attention"))
    return readRopePerLayerType(rr, c);
  return readRopeFields(rr, c);
}

/// Gemma 3's `{"full_attention": {...}, "sliding_attention": {...}}`: the
/// global layers' RoPE may be scaled; the sliding layers' is plain RoPE with
/// its own theta.
static Error readRopePerLayerType(ConfigReader &r, TransformerConfig &c) {
  for (StringRef type : {"full_attention", "sliding_attention"}) {
    const json::Value *v = r.get(type);
    if (!v)
      return r.fail("missing " + r.name(type));
    const json::Object *o = v->getAsObject();
    if (!o)
      return r.wrongType(type, *v, "an object");
    ConfigReader rr(*o, r.file(), r.path(type) + ".");
    if (type == "full_attention") {
      if (Error err = readRopeFields(rr, c))
        return err;
      continue;
    }
    TransformerConfig local;
    local.ropeTheta = 10000.0;
    if (Error err = readRopeFields(rr, local))
      return err;
    if (local.scaledRope())
      return rr.fail("scaled RoPE on sliding-window layers is not supported");
    c.localRopeTheta = local.ropeTheta;
  }
  std::vector<std::string> unknown = r.unknown();
  if (!unknown.empty())
    return r.fail(r.name(unknown.front()) + " is not a layer type (supported: "
                                            "full_attention, "
                                            "sliding_attention)");
  return Error::success();
}

/// The fields of one RoPE parameter object.
static Error readRopeFields(ConfigReader &rr, TransformerConfig &c) {
  if (Error err = rr.number("rope_theta", c.ropeTheta, true))
    return err;
  // `type` is the older spelling of `rope_type`.
  std::string type = "default";
  if (Error err = rr.string("type", type))
    return err;
  if (Error err = rr.string("rope_type", type))
    return err;
  if (type == "llama3") {
    Llama3RopeScaling s;
    int64_t original = s.originalMaxPositions;
    if (Error err = rr.number("factor", s.factor, true))
      return err;
    if (Error err = rr.number("low_freq_factor", s.lowFreqFactor, true))
      return err;
    if (Error err = rr.number("high_freq_factor", s.highFreqFactor, true))
      return err;
    if (Error err =
            rr.integer("original_max_position_embeddings", original, false))
      return err;
    s.originalMaxPositions = original;
    if (s.highFreqFactor <= s.lowFreqFactor)
      return rr.fail(rr.name("high_freq_factor") + " must be larger than " +
                     rr.name("low_freq_factor"));
    c.llama3Scaling = s;
  } else if (type == "linear") {
    if (Error err = rr.number("factor", c.ropeLinearFactor, true))
      return err;
  } else if (type == "dynamic") {
    // Dynamic NTK changes the frequencies only past max_position_embeddings,
    // which RLX's context never exceeds: within it, it is plain RoPE.
    double factor = 1;
    if (Error err = rr.number("factor", factor, true))
      return err;
  } else if (type == "yarn") {
    if (Error err = readYarn(rr, c))
      return err;
  } else if (type == "longrope") {
    if (Error err = readLongrope(rr, c))
      return err;
  } else if (type != "default") {
    return rr.fail(rr.name("rope_type") + " = \"" + echoed(type) +
                   "\" is not supported (supported: default, linear, "
                   "llama3, dynamic, yarn, longrope)");
  }
  // transformers 5 keeps Phi-3's partial_rotary_factor here.
  if (Error err = rr.only("partial_rotary_factor", "1",
                          "RoPE over the whole head only"))
    return err;
  // Keys of other RoPE types, or unknown ones, would change the frequencies.
  std::vector<std::string> unknown = rr.unknown();
  if (!unknown.empty())
    return rr.fail(rr.name(echoed(unknown.front())) +
                   " is not supported for rope_type '" + echoed(type) + "'");
  return Error::success();
}

/// Per-layer sliding windows: `layer_types` when given, else `standard`.
static Error readLayerTypes(ConfigReader &r, TransformerConfig &c,
                            llvm::function_ref<bool(int64_t)> standard) {
  c.slidingLayers.clear();
  if (const json::Value *v = r.get("layer_types")) {
    const json::Array *types = v->getAsArray();
    if (!types)
      return r.wrongType("layer_types", *v, "an array");
    for (const json::Value &t : *types) {
      std::optional<StringRef> s = t.getAsString();
      if (!s || (*s != "sliding_attention" && *s != "full_attention"))
        return r.fail("layer_types: " + render(t) +
                      " is not supported (supported: \"sliding_attention\", "
                      "\"full_attention\")");
      c.slidingLayers.push_back(*s == "sliding_attention");
    }
    if (static_cast<int64_t>(c.slidingLayers.size()) != c.numLayers)
      return r.fail(
          "layer_types has " + llvm::Twine(types->size()) +
          " entries for num_hidden_layers = " + llvm::Twine(c.numLayers));
  } else {
    for (int64_t i = 0; i < c.numLayers; ++i)
      c.slidingLayers.push_back(standard(i));
  }
  // Without a window every layer attends to the whole past.
  if (!c.slidingWindow)
    c.slidingLayers.assign(c.numLayers, false);
  return Error::success();
}

/// The keys of the mixture-of-experts families: Mixtral (every layer, the
/// picked probabilities renormalized) and Qwen2/3-MoE (mlp_only_layers and
/// decoder_sparse_step choose the layers; norm_topk_prob; Qwen2-MoE's shared
/// expert).
static Error readMoe(ConfigReader &r, TransformerConfig &c) {
  StringRef type = c.modelType;
  bool mixtral = type == "mixtral";
  if (!mixtral && type != "qwen2_moe" && type != "qwen3_moe")
    return Error::success();
  // transformers 5 writes Qwen's num_experts as num_local_experts.
  int64_t local = 0, experts = 0;
  if (Error err = r.integer("num_local_experts", local, mixtral))
    return err;
  if (!mixtral)
    if (Error err = r.integer("num_experts", experts, !local))
      return err;
  if (local && experts && local != experts)
    return r.fail("'num_experts' (" + llvm::Twine(experts) +
                  ") and 'num_local_experts' (" + llvm::Twine(local) +
                  ") disagree");
  c.numExperts = local ? local : experts;
  if (Error err = r.integer("num_experts_per_tok", c.expertsPerToken, true))
    return err;
  if (c.expertsPerToken > c.numExperts)
    return r.fail("'num_experts_per_tok' = " + llvm::Twine(c.expertsPerToken) +
                  " must be in [1, " + llvm::Twine(c.numExperts) +
                  "] (the number of experts)");
  // Training only: the router's noise and auxiliary loss.
  double unused = 0;
  bool flag = false;
  for (StringRef key : {"router_jitter_noise", "router_aux_loss_coef"})
    if (Error err = r.number(key, unused, /*positive=*/false))
      return err;
  if (Error err = r.boolean("output_router_logits", flag))
    return err;
  c.moeLayers.assign(c.numLayers, true);
  if (mixtral) {
    c.moeIntermediate = c.intermediate;
    c.normTopKProb = true;
    return Error::success();
  }
  if (Error err = r.integer("moe_intermediate_size", c.moeIntermediate, true))
    return err;
  if (Error err = r.boolean("norm_topk_prob", c.normTopKProb))
    return err;
  if (type == "qwen2_moe") {
    c.sharedExpertIntermediate = 5632;
    if (Error err = r.integer("shared_expert_intermediate_size",
                              c.sharedExpertIntermediate, false))
      return err;
  }
  int64_t step = 1;
  if (Error err = r.integer("decoder_sparse_step", step, false, kMaxLayers))
    return err;
  std::vector<bool> denseOnly(c.numLayers, false);
  if (const json::Value *v = r.get("mlp_only_layers"); v && !v->getAsNull()) {
    const json::Array *layers = v->getAsArray();
    if (!layers)
      return r.wrongType("mlp_only_layers", *v, "an array of layer indices");
    for (const json::Value &l : *layers) {
      std::optional<int64_t> i = l.getAsInteger();
      if (!i || *i < 0 || *i >= c.numLayers)
        return r.fail("'mlp_only_layers' entry " + render(l) +
                      " is not a layer index in [0, " +
                      llvm::Twine(c.numLayers) + ")");
      denseOnly[*i] = true;
    }
  }
  for (int64_t i = 0; i < c.numLayers; ++i)
    c.moeLayers[i] = !denseOnly[i] && (i + 1) % step == 0;
  return Error::success();
}

/// The keys of the decoder families (LLaMA, Mistral, Qwen2/3, Gemma 2).
static Error readDecoder(ConfigReader &r, TransformerConfig &c) {
  StringRef type = c.modelType;
  bool gemma3 = type == "gemma3_text";
  bool gemma = type == "gemma2" || gemma3;
  if (Error err = r.number("rms_norm_eps", c.normEpsilon, true))
    return err;
  if (Error err = r.number("rope_theta", c.ropeTheta, true))
    return err;
  if (Error err = readRope(r, c))
    return err;
  // Gemma 3's sliding layers rotate with their own theta (the older
  // spelling; transformers 5 writes it in rope_parameters).
  if (gemma3 && !c.localRopeTheta) {
    c.localRopeTheta = 10000.0;
    if (Error err = r.number("rope_local_base_freq", c.localRopeTheta, true))
      return err;
  }
  if (Error err =
          r.only("partial_rotary_factor", "1", "RoPE over the whole head only"))
    return err;
  // Biases.
  if (type == "qwen2") {
    c.qkvBias = true;
  } else if (type == "qwen2_moe") {
    // Qwen2-MoE's q/k/v biases are a key of their own (on by default).
    c.qkvBias = true;
    if (Error err = r.boolean("qkv_bias", c.qkvBias))
      return err;
  } else if (type != "mistral" && type != "phi3" && type != "mixtral") {
    bool bias = false;
    if (Error err = r.boolean("attention_bias", bias))
      return err;
    c.qkvBias = c.outBias = bias;
  }
  if (type == "llama")
    if (Error err = r.boolean("mlp_bias", c.mlpBias))
      return err;
  // Sliding windows.
  // transformers' default window is 4096; `null` turns it off.
  auto window = [&]() -> Error {
    c.slidingWindow = r.isNull("sliding_window") ? 0 : 4096;
    return r.integer("sliding_window", c.slidingWindow, false);
  };
  // Qwen: the window applies under use_sliding_window only, and its value
  // (0 in some configs) is not read otherwise.
  auto useWindow = [&](bool use) -> Error {
    if (use)
      return window();
    (void)r.get("sliding_window");
    c.slidingWindow = 0;
    return Error::success();
  };
  if (gemma) {
    if (Error err = window())
      return err;
    // Gemma 2 alternates; Gemma 3 slides except every sixth layer.
    int64_t pattern = gemma3 ? 6 : 2;
    for (StringRef key : {"sliding_window_pattern", "_sliding_window_pattern"})
      if (Error err = r.integer(key, pattern, false, kMaxLayers))
        return err;
    if (gemma3 && pattern < 1)
      return r.fail("'sliding_window_pattern' must be positive");
    auto standard = [&](int64_t i) {
      return gemma3 ? (i + 1) % pattern != 0 : i % 2 == 0;
    };
    if (Error err = readLayerTypes(r, c, standard))
      return err;
    // transformers' default scalar is 256 for both.
    c.queryPreAttnScalar = 256;
    if (Error err = r.number("query_pre_attn_scalar", c.queryPreAttnScalar,
                             /*positive=*/true))
      return err;
    if (Error err = r.number("final_logit_softcapping", c.finalLogitSoftcap,
                             /*positive=*/false))
      return err;
    // transformers' Gemma 3 keeps the key but does not apply it.
    if (gemma3) {
      if (Error err = r.only("attn_logit_softcapping", "null",
                             "transformers' Gemma 3 does not apply it"))
        return err;
    } else if (Error err = r.number("attn_logit_softcapping",
                                    c.attnLogitSoftcap, /*positive=*/false)) {
      return err;
    }
    if (Error err = r.only("use_bidirectional_attention", "false",
                           "Gemma attention is causal"))
      return err;
  } else if (type == "mistral" || type == "phi3" || type == "mixtral") {
    // Phi-3's default is no window.
    if (type == "phi3" && !r.get("sliding_window")) {
      c.slidingWindow = 0;
    } else if (Error err = window()) {
      return err;
    }
    c.slidingLayers.assign(c.numLayers, c.slidingWindow > 0);
    // Used by longrope only (refused above).
    int64_t original = 0;
    if (type == "phi3")
      if (Error err =
              r.integer("original_max_position_embeddings", original, false))
        return err;
  } else if (type == "qwen3_moe") {
    // A window on every layer, under use_sliding_window only.
    bool use = false;
    if (Error err = r.boolean("use_sliding_window", use))
      return err;
    if (Error err = useWindow(use))
      return err;
    c.slidingLayers.assign(c.numLayers, c.slidingWindow > 0);
  } else if (type == "qwen2" || type == "qwen3" || type == "qwen2_moe") {
    bool use = false;
    int64_t from = 28;
    if (Error err = r.boolean("use_sliding_window", use))
      return err;
    if (Error err = useWindow(use))
      return err;
    if (Error err = r.integer("max_window_layers", from, false, kMaxLayers))
      return err;
    if (Error err =
            readLayerTypes(r, c, [from](int64_t i) { return i >= from; }))
      return err;
  }
  if (Error err = readMoe(r, c))
    return err;
  // The MLP's activation.
  StringRef actKey = gemma ? "hidden_activation" : "hidden_act";
  c.hiddenAct = gemma ? "gelu_pytorch_tanh" : "silu";
  if (Error err = r.string(actKey, c.hiddenAct))
    return err;
  return Error::success();
}

/// The keys of BERT.
static Error readBert(ConfigReader &r, TransformerConfig &c) {
  if (c.hidden % c.numHeads != 0)
    return r.fail("hidden_size (" + llvm::Twine(c.hidden) +
                  ") must be a multiple of num_attention_heads (" +
                  llvm::Twine(c.numHeads) + ")");
  c.normEpsilon = 1e-12;
  if (Error err = r.number("layer_norm_eps", c.normEpsilon, true))
    return err;
  if (Error err = r.integer("type_vocab_size", c.typeVocabSize, false))
    return err;
  if (Error err = r.only("position_embedding_type", "\"absolute\"",
                         "supported: \"absolute\""))
    return err;
  if (Error err = r.only("is_decoder", "false", "RLX builds BERT encoders"))
    return err;
  c.hiddenAct = "gelu";
  return r.string("hidden_act", c.hiddenAct);
}

bool TransformerConfig::isVision() const {
  return modelType == "vit" || modelType == "dinov2" ||
         modelType == "dinov2_with_registers";
}

/// The keys of ViT and DINOv2 (transformers' ViTConfig, Dinov2Config,
/// Dinov2WithRegistersConfig), with their defaults.
static Error readVision(ConfigReader &r, TransformerConfig &c) {
  bool vit = c.modelType == "vit";
  if (c.hidden % c.numHeads != 0)
    return r.fail("hidden_size (" + llvm::Twine(c.hidden) +
                  ") must be a multiple of num_attention_heads (" +
                  llvm::Twine(c.numHeads) + ")");
  c.normEpsilon = vit ? 1e-12 : 1e-6;
  if (Error err = r.number("layer_norm_eps", c.normEpsilon, true))
    return err;
  c.imageSize = 224;
  c.patchSize = vit ? 16 : 14;
  for (auto [key, field] :
       {std::pair<StringRef, int64_t *>{"image_size", &c.imageSize},
        {"patch_size", &c.patchSize},
        {"num_channels", &c.numChannels}})
    if (Error err = r.integer(key, *field, false, 1 << 16))
      return err;
  if (c.patchSize > c.imageSize)
    return r.fail("'patch_size' (" + llvm::Twine(c.patchSize) +
                  ") is larger than 'image_size' (" + llvm::Twine(c.imageSize) +
                  ")");
  c.qkvBias = true;
  if (Error err = r.boolean("qkv_bias", c.qkvBias))
    return err;
  c.hiddenAct = "gelu";
  if (Error err = r.string("hidden_act", c.hiddenAct))
    return err;
  if (vit) {
    // The intermediate size is required above; the pooler is read when the
    // checkpoint has one (ViTModel's add_pooling_layer).
    c.poolerSize = c.hidden;
    if (Error err = r.integer("pooler_output_size", c.poolerSize, false))
      return err;
    std::string act = "tanh";
    if (Error err = r.string("pooler_act", act))
      return err;
    c.poolerActivation = activationFor(act).str();
    if (c.poolerActivation.empty())
      return r.fail("'pooler_act' = \"" + echoed(act) +
                    "\" is not supported (" + kSupportedActivations + ")");
    // ViTForMaskedImageModeling's decoder only.
    r.get("encoder_stride");
    return Error::success();
  }
  // DINOv2: the MLP is mlp_ratio times the hidden size (intermediate_size,
  // which Dinov2Config also writes, is not read by the model).
  r.get("intermediate_size");
  double ratio = 4;
  if (Error err = r.number("mlp_ratio", ratio, true))
    return err;
  c.intermediate = static_cast<int64_t>(static_cast<double>(c.hidden) * ratio);
  if (Error err = r.boolean("use_swiglu_ffn", c.swigluFfn))
    return err;
  // Dinov2SwiGLUFFN keeps two thirds, rounded up to a multiple of 8.
  if (c.swigluFfn)
    c.intermediate =
        (static_cast<int64_t>(static_cast<double>(c.intermediate) * 2 / 3) +
         7) /
        8 * 8;
  if (c.intermediate <= 0)
    return r.fail("'mlp_ratio' = " + std::to_string(ratio) +
                  " leaves no MLP for hidden_size " + llvm::Twine(c.hidden));
  c.layerScale = true;
  if (c.modelType == "dinov2_with_registers") {
    c.numRegisters = 4;
    c.antialiasPositions = true;
    if (Error err = r.integer("num_register_tokens", c.numRegisters, false))
      return err;
  }
  // Initialization, training (stochastic depth) and masked-image
  // pretraining only; the backbone keys select Dinov2Backbone's outputs,
  // which Dinov2Model does not have.
  for (StringRef key : {"layerscale_value", "drop_path_rate", "use_mask_token",
                        "out_features", "out_indices", "stage_names",
                        "apply_layernorm", "reshape_hidden_states"})
    r.get(key);
  return Error::success();
}

llvm::Expected<TransformerConfig>
TransformerConfig::fromJSON(StringRef text, StringRef fileName) {
  // Some editors save config.json with a UTF-8 byte order mark.
  text.consume_front("\xEF\xBB\xBF");
  llvm::Expected<json::Value> parsed = parseJSON(text);
  if (!parsed)
    return bad(fileName, "invalid JSON: " + llvm::toString(parsed.takeError()));
  const json::Object *o = parsed->getAsObject();
  if (!o)
    return bad(fileName, "a config must be a JSON object");
  ConfigReader r(*o, fileName);
  TransformerConfig c;
  if (Error err = r.string("model_type", c.modelType))
    return std::move(err);
  if (c.modelType.empty())
    return bad(fileName, "missing 'model_type' (supported: " +
                             llvm::Twine(kModelTypes) + ")");
  bool bert = c.modelType == "bert";
  bool vision = c.isVision();
  bool decoder = llvm::is_contained({"llama", "mistral", "qwen2", "qwen3",
                                     "gemma2", "gemma3_text", "phi3", "mixtral",
                                     "qwen2_moe", "qwen3_moe"},
                                    c.modelType);
  if (r.get("quantization_config"))
    return bad(fileName, "'quantization_config' is not supported: RLX reads "
                         "unquantized safetensors, or quantized weights from "
                         "a GGUF file");

  // Image encoders have no vocabulary and no positions beyond their grid;
  // DINOv2 sizes its MLP by mlp_ratio.
  for (auto [key, field, required, max] :
       {std::tuple<StringRef, int64_t *, bool, int64_t>{
            "vocab_size", &c.vocabSize, !vision, kMaxSize},
        {"hidden_size", &c.hidden, true, kMaxSize},
        {"intermediate_size", &c.intermediate, !vision || c.modelType == "vit",
         kMaxSize},
        {"num_hidden_layers", &c.numLayers, true, kMaxLayers},
        {"num_attention_heads", &c.numHeads, true, kMaxSize},
        {"max_position_embeddings", &c.maxPositions, false, kMaxSize}}) {
    if (vision && (key == "vocab_size" || key == "max_position_embeddings" ||
                   (key == "intermediate_size" && c.modelType != "vit")))
      continue;
    if (Error err = r.integer(key, *field, required, max))
      return std::move(err);
  }
  if (!bert && !vision) {
    if (Error err = r.integer("num_key_value_heads", c.numKvHeads, false))
      return std::move(err);
    if (Error err = r.integer("head_dim", c.headDim, false))
      return std::move(err);
  }
  if (!c.numKvHeads)
    c.numKvHeads = c.numHeads;
  if (c.numHeads % c.numKvHeads != 0)
    return bad(fileName, "num_key_value_heads (" + llvm::Twine(c.numKvHeads) +
                             ") must divide num_attention_heads (" +
                             llvm::Twine(c.numHeads) + ")");
  if (!c.headDim) {
    if (c.hidden % c.numHeads != 0)
      return bad(fileName, "hidden_size (" + llvm::Twine(c.hidden) +
                               ") is not a multiple of num_attention_heads (" +
                               llvm::Twine(c.numHeads) +
                               ") and no head_dim is given");
    c.headDim = c.hidden / c.numHeads;
  }
  c.tieEmbeddings =
      c.modelType == "gemma2" || c.modelType == "gemma3_text" || bert;
  if (Error err = r.boolean("tie_word_embeddings", c.tieEmbeddings))
    return std::move(err);

  if (decoder) {
    if (Error err = readDecoder(r, c))
      return std::move(err);
  } else if (bert) {
    if (Error err = readBert(r, c))
      return std::move(err);
  } else if (vision) {
    if (Error err = readVision(r, c))
      return std::move(err);
  } else {
    // No recipe: the common keys only (decoderFlowFor refuses the type).
    if (Error err = r.number("rms_norm_eps", c.normEpsilon, true))
      return std::move(err);
    if (Error err = r.number("rope_theta", c.ropeTheta, true))
      return std::move(err);
    if (Error err = r.string("hidden_act", c.hiddenAct))
      return std::move(err);
  }
  if (!c.hiddenAct.empty()) {
    c.activation = activationFor(c.hiddenAct).str();
    if (c.activation.empty())
      return bad(fileName,
                 "'" +
                     llvm::Twine(StringRef(c.modelType).starts_with("gemma")
                                     ? "hidden_activation"
                                     : "hidden_act") +
                     "' = \"" + echoed(c.hiddenAct) + "\" is not supported (" +
                     kSupportedActivations + ")");
  }
  c.unknownKeys = r.unknown();
  return c;
}

llvm::Expected<TransformerConfig>
TransformerConfig::fromFile(llvm::StringRef path) {
  // A FIFO or a device would block or never end: regular files only.
  Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer = readRegularFile(path);
  if (!buffer)
    return buffer.takeError();
  return fromJSON((*buffer)->getBuffer(), path);
}

/// The keys of one architecture's GGUF, as llama.cpp reads them (its
/// defaults where the converter writes nothing); `used` receives them.
static Error readGGUFArchKeys(const GGUFFile &file, const LlamaGGUFConfig &g,
                              TransformerConfig &c, llvm::StringSet<> &used) {
  StringRef path = file.description();
  auto use = [&](StringRef k) {
    std::string key = g.key(k);
    used.insert(key);
    return key;
  };
  auto optionalUInt = [&](StringRef k, int64_t &out) -> Error {
    std::string key = use(k);
    if (!file.get(key))
      return Error::success();
    Expected<uint64_t> v = file.requireUInt(key);
    if (!v)
      return v.takeError();
    if (*v > kMaxSize)
      return bad(path, "'" + key + "' = " + llvm::Twine(*v) +
                           " is larger than " + llvm::Twine(kMaxSize));
    out = static_cast<int64_t>(*v);
    return Error::success();
  };
  auto optionalFloat = [&](StringRef k, double &out) -> Error {
    std::string key = use(k);
    if (!file.get(key))
      return Error::success();
    Expected<double> v = file.requireFloat(key);
    if (!v)
      return v.takeError();
    if (!(*v >= 0) || !std::isfinite(*v))
      return bad(path, "'" + key + "' must be a finite number >= 0");
    out = *v;
    return Error::success();
  };
  bool gemma3 = g.arch == "gemma3";
  if (g.arch == "gemma2" || gemma3) {
    // llama.cpp: 1/sqrt(head size), except the 27B models (46 / 62 layers),
    // which scale by 1/sqrt(hidden / heads); the converter keeps no
    // query_pre_attn_scalar.
    bool big = c.numLayers == (gemma3 ? 62 : 46);
    c.queryPreAttnScalar =
        big ? static_cast<double>(c.hidden / c.numHeads) : c.headDim;
    if (Error err = optionalUInt("attention.sliding_window", c.slidingWindow))
      return err;
    if (Error err =
            optionalFloat("final_logit_softcapping", c.finalLogitSoftcap))
      return err;
    double attnSoftcap = 0;
    if (Error err = optionalFloat("attn_logit_softcapping", attnSoftcap))
      return err;
    if (gemma3 && attnSoftcap != 0)
      return bad(path,
                 "'" + g.key("attn_logit_softcapping") + "' = " +
                     file.get(g.key("attn_logit_softcapping"))->toString() +
                     " is not supported (Gemma 3 does not apply it)");
    c.attnLogitSoftcap = attnSoftcap;
    // Gemma 2 alternates; Gemma 3 slides except every sixth layer, and its
    // sliding layers rotate with theta 10000 and no scaling.
    int64_t pattern = gemma3 ? 6 : 2;
    if (Error err = optionalUInt("attention.sliding_window_pattern", pattern))
      return err;
    if (pattern < 1)
      return bad(path, "'" + g.key("attention.sliding_window_pattern") +
                           "' must be positive");
    c.slidingLayers.clear();
    for (int64_t i = 0; i < c.numLayers; ++i)
      c.slidingLayers.push_back(gemma3 ? (i + 1) % pattern != 0
                                       : i % pattern == 0);
    if (gemma3)
      c.localRopeTheta = 10000.0;
    c.hiddenAct = "gelu_pytorch_tanh";
  } else if (g.arch == "phi3") {
    if (Error err = optionalUInt("attention.sliding_window", c.slidingWindow))
      return err;
    c.slidingLayers.assign(c.numLayers, c.slidingWindow > 0);
    // LongRoPE: the converter writes the factors as tensors.
    int64_t original = c.maxPositions;
    if (Error err =
            optionalUInt("rope.scaling.original_context_length", original))
      return err;
    double attention = 1.0;
    if (Error err = optionalFloat("rope.scaling.attn_factor", attention))
      return err;
    std::string attentionKey = g.key("rope.scaling.attn_factor");
    if (!(attention > 0))
      return bad(path, "'" + attentionKey + "' must be positive");
    if (const TensorInfo *shortFactors =
            file.lookup("rope_factors_short.weight")) {
      if (!file.lookup("rope_factors_long.weight"))
        return bad(path, "tensor 'rope_factors_short.weight' without "
                         "'rope_factors_long.weight'");
      int64_t pairs = c.headDim / 2;
      if (shortFactors->shape != llvm::SmallVector<int64_t>{pairs})
        return bad(path, "tensor 'rope_factors_short.weight' has shape " +
                             formatShape(shortFactors->shape) + ", expected [" +
                             llvm::Twine(pairs) + "] (head size / 2)");
      std::vector<float> factors(pairs);
      if (Error err = file.readF32("rope_factors_short.weight", factors))
        return err;
      for (float f : factors)
        if (!(f > 0) || !std::isfinite(f))
          return bad(path, "tensor 'rope_factors_short.weight' has a factor "
                           "that is not positive and finite");
      c.longropeShortFactors = std::move(factors);
      c.ropeAttentionFactor = attention;
      // Beyond it the long factors would apply to every position.
      c.maxPositions = std::min(c.maxPositions, original);
    } else if (attention != 1.0) {
      // The converter's YaRN form: no scaling RLX reads goes with it.
      return bad(path, "'" + attentionKey +
                           "' = " + file.get(attentionKey)->toString() +
                           " is not supported without LongRoPE factors "
                           "(rope_factors_short.weight)");
    }
  } else if (g.arch == "bert") {
    std::string causalKey = use("attention.causal");
    if (file.get(causalKey)) {
      std::optional<bool> causal = file.getBool(causalKey);
      if (!causal)
        return bad(path, "'" + causalKey + "' must be a bool");
      if (*causal)
        return bad(path, "'" + causalKey +
                             "' = true is not supported (BERT encoders "
                             "attend both ways)");
    }
    // The encoder gives the last hidden state and its mean over the tokens:
    // llama.cpp's pooling none (0) and mean (1); cls, last and rank pool
    // otherwise.
    int64_t pooling = 0;
    if (Error err = optionalUInt("pooling_type", pooling))
      return err;
    if (pooling > 1)
      return bad(path, "'" + g.key("pooling_type") +
                           "' = " + llvm::Twine(pooling) +
                           " is not supported (0: none, 1: mean; RLX's BERT "
                           "encoder pools by the mean)");
    c.typeVocabSize = 2;
    if (const TensorInfo *types = file.lookup("token_types.weight");
        types && types->shape.size() == 2)
      c.typeVocabSize = types->shape[0];
    if (Error err = optionalUInt("token_type_count", c.typeVocabSize))
      return err;
    c.hiddenAct = "gelu";
  }
  return Error::success();
}

/// The `<arch>.*` metadata of a GGUF beyond what LlamaGGUFConfig reads: keys
/// that change the computation are implemented or refused by name, others
/// reported as unknown.
static Error checkGGUFKeys(const GGUFFile &file, const LlamaGGUFConfig &g,
                           TransformerConfig &c) {
  llvm::StringSet<> used;
  for (StringRef k :
       {"embedding_length", "block_count", "feed_forward_length",
        "attention.head_count", "attention.head_count_kv", "context_length",
        "rope.freq_base", "rope.dimension_count",
        "attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon",
        "vocab_size", "rope.scaling.type", "rope.scaling.factor",
        "expert_count", "expert_used_count", "attention.key_length",
        "attention.value_length"})
    used.insert(g.key(k));
  StringRef path = file.description();
  // A present key must be an unsigned integer equal to `want`.
  auto mustBe = [&](StringRef key, uint64_t want,
                    const llvm::Twine &why) -> Error {
    if (!file.get(key))
      return Error::success();
    Expected<uint64_t> v = file.requireUInt(key);
    if (!v)
      return v.takeError();
    if (*v == want)
      return Error::success();
    return bad(path, "'" + key + "' = " + llvm::Twine(*v) +
                         " is not supported (" + why + ")");
  };
  if (Error err =
          mustBe(g.key("vocab_size"), c.vocabSize,
                 "token_embd.weight has " + llvm::Twine(c.vocabSize) + " rows"))
    return err;
  for (StringRef key : {"expert_count", "expert_used_count"})
    if (Error err = mustBe(g.key(key), 0, "mixture-of-experts models"))
      return err;
  for (StringRef key : {"attention.key_length", "attention.value_length"})
    if (Error err =
            mustBe(g.key(key), c.headDim,
                   "it must be the head size " + llvm::Twine(c.headDim)))
      return err;
  std::string scalingKey = g.key("rope.scaling.type");
  if (file.get(scalingKey)) {
    Expected<StringRef> type = file.requireString(scalingKey);
    if (!type)
      return type.takeError();
    if (*type == "linear") {
      std::string factorKey = g.key("rope.scaling.factor");
      Expected<double> factor = file.requireFloat(factorKey);
      if (!factor)
        return factor.takeError();
      if (!(*factor > 0))
        return bad(path, "'" + factorKey + "' must be positive");
      c.ropeLinearFactor = *factor;
    } else if (*type != "none") {
      return bad(path, "'" + scalingKey + "' = \"" + echoed(*type) +
                           "\" is not supported (supported: none, linear)");
    }
  }
  if (Error err = readGGUFArchKeys(file, g, c, used))
    return err;
  for (const auto &[key, value] : file.metadata()) {
    StringRef k = key;
    if (k.starts_with(g.arch + ".") && !used.contains(k))
      c.unknownKeys.push_back(key);
  }
  return Error::success();
}

llvm::Expected<TransformerConfig>
TransformerConfig::fromGGUF(const GGUFFile &file) {
  llvm::Expected<LlamaGGUFConfig> g = LlamaGGUFConfig::fromGGUF(file);
  if (!g)
    return g.takeError();
  TransformerConfig c;
  // The recipes know Gemma 3's text model by its transformers name.
  c.modelType = g->arch == "gemma3" ? "gemma3_text" : g->arch;
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
  if (g->ropeDim != g->headDim())
    return bad(file.description(),
               "'" + g->key("rope.dimension_count") +
                   "' = " + llvm::Twine(g->ropeDim) +
                   " is not supported (RoPE over the whole head, " +
                   llvm::Twine(g->headDim()) + ")");
  c.hiddenAct = "silu";
  if (Error err = checkGGUFKeys(file, *g, c))
    return std::move(err);
  c.activation = activationFor(c.hiddenAct).str();
  c.tieEmbeddings = !file.ggmlType("output.weight").has_value();
  // GGUF has no bias flags: the tensors say (llama.cpp loads them when
  // present). Qwen2 always has q/k/v biases.
  c.qkvBias = file.lookup("blk.0.attn_q.bias") != nullptr;
  c.outBias = file.lookup("blk.0.attn_output.bias") != nullptr;
  c.mlpBias = file.lookup("blk.0.ffn_gate.bias") != nullptr;
  for (auto [key, value] :
       {std::pair<std::string, uint64_t>{"token_embd.weight rows",
                                         g->vocabSize},
        {g->key("embedding_length"), g->hiddenSize},
        {g->key("feed_forward_length"), g->intermediateSize},
        {g->key("block_count"), g->numLayers},
        {g->key("attention.head_count"), g->numHeads},
        {g->key("attention.head_count_kv"), g->numKVHeads},
        {g->key("context_length"), g->contextLength}}) {
    uint64_t limit = key == g->key("block_count") ? kMaxLayers : kMaxSize;
    if (value > limit)
      return bad(file.description(), "'" + key + "' = " + llvm::Twine(value) +
                                         " is larger than " +
                                         llvm::Twine(limit));
  }
  return c;
}

/// YaRN's frequencies, in f32 as transformers computes them.
static std::vector<float> yarnFrequencies(const YarnRopeScaling &y,
                                          double theta, int64_t dim) {
  auto correction = [&](double rotations) {
    return dim * std::log(y.originalMaxPositions / (rotations * 2 * M_PI)) /
           (2 * std::log(theta));
  };
  double low = correction(y.betaFast), high = correction(y.betaSlow);
  if (y.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high)
    high += 0.001;
  std::vector<float> inv;
  for (int64_t i = 0; i < dim / 2; ++i) {
    float pos = std::pow(static_cast<float>(theta),
                         static_cast<float>(2 * i) / static_cast<float>(dim));
    float extrapolation = 1.0f / pos;
    float interpolation = 1.0f / (static_cast<float>(y.factor) * pos);
    float ramp = std::clamp((static_cast<float>(i) - static_cast<float>(low)) /
                                static_cast<float>(high - low),
                            0.0f, 1.0f);
    float keep = 1.0f - ramp;
    inv.push_back(interpolation * (1 - keep) + extrapolation * keep);
  }
  return inv;
}

std::vector<float> TransformerConfig::inverseFrequencies(int64_t rotary) const {
  if (yarnScaling)
    return yarnFrequencies(*yarnScaling, ropeTheta, rotary);
  std::vector<float> inv;
  bool longrope =
      static_cast<int64_t>(longropeShortFactors.size()) * 2 == rotary;
  for (int64_t i = 0; i < rotary; i += 2) {
    float pos = std::pow(static_cast<float>(ropeTheta),
                         static_cast<float>(i) / static_cast<float>(rotary));
    inv.push_back(1.0f / (longrope ? longropeShortFactors[i / 2] * pos : pos));
  }
  if (ropeLinearFactor != 1.0)
    for (float &f : inv)
      f = static_cast<float>(f / ropeLinearFactor);
  // llama.cpp's ggml_rope_ext divides theta by the factor of each pair.
  if (ropeFreqFactors.size() == inv.size())
    for (auto [f, factor] : llvm::zip(inv, ropeFreqFactors))
      f /= factor;
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
