//===- Stages.h - Stage interfaces and layer compositions -------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A decoder layer as parts: its norms (NormStage), its attention
// (AttentionStage) and its feed-forward block (FfnStage). A recipe describes
// each layer as a DecoderLayer; a layer hook replaces one part ("the
// attention of layer 3") and keeps the others:
//
//   recipe.layer([&](LayerCtx &ctx) {
//     return ctx.index() == 3 ? ctx.withAttention(myAttention)
//                             : ctx.defaultStage();
//   });
//
// A layer whose parts are all the recipe's builds as the recipe's fused HIR
// composite (hir.llama_decoder_layer, ...); once a part is replaced, the layer
// is composed from its parts' stages. LayerComposition says how the layers
// repeat: one kind for all, or two kinds alternating (Gemma 2's
// sliding-window and global layers, hybrid models).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_FLOW_STAGES_H
#define RLX_FLOW_STAGES_H

#include "RLX/Flow/ModelFlow.h"

namespace rlx {

/// The attention of a layer. emit() reads the active tensor (the normed
/// hidden states, [batch, seq, hidden]) and the flow's named values
/// ("positions", ...), and leaves its result ([batch, seq, hidden], before
/// the residual add) active.
class AttentionStage {
public:
  virtual ~AttentionStage();
  virtual llvm::Error emit(FlowContext &ctx) const = 0;
  /// An AttentionStage running `stage`.
  static std::shared_ptr<const AttentionStage> fromStage(Stage stage);
};

/// The feed-forward block of a layer: active [batch, seq, hidden] in, active
/// [batch, seq, hidden] out (before the residual add).
class FfnStage {
public:
  virtual ~FfnStage();
  virtual llvm::Error emit(FlowContext &ctx) const = 0;
  /// An FfnStage running `stage`.
  static std::shared_ptr<const FfnStage> fromStage(Stage stage);
};

/// A normalization of the active tensor (same shape out).
class NormStage {
public:
  virtual ~NormStage();
  virtual llvm::Error emit(FlowContext &ctx) const = 0;
  /// A NormStage running `stage`.
  static std::shared_ptr<const NormStage> fromStage(Stage stage);
};

/// LLaMA-style self-attention from blocks: the q/k/v projections (with
/// biases when asked), RoPE (theta, or the synthesized `invFreqKey`),
/// hir.attention (GQA; causal or sliding window; scale; soft cap) and the
/// output projection. Weight keys under `prefix` (e.g.
/// "model.layers.3.self_attn."): q_proj, k_proj, v_proj, o_proj.
class SelfAttention final : public AttentionStage {
public:
  SelfAttention(std::string prefix, AttentionSpec spec, bool qkvBias = false,
                bool outBias = false, std::string invFreqKey = "",
                bool qkNorm = false);
  /// The attention of a decoder layer as `spec` describes it.
  static std::shared_ptr<const SelfAttention>
  forLayer(const DecoderLayerSpec &spec);
  const AttentionSpec &spec() const { return attn; }
  const std::string &prefix() const { return pre; }
  /// Per-head QK norms (Qwen3, Gemma 3) are not expressible in HIR blocks:
  /// emit() refuses them.
  llvm::Error emit(FlowContext &ctx) const override;

private:
  std::string pre;
  AttentionSpec attn;
  bool qkvBias, outBias;
  std::string invFreqKey;
  bool qkNorm;
};

/// A gated MLP, down(act(gate(x)) * up(x)): hir.swiglu (`silu`) or
/// hir.geglu (`gelu_tanh`). Weight keys under `prefix` (e.g.
/// "model.layers.3.mlp."): gate_proj, up_proj, down_proj.
class GatedMlp final : public FfnStage {
public:
  explicit GatedMlp(std::string prefix, std::string activation = "silu",
                    bool bias = false);
  /// The MLP of a decoder layer as `spec` describes it.
  static std::shared_ptr<const GatedMlp> forLayer(const DecoderLayerSpec &spec);
  const std::string &activation() const { return act; }
  /// Activations other than silu and gelu_tanh, and biases, are refused.
  llvm::Error emit(FlowContext &ctx) const override;

private:
  std::string pre, act;
  bool bias;
};

/// RMSNorm with weight `key`; `gemma`: Gemma's (1 + w) form.
class RmsNormStage final : public NormStage {
public:
  RmsNormStage(std::string key, float epsilon, bool gemma = false);
  llvm::Error emit(FlowContext &ctx) const override;

private:
  std::string key;
  float epsilon;
  bool gemma;
};

/// A decoder layer as parts:
///
///   h = x + postAttentionNorm(attention(inputNorm(x)))
///   y = h + postFfnNorm(ffn(preFfnNorm(h)))
///
/// (post norms optional: LLaMA has none, Gemma 2 has both). A layer may also
/// be opaque, one stage without parts (BERT's, or a hook's own layer).
/// While no part is replaced, stage() is the recipe's `fused` stage when it
/// has one; a set*() clears it and the layer is composed from its parts.
class DecoderLayer {
public:
  DecoderLayer(unsigned index, std::shared_ptr<const NormStage> inputNorm,
               std::shared_ptr<const AttentionStage> attention,
               std::shared_ptr<const NormStage> preFfnNorm,
               std::shared_ptr<const FfnStage> ffn);
  /// An opaque layer: `stage` without parts.
  DecoderLayer(unsigned index, Stage stage);

  unsigned index() const { return idx; }
  /// Whether the layer has parts (set*() needs them).
  bool hasParts() const { return static_cast<bool>(attn); }
  const std::shared_ptr<const NormStage> &inputNorm() const { return inNorm; }
  const std::shared_ptr<const AttentionStage> &attention() const {
    return attn;
  }
  const std::shared_ptr<const NormStage> &postAttentionNorm() const {
    return postAttnNorm;
  }
  const std::shared_ptr<const NormStage> &preFfnNorm() const { return preFfn; }
  const std::shared_ptr<const FfnStage> &ffn() const { return mlp; }
  const std::shared_ptr<const NormStage> &postFfnNorm() const {
    return postFfn;
  }

  // Replacing parts (each clears the fused stage).
  DecoderLayer &setInputNorm(std::shared_ptr<const NormStage> norm);
  DecoderLayer &setAttention(std::shared_ptr<const AttentionStage> attention);
  DecoderLayer &setPostAttentionNorm(std::shared_ptr<const NormStage> norm);
  DecoderLayer &setPreFfnNorm(std::shared_ptr<const NormStage> norm);
  DecoderLayer &setFfn(std::shared_ptr<const FfnStage> ffn);
  DecoderLayer &setPostFfnNorm(std::shared_ptr<const NormStage> norm);

  /// The stage the layer is while its parts are the recipe's (a fused HIR
  /// composite); empty: composed from the parts.
  DecoderLayer &setFused(Stage stage);
  bool isFused() const { return static_cast<bool>(fused); }
  /// In a KV-cache decode graph the layer is one fused cached op, whose
  /// parts cannot be replaced: a composed layer is refused, naming it.
  DecoderLayer &setKvCacheDecode(bool decode = true);

  /// The layer as a stage: the fused stage, or the parts in order.
  Stage stage() const;

private:
  unsigned idx;
  std::shared_ptr<const NormStage> inNorm, postAttnNorm, preFfn, postFfn;
  std::shared_ptr<const AttentionStage> attn;
  std::shared_ptr<const FfnStage> mlp;
  Stage fused;
  bool kvDecode = false;
};

/// How a model's layers repeat: one kind of layer for all (homogeneous), or
/// two kinds alternating from layer 0 (Gemma 2's sliding-window and global
/// layers; hybrid models' pairs).
class LayerComposition {
public:
  using LayerFn = std::function<DecoderLayer(unsigned index)>;

  /// `count` layers, each `layer(i)`.
  static LayerComposition homogeneous(unsigned count, LayerFn layer);
  /// `count` layers: `first(i)` at even indices, `second(i)` at odd ones.
  static LayerComposition alternating(unsigned count, LayerFn first,
                                      LayerFn second);

  unsigned size() const { return count; }
  bool isHomogeneous() const { return kinds.size() == 1; }
  /// Which kind builds layer `index` (0, or 1 for the odd layers of an
  /// alternating pair).
  unsigned kindOf(unsigned index) const { return index % kinds.size(); }
  /// Layer `index`.
  DecoderLayer layer(unsigned index) const;

private:
  LayerComposition(unsigned count, std::vector<LayerFn> kinds)
      : count(count), kinds(std::move(kinds)) {}
  unsigned count;
  std::vector<LayerFn> kinds;
};

} // namespace rlx

#endif // RLX_FLOW_STAGES_H
