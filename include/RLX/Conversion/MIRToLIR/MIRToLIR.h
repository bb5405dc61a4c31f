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

/// A buffer to place: `size` bytes live over the kernels [start, end]
/// (inclusive; start -1 for inputs, end INT64_MAX for outputs).
struct PlannedBuffer {
  int64_t size = 0;
  int64_t start = 0;
  int64_t end = 0;
  /// Filled in by planArena.
  int64_t offset = -1;
};

/// What a plan costs.
struct ArenaStats {
  /// Bytes of the arena.
  int64_t arenaBytes = 0;
  /// Bytes if every buffer had its own storage.
  int64_t naiveBytes = 0;
  /// The largest sum of simultaneously live buffer sizes (a lower bound).
  int64_t peakLiveBytes = 0;
};

/// Places `buffers` in one arena: buffers whose live ranges intersect never
/// overlap; among the gaps that fit, the smallest is taken (best fit),
/// largest buffers first. Offsets are multiples of `alignment`.
ArenaStats planArena(MutableArrayRef<PlannedBuffer> buffers, int64_t alignment);

/// Rewrites the fused MIR ops that the CPU runs as a sequence of kernels
/// (mir.attention_block: QKV GEMM, slices, QK-norm, RoPE, attention, output
/// GEMM) into that sequence.
void populateExpandFusedForCPUPatterns(RewritePatternSet &patterns);

struct MIRToLIROptions {
  int64_t alignment = 64;
  bool inplace = true;
};

/// Converts one MIR function on static shapes into an `lir.entry` of the same
/// name, inserted before it; the function is erased. Emits an error and
/// fails on dynamic shapes or ops that are not MIR.
FailureOr<lir::EntryOp> convertFuncToLIR(RewriterBase &rewriter,
                                         func::FuncOp func,
                                         const MIRToLIROptions &options,
                                         ArenaStats *stats = nullptr);

} // namespace rlx
} // namespace mlir

#endif // RLX_CONVERSION_MIRTOLIR_MIRTOLIR_H
