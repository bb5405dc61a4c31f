//===- ModelRunner.cpp - rlx-run --model ----------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "ModelRunner.h"
#include "RLX/Flow/Qwen3Next.h"
#include "RLX/Runtime/MemoryBudget.h"
#include "RLX/Tokenizer/ChatTemplate.h"
#include "RLX/Tokenizer/Tokenizer.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/Npy.h"
#include "RLX/Weights/SafeTensors.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <cstdlib>
#include <numeric>

using namespace rlx;
using llvm::Error;
using llvm::Expected;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Where reports go: stdout, or stderr when stdout carries generated text.
static llvm::raw_ostream &report(const ModelRunOptions &o) {
  if (o.follower)
    return llvm::nulls();
  return o.promptText ? llvm::errs() : llvm::outs();
}

static void printCompile(Session &session, llvm::StringRef what,
                         llvm::raw_ostream &os, bool warnings = true) {
  const CompileStats &s = session.lastStats();
  os << (s.cached ? "loaded " : "compiled ") << what
     << (s.cached ? " from the compile cache" : "") << " in "
     << llvm::format("%.3f", s.compileSeconds) << " s: " << s.kernels
     << " kernels (" << s.kernelFunctions << " functions), arena "
     << s.arenaBytes << " bytes (naive " << s.naiveBytes << "), params "
     << s.paramBytes << " bytes\n"
     << "  fused ops: " << s.fusedOps << "\n"
     << "  compile phases: " << s.phaseSummary() << "\n";
  if (warnings)
    for (const std::string &w : s.warnings)
      llvm::errs() << "rlx-run: warning: " << w << "\n";
  if (!s.fusionReport.empty())
    os << "  " << s.fusionReport << "\n";
}

/// What the recipe reports (config keys RLX does not know, tensors left
/// unused under --allow-unused-weights) and what loading the weights reports
/// (NaN or infinities in a weight).
static void printWarnings(llvm::ArrayRef<std::string> warnings) {
  for (const std::string &w : warnings)
    llvm::errs() << "rlx-run: warning: " << w << "\n";
}

static Error writeArray(llvm::StringRef path, llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<float> data) {
  if (llvm::Error err = writeNpy(path, shape, data))
    return err;
  return Error::success();
}

/// The key that gives the model's positions: a GGUF's context_length, a
/// config.json's max_position_embeddings.
static llvm::StringRef positionsKey(const ModelRunOptions &o) {
  return llvm::StringRef(o.model).ends_with(".gguf")
             ? "context_length"
             : "max_position_embeddings";
}

/// Prints the outputs of an encoder run and writes them to --output-dir.
static Error reportOutputs(const ModelRunOptions &o, TensorMap_t &outputs) {
  for (auto &[name, tensor] : outputs) {
    report(o) << name << ": " << tensor.summary() << "\n";
    if (o.outputDir.empty())
      continue;
    llvm::sys::fs::create_directories(o.outputDir);
    llvm::SmallString<128> path(o.outputDir);
    llvm::sys::path::append(path, name + ".npy");
    if (Error err = writeTensorNpy(path, tensor))
      return err;
  }
  return Error::success();
}

/// Loads the weights into an encoder and runs it once on `feeds`: the time
/// and the outputs reported.
static Error loadAndRun(CompiledModel &model, const WeightSource &weights,
                        const TensorMap_t &feeds, const ModelRunOptions &o) {
  if (Error err = model.loadParams(weights))
    return err;
  printWarnings(model.loadWarnings());
  auto start = std::chrono::steady_clock::now();
  Expected<TensorMap_t> out = model.run(feeds);
  if (!out)
    return out.takeError();
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  report(o) << "ran in " << llvm::format("%.3f", ms) << " ms\n";
  return reportOutputs(o, *out);
}

/// The profile a graph compiles with, `base` being the one it compiles with
/// when no profile is given: a --profile file is read over `base` (the keys
/// it does not set keep the graph's values), a --preset replaces it, and
/// --policy has the last word on the fusion policy. `[parallel]` is the
/// options' (the file's or --tensor-parallel).
static Expected<CompileProfile> profileOver(const ModelRunOptions &o,
                                            CompileProfile base) {
  if (o.presetGiven)
    return o.compile.profile; // The preset, all of it.
  if (!o.profileFile.empty()) {
    Expected<CompileProfile> file =
        CompileProfile::fromTomlFile(o.profileFile, base);
    if (!file)
      return file.takeError();
    base = std::move(*file);
  }
  if (o.policy)
    base.fusion.policy = *o.policy;
  base.parallel = o.compile.profile.parallel;
  return base;
}

/// The profile of a recipe that fixes its precision (an encoder's,
/// Qwen3-Next's), `base` being the recipe's own, under the options' profile
/// (profileOver): one that asks for another precision is refused by name.
static Expected<CompileProfile>
fixedPrecisionProfile(const ModelRunOptions &o, const CompileProfile &base) {
  Expected<CompileProfile> profile = profileOver(o, base);
  if (!profile)
    return profile.takeError();
  // The activations' type is the compiler's, not the recipe's: any model
  // takes it.
  if (o.compute)
    profile->precision.compute = *o.compute;
  const CompileProfile::PrecisionProfile &want = profile->precision;
  const CompileProfile::PrecisionProfile &have = base.precision;
  if (want.weights != have.weights)
    return fail("[precision] weights = \"" +
                stringifyWeightPrecision(want.weights) +
                "\" is implemented for the decoder recipes (llama, qwen3, "
                "gemma, ...); this model keeps its weights in " +
                stringifyWeightPrecision(have.weights));
  if (want.kvCache != have.kvCache)
    return fail("[precision] kv_cache = \"" +
                stringifyComputePrecision(want.kvCache) +
                "\" is implemented for the decoder recipes (llama, qwen3, "
                "gemma, ...); this model keeps " +
                stringifyComputePrecision(have.kvCache) + " keys and values");
  return profile;
}

/// Sets the profile an encoder compiles with (fixedPrecisionProfile over
/// the recipe's). An encoder compiles one graph per input and decodes
/// nothing: decode buckets are refused by name.
static Error setEncoderProfile(CompileOptions &c, const BuiltModel &built,
                               const ModelRunOptions &o) {
  Expected<CompileProfile> profile = fixedPrecisionProfile(o, built.profile);
  if (!profile)
    return profile.takeError();
  if (profile->execution.decodeBuckets != built.profile.execution.decodeBuckets)
    return fail("[execution] decode_buckets sizes the KV-cache decode graphs "
                "of the decoder recipes (llama, qwen3, gemma, ...); this "
                "model is an encoder, compiled once for its input");
  c.profile = std::move(*profile);
  return Error::success();
}

static Error runEncoder(Session &session, LoadedModel &m,
                        const ModelRunOptions &o) {
  // Refused before anything is built or compiled.
  if (static_cast<int64_t>(o.prompt.size()) > m.config.maxPositions)
    return fail("input of " + llvm::Twine(o.prompt.size()) +
                " tokens exceeds the model's " +
                llvm::Twine(m.config.maxPositions) + " positions (" +
                positionsKey(o) + ")");
  BertFlow recipe(m.config);
  recipe.meanPooled().allowUnusedWeights(o.allowUnusedWeights);
  Expected<BuiltModel> built = recipe.build(*m.weights);
  if (!built)
    return built.takeError();
  printWarnings(built->warnings);
  int64_t t = o.prompt.size();
  CompileOptions c = o.compile;
  if (Error err = setEncoderProfile(c, *built, o))
    return err;
  for (const char *in :
       {"input_ids", "attention_mask", "position_ids", "token_type_ids"})
    c.inputShapes[in] = {1, t};
  Expected<CompiledModel> model = session.compileString(built->mlir, c);
  if (!model)
    return model.takeError();
  if (!o.quiet)
    printCompile(session, "bert encoder (" + std::to_string(t) + " tokens)",
                 report(o));
  if (o.precompile) {
    report(o) << "precompiled the encoder for " << t << " tokens"
              << (session.lastStats().cached ? " (already in the compile cache)"
                                             : "")
              << (c.cacheDir.empty() ? "; no compile cache (--no-cache)"
                                     : " into " + c.cacheDir)
              << "\n";
    return Error::success();
  }
  std::vector<int32_t> ones(t, 1), pos(t), zeros(t, 0);
  std::iota(pos.begin(), pos.end(), 0);
  TensorMap_t feeds;
  feeds.emplace("input_ids", Tensor::fromI32({1, t}, o.prompt));
  feeds.emplace("attention_mask", Tensor::fromI32({1, t}, ones));
  feeds.emplace("position_ids", Tensor::fromI32({1, t}, pos));
  feeds.emplace("token_type_ids", Tensor::fromI32({1, t}, zeros));
  return loadAndRun(*model, *m.weights, feeds, o);
}

/// `--image`: an image encoder compiled for the image's size and run on
/// its batch.
static Error runVision(Session &session, LoadedModel &m,
                       const ModelRunOptions &o) {
  Expected<Tensor> pixels = readTensorNpy(o.image);
  if (!pixels)
    return pixels.takeError();
  llvm::SmallVector<int64_t> shape(pixels->shape().begin(),
                                   pixels->shape().end());
  if (shape.size() == 3)
    shape.insert(shape.begin(), 1);
  if (pixels->dtype() != DType::F32 || shape.size() != 4 ||
      shape[1] != m.config.numChannels)
    return fail(
        "--image " + o.image + ": expected f32 pixels [batch, " +
        llvm::Twine(m.config.numChannels) + ", height, width] (num_channels " +
        llvm::Twine(m.config.numChannels) + "), got " + pixels->describe());
  // [C, H, W] is one image: the same bytes under a batch of 1.
  Tensor batch(DType::F32, shape);
  llvm::copy(pixels->bytes(), batch.mutableBytes().begin());
  *pixels = std::move(batch);
  VisionFlow recipe(m.config);
  recipe.imageSize(shape[2], shape[3]).allowUnusedWeights(o.allowUnusedWeights);
  Expected<BuiltModel> built = recipe.build(*m.weights);
  if (!built)
    return built.takeError();
  printWarnings(built->warnings);
  CompileOptions c = o.compile;
  if (Error err = setEncoderProfile(c, *built, o))
    return err;
  c.inputShapes["pixel_values"] = {shape.begin(), shape.end()};
  Expected<CompiledModel> model = session.compileString(built->mlir, c);
  if (!model)
    return model.takeError();
  if (!o.quiet)
    printCompile(session,
                 m.config.modelType + " encoder (" + std::to_string(shape[0]) +
                     " x " + std::to_string(shape[2]) + "x" +
                     std::to_string(shape[3]) + " images)",
                 report(o));
  if (o.precompile) {
    report(o) << "precompiled the encoder for " << shape[0] << " images of "
              << shape[2] << "x" << shape[3] << "\n";
    return Error::success();
  }
  TensorMap_t feeds;
  feeds.emplace("pixel_values", std::move(*pixels));
  return loadAndRun(*model, *m.weights, feeds, o);
}

namespace {
/// The context (prompt and new tokens) a generation may use.
struct Context {
  /// The most tokens the KV cache holds, and the most the run may use (at
  /// most the model's max positions).
  int64_t tokens = 0, limit = 0;
  /// Why: "max_position_embeddings 256", "--max-context 64, ...".
  std::string why;
  /// The default was capped by the memory budget.
  bool capped = false;
};
} // namespace

/// The context of `--max-context`, else the model's max positions capped so
/// that the KV cache fits the memory budget: `--memory-budget-mb` or
/// RLX_MEMORY_BUDGET_MB when given (0: no cap), else half the physical
/// memory.
static Expected<Context> chooseContext(const TransformerConfig &c,
                                       const ModelRunOptions &o) {
  std::string positions =
      (positionsKey(o) + " " + llvm::Twine(c.maxPositions)).str();
  Context ctx;
  if (o.maxContext < 0)
    return fail("--max-context is " + llvm::Twine(o.maxContext) +
                "; it must be positive");
  if (o.maxContext > 0) {
    ctx.tokens = o.maxContext;
    ctx.limit = std::min(o.maxContext, c.maxPositions);
    ctx.why =
        "--max-context " + std::to_string(o.maxContext) + ", " + positions;
    return ctx;
  }
  ctx.tokens = ctx.limit = c.maxPositions;
  ctx.why = positions;
  ComputePrecision kv = o.kvCache ? *o.kvCache
                        : o.profileGiven()
                            ? o.compile.profile.precision.kvCache
                            : CompileProfile::llama32Decode().precision.kvCache;
  std::optional<uint64_t> perToken = kvCacheBytesPerToken(c, kv);
  Expected<MemoryBudget> budget = MemoryBudget::get(o.compile.memoryBudgetMB);
  if (!budget)
    return budget.takeError();
  if (budget->bytes == 0 || !perToken || *perToken == 0)
    return ctx;
  // Without a budget given, the cache may take half the physical memory.
  bool physical =
      !o.compile.memoryBudgetMB && !std::getenv("RLX_MEMORY_BUDGET_MB");
  uint64_t cap = physical ? budget->bytes / 2 : budget->bytes;
  uint64_t fits = cap / *perToken;
  if (fits >= static_cast<uint64_t>(c.maxPositions))
    return ctx;
  ctx.tokens = ctx.limit = static_cast<int64_t>(fits);
  ctx.capped = true;
  ctx.why =
      positions + ", capped by " +
      (physical
           ? "half the physical memory (" + std::to_string(cap >> 20) + " MiB)"
           : "the memory budget of " + std::to_string(budget->bytes >> 20) +
                 " MiB (" + budget->origin + ")") +
      " at " + std::to_string(*perToken) +
      " bytes of KV cache per token; --max-context sets it";
  return ctx;
}

/// The decoder recipe of `config` as the options set it up: a profile given
/// replaces the presets of the prompt and decode graphs; --weights-as, when
/// given, has the last word on the weights.
static Expected<DecoderFlow> decoderRecipe(const TransformerConfig &config,
                                           const ModelRunOptions &o) {
  Expected<DecoderFlow> recipe = decoderFlowFor(config);
  if (!recipe)
    return recipe.takeError();
  if (o.profileGiven()) {
    // Without a profile the weights stay as the file stores them: a profile
    // that does not set them keeps that too.
    CompileProfile prefill = CompileProfile::llama32Prefill();
    CompileProfile decode = CompileProfile::llama32Decode();
    prefill.precision.weights = decode.precision.weights =
        WeightPrecision::Stored;
    Expected<CompileProfile> p = profileOver(o, std::move(prefill));
    if (!p)
      return p.takeError();
    Expected<CompileProfile> d = profileOver(o, std::move(decode));
    if (!d)
      return d.takeError();
    recipe->profile(std::move(*p), std::move(*d));
  }
  if (o.weights)
    recipe->weightPrecision(*o.weights);
  if (o.kvCache)
    recipe->kvCachePrecision(*o.kvCache);
  if (o.compute)
    recipe->computePrecision(*o.compute);
  if (int64_t ranks = o.compile.profile.parallel.tensor; ranks > 1)
    recipe->tensorParallel(ranks);
  recipe->allowUnusedWeights(o.allowUnusedWeights);
  return recipe;
}

/// Qwen3-Next: the hybrid generator (carried convolution and recurrent
/// states), greedy or sampled; the new ids, and their text with a
/// tokenizer.
static Error runQwen3Next(Session &session, LoadedModel &m,
                          const ModelRunOptions &o,
                          const Tokenizer *tokenizer) {
  Expected<Qwen3NextFlow> recipe = Qwen3NextFlow::fromModelDir(o.model);
  if (!recipe)
    return recipe.takeError();
  Expected<CompileProfile> profile =
      fixedPrecisionProfile(o, CompileProfile::llama32Prefill());
  if (!profile)
    return profile.takeError();
  recipe->profile(std::move(*profile));
  Expected<std::unique_ptr<Qwen3NextGenerator>> gen =
      Qwen3NextGenerator::create(session, std::move(*recipe), *m.weights,
                                 o.compile);
  if (!gen)
    return gen.takeError();
  std::vector<int32_t> stop;
  if (tokenizer && !o.ignoreEos)
    stop.assign(tokenizer->eosIds().begin(), tokenizer->eosIds().end());
  auto start = std::chrono::steady_clock::now();
  Expected<std::vector<int32_t>> ids =
      (*gen)->generate(o.prompt, o.maxNewTokens, o.sampling, {}, stop);
  if (!ids)
    return ids.takeError();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  report(o) << "generated " << ids->size() << " tokens in "
            << llvm::format("%.3f", seconds) << " s (compiling included)\n"
            << "generated ids:";
  for (int32_t id : *ids)
    report(o) << " " << id;
  report(o) << "\n";
  if (tokenizer)
    llvm::outs() << tokenizer->decode(*ids) << "\n";
  return Error::success();
}

static Error runDecoder(Session &session, LoadedModel &m,
                        const ModelRunOptions &o,
                        std::chrono::steady_clock::time_point started,
                        const Tokenizer *tokenizer) {
  Expected<DecoderFlow> recipe = decoderRecipe(m.config, o);
  if (!recipe)
    return recipe.takeError();
  int64_t t = o.prompt.size();
  CompileOptions c = o.compile;
  // A prompt and new tokens that cannot fit are refused before anything
  // compiles.
  Expected<Context> ctx = chooseContext(m.config, o);
  if (!ctx)
    return ctx.takeError();
  if (o.maxNewTokens == 0 && t > m.config.maxPositions)
    return fail("prompt of " + llvm::Twine(t) + " tokens exceeds the " +
                "model's " + llvm::Twine(m.config.maxPositions) + " positions");
  if (o.maxNewTokens > 0 && t + o.maxNewTokens > ctx->limit)
    return fail("prompt of " + llvm::Twine(t) + " tokens + " +
                llvm::Twine(o.maxNewTokens) +
                " new tokens exceeds the context of " +
                llvm::Twine(ctx->limit) + " (" + ctx->why + ")");
  // The generator builds the decode flow, which checks the weights against
  // the recipe (missing, misshaped or unused tensors) before anything
  // compiles; its graphs compile with the recipe's profile.
  Expected<std::unique_ptr<Generator>> gen =
      Generator::create(session, *recipe, *m.weights, ctx->tokens, c);
  if (!gen)
    return gen.takeError();
  printWarnings((*gen)->buildWarnings());
  if (o.precompile) {
    Expected<unsigned> graphs = (*gen)->precompile(t, o.maxNewTokens);
    if (!graphs)
      return graphs.takeError();
    const GenerationStats &s = (*gen)->stats();
    printWarnings(s.compileWarnings);
    report(o) << "precompiled " << *graphs << " graphs for a prompt of " << t
              << " tokens and " << o.maxNewTokens << " new tokens ("
              << s.graphsCached << " already in the compile cache) in "
              << llvm::format("%.2f", s.compileSeconds) << " s"
              << (c.cacheDir.empty() ? "; no compile cache (--no-cache)"
                                     : " into " + c.cacheDir)
              << "\n";
    return Error::success();
  }

  // Full-sequence logits of the prompt (the parity check).
  if (!o.logitsOut.empty()) {
    DecoderFlow prefill = *recipe;
    prefill.forPrefill();
    Expected<BuiltModel> built = prefill.build(*m.weights);
    if (!built)
      return built.takeError();
    CompileOptions pc = c;
    pc.profile = built->profile;
    pc.inputShapes["tokens"] = {1, t};
    pc.inputShapes["positions"] = {1, t};
    Expected<CompiledModel> model = session.compileString(built->mlir, pc);
    if (!model)
      return model.takeError();
    WeightSourceStack all({m.weights.get(), built->synthesized.get()});
    if (Error err = model->loadParams(all))
      return err;
    printWarnings(model->loadWarnings());
    std::vector<int32_t> pos(t);
    std::iota(pos.begin(), pos.end(), 0);
    TensorMap_t feeds;
    feeds.emplace("tokens", Tensor::fromI32({1, t}, o.prompt));
    feeds.emplace("positions", Tensor::fromI32({1, t}, pos));
    Expected<TensorMap_t> out = model->run(feeds);
    if (!out)
      return out.takeError();
    const Tensor &logits = out->at("logits");
    if (Error err =
            o.follower ? Error::success() : writeTensorNpy(o.logitsOut, logits))
      return err;
    if (!o.quiet)
      report(o) << "wrote prompt logits " << logits.describe() << " to "
                << o.logitsOut << "\n";
  }
  if (o.maxNewTokens == 0)
    return Error::success();

  int64_t maxContext = ctx->tokens;
  std::vector<std::vector<float>> steps;
  llvm::raw_ostream &os = report(o);
  if (!o.quiet && ctx->capped)
    os << "context: " << maxContext << " tokens (" << ctx->why << ")\n";
  if (!o.quiet)
    os << "execution: " << (*gen)->executionConfig().describe() << "\n";
  if (!o.quiet)
    os << "prompt: " << t << " tokens; generating up to " << o.maxNewTokens
       << " (max context " << maxContext << ", "
       << (o.sampling.temperature > 0 ? "sampled" : "greedy") << ")\n";
  bool printedCompile = false;
  double firstToken = 0;
  // With a text prompt, the text of each token goes to stdout as soon as it
  // completes a character; the stop token itself is not printed.
  std::vector<int32_t> stop;
  if (tokenizer && !o.ignoreEos)
    stop.assign(tokenizer->eosIds().begin(), tokenizer->eosIds().end());
  std::optional<Tokenizer::StreamDecoder> stream;
  if (tokenizer)
    stream.emplace(*tokenizer);
  // The tokens so far, printed when a step fails midway.
  std::vector<int32_t> generated;
  // The weights load with the first graph: their warnings come before the
  // first token (or after a failure).
  bool warned = false;
  auto warnLoad = [&] {
    if (!std::exchange(warned, true))
      printWarnings((*gen)->stats().warnings);
  };
  // Every graph's compile warnings, each once: those of the prompt graph
  // with its first token, those of later graphs at the end.
  size_t compileWarned = 0;
  auto warnCompile = [&] {
    llvm::ArrayRef<std::string> all = (*gen)->stats().compileWarnings;
    printWarnings(all.drop_front(compileWarned));
    compileWarned = all.size();
  };
  Expected<std::vector<int32_t>> tokens = (*gen)->generate(
      o.prompt, o.maxNewTokens, o.sampling,
      [&](int32_t token) {
        warnLoad();
        generated.push_back(token);
        if (firstToken == 0)
          firstToken = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - started)
                           .count();
        if (!printedCompile && !o.quiet) {
          printCompile(session, "the prompt graph", os, /*warnings=*/false);
          printedCompile = true;
        }
        warnCompile();
        if (stream && !llvm::is_contained(stop, token)) {
          llvm::outs() << stream->step(token);
          llvm::outs().flush();
        }
      },
      o.stepLogitsOut.empty() ? nullptr : &steps, stop);
  warnLoad();
  warnCompile();
  if (stream) {
    llvm::outs() << stream->finish() << "\n";
    llvm::outs().flush();
  }
  if (!tokens) {
    // What was generated stays (the streamed text above, the ids here).
    os << "tokens:";
    for (int32_t tok : generated)
      os << " " << tok;
    os << "\n";
    os.flush();
    return fail("generation failed after " + llvm::Twine(generated.size()) +
                " of up to " + llvm::Twine(o.maxNewTokens) +
                " new tokens: " + llvm::toString(tokens.takeError()));
  }
  const GenerationStats &s = (*gen)->stats();
  os << "tokens:";
  for (int32_t tok : *tokens)
    os << " " << tok;
  os << "\n";
  if (tokenizer && !tokens->empty() && llvm::is_contained(stop, tokens->back()))
    os << "stopped at EOS token " << tokens->back() << "\n";
  if (!o.quiet)
    os << "prefill: " << s.promptTokens << " tokens in "
       << llvm::format("%.2f", s.prefillSeconds * 1e3) << " ms ("
       << llvm::format("%.1f", s.prefillTokensPerSecond())
       << " tok/s); decode: " << s.decodeSteps << " steps, "
       << llvm::format("%.1f", s.decodeTokensPerSecond()) << " tok/s; "
       << s.graphsCompiled << " graphs compiled (" << s.graphsCached
       << " from the compile cache) in "
       << llvm::format("%.2f", s.compileSeconds) << " s; weights "
       << "loaded in " << llvm::format("%.2f", s.loadSeconds) << " s ("
       << llvm::format("%.1f", s.mappedBytes / 1048576.0) << " of "
       << llvm::format("%.1f", s.paramBytes / 1048576.0)
       << " MiB mapped from the file); first token after "
       << llvm::format("%.2f", firstToken)
       << " s (open, build, compile, load and prefill); "
       << llvm::format("%.2f", s.pastBytesCopied / 1048576.0)
       << " MiB of cached keys and values copied\n";
  // What the ranks exchanged (rank 0's view; every rank runs the same).
  if (!o.quiet && s.decodeSteps > 0 &&
      (*gen)->executionConfig().preset.tensorParallel > 1)
    os << "collectives per decode step: "
       << llvm::format("%.1f", double(s.decodeCollectiveCalls) / s.decodeSteps)
       << " calls, "
       << llvm::format("%.0f", double(s.decodeCollectiveBytes) / s.decodeSteps)
       << " bytes per rank; prompt step: " << s.prefillCollectiveCalls
       << " calls, " << s.prefillCollectiveBytes << " bytes\n";
  if (!o.stepLogitsOut.empty() && !steps.empty() && !o.follower) {
    std::vector<float> flat;
    for (auto &v : steps)
      flat.insert(flat.end(), v.begin(), v.end());
    if (Error err = writeArray(o.stepLogitsOut,
                               {static_cast<int64_t>(steps.size()),
                                static_cast<int64_t>(steps[0].size())},
                               flat))
      return err;
  }
  return Error::success();
}

/// Only decoder recipes of attention layers are split over ranks
/// (docs/Distributed.md): another model under `[parallel] tensor = N` is
/// refused, not run whole on every rank.
static Error checkSplittable(const TransformerConfig &config,
                             const ModelRunOptions &o) {
  int64_t ranks = o.compile.profile.parallel.tensor;
  if (ranks <= 1)
    return Error::success();
  if (config.numExperts > 0)
    return fail(
        "tensor parallelism ([parallel] tensor = " + llvm::Twine(ranks) +
        ") does not split mixture-of-experts layers; this '" +
        config.modelType + "' model (" + llvm::Twine(config.numExperts) +
        " experts) runs in one process");
  if (!(config.modelType == "qwen3_next" || config.modelType == "qwen3_5_text"))
    return Error::success();
  return fail("tensor parallelism ([parallel] tensor = " + llvm::Twine(ranks) +
              ") splits models of attention layers (llama, qwen3, gemma, "
              "..., bert); a '" +
              config.modelType + "' model runs in one process");
}

/// --weights-as and --kv-cache set the decoder recipes' precisions; the
/// encoders (BERT, ViT, DINOv2) and Qwen3-Next's hybrid generator have none,
/// so either flag is refused for them rather than dropped. Then
/// checkSplittable.
static Error checkRecipeOptions(const TransformerConfig &config,
                                const ModelRunOptions &o) {
  bool fixed = config.modelType == "bert" || config.isVision() ||
               config.modelType == "qwen3_next" ||
               config.modelType == "qwen3_5_text";
  if (fixed && o.weightsGiven)
    return fail("--weights-as is implemented for the decoder recipes (llama, "
                "qwen3, gemma, ...); a '" +
                config.modelType + "' model keeps its weights in f32");
  if (fixed && o.kvCache)
    return fail("--kv-cache is implemented for the decoder recipes (llama, "
                "qwen3, gemma, ...); a '" +
                config.modelType + "' model keeps f32 keys and values");
  return checkSplittable(config, o);
}

/// Prints a reflection as text or JSON (with the graph's kind and length).
void rlx::printReflection(const ModelReflection &r, DescribeFormat format,
                          llvm::raw_ostream &os, llvm::StringRef graph,
                          int64_t tokens,
                          const ModelExecutionConfig *execution) {
  if (format == DescribeFormat::Json) {
    llvm::json::Value v = r.toJSON();
    if (!graph.empty()) {
      (*v.getAsObject())["graph"] = graph;
      (*v.getAsObject())["tokens"] = tokens;
    }
    if (execution)
      (*v.getAsObject())["execution"] = execution->toJSON();
    os << llvm::formatv("{0:2}", v) << "\n";
    return;
  }
  if (!graph.empty())
    os << "graph: " << graph << " (" << tokens << " tokens)\n";
  if (execution)
    os << "execution: " << execution->describe() << "\n";
  r.print(os);
}

/// `--describe`: compiles the prefill graph of a decoder or the encoder of
/// BERT and prints its reflection; nothing is loaded or run.
static Error describeModel(Session &session, const ModelRunOptions &o) {
  Expected<LoadedModel> m = loadModel(o.model);
  if (!m)
    return m.takeError();
  if (Error err = checkRecipeOptions(m->config, o))
    return err;
  int64_t t = o.prompt.empty() ? 8 : static_cast<int64_t>(o.prompt.size());
  CompileOptions c = o.compile;
  Expected<BuiltModel> built = fail("unset");
  llvm::consumeError(built.takeError());
  bool encoder = m->config.modelType == "bert" || m->config.isVision();
  std::string graph = encoder ? "encoder" : "prefill";
  if (m->config.isVision()) {
    // The config's image, one of them.
    VisionFlow recipe(m->config);
    recipe.allowUnusedWeights(o.allowUnusedWeights);
    built = recipe.build(*m->weights);
    if (!built)
      return built.takeError();
    if (Error err = setEncoderProfile(c, *built, o))
      return err;
    auto [h, w] = recipe.image();
    c.inputShapes["pixel_values"] = {1, m->config.numChannels, h, w};
    t = (h / m->config.patchSize) * (w / m->config.patchSize) + 1 +
        m->config.numRegisters;
  } else if (encoder) {
    BertFlow recipe(m->config);
    recipe.meanPooled().allowUnusedWeights(o.allowUnusedWeights);
    built = recipe.build(*m->weights);
    if (!built)
      return built.takeError();
    if (Error err = setEncoderProfile(c, *built, o))
      return err;
    for (const char *in :
         {"input_ids", "attention_mask", "position_ids", "token_type_ids"})
      c.inputShapes[in] = {1, t};
  } else {
    Expected<DecoderFlow> recipe = decoderRecipe(m->config, o);
    if (!recipe)
      return recipe.takeError();
    recipe->forPrefill();
    built = recipe->build(*m->weights);
    if (!built)
      return built.takeError();
    c.profile = built->profile;
    c.inputShapes["tokens"] = {1, t};
    c.inputShapes["positions"] = {1, t};
  }
  printWarnings(built->warnings);
  Expected<CompiledModel> model = session.compileString(built->mlir, c);
  if (!model)
    return model.takeError();
  for (const std::string &w : session.lastStats().warnings)
    llvm::errs() << "rlx-run: warning: " << w << "\n";
  ModelExecutionConfig execution = ModelExecutionConfig::of(
      *built, encoder ? ModelVariant::Encoder : ModelVariant::Prefill);
  printReflection(model->reflect(), o.describe, llvm::outs(), graph, t,
                  &execution);
  return Error::success();
}

Error rlx::runModel(Session &session, const ModelRunOptions &opts) {
  auto started = std::chrono::steady_clock::now();
  ModelRunOptions o = opts;
  if (o.describe != DescribeFormat::None) {
    if (o.promptText)
      return fail("--describe takes --prompt-ids (or nothing: 8 tokens), "
                  "not --prompt");
    return describeModel(session, o);
  }
  if (!o.image.empty()) {
    if (o.promptText || !o.prompt.empty())
      return fail("--image runs an image encoder; it takes no --prompt or "
                  "--prompt-ids");
    Expected<LoadedModel> m = loadModel(o.model);
    if (!m)
      return m.takeError();
    if (!m->config.isVision())
      return fail("--image is for image encoders (vit, dinov2, "
                  "dinov2_with_registers); " +
                  o.model + " is a '" + m->config.modelType + "' model");
    if (Error err = checkRecipeOptions(m->config, o))
      return err;
    if (!o.quiet)
      report(o) << "model: " << o.model << " (" << m->config.modelType << ", "
                << m->config.numLayers << " layers, hidden " << m->config.hidden
                << ", " << m->config.numHeads << " heads, patch "
                << m->config.patchSize << ", image " << m->config.imageSize
                << ")\n";
    return runVision(session, *m, o);
  }
  if (o.promptText && !o.prompt.empty())
    return fail("--prompt and --prompt-ids are exclusive");
  if (!o.promptText && o.prompt.empty())
    return fail("--model needs --prompt \"text\" or --prompt-ids "
                "(comma-separated token ids), or --image for an image "
                "encoder");
  if (Error err = checkSamplingOptions(o.sampling))
    return err;
  if (o.chat && !o.promptText)
    return fail("--chat needs --prompt");
  std::optional<Tokenizer> tokenizer;
  if (o.promptText) {
    Expected<Tokenizer> tok = Tokenizer::forModel(o.model);
    if (!tok)
      return tok.takeError();
    tokenizer = std::move(*tok);
    std::string text = *o.promptText;
    if (o.chat) {
      std::optional<llvm::StringRef> tmpl = tokenizer->chatTemplate();
      if (!tmpl)
        return fail("--chat: " + tokenizer->description() +
                    " has no chat template (tokenizer_config.json "
                    "chat_template or tokenizer.chat_template)");
      ChatTemplateInputs in;
      in.messages.push_back({"user", text});
      if (std::optional<int32_t> bos = tokenizer->bosId())
        in.bosToken = tokenizer->idToToken(*bos);
      if (!tokenizer->eosIds().empty())
        in.eosToken = tokenizer->idToToken(tokenizer->eosIds().front());
      Expected<std::string> rendered = renderChatTemplate(*tmpl, in);
      if (!rendered)
        return fail("--chat: " + llvm::toString(rendered.takeError()));
      text = std::move(*rendered);
    }
    // tokenizer.json's truncation applies, as tokenizers' encode does
    // (padding one sequence would only add masked-out tokens).
    Expected<std::vector<int32_t>> ids =
        tokenizer->encode(text, /*addSpecial=*/!o.chat, /*truncate=*/true);
    if (!ids)
      return fail("--prompt: " + llvm::toString(ids.takeError()));
    if (std::optional<size_t> max = tokenizer->truncationLength();
        max && ids->size() == *max) {
      Expected<std::vector<int32_t>> whole =
          tokenizer->encode(text, /*addSpecial=*/!o.chat);
      if (whole && whole->size() > *max)
        llvm::errs() << "rlx-run: note: the prompt's " << whole->size()
                     << " tokens were truncated to " << *max
                     << " (tokenizer.json truncation max_length)\n";
      else if (!whole)
        llvm::consumeError(whole.takeError());
    }
    if (ids->empty())
      return fail("--prompt: the text encodes to no tokens");
    o.prompt = std::move(*ids);
    report(o) << "prompt ids:";
    for (int32_t id : o.prompt)
      report(o) << " " << id;
    report(o) << "\n";
  }
  Expected<LoadedModel> m = loadModel(o.model);
  if (!m)
    return m.takeError();
  if (m->config.isVision())
    return fail(o.model + " is an image encoder ('" + m->config.modelType +
                "'): give --image pixels.npy instead of a prompt");
  for (auto [i, tok] : llvm::enumerate(o.prompt))
    if (tok < 0 || tok >= m->config.vocabSize)
      return fail("prompt token " + llvm::Twine(tok) + " at position " +
                  llvm::Twine(i) + " is outside the vocabulary [0, " +
                  llvm::Twine(m->config.vocabSize) + ") of " + o.model);
  if (!o.quiet)
    report(o) << "model: " << o.model << " (" << m->config.modelType << ", "
              << m->config.numLayers << " layers, hidden " << m->config.hidden
              << ", " << m->config.numHeads << "/" << m->config.numKvHeads
              << " heads, vocab " << m->config.vocabSize;
  if (!o.quiet && m->config.numExperts > 0)
    report(o) << ", " << m->config.numExperts << " experts, top "
              << m->config.expertsPerToken;
  if (!o.quiet)
    report(o) << ")\n";
  if (Error err = checkRecipeOptions(m->config, o))
    return err;
  if (m->config.modelType == "bert")
    return runEncoder(session, *m, o);
  if (m->config.modelType == "qwen3_next" ||
      m->config.modelType == "qwen3_5_text")
    return runQwen3Next(session, *m, o, tokenizer ? &*tokenizer : nullptr);
  return runDecoder(session, *m, o, started, tokenizer ? &*tokenizer : nullptr);
}
