//===- Pipelines.cpp - RLX compile pipelines ------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Transforms/Pipelines.h"
#include "RLX/Conversion/Passes.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Transforms/Transforms.h"
#include "RLX/Profile/CompileProfile.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::rlx;

/// The fusion target a profile selects; `auto` compiles for the CPU.
static ::rlx::Target getFusionTarget(const ::rlx::CompileProfile &profile) {
  return profile.fusion.target == ::rlx::TargetChoice::Spirv
             ? ::rlx::Target::Spirv
             : ::rlx::Target::Cpu;
}

LogicalResult mlir::rlx::buildCompilePipeline(
    OpPassManager &pm, const ::rlx::CompileProfile &profile, std::string *error,
    llvm::StringRef reportJsonFile) {
  const ::rlx::CompileProfile::FusionProfile &fusion = profile.fusion;
  ::rlx::Target target = getFusionTarget(profile);
  SmallVector<std::string> disable(fusion.disable.begin(),
                                   fusion.disable.end());
  if (failed(getMIRFusionKinds(target, disable, error)))
    return failure();

  ConvertHIRToMIRPassOptions lowering;
  lowering.policy = fusion.policy;
  pm.addPass(createConvertHIRToMIRPass(lowering));
  if (!fusion.skip) {
    MIRFusionReportPassOptions baseline;
    baseline.recordBaseline = true;
    pm.addPass(createMIRFusionReportPass(baseline));
    MIRFuseAllPassOptions fuse;
    fuse.target = target;
    fuse.disable = disable;
    pm.addPass(createMIRFuseAllPass(fuse));
  }
  if (profile.passes.dce || profile.passes.constantFolding) {
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  if (!fusion.skip) {
    MIRFusionReportPassOptions report;
    report.target = target;
    report.disable = disable;
    report.assertClean = fusion.assertClean;
    report.jsonFile = reportJsonFile.str();
    pm.addPass(createMIRFusionReportPass(report));
  }
  return success();
}

void mlir::rlx::configureCompilePassManager(
    PassManager &pm, const ::rlx::CompileProfile &profile) {
  if (!profile.passes.verbose)
    return;
  pm.getContext()->disableMultithreading();
  pm.enableIRPrinting();
}

std::string &mlir::rlx::getDefaultCompileProfilePath() {
  static std::string path;
  return path;
}

llvm::Expected<::rlx::CompileProfile>
mlir::rlx::resolveCompileProfile(const CompilePipelineOptions &options) {
  if (!options.profile.empty() && !options.preset.empty())
    return llvm::createStringError(
        "rlx-compile-pipeline: give either 'profile' or 'preset', not both");
  if (!options.profile.empty())
    return ::rlx::CompileProfile::fromTomlFile(options.profile);
  if (!options.preset.empty()) {
    if (std::optional<::rlx::CompileProfile> preset =
            ::rlx::CompileProfile::preset(options.preset))
      return *preset;
    std::string names;
    for (StringRef name : ::rlx::CompileProfile::presetNames())
      names += (names.empty() ? "" : ", ") + name.str();
    return llvm::createStringError("rlx-compile-pipeline: unknown preset '" +
                                   options.preset + "' (expected one of " +
                                   names + ")");
  }
  if (!getDefaultCompileProfilePath().empty())
    return ::rlx::CompileProfile::fromTomlFile(getDefaultCompileProfilePath());
  return ::rlx::CompileProfile();
}

void mlir::rlx::registerRLXPipelines() {
  // Registered by hand rather than with PassPipelineRegistration so that a
  // bad profile is reported as an error instead of being ignored.
  registerPassPipeline(
      "rlx-compile-pipeline",
      "Lower HIR to fused MIR as a compile profile says (profile=file.rlx.toml "
      "or preset=name; rlx-opt's --rlx-profile gives the default file)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        CompilePipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        llvm::Expected<::rlx::CompileProfile> profile =
            resolveCompileProfile(options);
        if (!profile)
          return errorHandler(llvm::toString(profile.takeError()));
        std::string error;
        if (failed(buildCompilePipeline(pm, *profile, &error)))
          return errorHandler("rlx-compile-pipeline: " + error);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(CompilePipelineOptions());
      });
}
