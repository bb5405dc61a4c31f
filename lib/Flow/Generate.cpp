//===- Generate.cpp - Autoregressive decoding with a KV cache -------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Flow/Generate.h"
#include "RLX/Runtime/Collectives.h"
#include "RLX/Runtime/MemoryBudget.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <tuple>
#include <unistd.h>

using namespace rlx;
using llvm::Error;
using llvm::Expected;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

Error rlx::checkSamplingOptions(const SamplingOptions &opts) {
  auto bad = [](llvm::StringRef name, double value, llvm::StringRef rule) {
    std::string v;
    llvm::raw_string_ostream os(v);
    os << llvm::format("%g", value);
    return fail(name + " is " + v + "; it must be " + rule);
  };
  if (!std::isfinite(opts.temperature) || opts.temperature < 0)
    return bad("temperature", opts.temperature, "finite and >= 0");
  if (!(opts.topP > 0 && opts.topP <= 1))
    return bad("top-p", opts.topP, "in (0, 1]");
  if (opts.topK < 0)
    return bad("top-k", opts.topK, ">= 0");
  return Error::success();
}

int32_t rlx::sampleToken(llvm::ArrayRef<float> logits,
                         const SamplingOptions &opts, std::mt19937_64 &rng) {
  if (opts.temperature <= 0)
    return std::max_element(logits.begin(), logits.end()) - logits.begin();
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  if (opts.topK > 0 && static_cast<size_t>(opts.topK) < order.size())
    order.resize(opts.topK);
  std::vector<double> p(order.size());
  double top = logits[order[0]] / opts.temperature, sum = 0;
  for (size_t i = 0; i < order.size(); ++i)
    sum += p[i] = std::exp(logits[order[i]] / opts.temperature - top);
  size_t keep = order.size();
  if (opts.topP < 1) {
    double cum = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      cum += p[i] / sum;
      if (cum >= opts.topP) {
        keep = i + 1;
        break;
      }
    }
  }
  std::discrete_distribution<size_t> pick(p.begin(), p.begin() + keep);
  return order[pick(rng)];
}

std::optional<uint64_t>
rlx::kvCacheBytesPerToken(const TransformerConfig &config,
                          ComputePrecision kvCache) {
  uint64_t element = kvCache == ComputePrecision::F32 ? 4 : 2;
  std::optional<uint64_t> bytes = mulBytes(2 * element, config.numLayers);
  if (bytes)
    bytes = mulBytes(*bytes, config.numKvHeads);
  if (bytes)
    bytes = mulBytes(*bytes, config.headDim);
  return bytes;
}

/// A fingerprint of the model a rank runs: its flow (every layer's blocks,
/// shapes and attributes) and its weights (names, types, shapes, sizes, and
/// the first and last bytes of each stored tensor).
static uint64_t modelFingerprint(const BuiltModel &built,
                                 const WeightSource &weights) {
  uint64_t h = llvm::xxh3_64bits(built.mlir);
  auto mix = [&](llvm::ArrayRef<uint8_t> bytes) {
    h = llvm::xxh3_64bits(bytes) ^ (h * 0x9E3779B97F4A7C15ull);
  };
  for (const std::string &name : weights.names()) {
    const TensorInfo *info = weights.lookup(name);
    if (!info)
      continue;
    std::string header = name + ":" + dtypeName(info->dtype).str() + ":" +
                         std::to_string(info->byteSize);
    for (int64_t d : info->shape)
      header += "," + std::to_string(d);
    mix(llvm::arrayRefFromStringRef(header));
    Expected<llvm::ArrayRef<uint8_t>> raw = weights.rawBytes(name);
    if (!raw) {
      llvm::consumeError(raw.takeError());
      continue;
    }
    size_t edge = std::min<size_t>(64, raw->size());
    mix(raw->take_front(edge));
    mix(raw->take_back(edge));
  }
  return h;
}

Expected<std::unique_ptr<Generator>>
Generator::create(Session &session, DecoderFlow recipe,
                  const WeightSource &weights, int64_t maxContext,
                  CompileOptions options) {
  if (maxContext <= 0)
    return fail("the maximum context must be positive");
  recipe.forDecode();
  std::unique_ptr<Generator> g(new Generator(
      session, std::move(recipe), weights, maxContext, std::move(options)));
  Expected<BuiltModel> built = g->recipe.build(weights);
  if (!built)
    return built.takeError();
  g->built = std::move(*built);
  g->source = std::make_unique<WeightSourceStack>(
      std::vector<const WeightSource *>{&weights, g->built.synthesized.get()});
  // On the CPU the parameter pool mirrors the page phases of the weights'
  // file, so that loading maps the pages of weights kept as stored rather
  // than copying them. Only weights of 16 pages or more: a phase costs up to
  // a page of padding in the pool.
  if (session.device() == Device::Cpu) {
    long page = ::sysconf(_SC_PAGESIZE);
    if (page > 0) {
      g->options.paramPageSize = page;
      for (const std::string &name : g->source->names()) {
        const TensorInfo *t = g->source->lookup(name);
        if (!t || t->byteSize < 16 * static_cast<uint64_t>(page))
          continue;
        if (std::optional<WeightSource::FileRegion> region =
                g->source->fileRegion(name))
          g->options.paramPagePhases[name] =
              static_cast<int64_t>(region->offset % page);
      }
    }
  }
  const TransformerConfig &c = g->recipe.config();
  // Under tensor parallelism a rank keeps the KV heads its query heads
  // read: its share of them, or one when there are fewer than ranks.
  int64_t ranks = g->built.profile.parallel.tensor;
  int64_t kvHeads = c.numKvHeads;
  if (ranks > 1) {
    if (c.numHeads % ranks != 0 ||
        (c.numKvHeads % ranks != 0 && ranks % c.numKvHeads != 0))
      return fail("[parallel] tensor = " + llvm::Twine(ranks) +
                  " needs num_attention_heads (" + llvm::Twine(c.numHeads) +
                  ") divisible by the ranks and num_key_value_heads (" +
                  llvm::Twine(c.numKvHeads) +
                  ") to divide or be divisible by them");
    kvHeads = c.numKvHeads % ranks == 0 ? c.numKvHeads / ranks : 1;
    // Every rank must run the same model: a rank given another file or
    // config ends them all with an error, not with wrong tokens.
    std::string what =
        ("the model (its flow and weights: " + weights.description() + ")")
            .str();
    if (Error err =
            checkSameOnAllRanks(modelFingerprint(g->built, weights), what))
      return std::move(err);
    // The graphs return the rank's slice of the logits; sample() reduces
    // them across the ranks (a vocabulary that does not split stays whole).
    g->options.tensorParallelLocalLogits = true;
    if (c.vocabSize % ranks == 0)
      g->vocabStart = g->options.tensorParallelRank.value_or(collectiveRank()) *
                      (c.vocabSize / ranks);
  }
  g->kvColumns = kvHeads * c.headDim;
  size_t kv = g->kvColumns;
  // Keys and values of every layer for maxContext tokens, in the element
  // type of `[precision] kv_cache`. The whole context must fit the budget;
  // the cache is allocated as it fills (reserveCache).
  ComputePrecision kvType = g->built.profile.precision.kvCache;
  g->cacheType = kvType == ComputePrecision::F16    ? DType::F16
                 : kvType == ComputePrecision::BF16 ? DType::BF16
                                                    : DType::F32;
  g->cacheElementBytes = kvType == ComputePrecision::F32 ? 4 : 2;
  // The budget: the caller's, else the profile's [execution] one.
  Expected<MemoryBudget> budget = MemoryBudget::get(
      g->options.memoryBudgetMB, g->built.profile.execution.memoryBudgetMB);
  if (!budget)
    return budget.takeError();
  std::optional<uint64_t> cacheBytes = kvCacheBytesPerToken(c, kvType);
  if (cacheBytes)
    cacheBytes = mulBytes(*cacheBytes / c.numKvHeads * kvHeads, maxContext);
  if (Error err = budget->check(
          cacheBytes.value_or(UINT64_MAX),
          "the KV cache (" + llvm::Twine(c.numLayers) + " layers, " +
              llvm::Twine(maxContext) + " tokens, " + llvm::Twine(kv) + " " +
              dtypeName(g->cacheType) + " values per key and per value)"))
    return std::move(err);
  g->cacheK.resize(c.numLayers);
  g->cacheV.resize(c.numLayers);
  return g;
}

void Generator::reserveCache(int64_t rows) {
  if (rows <= cacheRows)
    return;
  // Doubling, from the first bucket (16): a run copies each row O(1) times.
  int64_t grown = std::min(maxContext, std::max<int64_t>(16, 2 * cacheRows));
  cacheRows = std::max(rows, grown);
  const TransformerConfig &c = recipe.config();
  size_t bytes = cacheRows * kvColumns * cacheElementBytes;
  for (int64_t i = 0; i < c.numLayers; ++i) {
    cacheK[i].resize(bytes);
    cacheV[i].resize(bytes);
  }
}

Expected<CompiledModel> Generator::compileGraph(int64_t past, int64_t count,
                                                bool ahead) {
  const TransformerConfig &c = recipe.config();
  int64_t kv = c.numKvHeads * c.headDim;
  CompileOptions o = options;
  o.profile = built.profile;
  o.precompile = ahead;
  o.inputShapes["tokens"] = {1, count};
  o.inputShapes["positions"] = {1, count};
  o.inputShapes["kv_mask"] = {1, past + count};
  for (int64_t i = 0; i < c.numLayers; ++i) {
    o.inputShapes["past_k." + std::to_string(i)] = {1, past, kv};
    o.inputShapes["past_v." + std::to_string(i)] = {1, past, kv};
  }
  auto start = std::chrono::steady_clock::now();
  Expected<CompiledModel> model = session.compileString(built.mlir, o);
  if (!model)
    return model.takeError();
  statistics.compileSeconds += since(start);
  ++statistics.graphsCompiled;
  if (session.lastStats().cached)
    ++statistics.graphsCached;
  for (const std::string &w : session.lastStats().warnings)
    if (!llvm::is_contained(statistics.compileWarnings, w))
      statistics.compileWarnings.push_back(w);
  return model;
}

Expected<unsigned> Generator::precompile(int64_t promptTokens,
                                         unsigned maxNewTokens, bool ahead) {
  if (promptTokens <= 0)
    return fail("the prompt is empty");
  if (promptTokens + maxNewTokens > maxContext)
    return fail("prompt of " + llvm::Twine(promptTokens) + " tokens + " +
                llvm::Twine(maxNewTokens) +
                " new tokens exceeds the maximum of " +
                llvm::Twine(maxContext) + " tokens of context");
  // The graphs generate() runs: the prompt's, then one per bucket of the
  // decode steps (the last new token is not fed back).
  const CompileProfile::ExecutionProfile &exec = built.profile.execution;
  std::vector<std::pair<int64_t, int64_t>> keys = {
      {exec.pastBucket(0), promptTokens}};
  for (int64_t start = promptTokens;
       start + 1 < promptTokens + static_cast<int64_t>(maxNewTokens); ++start)
    if (keys.back() != std::make_pair(exec.pastBucket(start), int64_t(1)))
      keys.emplace_back(exec.pastBucket(start), 1);
  unsigned compiled = 0;
  for (auto [past, count] : keys) {
    if (graphs.count({past, count}))
      continue;
    // Ahead, for the cache only; otherwise kept, as a run would.
    if (ahead) {
      if (Expected<CompiledModel> model = compileGraph(past, count, ahead);
          !model)
        return model.takeError();
    } else if (Expected<Graph *> g = graph(past, count); !g) {
      return g.takeError();
    }
    ++compiled;
  }
  return compiled;
}

Expected<Generator::Graph *> Generator::graph(int64_t past, int64_t count) {
  auto key = std::make_pair(past, count);
  auto it = graphs.find(key);
  if (it != graphs.end())
    return &it->second;
  Expected<CompiledModel> model = compileGraph(past, count);
  if (!model)
    return model.takeError();
  const TransformerConfig &c = recipe.config();
  Graph g;
  g.model = std::make_unique<CompiledModel>(std::move(*model));
  if (pool) {
    if (Error err = g.model->shareParams(*pool))
      return std::move(err);
  } else {
    auto load = std::chrono::steady_clock::now();
    if (Error err = g.model->loadParams(*source))
      return std::move(err);
    statistics.loadSeconds += since(load);
    statistics.mappedBytes = g.model->mappedParamBytes();
    statistics.paramBytes = g.model->manifest().paramSize;
    statistics.warnings = g.model->loadWarnings();
    pool = g.model.get();
  }
  const Manifest &m = g.model->manifest();
  g.pastInPlace = true;
  for (int64_t i = 0; i < c.numLayers; ++i)
    for (const char *kind : {"_k.", "_v."}) {
      std::string layer = kind + std::to_string(i);
      const ManifestEntry *in = m.find(IOKind::Input, "past" + layer);
      const ManifestEntry *out = m.find(IOKind::Output, "present" + layer);
      g.pastInPlace &= in && out && in->offset == out->offset &&
                       !g.model->inputPlace("past" + layer).empty();
    }
  return &graphs.emplace(key, std::move(g)).first->second;
}

Expected<std::vector<float>> Generator::step(llvm::ArrayRef<int32_t> tokens,
                                             int64_t start) {
  const TransformerConfig &c = recipe.config();
  int64_t n = tokens.size(), kv = kvColumns;
  if (start + n > maxContext)
    return fail("the context of " + llvm::Twine(start + n) +
                " tokens exceeds the maximum of " + llvm::Twine(maxContext));
  // The past is the cache rounded up to a bucket (at least 16 slots).
  int64_t past = built.profile.execution.pastBucket(start);
  Expected<Graph *> graph = this->graph(past, n);
  if (!graph)
    return graph.takeError();
  Graph &g = **graph;
  if (lastRun && lastRun != &g) {
    lastRun->model->releaseArena();
    lastRun->rowsHeld = 0;
  }
  lastRun = &g;
  reserveCache(start + n);
  // In place, the cached tokens fill the first `start` slots of the past and
  // stay in the graph's arena between steps: a step copies only the rows
  // the graph has not seen. Key index distances then exceed position
  // distances by `past - start`, which no mask sees unless a sliding window
  // reaches past the bucket. Otherwise the cached tokens fill the last
  // `start` slots (index distances equal position distances), fed whole.
  bool inPlace =
      g.pastInPlace && (c.slidingWindow <= 0 || past + n <= c.slidingWindow);
  int64_t head = inPlace ? 0 : past - start;
  if (!inPlace || g.rowsHeld > start)
    g.rowsHeld = 0;

  Tensor tokenIds = Tensor::fromI32({1, n}, tokens);
  std::vector<int32_t> pos(n), mask(past + n, 0);
  std::iota(pos.begin(), pos.end(), static_cast<int32_t>(start));
  std::fill(mask.begin() + head, mask.begin() + head + start, 1);
  std::fill(mask.begin() + past, mask.end(), 1);
  Tensor positions = Tensor::fromI32({1, n}, pos);
  Tensor kvMask = Tensor::fromI32({1, past + n}, mask);
  TensorRefMap_t feeds;
  feeds.emplace("tokens", tokenIds);
  feeds.emplace("positions", positions);
  feeds.emplace("kv_mask", kvMask);
  feedK.resize(c.numLayers);
  feedV.resize(c.numLayers);
  std::array<int64_t, 3> pastShape = {1, past, kv};
  size_t rowBytes = kv * cacheElementBytes;
  for (int64_t i = 0; i < c.numLayers; ++i) {
    for (auto [kind, feed, cache] :
         {std::make_tuple("past_k.", &feedK[i], &cacheK[i]),
          std::make_tuple("past_v.", &feedV[i], &cacheV[i])}) {
      std::string name = kind + std::to_string(i);
      llvm::MutableArrayRef<uint8_t> place;
      if (inPlace) {
        place = g.model->inputPlace(name);
        std::memcpy(place.data() + g.rowsHeld * rowBytes,
                    cache->data() + g.rowsHeld * rowBytes,
                    (start - g.rowsHeld) * rowBytes);
        statistics.pastBytesCopied += (start - g.rowsHeld) * rowBytes;
      } else {
        // Kept between steps: decoding does not allocate or fault pages in.
        feed->resize(past * rowBytes);
        std::fill(feed->begin(), feed->begin() + head * rowBytes, 0);
        std::memcpy(feed->data() + head * rowBytes, cache->data(),
                    start * rowBytes);
        place = {feed->data(), past * rowBytes};
        statistics.pastBytesCopied += past * rowBytes;
      }
      feeds.emplace(name, TensorRef(cacheType, pastShape, place));
    }
  }
  Expected<TensorRefMap_t> out = g.model->runInArena(feeds);
  if (!out)
    return out.takeError();
  g.rowsHeld = inPlace ? start : 0;
  auto rows = [&](llvm::StringRef name) {
    return out->at(name.str()).bytes.data() + past * rowBytes;
  };
  for (int64_t i = 0; i < c.numLayers; ++i) {
    std::memcpy(cacheK[i].data() + start * rowBytes,
                rows("present_k." + std::to_string(i)), n * rowBytes);
    std::memcpy(cacheV[i].data() + start * rowBytes,
                rows("present_v." + std::to_string(i)), n * rowBytes);
  }
  const TensorRef &logits = out->at("logits");
  const auto *l = reinterpret_cast<const float *>(logits.bytes.data());
  return std::vector<float>(l, l + logits.bytes.size() / sizeof(float));
}

int32_t Generator::sample(std::vector<float> &logits,
                          const SamplingOptions &sampling, std::mt19937_64 &rng,
                          bool wanted) {
  int64_t vocab = recipe.config().vocabSize,
          ranks = built.profile.parallel.tensor;
  if (ranks <= 1 || static_cast<int64_t>(logits.size()) == vocab)
    return sampleToken(logits, sampling, rng);
  // This rank's slice: tokens [vocabStart, vocabStart + logits.size()).
  auto candidate = [&](size_t i) {
    return LogitCandidate{logits[i], static_cast<int32_t>(vocabStart + i)};
  };
  size_t slice = logits.size();
  if (!wanted && sampling.temperature <= 0) {
    size_t best =
        std::max_element(logits.begin(), logits.end()) - logits.begin();
    return argmaxAcrossRanks(candidate(best)).token;
  }
  // Each rank's k best, when that is fewer values than its slice: the
  // whole logits' k best are among them, in the order sampleToken sorts
  // them, so it draws the same token from them.
  size_t k = sampling.topK;
  if (!wanted && k > 0 && 2 * k < slice) {
    std::vector<int32_t> order(slice);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) {
                        return logits[a] > logits[b] ||
                               (logits[a] == logits[b] && a < b);
                      });
    std::vector<LogitCandidate> mine;
    for (size_t i = 0; i < k; ++i)
      mine.push_back(candidate(order[i]));
    std::vector<LogitCandidate> best = topKAcrossRanks(mine, k);
    std::vector<float> top;
    for (const LogitCandidate &c : best)
      top.push_back(c.logit);
    return best[sampleToken(top, sampling, rng)].token;
  }
  std::vector<float> whole(slice * ranks);
  rlx_all_gather_f32(logits.data(), whole.data(), 1, slice, ranks);
  logits = std::move(whole);
  return sampleToken(logits, sampling, rng);
}

Expected<std::vector<int32_t>>
Generator::generate(llvm::ArrayRef<int32_t> prompt, unsigned maxNewTokens,
                    const SamplingOptions &sampling,
                    std::function<void(int32_t)> onToken,
                    std::vector<std::vector<float>> *stepLogits,
                    llvm::ArrayRef<int32_t> stopTokens) {
  if (Error err = checkSamplingOptions(sampling))
    return std::move(err);
  if (prompt.empty())
    return fail("the prompt is empty");
  // The last new token is not fed back, but a context holds the prompt and
  // every new token (as transformers' max_length does).
  if (static_cast<int64_t>(prompt.size()) + maxNewTokens > maxContext)
    return fail("prompt of " + llvm::Twine(prompt.size()) + " tokens + " +
                llvm::Twine(maxNewTokens) +
                " new tokens exceeds the maximum of " +
                llvm::Twine(maxContext) + " tokens of context");
  int64_t vocab = recipe.config().vocabSize;
  for (auto [i, t] : llvm::enumerate(prompt))
    if (t < 0 || t >= vocab)
      return fail("prompt token " + llvm::Twine(t) + " at position " +
                  llvm::Twine(i) + " is outside the vocabulary [0, " +
                  llvm::Twine(vocab) + ")");
  std::mt19937_64 rng(sampling.seed);
  // The cache is written anew from position 0.
  for (auto &entry : graphs)
    entry.second.rowsHeld = 0;
  statistics.promptTokens = prompt.size();
  statistics.pastBytesCopied = 0;
  statistics.newTokens = 0;
  statistics.prefillCollectiveCalls = statistics.prefillCollectiveBytes = 0;
  statistics.decodeCollectiveCalls = statistics.decodeCollectiveBytes = 0;
  // Timings leave out the compiles of new graphs and the weights' load.
  auto leftOut = [&] {
    return statistics.compileSeconds + statistics.loadSeconds;
  };
  // [execution] mode = "eager": every graph of this generation compiles
  // before the first step (a decode step never waits for a compile).
  if (built.profile.execution.mode == ExecutionMode::Eager)
    if (Expected<unsigned> compiled =
            precompile(prompt.size(), maxNewTokens, /*ahead=*/false);
        !compiled)
      return compiled.takeError();
  double before = leftOut();
  CollectiveStats collectives = collectiveStats();
  auto start = std::chrono::steady_clock::now();
  Expected<std::vector<float>> logits = step(prompt, 0);
  if (!logits)
    return logits.takeError();
  statistics.prefillSeconds = since(start) - (leftOut() - before);

  std::vector<int32_t> out;
  int64_t length = prompt.size();
  double decode = 0;
  for (unsigned i = 0; i < maxNewTokens; ++i) {
    int32_t token = sample(*logits, sampling, rng, stepLogits != nullptr);
    if (stepLogits)
      stepLogits->push_back(*logits);
    if (i == 0) {
      CollectiveStats now = collectiveStats();
      statistics.prefillCollectiveCalls = now.calls - collectives.calls;
      statistics.prefillCollectiveBytes = now.bytes - collectives.bytes;
      collectives = now;
    }
    out.push_back(token);
    if (onToken)
      onToken(token);
    if (i + 1 == maxNewTokens || llvm::is_contained(stopTokens, token))
      break;
    before = leftOut();
    auto t = std::chrono::steady_clock::now();
    logits = step({token}, length);
    if (!logits)
      return logits.takeError();
    decode += since(t) - (leftOut() - before);
    ++length;
  }
  statistics.newTokens = out.size();
  statistics.decodeSteps = out.empty() ? 0 : out.size() - 1;
  statistics.decodeSeconds = decode;
  CollectiveStats now = collectiveStats();
  uint64_t &calls = out.empty() ? statistics.prefillCollectiveCalls
                                : statistics.decodeCollectiveCalls;
  uint64_t &bytes = out.empty() ? statistics.prefillCollectiveBytes
                                : statistics.decodeCollectiveBytes;
  calls = now.calls - collectives.calls;
  bytes = now.bytes - collectives.bytes;
  return out;
}
