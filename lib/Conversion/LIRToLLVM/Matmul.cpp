//===- Matmul.cpp - GEMM CPU kernels --------------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mir.matmul, mir.batch_matmul and mir.fused_matmul, two ways:
//
// - Generated: when the right-hand side is a weight the runtime packed at
//   load time into panels of 16 rows (`[N/16][K][16]`, "nk16"), the kernel
//   packs the rows of A into the scratch buffer (`[M/MR][K][MR]`), then
//   threads claim chunks of columns; each register tile of MR rows by
//   NV x 16 columns accumulates in vector<16xf32> registers over a K block
//   with one FMA per (row, vector) and k (AVX-512 on hosts that have it).
//   Bias, activation, residual and the compute type's rounding (`round_to`)
//   are applied to the registers before the single store (the epilogue is
//   fused into the GEMM). With M <= MR
//   (decode) A is read in place and each weight is streamed once.
// - BLAS: cblas_sgemm on the views (leading dims collapsed into M when the
//   layout allows, one call per batch otherwise), the columns split between
//   threads (OpenBLAS runs single-threaded under the runtime's pool); the
//   epilogue is a vectorized pass over the output rows. A residual without
//   an activation is folded into the GEMM (C = residual, beta = 1).
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/LIR/Transforms/Transforms.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/UKernels/UKernels.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::rlx;

/// A 2-D view of `m` at the leading indices `lead` (rank-reduced subview).
static Value matrixAt(KernelEmitter &e, Value m, ValueRange lead) {
  auto ty = cast<MemRefType>(m.getType());
  int64_t rank = ty.getRank();
  if (lead.empty() && rank == 2)
    return m;
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (int64_t d = 0; d < rank; ++d) {
    strides.push_back(e.b.getIndexAttr(1));
    if (d < rank - 2) {
      offsets.push_back(lead[d]);
      sizes.push_back(e.b.getIndexAttr(1));
    } else {
      offsets.push_back(e.b.getIndexAttr(0));
      sizes.push_back(e.b.getIndexAttr(ty.getDimSize(d)));
    }
  }
  auto resultTy = memref::SubViewOp::inferRankReducedResultType(
      {ty.getDimSize(rank - 2), ty.getDimSize(rank - 1)}, ty, offsets, sizes,
      strides);
  return memref::SubViewOp::create(e.b, e.loc, cast<MemRefType>(resultTy), m,
                                   offsets, sizes, strides);
}

/// The leading dimensions ([..., R] of [..., R, C]) of size above 1, outer
/// first: unit dimensions place no rows, so their strides do not matter.
static SmallVector<int64_t> rowDims(MemRefType ty) {
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d + 1 < ty.getRank(); ++d)
    if (ty.getDimSize(d) != 1)
      dims.push_back(d);
  return dims;
}

/// Whether the leading dimensions of `ty` collapse into one row index whose
/// stride is the matrix's leading dimension (s[rank - 2]).
static bool rowsCollapse(MemRefType ty) {
  SmallVector<int64_t> s;
  int64_t offset;
  if (failed(ty.getStridesAndOffset(s, offset)))
    return false;
  SmallVector<int64_t> dims = rowDims(ty);
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    int64_t outer = dims[i], inner = dims[i + 1];
    if (ShapedType::isDynamic(s[outer]) || ShapedType::isDynamic(s[inner]) ||
        s[outer] != s[inner] * ty.getDimSize(inner))
      return false;
  }
  return dims.empty() || s[dims.back()] == s[ty.getRank() - 2];
}
static bool rowsCollapse(Value m) {
  return rowsCollapse(cast<MemRefType>(m.getType()));
}

/// The leading dimension (row stride) of a matrix view, 0 if unsupported.
static int64_t leadingDim(MemRefType ty) {
  SmallVector<int64_t> s;
  int64_t offset;
  if (ty.getRank() < 2 || failed(ty.getStridesAndOffset(s, offset)) ||
      s.back() != 1 || ShapedType::isDynamic(s[s.size() - 2]))
    return 0;
  return s[s.size() - 2];
}
static int64_t leadingDim(Value m) {
  return leadingDim(cast<MemRefType>(m.getType()));
}

/// `m` ([..., R, C], rows collapsible) as a 2-D [rows, C] memref with its row
/// stride.
static Value asMatrix(KernelEmitter &e, Value m) {
  auto ty = cast<MemRefType>(m.getType());
  int64_t rows = 1;
  for (int64_t d : ty.getShape().drop_back())
    rows *= d;
  int64_t cols = ty.getShape().back();
  auto layout =
      StridedLayoutAttr::get(e.b.getContext(), 0, {leadingDim(ty), 1});
  return e.reinterpret(
      m, MemRefType::get({rows, cols}, ty.getElementType(), layout));
}

//===----------------------------------------------------------------------===//
// The generated GEMM
//===----------------------------------------------------------------------===//

namespace {
/// What a GEMM applies to its sums as it stores them, in this order:
/// round(act(sum + bias) + residual), each step optional.
struct Epilogue {
  Value bias, residual;
  Activation act = Activation::None;
  /// round_to: the compute type the result is rounded to (kept as f32).
  Type roundTo;

  bool empty() const {
    return !bias && !residual && act == Activation::None && !roundTo;
  }
  /// The epilogue of `op` (a mir.fused_matmul; none for other matmuls),
  /// whose bias and residual are `ins` from index 2 on.
  static Epilogue of(Operation *op, ArrayRef<KernelInput> ins) {
    Epilogue epi;
    auto fused = dyn_cast<mir::FusedMatmulOp>(op);
    if (!fused)
      return epi;
    unsigned next = 2;
    if (fused.getBias())
      epi.bias = ins[next++].memref;
    if (fused.getResidual())
      epi.residual = ins[next++].memref;
    epi.act = fused.getActivation();
    epi.roundTo = fused.getRoundTo().value_or(Type());
    return epi;
  }
};

/// C[M, N] = epilogue(A[M, K] * W[N, K]^T) with W packed as [N/16][K][16].
struct PackedGemm {
  KernelEmitter &e;
  OpBuilder &b;
  Location loc;
  int64_t m, n, k;
  int64_t mr, nv, kc, unroll;
  Value a; // [M, K] (row stride lda), or A itself ([..., M, K]) when its
           // rows do not collapse (then `aRows` delinearizes a row)
  bool aGeneral = false;
  Value ap; // packed A, 1-D, or null (read A in place)
  Value bp; // [N/16, K, 16]
  Value c;  // [M, N]
  /// With a GLU only its activation and rounding apply (to gate and up).
  Epilogue epi;
  /// GLU epilogue: C holds [gate | up] and the kernel writes
  /// glu[m, j] = round(act(gate[m, j]) * up[m, j]) for j < n / 2, with gate
  /// and up rounded by `epi.roundTo` and the product by `gluRound`, the
  /// GLU's own round_to. With an even `nv`
  /// a register tile holds nv / 2 gate and the matching up vectors and
  /// applies the GLU in registers (C keeps partial sums only); with nv = 1
  /// (a tile too small to hold both: AVX2's 16 registers) the gate strip and
  /// the up strip are computed in turn and the GLU reads them back while they
  /// are in cache.
  Value glu;
  Type gluRound;
  bool gluInRegisters() const { return glu && nv % 2 == 0; }

  /// The GLU of a gate and an up vector (their sums), rounded as the GLU
  /// and the GEMM before it would round them.
  Value gluOf(Value gate, Value up) {
    return e.gluProduct(epi.act, e.roundTo(gate, epi.roundTo),
                        e.roundTo(up, epi.roundTo), gluRound);
  }

  /// Column blocks per chunk sharing each K block (the tile's fourth size;
  /// 0: each column block over all K blocks in turn).
  int64_t nc = 0;
  /// Whether the K blocks run outside the column blocks of a chunk.
  bool kOuter = false;

  Value idx(int64_t v) { return e.index(v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }

  /// A[row, kk], row counted over the collapsed leading dims.
  Value loadA(Value row, Value kk) {
    if (!aGeneral)
      return memref::LoadOp::create(b, loc, a, ValueRange{row, kk});
    ArrayRef<int64_t> shape = cast<MemRefType>(a.getType()).getShape();
    SmallVector<Value> ivs(shape.size());
    ivs.back() = kk;
    for (int64_t d = shape.size() - 2; d >= 0; --d) {
      if (d == 0) {
        ivs[d] = row;
        break;
      }
      ivs[d] = arith::RemUIOp::create(b, loc, row, idx(shape[d]));
      row = arith::DivUIOp::create(b, loc, row, idx(shape[d]));
    }
    return memref::LoadOp::create(b, loc, a, ivs);
  }

  /// Packs rows [m0, m0 + rows) of A as [K][rows] at `base` of the scratch.
  void packBlock(Value m0, int64_t rows, Value base) {
    e.loopNest({k}, [&](ValueRange kv) {
      Value dst = add(base, mul(kv[0], idx(rows)));
      for (int64_t i = 0; i < rows; ++i) {
        Value v = loadA(add(m0, idx(i)), kv[0]);
        memref::StoreOp::create(b, loc, v, ap, ValueRange{add(dst, idx(i))});
      }
    });
  }

  /// One register tile: rows [m0, m0 + rows), the 16-column vectors at
  /// `cols`, over k in [k0, k1). `aBase` is the tile's packed A (with ap) or
  /// unused.
  void tile(Value m0, int64_t rows, Value aBase, ArrayRef<Value> cols, Value k0,
            Value k1, Value first, Value last) {
    auto vecTy = VectorType::get({16}, b.getF32Type());
    int64_t vecs = cols.size();
    SmallVector<Type> accTypes(rows * vecs, vecTy);
    SmallVector<Value> panels;
    for (Value col : cols)
      panels.push_back(
          arith::DivUIOp::create(b, loc, col, idx(16)).getResult());
    SmallVector<Value> rowIdx;
    for (int64_t i = 0; i < rows; ++i)
      rowIdx.push_back(add(m0, idx(i)));

    // Accumulators: zero on the first K block, else the partial sums in C.
    SmallVector<Value> init = e.ifThenElse(
        first, accTypes,
        [&] {
          Value zero = arith::ConstantOp::create(
              b, loc, DenseElementsAttr::get(vecTy, b.getF32FloatAttr(0)));
          return SmallVector<Value>(rows * vecs, zero);
        },
        [&] {
          SmallVector<Value> loaded;
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t v = 0; v < vecs; ++v)
              loaded.push_back(vector::LoadOp::create(
                  b, loc, vecTy, c, ValueRange{rowIdx[i], cols[v]}));
          return loaded;
        });

    auto loop = scf::ForOp::create(
        b, loc, k0, k1, idx(unroll), init,
        [&](OpBuilder &, Location, Value kk, ValueRange accs) {
          SmallVector<Value> acc(accs);
          for (int64_t u = 0; u < unroll; ++u) {
            Value ku = u ? add(kk, idx(u)) : kk;
            SmallVector<Value> bv;
            for (int64_t v = 0; v < vecs; ++v)
              bv.push_back(vector::LoadOp::create(
                  b, loc, vecTy, bp, ValueRange{panels[v], ku, idx(0)}));
            Value aRow = ap ? add(aBase, mul(ku, idx(rows))) : Value();
            for (int64_t i = 0; i < rows; ++i) {
              Value s = ap ? memref::LoadOp::create(
                                 b, loc, ap, ValueRange{add(aRow, idx(i))})
                                 .getResult()
                           : loadA(rowIdx[i], ku);
              Value sv = vector::BroadcastOp::create(b, loc, vecTy, s);
              for (int64_t v = 0; v < vecs; ++v)
                acc[i * vecs + v] =
                    vector::FMAOp::create(b, loc, sv, bv[v], acc[i * vecs + v]);
            }
          }
          scf::YieldOp::create(b, loc, acc);
        });

    // Store: the epilogue on the last K block, the partial sums otherwise.
    auto storeAll = [&](bool epilogue) {
      if (gluInRegisters() && epilogue) {
        int64_t half = vecs / 2;
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t v = 0; v < half; ++v) {
            Value x = gluOf(loop.getResult(i * vecs + v),
                            loop.getResult(i * vecs + half + v));
            vector::StoreOp::create(b, loc, x, glu,
                                    ValueRange{rowIdx[i], cols[v]});
          }
        return;
      }
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t v = 0; v < vecs; ++v) {
          Value x = loop.getResult(i * vecs + v);
          if (epilogue) {
            Value bias, residual;
            if (epi.bias)
              bias = vector::LoadOp::create(b, loc, vecTy, epi.bias,
                                            ValueRange{cols[v]});
            if (epi.residual)
              residual = vector::LoadOp::create(b, loc, vecTy, epi.residual,
                                                ValueRange{rowIdx[i], cols[v]});
            x = e.gemmEpilogue(x, bias, epi.act, residual, epi.roundTo);
          }
          vector::StoreOp::create(b, loc, x, c, ValueRange{rowIdx[i], cols[v]});
        }
    };
    bool plain = glu ? !gluInRegisters() : epi.empty();
    if (plain || kc >= k) {
      storeAll(!plain);
      return;
    }
    scf::IfOp::create(
        b, loc, last,
        [&](OpBuilder &, Location) {
          storeAll(true);
          scf::YieldOp::create(b, loc);
        },
        [&](OpBuilder &, Location) {
          storeAll(false);
          scf::YieldOp::create(b, loc);
        });
  }

  /// One K block [k0, k1) of A's columns: whether it is the first (the
  /// accumulators start at zero) and the last (the epilogue applies).
  struct KBlock {
    Value k0, k1, first, last;
  };

  /// Runs `body` on each K block of kc columns, in order.
  void forEachKBlock(function_ref<void(const KBlock &)> body) {
    auto kLoop = scf::ForOp::create(b, loc, idx(0), idx(k), idx(kc));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kLoop.getBody());
    KBlock kb;
    kb.k0 = kLoop.getInductionVar();
    kb.k1 = arith::MinSIOp::create(b, loc, add(kb.k0, idx(kc)), idx(k));
    kb.first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, kb.k0, idx(0));
    kb.last =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, kb.k1, idx(k));
    body(kb);
  }

  /// The row tiles [mbLo, mbHi) (and the tail tile when `withTail`) over the
  /// 16-column vectors at `cols`, for one K block.
  void tiles(ArrayRef<Value> cols, Value mbLo, Value mbHi, Value withTail,
             const KBlock &kb) {
    int64_t mFull = m / mr, mTail = m % mr;
    if (mFull > 0) {
      auto mLoop = scf::ForOp::create(b, loc, mbLo, mbHi, idx(1));
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(mLoop.getBody());
      Value mb = mLoop.getInductionVar();
      Value m0 = mul(mb, idx(mr));
      Value aBase = ap ? mul(mb, idx(mr * k)) : Value();
      tile(m0, mr, aBase, cols, kb.k0, kb.k1, kb.first, kb.last);
    }
    if (mTail > 0) {
      scf::IfOp::create(b, loc, withTail, [&](OpBuilder &, Location) {
        Value aBase = ap ? idx(mFull * mr * k) : Value();
        tile(idx(mFull * mr), mTail, aBase, cols, kb.k0, kb.k1, kb.first,
             kb.last);
        scf::YieldOp::create(b, loc);
      });
    }
  }

  /// glu[r, j] = the GLU of gate[r, j] and up[r, j] over the rows of the tiles
  /// [mbLo, mbHi) (and the tail when `withTail`), for the `vecs` gate vectors
  /// at n0: the strips C holds once their tiles are done.
  void gluStrip(Value n0, int64_t vecs, Value mbLo, Value mbHi,
                Value withTail) {
    auto vecTy = VectorType::get({16}, b.getF32Type());
    Value r1 =
        arith::SelectOp::create(b, loc, withTail, idx(m), mul(mbHi, idx(mr)));
    auto loop = scf::ForOp::create(b, loc, mul(mbLo, idx(mr)), r1, idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value r = loop.getInductionVar();
    for (int64_t v = 0; v < vecs; ++v) {
      Value col = add(n0, idx(16 * v));
      Value gate = vector::LoadOp::create(b, loc, vecTy, c, ValueRange{r, col});
      Value up = vector::LoadOp::create(b, loc, vecTy, c,
                                        ValueRange{r, add(col, idx(n / 2))});
      vector::StoreOp::create(b, loc, gluOf(gate, up), glu, ValueRange{r, col});
    }
  }

  /// One K block of the column block whose first (gate) column is n0,
  /// `vecs` vectors wide: its tiles, and with a GLU the matching up columns.
  void columnBlock(Value n0, int64_t vecs, Value mbLo, Value mbHi,
                   Value withTail, const KBlock &kb) {
    auto columns = [&](Value first, int64_t count) {
      SmallVector<Value> cols;
      for (int64_t v = 0; v < count; ++v)
        cols.push_back(add(first, idx(16 * v)));
      return cols;
    };
    SmallVector<Value> gate = columns(n0, vecs);
    if (!glu)
      return tiles(gate, mbLo, mbHi, withTail, kb);
    SmallVector<Value> up = columns(add(n0, idx(n / 2)), vecs);
    if (gluInRegisters()) {
      gate.append(up);
      return tiles(gate, mbLo, mbHi, withTail, kb);
    }
    // One vector per tile: the gate strip, then the up strip.
    for (int64_t v = 0; v < vecs; ++v) {
      tiles(gate[v], mbLo, mbHi, withTail, kb);
      tiles(up[v], mbLo, mbHi, withTail, kb);
    }
  }

  /// The column blocks [lo, hi) of `vecs` vectors (block j's first gate
  /// column at j * nr) and, with a GLU computed strip by strip, the GLU of
  /// each once its last K block is done. Block by block, each over all K
  /// blocks; or, with kOuter, K block by K block over all the blocks, so that
  /// the K block of A's packed rows stays in L2 while every column block's
  /// tiles read it (their partial sums kept in C in between).
  void columnBlocks(Value lo, Value hi, int64_t nr, int64_t vecs, Value mbLo,
                    Value mbHi, Value withTail) {
    bool gluStrips = glu && !gluInRegisters();
    auto overBlocks = [&](function_ref<void(Value n0)> body) {
      auto loop = scf::ForOp::create(b, loc, lo, hi, idx(1));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      body(mul(loop.getInductionVar(), idx(nr)));
    };
    if (!kOuter)
      return overBlocks([&](Value n0) {
        forEachKBlock([&](const KBlock &kb) {
          columnBlock(n0, vecs, mbLo, mbHi, withTail, kb);
        });
        if (gluStrips)
          gluStrip(n0, vecs, mbLo, mbHi, withTail);
      });
    forEachKBlock([&](const KBlock &kb) {
      overBlocks(
          [&](Value n0) { columnBlock(n0, vecs, mbLo, mbHi, withTail, kb); });
    });
    if (gluStrips)
      overBlocks([&](Value n0) { gluStrip(n0, vecs, mbLo, mbHi, withTail); });
  }

  void emit() {
    // Pack A when it has several row tiles.
    int64_t mFull = m / mr, mTail = m % mr;
    if (ap) {
      e.parallelFor(mFull + (mTail ? 1 : 0), [&](Value mb) {
        if (mFull == 0) {
          packBlock(idx(0), mTail, idx(0));
          return;
        }
        Value isTail = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             mb, idx(mFull));
        scf::IfOp::create(
            b, loc, isTail,
            [&](OpBuilder &, Location) {
              if (mTail)
                packBlock(idx(mFull * mr), mTail, idx(mFull * mr * k));
              scf::YieldOp::create(b, loc);
            },
            [&](OpBuilder &, Location) {
              packBlock(mul(mb, idx(mr)), mr, mul(mb, idx(mr * k)));
              scf::YieldOp::create(b, loc);
            });
      });
    }
    // Column blocks of nv vectors, grouped into chunks; with many rows, also
    // blocks of rows whose packed A stays in L2. Threads claim (row block,
    // column chunk) pairs.
    // With a GLU a block is gate columns (their up columns come with them).
    int64_t gateVecs = gluInRegisters() ? nv / 2 : nv;
    int64_t nr = 16 * gateVecs, cols = glu ? n / 2 : n;
    int64_t blocks = cols / nr, tailVecs = (cols % nr) / 16;
    // Row blocks whose packed K block of A stays in L2.
    int64_t tilesPerRowBlock = lir::gemmRowBlockTiles(m, mr);
    int64_t rowBlocks = lir::gemmRowBlocks(m, mr);
    kOuter = nc > 0 && kc < k;
    int64_t perChunk = kOuter ? nc : std::max<int64_t>(1, (blocks + 63) / 64);
    int64_t fullChunks = (blocks + perChunk - 1) / perChunk;
    int64_t chunks = fullChunks + (tailVecs ? 1 : 0);
    e.parallelFor(rowBlocks * chunks, [&](Value item) {
      Value ch = arith::RemUIOp::create(b, loc, item, idx(chunks));
      Value rb = arith::DivUIOp::create(b, loc, item, idx(chunks));
      Value mbLo = mul(rb, idx(tilesPerRowBlock));
      Value mbHi = arith::MinSIOp::create(
          b, loc, add(mbLo, idx(tilesPerRowBlock)), idx(mFull));
      Value withTail = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             rb, idx(rowBlocks - 1));
      auto body = [&] {
        Value lo = mul(ch, idx(perChunk));
        Value hi =
            arith::MinSIOp::create(b, loc, add(lo, idx(perChunk)), idx(blocks));
        columnBlocks(lo, hi, nr, gateVecs, mbLo, mbHi, withTail);
      };
      if (!tailVecs) {
        body();
        return;
      }
      Value isTail = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ch,
                                           idx(fullChunks));
      scf::IfOp::create(
          b, loc, isTail,
          [&](OpBuilder &, Location) {
            columnBlocks(idx(blocks), idx(blocks + 1), nr, tailVecs, mbLo, mbHi,
                         withTail);
            scf::YieldOp::create(b, loc);
          },
          [&](OpBuilder &, Location) {
            body();
            scf::YieldOp::create(b, loc);
          });
    });
  }
};
} // namespace

static LogicalResult emitPackedGemm(KernelEmitter &e, Value lhs, Value w,
                                    Value out, const Epilogue &epi,
                                    Value glu = nullptr, Type gluRound = {},
                                    bool alwaysPackA = false) {
  OpBuilder &b = e.b;
  auto wTy = cast<MemRefType>(w.getType());
  int64_t n = wTy.getDimSize(0), k = wTy.getDimSize(1);
  PackedGemm g{e, b, e.loc, 0, n, k, 0, 0, 0, 1, {}};
  g.epi = epi;
  g.gluRound = gluRound;
  g.m = cast<MemRefType>(out.getType()).getNumElements() / n;
  if (rowsCollapse(lhs) && leadingDim(lhs)) {
    g.a = asMatrix(e, lhs);
  } else {
    g.a = lhs;
    g.aGeneral = true;
  }
  g.c = asMatrix(e, out);
  // A residual the epilogue cannot read as rows of vectors is added after,
  // and the result rounded then.
  Value lateResidual;
  if (Value residual = epi.residual) {
    if (rowsCollapse(residual) && leadingDim(residual)) {
      g.epi.residual = asMatrix(e, residual);
    } else {
      lateResidual = residual;
      g.epi.residual = nullptr;
      g.epi.roundTo = nullptr;
    }
  }
  if (glu)
    g.glu = asMatrix(e, glu);
  g.bp = e.reinterpret(w, MemRefType::get({n / 16, k, 16}, b.getF32Type()));
  // The tile lir-select-strategy chose for this shape.
  ArrayRef<int64_t> tile;
  if (e.config)
    tile = e.config.getTile();
  if (tile.size() != 3 && tile.size() != 4)
    return emitError(e.loc, "a generated GEMM needs its tile (run "
                            "lir-select-strategy)");
  g.mr = tile[0];
  g.nv = tile[1];
  g.kc = tile[2] > 0 ? std::min(tile[2], k) : k;
  g.nc = tile.size() == 4 ? tile[3] : 0;
  g.unroll = (g.kc % 4 == 0 && k % 4 == 0) ? 4 : 1;
  if (g.m > g.mr || alwaysPackA) {
    int64_t floats = (g.m / g.mr) * g.mr * k + (g.m % g.mr) * k;
    g.ap = e.scratch(floats);
  }
  g.emit();
  if (lateResidual) {
    auto outTy = cast<MemRefType>(out.getType());
    e.parallelNest(outTy.getShape(), 8, [&](ValueRange ivs) {
      Value v = e.gemmEpilogue(
          memref::LoadOp::create(b, e.loc, out, ivs), nullptr, Activation::None,
          memref::LoadOp::create(b, e.loc, lateResidual, ivs), epi.roundTo);
      memref::StoreOp::create(b, e.loc, v, out, ivs);
    });
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Epilogue of library GEMMs
//===----------------------------------------------------------------------===//

/// Splits [0, total) into at most `maxChunks` ranges of a multiple of
/// `granule` (about total / perChunk of them) and runs `body(begin, end)` on
/// each in parallel.
static void parallelRanges(KernelEmitter &e, int64_t total, int64_t perChunk,
                           int64_t maxChunks, int64_t granule,
                           function_ref<void(Value, Value)> body) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  int64_t chunks = std::clamp<int64_t>(total / perChunk, 1, maxChunks);
  int64_t width = (total + chunks - 1) / chunks;
  width = (width + granule - 1) / granule * granule;
  chunks = (total + width - 1) / width;
  e.parallelFor(chunks, [&](Value c) {
    Value begin = arith::MulIOp::create(b, loc, c, e.index(width));
    Value end = arith::MinSIOp::create(
        b, loc, arith::AddIOp::create(b, loc, begin, e.index(width)),
        e.index(total));
    body(begin, end);
  });
}

/// out[idx] = round(act(out[idx] + bias[j]) + residual[idx]) for the
/// `width` columns from j = idx.back().
static void applyEpilogue(KernelEmitter &e, Value out, ValueRange idx,
                          int64_t width, const Epilogue &epi) {
  Value bias = epi.bias ? e.load(epi.bias, {idx.back()}, width) : Value();
  Value residual = epi.residual ? e.load(epi.residual, idx, width) : Value();
  e.store(e.gemmEpilogue(e.load(out, idx, width), bias, epi.act, residual,
                         epi.roundTo),
          out, idx, width);
}

/// out = round(act(out + bias) + residual), row by row (after a library
/// GEMM).
static void emitEpilogue(KernelEmitter &e, Value out, const Epilogue &epi) {
  if (epi.empty())
    return;
  auto outTy = cast<MemRefType>(out.getType());
  int64_t n = outTy.getShape().back();
  int64_t vl = KernelEmitter::vectorWidth(outTy.getElementType());
  if (epi.residual && KernelEmitter::innerStride(epi.residual) != 1)
    vl = 1;
  e.parallelNest(outTy.getShape().drop_back(),
                 std::clamp<int64_t>(outTy.getNumElements() / 16384, 1, 64),
                 [&](ValueRange outer) {
                   e.forChunks(n, vl, [&](Value j, int64_t width) {
                     SmallVector<Value> idx(outer);
                     idx.push_back(j);
                     applyEpilogue(e, out, idx, width, epi);
                   });
                 });
}

//===----------------------------------------------------------------------===//
// BLAS
//===----------------------------------------------------------------------===//

static LogicalResult emitBlasMatmul(KernelEmitter &e, Operation *op, Value lhs,
                                    Value rhs, Value out, Epilogue epi) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  auto outTy = cast<MemRefType>(out.getType());
  bool transA = op->hasAttr("transpose_lhs");
  bool transB = op->hasAttr("transpose_rhs");
  bool batched = isa<mir::BatchMatmulOp>(op);
  auto lTy = cast<MemRefType>(lhs.getType());
  int64_t rank = outTy.getRank();
  int64_t m = outTy.getDimSize(rank - 2), n = outTy.getDimSize(rank - 1);
  int64_t k = lTy.getDimSize(lTy.getRank() - (transA ? 2 : 1));
  int64_t lda = leadingDim(lhs), ldb = leadingDim(rhs), ldc = leadingDim(out);
  if (!lda || !ldb || !ldc)
    return op->emitOpError("needs unit-stride rows for its GEMM operands");

  // C = residual; C += A*B (beta = 1) when nothing comes between them.
  float beta = 0.0f;
  if (epi.residual && epi.act == Activation::None && !epi.bias) {
    emitCopy(e, KernelEmitter::viewOf(epi.residual),
             KernelEmitter::viewOf(out));
    epi.residual = nullptr;
    beta = 1.0f;
  }

  Type f32 = b.getF32Type();
  ArrayRef<int64_t> lead = outTy.getShape().drop_back(2);
  if (!batched && !transA && rowsCollapse(lhs) && rank >= 2) {
    int64_t rows = m;
    for (int64_t d : lead)
      rows *= d;
    SmallVector<Value> zeros(lead.size(), e.index(0));
    Value a = e.pointer(matrixAt(e, lhs, zeros));
    Value bm = e.pointer(rhs);
    Value c = e.pointer(matrixAt(e, out, zeros));
    // Columns split between threads, in multiples of 16.
    parallelRanges(e, n, 256, 8, 16, [&](Value n0, Value n1) {
      Value nc = arith::SubIOp::create(b, loc, n1, n0);
      if (rows == 1 && transB) {
        // One row against a [N, K] weight (the LM head over a tied
        // embedding): sgemv streams the weight; OpenBLAS's sgemm with M = 1
        // reads it at a quarter of the rate.
        e.sgemvPtr(
            nc, k,
            e.offsetPointer(bm, arith::MulIOp::create(b, loc, n0, e.index(ldb)),
                            f32),
            ldb, a, beta, e.offsetPointer(c, n0, f32));
        return;
      }
      Value bOff =
          transB ? arith::MulIOp::create(b, loc, n0, e.index(ldb)).getResult()
                 : n0;
      e.sgemmPtr(false, transB, rows, nc, k, a, lda,
                 e.offsetPointer(bm, bOff, f32), ldb, beta,
                 e.offsetPointer(c, n0, f32), ldc);
    });
  } else {
    e.parallelNest(lead, 64, [&](ValueRange ivs) {
      Value a = matrixAt(e, lhs, ivs);
      Value bm = batched ? matrixAt(e, rhs, ivs) : rhs;
      e.sgemm(transA, transB, m, n, k, a, lda, bm, ldb, beta,
              matrixAt(e, out, ivs), ldc);
    });
  }

  emitEpilogue(e, out, epi);
  return success();
}

//===----------------------------------------------------------------------===//
// Micro-kernels for weights kept as stored
//===----------------------------------------------------------------------===//

/// The epilogue on columns [n0, n1) of every row of `y` ([m, N]; a residual
/// in `epi` is [m, N] too): vectors, then single columns past the last
/// whole vector.
static void emitColumnEpilogue(KernelEmitter &e, Value y, int64_t m, Value n0,
                               Value n1, const Epilogue &epi) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  int64_t vl = KernelEmitter::vectorWidth(b.getF32Type());
  Value whole = arith::MulIOp::create(
      b, loc,
      arith::DivUIOp::create(b, loc, arith::SubIOp::create(b, loc, n1, n0),
                             e.index(vl)),
      e.index(vl));
  Value vEnd = arith::AddIOp::create(b, loc, n0, whole);
  auto rows = scf::ForOp::create(b, loc, e.index(0), e.index(m), e.index(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(rows.getBody());
  Value r = rows.getInductionVar();
  auto columns = [&](Value lo, Value hi, int64_t width) {
    auto loop = scf::ForOp::create(b, loc, lo, hi, e.index(width));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    applyEpilogue(e, y, {r, loop.getInductionVar()}, width, epi);
  };
  columns(n0, vEnd, vl);
  columns(vEnd, n1, 1);
}

/// The micro-kernels' code for a weight type (its ggml code), or -1.
static int ukernelType(Type t) {
  if (t.isF16())
    return RLX_UK_F16;
  if (t.isBF16())
    return RLX_UK_BF16;
  if (auto q = dyn_cast<mir::QuantType>(t))
    return static_cast<int>(q.getKind());
  return -1;
}

/// A call of `name(args...) -> i32` (the result ignored: the compiler checked
/// what the routine would refuse).
static void callRoutine(KernelEmitter &e, StringRef name, ValueRange args) {
  SmallVector<Type> types(args.getTypes());
  func::FuncOp f =
      e.declareFunction(name, e.b.getFunctionType(types, {e.b.getI32Type()}));
  func::CallOp::create(e.b, e.loc, f, args);
}

/// y = x * W^T with W kept as stored (f16, bf16, ggml blocks): the rows of x
/// are prepared once (split between threads), then the micro-kernel computes
/// column chunks of y (split between threads), then the epilogue.
static LogicalResult emitUkernelMatmul(KernelEmitter &e, Operation *op,
                                       Value lhs, const KernelInput &w,
                                       Value out, const Epilogue &epi) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  int wtype = ukernelType(w.stored);
  if (wtype < 0 || !rlx_uk_supports(wtype))
    return op->emitOpError("the CPU micro-kernels do not read weights "
                           "stored as ")
           << w.stored;
  // An x8 weight (lir-pack-params): groups of 8 rows interleaved.
  if (w.packed) {
    wtype |= RLX_UK_REPACKED_X8;
    if (!rlx_uk_supports(wtype))
      return op->emitOpError("the CPU micro-kernels read no x8 layout of ")
             << w.stored;
  }
  auto outTy = cast<MemRefType>(out.getType());
  auto lTy = cast<MemRefType>(lhs.getType());
  int64_t n = outTy.getShape().back(), k = lTy.getShape().back();
  int64_t m = outTy.getNumElements() / std::max<int64_t>(n, 1);
  int64_t lda = leadingDim(lhs), ldy = leadingDim(out);
  if (!rowsCollapse(lhs) || !rowsCollapse(out) || !lda || !ldy ||
      !lTy.getElementType().isF32() || !outTy.getElementType().isF32())
    return op->emitOpError("the micro-kernels need f32 rows of unit stride "
                           "that collapse into one matrix");
  // The micro-kernels read whole weight rows back to back: a strided view
  // (a column slice of a stored weight) would be read as if it were not.
  if (!memref::isStaticShapeAndContiguousRowMajor(
          cast<MemRefType>(w.memref.getType())))
    return op->emitOpError("the micro-kernels read a stored weight's rows "
                           "contiguously; got the strided view ")
           << w.memref.getType();
  size_t bytes = rlx_uk_prepared_bytes(wtype, m, k);
  if (!bytes)
    return op->emitOpError("K = ") << k << " is not a whole number of blocks";
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto c32 = [&](int64_t v) { return e.constant(v, i32); };
  auto c64 = [&](int64_t v) { return e.constant(v, i64); };
  auto toI64 = [&](Value idx) {
    return arith::IndexCastOp::create(b, loc, i64, idx).getResult();
  };
  Value prepared = e.pointer(e.scratch((bytes + 3) / 4));
  Value x = e.pointer(lhs), weight = e.pointer(w.memref), y = e.pointer(out);

  // Prepare the activations, rows split between threads.
  parallelRanges(e, m, 8, 16, 1, [&](Value m0, Value m1) {
    callRoutine(
        e, "rlx_uk_prepare",
        {c32(wtype), x, c64(lda), toI64(m0), toI64(m1), c64(k), prepared});
  });
  // The epilogue runs on each column chunk as soon as it is computed (while
  // it is in cache) when the residual is rows of unit stride too; else in a
  // pass of its own after.
  bool perChunk = !epi.empty() &&
                  (!epi.bias || KernelEmitter::innerStride(epi.bias) == 1) &&
                  (!epi.residual ||
                   (rowsCollapse(epi.residual) && leadingDim(epi.residual) &&
                    KernelEmitter::innerStride(epi.residual) == 1));
  Epilogue chunkEpi = epi;
  Value yRows;
  if (perChunk) {
    yRows = asMatrix(e, out);
    if (epi.residual)
      chunkEpi.residual = asMatrix(e, epi.residual);
  }
  // Columns in chunks of 16-multiples the threads claim.
  parallelRanges(e, n, 64, 256, 16, [&](Value n0, Value n1) {
    callRoutine(e, "rlx_uk_matmul",
                {c32(wtype), prepared, c64(m), c64(k), weight, toI64(n0),
                 toI64(n1), y, c64(ldy)});
    if (perChunk)
      emitColumnEpilogue(e, yRows, m, n0, n1, chunkEpi);
  });
  if (!perChunk)
    emitEpilogue(e, out, epi);
  return success();
}

/// Calls `body(i, row)` in parallel for each index i of `gather`'s `ids`,
/// with `row` the table row it names (negative from the end, clamped into
/// the table).
static void forEachGatheredRow(KernelEmitter &e, mir::GatherOp gather,
                               Value ids,
                               function_ref<void(Value i, Value row)> body) {
  auto idTy = cast<MemRefType>(ids.getType());
  int64_t rows = gather.getTable().getType().getDimSize(0);
  int64_t count = idTy.getNumElements();
  Value flatIds =
      e.reinterpret(ids, MemRefType::get({count}, idTy.getElementType()));
  e.parallelFor(count, [&](Value i) {
    Value id = memref::LoadOp::create(e.b, e.loc, flatIds, i);
    body(i, e.tableRow(id, rows));
  });
}

/// A gather of rows from an f16 / bf16 table stored x8 (a tied LM head's),
/// into rows of the table's type: each row put back in its stored form by
/// rlx_uk_unpack, one call per index (negative from the end, clamped into
/// the table).
static LogicalResult emitFloatX8Gather(KernelEmitter &e, Operation *op,
                                       ArrayRef<KernelInput> ins, Value out,
                                       int wtype) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  auto gather = dyn_cast<mir::GatherOp>(op);
  auto outTy = cast<MemRefType>(out.getType());
  const KernelInput &table = ins[0];
  int64_t k = outTy.getShape().back();
  if (!gather || gather.getAxis() != 0 ||
      outTy.getElementType() != table.stored || !rowsCollapse(out) ||
      leadingDim(out) != k || !rlx_uk_supports(wtype | RLX_UK_REPACKED_X8))
    return op->emitOpError("reads an f16 / bf16 weight stored x8 "
                           "(lir-pack-params), which only the micro-kernel "
                           "matmuls and whole-row gathers into contiguous "
                           "rows of its type read");
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value src = e.pointer(table.memref), dst = e.pointer(out);
  forEachGatheredRow(e, gather, ins[1].memref, [&](Value i, Value index) {
    Value row = arith::IndexCastOp::create(b, loc, i64, index);
    Value next = arith::AddIOp::create(b, loc, row, e.constant(1, i64));
    Value to = e.offsetPointer(
        dst, arith::MulIOp::create(b, loc, i, e.index(k)), table.stored);
    callRoutine(e, "rlx_uk_unpack",
                {e.constant(wtype | RLX_UK_REPACKED_X8, i32),
                 e.constant(k, i64), src, row, next, to});
  });
  return success();
}

LogicalResult mlir::rlx::emitDequantizeKernel(KernelEmitter &e, Operation *op,
                                              ArrayRef<KernelInput> ins,
                                              Value out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  const KernelInput &table = ins[0];
  int wtype = ukernelType(table.stored);
  auto outTy = cast<MemRefType>(out.getType());
  int64_t k = outTy.getShape().back();
  if (table.packed && table.stored &&
      (table.stored.isF16() || table.stored.isBF16()))
    return emitFloatX8Gather(e, op, ins, out, wtype);
  if (wtype < 0 || !outTy.getElementType().isF32() || !rowsCollapse(out) ||
      !leadingDim(out))
    return op->emitOpError("the CPU back end dequantizes ggml blocks into "
                           "contiguous f32 rows only");
  if (table.packed &&
      (!isa<mir::GatherOp>(op) || !rlx_uk_supports(wtype | RLX_UK_REPACKED_X8)))
    return op->emitOpError("reads a weight stored x8 (lir-pack-params), which "
                           "only the micro-kernel matmuls and gathers read");
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto c64 = [&](int64_t v) { return e.constant(v, i64); };
  Value src = e.pointer(table.memref), dst = e.pointer(out);
  int64_t rowBytes =
      mir::getStorageBytes(RankedTensorType::get({1, k}, table.stored));
  int64_t ld = leadingDim(out);
  // Rows [from, from + count) of the table to rows [to, ...) of the output.
  auto dequantizeRows = [&](Value fromRow, Value toRow, Value count) {
    Value from = e.offsetPointer(
        src, arith::MulIOp::create(b, loc, fromRow, e.index(rowBytes)),
        b.getI8Type());
    Value to = e.offsetPointer(
        dst, arith::MulIOp::create(b, loc, toRow, e.index(ld)), b.getF32Type());
    callRoutine(e, "rlx_dequantize_rows",
                {e.constant(wtype, i32), from, count, c64(k), to, c64(ld)});
  };
  if (auto gather = dyn_cast<mir::GatherOp>(op)) {
    forEachGatheredRow(e, gather, ins[1].memref, [&](Value i, Value row) {
      if (!table.packed) {
        dequantizeRows(row, i, c64(1));
        return;
      }
      // An x8 table (a tied LM head's): the runtime finds the row in its
      // group of 8.
      Value to = e.offsetPointer(
          dst, arith::MulIOp::create(b, loc, i, e.index(ld)), b.getF32Type());
      callRoutine(e, "rlx_dequantize_x8_rows",
                  {e.constant(wtype, i32), src,
                   arith::IndexCastOp::create(b, loc, i64, row), c64(1), c64(k),
                   to, c64(ld)});
    });
    return success();
  }
  // A whole weight: chunks of rows.
  int64_t rows = outTy.getNumElements() / std::max<int64_t>(k, 1);
  parallelRanges(e, rows, 8, 64, 1, [&](Value r0, Value r1) {
    Value n = arith::SubIOp::create(b, loc, r1, r0);
    dequantizeRows(r0, r0, arith::IndexCastOp::create(b, loc, i64, n));
  });
  return success();
}

LogicalResult mlir::rlx::emitGluGemmKernel(KernelEmitter &e, Value lhs, Value w,
                                           Value gateUp, Value out,
                                           Activation act, Type gateUpRound,
                                           Type gluRound, bool packInput) {
  Epilogue epi;
  epi.act = act;
  epi.roundTo = gateUpRound;
  return emitPackedGemm(e, lhs, w, gateUp, epi, out, gluRound, packInput);
}

LogicalResult mlir::rlx::emitMatmulKernel(KernelEmitter &e, Operation *op,
                                          ArrayRef<KernelInput> ins,
                                          Value out) {
  Value lhs = ins[0].memref, rhs = ins[1].memref;
  if (!lhs || !rhs)
    return op->emitOpError("expects tensor operands on the CPU back end");
  auto outTy = cast<MemRefType>(out.getType());
  bool stored = ins[1].stored && !ins[1].stored.isF32();
  if (!outTy.getElementType().isF32() ||
      !cast<MemRefType>(lhs.getType()).getElementType().isF32() ||
      (!stored && !cast<MemRefType>(rhs.getType()).getElementType().isF32()))
    return op->emitOpError("the CPU back end multiplies f32 matrices (or f32 "
                           "rows by a weight kept as stored) only");
  Epilogue epi = Epilogue::of(op, ins);
  // K = 0: every product is an empty sum, so the output is zeros (NumPy)
  // before the epilogue; no GEMM (BLAS takes no zero leading dimension)
  // and no weight read. The zeros are written through the map, inside the
  // threads' loop protocol as every write of the arena.
  auto lTy = cast<MemRefType>(lhs.getType());
  if (lTy.getDimSize(lTy.getRank() - (op->hasAttr("transpose_lhs") ? 2 : 1)) ==
      0) {
    KernelView zero;
    zero.elementType = outTy.getElementType();
    zero.scalar = e.constant(0.0, zero.elementType);
    zero.shape.assign(outTy.getShape().begin(), outTy.getShape().end());
    zero.strides.assign(zero.shape.size(), 0);
    emitCopy(e, zero, KernelEmitter::viewOf(out));
    emitEpilogue(e, out, epi);
    return success();
  }
  bool ukernel =
      e.config && e.config.getStrategy() == lir::KernelStrategy::Ukernel;
  if (ukernel != stored)
    return stored ? op->emitOpError("reads a weight kept as ")
                        << ins[1].stored
                        << " but is not lowered by the micro-kernels "
                           "(lir-select-strategy)"
                  : op->emitOpError("is lowered by the micro-kernels, which "
                                    "read weights kept as f16, bf16 or ggml "
                                    "blocks, not f32");
  if (ukernel)
    return emitUkernelMatmul(e, op, lhs, ins[1], out, epi);
  if (e.config &&
      e.config.getStrategy() == lir::KernelStrategy::GemmGenerated) {
    if (!ins[1].packed)
      return op->emitOpError("the generated GEMM needs its weight stored nk16 "
                             "(lir-pack-params)");
    return emitPackedGemm(e, lhs, rhs, out, epi);
  }
  if (ins[1].packed)
    return op->emitOpError("reads an nk16 weight but is not lowered as a "
                           "generated GEMM (lir-select-strategy)");
  return emitBlasMatmul(e, op, lhs, rhs, out, epi);
}
