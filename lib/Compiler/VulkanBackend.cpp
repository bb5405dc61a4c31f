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
    if (t.isInteger(16))
      return fail("the SPIR-V back end does not support the model's i16 "
                  "tensors (it stores i1, i8, i32, i64, f16 and f32)");
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

//===----------------------------------------------------------------------===//
// The compile cache's form of a program
//===----------------------------------------------------------------------===//

static constexpr char kProgramMagic[4] = {'R', 'V', 'K', 'P'};

namespace {
/// Little-endian fields after one another.
class ProgramWriter {
public:
  explicit ProgramWriter(std::string &out) : out(out) {}
  void u8(uint8_t v) { out.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    u32(static_cast<uint32_t>(v));
    u32(static_cast<uint32_t>(v >> 32));
  }
  void str(StringRef s) {
    u32(s.size());
    out += s;
  }

private:
  std::string &out;
};

/// Reads what ProgramWriter wrote; every read is bounds-checked and a short
/// read sets `bad`.
class ProgramReader {
public:
  explicit ProgramReader(StringRef in) : in(in) {}
  bool bad = false;
  uint8_t u8() {
    if (in.empty()) {
      bad = true;
      return 0;
    }
    uint8_t v = static_cast<uint8_t>(in.front());
    in = in.drop_front();
    return v;
  }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= uint32_t(u8()) << (8 * i);
    return v;
  }
  uint64_t u64() {
    uint64_t lo = u32();
    return lo | (uint64_t(u32()) << 32);
  }
  std::string str() {
    uint32_t n = u32();
    if (n > in.size()) {
      bad = true;
      return "";
    }
    std::string s = in.take_front(n).str();
    in = in.drop_front(n);
    return s;
  }
  size_t left() const { return in.size(); }

private:
  StringRef in;
};
} // namespace

std::string detail::serializeProgram(const vulkan::Program &program) {
  std::string out(kProgramMagic, sizeof(kProgramMagic));
  ProgramWriter w(out);
  w.u32(program.kernels.size());
  for (const vulkan::Kernel &k : program.kernels) {
    w.str(k.name);
    w.str(k.entryPoint);
    w.u32(k.numBindings);
    w.u32(k.spirv.size());
    for (uint32_t word : k.spirv)
      w.u32(word);
  }
  w.u32(program.dispatches.size());
  for (const vulkan::Dispatch &d : program.dispatches) {
    w.u32(d.kernel);
    for (uint32_t g : d.workgroups)
      w.u32(g);
    w.u32(d.bindings.size());
    for (const vulkan::Binding &b : d.bindings) {
      w.u8(static_cast<uint8_t>(b.space));
      w.u8(b.writes);
      w.u64(b.offset);
      w.u64(b.range);
      w.u64(b.viewOffset);
      w.u64(b.viewBytes);
    }
  }
  w.u64(program.constants.size());
  out.append(program.constants.begin(), program.constants.end());
  return out;
}

Expected<vulkan::Program> detail::deserializeProgram(StringRef bytes) {
  auto bad = [] { return fail("the stored Vulkan program does not read"); };
  if (!bytes.starts_with(StringRef(kProgramMagic, sizeof(kProgramMagic))))
    return bad();
  ProgramReader r(bytes.drop_front(sizeof(kProgramMagic)));
  vulkan::Program p;
  uint32_t kernels = r.u32();
  // Each kernel takes at least 16 bytes: no count can ask for more.
  if (kernels > r.left() / 16)
    return bad();
  for (uint32_t i = 0; i < kernels && !r.bad; ++i) {
    vulkan::Kernel k;
    k.name = r.str();
    k.entryPoint = r.str();
    k.numBindings = r.u32();
    uint32_t words = r.u32();
    if (words > r.left() / 4)
      return bad();
    k.spirv.resize(words);
    for (uint32_t &word : k.spirv)
      word = r.u32();
    p.kernels.push_back(std::move(k));
  }
  uint32_t dispatches = r.u32();
  if (dispatches > r.left() / 20)
    return bad();
  for (uint32_t i = 0; i < dispatches && !r.bad; ++i) {
    vulkan::Dispatch d;
    d.kernel = r.u32();
    for (uint32_t &g : d.workgroups)
      g = r.u32();
    uint32_t bindings = r.u32();
    if (d.kernel >= p.kernels.size() || bindings > r.left() / 34)
      return bad();
    for (uint32_t j = 0; j < bindings; ++j) {
      vulkan::Binding b;
      uint8_t space = r.u8();
      if (space > static_cast<uint8_t>(BufferSpace::Constants))
        return bad();
      b.space = static_cast<BufferSpace>(space);
      b.writes = r.u8() != 0;
      b.offset = r.u64();
      b.range = r.u64();
      b.viewOffset = r.u64();
      b.viewBytes = r.u64();
      d.bindings.push_back(b);
    }
    p.dispatches.push_back(std::move(d));
  }
  uint64_t constants = r.u64();
  if (r.bad || constants != r.left())
    return bad();
  StringRef rest = bytes.take_back(constants);
  p.constants.assign(rest.bytes_begin(), rest.bytes_end());
  return p;
}

Expected<std::string> detail::vulkanDeviceKey(const CompileProfile &profile) {
  auto device = vulkan::openDevice(profile.backend.spirv.device);
  if (!device)
    return device.takeError();
  const vulkan::DeviceInfo &i = vulkan::getDeviceInfo(**device);
  // What configures the code generator, and the device itself.
  std::string key;
  llvm::raw_string_ostream os(key);
  os << i.describe() << ";" << i.apiVersion << ";"
     << i.minStorageBufferOffsetAlignment << ";" << i.maxStorageBufferRange
     << ";" << i.maxComputeWorkGroupInvocations << ";"
     << i.maxComputeSharedMemorySize << ";" << i.int64 << i.int8Storage
     << i.float16Storage << i.cooperativeMatrix;
  return key;
}

Expected<CompiledModel>
detail::loadVulkanProgram(StringRef bytes, Manifest manifest,
                          const CompileProfile &profile,
                          std::optional<uint64_t> memoryBudgetMB) {
  Expected<vulkan::Program> program = deserializeProgram(bytes);
  if (!program)
    return program.takeError();
  auto device = vulkan::openDevice(profile.backend.spirv.device);
  if (!device)
    return device.takeError();
  auto executor =
      vulkan::createExecutor(*device, std::move(*program), manifest);
  if (!executor)
    return executor.takeError();
  return CompiledModel::create(std::move(manifest), std::move(*executor),
                               memoryBudgetMB);
}

Expected<CompiledModel>
detail::compileLIRForVulkan(LIRModule &lir, const CompileProfile &profile,
                            CompileStats &stats, std::string *programOut) {
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
  if (programOut)
    *programOut = serializeProgram(*program);
  auto executor =
      vulkan::createExecutor(*device, std::move(*program), lir.manifest);
  if (!executor)
    return executor.takeError();
  phase.done("vulkan-pipelines");
  return CompiledModel(std::move(lir.manifest), std::move(*executor));
}

#else // !RLX_HAVE_VULKAN

static Error noVulkan() {
  return fail("this build has no Vulkan runtime: configure with "
              "-DRLX_ENABLE_SPIRV=ON and the Vulkan loader installed "
              "(libvulkan-dev)");
}

Expected<CompiledModel> detail::compileLIRForVulkan(LIRModule &,
                                                    const CompileProfile &,
                                                    CompileStats &,
                                                    std::string *) {
  return noVulkan();
}

Expected<std::string> detail::vulkanDeviceKey(const CompileProfile &) {
  return noVulkan();
}

Expected<CompiledModel> detail::loadVulkanProgram(StringRef, Manifest,
                                                  const CompileProfile &,
                                                  std::optional<uint64_t>) {
  return noVulkan();
}

#endif // RLX_HAVE_VULKAN
