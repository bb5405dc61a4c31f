//===- Transforms.h - LIR transformations ----------------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The decisions made on LIR before code generation, each callable on one
// entry: the arena plan (liveness, in-place reuse, offsets), the packing of
// GEMM weights, the fusion of a GEMM with the GLU that reads it, and the
// choice of each kernel's lowering strategy. The passes of Passes.td are thin
// shells around these functions.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_LIR_TRANSFORMS_TRANSFORMS_H
#define RLX_DIALECT_LIR_TRANSFORMS_TRANSFORMS_H

#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <cstdint>

namespace mlir {
class Operation;
} // namespace mlir

namespace mlir::rlx::mir {
class AttentionOp;
} // namespace mlir::rlx::mir

namespace mlir::rlx::lir {

class EntryOp;
class KernelOp;

//===----------------------------------------------------------------------===//
// Arena planning
//===----------------------------------------------------------------------===//

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
/// largest buffers first. Offsets are multiples of `alignment`. Sums
/// saturate at 2^63 - 1 (INT64_MAX): an arenaBytes that large means the
/// buffers do not fit in any arena.
ArenaStats planArena(MutableArrayRef<PlannedBuffer> buffers, int64_t alignment);

struct ArenaPlanOptions {
  /// Let an elementwise kernel write its result over an input buffer it is
  /// the last to read (same byte size, not an input or output of the
  /// entry), and a concat keep its first operand where it lies in the result
  /// (see lir-plan-arena).
  bool inplace = true;
};

/// Plans the unplanned buffers (`lir.alloc`) of `entry`: computes each
/// buffer's live range over the schedule (from the kernel that writes it, or
/// the start for inputs, to the last kernel that reads it or a view aliasing
/// it, or the end for outputs), merges in-place candidates (marking their
/// kernels `inplace`), places the buffers with planArena at the entry's
/// alignment, replaces every `lir.alloc` by a `lir.view arena[offset]`,
/// rebases the views that alias them and sets `arena_size`. An entry without
/// `lir.alloc` is left as it is (`stats` is then empty). Fails with a
/// diagnostic on a buffer that no kernel writes and no input provides.
LogicalResult planEntryArena(EntryOp entry, const ArenaPlanOptions &options,
                             ArenaStats *stats = nullptr);

//===----------------------------------------------------------------------===//
// Weight packing
//===----------------------------------------------------------------------===//

/// True when operand `operand` of `kernel` can be a weight stored nk16 for
/// the generated GEMM: the right-hand side of a transposed f32 matmul (or
/// fused matmul) with N a multiple of 16, whose other operands do not alias
/// it. Only properties of the weight and the op decide, so graphs sharing a
/// parameter pool agree on the layout.
bool isPackableGemmWeight(KernelOp kernel, unsigned operand);

/// Whether the kernel reading operand `operand` of `kernel` (a micro-kernel
/// matmul or a dequantizing gather) reads it interleaved (layout x8): a q4_0,
/// q8_0, q4_K or q6_K `[N, K]` weight, N a multiple of 8, that is only the
/// right-hand side of a transposed matmul (or fused matmul) or only the table
/// of an axis-0 gather (a tied embedding: the runtime dequantizes its rows from
/// their groups). Only properties of the weight and the op decide.
bool isInterleavableWeight(KernelOp kernel, unsigned operand);

/// With `nk16`, sets `layout = #lir.layout<nk16>` on every f32 param of
/// `entry` that some kernel reads and every reader accepts packed
/// (isPackableGemmWeight; no view aliases it; a derived param concatenated
/// along N with every source a multiple of 16). With `x8`, sets
/// `layout = #lir.layout<x8>` on every q4_0, q8_0, q4_K, q5_K, q6_K, f16 or
/// bf16 param that every reader accepts interleaved (isInterleavableWeight; no
/// alias; sources concatenated along N, each a multiple of 8).
void packGemmParams(EntryOp entry, bool nk16 = true, bool x8 = false);

//===----------------------------------------------------------------------===//
// GLU GEMM fusion
//===----------------------------------------------------------------------===//

/// The rounding the GEMM of a GLU-GEMM kernel applies to gate and up: a
/// null type for a mir.matmul, the `round_to` of a mir.fused_matmul with
/// no bias, residual or activation (null without one); nullopt for any
/// other op, which the fused kernel cannot compute.
std::optional<Type> getGluGemmRounding(Operation *gemm);

/// True when `glu` (a mir.fused_glu kernel) directly follows `matmul` (a
/// mir.matmul kernel, or a mir.fused_matmul that at most rounds
/// (getGluGemmRounding), whose weight is stored nk16), reads only its
/// result, and nothing else reads that result.
bool isFusableGluGemm(EntryOp entry, KernelOp matmul, KernelOp glu);

/// Replaces the two kernels by one `matmul_glu` kernel of strategy
/// `glu_gemm`: ins of the matmul, outs ([gate | up], the GLU's result), a
/// body holding both ops. Marks it `inplace` when the GLU's result shares
/// bytes with the matmul's left operand (dead after it).
KernelOp fuseGluGemm(KernelOp matmul, KernelOp glu);

//===----------------------------------------------------------------------===//
// Lowering strategies
//===----------------------------------------------------------------------===//

/// The generated GEMM's base register tile: rows, 16-lane column vectors and
/// K block (0: all of K), from the profile or the pass options.
struct GemmTile {
  int64_t mr = 8, nv = 2, kc = 256;
};

/// Row tiles (of `mr` rows) per row block of a generated GEMM of M rows:
/// blocks of about 256 rows, of even sizes, whose packed K block of A stays
/// in L2.
int64_t gemmRowBlockTiles(int64_t m, int64_t mr);

/// The row blocks of gemmRowBlockTiles(m, mr) tiles covering M's whole row
/// tiles (at least one).
int64_t gemmRowBlocks(int64_t m, int64_t mr);

/// The tile [mr, nv, kc] or [mr, nv, kc, nc] of a generated GEMM of M rows,
/// depth K and N columns (for a GLU GEMM, `n` counts the gate columns):
/// decode-like GEMMs (M <= mr) take one row tile, stream each weight once and
/// keep K whole. A GLU GEMM's (`glu`) nv is even (gate and up vectors in
/// pairs, the GLU applied in registers) or 1 (gate and up strips in turn).
/// When a row block of A over all of K (rows x K x 4 bytes) passes 3 MiB,
/// more than a core's share of L3 keeps while every column block reads it
/// again, the K blocks run outermost over chunks of nc column blocks (up to
/// 16; at least 16 chunks over the row blocks) that share each K block of A
/// in L2. The GLU GEMM with strips keeps the column-block order.
SmallVector<int64_t, 4> selectGemmTile(int64_t m, int64_t k, int64_t n,
                                       bool glu, const GemmTile &base);

/// Whether the CPU code generator lowers `op` (in a kernel's body) as the
/// blocked attention: a head dim that is a multiple of 16 and no mask or a
/// 2-D one of at least 8-bit elements; else one key at a time.
bool isBlockedAttention(mir::AttentionOp op);

/// The blocked attention's tile [heads, query positions] for `group` query
/// heads per KV head, head dim `headDim` and `rows` register rows (0: as
/// many as `accumulators` accumulator vectors of 16 lanes hold, at least 1
/// and at most 4): the largest divisor of the group up to `rows` heads, times
/// the positions that fill the rows left (at least one). 16 accumulators
/// suit 32 vector registers of 16 lanes (AVX-512), 4 suit 16 of 8 lanes
/// (AVX2: one row of head dim 64 takes 8 of them).
SmallVector<int64_t, 2> selectAttentionTile(int64_t headDim, int64_t group,
                                            int64_t rows,
                                            int64_t accumulators = 16);

/// Annotates the kernels of `entry` for the CPU: matmuls over an nk16
/// weight `#lir.config<gemm_generated, tile = ...>`, other matmuls
/// `#lir.config<gemm_blas>`, GLU GEMMs their tile, blocked attention its
/// tile of `attentionRows` rows (0: selectAttentionTile's default for
/// `attentionAccumulators`).
void selectCPUStrategies(EntryOp entry, const GemmTile &base,
                         int64_t attentionRows = 0,
                         int64_t attentionAccumulators = 16);

} // namespace mlir::rlx::lir

#endif // RLX_DIALECT_LIR_TRANSFORMS_TRANSFORMS_H
