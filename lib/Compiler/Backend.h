//===- Backend.h - Device back ends of the Session -------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The Session lowers any module to planned LIR (one lir.entry plus its
// manifest); each device back end takes it from there.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_COMPILER_BACKEND_H
#define RLX_LIB_COMPILER_BACKEND_H

#include "RLX/Compiler/Session.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include <chrono>

namespace mlir::rlx::lir {
class EntryOp;
} // namespace mlir::rlx::lir

namespace rlx::vulkan {
struct Program;
} // namespace rlx::vulkan

namespace rlx::detail {

/// A module holding one planned lir.entry, its manifest, and where to dump
/// the IR of later stages ("" for nowhere).
struct LIRModule {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  Manifest manifest;
  std::string dumpDir;
};

/// Appends the time since the previous mark (or construction) to
/// CompileStats::phaseSeconds under a phase name.
class PhaseTimer {
public:
  explicit PhaseTimer(CompileStats &stats)
      : stats(stats), last(std::chrono::steady_clock::now()) {}
  void done(llvm::StringRef phase) {
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - last).count();
    stats.phaseSeconds.emplace_back(phase.str(), seconds);
    if (stats.onPhase)
      stats.onPhase(phase, seconds);
    last = now;
  }

private:
  CompileStats &stats;
  std::chrono::steady_clock::time_point last;
};

/// The binding manifest of a planned entry, read off its views and `lir.io`
/// ops (names, roles, offsets, shapes, dtypes, derivations, layouts).
llvm::Expected<Manifest> readManifest(mlir::rlx::lir::EntryOp entry);

/// Writes `op` to `<dumpDir>/<name>` when dumping is on.
void dumpIR(llvm::StringRef dumpDir, llvm::StringRef name, mlir::Operation *op);

/// CPU: LIR -> LLVM (convert-lir-to-llvm) -> JIT with MLIR's ExecutionEngine,
/// run by a pool of `[backend.cpu] threads` threads.
/// JITs `lir`; with `objectPath`, also writes the object code there (for
/// the compile cache).
llvm::Expected<CompiledModel> compileLIRForCpu(LIRModule &lir,
                                               const CompileProfile &profile,
                                               CompileStats &stats,
                                               llvm::StringRef objectPath = {});
/// Links object code written by compileLIRForCpu into a fresh JIT.
llvm::Expected<CompiledModel>
loadCpuObject(std::unique_ptr<llvm::MemoryBuffer> object, Manifest manifest,
              const CompileProfile &profile,
              std::optional<uint64_t> memoryBudgetMB);
/// CPU AOT: LIR -> LLVM -> `<prefix>.so` + `<prefix>.json`.
llvm::Error compileLIRToLibrary(LIRModule &lir, llvm::StringRef prefix,
                                const CompileProfile &profile,
                                CompileStats &stats);
/// Vulkan: LIR -> SPIR-V -> a Vulkan executor.
/// Compiles `lir` for the Vulkan device the profile selects; with
/// `programOut`, also the program in the compile cache's form.
llvm::Expected<CompiledModel>
compileLIRForVulkan(LIRModule &lir, const CompileProfile &profile,
                    CompileStats &stats, std::string *programOut = nullptr);
/// The device the profile selects, as the compile cache keys it: its
/// description and every limit and feature the code generator reads.
llvm::Expected<std::string> vulkanDeviceKey(const CompileProfile &profile);
/// Builds the pipelines of a program stored by the compile cache.
llvm::Expected<CompiledModel>
loadVulkanProgram(llvm::StringRef bytes, Manifest manifest,
                  const CompileProfile &profile,
                  std::optional<uint64_t> memoryBudgetMB);

/// A Vulkan program as bytes (kernels, dispatch schedule, constants) and
/// back; deserializeProgram checks every count and offset against the
/// bytes.
std::string serializeProgram(const vulkan::Program &program);
llvm::Expected<vulkan::Program> deserializeProgram(llvm::StringRef bytes);

} // namespace rlx::detail

#endif // RLX_LIB_COMPILER_BACKEND_H
