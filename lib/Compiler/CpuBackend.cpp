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
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include <cblas.h>
#include <cstdio>
#include <cstdlib>
#include <functional>

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
/// sgemm, the micro-kernels and the runtime routines.
static llvm::orc::SymbolMap
runtimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap map;
  map[interner("cblas_sgemm")] = {
      llvm::orc::ExecutorAddr::fromPtr(&cblas_sgemm),
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

Expected<CompiledModel> detail::compileLIRForCpu(LIRModule &lir,
                                                 const CompileProfile &profile,
                                                 CompileStats &stats,
                                                 StringRef objectPath) {
  PhaseTimer phase(stats);
  if (Error err = lowerToLLVM(lir, profile, stats))
    return std::move(err);
  phase.done("lir-to-llvm");
  mlir::ExecutionEngineOptions eo;
  // ExecutionEngineOptions::transformer is a function_ref: the function it
  // refers to must outlive ExecutionEngine::create (a temporary did not).
  std::function<llvm::Error(llvm::Module *)> transformer =
      mlir::makeOptimizingTransformer(3, 0, nullptr);
  eo.transformer = transformer;
  eo.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  // MLIR turns both JIT event listeners on by default; the perf one writes
  // $HOME/.debug/jit/jit-<pid>.dump on every run. Opt in to profile or debug
  // JIT code: RLX_JIT_PERF=1 (perf), RLX_JIT_GDB=1 (gdb).
  eo.enablePerfNotificationListener = envFlag("RLX_JIT_PERF");
  eo.enableGDBNotificationListener = envFlag("RLX_JIT_GDB");
  // The compile cache stores the object code the JIT produced.
  eo.enableObjectDump = !objectPath.empty();
  auto engine = mlir::ExecutionEngine::create(*lir.module, eo);
  if (!engine)
    return fail("JIT compilation failed: " +
                llvm::toString(engine.takeError()));
  (*engine)->registerSymbols(runtimeSymbols);
  std::string symbol =
      spmd::kCInterfacePrefix + lir.manifest.entry + spmd::kSpmdSuffix;
  auto addr = (*engine)->lookup(symbol);
  if (!addr)
    return fail("JIT: no symbol '" + symbol +
                "': " + llvm::toString(addr.takeError()));
  phase.done("jit");
  if (!objectPath.empty())
    (*engine)->dumpToObjectFile(objectPath);
  std::shared_ptr<mlir::ExecutionEngine> owner = std::move(*engine);
  return CompiledModel(std::move(lir.manifest),
                       std::make_unique<CpuExecutor>(
                           reinterpret_cast<CpuExecutor::SpmdFn>(*addr),
                           std::static_pointer_cast<void>(owner),
                           cpuThreadCount(profile.backend.cpu.threads)));
}

Expected<CompiledModel>
detail::loadCpuObject(std::unique_ptr<llvm::MemoryBuffer> object,
                      Manifest manifest, const CompileProfile &profile,
                      std::optional<uint64_t> memoryBudgetMB) {
  // As mlir::ExecutionEngine links what it compiles: RuntimeDyld with a
  // section memory manager, the runtime's symbols, then the process's.
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  auto jit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(std::move(*builder))
          .setObjectLinkingLayerCreator(
              [](llvm::orc::ExecutionSession &es)
                  -> Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
                return std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                    es, [](const llvm::MemoryBuffer &) {
                      return std::make_unique<llvm::SectionMemoryManager>();
                    });
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
  if (Error err = (*jit)->addObjectFile(std::move(object)))
    return std::move(err);
  std::string symbol =
      spmd::kCInterfacePrefix + manifest.entry + spmd::kSpmdSuffix;
  auto addr = (*jit)->lookup(symbol);
  if (!addr)
    return fail("cached object code has no symbol '" + symbol +
                "': " + llvm::toString(addr.takeError()));
  std::shared_ptr<llvm::orc::LLJIT> owner = std::move(*jit);
  return CompiledModel::create(std::move(manifest),
                               std::make_unique<CpuExecutor>(
                                   addr->toPtr<CpuExecutor::SpmdFn>(),
                                   std::static_pointer_cast<void>(owner),
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
                           f.getName() == "rlx_dequantize_rows"))
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
