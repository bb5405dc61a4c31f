//===- Flux.h - FLUX double-stream transformers ----------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// FLUX's transformer (diffusers' FluxTransformer2DModel) as a flow of
// streams: the image and text tokens are streams "img" and "txt", each
// double-stream block transforms both together (dualStream: their own
// adaptive-LayerNorm modulation from the conditioning vector, joint attention
// over the concatenated tokens with multi-axis RoPE and q/k RMSNorm, their
// own MLPs), the single-stream blocks run on the joined stream "main".
//
//===----------------------------------------------------------------------===//

#ifndef RLX_FLOW_FLUX_H
#define RLX_FLOW_FLUX_H

#include "RLX/Flow/ModelFlow.h"

namespace rlx {

/// The keys of a diffusers FluxTransformer2DModel config.json, with
/// diffusers' defaults.
struct FluxConfig {
  int64_t patchSize = 1, inChannels = 64, outChannels = 0;
  int64_t numLayers = 19, numSingleLayers = 38;
  int64_t headDim = 128, numHeads = 24;
  int64_t jointDim = 4096, pooledDim = 768;
  bool guidance = false;
  /// The head dim's split between the position axes (sums to headDim).
  std::vector<int64_t> axesDims = {16, 56, 56};

  int64_t inner() const { return headDim * numHeads; }
  /// out_channels, or in_channels when the config leaves it null.
  int64_t out() const { return outChannels ? outChannels : inChannels; }

  /// Parses config.json text; a key RLX does not know, a bad value or a
  /// `_class_name` other than FluxTransformer2DModel is an error naming it.
  static llvm::Expected<FluxConfig> fromJSON(llvm::StringRef text,
                                             llvm::StringRef fileName);
};

/// The FLUX transformer for a batch of `batch` samples of `imageTokens`
/// packed latent tokens and `textTokens` text tokens. Inputs: hidden_states
/// [B, image, in_channels], encoder_hidden_states [B, text, joint_dim],
/// pooled_projections [B, pooled_dim], timestep [B] (f32, as the pipeline
/// passes it: the model multiplies by 1000), img_ids [image, 3] and txt_ids
/// [text, 3] (i32: FLUX's position ids are integers), and with guidance
/// embeddings guidance [B]. Output: sample [B, image, p*p*out_channels].
class FluxFlow {
public:
  explicit FluxFlow(FluxConfig config);
  /// The config.json of a diffusers model directory (the transformer's).
  static llvm::Expected<FluxFlow> fromModelDir(llvm::StringRef dir);

  FluxFlow &shape(int64_t batch, int64_t imageTokens, int64_t textTokens);
  const FluxConfig &config() const { return cfg; }

  ModelFlow flow() const;
  /// Builds the HIR module; every weight of `weights` must be read.
  llvm::Expected<BuiltModel> build(const WeightSource &weights) const;

private:
  FluxConfig cfg;
  int64_t batch = 1, imageTokens = 16, textTokens = 8;
};

} // namespace rlx

#endif // RLX_FLOW_FLUX_H
