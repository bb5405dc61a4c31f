//===- Attention.cpp - Attention and RoPE CPU kernels ---------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mir.attention is one kernel with an online softmax (flash-attention
// style) over blocks of 16 keys: the keys are transposed per KV head and
// block (the values copied to rows of their own) so a block's scores are one
// vector per query row, and a tile of query rows
// sharing a KV head keeps its running maximum, normalizer and head_dim-wide
// accumulators in registers; no [q_len, kv_len] score matrix is stored. A
// graph with one query per head (a decode step) skips the transposition: each
// key row is read once for its tile of heads and dotted with every query. Head
// dims that are not a multiple of 16 use a per-key form of the same
// algorithm.
// mir.rope computes cos/sin once per token (libm accuracy) and rotates every
// head with vector ops.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "RLX/Dialect/LIR/Transforms/Transforms.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include <limits>

using namespace mlir;
using namespace mlir::rlx;

/// Loads `width` elements of `buffer` at `indices` (a scalar for 0) as f32:
/// keys and values kept in f16 / bf16 are widened.
static Value loadF32(OpBuilder &b, Location loc, Value buffer,
                     ValueRange indices, int64_t width) {
  Type elt = cast<MemRefType>(buffer.getType()).getElementType();
  Value x = width ? vector::LoadOp::create(
                        b, loc, VectorType::get({width}, elt), buffer, indices)
                        .getResult()
                  : memref::LoadOp::create(b, loc, buffer, indices).getResult();
  if (elt.isF32())
    return x;
  Type f32 = b.getF32Type();
  return arith::ExtFOp::create(
      b, loc, width ? Type(VectorType::get({width}, f32)) : f32, x);
}

/// The per-key attention; emitAttentionKernel has checked the operands
/// (memrefs, unit inner stride, an f32 query; keys and values f32, f16 or
/// bf16).
static LogicalResult emitAttentionPerKey(KernelEmitter &e, Operation *o,
                                         ArrayRef<KernelInput> ins, Value out) {
  auto op = cast<mir::AttentionOp>(o);
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value q = ins[0].memref, k = ins[1].memref, v = ins[2].memref;
  Value mask = op.getMask() ? ins[3].memref : Value();
  auto qTy = cast<MemRefType>(q.getType());
  Type elt = qTy.getElementType();
  int64_t batch = qTy.getDimSize(0), tq = qTy.getDimSize(1);
  int64_t tk = cast<MemRefType>(k.getType()).getDimSize(1);
  int64_t heads = op.getNumHeads(), hd = op.getHeadDim();
  int64_t group = heads / op.getNumKvHeads();
  MaskKind kind = op.getMaskKind();
  bool causal = kind == MaskKind::Causal || kind == MaskKind::SlidingWindow;
  float scale = op.getScale(), softcap = op.getSoftcap();
  auto vecTy = VectorType::get({hd}, elt);

  e.parallelNest(
      {batch, heads, tq}, std::min<int64_t>(batch * heads * tq, 64),
      [&](ValueRange ivs) {
        Value bi = ivs[0], h = ivs[1], i = ivs[2];
        Value kvh = arith::DivUIOp::create(b, loc, h, e.index(group));
        Value qOff = arith::MulIOp::create(b, loc, h, e.index(hd));
        Value kvOff = arith::MulIOp::create(b, loc, kvh, e.index(hd));
        Value qv =
            vector::LoadOp::create(b, loc, vecTy, q, ValueRange{bi, i, qOff});
        Value pos = arith::AddIOp::create(b, loc, i, e.index(tk - tq));
        Value end =
            causal ? arith::AddIOp::create(b, loc, pos, e.index(1)).getResult()
                   : e.index(tk);
        Value start = e.index(0);
        if (kind == MaskKind::SlidingWindow) {
          // max(0, pos - window + 1), in signed arithmetic.
          Value lo = arith::SubIOp::create(
              b, loc, arith::AddIOp::create(b, loc, pos, e.index(1)),
              e.index(op.getWindow()));
          start = arith::MaxSIOp::create(b, loc, lo, e.index(0));
        }
        Value negInf = e.constant(-std::numeric_limits<float>::infinity(), elt);
        Value zero = e.constant(0.0, elt);
        Value zeros = e.splat(zero, hd);
        auto loop = scf::ForOp::create(
            b, loc, start, end, e.index(1), ValueRange{negInf, zero, zeros},
            [&](OpBuilder &, Location, Value j, ValueRange it) {
              Value m = it[0], l = it[1], acc = it[2];
              Value kv = loadF32(b, loc, k, ValueRange{bi, j, kvOff}, hd);
              Value dot = vector::ReductionOp::create(
                  b, loc, vector::CombiningKind::ADD,
                  arith::MulFOp::create(b, loc, qv, kv));
              Value s =
                  arith::MulFOp::create(b, loc, dot, e.constant(scale, elt));
              if (softcap > 0) {
                Value cap = e.constant(softcap, elt);
                s = arith::MulFOp::create(
                    b, loc, cap,
                    math::TanhOp::create(
                        b, loc, arith::DivFOp::create(b, loc, s, cap)));
              }
              Value m2 = arith::MaximumFOp::create(b, loc, m, s);
              Value c = math::ExpOp::create(
                  b, loc, arith::SubFOp::create(b, loc, m, m2));
              Value p = math::ExpOp::create(
                  b, loc, arith::SubFOp::create(b, loc, s, m2));
              Value l2 = arith::AddFOp::create(
                  b, loc, arith::MulFOp::create(b, loc, l, c), p);
              Value vv = loadF32(b, loc, v, ValueRange{bi, j, kvOff}, hd);
              Value acc2 = arith::AddFOp::create(
                  b, loc, arith::MulFOp::create(b, loc, acc, e.splat(c, hd)),
                  arith::MulFOp::create(b, loc, vv, e.splat(p, hd)));
              if (mask) {
                // A padded key leaves the state unchanged.
                Value mk =
                    memref::LoadOp::create(b, loc, mask, ValueRange{bi, j});
                Type mt = mk.getType();
                Value keep =
                    isa<FloatType>(mt)
                        ? arith::CmpFOp::create(b, loc,
                                                arith::CmpFPredicate::UNE, mk,
                                                e.constant(0.0, mt))
                              .getResult()
                        : arith::CmpIOp::create(b, loc,
                                                arith::CmpIPredicate::ne, mk,
                                                e.constant(0.0, mt))
                              .getResult();
                m2 = arith::SelectOp::create(b, loc, keep, m2, m);
                l2 = arith::SelectOp::create(b, loc, keep, l2, l);
                acc2 = arith::SelectOp::create(b, loc, keep, acc2, acc);
              }
              scf::YieldOp::create(b, loc, ValueRange{m2, l2, acc2});
            });
        Value l = loop.getResult(1), acc = loop.getResult(2);
        // Rows with no visible key produce zeros.
        Value empty =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
        Value denom =
            arith::SelectOp::create(b, loc, empty, e.constant(1.0, elt), l);
        Value res = arith::DivFOp::create(b, loc, acc, e.splat(denom, hd));
        vector::StoreOp::create(b, loc, res, out, ValueRange{bi, i, qOff});
      });
  return success();
}

namespace {
/// Attention over blocks of 16 keys (flash-attention style). Keys are first
/// transposed per KV head and block into the scratch buffer
/// (`Kt[b][kvh][j / 16][d][j % 16]`) so a block's scores for one query row are
/// one vector: `s = sum_d q[d] * Kt[j0 / 16][d][0:16]`; the value rows are
/// copied beside them, contiguous per KV head. A tile of up to four query rows
/// that share the KV head (the heads of a GQA group at one position, or
/// consecutive positions of one head) keeps its running maximum, normalizer and
/// head_dim-wide accumulators in registers while it streams the blocks its
/// causal/window extent reaches; each block's values are loaded once for the
/// whole tile.
struct BlockedAttention {
  KernelEmitter &e;
  OpBuilder &b;
  Location loc;
  mir::AttentionOp op;
  /// `kt` is the scratch buffer: the transposed keys, then at `vRowsAt`
  /// the value rows (transposeKeys).
  Value q, k, v, mask, out, kt;
  int64_t vRowsAt = 0;
  int64_t batch, tq, tk, tkPad, heads, kvHeads, hd, group;
  int64_t headsPerTile, queriesPerTile;
  MaskKind kind;
  float scale, softcap;
  /// One query per head (a decode step): a key is read once per tile of
  /// heads, so the scores are dot products with the key rows as stored; the
  /// transposed copy would be written and read once for nothing.
  bool direct = false;

  static constexpr int64_t kBlock = 16;
  VectorType vecTy() { return VectorType::get({kBlock}, b.getF32Type()); }
  Value idx(int64_t x) { return e.index(x); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value f32(double x) { return e.constant(x, b.getF32Type()); }
  Value splat(Value x) { return e.splat(x, kBlock); }

  /// Kt[(b * kvHeads + h) * hd * tkPad + (j / 16 * hd + d) * 16 + j % 16] =
  /// k[b, j, h * hd + d]: per block of 16 keys, head_dim rows of 16 lanes,
  /// 4 KB in a row (hd = 64) that a block's scores stream through. (Rows of
  /// all tkPad keys per dim put a block's 64 loads a power of two apart: at
  /// 512 keys, 2 KB, all in two L1 sets; the prefill attention took 1.4x
  /// as long.) Whole blocks of 16 keys go one dim at a time: 16 loads from
  /// 16 key rows (4 KB of them stay in L1 across the dims), one 64-byte
  /// store.
  /// The value rows of each KV head are copied contiguous too (f32, at
  /// vRowsAt): V[((b * kvHeads + h) * tk + j) * hd + d] = v[b, j, h * hd + d].
  /// A block's 16 value rows in the input are the whole row of every KV
  /// head apart (2 KB for 8 heads of 64), the same conflict.
  void transposeKeys() {
    int64_t full = tk / kBlock * kBlock;
    e.parallelNest({batch, kvHeads}, batch * kvHeads, [&](ValueRange ivs) {
      Value base = mul(add(mul(ivs[0], idx(kvHeads)), ivs[1]), idx(hd * tkPad));
      Value col0 = mul(ivs[1], idx(hd));
      // Value row j, with the keys of its block.
      auto copyValue = [&](Value j) {
        for (int64_t c = 0; c < hd / kBlock; ++c) {
          Value x = loadF32(b, loc, v,
                            ValueRange{ivs[0], j, add(col0, idx(c * kBlock))},
                            kBlock);
          vector::StoreOp::create(
              b, loc, x, kt,
              ValueRange{valueAt(ivs[0], ivs[1], j, idx(c * kBlock))});
        }
      };
      // A block the key mask hides whole is neither copied nor read (a
      // decode step's past bucket is up to half empty), its values neither.
      if (full > 0)
        e.loopNest({full / kBlock}, [&](ValueRange jb) {
          Value j0 = mul(jb[0], idx(kBlock));
          auto copy = [&] {
            e.loopNest({hd}, [&](ValueRange d) {
              Value col = add(col0, d[0]);
              SmallVector<Value> keys;
              for (int64_t r = 0; r < kBlock; ++r)
                keys.push_back(loadF32(b, loc, k,
                                       ValueRange{ivs[0], add(j0, idx(r)), col},
                                       /*width=*/0));
              Value row = vector::FromElementsOp::create(b, loc, vecTy(), keys);
              vector::StoreOp::create(
                  b, loc, row, kt,
                  ValueRange{add(
                      base, add(mul(j0, idx(hd)), mul(d[0], idx(kBlock))))});
            });
            e.loopNest({kBlock},
                       [&](ValueRange r) { copyValue(add(j0, r[0])); });
          };
          if (!mask)
            return copy();
          auto any = scf::IfOp::create(b, loc, anyKept(keptKeys(ivs[0], j0)),
                                       /*withElseRegion=*/false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(any.thenBlock()->getTerminator());
          copy();
        });
      if (tk > full)
        e.loopNest({tk - full}, [&](ValueRange jj) {
          Value j = add(jj[0], idx(full));
          copyValue(j);
          for (int64_t d = 0; d < hd; ++d) {
            Value x =
                loadF32(b, loc, k, ValueRange{ivs[0], j, add(col0, idx(d))},
                        /*width=*/0);
            memref::StoreOp::create(
                b, loc, x, kt,
                ValueRange{add(base, add(idx(full * hd + d * kBlock), jj[0]))});
          }
        });
      if (tkPad > tk)
        e.loopNest({hd, tkPad - tk}, [&](ValueRange dj) {
          Value at =
              add(base, add(idx(full * hd), add(mul(dj[0], idx(kBlock)),
                                                add(dj[1], idx(tk - full)))));
          memref::StoreOp::create(b, loc, f32(0), kt, ValueRange{at});
        });
    });
  }

  struct Row {
    Value head, query, start, end; // key range [start, end)
  };

  /// One block of `count` keys at j0 for the tile's rows; `state` holds
  /// per row (m, l, acc[hd / 16]); `kept` is keptKeys(bi, j0) (null without
  /// a mask).
  SmallVector<Value> block(Value bi, Value kvh, ArrayRef<Row> rows, Value j0,
                           int64_t count, ValueRange state, Value kept) {
    int64_t hv = hd / kBlock, per = 2 + hv;
    SmallVector<int32_t> iota(kBlock);
    for (int64_t i = 0; i < kBlock; ++i)
      iota[i] = i;
    Value lanes = arith::ConstantOp::create(
        b, loc,
        DenseIntElementsAttr::get(VectorType::get({kBlock}, b.getI32Type()),
                                  ArrayRef<int32_t>(iota)));
    Value keyIdx = arith::AddIOp::create(b, loc, splatIndex(j0), lanes);
    // Key mask of the block (shared by the rows).
    Value keep = kept;
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                          keyIdx, splatIndex(idx(tk)));
    keep = keep ? arith::AndIOp::create(b, loc, keep, inRange).getResult()
                : inRange;
    Value negInf = splat(f32(-std::numeric_limits<float>::infinity()));
    SmallVector<Value> next(state);
    SmallVector<Value> probs;
    // Scores of each row against the block.
    SmallVector<Value> scores = direct ? directScores(bi, kvh, rows, j0, count)
                                       : transposedScores(bi, kvh, rows, j0);
    for (auto [r, row] : llvm::enumerate(rows)) {
      Value s = scores[r];
      s = arith::MulFOp::create(b, loc, s, splat(f32(scale)));
      if (softcap > 0) {
        Value cap = splat(f32(softcap));
        s = arith::MulFOp::create(
            b, loc, cap,
            math::TanhOp::create(b, loc,
                                 arith::DivFOp::create(b, loc, s, cap)));
      }
      Value visible = keep;
      if (kind == MaskKind::Causal || kind == MaskKind::SlidingWindow) {
        visible = arith::AndIOp::create(
            b, loc, visible,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, keyIdx,
                                  splatIndex(row.end)));
        visible = arith::AndIOp::create(
            b, loc, visible,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, keyIdx,
                                  splatIndex(row.start)));
      }
      s = arith::SelectOp::create(b, loc, visible, s, negInf);
      Value m = state[r * per], l = state[r * per + 1];
      Value blockMax = vector::ReductionOp::create(
          b, loc, vector::CombiningKind::MAXIMUMF, s);
      Value m2 = arith::MaximumFOp::create(b, loc, m, blockMax);
      // A row that has seen no key yet keeps m = -inf; subtract 0 then.
      Value isEmpty =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m2,
                                f32(-std::numeric_limits<float>::infinity()));
      Value mSafe = arith::SelectOp::create(b, loc, isEmpty, f32(0), m2);
      Value p = math::ExpOp::create(
          b, loc, arith::SubFOp::create(b, loc, s, splat(mSafe)));
      Value corr =
          math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, mSafe));
      Value sum =
          vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, p);
      next[r * per] = m2;
      next[r * per + 1] = arith::AddFOp::create(
          b, loc, arith::MulFOp::create(b, loc, l, corr), sum);
      for (int64_t c = 0; c < hv; ++c)
        next[r * per + 2 + c] =
            arith::MulFOp::create(b, loc, state[r * per + 2 + c], splat(corr));
      probs.push_back(p);
    }
    // Weighted values: each value row is loaded once for the tile.
    Value vCol0 = mul(kvh, idx(hd));
    for (int64_t jj = 0; jj < count; ++jj) {
      Value j = add(j0, idx(jj));
      SmallVector<Value> vrow;
      for (int64_t c = 0; c < hv; ++c)
        vrow.push_back(
            direct ? loadF32(b, loc, v,
                             ValueRange{bi, j, add(vCol0, idx(c * kBlock))},
                             kBlock)
                   : vector::LoadOp::create(
                         b, loc, vecTy(), kt,
                         ValueRange{valueAt(bi, kvh, j, idx(c * kBlock))})
                         .getResult());
      for (size_t r = 0; r < rows.size(); ++r) {
        Value pj = splat(vector::ExtractOp::create(b, loc, probs[r], jj));
        for (int64_t c = 0; c < hv; ++c)
          next[r * per + 2 + c] =
              vector::FMAOp::create(b, loc, pj, vrow[c], next[r * per + 2 + c]);
      }
    }
    return next;
  }

  /// Where value row j of KV head kvh, element d, lies in the scratch
  /// buffer (transposeKeys).
  Value valueAt(Value bi, Value kvh, Value j, Value d) {
    return add(
        idx(vRowsAt),
        add(mul(add(mul(add(mul(bi, idx(kvHeads)), kvh), idx(tk)), j), idx(hd)),
            d));
  }

  /// Each row's scores against the 16 keys at j0 from the transposed keys
  /// (transposeKeys; lanes past the end read its zero padding).
  SmallVector<Value> transposedScores(Value bi, Value kvh, ArrayRef<Row> rows,
                                      Value j0) {
    Value ktBase = mul(add(mul(bi, idx(kvHeads)), kvh), idx(hd * tkPad));
    SmallVector<Value> out;
    for (const Row &row : rows) {
      Value qCol0 = mul(row.head, idx(hd));
      Value s = splat(f32(0));
      for (int64_t d = 0; d < hd; ++d) {
        Value qd = memref::LoadOp::create(
            b, loc, q, ValueRange{bi, row.query, add(qCol0, idx(d))});
        Value kd = vector::LoadOp::create(
            b, loc, vecTy(), kt,
            ValueRange{add(ktBase, add(mul(j0, idx(hd)), idx(d * kBlock)))});
        s = vector::FMAOp::create(b, loc, splat(qd), kd, s);
      }
      out.push_back(s);
    }
    return out;
  }

  /// Each row's scores against the `count` keys at j0 from the keys as
  /// stored (`direct`), one 16-lane vector per row (lanes past `count` are
  /// 0, masked by the caller): every key row is loaded once for the tile;
  /// each row's products with a key sum over head_dim into one 16-lane
  /// vector (FMAs), and the 16 keys' vectors reduce together, halving the
  /// lanes per key at each of 4 levels (two shuffles and an add per pair),
  /// until lane j holds key j's score: 45 vector ops per row and block
  /// instead of 16 horizontal sums.
  SmallVector<Value> directScores(Value bi, Value kvh, ArrayRef<Row> rows,
                                  Value j0, int64_t count) {
    Value col0 = mul(kvh, idx(hd));
    int64_t chunks = hd / kBlock;
    SmallVector<SmallVector<Value>> queries;
    for (const Row &row : rows) {
      SmallVector<Value> q16;
      for (int64_t c = 0; c < chunks; ++c)
        q16.push_back(
            loadF32(b, loc, q,
                    ValueRange{bi, row.query,
                               add(mul(row.head, idx(hd)), idx(c * kBlock))},
                    kBlock));
      queries.push_back(q16);
    }
    Value zero = splat(f32(0));
    SmallVector<SmallVector<Value>> partial(rows.size(),
                                            SmallVector<Value>(kBlock, zero));
    for (int64_t jj = 0; jj < count; ++jj) {
      SmallVector<Value> key;
      for (int64_t c = 0; c < chunks; ++c)
        key.push_back(loadF32(
            b, loc, k,
            ValueRange{bi, add(j0, idx(jj)), add(col0, idx(c * kBlock))},
            kBlock));
      for (size_t r = 0; r < rows.size(); ++r) {
        Value sum = arith::MulFOp::create(b, loc, queries[r][0], key[0]);
        for (int64_t c = 1; c < chunks; ++c)
          sum = vector::FMAOp::create(b, loc, queries[r][c], key[c], sum);
        partial[r][jj] = sum;
      }
    }
    SmallVector<Value> out;
    for (SmallVector<Value> &level : partial) {
      // Each vector holds 16 / width keys' partial sums, `width` lanes each.
      for (int64_t width = kBlock; width > 1; width /= 2) {
        int64_t groups = kBlock / width, half = width / 2;
        SmallVector<int64_t> lo, hi;
        for (int64_t operand = 0; operand < 2; ++operand)
          for (int64_t g = 0; g < groups; ++g)
            for (int64_t i = 0; i < half; ++i) {
              lo.push_back(operand * kBlock + g * width + i);
              hi.push_back(operand * kBlock + g * width + half + i);
            }
        SmallVector<Value> next;
        for (size_t v = 0; v + 1 < level.size(); v += 2) {
          Value x = level[v], y = level[v + 1];
          next.push_back(arith::AddFOp::create(
              b, loc, vector::ShuffleOp::create(b, loc, x, y, lo),
              vector::ShuffleOp::create(b, loc, x, y, hi)));
        }
        level = std::move(next);
      }
      out.push_back(level.front());
    }
    return out;
  }

  /// The key mask's lanes for the 16 keys at j0 (past the end: hidden).
  Value keptKeys(Value bi, Value j0) {
    Type mt = cast<MemRefType>(mask.getType()).getElementType();
    Value mv = vector::TransferReadOp::create(
        b, loc, VectorType::get({kBlock}, mt), mask, ValueRange{bi, j0},
        e.constant(0.0, mt), ArrayRef<bool>{false});
    Value zero = e.splat(e.constant(0.0, mt), kBlock);
    return isa<FloatType>(mt)
               ? arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, mv,
                                       zero)
                     .getResult()
               : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, mv,
                                       zero)
                     .getResult();
  }

  /// Whether any lane of keptKeys is set (a block worth reading).
  Value anyKept(Value kept) {
    return vector::ReductionOp::create(b, loc, vector::CombiningKind::OR, kept);
  }

  /// An index as 16 i32 lanes (key positions fit in 32 bits).
  Value splatIndex(Value x) {
    Value i = arith::IndexCastOp::create(b, loc, b.getI32Type(), x);
    return vector::BroadcastOp::create(
        b, loc, VectorType::get({kBlock}, b.getI32Type()), i);
  }

  void emit() {
    if (!direct)
      transposeKeys();
    int64_t tilesPerGroup = group / headsPerTile;
    int64_t queryTiles = (tq + queriesPerTile - 1) / queriesPerTile;
    int64_t items = batch * kvHeads * tilesPerGroup * queryTiles;
    e.parallelFor(items, [&](Value item) {
      // item = ((b * kvHeads + kvh) * tilesPerGroup + g) * queryTiles + qt
      Value qt = arith::RemUIOp::create(b, loc, item, idx(queryTiles));
      Value rest = arith::DivUIOp::create(b, loc, item, idx(queryTiles));
      Value g = arith::RemUIOp::create(b, loc, rest, idx(tilesPerGroup));
      rest = arith::DivUIOp::create(b, loc, rest, idx(tilesPerGroup));
      Value kvh = arith::RemUIOp::create(b, loc, rest, idx(kvHeads));
      Value bi = arith::DivUIOp::create(b, loc, rest, idx(kvHeads));
      Value head0 = add(mul(kvh, idx(group)), mul(g, idx(headsPerTile)));
      Value query0 = mul(qt, idx(queriesPerTile));
      bool causal = kind == MaskKind::Causal || kind == MaskKind::SlidingWindow;
      SmallVector<Row> rows;
      Value lo, hi;
      for (int64_t qq = 0; qq < queriesPerTile; ++qq)
        for (int64_t hh = 0; hh < headsPerTile; ++hh) {
          Row row;
          row.head = add(head0, idx(hh));
          // Rows past the end repeat the last query (not stored).
          row.query =
              arith::MinSIOp::create(b, loc, add(query0, idx(qq)), idx(tq - 1));
          row.start = idx(0);
          row.end = idx(tk);
          if (causal) {
            Value pos = add(row.query, idx(tk - tq));
            row.end = add(pos, idx(1));
            if (kind == MaskKind::SlidingWindow)
              row.start = arith::MaxSIOp::create(
                  b, loc,
                  arith::SubIOp::create(b, loc, row.end, idx(op.getWindow())),
                  idx(0));
          }
          lo = lo ? arith::MinSIOp::create(b, loc, lo, row.start).getResult()
                  : row.start;
          hi = hi ? arith::MaxSIOp::create(b, loc, hi, row.end).getResult()
                  : row.end;
          rows.push_back(row);
        }
      int64_t hv = hd / kBlock;
      SmallVector<Value> state;
      for (size_t r = 0; r < rows.size(); ++r) {
        state.push_back(f32(-std::numeric_limits<float>::infinity()));
        state.push_back(f32(0));
        for (int64_t c = 0; c < hv; ++c)
          state.push_back(splat(f32(0)));
      }
      // Full blocks in [lo / 16, min(ceil(hi / 16), tk / 16)), then the
      // partial last block when the tile reaches it.
      int64_t fullBlocks = tk / kBlock, tail = tk % kBlock;
      Value firstBlock = arith::DivUIOp::create(b, loc, lo, idx(kBlock));
      Value lastBlock = arith::MinSIOp::create(
          b, loc,
          arith::DivUIOp::create(b, loc, add(hi, idx(kBlock - 1)), idx(kBlock)),
          idx(fullBlocks));
      auto loop = scf::ForOp::create(
          b, loc, firstBlock,
          arith::MaxSIOp::create(b, loc, lastBlock, firstBlock), idx(1), state,
          [&](OpBuilder &, Location, Value jb, ValueRange it) {
            Value j0 = mul(jb, idx(kBlock));
            Value kept = mask ? keptKeys(bi, j0) : Value();
            SmallVector<Value> next;
            auto step = [&] {
              return block(bi, kvh, rows, j0, kBlock, it, kept);
            };
            if (mask)
              next = e.ifThenElse(anyKept(kept), TypeRange(it), step,
                                  [&] { return SmallVector<Value>(it); });
            else
              next = step();
            scf::YieldOp::create(b, loc, next);
          });
      SmallVector<Value> result(loop.getResults());
      if (tail) {
        Value reaches = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                              hi, idx(fullBlocks * kBlock));
        SmallVector<Type> types;
        for (Value x : result)
          types.push_back(x.getType());
        result = e.ifThenElse(
            reaches, types,
            [&] {
              Value j0 = idx(fullBlocks * kBlock);
              return block(bi, kvh, rows, j0, tail, result,
                           mask ? keptKeys(bi, j0) : Value());
            },
            [&] { return result; });
      }
      // out = acc / l (zeros for a row that saw no key).
      int64_t per = 2 + hv;
      for (auto [r, row] : llvm::enumerate(rows)) {
        int64_t qq = r / headsPerTile;
        auto store = [&] {
          Value l = result[r * per + 1];
          Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                              l, f32(0));
          Value inv = arith::DivFOp::create(
              b, loc, f32(1),
              arith::SelectOp::create(b, loc, empty, f32(1), l));
          for (int64_t c = 0; c < hv; ++c) {
            Value o = arith::MulFOp::create(b, loc, result[r * per + 2 + c],
                                            splat(inv));
            vector::StoreOp::create(
                b, loc, o, out,
                ValueRange{bi, row.query,
                           add(mul(row.head, idx(hd)), idx(c * kBlock))});
          }
        };
        if (tq % queriesPerTile == 0 || qq == 0) {
          store();
          continue;
        }
        Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                            add(query0, idx(qq)), idx(tq));
        scf::IfOp::create(b, loc, valid, [&](OpBuilder &, Location) {
          store();
          scf::YieldOp::create(b, loc);
        });
      }
    });
  }
};
} // namespace

LogicalResult mlir::rlx::emitAttentionKernel(KernelEmitter &e, Operation *o,
                                             ArrayRef<KernelInput> ins,
                                             Value out) {
  auto op = cast<mir::AttentionOp>(o);
  Value q = ins[0].memref, k = ins[1].memref, v = ins[2].memref;
  Value mask = op.getMask() ? ins[3].memref : Value();
  if (!q || !k || !v || (op.getMask() && !mask))
    return op.emitOpError("expects tensor operands on the CPU back end");
  for (Value m : {q, k, v, out})
    if (KernelEmitter::innerStride(m) != 1)
      return op.emitOpError("needs unit-stride head vectors");
  auto qTy = cast<MemRefType>(q.getType());
  if (!qTy.getElementType().isF32())
    return op.emitOpError("the CPU back end computes attention in f32 only");
  // The same test lir-select-strategy annotates the kernel by.
  if (!lir::isBlockedAttention(op))
    return emitAttentionPerKey(e, o, ins, out);
  int64_t hd = op.getHeadDim();

  BlockedAttention a{e, e.b, e.loc, op, q, k, v, mask, out, {}};
  a.batch = qTy.getDimSize(0);
  a.tq = qTy.getDimSize(1);
  a.tk = cast<MemRefType>(k.getType()).getDimSize(1);
  a.tkPad = (a.tk + 15) / 16 * 16;
  a.heads = op.getNumHeads();
  a.kvHeads = op.getNumKvHeads();
  a.hd = hd;
  a.group = a.heads / a.kvHeads;
  a.kind = op.getMaskKind();
  a.scale = op.getScale();
  a.softcap = op.getSoftcap();
  // The tile lir-select-strategy chose, else its default.
  SmallVector<int64_t, 2> tile;
  if (e.config &&
      e.config.getStrategy() == lir::KernelStrategy::AttentionBlocked)
    tile.assign(e.config.getTile().begin(), e.config.getTile().end());
  if (tile.empty())
    tile = lir::selectAttentionTile(hd, a.group, 0);
  if (a.group % tile[0] != 0)
    return op.emitOpError("attention tile of ")
           << tile[0] << " heads does not divide the " << a.group
           << " query heads of a KV head";
  a.headsPerTile = tile[0];
  a.queriesPerTile = tile[1];
  a.direct = a.tq == 1;
  // The transposed keys, then the value rows.
  a.vRowsAt = a.batch * a.kvHeads * hd * a.tkPad;
  if (!a.direct)
    a.kt = e.scratch(a.vRowsAt + a.batch * a.kvHeads * a.tk * hd);
  a.emit();
  return success();
}

LogicalResult mlir::rlx::emitRopeKernel(KernelEmitter &e, Operation *o,
                                        ArrayRef<KernelInput> ins, Value out) {
  auto op = cast<mir::RopeOp>(o);
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value x = ins[0].memref, positions = ins[1].memref;
  Value invFreq = op.getInvFreq() ? ins[2].memref : Value();
  if (!x || !positions || (op.getInvFreq() && !invFreq))
    return op.emitOpError("expects tensor operands on the CPU back end");
  auto xTy = cast<MemRefType>(x.getType());
  Type elt = xTy.getElementType();
  if (!elt.isF32())
    return op.emitOpError("the CPU back end applies RoPE to f32 only");
  int64_t batch = xTy.getDimSize(0), seq = xTy.getDimSize(1);
  int64_t width = xTy.getDimSize(2), hd = op.getHeadDim();
  int64_t rot = op.getRotaryDim(), half = rot / 2;
  bool interleaved = op.getStyle() == RopeStyle::Interleaved;
  int64_t vl = (KernelEmitter::innerStride(x) == 1 &&
                KernelEmitter::innerStride(out) == 1 && !interleaved)
                   ? 16
                   : 1;
  int64_t passVl = (KernelEmitter::innerStride(x) == 1 &&
                    KernelEmitter::innerStride(out) == 1)
                       ? 16
                       : 1;
  auto tableTy = MemRefType::get({half}, elt);
  Value cosT = memref::AllocaOp::create(b, loc, tableTy);
  Value sinT = memref::AllocaOp::create(b, loc, tableTy);
  bool posRank1 = cast<MemRefType>(positions.getType()).getRank() == 1;
  float theta = op.getTheta();

  e.parallelNest(
      {batch, seq}, std::min<int64_t>(batch * seq, 32), [&](ValueRange ivs) {
        Value bi = ivs[0], t = ivs[1];
        Value p = posRank1 ? memref::LoadOp::create(b, loc, positions, t)
                           : memref::LoadOp::create(b, loc, positions,
                                                    ValueRange{bi, t});
        Value pos = arith::SIToFPOp::create(b, loc, elt, p);
        // cos/sin of pos * inv_freq[i], inv_freq[i] = 1 / theta^(2i / rot).
        e.loopNest({half}, [&](ValueRange iv) {
          Value i = iv[0];
          Value inv;
          if (invFreq) {
            inv = memref::LoadOp::create(b, loc, invFreq, i);
          } else {
            Value twoI = arith::MulIOp::create(b, loc, i, e.index(2));
            Value exponent = arith::DivFOp::create(
                b, loc,
                arith::SIToFPOp::create(
                    b, loc, elt,
                    arith::IndexCastOp::create(b, loc, b.getI64Type(), twoI)),
                e.constant(rot, elt));
            Value powv =
                math::PowFOp::create(b, loc, e.constant(theta, elt), exponent);
            inv = arith::DivFOp::create(b, loc, e.constant(1.0, elt), powv);
          }
          Value ang = arith::MulFOp::create(b, loc, pos, inv);
          memref::StoreOp::create(b, loc, math::CosOp::create(b, loc, ang),
                                  cosT, i);
          memref::StoreOp::create(b, loc, math::SinOp::create(b, loc, ang),
                                  sinT, i);
        });
        e.loopNest({width / hd}, [&](ValueRange hv) {
          Value base = arith::MulIOp::create(b, loc, hv[0], e.index(hd));
          auto rotate = [&](Value i1, Value i2, Value ti, int64_t w) {
            Value x1 = e.load(x, {bi, t, i1}, w),
                  x2 = e.load(x, {bi, t, i2}, w);
            Value c = e.load(cosT, {ti}, w), s = e.load(sinT, {ti}, w);
            Value o1 = arith::SubFOp::create(
                b, loc, arith::MulFOp::create(b, loc, x1, c),
                arith::MulFOp::create(b, loc, x2, s));
            Value o2 = arith::AddFOp::create(
                b, loc, arith::MulFOp::create(b, loc, x2, c),
                arith::MulFOp::create(b, loc, x1, s));
            e.store(o1, out, {bi, t, i1}, w);
            e.store(o2, out, {bi, t, i2}, w);
          };
          e.forChunks(half, vl, [&](Value i, int64_t w) {
            if (interleaved) {
              Value two = arith::MulIOp::create(b, loc, i, e.index(2));
              Value i1 = arith::AddIOp::create(b, loc, base, two);
              Value i2 = arith::AddIOp::create(b, loc, i1, e.index(1));
              rotate(i1, i2, i, 1);
              return;
            }
            Value i1 = arith::AddIOp::create(b, loc, base, i);
            Value i2 = arith::AddIOp::create(b, loc, i1, e.index(half));
            rotate(i1, i2, i, w);
          });
          // Channels past rotary_dim pass through.
          if (rot < hd)
            e.forChunks(hd - rot, passVl, [&](Value j, int64_t w) {
              Value c = arith::AddIOp::create(
                  b, loc, base, arith::AddIOp::create(b, loc, j, e.index(rot)));
              e.store(e.load(x, {bi, t, c}, w), out, {bi, t, c}, w);
            });
        });
      });
  return success();
}
