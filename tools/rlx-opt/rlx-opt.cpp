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
#include "RLX/Support/Version.h"
#include "RLX/Transforms/Pipelines.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"

/// The profile --rlx-compile-pipeline follows when given no option.
static llvm::cl::opt<std::string, /*ExternalStorage=*/true> rlxProfile(
    "rlx-profile",
    llvm::cl::desc("Compile profile (*.rlx.toml) for --rlx-compile-pipeline"),
    llvm::cl::value_desc("file"),
    llvm::cl::location(mlir::rlx::getDefaultCompileProfilePath()));

/// --help lists the passes first: categories print in alphabetical order,
/// and this one sorts before mlir-opt's "General options".
static llvm::cl::OptionCategory
    passCategory("Compiler passes and pipelines",
                 "RLX's passes and pipelines, and the upstream passes "
                 "rlx-opt runs");

namespace mlir::rlx::test {
void registerTestMIRFusionControlPass();
} // namespace mlir::rlx::test

/// Hides, from --help only (--help-hidden lists them), every option
/// registered so far except --help/--version and RLX's: before MlirOptMain
/// registers the mlir-opt options, those are LLVM's (code generators for
/// every target, optimizations, profiling) that the libraries register when
/// they load.
static void hideLibraryOptions() {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *opt = entry.second;
    bool generic = llvm::any_of(opt->Categories, [](auto *category) {
      return category->getName() == "Generic Options";
    });
    if (generic || opt == &rlxProfile ||
        opt->getOptionHiddenFlag() != llvm::cl::NotHidden)
      continue;
    opt->setHiddenFlag(llvm::cl::Hidden);
  }
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::rlx::registerAllRLXDialects(registry);
  mlir::rlx::registerAllRLXPasses();
  // Test passes of test/lib (test-*).
  mlir::rlx::test::registerTestMIRFusionControlPass();

  hideLibraryOptions();
  // The pass list is registered with mlir-opt's options (MlirOptMain does it
  // again, to no effect): it moves to its own category, listed first.
  mlir::MlirOptMainConfig::registerCLOptions(registry);
  if (llvm::cl::Option *passList =
          llvm::cl::getRegisteredOptions().lookup("rlx-cpu-pipeline"))
    passList->addCategory(passCategory);
  rlx::setRLXVersionPrinter();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "RLX optimizer driver: HIR, MIR and LIR pass pipelines\n",
      registry));
}
