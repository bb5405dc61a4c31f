//===- Config.h - Hugging Face model configurations --------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_FLOW_CONFIG_H
#define RLX_FLOW_CONFIG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>
#include <vector>

namespace rlx {

class GGUFFile;

/// LLaMA 3's frequency-dependent RoPE scaling (rope_type "llama3").
struct Llama3RopeScaling {
  double factor = 8, lowFreqFactor = 1, highFreqFactor = 4;
  int64_t originalMaxPositions = 8192;
};

/// YaRN RoPE scaling (rope_type "yarn"), as transformers computes it.
struct YarnRopeScaling {
  double factor = 1, betaFast = 32, betaSlow = 1;
  int64_t originalMaxPositions = 0;
  bool truncate = true;
};

/// The fields of an HF `config.json` the recipes use. Every key that changes
/// the computation is either implemented or refused with an error naming it
/// (docs/Checkpoints.md lists them per architecture); a value of the wrong
/// JSON type is an error naming the key; a key RLX does not know is reported
/// in `unknownKeys` (the tools warn about them).
struct TransformerConfig {
  /// "llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text", "phi3",
  /// "mixtral", "qwen2_moe", "qwen3_moe", "bert", "vit", "dinov2",
  /// "dinov2_with_registers".
  std::string modelType;
  int64_t vocabSize = 0, hidden = 0, intermediate = 0, numLayers = 0;
  int64_t numHeads = 0, numKvHeads = 0, headDim = 0;
  int64_t maxPositions = 2048;
  double normEpsilon = 1e-5;
  double ropeTheta = 10000.0;
  bool tieEmbeddings = false;
  std::optional<Llama3RopeScaling> llama3Scaling;
  /// Gemma 3: the theta of the sliding-window layers, which use plain RoPE
  /// (0: the same RoPE as the other layers).
  double localRopeTheta = 0;
  /// RoPE `linear` scaling: positions divided by this factor (1: none).
  double ropeLinearFactor = 1.0;
  std::optional<YarnRopeScaling> yarnScaling;
  /// LongRoPE (rope_type "longrope"): the per-frequency divisors used up to
  /// original_max_position_embeddings, which caps maxPositions (the long
  /// factors apply only beyond it).
  std::vector<float> longropeShortFactors;
  /// YaRN's and LongRoPE's scaling of cos and sin: attention scores scale by
  /// its square.
  double ropeAttentionFactor = 1.0;
  /// Per-frequency divisors of the inverse frequencies (a GGUF's
  /// `rope_freqs.weight`, llama.cpp's form of LLaMA 3 scaling); empty: none.
  std::vector<float> ropeFreqFactors;
  /// Biases on the q/k/v projections, the attention output projection and
  /// the MLP projections (LLaMA attention_bias / mlp_bias, Qwen2's QKV).
  bool qkvBias = false, outBias = false, mlpBias = false;
  /// The MLP's activation as the config names it (`hidden_act` or
  /// `hidden_activation`), and as an HIR activation ("silu", "gelu",
  /// "gelu_tanh", "relu", ...).
  std::string hiddenAct, activation;
  // Gemma 2.
  double queryPreAttnScalar = 0, finalLogitSoftcap = 0, attnLogitSoftcap = 0;
  /// The window of the sliding-window layers (0: none).
  int64_t slidingWindow = 0;
  /// Per layer: sliding-window attention (Gemma 2 alternates; Mistral slides
  /// everywhere; Qwen2/Qwen3 from `max_window_layers` on).
  std::vector<bool> slidingLayers;
  // Mixture of experts (Mixtral, Qwen2-MoE, Qwen3-MoE).
  int64_t numExperts = 0, expertsPerToken = 0;
  /// Each routed expert's intermediate size (Mixtral: intermediate_size).
  int64_t moeIntermediate = 0;
  /// Qwen2-MoE's shared expert (0: none).
  int64_t sharedExpertIntermediate = 0;
  /// Renormalize the picked experts' probabilities (always for Mixtral).
  bool normTopKProb = false;
  /// Per layer: a mixture-of-experts MLP (else a dense one of
  /// `intermediate`; Qwen's mlp_only_layers and decoder_sparse_step).
  std::vector<bool> moeLayers;
  // BERT.
  int64_t typeVocabSize = 2;
  // Vision encoders (ViT, DINOv2).
  /// The square image the position embeddings were trained for, its patch
  /// size and channels.
  int64_t imageSize = 0, patchSize = 0, numChannels = 3;
  /// DINOv2: LayerScale on both residual branches; the packed SwiGLU-FFN
  /// (`use_swiglu_ffn`) instead of the MLP.
  bool layerScale = false, swigluFfn = false;
  /// DINOv2 with registers: learned tokens inserted after [CLS], and
  /// position embeddings resized with antialiasing.
  int64_t numRegisters = 0;
  bool antialiasPositions = false;
  /// ViT's pooler (`pooler_act(dense(CLS))`): its size and activation.
  int64_t poolerSize = 0;
  std::string poolerActivation;
  /// Keys of the file that RLX does not know (neither used nor known to be
  /// irrelevant to inference).
  std::vector<std::string> unknownKeys;

  /// ViT and DINOv2: image encoders (no vocabulary; pixel_values in).
  bool isVision() const;

  static llvm::Expected<TransformerConfig> fromJSON(llvm::StringRef text,
                                                    llvm::StringRef fileName);
  static llvm::Expected<TransformerConfig> fromFile(llvm::StringRef path);
  /// The LLaMA-family config a GGUF file describes (general.architecture
  /// llama).
  static llvm::Expected<TransformerConfig> fromGGUF(const GGUFFile &file);

  /// RoPE inverse frequencies for `rotary` dims, with linear or LLaMA 3
  /// scaling when configured (as transformers computes them, in f32).
  std::vector<float> inverseFrequencies(int64_t rotary) const;
  /// Whether RoPE needs inverseFrequencies() (scaled RoPE) instead of theta.
  bool scaledRope() const {
    return llama3Scaling.has_value() || ropeLinearFactor != 1.0 ||
           !ropeFreqFactors.empty() || yarnScaling.has_value() ||
           !longropeShortFactors.empty();
  }
};

} // namespace rlx

#endif // RLX_FLOW_CONFIG_H
