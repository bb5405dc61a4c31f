//===- Generate.h - Autoregressive decoding with a KV cache ------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Generates tokens with a decoder recipe. The KV cache grows with the
// tokens it holds, doubling up to the maximum context (whose size is
// checked against the memory budget up front), so that a large context
// costs nothing until it is used; decode graphs are compiled per bucket of
// past length (16, 32, 64, ...) and reused: the unused slots of a bucket are
// hidden by the key mask. The prompt runs as one step whose past is fully
// masked. All graphs share one parameter pool. A graph whose past inputs live
// in the head of its present outputs keeps the cache in its arena between steps
// and takes only the new rows.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_FLOW_GENERATE_H
#define RLX_FLOW_GENERATE_H

#include "RLX/Compiler/Session.h"
#include "RLX/Flow/ExecutionConfig.h"
#include "RLX/Flow/Recipes.h"
#include <functional>
#include <map>
#include <random>

namespace rlx {

struct SamplingOptions {
  /// 0: greedy (argmax).
  float temperature = 0.0f;
  /// Keep the k most likely tokens (0: all).
  int topK = 0;
  /// Keep the smallest set whose probability reaches p (1: all).
  float topP = 1.0f;
  uint64_t seed = 0;
};

struct GenerationStats {
  /// New tokens; the first comes from the prompt step, the others from
  /// `decodeSteps` decode steps.
  size_t promptTokens = 0, newTokens = 0, decodeSteps = 0;
  /// Prefill and decode leave out compiling graphs (compileSeconds) and
  /// loading the weights into the first one (loadSeconds).
  double prefillSeconds = 0, decodeSeconds = 0, compileSeconds = 0,
         loadSeconds = 0;
  /// Of the parameter pool, the bytes loading mapped from the weights' file
  /// instead of copying (CompiledModel::mappedParamBytes), and its size.
  uint64_t mappedBytes = 0, paramBytes = 0;
  unsigned graphsCompiled = 0;
  /// Of those, the graphs the compile cache held (nothing compiled).
  unsigned graphsCached = 0;
  /// Bytes of cached keys and values copied into the graphs' past inputs.
  /// A graph that keeps its past in the head of its present (lir-plan-arena)
  /// takes only the rows it has not seen; others take the whole past at
  /// every step.
  uint64_t pastBytesCopied = 0;
  /// Under tensor parallelism, the collectives this rank ran
  /// (collectiveStats(): calls and payload bytes per rank): those of the
  /// prompt step, its token's sampling included, and those of the decode
  /// steps and their sampling.
  uint64_t prefillCollectiveCalls = 0, prefillCollectiveBytes = 0;
  uint64_t decodeCollectiveCalls = 0, decodeCollectiveBytes = 0;
  /// What loading the weights reported (CompiledModel::loadWarnings: NaN or
  /// infinities in a weight), known once the first graph is compiled.
  std::vector<std::string> warnings;
  /// What compiling the graphs reported (CompileStats::warnings: profile
  /// hints not implemented, compile cache entries rebuilt), each once, in
  /// order.
  std::vector<std::string> compileWarnings;
  double prefillTokensPerSecond() const {
    return prefillSeconds > 0 ? promptTokens / prefillSeconds : 0;
  }
  double decodeTokensPerSecond() const {
    return decodeSeconds > 0 ? decodeSteps / decodeSeconds : 0;
  }
};

/// Checks `opts`: temperature finite and >= 0, 0 < top-p <= 1, top-k >= 0.
/// The error names the option and its value ("top-p is 1.5; it must be in
/// (0, 1]").
llvm::Error checkSamplingOptions(const SamplingOptions &opts);

/// Picks the next token from `logits`.
int32_t sampleToken(llvm::ArrayRef<float> logits, const SamplingOptions &opts,
                    std::mt19937_64 &rng);

/// The bytes one token takes in the KV cache of `config`: its keys and
/// values in every layer, `2 * numLayers * numKvHeads * headDim` elements of
/// `kvCache`; std::nullopt on overflow.
std::optional<uint64_t> kvCacheBytesPerToken(const TransformerConfig &config,
                                             ComputePrecision kvCache);

class Generator {
public:
  /// Builds the decode flow of `recipe` (checking `weights`) for contexts of
  /// up to `maxContext` tokens. Graphs are compiled by `session` on demand.
  static llvm::Expected<std::unique_ptr<Generator>>
  create(Session &session, DecoderFlow recipe, const WeightSource &weights,
         int64_t maxContext, CompileOptions options = {});

  /// Runs the prompt, then samples up to `maxNewTokens` tokens, stopping
  /// after a token of `stopTokens` (which is returned, as transformers'
  /// generate() does). `onToken` sees each new token; `stepLogits`, when
  /// given, receives the logits each token was sampled from. Sampling
  /// options are checked first (checkSamplingOptions), and a prompt that
  /// cannot fit the context with `maxNewTokens` new tokens is refused
  /// before anything compiles. When a step fails midway, `onToken` has seen
  /// the tokens generated before it.
  llvm::Expected<std::vector<int32_t>>
  generate(llvm::ArrayRef<int32_t> prompt, unsigned maxNewTokens,
           const SamplingOptions &sampling,
           std::function<void(int32_t)> onToken = {},
           std::vector<std::vector<float>> *stepLogits = nullptr,
           llvm::ArrayRef<int32_t> stopTokens = {});

  /// Compiles the graphs generate() runs for a prompt of `promptTokens`
  /// and `maxNewTokens` new tokens, without loading weights or running
  /// them: with a compile cache (CompileOptions::cacheDir), a later process
  /// generates without compiling. Returns how many graphs it compiled (or
  /// loaded from the cache).
  /// `ahead`: filling the cache for a later process (CompileOptions::
  /// precompile; the graphs are not kept); false: compiling and keeping
  /// this generator's graphs now (`[execution] mode = "eager"`), their
  /// weights loaded.
  llvm::Expected<unsigned> precompile(int64_t promptTokens,
                                      unsigned maxNewTokens, bool ahead = true);

  const GenerationStats &stats() const { return statistics; }
  /// What the decode graphs are and how they run (their profile's view).
  ModelExecutionConfig executionConfig() const {
    return ModelExecutionConfig::of(built, ModelVariant::Decode);
  }
  const TransformerConfig &config() const { return recipe.config(); }
  /// What building the recipe reported (BuiltModel::warnings: config keys
  /// RLX does not know, tensors left unused when allowed).
  llvm::ArrayRef<std::string> buildWarnings() const { return built.warnings; }
  /// The most tokens (prompt and new ones) the cache holds.
  int64_t maxContextTokens() const { return maxContext; }

private:
  Generator(Session &session, DecoderFlow recipe, const WeightSource &weights,
            int64_t maxContext, CompileOptions options)
      : session(session), recipe(std::move(recipe)), weights(weights),
        maxContext(maxContext), options(std::move(options)) {}

  struct Graph {
    std::unique_ptr<CompiledModel> model;
    /// Its past_k.N / past_v.N share their bytes with the head of
    /// present_k.N / present_v.N.
    bool pastInPlace = false;
    /// Cached tokens its past inputs hold in place (rows [0, rowsHeld)).
    int64_t rowsHeld = 0;
  };
  /// The graph for `past` cached tokens and `count` new ones.
  llvm::Expected<Graph *> graph(int64_t past, int64_t count);
  /// Compiles that graph (its weights not loaded).
  llvm::Expected<CompiledModel> compileGraph(int64_t past, int64_t count,
                                             bool ahead = false);
  /// Runs `tokens` at positions [start, start + n) over the cache; returns
  /// the logits of the last one (under tensor parallelism, this rank's
  /// slice of them: see sample()) and appends the new keys and values.
  llvm::Expected<std::vector<float>> step(llvm::ArrayRef<int32_t> tokens,
                                          int64_t start);
  /// The next token from a step's logits. Under tensor parallelism the
  /// graphs return each rank's slice of the vocabulary: a greedy sampler
  /// takes the argmax across ranks and a top-k one the ranks' top k
  /// (rlx/Runtime/Collectives.h), whose results are the whole logits'; other
  /// samplers, and a caller wanting the logits (`wanted`), all-gather the
  /// slices into `logits` first. Every rank calls it and picks the same
  /// token.
  int32_t sample(std::vector<float> &logits, const SamplingOptions &sampling,
                 std::mt19937_64 &rng, bool wanted);

  Session &session;
  DecoderFlow recipe;
  const WeightSource &weights;
  int64_t maxContext;
  CompileOptions options;
  BuiltModel built;
  std::unique_ptr<WeightSourceStack> source;
  std::map<std::pair<int64_t, int64_t>, Graph> graphs;
  /// The graph the last step ran. A step on another graph gives this one's
  /// arena back first (CompiledModel::releaseArena): one graph's scratch
  /// memory is resident at a time, not the prompt graph's beside the
  /// decode graphs'.
  Graph *lastRun = nullptr;
  CompiledModel *pool = nullptr;
  /// Values per token of one layer's keys (or values) this process keeps:
  /// all KV heads, or under `[parallel] tensor = N` the rank's share.
  int64_t kvColumns = 0;
  /// Tensor parallelism: where this rank's slice of the logits starts in
  /// the vocabulary.
  int64_t vocabStart = 0;
  /// The element type of the cache (`[precision] kv_cache`) and its size.
  DType cacheType = DType::F32;
  size_t cacheElementBytes = 4;
  /// Makes room in the cache for `rows` tokens (at most maxContext),
  /// growing it geometrically; the rows held are kept.
  void reserveCache(int64_t rows);
  /// Per layer, [cacheRows, kv] keys and values (bytes of cacheType).
  int64_t cacheRows = 0;
  std::vector<std::vector<uint8_t>> cacheK, cacheV;
  /// Per layer, the past keys and values fed to a step ([past, kv]), kept
  /// between steps so that decoding does not allocate.
  std::vector<std::vector<uint8_t>> feedK, feedV;
  GenerationStats statistics;
};

} // namespace rlx

#endif // RLX_FLOW_GENERATE_H
