//===- Qwen3Next.h - Hybrid Gated DeltaNet / attention LMs -----*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Qwen3-Next (transformers' Qwen3NextForCausalLM): linear-attention layers
// (Gated DeltaNet: a causal depthwise convolution, then the gated delta rule,
// mir.gated_delta_rule) interleaved with gated full-attention layers, each
// followed by a mixture of experts with a shared expert (or a dense MLP).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_FLOW_QWEN3NEXT_H
#define RLX_FLOW_QWEN3NEXT_H

#include "RLX/Flow/Config.h"
#include "RLX/Flow/ModelFlow.h"

namespace rlx {

/// A Qwen3-Next config.json: the common keys (TransformerConfig) and the
/// hybrid ones.
struct Qwen3NextConfig {
  TransformerConfig base;
  /// RoPE on the first `partialRotary * head_dim` channels of each head.
  double partialRotary = 0.25;
  bool attentionBias = false;
  // Gated DeltaNet layers.
  int64_t convKernel = 4, keyHeads = 16, valueHeads = 32, keyDim = 128,
          valueDim = 128;
  /// Per layer: Gated DeltaNet (true) or full attention.
  std::vector<bool> linearLayers;

  static llvm::Expected<Qwen3NextConfig> fromJSON(llvm::StringRef text,
                                                  llvm::StringRef fileName);
};

/// The prompt graph of a Qwen3-Next model: `tokens` and `positions`
/// ([1, T], i32) to `logits` ([1, T, vocab]). Decoding with the carried
/// convolution and recurrent states is not built yet.
class Qwen3NextFlow {
public:
  explicit Qwen3NextFlow(Qwen3NextConfig config);
  static llvm::Expected<Qwen3NextFlow> fromModelDir(llvm::StringRef dir);

  const Qwen3NextConfig &config() const { return cfg; }
  /// The graph for `tokens` prompt tokens.
  ModelFlow flow(int64_t tokens) const;
  /// Builds the graph; every tensor of `weights` must be read.
  llvm::Expected<BuiltModel> build(const WeightSource &weights,
                                   int64_t tokens) const;

private:
  Qwen3NextConfig cfg;
};

} // namespace rlx

#endif // RLX_FLOW_QWEN3NEXT_H
