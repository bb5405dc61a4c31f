//===- LIRToLLVM.h - LIR to the LLVM dialect ---------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_CONVERSION_LIRTOLLVM_LIRTOLLVM_H
#define RLX_CONVERSION_LIRTOLLVM_LIRTOLLVM_H

namespace mlir {
class OpPassManager;
namespace rlx {
struct ConvertLIRToLoopsPassOptions;

/// convert-lir-to-loops, math approximations and the upstream conversions
/// from func/scf/vector/memref/math/arith to the LLVM dialect.
void buildLIRToLLVMPipeline(OpPassManager &pm);
/// The same with the kernel generator's options (GEMM choice and tiles).
void buildLIRToLLVMPipeline(OpPassManager &pm,
                            const ConvertLIRToLoopsPassOptions &options);

/// Registers `convert-lir-to-llvm` (the pipeline above).
void registerLIRToLLVMPipeline();

} // namespace rlx
} // namespace mlir

#endif // RLX_CONVERSION_LIRTOLLVM_LIRTOLLVM_H
