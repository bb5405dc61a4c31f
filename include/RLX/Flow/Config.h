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

/// The fields of an HF `config.json` the recipes use. Unknown fields are
/// ignored; missing required ones are errors naming the file and the key.
struct TransformerConfig {
  /// "llama", "qwen3", "gemma2", "bert".
  std::string modelType;
  int64_t vocabSize = 0, hidden = 0, intermediate = 0, numLayers = 0;
  int64_t numHeads = 0, numKvHeads = 0, headDim = 0;
  int64_t maxPositions = 2048;
  double normEpsilon = 1e-5;
  double ropeTheta = 10000.0;
  bool tieEmbeddings = false;
  std::optional<Llama3RopeScaling> llama3Scaling;
  // Gemma 2.
  double queryPreAttnScalar = 0, finalLogitSoftcap = 0, attnLogitSoftcap = 0;
  int64_t slidingWindow = 0;
  /// Per layer: sliding-window attention (Gemma 2 alternates).
  std::vector<bool> slidingLayers;
  // BERT.
  int64_t typeVocabSize = 2;
  std::string hiddenAct = "gelu";

  static llvm::Expected<TransformerConfig> fromJSON(llvm::StringRef text,
                                                    llvm::StringRef fileName);
  static llvm::Expected<TransformerConfig> fromFile(llvm::StringRef path);
  /// The LLaMA-family config a GGUF file describes (general.architecture
  /// llama).
  static llvm::Expected<TransformerConfig> fromGGUF(const GGUFFile &file);

  /// RoPE inverse frequencies for `rotary` dims, with LLaMA 3 scaling when
  /// configured (as transformers computes them, in f32).
  std::vector<float> inverseFrequencies(int64_t rotary) const;
};

} // namespace rlx

#endif // RLX_FLOW_CONFIG_H
