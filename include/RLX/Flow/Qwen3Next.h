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
#include "RLX/Flow/Generate.h"
#include "RLX/Flow/ModelFlow.h"
#include <map>
#include <optional>

namespace rlx {

/// A Qwen3-Next (qwen3_next) or Qwen3.5 text (qwen3_5_text) config.json:
/// the common keys (TransformerConfig) and the hybrid ones.
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
  /// Qwen3.5 (qwen3_5_text): in_proj_qkv / in_proj_z / in_proj_b /
  /// in_proj_a instead of Qwen3-Next's grouped in_proj_qkvz / in_proj_ba.
  bool separateProjections = false;

  static llvm::Expected<Qwen3NextConfig> fromJSON(llvm::StringRef text,
                                                  llvm::StringRef fileName);
};

/// A Qwen3-Next model's graphs: `tokens` and `positions` ([1, T], i32) to
/// `logits` ([1, T, vocab]) and each layer's state after them:
/// `present_conv_state.N` ([1, kernel - 1, conv channels]: the last inputs
/// of the convolution) and `present_recurrent_state.N` ([1, value heads,
/// key dim, value dim]) for Gated DeltaNet layers, `present_k.N` /
/// `present_v.N` ([1, past + T, kv heads * head dim]) for attention layers.
/// The prompt graph starts from nothing; a decode graph after `past` tokens
/// also takes the previous step's states as `conv_state.N`,
/// `recurrent_state.N`, `past_k.N`, `past_v.N`.
class Qwen3NextFlow {
public:
  explicit Qwen3NextFlow(Qwen3NextConfig config);
  static llvm::Expected<Qwen3NextFlow> fromModelDir(llvm::StringRef dir);

  const Qwen3NextConfig &config() const { return cfg; }
  /// The compile profile of the graphs (default: the llama32Prefill preset).
  /// Its `[execution] decode_buckets` size the generator's decode steps.
  Qwen3NextFlow &profile(CompileProfile p);
  /// The graph for `tokens` new tokens: the prompt graph when `past` < 0,
  /// else a decode graph after `past` tokens. `masked`: a one-token decode
  /// step over a past bucket whose attention sees the keys input `kv_mask`
  /// ([1, past + 1], nonzero keeps) keeps.
  ModelFlow flow(int64_t tokens, int64_t past = -1, bool masked = false) const;
  /// Builds the graph; every tensor of `weights` must be read.
  llvm::Expected<BuiltModel> build(const WeightSource &weights, int64_t tokens,
                                   int64_t past = -1,
                                   bool masked = false) const;

private:
  Qwen3NextConfig cfg;
  std::optional<CompileProfile> userProfile;
};

/// Generates with a Qwen3-Next model: the prompt graph, then one-token
/// decode graphs over the past rounded up to the profile's buckets
/// (`[execution]`), each layer's convolution window and recurrent state
/// carried from step to step and the attention layers' keys and values
/// cached. Graphs are compiled on first use and share one copy of the
/// weights.
class Qwen3NextGenerator {
public:
  static llvm::Expected<std::unique_ptr<Qwen3NextGenerator>>
  create(Session &session, Qwen3NextFlow recipe, const WeightSource &weights,
         CompileOptions options = {});

  /// Runs the prompt, then samples up to `maxNewTokens` tokens, stopping
  /// after a token of `stopTokens` (returned); `onToken` sees each one.
  llvm::Expected<std::vector<int32_t>>
  generate(llvm::ArrayRef<int32_t> prompt, unsigned maxNewTokens,
           const SamplingOptions &sampling,
           std::function<void(int32_t)> onToken = {},
           llvm::ArrayRef<int32_t> stopTokens = {});

private:
  Qwen3NextGenerator(Session &session, Qwen3NextFlow recipe,
                     const WeightSource &weights, CompileOptions options)
      : session(session), recipe(std::move(recipe)), weights(weights),
        options(std::move(options)) {}
  /// The prompt graph (past -1) or the decode step over `past` slots.
  llvm::Expected<CompiledModel *> graph(int64_t past, int64_t count);

  Session &session;
  Qwen3NextFlow recipe;
  const WeightSource &weights;
  CompileOptions options;
  CompileProfile::ExecutionProfile buckets;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<CompiledModel>> graphs;
  /// The first graph compiled: the one that holds the weights.
  CompiledModel *pool = nullptr;
};

} // namespace rlx

#endif // RLX_FLOW_QWEN3NEXT_H
