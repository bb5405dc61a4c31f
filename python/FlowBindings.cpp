//===- FlowBindings.cpp - The flow API in Python --------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// ModelFlow and its blocks, layer stacks and stages, the layer specs, HF
// configs and the recipes (LLaMA 3.2, Qwen3, Gemma 2, BERT) with their hooks.
// Python callables given to `repeat_layers` and `layer` run here, before RLX
// is entered; recipe hooks run inside RLX and go through guardedCall.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"
#include "RLX/Flow/Flux.h"
#include "RLX/Flow/Qwen3Next.h"
#include "RLX/Flow/Recipes.h"
#include "RLX/Weights/GGUF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

using namespace rlx;
using namespace rlx::python;
using namespace nb::literals;

namespace {
/// `rlx.Stage`: one step of a flow.
struct PyStage {
  Stage fn;
  std::string label;
};
} // namespace

static constexpr auto ref = nb::rv_policy::reference;

//===----------------------------------------------------------------------===//
// Stages
//===----------------------------------------------------------------------===//

static Stage sequenceOf(std::vector<Stage> stages) {
  return [stages = std::move(stages)](FlowContext &ctx) -> llvm::Error {
    for (const Stage &s : stages)
      if (llvm::Error err = s(ctx))
        return err;
    return llvm::Error::success();
  };
}

static Stage failingStage(std::string message) {
  return [message](FlowContext &) -> llvm::Error {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
}

/// A flow's stages as one stage (the flow is not modified).
static Stage stageOfFlow(const ModelFlow &flow) {
  ModelFlow copy = flow;
  return sequenceOf(copy.takeStages());
}

/// A Stage from an rlx.Stage, a LayerStack, a ModelFlow fragment or a list
/// of those.
static Stage toStage(nb::handle value) {
  if (nb::isinstance<PyStage>(value))
    return nb::cast<PyStage &>(value).fn;
  if (nb::isinstance<LayerStack>(value))
    return sequenceOf(nb::cast<LayerStack &>(value).stages);
  if (nb::isinstance<ModelFlow>(value))
    return stageOfFlow(nb::cast<ModelFlow &>(value));
  if (nb::isinstance<nb::list>(value) || nb::isinstance<nb::tuple>(value)) {
    std::vector<Stage> stages;
    for (nb::handle item : value)
      stages.push_back(toStage(item));
    return sequenceOf(std::move(stages));
  }
  throw nb::type_error(
      ("expected an rlx.Stage, LayerStack, ModelFlow or a list of them, got " +
       pyStr(value.type()))
          .c_str());
}

/// Calls `body` (which calls Python) from inside RLX: an exception is kept
/// for the binding that entered RLX, and `fallback` is returned instead.
template <typename T, typename Body>
static T guardedCall(Body body, T fallback) {
  nb::gil_scoped_acquire gil;
  try {
    return body();
  } catch (...) {
    setPendingPythonError(std::current_exception());
    return fallback;
  }
}

//===----------------------------------------------------------------------===//
// Configs and specs
//===----------------------------------------------------------------------===//

static TransformerConfig loadConfig(const std::string &path) {
  llvm::StringRef p(path);
  if (p.ends_with(".gguf")) {
    auto file = unwrap(GGUFFile::open(path));
    return unwrap(TransformerConfig::fromGGUF(*file));
  }
  if (llvm::sys::fs::is_directory(path)) {
    llvm::SmallString<128> json(path);
    llvm::sys::path::append(json, "config.json");
    return unwrap(TransformerConfig::fromFile(json));
  }
  return unwrap(TransformerConfig::fromFile(path));
}

/// rlx.DYNAMIC and the attention and layer specs.
static void registerSpecs(nb::module_ &m) {
  m.attr("DYNAMIC") = kDynamic;

  nb::class_<AttentionSpec>(
      m, "AttentionSpec",
      "Attention configuration shared by the attention blocks and layers.")
      .def(
          "__init__",
          [](AttentionSpec *self, int64_t numHeads,
             std::optional<int64_t> numKvHeads, int64_t headDim,
             int64_t rotaryDim, float ropeTheta, bool interleavedRope,
             float scale, float softcap, int64_t window, bool causal) {
            auto *s = new (self) AttentionSpec();
            s->numHeads = numHeads;
            s->numKvHeads = numKvHeads.value_or(numHeads);
            s->headDim = headDim;
            s->rotaryDim = rotaryDim;
            s->ropeTheta = ropeTheta;
            s->interleavedRope = interleavedRope;
            s->scale = scale;
            s->softcap = softcap;
            s->window = window;
            s->causal = causal;
          },
          nb::kw_only(), "num_heads"_a = 1, "num_kv_heads"_a = nb::none(),
          "head_dim"_a = 1, "rotary_dim"_a = 0, "rope_theta"_a = 10000.0f,
          "interleaved_rope"_a = false, "scale"_a = 0.0f, "softcap"_a = 0.0f,
          "window"_a = 0, "causal"_a = true,
          "num_kv_heads defaults to num_heads; rotary_dim 0 means head_dim;\n"
          "scale 0 means 1/sqrt(head_dim); window > 0 is sliding-window\n"
          "attention.")
      .def_rw("num_heads", &AttentionSpec::numHeads)
      .def_rw("num_kv_heads", &AttentionSpec::numKvHeads)
      .def_rw("head_dim", &AttentionSpec::headDim)
      .def_rw("rotary_dim", &AttentionSpec::rotaryDim, "0: head_dim.")
      .def_rw("rope_theta", &AttentionSpec::ropeTheta)
      .def_rw("interleaved_rope", &AttentionSpec::interleavedRope)
      .def_rw("scale", &AttentionSpec::scale, "0: 1/sqrt(head_dim).")
      .def_rw("softcap", &AttentionSpec::softcap)
      .def_rw("window", &AttentionSpec::window, "> 0: sliding window.")
      .def_rw("causal", &AttentionSpec::causal)
      .def("__repr__", [](const AttentionSpec &s) {
        return "AttentionSpec(num_heads=" + std::to_string(s.numHeads) +
               ", num_kv_heads=" + std::to_string(s.numKvHeads) +
               ", head_dim=" + std::to_string(s.headDim) + ")";
      });

  nb::class_<MoeSpec>(
      m, "MoeSpec",
      "A mixture-of-experts MLP: a router picks `experts_per_token` of\n"
      "`experts` SwiGLU experts per token (Mixtral, Qwen2/3-MoE).")
      .def(
          "__init__",
          [](MoeSpec *self, int64_t experts, int64_t expertsPerToken,
             int64_t intermediate, bool normTopKProb,
             int64_t sharedIntermediate, bool mixtralNames) {
            auto *s = new (self) MoeSpec();
            s->numExperts = experts;
            s->expertsPerToken = expertsPerToken;
            s->intermediate = intermediate;
            s->normTopKProb = normTopKProb;
            s->sharedIntermediate = sharedIntermediate;
            s->mixtralNames = mixtralNames;
          },
          nb::kw_only(), "experts"_a = 0, "experts_per_token"_a = 0,
          "intermediate"_a = 0, "norm_topk_prob"_a = false,
          "shared_intermediate"_a = 0, "mixtral_names"_a = false)
      .def_rw("experts", &MoeSpec::numExperts, "0: a dense MLP.")
      .def_rw("experts_per_token", &MoeSpec::expertsPerToken)
      .def_rw("intermediate", &MoeSpec::intermediate,
              "Each expert's intermediate size.")
      .def_rw("norm_topk_prob", &MoeSpec::normTopKProb,
              "Renormalize the picked experts' probabilities to sum 1.")
      .def_rw("shared_intermediate", &MoeSpec::sharedIntermediate,
              "> 0: a sigmoid-gated shared expert of this size (Qwen2-MoE).")
      .def_rw("mixtral_names", &MoeSpec::mixtralNames,
              "Mixtral's weight names (experts.E.w1/w3/w2) instead of "
              "Qwen's (experts.E.gate_proj/up_proj/down_proj).")
      .def("__repr__", [](const MoeSpec &s) {
        return "MoeSpec(experts=" + std::to_string(s.numExperts) +
               ", experts_per_token=" + std::to_string(s.expertsPerToken) +
               ", intermediate=" + std::to_string(s.intermediate) + ")";
      });

  nb::class_<DecoderLayerSpec>(
      m, "DecoderLayerSpec",
      "A decoder layer: its attention, norms and MLP, and the weight key\n"
      "prefix (\"model.layers.3.\").")
      .def(
          "__init__",
          [](DecoderLayerSpec *self, const AttentionSpec &attention,
             int64_t hidden, int64_t intermediate, double rmsEpsilon,
             std::string prefix, bool qkNorm, bool gemma,
             std::string invFreqKey) {
            auto *s = new (self) DecoderLayerSpec();
            s->attention = attention;
            s->hidden = hidden;
            s->intermediate = intermediate;
            s->rmsEpsilon = static_cast<float>(rmsEpsilon);
            s->prefix = std::move(prefix);
            s->qkNorm = qkNorm;
            s->gemma = gemma;
            s->invFreqKey = std::move(invFreqKey);
          },
          nb::kw_only(), "attention"_a = AttentionSpec(), "hidden"_a = 0,
          "intermediate"_a = 0, "rms_epsilon"_a = 1e-5, "prefix"_a = "",
          "qk_norm"_a = false, "gemma"_a = false, "inv_freq_key"_a = "")
      .def_rw("attention", &DecoderLayerSpec::attention)
      .def_rw("hidden", &DecoderLayerSpec::hidden)
      .def_rw("intermediate", &DecoderLayerSpec::intermediate)
      .def_rw("rms_epsilon", &DecoderLayerSpec::rmsEpsilon)
      .def_rw("prefix", &DecoderLayerSpec::prefix,
              "Weight key prefix, e.g. \"model.layers.3.\".")
      .def_rw("qk_norm", &DecoderLayerSpec::qkNorm,
              "Qwen3: per-head RMSNorm of q and k.")
      .def_rw("gemma", &DecoderLayerSpec::gemma,
              "Gemma 2: (1 + w) norms, sandwich norms, GeGLU.")
      .def_rw("inv_freq_key", &DecoderLayerSpec::invFreqKey,
              "A synthesized [rotary_dim / 2] parameter overriding theta "
              "(LLaMA 3 scaled RoPE).")
      .def_rw("qkv_bias", &DecoderLayerSpec::qkvBias,
              "q/k/v projection biases (LLaMA attention_bias, Qwen2).")
      .def_rw("out_bias", &DecoderLayerSpec::outBias,
              "The attention output projection's bias.")
      .def_rw("mlp_bias", &DecoderLayerSpec::mlpBias,
              "gate/up/down projection biases (LLaMA mlp_bias).")
      .def_rw("mlp_activation", &DecoderLayerSpec::mlpActivation,
              "The MLP gate's activation (\"silu\", \"gelu\", ...); empty: "
              "the family's.")
      .def_rw("moe", &DecoderLayerSpec::moe,
              "A mixture of experts in place of the dense MLP "
              "(moe.experts > 0).")
      .def("__repr__", [](const DecoderLayerSpec &s) {
        return "DecoderLayerSpec(prefix='" + s.prefix +
               "', hidden=" + std::to_string(s.hidden) +
               ", intermediate=" + std::to_string(s.intermediate) + ")";
      });

  nb::class_<BertLayerSpec>(m, "BertLayerSpec", "A BERT encoder layer.")
      .def(
          "__init__",
          [](BertLayerSpec *self, int64_t numHeads, int64_t headDim,
             int64_t hidden, int64_t intermediate, double eps,
             std::string prefix, std::string activation) {
            auto *s = new (self) BertLayerSpec();
            s->numHeads = numHeads;
            s->headDim = headDim;
            s->hidden = hidden;
            s->intermediate = intermediate;
            s->layerNormEpsilon = static_cast<float>(eps);
            s->prefix = std::move(prefix);
            s->activation = std::move(activation);
          },
          nb::kw_only(), "num_heads"_a = 1, "head_dim"_a = 1, "hidden"_a = 0,
          "intermediate"_a = 0, "layer_norm_epsilon"_a = 1e-12, "prefix"_a = "",
          "activation"_a = "gelu")
      .def_rw("num_heads", &BertLayerSpec::numHeads)
      .def_rw("head_dim", &BertLayerSpec::headDim)
      .def_rw("hidden", &BertLayerSpec::hidden)
      .def_rw("intermediate", &BertLayerSpec::intermediate)
      .def_rw("layer_norm_epsilon", &BertLayerSpec::layerNormEpsilon)
      .def_rw("prefix", &BertLayerSpec::prefix,
              "Weight key prefix, e.g. \"encoder.layer.3.\".")
      .def_rw("activation", &BertLayerSpec::activation,
              "The FFN activation: \"gelu\" (exact), \"gelu_tanh\", "
              "\"relu\", ...")
      .def("__repr__", [](const BertLayerSpec &s) {
        return "BertLayerSpec(prefix='" + s.prefix +
               "', hidden=" + std::to_string(s.hidden) + ")";
      });
}

/// The Hugging Face configs and load_config.
static void registerConfig(nb::module_ &m) {
  nb::class_<Llama3RopeScaling>(m, "Llama3RopeScaling",
                                "LLaMA 3's frequency-dependent RoPE scaling.")
      .def(nb::init<>())
      .def_rw("factor", &Llama3RopeScaling::factor)
      .def_rw("low_freq_factor", &Llama3RopeScaling::lowFreqFactor)
      .def_rw("high_freq_factor", &Llama3RopeScaling::highFreqFactor)
      .def_rw("original_max_positions",
              &Llama3RopeScaling::originalMaxPositions);

  nb::class_<TransformerConfig>(
      m, "TransformerConfig",
      "The fields of a Hugging Face config.json the recipes use (or the\n"
      "LLaMA config a GGUF file describes).")
      .def(nb::init<>())
      .def_static(
          "from_json",
          [](const std::string &text, const std::string &fileName) {
            return unwrap(TransformerConfig::fromJSON(text, fileName));
          },
          "text"_a, "file_name"_a = "<string>",
          "Parses config.json text; a missing required key is an error "
          "naming it.")
      .def_static(
          "from_file",
          [](nb::handle path) { return loadConfig(pathString(path)); },
          "path"_a,
          nb::sig("def from_file(path: str | os.PathLike[str]) -> "
                  "TransformerConfig"),
          "Reads a config.json, a model directory's config.json, or a GGUF\n"
          "file's metadata.")
      .def_rw("model_type", &TransformerConfig::modelType,
              "\"llama\", \"qwen3\", \"gemma2\", \"mixtral\", "
              "\"qwen2_moe\", \"bert\", ...")
      .def_rw("vocab_size", &TransformerConfig::vocabSize)
      .def_rw("hidden", &TransformerConfig::hidden)
      .def_rw("intermediate", &TransformerConfig::intermediate)
      .def_rw("num_layers", &TransformerConfig::numLayers)
      .def_rw("num_heads", &TransformerConfig::numHeads)
      .def_rw("num_kv_heads", &TransformerConfig::numKvHeads)
      .def_rw("head_dim", &TransformerConfig::headDim)
      .def_rw("max_positions", &TransformerConfig::maxPositions)
      .def_rw("norm_epsilon", &TransformerConfig::normEpsilon)
      .def_rw("rope_theta", &TransformerConfig::ropeTheta)
      .def_rw("tie_embeddings", &TransformerConfig::tieEmbeddings)
      .def_rw("llama3_scaling", &TransformerConfig::llama3Scaling)
      .def_rw("query_pre_attn_scalar", &TransformerConfig::queryPreAttnScalar)
      .def_rw("final_logit_softcap", &TransformerConfig::finalLogitSoftcap)
      .def_rw("attn_logit_softcap", &TransformerConfig::attnLogitSoftcap)
      .def_rw("sliding_window", &TransformerConfig::slidingWindow)
      .def_rw("num_experts", &TransformerConfig::numExperts,
              "Mixture of experts: the routed experts (0: dense).")
      .def_rw("experts_per_token", &TransformerConfig::expertsPerToken)
      .def_rw("moe_intermediate", &TransformerConfig::moeIntermediate,
              "Each routed expert's intermediate size.")
      .def_rw("shared_expert_intermediate",
              &TransformerConfig::sharedExpertIntermediate,
              "Qwen2-MoE's shared expert (0: none).")
      .def_rw("norm_topk_prob", &TransformerConfig::normTopKProb)
      .def_prop_ro(
          "moe_layers",
          [](const TransformerConfig &c) {
            nb::list l;
            for (bool b : c.moeLayers)
              l.append(b);
            return l;
          },
          "Per layer: a mixture-of-experts MLP (else dense).")
      .def_prop_rw(
          "sliding_layers",
          [](const TransformerConfig &c) {
            nb::list l;
            for (bool b : c.slidingLayers)
              l.append(b);
            return l;
          },
          [](TransformerConfig &c, nb::handle l) {
            c.slidingLayers.clear();
            for (nb::handle b : l)
              c.slidingLayers.push_back(nb::cast<bool>(b));
          },
          nb::for_getter(nb::sig("def sliding_layers(self) -> list[bool]")),
          nb::for_setter(nb::sig("def sliding_layers(self, value: "
                                 "typing.Sequence[bool], /) -> None")),
          "Per layer: sliding-window attention (Gemma 2 alternates).")
      .def_rw("type_vocab_size", &TransformerConfig::typeVocabSize)
      .def_rw("image_size", &TransformerConfig::imageSize,
              "ViT/DINOv2: the image the position embeddings were made for.")
      .def_rw("patch_size", &TransformerConfig::patchSize)
      .def_rw("num_channels", &TransformerConfig::numChannels)
      .def_rw("layer_scale", &TransformerConfig::layerScale,
              "DINOv2: LayerScale on both residual branches.")
      .def_rw("swiglu_ffn", &TransformerConfig::swigluFfn,
              "DINOv2: the packed SwiGLU-FFN instead of the MLP.")
      .def_rw("num_registers", &TransformerConfig::numRegisters,
              "DINOv2 with registers: tokens inserted after [CLS].")
      .def_rw("antialias_positions", &TransformerConfig::antialiasPositions,
              "Resize position embeddings with antialiasing.")
      .def_rw("pooler_size", &TransformerConfig::poolerSize)
      .def_rw("pooler_activation", &TransformerConfig::poolerActivation)
      .def_rw("hidden_act", &TransformerConfig::hiddenAct,
              "The MLP activation as the config names it.")
      .def_rw("activation", &TransformerConfig::activation,
              "The MLP activation as RLX names it (\"silu\", \"gelu\", "
              "\"gelu_tanh\", \"relu\", ...).")
      .def_rw("qkv_bias", &TransformerConfig::qkvBias)
      .def_rw("out_bias", &TransformerConfig::outBias)
      .def_rw("mlp_bias", &TransformerConfig::mlpBias)
      .def_rw("rope_linear_factor", &TransformerConfig::ropeLinearFactor)
      .def_ro("unknown_keys", &TransformerConfig::unknownKeys,
              "Keys of the file RLX does not know (the tools warn).")
      .def("inverse_frequencies", &TransformerConfig::inverseFrequencies,
           "rotary"_a,
           "RoPE inverse frequencies for `rotary` dims (LLaMA 3 scaling "
           "when configured).")
      .def("__repr__", [](const TransformerConfig &c) {
        return "<rlx.TransformerConfig " + c.modelType + ": " +
               std::to_string(c.numLayers) + " layers, hidden " +
               std::to_string(c.hidden) + ", " + std::to_string(c.numHeads) +
               "/" + std::to_string(c.numKvHeads) + " heads, vocab " +
               std::to_string(c.vocabSize) + ">";
      });

  m.def(
      "load_config",
      [](nb::handle path) { return loadConfig(pathString(path)); }, "path"_a,
      nb::sig("def load_config(path: str | os.PathLike[str]) -> "
              "TransformerConfig"),
      "The TransformerConfig of a model directory, a config.json or a GGUF "
      "file.");
}

//===----------------------------------------------------------------------===//
// Stages and layer functions
//===----------------------------------------------------------------------===//

/// rlx.Stage and the functions that make one layer as a stage.
static void registerStages(nb::module_ &m) {
  nb::class_<PyStage>(
      m, "Stage",
      "One step of a flow: a block, a whole layer, or a sequence of them.\n"
      "Made by the layer functions (llama_prefill_layer_fused, ...),\n"
      "LayerStack.to_stage() and ModelFlow.to_stage().")
      .def_ro("label", &PyStage::label, "What the stage builds.")
      .def("__repr__",
           [](const PyStage &s) { return "<rlx.Stage " + s.label + ">"; });

  auto stageFn = [&](const char *name,
                     Stage (*fn)(unsigned, const DecoderLayerSpec &),
                     const char *doc) {
    m.def(
        name,
        [fn, name](unsigned index, const DecoderLayerSpec &spec) {
          return PyStage{fn(index, spec),
                         std::string(name) + "(" + std::to_string(index) + ")"};
        },
        "index"_a, "spec"_a, doc);
  };
  stageFn("llama_prefill_layer_fused", &llamaPrefillLayerFused,
          "One fused HIR decoder layer (hir.llama_decoder_layer, or the "
          "Qwen3 /\nGemma forms per `spec`).");
  stageFn("llama_prefill_layer_composed", &llamaPrefillLayerComposed,
          "The same layer from small blocks (norm, attention, residual, "
          "MLP).");
  stageFn("decode_layer", &decodeLayer,
          "A KV-cache decode layer: reads inputs past_k.N / past_v.N (and "
          "the key\nmask input \"kv_mask\" when present) and exports "
          "present_k.N / present_v.N.");
  m.def(
      "bert_encoder_layer",
      [](const BertLayerSpec &spec) {
        ModelFlow f("bert_layer");
        f.bertEncoderLayer(spec);
        return PyStage{stageOfFlow(f),
                       "bert_encoder_layer(" + spec.prefix + ")"};
      },
      "spec"_a, "A BERT encoder layer as a stage (for BertFlow.layer hooks).");
}

//===----------------------------------------------------------------------===//
// Blocks shared by LayerStack and ModelFlow
//===----------------------------------------------------------------------===//

namespace {
/// A normalization block of a builder: `name(key, eps)`.
template <typename Builder> struct NormBlock {
  const char *name;
  Builder &(Builder::*method)(llvm::StringRef, float);
  const char *keyArg;
  const char *doc;
};

/// How a builder spells the blocks bindBlocks binds. A LayerStack's weight
/// keys are relative to its prefix (`prefix + key`); a ModelFlow's are
/// whole keys and prefixes. Each builder's norms are listed in the order
/// they are bound, which is the order of the generated stubs (ModelFlow's
/// gemma_rms_norm stands between rms_norm and layer_norm).
template <typename Builder> struct BlockSpelling;

template <> struct BlockSpelling<LayerStack> {
  static constexpr NormBlock<LayerStack> norms[] = {
      {"rms_norm", &LayerStack::rmsNorm, "key",
       "RMSNorm with weight `prefix + key`."},
      {"layer_norm", &LayerStack::layerNorm, "key",
       "LayerNorm with `prefix + key`.weight/.bias."},
  };
  static constexpr const char *linearKey = "key";
  static constexpr const char *linearDoc =
      "x @ W^T (+ b) with `prefix + key`.weight (and .bias).";
  static constexpr const char *stageSig =
      "def stage(self, stage: Stage | LayerStack | ModelFlow | list) -> "
      "LayerStack";
};

template <> struct BlockSpelling<ModelFlow> {
  static constexpr NormBlock<ModelFlow> norms[] = {
      {"rms_norm", &ModelFlow::rmsNorm, "key", "RMSNorm with weight `key`."},
      {"gemma_rms_norm", &ModelFlow::gemmaRmsNorm, "key",
       "Gemma's (1 + w) RMSNorm."},
      {"layer_norm", &ModelFlow::layerNorm, "prefix",
       "LayerNorm with `prefix`.weight and `prefix`.bias."},
  };
  static constexpr const char *linearKey = "prefix";
  static constexpr const char *linearDoc =
      "x @ W^T (+ b) with `prefix`.weight (and `prefix`.bias).";
  static constexpr const char *stageSig =
      "def stage(self, stage: Stage | LayerStack | ModelFlow | list) -> "
      "ModelFlow";
};
} // namespace

/// Binds the blocks LayerStack and ModelFlow share, spelled per
/// BlockSpelling: the norms, linear and the residual slots. Each returns
/// the builder, for chaining. (self_attn_prefill, swiglu_hf_mlp and
/// gelu_ffn take other arguments on each, so each class binds its own.)
template <typename Builder> static void bindBlocks(nb::class_<Builder> &cls) {
  using Spelling = BlockSpelling<Builder>;
  for (const NormBlock<Builder> &norm : Spelling::norms)
    cls.def(
        norm.name,
        [method = norm.method](Builder &b, const std::string &key, float eps)
            -> Builder & { return (b.*method)(key, eps); },
        nb::arg(norm.keyArg), "eps"_a, ref, norm.doc);
  cls.def(
         "linear",
         [](Builder &b, const std::string &key, bool bias) -> Builder & {
           return b.linear(key, bias);
         },
         nb::arg(Spelling::linearKey), "bias"_a = false, ref,
         Spelling::linearDoc)
      .def(
          "residual_save",
          [](Builder &b, const std::string &slot) -> Builder & {
            return b.residualSave(slot);
          },
          "slot"_a = "residual", ref, "Saves the active tensor in `slot`.")
      .def(
          "residual_add",
          [](Builder &b, const std::string &slot) -> Builder & {
            return b.residualAdd(slot);
          },
          "slot"_a = "residual", ref, "Adds `slot` to the active tensor.");
}

/// Binds `stage`: appends an rlx.Stage, LayerStack, ModelFlow or a list of
/// them.
template <typename Builder> static void bindStage(nb::class_<Builder> &cls) {
  cls.def(
      "stage",
      [](Builder &b, nb::handle stage) -> Builder & {
        return b.stage(toStage(stage));
      },
      "stage"_a, ref, nb::sig(BlockSpelling<Builder>::stageSig),
      "Appends a stage.");
}

//===----------------------------------------------------------------------===//
// LayerStack
//===----------------------------------------------------------------------===//

/// LayerStack: the shared blocks, its own attention and MLP blocks, and
/// its stages.
static void registerLayerStack(nb::module_ &m) {
  nb::class_<LayerStack> stack(
      m, "LayerStack",
      "A named sub-layer composer: the block methods of ModelFlow with "
      "weight\nkeys relative to `prefix`. ModelFlow.layer(prefix, fn) hands "
      "one to fn.");
  stack.def(nb::init<std::string>(), "prefix"_a)
      .def_rw("prefix", &LayerStack::prefix);
  bindBlocks(stack);
  stack
      .def(
          "self_attn_prefill",
          [](LayerStack &s, const AttentionSpec &spec) -> LayerStack & {
            return s.selfAttnPrefill(spec);
          },
          "spec"_a, ref,
          "Self-attention with q/k/v/o_proj under `prefix + \"self_attn.\"`.")
      .def(
          "swiglu_hf_mlp",
          [](LayerStack &s) -> LayerStack & { return s.swigluHfMlp(); }, ref,
          "The HF SwiGLU MLP (gate/up/down_proj under `prefix + \"mlp.\"`).")
      .def(
          "gelu_ffn",
          [](LayerStack &s, const std::string &in, const std::string &out)
              -> LayerStack & { return s.geluFfn(in, out); },
          "in_"_a = "intermediate.dense", "out"_a = "output.dense", ref,
          "GELU feed-forward: linear `in_`, GELU, linear `out`.");
  bindStage(stack);
  stack.def(
      "to_stage",
      [](const LayerStack &s) {
        return PyStage{sequenceOf(s.stages), "layer " + s.prefix};
      },
      "The blocks so far as one stage.");
}

//===----------------------------------------------------------------------===//
// ModelFlow
//===----------------------------------------------------------------------===//

using MF = ModelFlow;

/// The constructor, name and profile, graph inputs and embeddings.
static void bindFlowConstruction(nb::class_<MF> &flow) {
  flow.def(nb::init<std::string>(), "name"_a)
      .def_prop_ro("name", &MF::getName, "The model's name.")
      .def_prop_ro("compile_profile", &MF::getProfile,
                   "The CompileProfile the flow carries.")
      .def(
          "profile",
          [](MF &f, nb::handle p) -> MF & { return f.profile(toProfile(p)); },
          "profile"_a, ref,
          nb::sig("def profile(self, profile: CompileProfile | str) -> "
                  "ModelFlow"),
          "Sets the compile profile (an rlx.CompileProfile or a preset name).")
      .def(
          "profile_prefill", [](MF &f) -> MF & { return f.profilePrefill(); },
          ref, "The LLaMA prefill preset.")
      .def(
          "profile_decode", [](MF &f) -> MF & { return f.profileDecode(); },
          ref, "The LLaMA decode preset.")
      .def(
          "profile_encoder", [](MF &f) -> MF & { return f.profileEncoder(); },
          ref, "The encoder preset.")
      .def(
          "input",
          [](MF &f, const std::string &name, nb::handle shape,
             nb::handle dtype) -> MF & {
            llvm::SmallVector<int64_t, 4> dims;
            for (nb::handle d : shape) {
              // None or rlx.DYNAMIC, else a size in [0, 2^63).
              int64_t v;
              if (d.is_none() || (nb::isinstance<nb::int_>(d) &&
                                  nb::try_cast(d, v) && v == kDynamic)) {
                dims.push_back(kDynamic);
                continue;
              }
              dims.push_back(intInRange(d,
                                        "input '" + name + "' dimension " +
                                            llvm::Twine(dims.size()),
                                        0, INT64_MAX));
            }
            return f.input(name, dims, parseDType(dtype));
          },
          "name"_a, "shape"_a, "dtype"_a = "f32", ref,
          nb::sig("def input(self, name: str, shape: "
                  "typing.Sequence[int | None], dtype: str | "
                  "numpy.typing.DTypeLike = 'f32') -> ModelFlow"),
          "Declares a graph input; None (or rlx.DYNAMIC) is a dynamic dim.\n"
          "The first input becomes the active tensor. Integer inputs are "
          "token\nids, float inputs hidden states.")
      .def(
          "token_embed",
          [](MF &f, const std::string &key) -> MF & {
            return f.tokenEmbed(key);
          },
          "key"_a = "model.embed_tokens.weight", ref,
          "Embeds the token ids of the active tensor.")
      .def(
          "gather_add",
          [](MF &f, const std::string &ids, const std::string &table) -> MF & {
            return f.gatherAdd(ids, table);
          },
          "ids_input"_a, "table_key"_a, ref,
          "Adds rows of `table_key` gathered by input `ids_input` (position "
          "or\ntoken-type embeddings).")
      .def(
          "embed_scale",
          [](MF &f, float scale) -> MF & { return f.embedScale(scale); },
          "scale"_a, ref, "Multiplies the active tensor by `scale`.");
}

/// The blocks: those shared with LayerStack, then ModelFlow's own and the
/// whole layers.
static void bindFlowBlocks(nb::class_<MF> &flow) {
  bindBlocks(flow);
  flow.def(
          "layer_scale",
          [](MF &f, const std::string &key) -> MF & {
            return f.layerScale(key);
          },
          "key"_a, ref, "Multiplies by the per-channel weight `key`.")
      .def(
          "self_attn_prefill",
          [](MF &f, const std::string &prefix, const AttentionSpec &spec)
              -> MF & { return f.selfAttnPrefill(prefix, spec); },
          "prefix"_a, "spec"_a, ref,
          "Self-attention with q/k/v/o_proj under `prefix`.")
      .def(
          "swiglu_hf_mlp",
          [](MF &f, const std::string &prefix) -> MF & {
            return f.swigluHfMlp(prefix);
          },
          "prefix"_a, ref, "The HF SwiGLU MLP (gate/up/down_proj).")
      .def(
          "moe_mlp",
          [](MF &f, const std::string &prefix, const MoeSpec &spec) -> MF & {
            return f.moeMlp(prefix, spec);
          },
          "prefix"_a, "spec"_a, ref,
          "A mixture-of-experts MLP under `prefix` (router gate.weight, "
          "experts.E.*, shared_expert.*).")
      .def(
          "geglu",
          [](MF &f, const std::string &prefix) -> MF & {
            return f.geglu(prefix);
          },
          "prefix"_a, ref, "Gemma's GeGLU MLP.")
      .def(
          "gelu_ffn",
          [](MF &f, const std::string &in, const std::string &out,
             bool tanh) -> MF & { return f.geluFfn(in, out, tanh); },
          "in_"_a, "out"_a, "tanh"_a = false, ref,
          "GELU feed-forward: linear `in_`, GELU (tanh approximation with "
          "`tanh`),\nlinear `out`.")
      .def(
          "dense_mlp",
          [](MF &f, const std::string &in, const std::string &out,
             const std::string &activation) -> MF & {
            return f.denseMlp(in, out, activation);
          },
          "in_"_a, "out"_a, "activation"_a = "gelu", ref,
          "activation(linear `in_`) then linear `out`, both with biases "
          "(ViT's and DINOv2's MLP).")
      .def(
          "patch_embed",
          [](MF &f, const std::string &prefix, int64_t patchSize) -> MF & {
            return f.patchEmbed(prefix, patchSize);
          },
          "prefix"_a, "patch_size"_a, ref,
          "Image [batch, channels, height, width] to one token per "
          "patch_size patch:\nthe convolution `prefix.weight`, "
          "`prefix.bias`.")
      .def(
          "insert_tokens",
          [](MF &f, const std::string &key, int64_t position) -> MF & {
            return f.insertTokens(key, position);
          },
          "key"_a, "position"_a = 0, ref,
          "Inserts the learned tokens `key` [1, n, hidden] ([CLS], "
          "registers) before\n`position`.")
      .def(
          "position_embed",
          [](MF &f, const std::string &key, int64_t gridH, int64_t gridW,
             int64_t leading, bool antialias) -> MF & {
            return f.positionEmbed(key, gridH, gridW, leading, antialias);
          },
          "key"_a, "grid_h"_a, "grid_w"_a, "leading"_a = 1,
          "antialias"_a = false, ref,
          "Adds the position embeddings `key` [1, leading + s*s, hidden], "
          "resized\nbicubically to grid_h x grid_w.")
      .def(
          "vit_self_attn",
          [](MF &f, const std::string &prefix, const AttentionSpec &spec,
             bool qkvBias) -> MF & {
            return f.vitSelfAttn(prefix, spec, qkvBias);
          },
          "prefix"_a, "spec"_a, "qkv_bias"_a = true, ref,
          "Unmasked self-attention: `prefix`attention.{query,key,value} "
          "and\n`prefix`output.dense.")
      .def(
          "vision_swiglu_ffn",
          [](MF &f, const std::string &prefix) -> MF & {
            return f.visionSwiGluFfn(prefix);
          },
          "prefix"_a, ref,
          "DINOv2's SwiGLU-FFN: `prefix`weights_in (gate, then up) and "
          "`prefix`weights_out.")
      .def(
          "llama_layer",
          [](MF &f, const DecoderLayerSpec &spec) -> MF & {
            return f.llamaLayer(spec);
          },
          "spec"_a, ref, "A whole LLaMA-family decoder layer.")
      .def(
          "bert_encoder_layer",
          [](MF &f, const BertLayerSpec &spec) -> MF & {
            return f.bertEncoderLayer(spec);
          },
          "spec"_a, ref, "A whole BERT (post-LN) encoder layer.")
      .def(
          "nomic_encoder_layer",
          [](MF &f, const DecoderLayerSpec &spec) -> MF & {
            return f.nomicEncoderLayer(spec);
          },
          "spec"_a, ref, "A NomicBERT encoder layer.");
}

/// Composition: named layers (a LayerStack each), repeated layers,
/// sequences and stages.
static void bindFlowLayers(nb::class_<MF> &flow) {
  flow.def(
          "layer",
          [](MF &f, const std::string &name, nb::callable build) -> MF & {
            nb::object stack = nb::cast(LayerStack(name));
            build(stack);
            std::vector<Stage> stages = nb::cast<LayerStack &>(stack).stages;
            return f.layer(name, [&](LayerStack &s) { s.stages = stages; });
          },
          "name"_a, "build"_a, ref,
          nb::sig("def layer(self, name: str, build: "
                  "typing.Callable[[LayerStack], object]) -> ModelFlow"),
          "A named layer: `build` receives a LayerStack whose prefix is "
          "`name`\n(weight keys are relative to it) and adds blocks to it.")
      .def(
          "repeat_layers",
          [](MF &f, unsigned n, nb::callable layer) -> MF & {
            std::vector<Stage> stages;
            for (unsigned i = 0; i < n; ++i)
              stages.push_back(toStage(layer(i)));
            return f.repeatLayers(n, [&](unsigned i) { return stages[i]; });
          },
          "n"_a, "layer"_a, ref,
          nb::sig("def repeat_layers(self, n: int, layer: "
                  "typing.Callable[[int], Stage | LayerStack | ModelFlow]) "
                  "-> ModelFlow"),
          "Layers 0..n-1: `layer(i)` returns each one's stage. Errors inside "
          "name\nthe layer.")
      .def(
          "sequence",
          [](MF &f, nb::handle stages) -> MF & {
            std::vector<Stage> seq;
            for (nb::handle s : stages)
              seq.push_back(toStage(s));
            return f.sequence(std::move(seq));
          },
          "stages"_a, ref,
          nb::sig("def sequence(self, stages: typing.Sequence[Stage | "
                  "LayerStack | ModelFlow]) -> ModelFlow"),
          "Appends the stages, in order.")
      .def(
          "when",
          [](MF &f, bool condition, nb::handle stage) -> MF & {
            return f.when(condition, toStage(stage));
          },
          "condition"_a, "stage"_a, ref,
          nb::sig("def when(self, condition: bool, stage: Stage | LayerStack "
                  "| ModelFlow) -> ModelFlow"),
          "Appends `stage` only if `condition`.");
  bindStage(flow);
}

/// The heads and the graph outputs.
static void bindFlowHeads(nb::class_<MF> &flow) {
  flow.def(
          "final_norm",
          [](MF &f, float eps, const std::string &key) -> MF & {
            return f.finalNorm(eps, key);
          },
          "eps"_a, "key"_a = "model.norm.weight", ref, "The final RMSNorm.")
      .def(
          "gather_last_token",
          [](MF &f) -> MF & { return f.gatherLastToken(); }, ref,
          "Keeps the last position only.")
      .def(
          "lm_head",
          [](MF &f, bool tied, const std::string &key,
             const std::string &embedKey) -> MF & {
            return f.lmHead(tied, key, embedKey);
          },
          "tied"_a, "key"_a = "lm_head.weight",
          "embed_key"_a = "model.embed_tokens.weight", ref,
          "The LM head; `tied`: the embedding table is the head.")
      .def(
          "logit_softcap",
          [](MF &f, float cap) -> MF & { return f.logitSoftcap(cap); }, "cap"_a,
          ref, "cap * tanh(x / cap).")
      .def(
          "cls_pool", [](MF &f) -> MF & { return f.clsPool(); }, ref,
          "Keeps the first ([CLS]) position.")
      .def(
          "mean_pool",
          [](MF &f, const std::string &mask) -> MF & {
            return f.meanPool(mask);
          },
          "mask_input"_a = "", ref,
          "Mean over the sequence under the attention-mask input.")
      .def(
          "output",
          [](MF &f, const std::string &name, const std::string &value) -> MF & {
            return f.output(name, value);
          },
          "name"_a, "value"_a = "", ref,
          "Marks the active tensor (or the named value `value`) as graph "
          "output\n`name`. Without any, the final active tensor is "
          "\"output\".");
}

//===----------------------------------------------------------------------===//
// Custom stages (tier 2)
//===----------------------------------------------------------------------===//

static llvm::SmallVector<int64_t, 4> shapeOf(nb::handle shape,
                                             llvm::StringRef what);

namespace {
/// Whether the custom stage call that made an Emitter or a FlowValue is
/// still running: both are valid only inside it.
using Liveness = std::shared_ptr<bool>;

/// `rlx.FlowValue`: a tensor of the model being built.
struct PyFlowValue {
  mlir::Value value;
  Liveness live;
};

/// `rlx.Emitter`: what a custom stage function gets.
struct PyEmitter {
  Emitter *emitter;
  Liveness live;

  Emitter &get() const {
    if (!*live)
      throw RLXError("this rlx.Emitter belongs to a custom stage that has "
                     "returned");
    return *emitter;
  }
  mlir::Value value(const PyFlowValue &v) const {
    if (!*v.live)
      throw RLXError("this rlx.FlowValue belongs to a custom stage that has "
                     "returned (keep values by name with set_named)");
    return v.value;
  }
  std::optional<PyFlowValue> wrap(mlir::Value v) const {
    if (!v)
      return std::nullopt;
    return PyFlowValue{v, live};
  }
  /// A sequence of FlowValues.
  llvm::SmallVector<mlir::Value> values(nb::handle sequence) const {
    llvm::SmallVector<mlir::Value> out;
    for (nb::handle v : sequence)
      out.push_back(value(nb::cast<const PyFlowValue &>(v)));
    return out;
  }
  /// The result type `result` names for op `name`: a FlowValue's, an f32
  /// tensor of a shape, or (None) the first operand's.
  mlir::Type resultType(const std::string &name,
                        llvm::ArrayRef<mlir::Value> operands,
                        nb::handle result) const {
    if (result.is_none()) {
      if (operands.empty())
        throw RLXError("op '" + name +
                       "': give `result` (it has no operand whose type it "
                       "could take)");
      return operands.front().getType();
    }
    if (nb::isinstance<PyFlowValue>(result))
      return value(nb::cast<const PyFlowValue &>(result)).getType();
    return get().tensorType(shapeOf(result, name));
  }
};
} // namespace

/// A shape with None for dynamic dimensions.
static nb::list shapeList(llvm::ArrayRef<int64_t> shape) {
  nb::list out;
  for (int64_t d : shape)
    out.append(d == kDynamic ? nb::none() : nb::cast(d));
  return out;
}

/// A Python shape (None or rlx.DYNAMIC for a dynamic dimension).
static llvm::SmallVector<int64_t, 4> shapeOf(nb::handle shape,
                                             llvm::StringRef what) {
  llvm::SmallVector<int64_t, 4> dims;
  for (nb::handle d : shape) {
    int64_t v;
    if (d.is_none() ||
        (nb::isinstance<nb::int_>(d) && nb::try_cast(d, v) && v == kDynamic)) {
      dims.push_back(kDynamic);
      continue;
    }
    dims.push_back(intInRange(
        d, what + " dimension " + llvm::Twine(dims.size()), 0, INT64_MAX));
  }
  return dims;
}

static std::string typeString(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// An attribute from a Python value: bool, int (i64), float (f32), or a
/// str in MLIR's attribute syntax.
static mlir::NamedAttribute toAttr(Emitter &e, const std::string &name,
                                   nb::handle value) {
  if (nb::isinstance<nb::bool_>(value))
    return e.builder().getNamedAttr(
        name, e.builder().getBoolAttr(nb::cast<bool>(value)));
  if (nb::isinstance<nb::int_>(value))
    return e.i64Attr(name, intInRange(value, "attribute '" + name + "'",
                                      INT64_MIN, INT64_MAX));
  if (nb::isinstance<nb::float_>(value))
    return e.f32Attr(name, nb::cast<float>(value));
  if (nb::isinstance<nb::str>(value))
    return unwrap(e.parseAttr(name, nb::cast<std::string>(value)));
  throw RLXError("attribute '" + name +
                 "': expected a bool, int, float or str (MLIR syntax), got " +
                 pyStr(value.type()));
}

/// rlx.FlowValue and rlx.Emitter.
static void registerEmitter(nb::module_ &m) {
  nb::class_<PyFlowValue>(
      m, "FlowValue",
      "A tensor of the model a custom stage builds (valid during the call).")
      .def_prop_ro(
          "shape",
          [](const PyFlowValue &v) {
            if (!*v.live)
              throw RLXError("this rlx.FlowValue belongs to a custom stage "
                             "that has returned");
            auto t = mlir::cast<mlir::RankedTensorType>(v.value.getType());
            llvm::SmallVector<int64_t, 4> dims;
            for (int64_t d : t.getShape())
              dims.push_back(mlir::ShapedType::isDynamic(d) ? kDynamic : d);
            return shapeList(dims);
          },
          nb::sig("def shape(self) -> list[int | None]"),
          "The shape; None for a dynamic dimension.")
      .def_prop_ro(
          "type",
          [](const PyFlowValue &v) {
            if (!*v.live)
              throw RLXError("this rlx.FlowValue belongs to a custom stage "
                             "that has returned");
            return typeString(v.value.getType());
          },
          "The MLIR type, e.g. 'tensor<1x?x64xf32>'.")
      .def("__repr__", [](const PyFlowValue &v) {
        return "<rlx.FlowValue " +
               (*v.live ? typeString(v.value.getType()) : "(expired)") + ">";
      });

  using Value = std::optional<PyFlowValue>;
  nb::class_<PyEmitter>(
      m, "Emitter",
      "What a custom stage function gets (ModelFlow.custom): the flow's\n"
      "active and named values, checkpoint and synthesized parameters, and\n"
      "op creation by name (HIR ops, e.g. 'hir.layer_norm'). Valid during\n"
      "the call.")
      .def_prop_rw(
          "current",
          [](const PyEmitter &e) -> Value { return e.wrap(e.get().current()); },
          [](const PyEmitter &e, const PyFlowValue &v) {
            e.get().setCurrent(e.value(v));
          },
          "The active tensor (the flow's running value).")
      .def(
          "named",
          [](const PyEmitter &e, const std::string &name) -> Value {
            return e.wrap(e.get().named(name));
          },
          "name"_a,
          "A named value of the flow (an input, a residual slot), or None.")
      .def(
          "set_named",
          [](const PyEmitter &e, const std::string &name,
             const PyFlowValue &v) { e.get().setNamed(name, e.value(v)); },
          "name"_a, "value"_a, "Names `value` for later stages.")
      .def(
          "param",
          [](const PyEmitter &e, const std::string &key, nb::handle shape) {
            return *e.wrap(unwrap(e.get().param(key, shapeOf(shape, key))));
          },
          "key"_a, "shape"_a,
          nb::sig("def param(self, key: str, shape: typing.Sequence[int]) "
                  "-> FlowValue"),
          "Checkpoint weight `key` (checked against the weights).")
      .def(
          "synth_param",
          [](const PyEmitter &e, const std::string &key, nb::handle data) {
            nb::object array = numpy().attr("asarray")(data, "float32");
            ArrayView view =
                viewArray(array, "synthesized parameter '" + key + "'");
            llvm::ArrayRef<float> values(
                reinterpret_cast<const float *>(view.bytes.data()),
                view.bytes.size() / sizeof(float));
            return *e.wrap(unwrap(e.get().synthParam(key, view.shape, values)));
          },
          "key"_a, "data"_a,
          nb::sig("def synth_param(self, key: str, data: "
                  "numpy.typing.ArrayLike) -> FlowValue"),
          "A parameter computed here (read as float32): it goes into\n"
          "BuiltModel.synthesized, loaded with the weights. A key the\n"
          "checkpoint has, or one synthesized before with other values, is\n"
          "an error.")
      .def(
          "synth_zeros",
          [](const PyEmitter &e, const std::string &key, nb::handle shape) {
            return *e.wrap(
                unwrap(e.get().synthZeros(key, shapeOf(shape, key))));
          },
          "key"_a, "shape"_a,
          nb::sig("def synth_zeros(self, key: str, shape: "
                  "typing.Sequence[int]) -> FlowValue"),
          "synth_param of zeros (a bias or LayerNorm beta the checkpoint "
          "lacks).")
      .def(
          "op",
          [](const PyEmitter &e, const std::string &name, nb::handle operands,
             nb::handle result, nb::handle attrs) -> Value {
            Emitter &em = e.get();
            llvm::SmallVector<mlir::Value> values = e.values(operands);
            mlir::Type type = e.resultType(name, values, result);
            llvm::SmallVector<mlir::NamedAttribute> attributes;
            if (!attrs.is_none())
              for (auto [k, v] : nb::cast<nb::dict>(attrs))
                attributes.push_back(
                    toAttr(em, keyString(k, "op '" + name + "' attribute"), v));
            mlir::Operation *op =
                unwrap(em.create(name, type, values, attributes));
            return e.wrap(op->getResult(0));
          },
          "name"_a, "operands"_a, nb::kw_only(), "result"_a = nb::none(),
          "attrs"_a = nb::none(),
          nb::sig("def op(self, name: str, operands: "
                  "typing.Sequence[FlowValue], *, result: FlowValue | "
                  "typing.Sequence[int | None] | None = None, attrs: "
                  "typing.Mapping[str, bool | int | float | str] | None = "
                  "None) -> FlowValue"),
          "Creates op `name` ('hir.layer_norm', ...) on `operands` and\n"
          "returns its result, verified. `result` is its type: that of a\n"
          "FlowValue, an f32 tensor of a shape, or (None) the first\n"
          "operand's. `attrs`: bool, int (i64), float (f32) or a str in\n"
          "MLIR syntax ('\"text\"', '#mir<mask_kind causal>').")
      .def(
          "custom",
          [](const PyEmitter &e, const std::string &name, nb::handle inputs,
             nb::callable body, nb::handle result) -> Value {
            Emitter &em = e.get();
            llvm::SmallVector<mlir::Value> values = e.values(inputs);
            mlir::Type type = e.resultType("hir.custom", values, result);
            mlir::Operation *op = unwrap(em.create(
                "hir.custom", type, values, {em.stringAttr("name", name)},
                /*regions=*/1));
            mlir::OpBuilder &b = em.builder();
            mlir::OpBuilder::InsertionGuard guard(b);
            mlir::Block *block = b.createBlock(&op->getRegion(0));
            nb::list args;
            for (mlir::Value v : values)
              args.append(*e.wrap(block->addArgument(v.getType(), em.loc())));
            nb::object out = nb::steal(
                PyObject_CallObject(body.ptr(), nb::tuple(args).ptr()));
            if (!out.is_valid())
              throw nb::python_error();
            if (!nb::isinstance<PyFlowValue>(out))
              throw RLXError("custom region '" + name + "': the body returns " +
                             pyStr(out.type()) +
                             ", not the rlx.FlowValue to yield");
            unwrap(em.create("hir.yield", {},
                             e.value(nb::cast<const PyFlowValue &>(out))));
            return e.wrap(op->getResult(0));
          },
          "name"_a, "inputs"_a, "body"_a, nb::kw_only(),
          "result"_a = nb::none(),
          nb::sig("def custom(self, name: str, inputs: "
                  "typing.Sequence[FlowValue], body: typing.Callable[..., "
                  "FlowValue], *, result: FlowValue | "
                  "typing.Sequence[int | None] | None = None) -> FlowValue"),
          "An hir.custom region named `name` over `inputs`, whose body\n"
          "`body(*block_arguments)` builds MIR ops with this emitter "
          "('mir.add',\n"
          "'mir.tanh', ...) and returns the value to yield; its result\n"
          "(typed as in op) is returned. Weights enter as inputs (a param\n"
          "cannot be read inside the region).")
      .def("__repr__", [](const PyEmitter &) { return "<rlx.Emitter>"; });
}

/// ModelFlow.custom: a Python function as a tier-2 stage.
/// Runs `call` (Python code given a live rlx.Emitter) with the GIL: an
/// RLXError (an emitter call's) becomes an llvm::Error with its message,
/// which the flow labels with the stage, as in C++; other exceptions leave
/// build() as they are.
static llvm::Error
callPython(Emitter &e, llvm::function_ref<void(const PyEmitter &)> call) {
  nb::gil_scoped_acquire gil;
  // The emitter and its values expire when the call returns.
  auto live = std::make_shared<bool>(true);
  std::string rlxError;
  bool ok = false;
  try {
    call(PyEmitter{&e, live});
    ok = true;
  } catch (nb::python_error &err) {
    if (err.matches(nb::module_::import_("rlx").attr("RLXError")))
      rlxError = pyStr(err.value());
    else
      setPendingPythonError(std::current_exception());
  } catch (RLXError &err) {
    rlxError = err.what();
  } catch (...) {
    setPendingPythonError(std::current_exception());
  }
  *live = false;
  if (ok)
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      rlxError.empty() ? "the Python function raised an exception" : rlxError);
}

/// A Python dict as a JSON object (through the json module), or RLXError
/// naming `what`.
static llvm::json::Object jsonObject(nb::handle dict, const std::string &what) {
  if (dict.is_none())
    return {};
  std::string text =
      nb::cast<std::string>(nb::module_::import_("json").attr("dumps")(dict));
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
  if (!v)
    throw RLXError(what + ": " + llvm::toString(v.takeError()));
  if (!v->getAsObject())
    throw RLXError(what + ": expected a dict, got " + pyStr(dict.type()));
  return std::move(*v->getAsObject());
}

static void bindFlowCustom(nb::class_<MF> &flow) {
  flow.def(
      "custom",
      [](MF &f, nb::callable fn, std::optional<std::string> name) -> MF & {
        std::string label =
            name ? *name
                 : nb::cast<std::string>(
                       nb::str(nb::getattr(fn, "__name__", nb::str("custom"))));
        return f.custom(label, [fn](Emitter &e) -> llvm::Error {
          return callPython(e, [&](const PyEmitter &pe) { fn(pe); });
        });
      },
      "fn"_a, "name"_a = nb::none(), ref,
      nb::sig("def custom(self, fn: typing.Callable[[Emitter], None], "
              "name: str | None = None) -> ModelFlow"),
      "Tier 2: `fn(emitter)` builds ops directly (rlx.Emitter), e.g.\n\n"
      "    def scaled_norm(e):\n"
      "        h = e.current.shape[-1]\n"
      "        g = e.synth_param('custom.g', numpy.full(h, 2.0))\n"
      "        b = e.synth_zeros('custom.b', [h])\n"
      "        e.current = e.op('hir.layer_norm', [e.current, g, b],\n"
      "                         attrs={'epsilon': 1e-5})\n\n"
      "    flow.custom(scaled_norm)\n\n"
      "An RLX error names the stage (`name`, else fn.__name__); an\n"
      "exception fn raises comes out of build() as it is.");
}

/// rlx.register_plugin / unregister_plugin / plugins: a Python plugin is
/// kept in the module's `_python_plugins` dict; the C++ registry holds a
/// thunk that looks it up by name (no Python object outlives the
/// interpreter in a C++ static).
/// The Python plugins by name (the module's `_python_plugins` dict).
static nb::dict pythonPlugins() {
  return nb::module_::import_("rlx._rlx").attr("_python_plugins");
}

static void registerPlugins(nb::module_ &m) {
  m.attr("_python_plugins") = nb::dict();
  m.def(
      "register_plugin",
      [](const std::string &name, nb::callable fn) {
        nb::dict plugins = pythonPlugins();
        check(PluginRegistry::global().add(
            name,
            [name](Emitter &e, const llvm::json::Object &args) -> llvm::Error {
              return callPython(e, [&](const PyEmitter &pe) {
                nb::dict plugins = pythonPlugins();
                if (!plugins.contains(name.c_str()))
                  throw RLXError("the Python function was unregistered");
                std::string text;
                llvm::raw_string_ostream os(text);
                os << llvm::json::Value(llvm::json::Object(args));
                nb::object pyArgs =
                    nb::module_::import_("json").attr("loads")(os.str());
                plugins[name.c_str()](pe, pyArgs);
              });
            }));
        plugins[name.c_str()] = fn;
      },
      "name"_a, "fn"_a,
      nb::sig("def register_plugin(name: str, fn: typing.Callable[[Emitter, "
              "dict[str, typing.Any]], None]) -> None"),
      "Registers `fn(emitter, args)` as the plugin `name` that\n"
      "ModelFlow.plugin(name, args) places in a flow (an architecture block\n"
      "kept outside RLX). A name taken is an error.");
  m.def(
      "unregister_plugin",
      [](const std::string &name) {
        nb::dict plugins = pythonPlugins();
        if (plugins.contains(name.c_str()))
          nb::del(plugins[name.c_str()]);
        return PluginRegistry::global().remove(name);
      },
      "name"_a, "Removes plugin `name`; False when there was none.");
  m.def(
      "plugins", []() { return PluginRegistry::global().names(); },
      "The registered plugin names (Python and C++), sorted.");
}

/// Streams, named scopes and plugins.
static void bindFlowStreams(nb::class_<MF> &flow) {
  flow.def(
          "bind_inputs_to_streams",
          [](MF &f, const std::map<std::string, std::string> &map) -> MF & {
            return f.bindInputsToStreams({map.begin(), map.end()});
          },
          "map"_a, ref,
          "Each declared input (key) becomes a stream (value): "
          "{'hidden': 'img', 'encoder': 'txt'}.")
      .def(
          "store_stream",
          [](MF &f, const std::string &id) -> MF & {
            return f.storeStream(id);
          },
          "id"_a, ref, "The active tensor becomes stream `id`.")
      .def(
          "load_stream",
          [](MF &f, const std::string &id) -> MF & { return f.loadStream(id); },
          "id"_a, ref, "Stream `id` becomes the active tensor.")
      .def(
          "dual_stream",
          [](MF &f, const std::string &name, const std::string &a,
             const std::string &b, nb::callable fn) -> MF & {
            return f.dualStream(
                name, a, b,
                [fn](Emitter &e, mlir::Value &x,
                     mlir::Value &y) -> llvm::Error {
                  return callPython(e, [&](const PyEmitter &pe) {
                    nb::object out = fn(pe, *pe.wrap(x), *pe.wrap(y));
                    if (!nb::isinstance<nb::tuple>(out) || nb::len(out) != 2 ||
                        !nb::isinstance<PyFlowValue>(out[0]) ||
                        !nb::isinstance<PyFlowValue>(out[1]))
                      throw RLXError("the function returns " +
                                     pyStr(out.type()) +
                                     ", not the two streams' new "
                                     "rlx.FlowValues (a, b)");
                    x = pe.value(nb::cast<const PyFlowValue &>(out[0]));
                    y = pe.value(nb::cast<const PyFlowValue &>(out[1]));
                  });
                });
          },
          "name"_a, "a"_a, "b"_a, "fn"_a, ref,
          nb::sig("def dual_stream(self, name: str, a: str, b: str, fn: "
                  "typing.Callable[[Emitter, FlowValue, FlowValue], "
                  "tuple[FlowValue, FlowValue]]) -> ModelFlow"),
          "Transforms streams `a` and `b` together: `fn(emitter, a, b)` "
          "returns their new values.")
      .def(
          "named",
          [](MF &f, const std::string &name, const PyStage &s) -> MF & {
            return f.named(name, s.fn);
          },
          "name"_a, "stage"_a, ref,
          "`stage` in a named scope: its errors name it.")
      .def(
          "plugin",
          [](MF &f, const std::string &name, nb::handle args) -> MF & {
            return f.plugin(name,
                            jsonObject(args, "plugin '" + name + "' args"));
          },
          "name"_a, "args"_a = nb::none(), ref,
          nb::sig("def plugin(self, name: str, args: dict[str, typing.Any] | "
                  "None = None) -> ModelFlow"),
          "The registered plugin `name` (rlx.register_plugin, or one a C++ "
          "library registered) with `args` (JSON-like).");
}

/// Building: the flow as a stage, or as an HIR module.
static void bindFlowBuild(nb::class_<MF> &flow) {
  flow.def(
          "to_stage",
          [](const MF &f) {
            return PyStage{stageOfFlow(f), "flow " + f.getName()};
          },
          "The blocks of this flow as one stage (to compose flow fragments).")
      .def(
          "build",
          [](const MF &f, nb::handle weights) {
            PyWeights w = toWeights(weights);
            return unwrap(f.build(*w.source));
          },
          "weights"_a,
          nb::sig("def build(self, weights: Weights | str | "
                  "os.PathLike[str] | typing.Mapping[str, "
                  "numpy.typing.ArrayLike]) -> BuiltModel"),
          "Builds the HIR module, checking every weight against `weights`.")
      .def("__repr__",
           [](const MF &f) { return "<rlx.ModelFlow " + f.getName() + ">"; });
}

/// ModelFlow, by concern.
static void registerModelFlow(nb::module_ &m) {
  nb::class_<MF> flow(
      m, "ModelFlow",
      "A model as a fluent flow of blocks that builds an HIR module:\n\n"
      "    flow = (rlx.ModelFlow(\"tiny\")\n"
      "            .input(\"tokens\", [1, None], \"i32\")\n"
      "            .input(\"positions\", [1, None], \"i32\")\n"
      "            .token_embed()\n"
      "            .repeat_layers(2, lambda i: "
      "rlx.llama_prefill_layer_fused(i, spec(i)))\n"
      "            .final_norm(1e-5)\n"
      "            .lm_head(tied=True)\n"
      "            .output(\"logits\"))\n"
      "    built = flow.build(weights)\n\n"
      "Weights are named by Hugging Face conventions; build() checks every\n"
      "weight the flow uses and names a missing or mis-shaped one.");
  bindFlowConstruction(flow);
  bindFlowBlocks(flow);
  bindFlowLayers(flow);
  bindFlowHeads(flow);
  bindFlowCustom(flow);
  bindFlowStreams(flow);
  bindFlowBuild(flow);
}

/// What ModelFlow.build returns.
static void registerBuiltModel(nb::module_ &m) {
  nb::class_<BuiltModel>(
      m, "BuiltModel",
      "What ModelFlow.build returns: an HIR module as MLIR text, its "
      "profile,\nits input and output names, and the parameters the flow "
      "synthesized\n(loaded with the weights by CompiledModel.load_params).")
      .def_ro("name", &BuiltModel::name)
      .def_ro("mlir", &BuiltModel::mlir, "The HIR module (MLIR text).")
      .def_ro("profile", &BuiltModel::profile)
      .def_ro("inputs", &BuiltModel::inputs)
      .def_ro("outputs", &BuiltModel::outputs)
      .def_ro("params", &BuiltModel::params,
              "The checkpoint weights the model reads (not the synthesized "
              "ones), sorted.")
      .def_prop_ro(
          "synthesized",
          [](const BuiltModel &b) {
            std::shared_ptr<const WeightSource> s = b.synthesized;
            if (!s)
              s = std::make_shared<TensorMap>("<synthesized>");
            return PyWeights{s};
          },
          "Parameters computed by the flow (RoPE frequencies, ...).")
      .def("__str__", [](const BuiltModel &b) { return b.mlir; })
      .def("__repr__", [](const BuiltModel &b) {
        std::string ins, outs;
        for (const std::string &s : b.inputs)
          ins += (ins.empty() ? "" : ", ") + s;
        for (const std::string &s : b.outputs)
          outs += (outs.empty() ? "" : ", ") + s;
        return "<rlx.BuiltModel " + b.name + " (" + ins + ") -> (" + outs +
               ")>";
      });
}

//===----------------------------------------------------------------------===//
// Recipes
//===----------------------------------------------------------------------===//

/// The signature of the recipes' `build(weights)`.
static constexpr const char *kBuildSignature =
    "def build(self, weights: Weights | str | os.PathLike[str] | "
    "typing.Mapping[str, numpy.typing.ArrayLike]) -> BuiltModel";

/// `recipe.build(weights)` for anything toWeights takes.
template <typename Recipe>
static BuiltModel buildRecipe(const Recipe &r, nb::handle weights) {
  PyWeights w = toWeights(weights);
  return unwrap(r.build(*w.source));
}

/// The recipe for an HF model directory.
template <typename Recipe> static Recipe recipeFromDir(nb::handle path) {
  return unwrap(Recipe::fromModelDir(pathString(path)));
}

template <typename Recipe> static Recipe recipeFromPath(nb::handle path) {
  std::string p = pathString(path);
  if (llvm::StringRef(p).ends_with(".gguf"))
    return Recipe(loadConfig(p));
  return unwrap(Recipe::fromModelDir(p));
}

static std::function<Stage(LayerCtx &)> layerHook(nb::callable fn) {
  return [fn](LayerCtx &ctx) -> Stage {
    return guardedCall<Stage>(
        [&] { return toStage(fn(LayerCtx(ctx))); },
        failingStage("layer " + std::to_string(ctx.index()) +
                     ": the Python layer hook raised an exception"));
  };
}

static std::function<void(ModelFlow &)> flowPatch(nb::callable fn) {
  return [fn](ModelFlow &flow) {
    guardedCall<int>(
        [&] {
          nb::object copy = nb::cast(ModelFlow(flow));
          fn(copy);
          flow = nb::cast<ModelFlow &>(copy);
          return 0;
        },
        0);
  };
}

/// LayerCtx, DecoderFlow and its families (LLaMA 3.2, Qwen3, Gemma 2).
static void registerDecoderRecipes(nb::module_ &m) {
  nb::class_<LayerCtx>(m, "LayerCtx", "What a decoder layer hook sees.")
      .def_prop_ro("index", &LayerCtx::index, "The layer index.")
      .def_prop_ro("spec", &LayerCtx::spec,
                   "The layer's spec (attention, weight prefix, norms).")
      .def(
          "default_stage",
          [](const LayerCtx &c) {
            return PyStage{c.defaultStage(),
                           "layer " + std::to_string(c.index())};
          },
          "The recipe's own stage for this layer.");

  using DF = DecoderFlow;
  nb::class_<DF>(
      m, "DecoderFlow",
      "A decoder-only LM recipe (LLaMA, Qwen3 and Gemma 2 share it), "
      "built\nfrom a config, customized by hooks:\n\n"
      "    recipe = rlx.Llama32Flow.from_model_dir(path)\n"
      "    recipe.layer(lambda ctx: ctx.default_stage())\n"
      "    built = recipe.build(rlx.load_weights(path))\n")
      .def(nb::init<TransformerConfig, std::string>(), "config"_a,
           "family"_a = "llama")
      .def(
          "for_prefill", [](DF &r) -> DF & { return r.forPrefill(); }, ref,
          "Builds the prefill graph: tokens, positions -> logits.")
      .def(
          "for_decode", [](DF &r) -> DF & { return r.forDecode(); }, ref,
          "Builds the KV-cache step: tokens, positions, past_k.N, past_v.N,\n"
          "kv_mask -> logits of the last position, present_k.N, "
          "present_v.N.")
      .def(
          "profile",
          [](DF &r, nb::handle p, nb::handle decode) -> DF & {
            if (decode.is_none())
              return r.profile(toProfile(p));
            return r.profile(toProfile(p), toProfile(decode));
          },
          "profile"_a, "decode"_a = nb::none(), ref,
          nb::sig("def profile(self, profile: CompileProfile | str, decode: "
                  "CompileProfile | str | None = None) -> DecoderFlow"),
          "The compile profile of the prefill and decode graphs, or of the\n"
          "prefill graph when `decode` gives the decode graph's (default:\n"
          "the llama32_prefill / llama32_decode presets).")
      .def(
          "weight_precision",
          [](DF &r, const std::string &w) -> DF & {
            return r.weightPrecision(
                enumArgument("weight_precision", w, symbolizeWeightPrecision));
          },
          "precision"_a, ref,
          "The weight matrices: 'stored' (as the file stores them, down to "
          "the\nkernels), 'f32', or 'bf16', 'f16', 'q8_0', 'q4_0' (converted "
          "when\nloaded); overrides the profile's [precision] weights.")
      .def(
          "kv_cache_precision",
          [](DF &r, const std::string &k) -> DF & {
            return r.kvCachePrecision(enumArgument("kv_cache_precision", k,
                                                   symbolizeComputePrecision));
          },
          "precision"_a, ref,
          "The element type of the decode graphs' KV cache: 'f32', 'f16' or\n"
          "'bf16' (attention reads it widened and computes in f32; CPU "
          "only);\noverrides the profile's [precision] kv_cache.")
      .def(
          "compute_precision",
          [](DF &r, const std::string &c) -> DF & {
            return r.computePrecision(enumArgument("compute_precision", c,
                                                   symbolizeComputePrecision));
          },
          "precision"_a, ref,
          "The element type of the activations between ops: 'f32', 'f16' "
          "or\n'bf16' (each value one op passes to another is rounded to it; "
          "the\nkernels compute in f32; Vulkan: f16 only); overrides the "
          "profile's\n"
          "[precision] compute.")
      .def(
          "tensor_parallel",
          [](DF &r, int64_t ranks) -> DF & {
            if (ranks < 1)
              throw nb::value_error(
                  ("tensor_parallel: ranks must be at least 1, got " +
                   std::to_string(ranks))
                      .c_str());
            return r.tensorParallel(ranks);
          },
          "ranks"_a, ref,
          "Splits the graphs over `ranks` MPI processes (the profile's\n"
          "[parallel] tensor): run the script under mpirun -np ranks; each "
          "rank\ncompiles its share of every layer, of the vocabulary and of "
          "the KV\ncache (docs/Distributed.md).")
      .def(
          "last_token_logits",
          [](DF &r, bool enable) -> DF & { return r.lastTokenLogits(enable); },
          "enable"_a = true, ref,
          "Logits of the last position only (default for decode).")
      .def(
          "layer",
          [](DF &r, nb::callable hook) -> DF & {
            return r.layer(layerHook(hook));
          },
          "hook"_a, ref,
          nb::sig("def layer(self, hook: typing.Callable[[LayerCtx], Stage "
                  "| LayerStack | ModelFlow]) -> DecoderFlow"),
          "Replaces each layer's stage by hook(ctx); ctx.default_stage() is "
          "the\nrecipe's own. An exception in the hook is raised by build().")
      .def(
          "before_layers",
          [](DF &r, nb::handle s) -> DF & {
            return r.beforeLayers(toStage(s));
          },
          "stage"_a, ref,
          nb::sig("def before_layers(self, stage: Stage | LayerStack | "
                  "ModelFlow) -> DecoderFlow"),
          "Adds a stage before the first layer.")
      .def(
          "after_layers",
          [](DF &r, nb::handle s) -> DF & { return r.afterLayers(toStage(s)); },
          "stage"_a, ref,
          nb::sig("def after_layers(self, stage: Stage | LayerStack | "
                  "ModelFlow) -> DecoderFlow"),
          "Adds a stage after the last layer.")
      .def(
          "patch_flow",
          [](DF &r, nb::callable patch) -> DF & {
            return r.patchFlow(flowPatch(patch));
          },
          "patch"_a, ref,
          nb::sig("def patch_flow(self, patch: typing.Callable[[ModelFlow], "
                  "object]) -> DecoderFlow"),
          "Edits the assembled flow: patch(flow) may call any ModelFlow "
          "method.")
      .def_prop_ro("config", &DF::config, "The model's config.")
      .def_prop_ro(
          "graph",
          [](const DF &r) {
            return r.graph() == DecoderGraph::Prefill ? "prefill" : "decode";
          },
          "\"prefill\" or \"decode\".")
      .def("layer_spec", &DF::layerSpec, "index"_a,
           "The spec of layer `index`.")
      .def(
          "flow",
          [](const DF &r) {
            ModelFlow f = r.flow();
            rethrowPendingPythonError();
            return f;
          },
          "The assembled ModelFlow.")
      .def("build", &buildRecipe<DF>, "weights"_a, nb::sig(kBuildSignature),
           "Builds the HIR module, checking every weight.");

  nb::class_<Llama32Flow, DF>(m, "Llama32Flow",
                              "LLaMA 3.2 (and any LLaMA-architecture "
                              "checkpoint).")
      .def(nb::init<TransformerConfig>(), "config"_a)
      .def_static("from_model_dir", &recipeFromPath<Llama32Flow>, "path"_a,
                  nb::sig("def from_model_dir(path: str | os.PathLike[str]) "
                          "-> Llama32Flow"),
                  "The recipe for an HF model directory (config.json) or a "
                  "LLaMA GGUF file.");
  nb::class_<Qwen3Flow, DF>(m, "Qwen3Flow",
                            "Qwen3: LLaMA layers with per-head QK RMSNorm.")
      .def(nb::init<TransformerConfig>(), "config"_a)
      .def_static("from_model_dir", &recipeFromPath<Qwen3Flow>, "path"_a,
                  nb::sig("def from_model_dir(path: str | os.PathLike[str]) "
                          "-> Qwen3Flow"),
                  "The recipe for an HF model directory.");
  nb::class_<GemmaFlow, DF>(m, "GemmaFlow",
                            "Gemma 2: (1+w) sandwich norms, GeGLU, embedding "
                            "scale, soft-capped\nattention and logits, "
                            "alternating sliding-window layers.")
      .def(nb::init<TransformerConfig>(), "config"_a)
      .def_static("from_model_dir", &recipeFromPath<GemmaFlow>, "path"_a,
                  nb::sig("def from_model_dir(path: str | os.PathLike[str]) "
                          "-> GemmaFlow"),
                  "The recipe for an HF model directory.");

  m.def(
      "decoder_flow_for",
      [](const TransformerConfig &c) { return unwrap(decoderFlowFor(c)); },
      "config"_a,
      "The decoder recipe for config.model_type (llama, qwen3, gemma2).");
}

/// Qwen3NextFlow, the hybrid Gated DeltaNet / attention LM (prompt graph).
static void registerQwen3NextRecipe(nb::module_ &m) {
  nb::class_<Qwen3NextFlow>(
      m, "Qwen3NextFlow",
      "Qwen3-Next (Qwen3NextForCausalLM): Gated DeltaNet layers interleaved "
      "with gated\nattention, mixtures of experts: tokens and positions "
      "[1, T] (int32) to\nlogits [1, T, vocab], each layer's state carried "
      "from step to step.")
      .def_static("from_model_dir", &recipeFromDir<Qwen3NextFlow>, "path"_a,
                  nb::sig("def from_model_dir(path: str | os.PathLike[str]) -> "
                          "Qwen3NextFlow"),
                  "The recipe for an HF model directory.")
      .def_prop_ro(
          "config", [](const Qwen3NextFlow &r) { return r.config().base; },
          "The common keys of its config.")
      .def_prop_ro(
          "linear_layers",
          [](const Qwen3NextFlow &r) { return r.config().linearLayers; },
          "Per layer: Gated DeltaNet (True) or full attention.")
      .def("flow", &Qwen3NextFlow::flow, "tokens"_a, "past"_a = -1,
           "masked"_a = false,
           "The assembled ModelFlow for `tokens` new tokens: the prompt "
           "graph (past < 0)\nor a decode graph after `past` tokens (masked: "
           "one token over a past\nbucket, with a kv_mask input).")
      .def(
          "build",
          [](const Qwen3NextFlow &r, nb::handle weights, int64_t tokens,
             int64_t past, bool masked) {
            PyWeights w = toWeights(weights);
            return unwrap(r.build(*w.source, tokens, past, masked));
          },
          "weights"_a, "tokens"_a, "past"_a = -1, "masked"_a = false,
          nb::sig("def build(self, weights: Weights | str | "
                  "os.PathLike[str] | typing.Mapping[str, "
                  "numpy.typing.ArrayLike], tokens: int, past: int = -1, "
                  "masked: bool = False) -> BuiltModel"),
          "Builds the HIR module, checking every weight. Each graph gives "
          "each layer's\nstate (present_conv_state.N, "
          "present_recurrent_state.N, present_k.N,\npresent_v.N); a decode "
          "graph takes them back (conv_state.N,\nrecurrent_state.N, past_k.N, "
          "past_v.N).");
}

/// FluxFlow, diffusers' FluxTransformer2DModel.
static void registerFluxRecipe(nb::module_ &m) {
  nb::class_<FluxConfig>(m, "FluxConfig",
                         "The keys of a diffusers FluxTransformer2DModel "
                         "config.json.")
      .def_ro("patch_size", &FluxConfig::patchSize)
      .def_ro("in_channels", &FluxConfig::inChannels)
      .def_prop_ro("out_channels", &FluxConfig::out)
      .def_ro("num_layers", &FluxConfig::numLayers)
      .def_ro("num_single_layers", &FluxConfig::numSingleLayers)
      .def_ro("attention_head_dim", &FluxConfig::headDim)
      .def_ro("num_attention_heads", &FluxConfig::numHeads)
      .def_ro("joint_attention_dim", &FluxConfig::jointDim)
      .def_ro("pooled_projection_dim", &FluxConfig::pooledDim)
      .def_ro("guidance_embeds", &FluxConfig::guidance)
      .def_ro("axes_dims_rope", &FluxConfig::axesDims);
  nb::class_<FluxFlow>(
      m, "FluxFlow",
      "FLUX's double-stream transformer as a flow of image and text "
      "streams.\nInputs: hidden_states, encoder_hidden_states, "
      "pooled_projections, timestep,\nimg_ids and txt_ids (int32), guidance "
      "(with guidance embeddings); output:\nsample.")
      .def_static(
          "from_model_dir", &recipeFromDir<FluxFlow>, "path"_a,
          nb::sig("def from_model_dir(path: str | os.PathLike[str]) -> "
                  "FluxFlow"),
          "The transformer of a diffusers model directory (its config.json).")
      .def(
          "shape",
          [](FluxFlow &r, int64_t batch, int64_t image, int64_t text)
              -> FluxFlow & { return r.shape(batch, image, text); },
          "batch"_a, "image_tokens"_a, "text_tokens"_a, ref,
          "The batch and the token counts the flow takes.")
      .def_prop_ro("config", &FluxFlow::config)
      .def("flow", &FluxFlow::flow, "The assembled ModelFlow.")
      .def("build", &buildRecipe<FluxFlow>, "weights"_a,
           nb::sig(kBuildSignature),
           "Builds the HIR module, checking every weight.");
}

/// VisionFlow, the ViT / DINOv2 image-encoder recipe.
static void registerVisionRecipe(nb::module_ &m) {
  nb::class_<VisionFlow>(
      m, "VisionFlow",
      "Image encoders (ViTModel, Dinov2Model, Dinov2WithRegistersModel): "
      "patch\nembedding, [CLS] and register tokens, resized position "
      "embeddings, pre-LN\nlayers, final LayerNorm. Input: pixel_values "
      "[batch, channels, height, width];\noutputs last_hidden_state and "
      "pooler_output (DINOv2's [CLS] row, ViT's pooler).")
      .def(nb::init<TransformerConfig>(), "config"_a)
      .def_static("from_model_dir", &recipeFromDir<VisionFlow>, "path"_a,
                  nb::sig("def from_model_dir(path: str | os.PathLike[str]) -> "
                          "VisionFlow"),
                  "The recipe for an HF model directory.")
      .def(
          "image_size",
          [](VisionFlow &r, int64_t height, int64_t width) -> VisionFlow & {
            return r.imageSize(height, width);
          },
          "height"_a, "width"_a, ref,
          "The image size to build for (default: the config's image_size).")
      .def(
          "weight_prefix",
          [](VisionFlow &r, std::string prefix) -> VisionFlow & {
            return r.weightPrefix(std::move(prefix));
          },
          "prefix"_a, ref,
          "Weight keys carry this prefix (\"vit.\", \"dinov2.\"); detected "
          "when unset.")
      .def(
          "allow_unused_weights",
          [](VisionFlow &r, bool allow) -> VisionFlow & {
            return r.allowUnusedWeights(allow);
          },
          "allow"_a = true, ref,
          "Tensors the recipe does not read are warnings, not an error.")
      .def_prop_ro("config", &VisionFlow::config)
      .def_prop_ro("image", &VisionFlow::image,
                   "(height, width) the flow takes.")
      .def(
          "flow",
          [](const VisionFlow &r, const std::string &prefix, bool pooler) {
            return r.flow(prefix, pooler);
          },
          "prefix"_a = "", "pooler"_a = false,
          "The assembled ModelFlow for weight prefix `prefix` (with ViT's "
          "pooler).")
      .def("build", &buildRecipe<VisionFlow>, "weights"_a,
           nb::sig(kBuildSignature),
           "Builds the HIR module, checking every weight.");
}

/// BertFlow, the BERT encoder recipe.
static void registerBertRecipe(nb::module_ &m) {
  nb::class_<BertFlow>(
      m, "BertFlow",
      "BERT encoders (BertModel): embeddings, post-LN encoder layers; "
      "outputs\nthe last hidden state and, with mean_pooled(), the "
      "attention-masked mean.\nInputs: input_ids, attention_mask, "
      "position_ids, token_type_ids.")
      .def(nb::init<TransformerConfig>(), "config"_a)
      .def_static("from_model_dir", &recipeFromDir<BertFlow>, "path"_a,
                  nb::sig("def from_model_dir(path: str | os.PathLike[str]) -> "
                          "BertFlow"),
                  "The recipe for an HF model directory.")
      .def(
          "mean_pooled",
          [](BertFlow &r, bool enable) -> BertFlow & {
            return r.meanPooled(enable);
          },
          "enable"_a = true, ref,
          "Also output the masked mean "
          "(sentence-transformers).")
      .def(
          "layer",
          [](BertFlow &r, nb::callable fn) -> BertFlow & {
            return r.layer([fn](unsigned i, const BertLayerSpec &spec) {
              return guardedCall<Stage>(
                  [&] { return toStage(fn(i, BertLayerSpec(spec))); },
                  failingStage("layer " + std::to_string(i) +
                               ": the Python layer hook raised an exception"));
            });
          },
          "hook"_a, ref,
          nb::sig("def layer(self, hook: typing.Callable[[int, "
                  "BertLayerSpec], Stage | LayerStack | ModelFlow]) -> "
                  "BertFlow"),
          "Replaces each layer by hook(index, spec) "
          "(rlx.bert_encoder_layer(spec)\nis the default).")
      .def(
          "patch_flow",
          [](BertFlow &r, nb::callable patch) -> BertFlow & {
            return r.patchFlow(flowPatch(patch));
          },
          "patch"_a, ref,
          nb::sig("def patch_flow(self, patch: typing.Callable[[ModelFlow], "
                  "object]) -> BertFlow"),
          "Edits the assembled flow.")
      .def(
          "weight_prefix",
          [](BertFlow &r, std::string prefix) -> BertFlow & {
            return r.weightPrefix(std::move(prefix));
          },
          "prefix"_a, ref,
          "Weight keys carry this prefix (\"bert.\"); detected when unset.")
      .def_prop_ro("config", &BertFlow::config)
      .def(
          "flow",
          [](const BertFlow &r, const std::string &prefix) {
            ModelFlow f = r.flow(prefix);
            rethrowPendingPythonError();
            return f;
          },
          "prefix"_a = "",
          "The assembled ModelFlow for weight prefix "
          "`prefix`.")
      .def("build", &buildRecipe<BertFlow>, "weights"_a,
           nb::sig(kBuildSignature),
           "Builds the HIR module, checking every weight.");
}

void python::registerFlow(nb::module_ &m) {
  registerSpecs(m);
  registerConfig(m);
  registerStages(m);
  registerPlugins(m);
  registerLayerStack(m);
  registerEmitter(m);
  registerModelFlow(m);
  registerBuiltModel(m);
  registerDecoderRecipes(m);
  registerBertRecipe(m);
  registerVisionRecipe(m);
  registerFluxRecipe(m);
  registerQwen3NextRecipe(m);
}
