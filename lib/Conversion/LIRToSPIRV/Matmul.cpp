//===- Matmul.cpp - GEMM GPU kernels --------------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mir.matmul, mir.batch_matmul and mir.fused_matmul.
//
// GEMM: a 16x16 workgroup (16x8 on devices limited to 128 invocations)
// computes a (16*RM)x(16*RN) output tile (RM, RN in {1, 2, 4}, chosen from M
// and N), each thread an RMxRN register tile strided by the workgroup's
// extent so that workgroup-memory reads are conflict-free and output writes
// coalesce. K advances in steps of 16: the workgroup stages the A and B
// tiles in workgroup memory (each thread loads along whichever dimension of
// the operand is contiguous), synchronizes, and accumulates (unrolled).
// Leading dims of a matmul fold into M when the views allow it, otherwise
// they are the z dimension of the launch.
//
// GEMV (M <= 4, one batch: decode steps): with an [N, K] weight, a group
// of min(64, K / 16) threads reduces each output column over K (consecutive
// reads of a weight row), 64 / group columns per workgroup; with a [K, N]
// weight each thread owns a column.
//
// The fused epilogue (bias, activation, residual, the compute type's
// rounding) is applied before the store.
//
//===----------------------------------------------------------------------===//

#include "GPUKernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/bit.h"
#include <algorithm>

using namespace mlir;
using namespace mlir::rlx;

namespace {
/// A logical matrix (rows x cols) inside a view, with optional leading
/// (batch) dims.
struct Matrix {
  GPUView view;
  /// Stored as [cols, rows].
  bool transposed = false;
  /// Number of leading dims indexed by the batch coordinates.
  int64_t lead = 0;

  int64_t rowStride() const {
    return view.strides[view.rank() - (transposed ? 1 : 2)];
  }
  int64_t colStride() const {
    return view.strides[view.rank() - (transposed ? 2 : 1)];
  }
  SmallVector<Value> indices(ArrayRef<Value> batch, Value r, Value c) const {
    SmallVector<Value> idx(batch.take_back(lead));
    if (transposed) {
      idx.push_back(c);
      idx.push_back(r);
    } else {
      idx.push_back(r);
      idx.push_back(c);
    }
    return idx;
  }
  /// Elements as f32 (a weight stored as f16 is widened; bf16 and ggml
  /// blocks load as f32).
  Value load(GPUKernelEmitter &e, ArrayRef<Value> batch, Value r,
             Value c) const {
    return e.castValue(e.load(view, indices(batch, r, c)), e.b.getF32Type());
  }
  Value loadOr(GPUKernelEmitter &e, ArrayRef<Value> batch, Value r, Value c,
               Value inBounds, Value fallback) const {
    return e.loadOr(view, indices(batch, r, c), inBounds, fallback);
  }
};
} // namespace

/// True when the leading dims of `v` fold into its second-to-last dim.
static bool rowsCollapse(const GPUView &v) {
  for (int64_t d = 0; d + 2 < v.rank(); ++d)
    if (v.shape[d] != 1 && v.strides[d] != v.strides[d + 1] * v.shape[d + 1])
      return false;
  return true;
}

/// `v` as a 2-D view, its leading dims folded into the rows.
static GPUView collapseRows(const GPUView &v) {
  GPUView r = v;
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < v.rank(); ++d)
    rows *= v.shape[d];
  r.shape = {rows, v.shape.back()};
  r.strides = {v.strides[v.rank() - 2], v.strides.back()};
  return r;
}

namespace {
struct Epilogue {
  GPUView bias;
  bool hasBias = false;
  Matrix residual;
  bool hasResidual = false;
  Activation act = Activation::None;
  /// round_to: the compute type the result is rounded to (kept as f32).
  Type roundTo;

  Value apply(GPUKernelEmitter &e, ArrayRef<Value> batch, Value m, Value n,
              Value v) const {
    return e.gemmEpilogue(v, hasBias ? e.load(bias, {n}) : Value(), act,
                          hasResidual ? residual.load(e, batch, m, n) : Value(),
                          roundTo);
  }
};
} // namespace

static void emitTiledGemm(GPUKernelEmitter &e, const Matrix &a, const Matrix &b,
                          const Matrix &c, const Epilogue &epi,
                          ArrayRef<int64_t> batchShape, int64_t m, int64_t n,
                          int64_t k) {
  Type elt = c.view.elementType;
  // 16x16 threads; 16x8 on devices limited to 128 invocations.
  constexpr int64_t kThreadsX = 16, kTileK = 16;
  int64_t threadsY = e.target.maxInvocations >= 256 ? 16 : 8;
  int64_t threads = kThreadsX * threadsY;
  int64_t rm = m >= 64 ? 4 : (m >= 32 ? 2 : 1);
  int64_t rn = n >= 64 ? 4 : (n >= 32 ? 2 : 1);
  int64_t tm = threadsY * rm, tn = kThreadsX * rn;
  int64_t batch = 1;
  for (int64_t d : batchShape)
    batch *= d;
  e.workgroupSize = {kThreadsX, threadsY, 1};
  e.numWorkgroups = {(n + tn - 1) / tn, (m + tm - 1) / tm, batch};

  Value as = e.sharedAlloc({kTileK, tm}, elt);
  Value bs = e.sharedAlloc({kTileK, tn}, elt);
  Value tx = e.threadId(0), ty = e.threadId(1);
  Value t = e.add(e.mulConst(ty, kThreadsX), tx);
  Value m0 = e.mulConst(e.workgroupId(1), tm);
  Value n0 = e.mulConst(e.workgroupId(0), tn);
  SmallVector<Value> bc = e.delinearize(e.workgroupId(2), batchShape);
  Value zero = e.constant(0.0, elt);
  Value mBound = e.index(m), nBound = e.index(n), kBound = e.index(k);

  // Stages rows x kTileK (A) or kTileK x cols (B) of an operand: each thread
  // loads `count / threads` elements along the operand's contiguous dim.
  auto stage = [&](const Matrix &mat, Value tile, Value k0, Value base,
                   int64_t extent, Value bound, bool isA) {
    bool kFast = (isA ? mat.colStride() : mat.rowStride()) == 1;
    int64_t count = extent * kTileK;
    for (int64_t r = 0; r < count / threads; ++r) {
      Value idx = e.addConst(t, r * threads);
      Value kk, xx;
      if (kFast) {
        xx = e.divConst(idx, kTileK);
        kk = e.remConst(idx, kTileK);
      } else {
        kk = e.divConst(idx, extent);
        xx = e.remConst(idx, extent);
      }
      Value gx = e.add(base, xx), gk = e.add(k0, kk);
      Value ok = e.andI(e.cmpLT(gx, bound), e.cmpLT(gk, kBound));
      Value v = isA ? mat.loadOr(e, bc, gx, gk, ok, zero)
                    : mat.loadOr(e, bc, gk, gx, ok, zero);
      e.storeLocal(v, tile, {kk, xx});
    }
  };

  SmallVector<Value> init(rm * rn, zero);
  SmallVector<Value> acc = e.forLoop(
      e.index(0), kBound, kTileK, init,
      [&](Value k0, ValueRange it) -> SmallVector<Value> {
        stage(a, as, k0, m0, tm, mBound, /*isA=*/true);
        stage(b, bs, k0, n0, tn, nBound, /*isA=*/false);
        e.barrier();
        // The 16 steps of the tile, unrolled: the accumulators stay in
        // registers and the shared-memory reads are independent.
        SmallVector<Value> next(it.begin(), it.end());
        for (int64_t kk = 0; kk < kTileK; ++kk) {
          Value kv = e.index(kk);
          SmallVector<Value> av, bv;
          for (int64_t i = 0; i < rm; ++i)
            av.push_back(e.loadLocal(as, {kv, e.addConst(ty, i * threadsY)}));
          for (int64_t j = 0; j < rn; ++j)
            bv.push_back(e.loadLocal(bs, {kv, e.addConst(tx, j * kThreadsX)}));
          for (int64_t i = 0; i < rm; ++i)
            for (int64_t j = 0; j < rn; ++j)
              next[i * rn + j] = e.addF(next[i * rn + j], e.mulF(av[i], bv[j]));
        }
        e.barrier();
        return next;
      });

  for (int64_t i = 0; i < rm; ++i) {
    Value gm = e.add(m0, e.addConst(ty, i * threadsY));
    for (int64_t j = 0; j < rn; ++j) {
      Value gn = e.add(n0, e.addConst(tx, j * kThreadsX));
      e.ifThen(e.andI(e.cmpLT(gm, mBound), e.cmpLT(gn, nBound)), [&] {
        Value v = epi.apply(e, bc, gm, gn, acc[i * rn + j]);
        e.store(v, c.view, c.indices(bc, gm, gn));
      });
    }
  }
}

static void emitGemv(GPUKernelEmitter &e, const Matrix &a, const Matrix &b,
                     const Matrix &c, const Epilogue &epi,
                     ArrayRef<int64_t> batchShape, int64_t m, int64_t n,
                     int64_t k) {
  Type elt = c.view.elementType;
  // One batch: every leading coordinate is 0.
  SmallVector<Value> bc(batchShape.size(), e.index(0));
  Value zero = e.constant(0.0, elt);
  SmallVector<Value> init(m, zero);
  if (b.rowStride() == 1) {
    // [N, K] weights: `lanes` threads reduce one column over K (reading
    // consecutive elements of a weight row), 64 / lanes columns per
    // workgroup; the lanes meet in a tree reduction in workgroup memory.
    constexpr int64_t kThreads = 64;
    int64_t lanes = std::clamp<int64_t>(
        static_cast<int64_t>(llvm::bit_floor(
            static_cast<uint64_t>(std::max<int64_t>(k / 16, 1)))),
        1, kThreads);
    int64_t cols = kThreads / lanes;
    Value scratch = e.sharedAlloc({m, kThreads}, elt);
    e.forEachWorkgroupItem(
        (n + cols - 1) / cols, kThreads, [&](Value group, Value tid) {
          Value lane = e.remConst(tid, lanes);
          Value col = e.add(e.mulConst(group, cols), e.divConst(tid, lanes));
          Value valid = e.cmpLTConst(col, n);
          Value safeCol = e.minIndex(col, e.index(n - 1));
          SmallVector<Value> part = e.forLoop(
              lane, e.index(k), lanes, init,
              [&](Value kk, ValueRange it) -> SmallVector<Value> {
                Value w = b.load(e, bc, kk, safeCol);
                SmallVector<Value> out;
                for (int64_t i = 0; i < m; ++i)
                  out.push_back(
                      e.addF(it[i], e.mulF(a.load(e, bc, e.index(i), kk), w)));
                return out;
              });
          for (int64_t i = 0; i < m; ++i)
            e.storeLocal(part[i], scratch, {e.index(i), tid});
          e.barrier();
          for (int64_t s = lanes / 2; s >= 1; s /= 2) {
            e.ifThen(e.cmpLTConst(lane, s), [&] {
              for (int64_t i = 0; i < m; ++i) {
                Value row = e.index(i);
                Value other = e.loadLocal(scratch, {row, e.addConst(tid, s)});
                Value mine = e.loadLocal(scratch, {row, tid});
                e.storeLocal(e.addF(mine, other), scratch, {row, tid});
              }
            });
            e.barrier();
          }
          Value first = arith::CmpIOp::create(
              e.b, e.loc, arith::CmpIPredicate::eq, lane, e.index(0));
          e.ifThen(e.andI(first, valid), [&] {
            for (int64_t i = 0; i < m; ++i) {
              Value row = e.index(i);
              Value sum = e.loadLocal(scratch, {row, tid});
              e.store(epi.apply(e, bc, row, col, sum), c.view,
                      c.indices(bc, row, col));
            }
          });
          // The next item may overwrite the scratch only after the reads.
          e.barrier();
        });
    return;
  }
  // [K, N] weights: a thread owns a column (coalesced over N).
  e.forEachElement(n, [&](Value col) {
    SmallVector<Value> sums =
        e.forLoop(e.index(0), e.index(k), 1, init,
                  [&](Value kk, ValueRange it) -> SmallVector<Value> {
                    Value w = b.load(e, bc, kk, col);
                    SmallVector<Value> out;
                    for (int64_t i = 0; i < m; ++i)
                      out.push_back(e.addF(
                          it[i], e.mulF(a.load(e, bc, e.index(i), kk), w)));
                    return out;
                  });
    for (int64_t i = 0; i < m; ++i) {
      Value row = e.index(i);
      e.store(epi.apply(e, bc, row, col, sums[i]), c.view,
              c.indices(bc, row, col));
    }
  });
}

LogicalResult mlir::rlx::emitGPUMatmulKernel(GPUKernelEmitter &e, Operation *op,
                                             ArrayRef<GPUView> ins,
                                             const GPUView &out) {
  const GPUView &lhs = ins[0], &rhs = ins[1];
  if (lhs.isScalar() || rhs.isScalar())
    return op->emitOpError("expects tensor operands on the SPIR-V back end");
  bool transA = op->hasAttr("transpose_lhs");
  bool transB = op->hasAttr("transpose_rhs");
  // A weight kept as stored ([N, K]: f16, or bf16 and ggml blocks decoded
  // by the loads) multiplies f32 rows.
  bool storedRhs = transB && rhs.rank() == 2 &&
                   (rhs.elementType.isF16() ||
                    GPUKernelEmitter::isWordDecoded(rhs.elementType));
  if (!out.elementType.isF32() || !lhs.elementType.isF32() ||
      (!rhs.elementType.isF32() && !storedRhs))
    return op->emitOpError("the SPIR-V back end multiplies f32 matrices (or "
                           "f32 rows by an [N, K] weight stored as f16, bf16 "
                           "or ggml blocks) only, got ")
           << rhs.elementType;
  bool batched = isa<mir::BatchMatmulOp>(op);
  int64_t rank = out.rank();
  int64_t m = out.shape[rank - 2], n = out.shape[rank - 1];
  int64_t k = lhs.shape[lhs.rank() - (transA ? 2 : 1)];

  Epilogue epi;
  if (auto fused = dyn_cast<mir::FusedMatmulOp>(op)) {
    unsigned next = 2;
    if (fused.getBias()) {
      epi.bias = ins[next++];
      epi.hasBias = true;
    }
    if (fused.getResidual()) {
      epi.residual.view = ins[next++];
      epi.hasResidual = true;
    }
    epi.act = fused.getActivation();
    epi.roundTo = fused.getRoundTo().value_or(Type());
    if (epi.bias.isScalar() && epi.hasBias)
      return op->emitOpError("expects a tensor bias");
    if (epi.hasResidual && epi.residual.view.isScalar())
      return op->emitOpError("expects a tensor residual");
  }

  Matrix a{lhs, transA, lhs.rank() - 2}, b{rhs, transB, rhs.rank() - 2},
      c{out, false, rank - 2};
  SmallVector<int64_t> batchShape(out.shape.begin(), out.shape.end() - 2);
  // Fold the leading dims of a plain matmul into M when every view allows.
  if (!batched && !transA && rank > 2 && rowsCollapse(lhs) &&
      rowsCollapse(out) &&
      (!epi.hasResidual || rowsCollapse(epi.residual.view))) {
    for (int64_t d : batchShape)
      m *= d;
    batchShape.clear();
    a = Matrix{collapseRows(lhs), false, 0};
    c = Matrix{collapseRows(out), false, 0};
    if (epi.hasResidual)
      epi.residual.view = collapseRows(epi.residual.view);
  }
  epi.residual.lead = c.lead = batchShape.size();
  if (!batched)
    b.lead = 0;

  int64_t batch = 1;
  for (int64_t d : batchShape)
    batch *= d;
  if (batch > e.target.maxWorkgroups || (m + 15) / 16 > e.target.maxWorkgroups)
    return op->emitOpError("is too large for one SPIR-V dispatch");
  if (batch == 1 && m <= 4) {
    emitGemv(e, a, b, c, epi, batchShape, m, n, k);
    return success();
  }
  emitTiledGemm(e, a, b, c, epi, batchShape, m, n, k);
  return success();
}
