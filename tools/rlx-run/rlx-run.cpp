//===- rlx-run.cpp - Compile and run an RLX module ------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// rlx-run compiles an .mlir file at any level (HIR, MIR, LIR) for the CPU and
// runs it on inputs from .npy files, with parameters from a safetensors file
// or .npy files; outputs are printed and optionally written as .npy. Every
// bad input is a clear error and a non-zero exit.
//
//===----------------------------------------------------------------------===//

#include "ModelRunner.h"
#include "RLX/Compiler/Session.h"
#include "RLX/Runtime/Collectives.h"
#include "RLX/Runtime/CpuExecutor.h"
#include "RLX/Support/Version.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/Npy.h"
#include "RLX/Weights/SafeTensors.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <map>
#include <optional>
#include <unistd.h>

using namespace rlx;
namespace cl = llvm::cl;

static cl::OptionCategory category("rlx-run options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<module.mlir>"),
                                      cl::cat(category));
static cl::OptionCategory modelCategory("rlx-run --model options");
static cl::opt<std::string>
    modelPath("model",
              cl::desc("Run an HF-style model directory (config.json + "
                       "safetensors) or a .gguf file instead of a module"),
              cl::cat(modelCategory));
static cl::opt<std::string>
    promptIds("prompt-ids", cl::desc("Prompt token ids, comma-separated"),
              cl::value_desc("id,id,..."), cl::cat(modelCategory));
static cl::opt<std::string> promptText(
    "prompt",
    cl::desc("Prompt text, encoded with the model's tokenizer (the "
             "directory's tokenizer.json, or the .gguf file's vocabulary); "
             "the generated text is printed to stdout as it is produced "
             "(everything else goes to stderr) and generation stops at the "
             "tokenizer's EOS tokens (tokenizer_config.json, "
             "generation_config.json, tokenizer.ggml.eos_token_id)"),
    cl::cat(modelCategory));
static cl::opt<std::string> imagePath(
    "image",
    cl::desc("Image encoders (vit, dinov2): the pixels as an .npy of f32, "
             "[batch, channels, height, width] or [channels, height, width], "
             "already normalized as the model's image processor does; the "
             "model is compiled for that size (position embeddings resized "
             "when it is not the config's image_size)"),
    cl::value_desc("pixels.npy"), cl::cat(modelCategory));
static cl::opt<bool> chatMode(
    "chat",
    cl::desc("With --prompt: the text is one user message, wrapped in the "
             "model's chat template (tokenizer_config.json chat_template or "
             "GGUF tokenizer.chat_template) with the generation prompt"),
    cl::cat(modelCategory));
static cl::opt<bool>
    ignoreEos("ignore-eos",
              cl::desc("With --prompt: generate --max-new-tokens tokens "
                       "whatever the model produces"),
              cl::cat(modelCategory));
static cl::opt<unsigned> maxNewTokens("max-new-tokens",
                                      cl::desc("Tokens to generate"),
                                      cl::init(16), cl::cat(modelCategory));
static cl::opt<int64_t> maxContext(
    "max-context",
    cl::desc("KV-cache size in tokens (default: the model's max positions, "
             "capped so that the cache fits the memory budget, or half the "
             "physical memory when no budget is given; the cache grows as "
             "it fills)"),
    cl::init(0), cl::cat(modelCategory));
static cl::opt<float> temperature("temperature",
                                  cl::desc("Sampling temperature (0: greedy)"),
                                  cl::init(0.0f), cl::cat(modelCategory));
static cl::opt<int> topK("top-k", cl::desc("Sample among the k most likely"),
                         cl::init(0), cl::cat(modelCategory));
static cl::opt<float> topP("top-p", cl::desc("Nucleus sampling threshold"),
                           cl::init(1.0f), cl::cat(modelCategory));
static cl::opt<uint64_t> seed("seed", cl::desc("Sampling seed"), cl::init(0),
                              cl::cat(modelCategory));
static cl::opt<WeightPrecision> weightsAs(
    "weights-as",
    cl::desc("Precision of the weight matrices in the kernels (the "
             "profile's [precision] weights; default: the --profile "
             "file's when it sets it, a --preset's, else stored):"),
    cl::init(WeightPrecision::Stored),
    cl::values(clEnumValN(WeightPrecision::F32, "f32",
                          "widen every weight to f32 at load"),
               clEnumValN(WeightPrecision::Stored, "stored",
                          "keep matrices as the file stores them (f16, bf16, "
                          "ggml blocks) down to the kernels: a q4_0 file "
                          "stays q4_0 in memory"),
               clEnumValN(WeightPrecision::BF16, "bf16",
                          "convert matrices to bf16 at load"),
               clEnumValN(WeightPrecision::F16, "f16",
                          "convert matrices to f16 at load"),
               clEnumValN(WeightPrecision::Q8_0, "q8_0",
                          "quantize matrices to q8_0 at load"),
               clEnumValN(WeightPrecision::Q4_0, "q4_0",
                          "quantize matrices to q4_0 at load")),
    cl::cat(modelCategory));
static cl::opt<ComputePrecision> kvCacheAs(
    "kv-cache",
    cl::desc("Element type of the KV cache (the profile's [precision] "
             "kv_cache); attention computes in f32:"),
    cl::init(ComputePrecision::F32),
    cl::values(clEnumValN(ComputePrecision::F32, "f32", "f32 (default)"),
               clEnumValN(ComputePrecision::F16, "f16", "f16"),
               clEnumValN(ComputePrecision::BF16, "bf16", "bf16")),
    cl::cat(modelCategory));
static cl::opt<ComputePrecision> computeAs(
    "compute",
    cl::desc("Element type of the activations between ops, for a model or a "
             "module (the profile's [precision] compute); the kernels "
             "compute in f32:"),
    cl::init(ComputePrecision::F32),
    cl::values(clEnumValN(ComputePrecision::F32, "f32", "f32 (default)"),
               clEnumValN(ComputePrecision::F16, "f16",
                          "rounded to f16 between ops"),
               clEnumValN(ComputePrecision::BF16, "bf16",
                          "rounded to bf16 between ops")),
    cl::cat(category));
static cl::opt<std::string>
    logitsOut("logits-out",
              cl::desc("Write the prompt's logits (all positions) as .npy"),
              cl::cat(modelCategory));
static cl::opt<std::string>
    stepLogitsOut("step-logits-out",
                  cl::desc("Write the logits each new token was sampled "
                           "from as .npy [steps, vocab]"),
                  cl::cat(modelCategory));
static cl::list<std::string>
    inputs("input",
           cl::desc("An input: name=file.npy (repeatable); its shape "
                    "specializes dynamic dims"),
           cl::cat(category));
static cl::list<std::string>
    paramFiles("param", cl::desc("A parameter: name=file.npy (repeatable)"),
               cl::cat(category));
static cl::opt<std::string>
    weights("params",
            cl::desc("Load every parameter from a safetensors file, an HF "
                     "model directory or a .gguf file (tensor names as "
                     "stored)"),
            cl::cat(category));
static cl::opt<std::string>
    outputDir("output-dir", cl::desc("Write each output as <name>.npy"),
              cl::cat(category));
static cl::opt<std::string> dumpIR("dump-ir",
                                   cl::desc("Write every stage's IR to a dir"),
                                   cl::cat(category));
static cl::opt<std::string>
    profilePath("profile",
                cl::desc("Compile profile (*.rlx.toml); with --model, the keys "
                         "it does not set keep each graph's own (the prompt "
                         "and decode presets, an encoder recipe's)"),
                cl::cat(category));
static cl::opt<std::string>
    presetName("preset", cl::desc("Compile profile preset (e.g. encoder)"),
               cl::cat(category));
static cl::opt<std::string>
    policy("policy", cl::desc("Override the fusion policy: direct | fusable"),
           cl::cat(category));
static cl::opt<std::string> entry("entry",
                                  cl::desc("Function to compile (default: the "
                                           "only public one)"),
                                  cl::cat(category));
static cl::opt<unsigned> repeat("repeat",
                                cl::desc("Run N times and report the median"),
                                cl::init(1), cl::cat(category));
static cl::opt<std::string>
    aot("aot",
        cl::desc("Compile to <prefix>.so + <prefix>.json, then load that "
                 "library (no MLIR) and run it"),
        cl::cat(category));
static cl::opt<bool> allowUnusedWeights(
    "allow-unused-weights",
    cl::desc("--model: load a checkpoint with tensors the recipe does not "
             "read (a warning names them; without this flag they are an "
             "error, since they usually mean the config does not match)"),
    cl::init(false), cl::cat(modelCategory));
static cl::opt<std::string> describe(
    "describe", cl::ValueOptional,
    cl::desc("Compile, then print what the compiled model takes and gives "
             "(dtypes, shapes, symbolic dims of the source), its weight "
             "blocks, arena, kernels and profile, and exit without running: "
             "--describe for people, --describe=json for tools. With "
             "--model: the prefill (or BERT encoder) graph for the "
             "--prompt-ids length, else 8 tokens"),
    cl::value_desc("text|json"), cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Print outputs only"),
                           cl::cat(category));
static cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("The compile cache: a CPU compile of the same module, shapes "
             "and profile on the same CPU by the same RLX build loads its "
             "code from here instead of compiling (default: $RLX_CACHE_DIR, "
             "else $XDG_CACHE_HOME/rlx, else ~/.cache/rlx; "
             "$RLX_CACHE_MAX_MB caps its size, 2048 by default)"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<bool>
    noCache("no-cache",
            cl::desc("Compile everything anew and store nothing (also "
                     "RLX_NO_CACHE=1)"),
            cl::cat(category));
static cl::opt<bool> precompile(
    "precompile",
    cl::desc("--model: compile the graphs a run with these options would use "
             "(the prompt graph and the decode buckets for --max-new-tokens, "
             "or the encoder) into the compile cache and exit, without "
             "loading weights"),
    cl::cat(modelCategory));
static cl::opt<int64_t> memoryBudgetMB(
    "memory-budget-mb",
    cl::desc("Refuse a model whose arena and parameters (or a KV cache) "
             "exceed this many MiB; 0: no limit (default: "
             "$RLX_MEMORY_BUDGET_MB, else the physical memory)"),
    cl::init(-1), cl::cat(category));
static cl::opt<int64_t> tensorParallel(
    "tensor-parallel",
    cl::desc("Split the model over N processes (the profile's [parallel] "
             "tensor): run as `mpirun -np N rlx-run ... --tensor-parallel N`. "
             "Each rank compiles and runs its share of every layer, of the "
             "embedding and of the LM head; rank 0 prints and writes the "
             "results (docs/Distributed.md)"),
    cl::init(0), cl::cat(category));
static cl::opt<Device> device(
    "device", cl::desc("Where to run:"), cl::init(Device::Cpu),
    cl::values(clEnumValN(Device::Cpu, "cpu", "the host CPU (default)"),
               clEnumValN(Device::Vulkan, "vulkan",
                          "a Vulkan device (RLX_VULKAN_DEVICE picks one)")),
    cl::cat(category));

static int fail(llvm::Error err) {
  llvm::WithColor::error(llvm::errs(), "rlx-run")
      << llvm::toString(std::move(err)) << "\n";
  return 1;
}

static int fail(const llvm::Twine &msg) {
  return fail(llvm::createStringError(llvm::inconvertibleErrorCode(), msg));
}

/// The .npy file each input came from, to name it in messages.
static std::map<std::string, std::string> inputFiles;

/// Prefixes an error about input 'NAME' with the file NAME came from, and
/// any other error that names no file with `module` (when given).
static llvm::Error nameInputFile(llvm::Error err, llvm::StringRef module = "") {
  std::string message = llvm::toString(std::move(err));
  for (const auto &[name, path] : inputFiles) {
    std::string quoted = "input '" + name + "'";
    llvm::StringRef m(message);
    if (m.starts_with(quoted) || m.starts_with("unknown " + quoted))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     path + ": " + message);
  }
  if (!module.empty() && !llvm::StringRef(message).starts_with(module))
    message = module.str() + ": " + message;
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static llvm::Expected<std::pair<std::string, std::string>>
splitAssignment(llvm::StringRef flag, llvm::StringRef arg) {
  auto [name, path] = arg.split('=');
  if (name.empty() || path.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--" + flag + " expects name=file.npy, got '" + arg + "'");
  return std::make_pair(name.str(), path.str());
}

/// Refuses a name given twice to --input or --param: the last file would
/// silently win, and a later error would name only one of them.
static llvm::Error
checkGivenOnce(llvm::StringRef flag, llvm::StringRef kind,
               std::map<std::string, std::string> &files,
               const std::pair<std::string, std::string> &kv) {
  auto [it, inserted] = files.emplace(kv.first, kv.second);
  if (inserted)
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 kind + " '" + kv.first +
                                     "' is given twice: --" + flag + " " +
                                     kv.first + "=" + it->second + " and --" +
                                     flag + " " + kv.first + "=" + kv.second);
}

/// The flags whose value LLVM would report only as "requires a value!".
static std::optional<std::string> missingValue(int argc, char **argv) {
  if (argc < 2)
    return std::nullopt;
  llvm::StringRef last = llvm::StringRef(argv[argc - 1]).ltrim('-');
  if (last == "prompt-ids")
    return std::string("--prompt-ids needs the prompt's token ids, "
                       "comma-separated (e.g. --prompt-ids 1,15043,3186)");
  if (last == "prompt")
    return std::string("--prompt needs the prompt text (e.g. --prompt "
                       "\"Once upon a time\")");
  return std::nullopt;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions({&category, &modelCategory});
  rlx::setRLXVersionPrinter();
  if (std::optional<std::string> message = missingValue(argc, argv))
    return fail(*message);
  cl::ParseCommandLineOptions(
      argc, argv,
      "rlx-run: compile an RLX module (HIR, MIR or LIR) for the CPU and run "
      "it, or run a model\n\n  rlx-run model.mlir --input tokens=ids.npy "
      "--params weights.safetensors --output-dir out/\n"
      "  rlx-run --model DIR|file.gguf --prompt \"Once upon a time\" "
      "--max-new-tokens 32\n"
      "  rlx-run --model DIR|file.gguf --prompt-ids 1,15043,3186\n");
  // The environment is read here, by the tool, never by the libraries.
  if (const char *isa = std::getenv("RLX_UK_ISA"))
    if (llvm::Error err = selectMicroKernelISA(isa))
      return fail("RLX_UK_ISA: " + llvm::toString(std::move(err)));

  DescribeFormat describeAs = DescribeFormat::None;
  if (describe.getNumOccurrences()) {
    if (describe.empty() || describe == "text")
      describeAs = DescribeFormat::Text;
    else if (describe == "json")
      describeAs = DescribeFormat::Json;
    else
      return fail("--describe takes text or json, got '" + describe + "'");
    if (!aot.empty())
      return fail("--describe and --aot are exclusive");
  }

  CompileOptions options;
  // Long compiles (thousands of kernels) show their slow phases as they
  // end.
  if (!quiet)
    options.onPhase = [](llvm::StringRef phase, double seconds) {
      if (seconds > 1.0)
        llvm::errs() << "rlx-run: compiling: " << phase << " took "
                     << llvm::format("%.1f", seconds) << " s\n";
    };
  if (!profilePath.empty() && !presetName.empty())
    return fail("--profile and --preset are exclusive");
  if (!profilePath.empty()) {
    auto profile = CompileProfile::fromTomlFile(profilePath);
    if (!profile)
      return fail(profile.takeError());
    options.profile = *profile;
  } else if (!presetName.empty()) {
    llvm::Expected<CompileProfile> profile =
        CompileProfile::presetOrError(presetName);
    if (!profile)
      return fail(profile.takeError());
    options.profile = *profile;
  }
  if (!policy.empty()) {
    auto p = symbolizeFusionPolicy(policy);
    if (!p)
      return fail("--policy must be direct or fusable, got '" + policy + "'");
    options.profile.fusion.policy = *p;
  }
  options.dumpDir = dumpIR;
  std::string dumpFrom = "--dump-ir";
  if (options.dumpDir.empty())
    if (const char *env = std::getenv("RLX_IR_DUMP")) {
      options.dumpDir = env;
      dumpFrom = "RLX_IR_DUMP";
    }
  // A directory, made when missing: a file there is refused before anything
  // compiles.
  if (!options.dumpDir.empty() && llvm::sys::fs::exists(options.dumpDir) &&
      !llvm::sys::fs::is_directory(options.dumpDir))
    return fail(dumpFrom +
                " expects a directory (one .mlir file per stage), "
                "but '" +
                options.dumpDir + "' is a file");
  options.entry = entry;
  if (noCache && cacheDir.getNumOccurrences())
    return fail("--cache-dir and --no-cache are exclusive");
  if (!noCache)
    options.cacheDir = cacheDir.getNumOccurrences() ? std::string(cacheDir)
                                                    : defaultCompileCacheDir();
  if (precompile && modelPath.empty())
    return fail("--precompile compiles a --model's graphs; give --model");
  if (precompile && options.cacheDir.empty())
    return fail("--precompile fills the compile cache, which is off "
                "(--no-cache, RLX_NO_CACHE or no $HOME): give --cache-dir");
  if (memoryBudgetMB >= 0)
    options.memoryBudgetMB = memoryBudgetMB;
  if (tensorParallel.getNumOccurrences()) {
    if (tensorParallel < 1)
      return fail("--tensor-parallel must be at least 1, got " +
                  llvm::Twine(tensorParallel));
    options.profile.parallel.tensor = tensorParallel;
  }
  // A tensor-parallel run needs its ranks: refused before anything compiles
  // rather than waiting in a collective.
  bool follower = false;
  if (int64_t ranks = options.profile.parallel.tensor; ranks > 1) {
    std::string from =
        tensorParallel.getNumOccurrences()
            ? "--tensor-parallel " + std::to_string(ranks)
            : "[parallel] tensor = " + std::to_string(ranks) + " (the profile)";
    if (device == Device::Vulkan || !aot.empty())
      return fail(from + ": tensor-parallel models run on the CPU, JIT "
                         "(not --device vulkan or --aot)");
    if (collectiveSize() != ranks)
      return fail(from + " needs " + llvm::Twine(ranks) +
                  " MPI processes, but this one runs in a world of " +
                  llvm::Twine(collectiveSize()) + ": start it as mpirun -np " +
                  llvm::Twine(ranks) + " rlx-run ..." +
                  (hasMPI() ? "" : " (and this RLX was built without MPI)"));
    // Every rank computes the same results: rank 0 reports them.
    follower = collectiveRank() != 0;
    if (follower) {
      llvm::outs().flush();
      int null = ::open("/dev/null", O_WRONLY);
      if (null >= 0) {
        ::dup2(null, STDOUT_FILENO);
        ::close(null);
      }
    }
  }

  TensorMap_t feeds;
  for (const std::string &arg : inputs) {
    auto kv = splitAssignment("input", arg);
    if (!kv)
      return fail(kv.takeError());
    if (llvm::Error err = checkGivenOnce("input", "input", inputFiles, *kv))
      return fail(std::move(err));
    auto t = readTensorNpy(kv->second);
    if (!t)
      return fail(t.takeError());
    options.inputShapes[kv->first] =
        llvm::SmallVector<int64_t, 4>(t->shape().begin(), t->shape().end());
    feeds.emplace(kv->first, std::move(*t));
  }

  // The profile's [execution] device, unless --device says otherwise.
  Device target = device;
  if (!device.getNumOccurrences() &&
      options.profile.execution.device == ExecutionDevice::Vulkan)
    target = Device::Vulkan;
  Session session(target);
  if (!modelPath.empty()) {
    ModelRunOptions m;
    m.model = modelPath;
    if (promptText.getNumOccurrences())
      m.promptText = promptText.getValue();
    if (promptText.getNumOccurrences() && promptIds.getNumOccurrences())
      return fail("--prompt and --prompt-ids are exclusive");
    m.ignoreEos = ignoreEos;
    m.chat = chatMode;
    if (promptIds.getNumOccurrences() &&
        llvm::StringRef(promptIds).trim().empty())
      return fail("--prompt-ids is empty: give the prompt's token ids, "
                  "comma-separated (e.g. --prompt-ids 1,15043,3186)");
    unsigned position = 0;
    for (llvm::StringRef part : llvm::split(llvm::StringRef(promptIds), ',')) {
      if (!promptIds.getNumOccurrences())
        break;
      ++position;
      if (part.trim().empty())
        return fail("--prompt-ids: token id " + llvm::Twine(position) +
                    " of '" + promptIds + "' is empty");
      int32_t id;
      if (part.trim().getAsInteger(10, id))
        return fail("--prompt-ids: '" + part + "' is not a token id");
      m.prompt.push_back(id);
    }
    m.maxNewTokens = maxNewTokens;
    m.maxContext = maxContext;
    m.sampling.temperature = temperature;
    m.sampling.topK = topK;
    m.sampling.topP = topP;
    m.sampling.seed = seed;
    // Bad sampling options fail before anything is loaded.
    if (llvm::Error err = checkSamplingOptions(m.sampling))
      return fail(std::move(err));
    m.logitsOut = logitsOut;
    m.stepLogitsOut = stepLogitsOut;
    m.outputDir = outputDir;
    m.image = imagePath;
    m.quiet = quiet;
    m.allowUnusedWeights = allowUnusedWeights;
    m.profileFile = profilePath;
    m.presetGiven = !presetName.empty();
    if (!policy.empty())
      m.policy = options.profile.fusion.policy;
    // Without a profile a model runs in the precision its file stores (a
    // quantized GGUF is not widened to f32); a profile's [precision] weights
    // decides otherwise, and --weights-as over both.
    if (weightsAs.getNumOccurrences() ||
        (profilePath.empty() && presetName.empty()))
      m.weights = weightsAs;
    m.weightsGiven = weightsAs.getNumOccurrences() > 0;
    if (kvCacheAs.getNumOccurrences())
      m.kvCache = kvCacheAs;
    if (computeAs.getNumOccurrences())
      m.compute = computeAs;
    m.compile = options;
    m.describe = describeAs;
    m.precompile = precompile;
    m.follower = follower;
    if (llvm::Error err = runModel(session, m)) {
      // Every message names the model (a directory or a .gguf file).
      std::string message = llvm::toString(std::move(err));
      if (!llvm::StringRef(message).contains(modelPath.getValue()))
        message = modelPath + ": " + message;
      return fail(message);
    }
    return 0;
  }
  if (inputFile.empty())
    return fail("give a module (.mlir) or --model DIR");
  // The --model options drive a model's generation: given with a module,
  // which compiles and runs as it is, one is refused rather than dropped.
  for (const auto &entry : cl::getRegisteredOptions())
    if (entry.second->getNumOccurrences() &&
        llvm::is_contained(entry.second->Categories, &modelCategory))
      return fail(inputFile + ": --" + entry.first.str() +
                  " applies to --model runs (a model directory or .gguf); "
                  "a module compiles and runs as it is");
  if (computeAs.getNumOccurrences())
    options.profile.precision.compute = computeAs;
  // [precision] weights / kv_cache and [execution] decode_buckets set what a
  // model recipe stores and compiles.
  if (llvm::Error err = options.profile.checkForModule(inputFile))
    return fail(std::move(err));
  // Every file is read and checked before compiling, so that a bad one
  // fails fast and nothing is compiled, loaded or written.
  std::unique_ptr<WeightSource> source;
  if (!weights.empty()) {
    // A GGUF file gives its tensors under their own names (blk.0.attn_q...).
    auto opened = llvm::sys::fs::is_directory(weights)
                      ? SafeTensorsFile::openModelDir(weights)
                  : llvm::StringRef(weights).ends_with(".gguf")
                      ? llvm::Expected<std::unique_ptr<WeightSource>>(
                            GGUFFile::open(weights))
                      : llvm::Expected<std::unique_ptr<WeightSource>>(
                            SafeTensorsFile::open(weights));
    if (!opened)
      return fail(opened.takeError());
    source = std::move(*opened);
  }
  std::vector<std::pair<std::string, Tensor>> paramTensors;
  std::map<std::string, std::string> paramPaths;
  for (const std::string &arg : paramFiles) {
    auto kv = splitAssignment("param", arg);
    if (!kv)
      return fail(kv.takeError());
    if (llvm::Error err = checkGivenOnce("param", "param", paramPaths, *kv))
      return fail(std::move(err));
    auto t = readTensorNpy(kv->second);
    if (!t)
      return fail(t.takeError());
    paramTensors.emplace_back(kv->first, std::move(*t));
  }
  llvm::Expected<CompiledModel> compiled =
      llvm::createStringError(llvm::inconvertibleErrorCode(), "unset");
  llvm::consumeError(compiled.takeError());
  if (aot.empty()) {
    compiled = session.compileFile(inputFile, options);
  } else {
    if (llvm::Error err = session.compileFileToLibrary(inputFile, aot, options))
      return fail(nameInputFile(std::move(err), inputFile));
    compiled = CompiledModel::loadLibrary(aot + ".so", aot + ".json",
                                          options.memoryBudgetMB);
  }
  if (!compiled) {
    std::string message = llvm::toString(compiled.takeError());
    if (describeAs != DescribeFormat::None &&
        llvm::StringRef(message).contains("give its concrete shape"))
      message += " (--describe compiles the module: give --input "
                 "NAME=file.npy for each input with dynamic dims)";
    return fail(nameInputFile(
        llvm::createStringError(llvm::inconvertibleErrorCode(), message),
        inputFile));
  }
  const CompileStats &stats = session.lastStats();
  // --describe: the reflection alone on stdout; nothing is loaded or run.
  if (describeAs != DescribeFormat::None) {
    for (const std::string &w : stats.warnings)
      llvm::errs() << "rlx-run: warning: " << w << "\n";
    printReflection(compiled->reflect(), describeAs, llvm::outs());
    return 0;
  }
  if (!quiet)
    llvm::outs() << (stats.cached ? "loaded " : "compiled ") << inputFile
                 << (stats.cached ? " from the compile cache" : "") << " in "
                 << llvm::format("%.3f", stats.compileSeconds)
                 << " s: " << stats.kernels << " kernels ("
                 << stats.kernelFunctions << " functions), arena "
                 << stats.arenaBytes << " bytes (naive " << stats.naiveBytes
                 << "), params " << stats.paramBytes
                 << " bytes; fused ops: " << stats.fusedOps << "\n"
                 << "device: " << compiled->deviceName() << "\n";
  for (const std::string &w : stats.warnings)
    llvm::errs() << "rlx-run: warning: " << w << "\n";
  if (!quiet && !stats.phaseSeconds.empty())
    llvm::outs() << "compile phases: " << stats.phaseSummary() << "\n";
  if (!quiet && !stats.fusionReport.empty())
    llvm::outs() << stats.fusionReport << "\n";

  if (source)
    if (llvm::Error err = compiled->loadParams(*source))
      return fail(std::move(err));
  for (const auto &[name, t] : paramTensors)
    if (llvm::Error err = compiled->setParam(name, t))
      return fail(std::move(err));

  std::vector<double> times;
  TensorMap_t outputs;
  CollectiveStats before = collectiveStats();
  for (unsigned i = 0; i < std::max(1u, unsigned(repeat)); ++i) {
    auto start = std::chrono::steady_clock::now();
    auto result = compiled->run(feeds);
    if (!result)
      return fail(nameInputFile(result.takeError()));
    times.push_back(std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count());
    outputs = std::move(*result);
  }
  llvm::sort(times);
  if (!quiet)
    llvm::outs() << "ran in " << llvm::format("%.3f", times[times.size() / 2])
                 << " ms" << (times.size() > 1 ? " (median)" : "") << "\n";
  // A program split over ranks: what its collectives moved per run.
  if (CollectiveStats after = collectiveStats();
      !quiet && after.calls > before.calls) {
    unsigned runs = std::max(1u, unsigned(repeat));
    llvm::outs() << "collectives per run: "
                 << (after.calls - before.calls) / runs << " calls, "
                 << (after.bytes - before.bytes) / runs << " bytes per rank\n";
  }
  for (auto &[name, t] : outputs) {
    llvm::outs() << name << ": " << t.summary() << "\n";
    if (outputDir.empty() || follower)
      continue;
    llvm::sys::fs::create_directories(outputDir);
    llvm::SmallString<128> path(outputDir.getValue());
    llvm::sys::path::append(path, name + ".npy");
    llvm::Error err = writeTensorNpy(path, t);
    if (err)
      return fail(std::move(err));
  }
  return 0;
}
