//===- Session.h - Compile RLX modules into runnable models ------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The compiler's front door: a Session owns an MLIR context and turns a
// module at any level (HIR, MIR, LIR) into a CompiledModel, following a
// CompileProfile: specialize the shapes, lower HIR to MIR and fuse, plan the
// arena (LIR), generate code (LLVM) and JIT it, or write it as a shared
// library plus manifest (AOT). Failures are llvm::Errors carrying the
// compiler's diagnostics.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_COMPILER_SESSION_H
#define RLX_COMPILER_SESSION_H

#include "RLX/Profile/CompileProfile.h"
#include "RLX/Runtime/CompiledModel.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
class MLIRContext;
class ModuleOp;
} // namespace mlir

namespace rlx {

struct BuiltModel;

enum class Device { Cpu, Vulkan };

struct CompileOptions {
  CompileProfile profile = CompileProfile::llama32Prefill();
  /// Concrete shapes for inputs declared with dynamic dims, by input name
  /// (the `rlx.name` argument attribute, else `inputN`).
  std::map<std::string, llvm::SmallVector<int64_t, 4>> inputShapes;
  /// Refuse an inputShapes name the entry does not take, naming it and the
  /// inputs (the Python module sets it; the model runners pass the shapes
  /// of every graph's inputs and leave it off).
  bool rejectUnknownInputShapes = false;
  /// Directory for every stage's IR (empty: none; the tools read
  /// $RLX_IR_DUMP).
  std::string dumpDir;
  /// The function to compile; empty: the module's only public function.
  std::string entry;
  /// The most memory the compiled model's arena and parameters may take, in
  /// MiB (0: no limit); unset: $RLX_MEMORY_BUDGET_MB, else the physical
  /// memory (RLX/Runtime/MemoryBudget.h). Generator applies it to the KV
  /// cache too.
  std::optional<uint64_t> memoryBudgetMB;
  /// Called as each compile phase (CompileStats::phaseSeconds) completes,
  /// with its name and seconds: progress for long compiles.
  std::function<void(llvm::StringRef phase, double seconds)> onPhase;
  /// The persistent compile cache's directory (empty: none; the tools use
  /// defaultCompileCacheDir()). A compile whose module, profile, entry and
  /// input shapes, device (host CPU, or Vulkan device) and RLX build match
  /// an entry loads its code (CPU object code; SPIR-V kernels and dispatch
  /// schedule) instead of compiling; a new one is stored. Damaged entries are
  /// removed and compiled again with a warning. IR dumps (dumpDir) bypass it.
  std::string cacheDir;
  /// The most bytes the cache keeps (least recently used entries are
  /// evicted beyond); 0: 2 GiB, or $RLX_CACHE_MAX_MB.
  uint64_t cacheMaxBytes = 0;
  /// Compiling ahead of time into the cache (rlx-run --precompile): a
  /// profile's `[execution] mode = "aot"` does not refuse a cache miss.
  bool precompile = false;
  /// The rank this process compiles for when the profile's `[parallel]
  /// tensor` is above 1, in [0, tensor): its share of each layer, embedding
  /// and LM head (docs/Distributed.md). Unset: the process's MPI rank
  /// (collectiveRank(), RLX/Runtime/Collectives.h; 0 outside mpirun).
  std::optional<int64_t> tensorParallelRank;
  /// Under `[parallel] tensor` above 1: the LM head's output ("logits")
  /// stays the rank's slice of the vocabulary, `[..., V / tensor]` starting
  /// at row `rank * V / tensor`, instead of being all-gathered, for a
  /// caller that reduces the logits across ranks itself (the Generator's
  /// greedy and top-k sampling: rlx::argmaxAcrossRanks, topKAcrossRanks).
  /// Part of the compile cache's key.
  bool tensorParallelLocalLogits = false;
  /// Where the stored bytes of weights start within a page of the file
  /// they will be loaded from (file offset modulo paramPageSize), by param
  /// name. On the CPU the compile places those params at the same phase in
  /// the parameter pool (`rlx.param_pages`, convert-mir-to-lir), so that
  /// CompiledModel::loadParams maps their whole pages from the file
  /// instead of copying them. Ignored by Vulkan compiles (the pool is
  /// uploaded to the device). Part of the compile cache's key.
  std::map<std::string, int64_t> paramPagePhases;
  /// The page size paramPagePhases are taken modulo (the host's).
  int64_t paramPageSize = 4096;
  /// Said in CompileStats::notes of the compile (what a caller decided on
  /// the way, e.g. which profile fields the options overrode).
  std::vector<std::string> notes;
};

/// The compile cache's default directory: $RLX_CACHE_DIR, else
/// $XDG_CACHE_HOME/rlx, else $HOME/.cache/rlx; empty (no cache) when none is
/// set or RLX_NO_CACHE is set (to anything but "", 0, false, off or no).
std::string defaultCompileCacheDir();

/// What the last compile did.
struct CompileStats {
  double compileSeconds = 0;
  /// Where compileSeconds went, in order: "specialize", "hir-to-mir",
  /// "fusion", "mir-to-lir", then on the CPU "lir-decisions", "lir-to-llvm"
  /// and "jit" (or
  /// "llvm-codegen" for AOT libraries), on Vulkan "lir-to-spirv",
  /// "spirv-validate-opt" (spirv-tools validation and, under
  /// `[backend.spirv] optimize`, spirv-opt; "spirv-validate" without) and
  /// "vulkan-pipelines" (shader modules, pipelines, the command buffer).
  std::vector<std::pair<std::string, double>> phaseSeconds;
  uint64_t arenaBytes = 0, naiveBytes = 0, peakLiveBytes = 0, paramBytes = 0;
  /// Fused-op histogram of the MIR that was planned ("attention: 2, ...").
  std::string fusedOps;
  /// The fusion report's remarks (missed fusions, before/after histograms).
  std::string fusionReport;
  unsigned kernels = 0, kernelFunctions = 0;
  /// CompileOptions::onPhase of the compile, called by each phase's end.
  std::function<void(llvm::StringRef phase, double seconds)> onPhase;
  /// Things the compile could not honour but went on without (profile hints
  /// this back end does not implement), one sentence each.
  std::vector<std::string> warnings;
  /// The compile was loaded from the compile cache (phaseSeconds holds one
  /// "cached" phase); cacheEntry names the entry file read or written.
  bool cached = false;
  std::string cacheEntry;
  /// CompileOptions::notes.
  std::vector<std::string> notes;

  /// "specialize 0.001 s, hir-to-mir 0.012 s, ..." from phaseSeconds.
  std::string phaseSummary() const;
};

class Session;

/// An input of a Template: its name, element type and shape, -1 for a
/// dynamic dim.
struct TemplateInput {
  std::string name;
  DType dtype = DType::F32;
  llvm::SmallVector<int64_t, 4> shape;
};

/// Step 2 of the three-step compile: a model with concrete shapes and its
/// arena plan (the manifest), not yet code. compile() generates the code
/// (or loads it from the compile cache). Lives no longer than its Session.
class Specialized {
public:
  Specialized(Specialized &&) noexcept;
  Specialized &operator=(Specialized &&) noexcept;
  ~Specialized();

  /// Inputs, outputs and parameters with their arena / pool offsets, the
  /// arena and parameter pool sizes.
  const Manifest &manifest() const;
  /// What specializing did (phases so far, arena, fused ops, warnings).
  const CompileStats &stats() const;
  /// The compile cache holds this model's code: compile() loads it.
  bool cached() const;
  /// Step 3: generates the code and loads it (CompileOptions::cacheDir:
  /// stores it; a cached model loads its stored code). Once only.
  llvm::Expected<CompiledModel> compile();

  struct State;

private:
  friend class Session;
  explicit Specialized(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

/// Step 1 of the three-step compile: the model lowered to MIR and fused
/// with its inputs' dynamic dims left symbolic (ordinary IR with `?` dims,
/// what `rlx-opt --rlx-compile-pipeline` prints), verified. Specialize it
/// once per shape; fusions that need concrete shapes happen then. Lives no
/// longer than its Session.
class Template {
public:
  Template(Template &&) noexcept;
  Template &operator=(Template &&) noexcept;
  ~Template();

  /// The entry's inputs, with -1 for each dynamic dim.
  const std::vector<TemplateInput> &inputs() const;
  /// The template IR (MLIR text, fused MIR).
  std::string ir() const;
  /// What fusion did and missed (the fusion report's remarks).
  const std::string &fusionReport() const;
  /// Step 2: binds the inputs' dynamic dims to `shapes` (by input name;
  /// every dynamic input needs one, and an unknown name is refused) and
  /// plans the arena.
  llvm::Expected<Specialized> specialize(
      const std::map<std::string, llvm::SmallVector<int64_t, 4>> &shapes) const;
  /// Writes ir() to `path` (Session::loadTemplate reads it back).
  llvm::Error save(llvm::StringRef path) const;

  struct State;

private:
  friend class Session;
  explicit Template(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

class Session {
public:
  explicit Session(Device device = Device::Cpu);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// Compiles `module` (not modified) and JITs it.
  llvm::Expected<CompiledModel> compile(mlir::ModuleOp module,
                                        const CompileOptions &options = {});
  /// Compiles a flow built by ModelFlow::build (or a recipe) with the
  /// flow's own profile: each profile field `options.profile` sets away
  /// from its default overrides the flow's (CompileStats::notes names
  /// them); the model reads the flow's synthesized parameters itself
  /// (CompiledModel::setSynthesizedParams), so loadParams takes the
  /// checkpoint alone. Defined in RLXFlow (link it to call this).
  llvm::Expected<CompiledModel> compile(const BuiltModel &built,
                                        const CompileOptions &options = {});
  /// Parses and compiles an `.mlir` file.
  llvm::Expected<CompiledModel> compileFile(llvm::StringRef path,
                                            const CompileOptions &options = {});
  /// Parses and compiles MLIR text.
  llvm::Expected<CompiledModel>
  compileString(llvm::StringRef text, const CompileOptions &options = {});

  /// Step 1 of the three-step compile (see Template): HIR or MIR with
  /// dynamic dims -> a verified, fused template. `options` (profile, entry,
  /// cache, budget) carry over to its specializations; their inputShapes
  /// are ignored.
  llvm::Expected<Template> buildTemplate(mlir::ModuleOp module,
                                         const CompileOptions &options = {});
  /// buildTemplate from MLIR text.
  llvm::Expected<Template>
  buildTemplateFromString(llvm::StringRef text,
                          const CompileOptions &options = {});
  /// Reads a template written by Template::save (or any HIR/MIR file).
  llvm::Expected<Template> loadTemplate(llvm::StringRef path,
                                        const CompileOptions &options = {});
  /// Steps 1 and 2 in one: `module` with options.inputShapes, specialized
  /// and planned (compile() is this, then Specialized::compile()).
  llvm::Expected<Specialized> specialize(mlir::ModuleOp module,
                                         const CompileOptions &options = {});

  /// AOT: compiles `module` to `<prefix>.so` (a shared library linked with
  /// OpenBLAS) and `<prefix>.json` (its manifest), for
  /// CompiledModel::loadLibrary.
  llvm::Error compileToLibrary(mlir::ModuleOp module, llvm::StringRef prefix,
                               const CompileOptions &options = {});

  /// AOT from an `.mlir` file.
  llvm::Error compileFileToLibrary(llvm::StringRef path, llvm::StringRef prefix,
                                   const CompileOptions &options = {});

  mlir::MLIRContext &context();
  const CompileStats &lastStats() const;
  Device device() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl;
};

} // namespace rlx

#endif // RLX_COMPILER_SESSION_H
