//===- FuzzPasses.cpp - Fuzz the compile passes, without codegen ----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Parses arbitrary text as a module with RLX's dialects and verifies it, then
// runs the passes Session and `rlx-opt --rlx-cpu-pipeline` /
// `--rlx-gpu-pipeline` run before code generation, with the IR verified after
// each pass:
//
//   - the CPU front end (rlx-specialize-shapes, HIR to MIR, fusion for the
//     CPU, MIR to LIR, lir-plan-arena) and the CPU's decisions on LIR
//     (lir-pack-params, lir-fuse-glu-gemm, lir-select-strategy);
//   - on a second copy, the SPIR-V front end (fusion for SPIR-V) and
//     convert-lir-to-spirv with its per-kernel cleanup.
//
// No LLVM lowering and no JIT (rlx-fuzz-mlir does those), so each input
// costs milliseconds. The entry function's dynamic dims are bound to 2.
//
// A pipeline may refuse a module, but only with an error diagnostic: a
// failure without one aborts, as a crash or an assertion does.
//
//===----------------------------------------------------------------------===//

#include "RLX/Conversion/LIRToLLVM/LIRToLLVM.h"
#include "RLX/Conversion/LIRToSPIRV/LIRToSPIRV.h"
#include "RLX/Conversion/Passes.h"
#include "RLX/InitAllDialects.h"
#include "RLX/Profile/CompileProfile.h"
#include "RLX/Transforms/Pipelines.h"
#include "RLX/Transforms/Specialize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <memory>
#include <string>

using namespace mlir;

static constexpr size_t kMaxInputBytes = 8192;

namespace {
/// One context for many inputs; renewed now and then, since it interns every
/// type and attribute it ever parsed.
struct FuzzContext {
  FuzzContext() {
    DialectRegistry registry;
    mlir::rlx::registerAllRLXDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    // One thread: the passes' own threads only slow the fuzzer down.
    context.disableMultithreading();
  }
  MLIRContext context;
};
} // namespace

/// Runs `pm` on `module`; aborts if it fails without an error diagnostic.
static void runChecked(PassManager &pm, ModuleOp module, unsigned &errors,
                       const char *what) {
  unsigned before = errors;
  if (succeeded(pm.run(module)) || errors > before)
    return;
  llvm::errs() << "rlx-fuzz-passes: the " << what
               << " pipeline failed without an error diagnostic\n";
  abort();
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  unsetenv("RLX_IR_DUMP");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInputBytes)
    return 0;
  static std::unique_ptr<FuzzContext> fuzz;
  static unsigned runs = 0;
  if (!fuzz || ++runs % 256 == 0)
    fuzz = std::make_unique<FuzzContext>();
  MLIRContext &ctx = fuzz->context;
  // Diagnostics are expected: count the errors, print nothing.
  unsigned errors = 0;
  ScopedDiagnosticHandler quiet(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    return success();
  });
  // MLIR's lexer reads the byte after the text, expecting the NUL that a
  // MemoryBuffer (rlx-opt, rlx-run) ends with: a terminated copy, since
  // libFuzzer's buffer has nothing after it.
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  if (!module)
    return 0;

  // The entry function's dynamic dims bound to 2, as FuzzMLIR does; a module
  // without one (LIR only, or several public functions) goes through as
  // rlx-opt would run it, and the pipeline says what is wrong.
  mlir::rlx::FrontendOptions frontend;
  bool hasBody =
      llvm::any_of(module->getOps<func::FuncOp>(),
                   [](func::FuncOp f) { return !f.isDeclaration(); });
  if (hasBody) {
    FailureOr<func::FuncOp> entry = mlir::rlx::findEntryFunction(*module, "");
    if (failed(entry))
      return 0;
    for (auto [i, type] : llvm::enumerate(entry->getArgumentTypes())) {
      auto ranked = dyn_cast<RankedTensorType>(type);
      if (!ranked || ranked.hasStaticShape())
        continue;
      std::string shape = mlir::rlx::inputName(*entry, i) + ":";
      llvm::raw_string_ostream os(shape);
      llvm::interleave(
          ranked.getShape(), os,
          [&](int64_t d) { os << (ShapedType::isDynamic(d) ? 2 : d); }, "x");
      frontend.shapes.push_back(shape);
    }
  }

  ::rlx::CompileProfile profile;
  OwningOpRef<ModuleOp> gpuModule = module->clone();
  {
    PassManager pm(&ctx);
    if (failed(mlir::rlx::buildFrontendPipeline(pm, profile, ::rlx::Target::Cpu,
                                                frontend)))
      abort(); // The default profile names no unknown fusion.
    mlir::rlx::buildCPULIRPipeline(pm,
                                   mlir::rlx::getCPUCodegenOptions(profile));
    runChecked(pm, *module, errors, "CPU");
  }
  {
    PassManager pm(&ctx);
    if (failed(mlir::rlx::buildFrontendPipeline(
            pm, profile, ::rlx::Target::Spirv, frontend)))
      abort();
    mlir::rlx::ConvertLIRToSPIRVPassOptions spirv;
    spirv.workgroupSize = profile.backend.spirv.workgroupSize;
    mlir::rlx::buildLIRToSPIRVPipeline(pm, spirv);
    runChecked(pm, *gpuModule, errors, "SPIR-V");
  }
  return 0;
}
