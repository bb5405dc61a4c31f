//===- Pipelines.cpp - RLX compile pipelines ------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Transforms/Pipelines.h"
#include "RLX/Conversion/LIRToLLVM/LIRToLLVM.h"
#include "RLX/Conversion/LIRToSPIRV/LIRToSPIRV.h"
#include "RLX/Conversion/Passes.h"
#include "RLX/Dialect/LIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Transforms/Transforms.h"
#include "RLX/Profile/CompileProfile.h"
#include "RLX/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::rlx;

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

LogicalResult mlir::rlx::buildCompilePipeline(
    OpPassManager &pm, const ::rlx::CompileProfile &profile,
    ::rlx::Target pipelineTarget, std::string *error,
    llvm::StringRef reportJsonFile, bool fusionRemarks) {
  const ::rlx::CompileProfile::FusionProfile &fusion = profile.fusion;
  ::rlx::Target target = ::rlx::resolveTarget(fusion.target, pipelineTarget);
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
    // On functions only: kernels of LIR that a later-level input already
    // holds keep their constants.
    OpPassManager &fpm = pm.nest<func::FuncOp>();
    fpm.addPass(createCanonicalizerPass());
    fpm.addPass(createCSEPass());
  }
  if (!fusion.skip) {
    MIRFusionReportPassOptions report;
    report.target = target;
    report.disable = disable;
    report.assertClean = fusion.assertClean;
    report.jsonFile = reportJsonFile.str();
    report.remarks = fusionRemarks;
    pm.addPass(createMIRFusionReportPass(report));
  }
  return success();
}

LogicalResult mlir::rlx::buildFrontendPipeline(
    OpPassManager &pm, const ::rlx::CompileProfile &profile,
    ::rlx::Target target, const FrontendOptions &options, std::string *error) {
  RLXSpecializeShapesPassOptions specialize;
  specialize.shapes = options.shapes;
  specialize.entry = options.entry;
  pm.addPass(createRLXSpecializeShapesPass(specialize));
  if (failed(buildCompilePipeline(pm, profile, target, error,
                                  options.reportJsonFile,
                                  options.fusionRemarks)))
    return failure();
  // Tensor parallelism: this rank's share of the fused layers.
  int64_t overlap = profile.parallel.overlapChunks;
  if (int64_t ranks = profile.parallel.tensor; ranks > 1) {
    if (target != ::rlx::Target::Cpu) {
      if (error)
        *error = "[parallel] tensor = " + std::to_string(ranks) +
                 ": tensor-parallel collectives run on the CPU back end only";
      return failure();
    }
    if (options.tensorParallelRank < 0 || options.tensorParallelRank >= ranks) {
      if (error)
        *error = "tensor-parallel rank " +
                 std::to_string(options.tensorParallelRank) +
                 " is not in [0, " + std::to_string(ranks) + ")";
      return failure();
    }
    MIRShardTensorParallelPassOptions shard;
    shard.ranks = ranks;
    shard.rank = options.tensorParallelRank;
    shard.localLogits = options.tensorParallelLocalLogits;
    pm.addPass(createMIRShardTensorParallelPass(shard));
    // Each rank's weights: sliced params, loaded as ranges of the file
    // (CSE then merges a tied embedding's two equal slices).
    OpPassManager &fpm = pm.nest<func::FuncOp>();
    fpm.addPass(createMIRFoldParamSlicesPass());
    fpm.addPass(createCanonicalizerPass());
    fpm.addPass(createCSEPass());
  } else if (overlap > 1) {
    if (error)
      *error = "[parallel] overlap_chunks = " + std::to_string(overlap) +
               " splits the all-reduces of a tensor-parallel model: it needs "
               "tensor above 1";
    return failure();
  }
  bool unfuse = target == ::rlx::Target::Cpu
                    ? profile.backend.cpu.unfuseRegions
                    : profile.backend.spirv.unfuseRegions;
  if (unfuse)
    pm.addPass(createMIRUnfusePass());
  // [precision] compute: the activations between ops in bf16 / f16.
  if (profile.precision.compute != ::rlx::ComputePrecision::F32) {
    MIRComputePrecisionPassOptions compute;
    compute.type = ::rlx::stringifyComputePrecision(profile.precision.compute);
    pm.addPass(createMIRComputePrecisionPass(compute));
  }
  // After the compute type's roundings: an attention block it saw whole
  // keeps its unrounded intermediates when its output projection is split.
  if (overlap > 1) {
    MIROverlapCollectivesPassOptions split;
    split.chunks = overlap;
    pm.addPass(createMIROverlapCollectivesPass(split));
  }
  pm.addPass(createConvertMIRToLIRPass());
  if (overlap > 1)
    pm.addPass(lir::createLIRAsyncCollectivesPass());
  pm.addPass(lir::createLIRPlanArenaPass());
  return success();
}

CPUCodegenOptions
mlir::rlx::getCPUCodegenOptions(const ::rlx::CompileProfile &profile) {
  CPUCodegenOptions o;
  o.gemm = profile.backend.cpu.gemm;
  o.repackX8 = resolveWeightRepack(profile.backend.cpu.repackWeights);
  o.tile = hostGemmTile();
  o.attentionRows = profile.backend.cpu.attentionRows;
  o.attentionAccumulators = hostAttentionAccumulators();
  return o;
}

LogicalResult mlir::rlx::buildCPUPipeline(OpPassManager &pm,
                                          const ::rlx::CompileProfile &profile,
                                          const FrontendOptions &frontend,
                                          const CPUCodegenOptions &codegen,
                                          std::string *error) {
  if (failed(buildFrontendPipeline(pm, profile, ::rlx::Target::Cpu, frontend,
                                   error)))
    return failure();
  buildCPULIRPipeline(pm, codegen);
  buildLIRToLLVMPipeline(pm);
  return success();
}

LogicalResult mlir::rlx::buildGPUPipeline(
    OpPassManager &pm, const ::rlx::CompileProfile &profile,
    const FrontendOptions &frontend,
    const ConvertLIRToSPIRVPassOptions &codegen, std::string *error) {
  if (failed(buildFrontendPipeline(pm, profile, ::rlx::Target::Spirv, frontend,
                                   error)))
    return failure();
  buildLIRToSPIRVPipeline(pm, codegen);
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
mlir::rlx::resolveCompileProfile(StringRef profileFile, StringRef preset,
                                 StringRef pipeline) {
  if (!profileFile.empty() && !preset.empty())
    return llvm::createStringError(pipeline +
                                   ": give either 'profile' or 'preset', "
                                   "not both");
  if (!profileFile.empty())
    return ::rlx::CompileProfile::fromTomlFile(profileFile);
  if (!preset.empty()) {
    llvm::Expected<::rlx::CompileProfile> p =
        ::rlx::CompileProfile::presetOrError(preset);
    if (!p)
      return llvm::createStringError(pipeline + ": " +
                                     llvm::toString(p.takeError()));
    return std::move(*p);
  }
  if (!getDefaultCompileProfilePath().empty())
    return ::rlx::CompileProfile::fromTomlFile(getDefaultCompileProfilePath());
  return ::rlx::CompileProfile();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

namespace {

/// Options every back-end pipeline takes.
template <typename Derived>
struct TargetPipelineOptions : public PassPipelineOptions<Derived> {
  using Base = PassPipelineOptions<Derived>;
  typename Base::template Option<std::string> profile{
      *this, "profile",
      llvm::cl::desc("Compile profile to follow (a *.rlx.toml file)")};
  typename Base::template Option<std::string> preset{
      *this, "preset", llvm::cl::desc("Compile profile preset to follow")};
  typename Base::template ListOption<std::string> shapes{
      *this, "shapes",
      llvm::cl::desc("Concrete input shapes, name:d0xd1x... each "
                     "(rlx-specialize-shapes)")};
  typename Base::template Option<std::string> entry{
      *this, "entry",
      llvm::cl::desc("The function to compile (default: the only public "
                     "one)")};
  typename Base::template Option<bool> fusionReport{
      *this, "fusion-report",
      llvm::cl::desc("Print the fusion report (misses, fused-op histograms) "
                     "as remarks"),
      llvm::cl::init(false)};

  FrontendOptions frontend() const {
    FrontendOptions o;
    o.shapes.assign(shapes.begin(), shapes.end());
    o.entry = entry;
    o.fusionRemarks = fusionReport;
    return o;
  }
};

struct CPUPipelineOptions : public TargetPipelineOptions<CPUPipelineOptions> {
  Option<::rlx::GemmStrategy> gemm{
      *this, "gemm",
      llvm::cl::desc("GEMM implementation (default: the profile's [backend."
                     "cpu] gemm)"),
      llvm::cl::values(
          clEnumValN(::rlx::GemmStrategy::Auto, "auto",
                     "generated where the weight can be packed, else BLAS"),
          clEnumValN(::rlx::GemmStrategy::Blas, "blas", "cblas_sgemm"),
          clEnumValN(::rlx::GemmStrategy::Generated, "generated",
                     "the generated register-tiled GEMM"))};
  Option<::rlx::WeightRepack> repackWeights{
      *this, "repack-weights",
      llvm::cl::desc(
          "How q4_0, q8_0, q4_K, q5_K, q6_K, f16 and bf16 GEMM weights "
          "are kept (default: the "
          "profile's [backend.cpu] repack_weights)"),
      llvm::cl::values(
          clEnumValN(::rlx::WeightRepack::Auto, "auto",
                     "x8 where the micro-kernels run on AVX2"),
          clEnumValN(::rlx::WeightRepack::None, "none", "as stored"),
          clEnumValN(::rlx::WeightRepack::X8, "x8",
                     "groups of 8 rows interleaved"))};
  Option<int64_t> gemmMr{
      *this, "gemm-mr",
      llvm::cl::desc("Rows of the generated GEMM's register tile (default: "
                     "this machine's, 8 with AVX-512, else 6)")};
  Option<int64_t> gemmNv{
      *this, "gemm-nv",
      llvm::cl::desc("16-lane column vectors of the generated GEMM's "
                     "register tile (default: this machine's, 2 with "
                     "AVX-512, else 1)")};
  Option<int64_t> gemmKc{*this, "gemm-kc",
                         llvm::cl::desc("K block of the generated GEMM (0: "
                                        "all of K; default 256)")};
  Option<int64_t> attentionAccumulators{
      *this, "attention-accumulators",
      llvm::cl::desc("16-lane accumulator vectors of the blocked "
                     "attention's register tile (default: this machine's, "
                     "16 with AVX-512, else 4)")};
};

struct GPUPipelineOptions : public TargetPipelineOptions<GPUPipelineOptions> {
  Option<int64_t> workgroupSize{
      *this, "workgroup-size",
      llvm::cl::desc("Threads per workgroup of elementwise kernels (default: "
                     "the profile's [backend.spirv] workgroup_size)")};
  Option<int64_t> storageBufferAlignment{
      *this, "storage-buffer-alignment",
      llvm::cl::desc("Alignment of descriptor offsets"), llvm::cl::init(256)};
  Option<int64_t> maxWorkgroupInvocations{
      *this, "max-workgroup-invocations",
      llvm::cl::desc("The device's maxComputeWorkGroupInvocations"),
      llvm::cl::init(256)};
  Option<int64_t> maxSharedMemory{
      *this, "max-shared-memory",
      llvm::cl::desc("The device's maxComputeSharedMemorySize"),
      llvm::cl::init(32768)};
  Option<bool> int64{*this, "int64", llvm::cl::desc("shaderInt64"),
                     llvm::cl::init(true)};
  Option<bool> int8{*this, "int8",
                    llvm::cl::desc("shaderInt8 + storageBuffer8BitAccess"),
                    llvm::cl::init(true)};
  Option<bool> float16{*this, "float16",
                       llvm::cl::desc("shaderFloat16 + "
                                      "storageBuffer16BitAccess"),
                       llvm::cl::init(false)};
};

} // namespace

void mlir::rlx::registerRLXPipelines() {
  // Registered by hand rather than with PassPipelineRegistration so that a
  // bad profile is reported as an error instead of being ignored.
  registerPassPipeline(
      "rlx-compile-pipeline",
      "Lower HIR to fused MIR as a compile profile says (profile=file.rlx.toml "
      "or preset=name; rlx-opt's --rlx-profile gives the default file); the "
      "fusion target `auto` is the CPU",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        CompilePipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        llvm::Expected<::rlx::CompileProfile> profile = resolveCompileProfile(
            options.profile, options.preset, "rlx-compile-pipeline");
        if (!profile)
          return errorHandler(llvm::toString(profile.takeError()));
        std::string error;
        if (failed(
                buildCompilePipeline(pm, *profile, ::rlx::Target::Cpu, &error)))
          return errorHandler("rlx-compile-pipeline: " + error);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(CompilePipelineOptions());
      });

  registerPassPipeline(
      "rlx-cpu-pipeline",
      "Compile HIR (or MIR, or LIR) for the CPU down to the LLVM dialect, as "
      "Session does: specialize, fuse, bufferize, plan, decide, generate "
      "(then mlir-translate --mlir-to-llvmir)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        CPUPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        llvm::Expected<::rlx::CompileProfile> profile = resolveCompileProfile(
            options.profile, options.preset, "rlx-cpu-pipeline");
        if (!profile)
          return errorHandler(llvm::toString(profile.takeError()));
        CPUCodegenOptions codegen = getCPUCodegenOptions(*profile);
        if (options.gemm.hasValue())
          codegen.gemm = options.gemm;
        if (options.repackWeights.hasValue())
          codegen.repackX8 = resolveWeightRepack(options.repackWeights);
        if (options.gemmMr.hasValue())
          codegen.tile.mr = options.gemmMr;
        if (options.gemmNv.hasValue())
          codegen.tile.nv = options.gemmNv;
        if (options.gemmKc.hasValue())
          codegen.tile.kc = options.gemmKc;
        if (options.attentionAccumulators.hasValue())
          codegen.attentionAccumulators = options.attentionAccumulators;
        std::string error;
        if (failed(buildCPUPipeline(pm, *profile, options.frontend(), codegen,
                                    &error)))
          return errorHandler("rlx-cpu-pipeline: " + error);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(CPUPipelineOptions());
      });

  registerPassPipeline(
      "rlx-gpu-pipeline",
      "Compile HIR (or MIR, or LIR) to SPIR-V kernels for Vulkan, as Session "
      "does: specialize, fuse, bufferize, plan, one spirv.module per kernel; "
      "the lir.entry stays as the dispatch schedule (serialize with "
      "--rlx-serialize-spirv)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        GPUPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        llvm::Expected<::rlx::CompileProfile> profile = resolveCompileProfile(
            options.profile, options.preset, "rlx-gpu-pipeline");
        if (!profile)
          return errorHandler(llvm::toString(profile.takeError()));
        ConvertLIRToSPIRVPassOptions codegen;
        codegen.workgroupSize = options.workgroupSize.hasValue()
                                    ? int64_t(options.workgroupSize)
                                    : profile->backend.spirv.workgroupSize;
        codegen.storageBufferAlignment = options.storageBufferAlignment;
        codegen.maxWorkgroupInvocations = options.maxWorkgroupInvocations;
        codegen.maxSharedMemory = options.maxSharedMemory;
        codegen.int64 = options.int64;
        codegen.int8 = options.int8;
        codegen.float16 = options.float16;
        std::string error;
        if (failed(buildGPUPipeline(pm, *profile, options.frontend(), codegen,
                                    &error)))
          return errorHandler("rlx-gpu-pipeline: " + error);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(GPUPipelineOptions());
      });
}
