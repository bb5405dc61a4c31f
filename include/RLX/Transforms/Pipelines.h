//===- Pipelines.h - RLX compile pipelines ----------------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The profile-driven compile pipeline, HIR → fused MIR:
//   convert-hir-to-mir{policy}                      [fusion].policy
//   mir-fusion-report{record-baseline}              unless [fusion].skip
//   mir-fuse-all{target, disable}                   unless [fusion].skip
//   canonicalize, cse                               [passes].dce or
//                                                   [passes].constant_folding
//   mir-fusion-report{target, disable, assert-clean} unless [fusion].skip
// `rlx-opt --rlx-compile-pipeline{profile=f.rlx.toml}` (or `preset=name`, or
// `--rlx-profile=f.rlx.toml --rlx-compile-pipeline`) runs it.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_TRANSFORMS_PIPELINES_H
#define RLX_TRANSFORMS_PIPELINES_H

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

/// Appends HIR → fused MIR to `pm` (anchored on builtin.module) as `profile`
/// says. `target = auto` means cpu. Fails, with a message in `error`, on a
/// profile naming an unknown fusion.
LogicalResult buildCompilePipeline(OpPassManager &pm,
                                   const ::rlx::CompileProfile &profile,
                                   std::string *error = nullptr,
                                   llvm::StringRef reportJsonFile = "");

/// Applies the profile's pass-manager settings (`[passes].verbose`: print
/// the IR after each pass) to a top-level pass manager.
void configureCompilePassManager(PassManager &pm,
                                 const ::rlx::CompileProfile &profile);

/// The profile the options name: the `profile` file, the `preset`, the
/// default profile file, or the default profile, in that order. Errors carry
/// the loader's `file:line:column: message` lines.
llvm::Expected<::rlx::CompileProfile>
resolveCompileProfile(const CompilePipelineOptions &options);

/// The profile file `rlx-compile-pipeline` reads when given no option; empty
/// by default. rlx-opt binds its `--rlx-profile` flag to it.
std::string &getDefaultCompileProfilePath();

/// Registers `rlx-compile-pipeline`.
void registerRLXPipelines();

} // namespace rlx
} // namespace mlir

#endif // RLX_TRANSFORMS_PIPELINES_H
