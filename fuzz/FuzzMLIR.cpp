//===- FuzzMLIR.cpp - Fuzz .mlir parsing, verification and compiling -----===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Parses arbitrary text as a module with RLX's dialects (HIR, MIR, LIR and
// the upstream ones they use) and verifies it, as `rlx-opt` and `rlx-run` do;
// a module that verifies then goes through Session::compileString, the whole
// CPU pipeline (specialization, HIR to MIR, fusion, MIR to LIR with the arena
// plan, LLVM and the JIT), under a 64 MiB memory budget. Inputs are capped at
// 8 KiB and dynamic dims are bound to 2, so each run stays small.
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <cstdlib>
#include <string>

using namespace rlx;

static constexpr size_t kMaxInputBytes = 8192;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Quiet, and no IR dumps.
  unsetenv("RLX_IR_DUMP");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInputBytes)
    return 0;
  // A fresh session now and then: the context interns every type and
  // attribute it ever parsed.
  static std::unique_ptr<Session> session;
  static unsigned runs = 0;
  if (!session || ++runs % 256 == 0)
    session = std::make_unique<Session>(Device::Cpu);
  mlir::MLIRContext &ctx = session->context();
  // Diagnostics are expected; swallow them.
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  // MLIR's lexer reads the byte after the text, expecting the NUL that a
  // MemoryBuffer (rlx-opt, rlx-run) ends with: a terminated copy, since
  // libFuzzer's buffer has nothing after it.
  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  if (!module)
    return 0;

  // Bind every dynamic dim of the public functions' inputs to 2.
  CompileOptions options;
  options.memoryBudgetMB = 64;
  for (auto f : module->getOps<mlir::func::FuncOp>()) {
    if (f.isDeclaration() || f.isPrivate())
      continue;
    for (auto [i, type] : llvm::enumerate(f.getArgumentTypes())) {
      auto ranked = mlir::dyn_cast<mlir::RankedTensorType>(type);
      if (!ranked)
        continue;
      llvm::SmallVector<int64_t, 4> shape;
      for (int64_t d : ranked.getShape())
        shape.push_back(mlir::ShapedType::isDynamic(d) ? 2 : d);
      std::string name = "input" + std::to_string(i);
      if (auto attr = f.getArgAttrOfType<mlir::StringAttr>(i, "rlx.name"))
        name = attr.str();
      options.inputShapes[name] = shape;
    }
  }
  llvm::Expected<CompiledModel> model = session->compile(*module, options);
  if (!model)
    llvm::consumeError(model.takeError());
  return 0;
}
