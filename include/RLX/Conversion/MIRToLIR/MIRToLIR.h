//===- MIRToLIR.h - Bufferize and plan MIR into LIR --------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_CONVERSION_MIRTOLIR_MIRTOLIR_H
#define RLX_CONVERSION_MIRTOLIR_MIRTOLIR_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>

namespace mlir {
class RewriterBase;
class RewritePatternSet;
namespace func {
class FuncOp;
} // namespace func
namespace rlx {
namespace lir {
class EntryOp;
} // namespace lir

/// Rewrites the fused MIR ops that the CPU runs as a sequence of kernels
/// (mir.attention_block: QKV GEMM, slices, QK-norm, RoPE, attention, output
/// GEMM) into that sequence.
void populateExpandFusedForCPUPatterns(RewritePatternSet &patterns);

/// Rewrites the ops both back ends compute in f32 only (mir.rope, and
/// mir.attention, mir.matmul, mir.batch_matmul and mir.fused_matmul with an
/// f16 / bf16 query or left-hand side) into casts to f32, the op in f32 and
/// a cast back to the op's type.
void populateWidenHalfPrecisionPatterns(RewritePatternSet &patterns);

struct MIRToLIROptions {
  /// Alignment of parameter offsets, and the entry's `alignment` (which
  /// lir-plan-arena places arena buffers at).
  int64_t alignment = 64;
  /// Where the stored bytes of some params start within a page of the file
  /// they are loaded from, by param name (the module's `rlx.param_pages`,
  /// ParamPages in RLX/Dialect/Common/RLXDialect.h):
  /// such a param is placed at a pool offset congruent to its phase modulo
  /// `pageSize` (the pool is page-aligned), so that the loader can map its
  /// whole pages from the file instead of copying them. 0: no phases.
  int64_t pageSize = 0;
  llvm::StringMap<int64_t> pagePhases;
};

/// Converts one MIR function on static shapes into an `lir.entry` of the same
/// name, inserted before it; the function is erased. Arena buffers are left
/// unplanned (`lir.alloc`, `arena_size = 0`) for lir-plan-arena. Emits an
/// error and fails on dynamic shapes or ops that are not MIR.
FailureOr<lir::EntryOp> convertFuncToLIR(RewriterBase &rewriter,
                                         func::FuncOp func,
                                         const MIRToLIROptions &options);

} // namespace rlx
} // namespace mlir

#endif // RLX_CONVERSION_MIRTOLIR_MIRTOLIR_H
