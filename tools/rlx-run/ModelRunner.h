//===- ModelRunner.h - rlx-run --model ---------------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_TOOLS_RLXRUN_MODELRUNNER_H
#define RLX_TOOLS_RLXRUN_MODELRUNNER_H

#include "RLX/Compiler/Session.h"
#include "RLX/Flow/ExecutionConfig.h"
#include "RLX/Flow/Generate.h"
#include <string>
#include <vector>

namespace rlx {

/// `--describe`: print the reflection of the compiled graph instead of
/// running it.
enum class DescribeFormat { None, Text, Json };

struct ModelRunOptions {
  std::string model;
  /// Token ids (`--prompt-ids`), or, when promptText is set, nothing.
  std::vector<int32_t> prompt;
  /// `--prompt`: text encoded with the model's tokenizer (a directory's
  /// tokenizer.json or the GGUF vocabulary); the generated text is printed
  /// as it is produced, and generation stops at the tokenizer's EOS tokens
  /// unless ignoreEos.
  std::optional<std::string> promptText;
  bool ignoreEos = false;
  /// `--chat`: the prompt text is one user message, rendered with the
  /// tokenizer's chat template (with the generation prompt) and encoded
  /// without the post-processor's special tokens, as transformers'
  /// apply_chat_template does.
  bool chat = false;
  unsigned maxNewTokens = 16;
  int64_t maxContext = 0;
  SamplingOptions sampling;
  std::string logitsOut, stepLogitsOut, outputDir;
  /// `--image`: the pixels (.npy) an image encoder runs on.
  std::string image;
  bool quiet = false;
  /// Tensors of the checkpoint the recipe does not read are warnings, not
  /// an error.
  bool allowUnusedWeights = false;
  CompileOptions compile;
  /// `--profile`: read again over each graph's own profile (the decode
  /// graph's preset, an encoder recipe's), so that the keys the file does
  /// not set keep that graph's values.
  std::string profileFile;
  /// `--preset`: every graph compiles with that preset, whole.
  bool presetGiven = false;
  /// `--policy`: the last word on every graph's fusion policy.
  std::optional<FusionPolicy> policy;
  /// --profile, --preset or --policy was given; compile.profile holds them
  /// over the defaults.
  bool profileGiven() const {
    return !profileFile.empty() || presetGiven || policy.has_value();
  }
  /// `--weights-as`: keep matrices as the file stores them, widen them to
  /// f32, or convert them to bf16/f16/q8_0/q4_0 at load.
  std::optional<WeightPrecision> weights;
  /// --weights-as was given (not its default): models whose recipe has no
  /// weight precision refuse it.
  bool weightsGiven = false;
  /// `--kv-cache`: the element type of the decode graphs' KV cache.
  std::optional<ComputePrecision> kvCache;
  /// `--compute`: the element type of the activations between ops.
  std::optional<ComputePrecision> compute;
  /// Compile the prefill graph (a decoder's) or the encoder (BERT) for the
  /// prompt's length (8 tokens when no --prompt-ids are given), print its
  /// reflection and stop.
  DescribeFormat describe = DescribeFormat::None;
  /// `--precompile`: compile the graphs a run with these options would use
  /// (a decoder's prompt graph and decode buckets, or the encoder) into the
  /// compile cache, and stop without loading weights.
  bool precompile = false;
  /// A tensor-parallel rank other than 0: it computes as every rank does,
  /// but prints and writes nothing (rank 0 reports).
  bool follower = false;
};

/// Runs an HF-style model directory (config.json + safetensors) or a GGUF
/// file: generation for decoders, a forward pass for BERT encoders. With a
/// text prompt, stdout holds only the generated text; what else rlx-run
/// reports (prompt ids, compile statistics, the tokens, speeds) goes to
/// stderr.
llvm::Error runModel(Session &session, const ModelRunOptions &options);

/// Prints `r` for `--describe` (text) or `--describe=json`; `graph` and
/// `tokens`, when a graph is named, say which graph of a model it is, and
/// `execution` its ModelExecutionConfig.
void printReflection(const ModelReflection &r, DescribeFormat format,
                     llvm::raw_ostream &os, llvm::StringRef graph = "",
                     int64_t tokens = 0,
                     const ModelExecutionConfig *execution = nullptr);

} // namespace rlx

#endif // RLX_TOOLS_RLXRUN_MODELRUNNER_H
