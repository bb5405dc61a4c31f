//===- InitAllDialects.cpp - Register the RLX dialects --------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/InitAllDialects.h"
#include "RLX/Dialect/Common/RLXDialect.h"
#include "RLX/Dialect/HIR/IR/HIRDialect.h"
#include "RLX/Dialect/LIR/IR/LIRDialect.h"
#include "RLX/Dialect/MIR/IR/MIRDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"

void mlir::rlx::registerRLXDialects(DialectRegistry &registry) {
  registry
      .insert<RLXDialect, hir::HIRDialect, mir::MIRDialect, lir::LIRDialect>();
}

void mlir::rlx::registerAllRLXDialects(DialectRegistry &registry) {
  registerRLXDialects(registry);
  registry.insert<func::FuncDialect, arith::ArithDialect, math::MathDialect,
                  tensor::TensorDialect, memref::MemRefDialect, scf::SCFDialect,
                  vector::VectorDialect, LLVM::LLVMDialect, gpu::GPUDialect,
                  spirv::SPIRVDialect, shard::ShardDialect>();
}
