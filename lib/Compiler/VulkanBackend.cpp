//===- VulkanBackend.cpp - LIR to SPIR-V and Vulkan -----------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The Vulkan back end of the Session: open the device first (its limits and
// features configure the code generator), run rlx-gpu-pipeline on the
// planned LIR, serialize every spirv.module, read the dispatch schedule off
// the annotated lir.entry and hand both to a Vulkan executor. Every module
// is validated with spirv-tools (an invalid one is an error naming its
// kernel) and, under `[backend.spirv] optimize`, run through spirv-opt's
// performance passes and validated again.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "RLX/Conversion/LIRToSPIRV/LIRToSPIRV.h"
#include "RLX/Conversion/LIRToSPIRV/SPIRVTools.h"
#include "RLX/Conversion/Passes.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"

#if RLX_HAVE_VULKAN
#include "RLX/Runtime/Vulkan.h"
#endif

using namespace rlx;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

#if RLX_HAVE_VULKAN

/// Fails when the entry reads or writes element types the device cannot
/// store.
static Error checkFeatures(mlir::rlx::lir::EntryOp entry,
                           const vulkan::DeviceInfo &info) {
  for (auto view : entry.getBlock().getOps<mlir::rlx::lir::ViewOp>()) {
    mlir::Type t = view.getType().getElementType();
    if (t.isInteger(64) && !info.int64)
      return fail("Vulkan device '" + info.name +
                  "' lacks shaderInt64, which the model's i64 tensors need");
    if (t.isF16() && !info.float16Storage)
      return fail("Vulkan device '" + info.name +
                  "' lacks shaderFloat16 / storageBuffer16BitAccess, which "
                  "the model's f16 tensors need");
    // Weights stored as bf16 or ggml blocks are decoded by the kernels (or
    // refused by name when the kernels are generated).
    bool weight = view.getSpace() == mlir::rlx::lir::MemorySpace::Params;
    if ((mlir::isa<mlir::rlx::mir::QuantType>(t) || t.isBF16()) && !weight)
      return fail("the SPIR-V back end reads bf16 and ggml blocks only as "
                  "weights, not as the model's tensors");
    if (t.isF64())
      return fail("the SPIR-V back end does not support the model's f64 "
                  "tensors");
  }
  return Error::success();
}

// The runtime's buffer spaces are the IR's memory spaces.
static_assert(static_cast<int>(mlir::rlx::lir::MemorySpace::Arena) ==
                  static_cast<int>(BufferSpace::Arena) &&
              static_cast<int>(mlir::rlx::lir::MemorySpace::Params) ==
                  static_cast<int>(BufferSpace::Params) &&
              static_cast<int>(mlir::rlx::lir::MemorySpace::Constants) ==
                  static_cast<int>(BufferSpace::Constants));

/// The kernels and the dispatch schedule convert-lir-to-spirv produced,
/// each kernel validated and, with `optimize`, optimized.
static Expected<vulkan::Program> extractProgram(mlir::ModuleOp module,
                                                mlir::rlx::lir::EntryOp entry,
                                                bool optimize) {
  vulkan::Program program;
  llvm::StringMap<unsigned> kernelIndex;
  for (auto m : module.getOps<mlir::spirv::ModuleOp>()) {
    llvm::SmallVector<uint32_t> words;
    if (failed(mlir::spirv::serialize(m, words)))
      return fail("SPIR-V serialization of " +
                  m.getName().value_or("a module") + " failed");
    vulkan::Kernel k;
    StringRef name = m.getName().value_or("");
    name.consume_front("__spv__");
    k.name = name.str();
    for (auto ep : m.getOps<mlir::spirv::EntryPointOp>())
      k.entryPoint = ep.getFn().str();
    if (Error err = mlir::rlx::validateSpirv(words, k.name))
      return std::move(err);
    if (optimize) {
      Expected<std::vector<uint32_t>> optimized =
          mlir::rlx::optimizeSpirv(words, k.name);
      if (!optimized)
        return optimized.takeError();
      k.spirv = std::move(*optimized);
    } else {
      k.spirv.assign(words.begin(), words.end());
    }
    kernelIndex[m.getName().value_or("")] = program.kernels.size();
    program.kernels.push_back(std::move(k));
  }
  namespace lir = mlir::rlx::lir;
  for (auto kernel : entry.getBlock().getOps<lir::KernelOp>()) {
    lir::DispatchAttr dispatch = kernel.getDispatchAttr();
    if (!dispatch)
      return fail("kernel '" + kernel.getName() +
                  "' has no SPIR-V dispatch information");
    auto it = kernelIndex.find(
        dispatch.getEntryPoint().getRootReference().getValue());
    if (it == kernelIndex.end())
      return fail("kernel '" + kernel.getName() + "' names a missing module");
    vulkan::Dispatch dp;
    dp.kernel = it->second;
    for (int i = 0; i < 3; ++i)
      dp.workgroups[i] = dispatch.getWorkgroups()[i];
    for (lir::BindingAttr a : dispatch.getBindings()) {
      vulkan::Binding b;
      b.space = static_cast<BufferSpace>(a.getSpace());
      b.offset = a.getOffset();
      b.range = a.getRange();
      b.viewOffset = a.getViewOffset();
      b.viewBytes = a.getViewBytes();
      b.writes = a.getWrites();
      dp.bindings.push_back(b);
    }
    program.kernels[dp.kernel].numBindings = dp.bindings.size();
    program.dispatches.push_back(std::move(dp));
  }

  // The constant pool.
  if (lir::ConstantPoolAttr pool = entry.getConstantPoolAttr()) {
    program.constants.assign(pool.getBytes(), 0);
    for (auto [value, offset] :
         llvm::zip(pool.getValues(), pool.getOffsets())) {
      auto dense = mlir::cast<mlir::DenseElementsAttr>(value);
      uint8_t *dst = program.constants.data() + offset;
      if (dense.getElementType().isInteger(1)) {
        for (bool v : dense.getValues<bool>())
          *dst++ = v;
        continue;
      }
      // A splat holds one element: it is repeated.
      llvm::ArrayRef<char> raw = dense.getRawData();
      int64_t copies = dense.isSplat() ? dense.getNumElements() : 1;
      for (int64_t i = 0; i < copies; ++i, dst += raw.size())
        std::memcpy(dst, raw.data(), raw.size());
    }
  }
  return program;
}

Expected<CompiledModel>
detail::compileLIRForVulkan(LIRModule &lir, const CompileProfile &profile,
                            CompileStats &stats) {
  auto device = vulkan::openDevice(profile.backend.spirv.device);
  if (!device)
    return device.takeError();
  const vulkan::DeviceInfo &info = vulkan::getDeviceInfo(**device);
  auto entries = lir.module->getOps<mlir::rlx::lir::EntryOp>();
  if (entries.empty())
    return fail("no LIR entry point to compile");
  mlir::rlx::lir::EntryOp entry = *entries.begin();
  if (Error err = checkFeatures(entry, info))
    return std::move(err);

  mlir::rlx::ConvertLIRToSPIRVPassOptions options;
  options.workgroupSize = std::min<int64_t>(
      profile.backend.spirv.workgroupSize, info.maxComputeWorkGroupInvocations);
  options.storageBufferAlignment = std::max<uint64_t>(
      llvm::PowerOf2Ceil(info.minStorageBufferOffsetAlignment), 4);
  options.maxWorkgroupInvocations = info.maxComputeWorkGroupInvocations;
  options.maxSharedMemory = info.maxComputeSharedMemorySize;
  options.int64 = info.int64;
  options.int8 = info.int8Storage;
  options.float16 = info.float16Storage;

  PhaseTimer phase(stats);
  mlir::MLIRContext *ctx = lir.module->getContext();
  std::string diags;
  {
    mlir::ScopedDiagnosticHandler handler(ctx, [&](mlir::Diagnostic &d) {
      llvm::raw_string_ostream os(diags);
      os << "\n" << d.getLocation() << ": " << d;
      return mlir::success();
    });
    mlir::PassManager pm(ctx);
    mlir::rlx::buildLIRToSPIRVPipeline(pm, options);
    if (failed(pm.run(*lir.module)))
      return fail("SPIR-V code generation failed:" + diags);
  }
  phase.done("lir-to-spirv");
  detail::dumpIR(lir.dumpDir, "05-spirv.mlir", *lir.module);

  Expected<vulkan::Program> program =
      extractProgram(*lir.module, entry, profile.backend.spirv.optimize);
  if (!program)
    return program.takeError();
  phase.done(profile.backend.spirv.optimize ? "spirv-validate-opt"
                                            : "spirv-validate");
  stats.kernelFunctions = program->kernels.size();
  auto executor =
      vulkan::createExecutor(*device, std::move(*program), lir.manifest);
  if (!executor)
    return executor.takeError();
  phase.done("vulkan-pipelines");
  return CompiledModel(std::move(lir.manifest), std::move(*executor));
}

#else // !RLX_HAVE_VULKAN

Expected<CompiledModel> detail::compileLIRForVulkan(LIRModule &,
                                                    const CompileProfile &,
                                                    CompileStats &) {
  return fail("this build has no Vulkan runtime: configure with "
              "-DRLX_ENABLE_SPIRV=ON and the Vulkan loader installed "
              "(libvulkan-dev)");
}

#endif // RLX_HAVE_VULKAN
