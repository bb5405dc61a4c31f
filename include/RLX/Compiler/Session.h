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
  /// defaultCompileCacheDir()). A CPU compile whose module, profile, entry
  /// and input shapes, host CPU and RLX build match an entry loads its code
  /// instead of compiling; a new one is stored. Damaged entries are removed
  /// and compiled again with a warning. IR dumps (dumpDir) bypass it.
  std::string cacheDir;
  /// The most bytes the cache keeps (least recently used entries are
  /// evicted beyond); 0: 2 GiB, or $RLX_CACHE_MAX_MB.
  uint64_t cacheMaxBytes = 0;
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

  /// "specialize 0.001 s, hir-to-mir 0.012 s, ..." from phaseSeconds.
  std::string phaseSummary() const;
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
  /// Parses and compiles an `.mlir` file.
  llvm::Expected<CompiledModel> compileFile(llvm::StringRef path,
                                            const CompileOptions &options = {});
  /// Parses and compiles MLIR text.
  llvm::Expected<CompiledModel>
  compileString(llvm::StringRef text, const CompileOptions &options = {});

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
