//===- ModelFlow.h - Build models from blocks ------------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Tier 0 of RLX for model authors: a fluent ModelFlow of blocks (token
// embedding, norms, attention, feed-forward blocks, whole decoder and
// encoder layers, LM head) that builds an HIR module without the author
// touching MLIR. Tier 1 is the CompileProfile the flow carries; tier 2 is
// `custom`, whose Emitter exposes an OpBuilder and the flow's state.
//
//   ModelFlow("tiny_llama")
//       .input("tokens", {1, kDynamic}, DType::I32)
//       .tokenEmbed()
//       .repeatLayers(2, [&](unsigned i) { return llamaPrefillLayerFused(i,
//       spec); }) .finalNorm(1e-5) .gatherLastToken() .lmHead(/*tied=*/true)
//       .build(weights);
//
// Weights are named by Hugging Face conventions (model.layers.N.self_attn.
// q_proj.weight, ...). build() checks every weight the flow uses against the
// WeightSource: a missing or mis-shaped one is an error naming the key and
// the layer.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_FLOW_MODELFLOW_H
#define RLX_FLOW_MODELFLOW_H

#include "RLX/Profile/CompileProfile.h"
#include "RLX/Weights/WeightSource.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class NamedAttribute;
class OpBuilder;
class Operation;
class Location;
class RankedTensorType;
class Type;
class TypeRange;
class Value;
class ValueRange;
} // namespace mlir

namespace rlx {

/// A dynamic dimension of a flow input (sequence or past length).
constexpr int64_t kDynamic = std::numeric_limits<int64_t>::min();

/// The result of ModelFlow::build: an HIR module (as MLIR text, so it can be
/// compiled by any Session), its profile, and the parameters the flow
/// synthesized (RoPE frequencies, ...) to load next to the checkpoint's.
struct BuiltModel {
  std::string name;
  std::string mlir;
  CompileProfile profile;
  std::vector<std::string> inputs, outputs;
  /// Parameters computed by the flow, loaded with the weights.
  std::shared_ptr<TensorMap> synthesized;
  /// The weights of the checkpoint the model reads (not the synthesized
  /// ones), sorted.
  std::vector<std::string> params;
  /// What the tools should tell the user (config keys RLX does not know,
  /// weights left unused under an option...), one message each.
  std::vector<std::string> warnings;
};

/// Attention configuration shared by the attention blocks and layers.
struct AttentionSpec {
  int64_t numHeads = 1, numKvHeads = 1, headDim = 1;
  /// 0: head_dim.
  int64_t rotaryDim = 0;
  float ropeTheta = 10000.0f;
  bool interleavedRope = false;
  /// 0: 1/sqrt(head_dim).
  float scale = 0.0f;
  float softcap = 0.0f;
  /// > 0: sliding-window attention.
  int64_t window = 0;
  bool causal = true;
};

/// A mixture-of-experts MLP (Mixtral, Qwen2-MoE, Qwen3-MoE): a router picks
/// `expertsPerToken` of `numExperts` SwiGLU experts per token.
struct MoeSpec {
  /// 0: the layer's MLP is dense.
  int64_t numExperts = 0;
  int64_t expertsPerToken = 0;
  /// Each expert's intermediate size.
  int64_t intermediate = 0;
  /// Renormalize the picked experts' probabilities to sum 1.
  bool normTopKProb = false;
  /// > 0: a shared expert of this intermediate size every token runs,
  /// scaled by a sigmoid gate (Qwen2-MoE).
  int64_t sharedIntermediate = 0;
  /// Weight names: Mixtral's `block_sparse_moe.{gate, experts.E.w1/w3/w2}`,
  /// else Qwen's `mlp.{gate, experts.E.{gate,up,down}_proj, shared_expert.*,
  /// shared_expert_gate}`.
  bool mixtralNames = false;
};

/// A decoder layer: its attention, norms and MLP.
struct DecoderLayerSpec {
  AttentionSpec attention;
  int64_t hidden = 0, intermediate = 0;
  float rmsEpsilon = 1e-5f;
  /// Weight key prefix, e.g. "model.layers.3."
  std::string prefix;
  /// Qwen3: per-head RMSNorm of q and k.
  bool qkNorm = false;
  /// Gemma 2: (1 + w) norms, sandwich norms, GeGLU.
  bool gemma = false;
  /// A (synthesized) `[rotary_dim / 2]` parameter overriding theta (LLaMA 3
  /// scaled RoPE); empty for plain RoPE.
  std::string invFreqKey;
  /// Biases: `self_attn.{q,k,v}_proj.bias` (LLaMA attention_bias, Qwen2),
  /// `self_attn.o_proj.bias` (LLaMA attention_bias), `mlp.{gate,up,down}_
  /// proj.bias` (LLaMA mlp_bias).
  bool qkvBias = false, outBias = false, mlpBias = false;
  /// The MLP gate's activation by its HIR name ("silu", "gelu",
  /// "gelu_tanh", "relu", ...); empty: the family's (SiLU; tanh GELU for
  /// Gemma).
  std::string mlpActivation;
  /// A mixture of experts in place of the dense MLP (numExperts > 0).
  MoeSpec moe;
};

/// A BERT encoder layer.
struct BertLayerSpec {
  int64_t numHeads = 1, headDim = 1, hidden = 0, intermediate = 0;
  float layerNormEpsilon = 1e-12f;
  /// Weight key prefix, e.g. "encoder.layer.3."
  std::string prefix;
  /// The FFN activation by its HIR name: "gelu" (exact), "gelu_tanh",
  /// "relu", "silu", ...
  std::string activation = "gelu";
};

class FlowContext;

/// Tier 2: what a custom stage (ModelFlow::custom) gets. It builds HIR ops,
/// or `hir.custom` regions of MIR ops, directly, at the flow's insertion
/// point in the model function:
///
///   flow.custom("scaled_norm", [](Emitter &e) -> llvm::Error {
///     mlir::Value x = e.current();
///     int64_t h = e.shape(x).back();
///     auto g = e.synthParam("custom.scale", {h}, std::vector<float>(h, 2));
///     auto b = e.synthZeros("custom.beta", {h});
///     if (!g || !b)
///       return llvm::joinErrors(g.takeError(), b.takeError());
///     auto y = e.create("hir.layer_norm", x.getType(), {x, *g, *b},
///                       {e.f32Attr("epsilon", 1e-5f)});
///     if (!y)
///       return y.takeError();
///     e.setCurrent((*y)->getResult(0));
///     return llvm::Error::success();
///   });
///
/// Ops are created by name (`create`), so a custom stage needs only this
/// header and MLIR's own (mlir/IR/Builders.h for values and types); the
/// typed op classes of RLX/Dialect/{HIR,MIR}/IR/*Ops.h work too.
class Emitter {
public:
  explicit Emitter(FlowContext &ctx) : ctx(ctx) {}
  mlir::OpBuilder &builder();
  mlir::Location loc();
  /// The active tensor (the flow's running value).
  mlir::Value current();
  void setCurrent(mlir::Value v);
  /// A named value of the flow ("tokens", "positions", a residual slot...);
  /// null when there is none.
  mlir::Value named(llvm::StringRef name);
  void setNamed(llvm::StringRef name, mlir::Value v);
  /// Stream `id` of a multi-stream flow ("img", "txt", "main", any
  /// string); null when the flow has no such stream.
  mlir::Value stream(llvm::StringRef id);
  void setStream(llvm::StringRef id, mlir::Value v);

  /// A weight of the checkpoint as `hir.param`, checked against the source:
  /// a missing or mis-shaped weight is an error naming the key.
  llvm::Expected<mlir::Value> param(llvm::StringRef key,
                                    llvm::ArrayRef<int64_t> shape);
  /// A parameter the flow computes instead of reading it from the
  /// checkpoint (rotary tables, a constant scale): `data` (row-major f32,
  /// as many values as `shape` holds) is added to BuiltModel::synthesized
  /// under `key`, loaded with the weights, and read as `hir.param`. A key
  /// the checkpoint has is an error (it would shadow the weight), and so is
  /// synthesizing a key again with another shape or other values; the same
  /// shape and values return the same parameter (layers may share one).
  llvm::Expected<mlir::Value> synthParam(llvm::StringRef key,
                                         llvm::ArrayRef<int64_t> shape,
                                         llvm::ArrayRef<float> data);
  /// synthParam of zeros (a bias or LayerNorm beta the checkpoint lacks).
  llvm::Expected<mlir::Value> synthZeros(llvm::StringRef key,
                                         llvm::ArrayRef<int64_t> shape);

  /// Creates op `name` ("hir.add", "hir.custom", ...) with `results`,
  /// `operands`, `attributes` and `regions` empty regions at the insertion
  /// point. An op no loaded dialect registers is an error naming it; an op
  /// without regions is verified at once (an error naming the op with the
  /// verifier's message), one with regions when the flow is built, as its
  /// body is filled after this.
  llvm::Expected<mlir::Operation *>
  create(llvm::StringRef name, mlir::TypeRange results,
         mlir::ValueRange operands,
         llvm::ArrayRef<mlir::NamedAttribute> attributes, unsigned regions = 0);
  llvm::Expected<mlir::Operation *> create(llvm::StringRef name,
                                           mlir::TypeRange results,
                                           mlir::ValueRange operands);
  /// `name = value : f32`, `name = value : i64`, `name = "value"`.
  mlir::NamedAttribute f32Attr(llvm::StringRef name, float value);
  mlir::NamedAttribute i64Attr(llvm::StringRef name, int64_t value);
  mlir::NamedAttribute stringAttr(llvm::StringRef name, llvm::StringRef value);
  /// An attribute in MLIR's syntax (`#mir<mask_kind causal>`, `[1, 2]`), or
  /// an error naming `name`.
  llvm::Expected<mlir::NamedAttribute> parseAttr(llvm::StringRef name,
                                                 llvm::StringRef text);
  /// The f32 tensor type of `shape` (kDynamic for a dynamic dimension).
  mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape);
  /// The shape of a ranked tensor value (kDynamic for a dynamic dimension).
  llvm::SmallVector<int64_t, 4> shape(mlir::Value v);
  /// An error prefixed with where the flow is ("layer 3: ..."); the stage's
  /// name is added by ModelFlow::custom.
  llvm::Error fail(const llvm::Twine &message);

private:
  FlowContext &ctx;
};

/// One step of a flow. Stages read and write the flow's state.
using Stage = std::function<llvm::Error(FlowContext &)>;

/// The conventional stream ids of multi-stream flows (any string works).
namespace stream {
inline constexpr const char *Img = "img";
inline constexpr const char *Txt = "txt";
inline constexpr const char *Main = "main";
} // namespace stream

/// An architecture block that lives outside RLX (a user's library): a
/// type-erased stage registered by name and placed in a flow with
/// ModelFlow::plugin, so a new block needs neither a new stage kind nor a
/// change to RLX. It builds IR through the tier-2 Emitter; `args` are its
/// parameters (a JSON object, so flows from Python or a config can pass
/// them).
using PluginFn =
    std::function<llvm::Error(Emitter &, const llvm::json::Object &args)>;

/// The process-wide plugin table (thread-safe).
class PluginRegistry {
public:
  static PluginRegistry &global();
  /// Registers `fn` as plugin `name`; a name taken is an error naming it.
  llvm::Error add(llvm::StringRef name, PluginFn fn);
  /// Removes plugin `name`; false when there is none.
  bool remove(llvm::StringRef name);
  /// The plugin `name`, or null.
  PluginFn lookup(llvm::StringRef name) const;
  /// The registered names, sorted.
  std::vector<std::string> names() const;

private:
  PluginRegistry();
  struct Impl;
  std::shared_ptr<Impl> impl;
};

class ModelFlow;

/// A named sub-layer composer: the block methods of ModelFlow with weight
/// keys relative to `prefix`.
class LayerStack {
public:
  LayerStack(std::string prefix) : prefix(std::move(prefix)) {}
  LayerStack &rmsNorm(llvm::StringRef key, float eps);
  LayerStack &layerNorm(llvm::StringRef key, float eps);
  LayerStack &linear(llvm::StringRef key, bool bias = false);
  LayerStack &residualSave(llvm::StringRef slot = "residual");
  LayerStack &residualAdd(llvm::StringRef slot = "residual");
  LayerStack &selfAttnPrefill(const AttentionSpec &spec);
  LayerStack &swigluHfMlp();
  LayerStack &geluFfn(llvm::StringRef in = "intermediate.dense",
                      llvm::StringRef out = "output.dense");
  LayerStack &stage(Stage s);

  std::string prefix;
  std::vector<Stage> stages;
};

class ModelFlow {
public:
  explicit ModelFlow(std::string name);

  // Tier 1: the compile profile.
  ModelFlow &profile(CompileProfile p);
  ModelFlow &profilePrefill();
  ModelFlow &profileDecode();
  ModelFlow &profileEncoder();

  /// Declares a graph input; the first becomes the active tensor. Integer
  /// inputs are token ids, float inputs hidden states.
  ModelFlow &input(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                   DType dtype);

  // Small blocks.
  ModelFlow &tokenEmbed(llvm::StringRef key = "model.embed_tokens.weight");
  /// Adds rows of `tableKey` gathered by input `idsInput` (position or token
  /// type embeddings).
  ModelFlow &gatherAdd(llvm::StringRef idsInput, llvm::StringRef tableKey);
  ModelFlow &embedScale(float scale);
  ModelFlow &rmsNorm(llvm::StringRef key, float eps);
  ModelFlow &gemmaRmsNorm(llvm::StringRef key, float eps);
  ModelFlow &layerNorm(llvm::StringRef prefix, float eps);
  ModelFlow &linear(llvm::StringRef prefix, bool bias = false);
  ModelFlow &residualSave(llvm::StringRef slot = "residual");
  ModelFlow &residualAdd(llvm::StringRef slot = "residual");
  ModelFlow &layerScale(llvm::StringRef key);
  ModelFlow &selfAttnPrefill(llvm::StringRef prefix, const AttentionSpec &spec);
  ModelFlow &swigluHfMlp(llvm::StringRef prefix);
  /// A mixture-of-experts MLP under `prefix` ("model.layers.3.mlp." or
  /// Mixtral's "model.layers.3.block_sparse_moe."): router `gate.weight`,
  /// experts `experts.E.{gate,up,down}_proj.weight` (Mixtral:
  /// `experts.E.{w1,w3,w2}.weight`) and, with a shared expert,
  /// `shared_expert.*` and `shared_expert_gate.weight` (hir.moe_mlp).
  ModelFlow &moeMlp(llvm::StringRef prefix, const MoeSpec &spec);
  ModelFlow &geglu(llvm::StringRef prefix);
  ModelFlow &geluFfn(llvm::StringRef in, llvm::StringRef out,
                     bool tanh = false);

  /// `act(x · inᵀ + b_in) · outᵀ + b_out` with weights `in.weight`,
  /// `in.bias`, `out.weight`, `out.bias` and `activation` one of RLX's
  /// activation names ("gelu", "gelu_tanh", "relu", ...): the MLP of ViT
  /// and DINOv2.
  ModelFlow &denseMlp(llvm::StringRef in, llvm::StringRef out,
                      llvm::StringRef activation);

  // Vision encoders (ViT, DINOv2): the active tensor starts as the
  // [batch, channels, height, width] pixels.
  /// Patch embedding: the stride-`patchSize` convolution `prefix.weight`
  /// `[hidden, channels, P, P]` and `prefix.bias` over the image, one token
  /// per patch, row by row (hir.patch_embed).
  ModelFlow &patchEmbed(llvm::StringRef prefix, int64_t patchSize);
  /// Inserts the learned tokens `key` (`[1, n, hidden]`: ViT's [CLS],
  /// DINOv2's registers) before position `position` of every sequence.
  ModelFlow &insertTokens(llvm::StringRef key, int64_t position = 0);
  /// Adds the position embeddings `key` (`[1, leading + s*s, hidden]`),
  /// resized from their s x s grid to `gridH x gridW` by bicubic
  /// interpolation (`antialias`: PyTorch's antialiased form) as
  /// transformers' interpolate_pos_encoding does.
  ModelFlow &positionEmbed(llvm::StringRef key, int64_t gridH, int64_t gridW,
                           int64_t leading = 1, bool antialias = false);
  /// ViT self-attention over every token (no mask, no RoPE):
  /// `prefix.attention.{query,key,value}` and `prefix.output.dense`.
  ModelFlow &vitSelfAttn(llvm::StringRef prefix, const AttentionSpec &spec,
                         bool qkvBias = true);
  /// DINOv2's SwiGLU-FFN: `prefix.weights_in` `[2*inter, hidden]` (gate,
  /// then up) and `prefix.weights_out`, with biases (hir.packed_swiglu).
  ModelFlow &visionSwiGluFfn(llvm::StringRef prefix);

  // Whole layers.
  ModelFlow &llamaLayer(const DecoderLayerSpec &spec);
  ModelFlow &bertEncoderLayer(const BertLayerSpec &spec);
  /// A NomicBERT layer (fused Wqkv, RoPE, padding mask, post-LayerNorm,
  /// SwiGLU MLP fc11 * silu(fc12) -> fc2; `rmsEpsilon` is the LayerNorm
  /// epsilon), built as a tier-2 custom stage. Weight keys under
  /// `spec.prefix`: attn.Wqkv, attn.out_proj, norm1, mlp.fc11/fc12/fc2, norm2.
  ModelFlow &nomicEncoderLayer(const DecoderLayerSpec &spec);

  // Composition.
  ModelFlow &layer(llvm::StringRef name,
                   std::function<void(LayerStack &)> build);
  ModelFlow &repeatLayers(unsigned n, std::function<Stage(unsigned)> layer);
  ModelFlow &sequence(std::vector<Stage> stages);
  /// `stage` in a named scope: errors inside name it ("joint: ...").
  ModelFlow &named(llvm::StringRef name, Stage stage);
  ModelFlow &when(bool condition, Stage stage);
  ModelFlow &stage(Stage s);
  /// Tier 2: `fn` builds IR with an Emitter.
  ModelFlow &custom(llvm::StringRef name,
                    std::function<llvm::Error(Emitter &)> fn);
  /// The registered plugin `name` (PluginRegistry) with `args`; an unknown
  /// name is an error listing the registered ones when the flow is built.
  ModelFlow &plugin(llvm::StringRef name, llvm::json::Object args = {});

  // Streams (multi-stream models such as FLUX: image and text tokens).
  /// Each declared input `first` becomes stream `second` (an input not
  /// declared is an error naming it).
  ModelFlow &
  bindInputsToStreams(std::vector<std::pair<std::string, std::string>> map);
  /// The active tensor becomes stream `id`.
  ModelFlow &storeStream(llvm::StringRef id);
  /// Stream `id` becomes the active tensor (an unknown id is an error
  /// listing the streams).
  ModelFlow &loadStream(llvm::StringRef id);
  /// Transforms streams `a` and `b` together (joint attention, modulation):
  /// `fn` gets both and replaces them in place, in a scope named `name`.
  ModelFlow &dualStream(
      llvm::StringRef name, llvm::StringRef a, llvm::StringRef b,
      std::function<llvm::Error(Emitter &, mlir::Value &, mlir::Value &)> fn);

  // Heads.
  ModelFlow &finalNorm(float eps, llvm::StringRef key = "model.norm.weight");
  ModelFlow &gatherLastToken();
  /// `tied`: the embedding table is the head.
  ModelFlow &lmHead(bool tied, llvm::StringRef key = "lm_head.weight",
                    llvm::StringRef embedKey = "model.embed_tokens.weight");
  ModelFlow &logitSoftcap(float cap);
  ModelFlow &clsPool();
  /// Mean over the sequence under the attention-mask input `maskInput`.
  ModelFlow &meanPool(llvm::StringRef maskInput = "");
  /// Marks the active tensor (or a named value) as a graph output, at this
  /// point of the flow. Without any, the final active tensor is "output".
  ModelFlow &output(llvm::StringRef name, llvm::StringRef value = "");

  /// Builds the HIR module, checking every weight against `weights`.
  llvm::Expected<BuiltModel> build(const WeightSource &weights) const;

  const std::string &getName() const { return name; }
  const CompileProfile &getProfile() const { return prof; }
  /// Moves the stages out (to compose this flow's blocks into another).
  std::vector<Stage> takeStages() { return std::move(stages); }

private:
  struct Input {
    std::string name;
    llvm::SmallVector<int64_t, 4> shape;
    DType dtype;
  };
  std::string name;
  CompileProfile prof;
  std::vector<Input> inputs;
  std::vector<Stage> stages;
};

// Blocks as stages (for repeatLayers and recipes).

/// One fused HIR composite (hir.llama_decoder_layer, or the Qwen3 / Gemma
/// forms per `spec`).
Stage llamaPrefillLayerFused(unsigned index, const DecoderLayerSpec &spec);
/// The same layer from small blocks (norm, attention, residual, MLP).
Stage llamaPrefillLayerComposed(unsigned index, const DecoderLayerSpec &spec);
/// A KV-cache decode layer: reads inputs `past_k.N`/`past_v.N` (and the key
/// mask input "kv_mask" when present) and exports `present_k.N`/
/// `present_v.N` as outputs.
Stage decodeLayer(unsigned index, const DecoderLayerSpec &spec);

/// The flow's build state.
class FlowContext {
public:
  struct Impl;
  explicit FlowContext(Impl &impl) : impl(impl) {}
  Impl &impl;
};

} // namespace rlx

#endif // RLX_FLOW_MODELFLOW_H
