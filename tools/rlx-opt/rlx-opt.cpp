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
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::rlx::registerAllRLXDialects(registry);
  mlir::rlx::registerAllRLXPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "RLX optimizer driver: HIR, MIR and LIR pass pipelines\n",
      registry));
}
