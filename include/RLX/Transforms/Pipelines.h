//===- Pipelines.h - RLX compile pipelines ----------------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The compile pipelines, one definition each, used by Session and by
// `rlx-opt` alike:
//
//   rlx-compile-pipeline   HIR -> fused MIR, as a compile profile says:
//     convert-hir-to-mir{policy}                        [fusion] policy
//     mir-fusion-report{record-baseline}                unless [fusion] skip
//     mir-fuse-all{target, disable}                     unless [fusion] skip
//     canonicalize, cse                                 [passes] dce or
//                                                       constant_folding
//     mir-fusion-report{target, disable, assert-clean}  unless [fusion] skip
//
//   rlx-cpu-pipeline / rlx-gpu-pipeline   HIR (or any lower level) -> LLVM
//   dialect / SPIR-V:
//     rlx-specialize-shapes{shapes}          the front end
//     rlx-compile-pipeline
//     mir-unfuse                             [backend.*] unfuse_regions
//     convert-mir-to-lir, lir-plan-arena
//   then on the CPU (buildCPULIRPipeline, buildLIRToLLVMPipeline):
//     lir-pack-params, lir-fuse-glu-gemm     unless [backend.cpu] gemm = blas
//     lir-select-strategy{tile}
//     convert-lir-to-loops, ..., the upstream conversions to LLVM
//   or for SPIR-V (buildLIRToSPIRVPipeline):
//     convert-lir-to-spirv{device limits}, per spirv.module ABI lowering,
//     VCE update, cleanup
//
// Each stage is a no-op on IR that is already past it (the MIR passes act
// on functions, the planner on unplanned buffers), so a pipeline takes HIR,
// MIR or LIR. The fusion target `auto` is resolved once, from the pipeline
// (cpu or spirv).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_TRANSFORMS_PIPELINES_H
#define RLX_TRANSFORMS_PIPELINES_H

#include "RLX/Support/Enums.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/Support/Error.h"

#include <string>

namespace rlx {
struct CompileProfile;
} // namespace rlx

namespace mlir {
class OpPassManager;
class PassManager;
namespace rlx {
struct CPUCodegenOptions;
struct ConvertLIRToSPIRVPassOptions;

/// Options of `rlx-compile-pipeline`. At most one of the two is given; with
/// neither, the pipeline reads getDefaultCompileProfilePath() if set, else
/// uses the default profile (CompileProfile::llama32Prefill()).
struct CompilePipelineOptions
    : public PassPipelineOptions<CompilePipelineOptions> {
  Option<std::string> profile{
      *this, "profile",
      llvm::cl::desc("Compile profile to follow (a *.rlx.toml file)")};
  Option<std::string> preset{
      *this, "preset",
      llvm::cl::desc("Compile profile preset to follow (llama32_prefill, "
                     "encoder, ...)")};
};

/// What the front end of a back-end pipeline needs beyond the profile.
struct FrontendOptions {
  /// `name:d0xd1x...` per input to specialize (rlx-specialize-shapes).
  SmallVector<std::string> shapes;
  /// The function to compile (empty: the module's only public one).
  std::string entry;
  /// Write the fusion report's misses as JSON there ("" for no file).
  std::string reportJsonFile;
  /// Print the fusion report (misses, fused-op histograms) as remarks.
  bool fusionRemarks = false;
  /// The rank whose share is compiled when the profile's `[parallel]
  /// tensor` is above 1 (mir-shard-tensor-parallel).
  int64_t tensorParallelRank = 0;
  /// Under tensor parallelism, return the rank's slice of the LM head's
  /// logits instead of all-gathering them (mir-shard-tensor-parallel
  /// local-logits).
  bool tensorParallelLocalLogits = false;
};

/// Appends HIR -> fused MIR to `pm` (anchored on builtin.module) as
/// `profile` says, for the code generator `target` (the profile's `auto`
/// target resolves to it). Fails, with a message in `error`, on a profile
/// naming an unknown fusion.
LogicalResult buildCompilePipeline(OpPassManager &pm,
                                   const ::rlx::CompileProfile &profile,
                                   ::rlx::Target target,
                                   std::string *error = nullptr,
                                   llvm::StringRef reportJsonFile = "",
                                   bool fusionRemarks = true);

/// The front end of both back ends: specialize, HIR -> fused MIR, the
/// profile's unfuse_regions, MIR -> planned LIR.
LogicalResult buildFrontendPipeline(OpPassManager &pm,
                                    const ::rlx::CompileProfile &profile,
                                    ::rlx::Target target,
                                    const FrontendOptions &options,
                                    std::string *error = nullptr);

/// The CPU code generator's options as `profile` sets them.
CPUCodegenOptions getCPUCodegenOptions(const ::rlx::CompileProfile &profile);

/// `rlx-cpu-pipeline`: the front end, the CPU decisions on LIR, LLVM.
LogicalResult buildCPUPipeline(OpPassManager &pm,
                               const ::rlx::CompileProfile &profile,
                               const FrontendOptions &frontend,
                               const CPUCodegenOptions &codegen,
                               std::string *error = nullptr);

/// `rlx-gpu-pipeline`: the front end, then LIR -> SPIR-V for a device with
/// the limits in `codegen`.
LogicalResult buildGPUPipeline(OpPassManager &pm,
                               const ::rlx::CompileProfile &profile,
                               const FrontendOptions &frontend,
                               const ConvertLIRToSPIRVPassOptions &codegen,
                               std::string *error = nullptr);

/// Applies the profile's pass-manager settings (`[passes].verbose`: print
/// the IR after each pass) to a top-level pass manager.
void configureCompilePassManager(PassManager &pm,
                                 const ::rlx::CompileProfile &profile);

/// The profile the options name: the `profile` file, the `preset`, the
/// default profile file, or the default profile, in that order. Errors carry
/// the loader's `file:line:column: message` lines.
llvm::Expected<::rlx::CompileProfile>
resolveCompileProfile(llvm::StringRef profileFile, llvm::StringRef preset,
                      llvm::StringRef pipeline);

/// The profile file the pipelines read when given no profile option; empty
/// by default. rlx-opt binds its `--rlx-profile` flag to it.
std::string &getDefaultCompileProfilePath();

/// Registers `rlx-compile-pipeline`, `rlx-cpu-pipeline` and
/// `rlx-gpu-pipeline`.
void registerRLXPipelines();

} // namespace rlx
} // namespace mlir

#endif // RLX_TRANSFORMS_PIPELINES_H
