//===- rlx-opt.cpp - RLX optimizer driver ---------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `mlir-opt` for RLX: parses HIR, MIR and LIR (plus the upstream dialects the
// pipelines use) and runs RLX and upstream passes on them.
//
//===----------------------------------------------------------------------===//

#include "RLX/InitAllDialects.h"
#include "RLX/InitAllPasses.h"
#include "RLX/Transforms/Pipelines.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"

/// The profile --rlx-compile-pipeline follows when given no option.
static llvm::cl::opt<std::string, /*ExternalStorage=*/true> rlxProfile(
    "rlx-profile",
    llvm::cl::desc("Compile profile (*.rlx.toml) for --rlx-compile-pipeline"),
    llvm::cl::value_desc("file"),
    llvm::cl::location(mlir::rlx::getDefaultCompileProfilePath()));

namespace mlir::rlx::test {
void registerTestMIRFusionControlPass();
} // namespace mlir::rlx::test

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::rlx::registerAllRLXDialects(registry);
  mlir::rlx::registerAllRLXPasses();
  // Test passes of test/lib (test-*).
  mlir::rlx::test::registerTestMIRFusionControlPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "RLX optimizer driver: HIR, MIR and LIR pass pipelines\n",
      registry));
}
