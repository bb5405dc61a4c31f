//===- LIRToLLVM.h - LIR to the LLVM dialect ---------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_CONVERSION_LIRTOLLVM_LIRTOLLVM_H
#define RLX_CONVERSION_LIRTOLLVM_LIRTOLLVM_H

#include "RLX/Dialect/LIR/Transforms/Transforms.h"
#include "RLX/Support/Enums.h"

namespace mlir {
class OpPassManager;
namespace rlx {

/// The CPU code generator's options (`[backend.cpu]` of the profile).
struct CPUCodegenOptions {
  /// `gemm`: blas keeps every weight row major and calls cblas_sgemm.
  ::rlx::GemmStrategy gemm = ::rlx::GemmStrategy::Auto;
  /// The generated GEMM's base register tile (getCPUCodegenOptions:
  /// hostGemmTile()).
  lir::GemmTile tile;
  /// Store q4_0, q8_0, q4_K, q5_K, q6_K, f16 and bf16 GEMM weights x8
  /// (lir-pack-params x8).
  bool repackX8 = false;
  /// Query positions per register tile of the blocked attention
  /// (lir-select-strategy attention-rows; 0: the code generator's choice).
  int64_t attentionRows = 0;
  /// The 16-lane accumulator vectors the blocked attention's tile keeps
  /// when attentionRows is 0 (lir-select-strategy attention-accumulators;
  /// getCPUCodegenOptions: hostAttentionAccumulators()).
  int64_t attentionAccumulators = 16;
};

/// The generated GEMM's base register tile for this machine's vectors (the
/// JIT compiles for the host): 8 rows x 2 16-lane vectors with AVX-512 (16
/// of its 32 zmm registers accumulate), else 6 x 1 (12 of AVX2's 16 ymm;
/// the 8 x 2 tile spills there: 53-62 against 113-133 GFLOP/s on Zen 3).
lir::GemmTile hostGemmTile();

/// The blocked attention's accumulator budget for this machine's vectors: 16
/// vectors of 16 lanes with AVX-512 (a 4-row tile of head dim 64), else 4
/// (AVX2: one row of head dim 64 takes 8 of the 16 ymm registers; 4 rows
/// spilled, and the prefill attention of LLaMA-1B's shape at 512 tokens ran
/// 1.3-1.7x as long as with one).
int64_t hostAttentionAccumulators();

/// Whether `[backend.cpu] repack_weights = choice` stores q4_0, q8_0, q4_K and
/// q6_K GEMM weights x8 on this machine: `auto` where the micro-kernels run on
/// AVX2 (rlx_uk_isa), where the interleaved GEMM measured faster.
bool resolveWeightRepack(::rlx::WeightRepack choice);

/// The decisions on planned LIR for the CPU: lir-pack-params and
/// lir-fuse-glu-gemm (unless gemm = blas; lir-pack-params x8 alone with
/// repackX8), lir-select-strategy.
void buildCPULIRPipeline(OpPassManager &pm, const CPUCodegenOptions &options);

/// Decided LIR to the LLVM dialect: convert-lir-to-loops, math
/// approximations and the upstream conversions from
/// func/scf/vector/memref/math/arith to the LLVM dialect.
void buildLIRToLLVMPipeline(OpPassManager &pm);

/// Registers `convert-lir-to-llvm` (the pipeline above).
void registerLIRToLLVMPipeline();

} // namespace rlx
} // namespace mlir

#endif // RLX_CONVERSION_LIRTOLLVM_LIRTOLLVM_H
