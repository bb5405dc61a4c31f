//===- CpuBackend.cpp - LIR to host code: JIT and AOT ---------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "RLX/Conversion/LIRToLLVM/LIRToLLVM.h"
#include "RLX/Conversion/Passes.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Runtime/CpuExecutor.h"
#include "RLX/Runtime/Kernels.h"
#include "RLX/Support/KernelABI.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/JITEventListener.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SmallVectorMemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/SplitModule.h"
#include <atomic>
#include <cblas.h>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <thread>

using namespace rlx;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Runs convert-lir-to-llvm on the module, with its diagnostics as the error.
static Error lowerToLLVM(detail::LIRModule &lir, const CompileProfile &profile,
                         CompileStats &stats) {
  mlir::MLIRContext *ctx = lir.module->getContext();
  std::string diags;
  mlir::ScopedDiagnosticHandler handler(ctx, [&](mlir::Diagnostic &d) {
    llvm::raw_string_ostream os(diags);
    os << "\n" << d.getLocation() << ": " << d;
    return mlir::success();
  });
  // The decisions on LIR were made with the front end (Session): what is
  // left is code generation.
  mlir::PassManager pm(ctx);
  mlir::rlx::buildLIRToLLVMPipeline(pm);
  if (failed(pm.run(*lir.module)))
    return fail("code generation failed:" + diags);
  detail::dumpIR(lir.dumpDir, "06-llvm.mlir", *lir.module);
  for (auto f : lir.module->getOps<mlir::LLVM::LLVMFuncOp>())
    if (f.getSymName().contains("_k") && !f.isExternal() &&
        !f.getSymName().starts_with("_mlir"))
      ++stats.kernelFunctions;
  return Error::success();
}

/// Whether environment variable `name` is set to something other than "",
/// "0", "false", "off" or "no".
static bool envFlag(const char *name) {
  const char *value = std::getenv(name);
  if (!value)
    return false;
  StringRef v(value);
  return !(v.empty() || v == "0" || v.equals_insensitive("false") ||
           v.equals_insensitive("off") || v.equals_insensitive("no"));
}

/// The symbols generated code calls that the process provides: OpenBLAS's
/// sgemm and sgemv, the micro-kernels and the runtime routines.
static llvm::orc::SymbolMap
runtimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap map;
  map[interner("cblas_sgemm")] = {
      llvm::orc::ExecutorAddr::fromPtr(&cblas_sgemm),
      llvm::JITSymbolFlags::Exported};
  map[interner("cblas_sgemv")] = {
      llvm::orc::ExecutorAddr::fromPtr(&cblas_sgemv),
      llvm::JITSymbolFlags::Exported};
  struct Adder {
    llvm::orc::MangleAndInterner &interner;
    llvm::orc::SymbolMap &map;
  } adder{interner, map};
  rlx_for_each_kernel_symbol(
      [](const char *name, void *address, void *user) {
        auto *a = static_cast<Adder *>(user);
        a->map[a->interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                     llvm::JITSymbolFlags::Exported};
      },
      &adder);
  return map;
}

//===----------------------------------------------------------------------===//
// Object code, compiled in parallel
//===----------------------------------------------------------------------===//

/// The compile cache's form of a compile's objects: this magic, a u64
/// count, then for each object a u64 size and its bytes.
static constexpr StringRef kBundleMagic("RLXOBJS\x01", 8);

static std::string
bundleObjects(llvm::ArrayRef<std::unique_ptr<llvm::MemoryBuffer>> objects) {
  std::string out(kBundleMagic);
  auto put = [&](uint64_t v) {
    char bytes[8];
    llvm::support::endian::write64le(bytes, v);
    out.append(bytes, 8);
  };
  put(objects.size());
  for (const auto &object : objects) {
    put(object->getBufferSize());
    out += object->getBuffer();
  }
  return out;
}

static Expected<std::vector<std::unique_ptr<llvm::MemoryBuffer>>>
unbundleObjects(const llvm::MemoryBuffer &bundle) {
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects;
  StringRef bytes = bundle.getBuffer();
  if (!bytes.starts_with(kBundleMagic))
    return fail("object bundle: bad magic");
  bytes = bytes.drop_front(kBundleMagic.size());
  auto take = [&](uint64_t &v) {
    if (bytes.size() < 8)
      return false;
    v = llvm::support::endian::read64le(bytes.data());
    bytes = bytes.drop_front(8);
    return true;
  };
  uint64_t count = 0;
  if (!take(count) || count > bytes.size())
    return fail("object bundle: truncated header");
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t size = 0;
    if (!take(size) || size > bytes.size())
      return fail("object bundle: object " + llvm::Twine(i) + " of " +
                  llvm::Twine(count) + " is truncated");
    objects.push_back(
        llvm::MemoryBuffer::getMemBufferCopy(bytes.take_front(size)));
    bytes = bytes.drop_front(size);
  }
  if (!bytes.empty())
    return fail("object bundle: " + llvm::Twine(bytes.size()) +
                " bytes after the last object");
  return std::move(objects);
}

/// O3 and code generation of one module (as mlir::ExecutionEngine did it:
/// the optimizing transformer without a target machine, then the host's
/// code generator at -O3) into object code.
static Expected<std::unique_ptr<llvm::MemoryBuffer>>
emitObject(llvm::Module &module, llvm::orc::JITTargetMachineBuilder builder) {
  auto tm = builder.createTargetMachine();
  if (!tm)
    return tm.takeError();
  mlir::ExecutionEngine::setupTargetTripleAndDataLayout(&module, tm->get());
  if (Error err = mlir::makeOptimizingTransformer(3, 0, nullptr)(&module))
    return std::move(err);
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager pm;
  if ((*tm)->addPassesToEmitFile(pm, os, nullptr,
                                 llvm::CodeGenFileType::ObjectFile))
    return fail("the host target cannot emit object files");
  pm.run(module);
  return std::make_unique<llvm::SmallVectorMemoryBuffer>(
      std::move(object), module.getModuleIdentifier(),
      /*RequiresNullTerminator=*/false);
}

/// The LLVM dialect module as object code, compiled on `threads` threads:
/// split (llvm::SplitModule) into up to four parts per thread, each moved
/// into its own LLVMContext by a bitcode round trip, then optimized and
/// compiled by whichever thread is free, largest first (one kernel, the
/// attention's, can be a quarter of the whole).
static Expected<std::vector<std::unique_ptr<llvm::MemoryBuffer>>>
compileObjects(mlir::ModuleOp module, unsigned threads) {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> whole =
      mlir::translateModuleToLLVMIR(module, context);
  if (!whole)
    return fail("translation to LLVM IR failed");
  unsigned defined = llvm::count_if(
      whole->functions(), [](llvm::Function &f) { return !f.isDeclaration(); });
  threads = std::max(1u, threads);
  unsigned parts = std::min(defined, 4 * threads);
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects;
  if (threads == 1 || parts <= 1) {
    Expected<std::unique_ptr<llvm::MemoryBuffer>> object =
        emitObject(*whole, *builder);
    if (!object)
      return object.takeError();
    objects.push_back(std::move(*object));
    return std::move(objects);
  }
  std::vector<llvm::SmallVector<char, 0>> bitcode;
  llvm::SplitModule(
      *whole, parts,
      [&](std::unique_ptr<llvm::Module> part) {
        llvm::raw_svector_ostream os(bitcode.emplace_back());
        llvm::WriteBitcodeToFile(*part, os);
      },
      /*PreserveLocals=*/false, /*RoundRobin=*/true);
  // Largest first: the last part a thread takes is a small one.
  std::vector<size_t> order(bitcode.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    return bitcode[a].size() > bitcode[b].size();
  });
  objects.resize(bitcode.size());
  std::vector<std::string> errors(bitcode.size());
  auto compilePart = [&](size_t i) {
    llvm::LLVMContext partContext;
    auto part = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(StringRef(bitcode[i].data(), bitcode[i].size()),
                              "part" + std::to_string(i)),
        partContext);
    if (!part) {
      errors[i] = llvm::toString(part.takeError());
      return;
    }
    Expected<std::unique_ptr<llvm::MemoryBuffer>> object =
        emitObject(**part, *builder);
    if (!object)
      errors[i] = llvm::toString(object.takeError());
    else
      objects[i] = std::move(*object);
  };
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k = next++; k < order.size(); k = next++)
      compilePart(order[k]);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<size_t>(threads, order.size()); ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
  for (auto [i, err] : llvm::enumerate(errors))
    if (!err.empty())
      return fail("part " + llvm::Twine(i) + " of " +
                  llvm::Twine(errors.size()) + ": " + err);
  return std::move(objects);
}

/// A JIT (RuntimeDyld, as mlir::ExecutionEngine links) holding `objects`,
/// the runtime's symbols and the process's; and the address of the model's
/// SPMD entry.
static Expected<
    std::pair<std::shared_ptr<llvm::orc::LLJIT>, CpuExecutor::SpmdFn>>
linkObjects(std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects,
            StringRef entry) {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  // MLIR turns both JIT event listeners on by default; the perf one writes
  // $HOME/.debug/jit/jit-<pid>.dump on every run. Opt in to profile or
  // debug JIT code: RLX_JIT_PERF=1 (perf), RLX_JIT_GDB=1 (gdb).
  llvm::JITEventListener *perf =
      envFlag("RLX_JIT_PERF")
          ? llvm::JITEventListener::createPerfJITEventListener()
          : nullptr;
  llvm::JITEventListener *gdb =
      envFlag("RLX_JIT_GDB")
          ? llvm::JITEventListener::createGDBRegistrationListener()
          : nullptr;
  auto jit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(std::move(*builder))
          .setObjectLinkingLayerCreator(
              [&](llvm::orc::ExecutionSession &es)
                  -> Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
                auto layer =
                    std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                        es, [](const llvm::MemoryBuffer &) {
                          return std::make_unique<llvm::SectionMemoryManager>();
                        });
                for (llvm::JITEventListener *l : {perf, gdb})
                  if (l)
                    layer->registerJITEventListener(*l);
                return std::move(layer);
              })
          .create();
  if (!jit)
    return jit.takeError();
  llvm::orc::JITDylib &main = (*jit)->getMainJITDylib();
  llvm::orc::MangleAndInterner interner((*jit)->getExecutionSession(),
                                        (*jit)->getDataLayout());
  if (Error err =
          main.define(llvm::orc::absoluteSymbols(runtimeSymbols(interner))))
    return std::move(err);
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return process.takeError();
  main.addGenerator(std::move(*process));
  for (auto &object : objects)
    if (Error err = (*jit)->addObjectFile(std::move(object)))
      return std::move(err);
  std::string symbol =
      spmd::kCInterfacePrefix + entry.str() + spmd::kSpmdSuffix;
  auto addr = (*jit)->lookup(symbol);
  if (!addr)
    return fail("JIT: no symbol '" + symbol +
                "': " + llvm::toString(addr.takeError()));
  return std::make_pair(std::shared_ptr<llvm::orc::LLJIT>(std::move(*jit)),
                        addr->toPtr<CpuExecutor::SpmdFn>());
}

Expected<CompiledModel> detail::compileLIRForCpu(LIRModule &lir,
                                                 const CompileProfile &profile,
                                                 CompileStats &stats,
                                                 StringRef objectPath) {
  PhaseTimer phase(stats);
  if (Error err = lowerToLLVM(lir, profile, stats))
    return std::move(err);
  phase.done("lir-to-llvm");
  // As many parts as the model has threads to run on: the compile uses
  // the cores the run will.
  unsigned threads = cpuThreadCount(profile.backend.cpu.threads);
  auto objects = compileObjects(*lir.module, threads);
  if (!objects)
    return fail("JIT compilation failed: " +
                llvm::toString(objects.takeError()));
  // The compile cache stores the object code.
  if (!objectPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream out(objectPath, ec);
    if (!ec)
      out << bundleObjects(*objects);
  }
  auto linked = linkObjects(std::move(*objects), lir.manifest.entry);
  if (!linked)
    return linked.takeError();
  phase.done("jit");
  return CompiledModel(std::move(lir.manifest),
                       std::make_unique<CpuExecutor>(
                           linked->second,
                           std::static_pointer_cast<void>(linked->first),
                           threads));
}

Expected<CompiledModel>
detail::loadCpuObject(std::unique_ptr<llvm::MemoryBuffer> object,
                      Manifest manifest, const CompileProfile &profile,
                      std::optional<uint64_t> memoryBudgetMB) {
  auto objects = unbundleObjects(*object);
  if (!objects)
    return objects.takeError();
  auto linked = linkObjects(std::move(*objects), manifest.entry);
  if (!linked)
    return linked.takeError();
  return CompiledModel::create(
      std::move(manifest),
      std::make_unique<CpuExecutor>(
          linked->second, std::static_pointer_cast<void>(linked->first),
          cpuThreadCount(profile.backend.cpu.threads)),
      memoryBudgetMB);
}

Error detail::compileLIRToLibrary(LIRModule &lir, StringRef prefix,
                                  const CompileProfile &profile,
                                  CompileStats &stats) {
  PhaseTimer phase(stats);
  if (Error err = lowerToLLVM(lir, profile, stats))
    return err;
  phase.done("lir-to-llvm");
  // The collectives (MPI) live in the runtime, which a library does not
  // link.
  if (lir.manifest.worldSize > 1)
    return fail("AOT: the model has collectives over " +
                llvm::Twine(lir.manifest.worldSize) +
                " ranks (tensor parallelism), which libraries do not run yet "
                "(the JIT does)");
  // The micro-kernels that read weights kept as stored live in the runtime,
  // which a library does not link.
  for (auto f : lir.module->getOps<mlir::LLVM::LLVMFuncOp>())
    if (f.isExternal() && (f.getName().starts_with("rlx_uk_") ||
                           f.getName().starts_with("rlx_dequantize_")))
      return fail("AOT: the model keeps weights as stored (f16, bf16 or ggml "
                  "blocks), which libraries do not read yet (the JIT does); "
                  "keep them f32 ([precision] weights = \"f32\", no "
                  "hir.param storage)");
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(*lir.module, llvmContext);
  if (!llvmModule)
    return fail("translation to LLVM IR failed");
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  builder->setRelocationModel(llvm::Reloc::PIC_);
  auto tm = builder->createTargetMachine();
  if (!tm)
    return tm.takeError();
  mlir::ExecutionEngine::setupTargetTripleAndDataLayout(llvmModule.get(),
                                                        tm->get());
  if (Error err =
          mlir::makeOptimizingTransformer(3, 0, tm->get())(llvmModule.get()))
    return err;

  std::string object = (prefix + ".o").str();
  std::error_code ec;
  // The prefix's directory is made if missing (like rlx-run --output-dir).
  llvm::StringRef parent = llvm::sys::path::parent_path(object);
  if (!parent.empty())
    if (std::error_code made = llvm::sys::fs::create_directories(parent))
      return fail(parent + ": " + made.message());
  llvm::ToolOutputFile out(object, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail(object + ": " + ec.message());
  llvm::legacy::PassManager pm;
  if ((*tm)->addPassesToEmitFile(pm, out.os(), nullptr,
                                 llvm::CodeGenFileType::ObjectFile))
    return fail("the host target cannot emit object files");
  pm.run(*llvmModule);
  out.keep();
  out.os().flush();
  phase.done("llvm-codegen");

  // Link a shared library the runtime can dlopen.
  auto cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    return fail("AOT: no C compiler driver ('cc') to link " + object);
  std::string lib = (prefix + ".so").str();
  llvm::SmallVector<StringRef> args = {*cc,    "-shared",    "-o", lib,
                                       object, "-lopenblas", "-lm"};
  std::string msg;
  if (llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0, &msg) != 0)
    return fail("AOT: linking " + lib + " failed" +
                (msg.empty() ? "" : ": " + msg));
  std::string manifestPath = (prefix + ".json").str();
  llvm::raw_fd_ostream json(manifestPath, ec);
  if (ec)
    return fail(manifestPath + ": " + ec.message());
  json << lir.manifest.toJSON() << "\n";
  return Error::success();
}
