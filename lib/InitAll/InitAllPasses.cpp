//===- InitAllPasses.cpp - Register the RLX passes ------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/InitAllPasses.h"
#include "RLX/Conversion/LIRToLLVM/LIRToLLVM.h"
#include "RLX/Conversion/LIRToSPIRV/LIRToSPIRV.h"
#include "RLX/Conversion/Passes.h"
#include "RLX/Dialect/LIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Transforms/Passes.h"
#include "RLX/Transforms/Pipelines.h"
#include "mlir/Transforms/Passes.h"

void mlir::rlx::registerAllRLXPasses() {
  registerRLXConversionPasses();
  registerRLXTransformsPasses();
  registerRLXMIRTransformsPasses();
  lir::registerLIRPasses();
  registerRLXPipelines();
  registerLIRToLLVMPipeline();
  // Upstream passes used in RLX pipelines and tests.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
}
