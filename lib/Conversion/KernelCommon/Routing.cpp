//===- Routing.cpp - Top-k and per-row expert matmuls, for every target ---===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The ops that route tokens to the experts of a mixture-of-experts layer:
//
// - mir.top_k walks each line k times, each pass taking the first element
//   (in a strict total order: value, then index) that comes after the
//   previous pass's pick; no scratch memory, O(k n) per line;
// - mir.grouped_matmul runs one position per (tile of output columns,
//   group): the position scans the rows' groups and computes the dot
//   products of the rows routed to its group with the tile's weight rows,
//   so each weight row is read once for all of them (from cache after the
//   first) and the weights of a group no row selects are never read.
//
// Written once on KernelBuilder's primitives.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rlx;

namespace {
/// The order top_k selects in: `precedes(a, b)` when `a` is taken before
/// `b` regardless of position; `ties(a, b)` when neither precedes.
struct SelectionOrder {
  KernelBuilder &k;
  bool largest;
  bool isFloat;

  Value isNan(Value v) {
    return arith::CmpFOp::create(k.b, k.loc, arith::CmpFPredicate::UNO, v, v);
  }
  Value isNumber(Value v) {
    return arith::CmpFOp::create(k.b, k.loc, arith::CmpFPredicate::ORD, v, v);
  }
  Value both(Value a, Value c) {
    return arith::AndIOp::create(k.b, k.loc, a, c);
  }
  Value either(Value a, Value c) {
    return arith::OrIOp::create(k.b, k.loc, a, c);
  }

  Value precedes(Value a, Value c) {
    Value strict =
        k.compare(largest ? CmpPredicate::GT : CmpPredicate::LT, a, c);
    if (!isFloat)
      return strict;
    // A NaN ranks above every number under `largest`, below otherwise.
    Value nanFirst =
        largest ? both(isNan(a), isNumber(c)) : both(isNumber(a), isNan(c));
    return either(strict, nanFirst);
  }
  Value ties(Value a, Value c) {
    Value equal = k.compare(CmpPredicate::EQ, a, c);
    return isFloat ? either(equal, both(isNan(a), isNan(c))) : equal;
  }
};
} // namespace

static Value indexLess(KernelBuilder &k, Value a, Value c) {
  return arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::slt, a, c);
}

static void emitTopK(KernelBuilder &k, mir::TopKOp op, const KernelView &in,
                     const KernelView &values, const KernelView &indices) {
  int64_t axis = *mir::normalizeAxis(op.getAxis(), in.rank());
  int64_t n = in.shape[axis], count = op.getK();
  SelectionOrder order{k, op.getLargest(), isa<FloatType>(in.elementType)};
  // One position per line: the values' shape with the axis as 1.
  SmallVector<int64_t> lines(values.shape);
  lines[axis] = 1;
  k.forEachPosition(lines, n * count, [&](ValueRange coords) {
    SmallVector<Value> base(coords.begin(), coords.end());
    Value none = k.index(-1);
    // Pass r takes the first element after the previous pick (pv, pi).
    k.forLoop(
        0, count, 1, {k.constant(0.0, in.elementType), none},
        [&](Value r, ValueRange prev) -> SmallVector<Value> {
          Value pv = prev[0], pi = prev[1];
          SmallVector<Value> best = k.forLoop(
              0, n, 1, {pv, none},
              [&](Value j, ValueRange it) -> SmallVector<Value> {
                Value v = k.load(in, withAxis(base, axis, j), 1);
                Value after =
                    order.either(indexLess(k, pi, k.index(0)),
                                 order.either(order.precedes(pv, v),
                                              order.both(order.ties(pv, v),
                                                         indexLess(k, pi, j))));
                Value better = order.either(indexLess(k, it[1], k.index(0)),
                                            order.precedes(v, it[0]));
                Value take = order.both(after, better);
                return {arith::SelectOp::create(k.b, k.loc, take, v, it[0]),
                        arith::SelectOp::create(k.b, k.loc, take, j, it[1])};
              });
          SmallVector<Value> at = withAxis(base, axis, r);
          k.store(best[0], values, at, 1);
          k.store(arith::IndexCastOp::create(k.b, k.loc, indices.elementType,
                                             best[1]),
                  indices, at, 1);
          return best;
        });
  });
}

/// The dot products of rows of `x` (`rows`: each row's indices before the
/// last dim) with `count` consecutive weight rows (`w[group, col0 + c, :]`),
/// in f32, row-major in the result: each load of `x` serves every weight
/// row and each weight load every row; the accumulators are independent
/// chains.
static SmallVector<Value> dotTile(KernelBuilder &k, const KernelView &x,
                                  ArrayRef<SmallVector<Value>> rows,
                                  const KernelView &w, Value group, Value col0,
                                  int64_t count, int64_t len, int64_t width) {
  Type f32 = k.b.getF32Type();
  int64_t n = rows.size();
  auto step = [&](Value j, int64_t lanes, ValueRange acc) {
    SmallVector<Value> xs;
    for (const SmallVector<Value> &at : rows) {
      SmallVector<Value> xi(at);
      xi.push_back(j);
      xs.push_back(k.castValue(k.load(x, xi, lanes), f32));
    }
    SmallVector<Value> next(acc.begin(), acc.end());
    for (int64_t c = 0; c < count; ++c) {
      Value col = arith::AddIOp::create(k.b, k.loc, col0, k.index(c));
      Value wv = k.castValue(k.load(w, {group, col, j}, lanes), f32);
      for (int64_t r = 0; r < n; ++r)
        next[r * count + c] =
            arith::AddFOp::create(k.b, k.loc, acc[r * count + c],
                                  arith::MulFOp::create(k.b, k.loc, xs[r], wv));
    }
    return next;
  };
  int64_t main = width > 1 ? len - len % width : 0;
  SmallVector<Value> acc(n * count, k.constant(0.0, f32));
  if (main > 0) {
    SmallVector<Value> lanes = k.forLoop(
        0, main, width, SmallVector<Value>(n * count, k.splat(acc[0], width)),
        [&](Value j, ValueRange it) { return step(j, width, it); });
    for (auto [a, l] : llvm::zip(acc, lanes))
      a = k.sumLanes(l);
  }
  return k.forLoop(main, len, 1, acc,
                   [&](Value j, ValueRange it) { return step(j, 1, it); });
}

/// scf.for from `lb` to `ub` (values) by `step`, without results.
static void dynamicLoop(KernelBuilder &k, Value lb, Value ub, int64_t step,
                        function_ref<void(Value)> body) {
  auto loop = scf::ForOp::create(k.b, k.loc, lb, ub, k.index(step));
  OpBuilder::InsertionGuard guard(k.b);
  k.b.setInsertionPoint(loop.getBody()->getTerminator());
  body(loop.getInductionVar());
}

/// An i64 element of a 1-D view as an index.
static Value loadIndex(KernelBuilder &k, const KernelView &v, Value i) {
  return arith::IndexCastOp::create(k.b, k.loc, k.b.getIndexType(),
                                    k.load(v, {i}, 1));
}

static void emitGroupedMatmul(KernelBuilder &k, const KernelView &x,
                              const KernelView &w, const KernelView &groups,
                              const KernelView *order,
                              const KernelView *offsets,
                              const KernelView &out) {
  ArrayRef<int64_t> lead = ArrayRef<int64_t>(x.shape).drop_back();
  int64_t rows = 1;
  for (int64_t d : lead)
    rows *= d;
  int64_t len = x.shape.back();
  int64_t numGroups = w.shape[0], cols = w.shape[1];
  // The dot products' vector width: a map over one row reading both rows.
  KernelView xRow = x.derive(x.offset, {len}, {x.innerStride()});
  KernelView wRow = w.derive(w.offset, {len}, {w.innerStride()});
  int64_t width = k.mapWidth(xRow, {xRow, wRow});
  // Columns in tiles of `tile` weight rows sharing each load of x (fewer
  // when rows are tiled too: rows x columns accumulators).
  int64_t rowTile = order ? 3 : 1;
  int64_t tile = 8;
  while (cols % tile != 0)
    tile /= 2;
  auto storeTile = [&](ArrayRef<SmallVector<Value>> at, Value col0,
                       ArrayRef<Value> dots) {
    for (auto [r, coords] : llvm::enumerate(at))
      for (int64_t c = 0; c < tile; ++c) {
        SmallVector<Value> outAt(coords);
        outAt.push_back(arith::AddIOp::create(k.b, k.loc, col0, k.index(c)));
        k.store(k.castValue(dots[r * tile + c], out.elementType), out, outAt,
                1);
      }
  };
  // Positions (column tile, group); a position touches its group's rows.
  int64_t cost = tile * len * std::max<int64_t>(1, rows / numGroups) + rows;
  // Sorted rows: group-major, so consecutive positions reuse the group's
  // rows from cache while they stream its weights; scanning: column-major.
  SmallVector<int64_t> space = {cols / tile, numGroups};
  if (order)
    std::swap(space[0], space[1]);
  k.forEachPosition(space, cost, [&](ValueRange pos) {
    Value tileIndex = order ? pos[1] : pos[0];
    Value group = order ? pos[0] : pos[1];
    Value col0 = arith::MulIOp::create(k.b, k.loc, tileIndex, k.index(tile));
    if (order) {
      // The group's rows are order[offsets[g] : offsets[g + 1]]: tiles of
      // rowTile rows, then one at a time.
      Value lo = loadIndex(k, *offsets, group);
      Value hi = loadIndex(
          k, *offsets, arith::AddIOp::create(k.b, k.loc, group, k.index(1)));
      Value count = arith::SubIOp::create(k.b, k.loc, hi, lo);
      Value whole = arith::MulIOp::create(
          k.b, k.loc,
          arith::DivUIOp::create(k.b, k.loc, count, k.index(rowTile)),
          k.index(rowTile));
      Value mid = arith::AddIOp::create(k.b, k.loc, lo, whole);
      auto rowsAt = [&](Value p, int64_t n) {
        SmallVector<SmallVector<Value>> at;
        for (int64_t i = 0; i < n; ++i)
          at.push_back(k.delinearize(
              loadIndex(k, *order,
                        arith::AddIOp::create(k.b, k.loc, p, k.index(i))),
              lead));
        return at;
      };
      dynamicLoop(k, lo, mid, rowTile, [&](Value p) {
        SmallVector<SmallVector<Value>> at = rowsAt(p, rowTile);
        storeTile(at, col0,
                  dotTile(k, x, at, w, group, col0, tile, len, width));
      });
      dynamicLoop(k, mid, hi, 1, [&](Value p) {
        SmallVector<SmallVector<Value>> at = rowsAt(p, 1);
        storeTile(at, col0,
                  dotTile(k, x, at, w, group, col0, tile, len, width));
      });
      return;
    }
    k.forLoop(0, rows, 1, {}, [&](Value r, ValueRange) -> SmallVector<Value> {
      SmallVector<SmallVector<Value>> at = {k.delinearize(r, lead)};
      Value mine = k.tableRow(k.load(groups, at[0], 1), numGroups);
      Value routed = arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::eq,
                                           mine, group);
      k.ifThen(routed, [&] {
        storeTile(at, col0,
                  dotTile(k, x, at, w, group, col0, tile, len, width));
      });
      return {};
    });
  });
}

/// A counting sort of the rows by group, on one thread: the group sizes
/// into offsets[g + 1], their prefix sums, then each row at its group's
/// cursor (offsets[g], advanced), and the cursors shifted back to starts.
static void emitSortGroups(KernelBuilder &k, const KernelView &groups,
                           const KernelView &order, const KernelView &offsets,
                           int64_t numGroups) {
  int64_t rows = groups.numElements();
  Type i64 = k.b.getI64Type();
  auto inc = [&](Value v) {
    return arith::AddIOp::create(k.b, k.loc, v, k.constant(1, i64)).getResult();
  };
  auto groupOf = [&](Value r) {
    return k.tableRow(k.load(groups, k.delinearize(r, groups.shape), 1),
                      numGroups);
  };
  auto loop = [&](int64_t lb, int64_t ub, function_ref<void(Value)> body) {
    k.forLoop(lb, ub, 1, {}, [&](Value i, ValueRange) -> SmallVector<Value> {
      body(i);
      return {};
    });
  };
  k.serial([&] {
    loop(0, numGroups + 1,
         [&](Value g) { k.store(k.constant(0, i64), offsets, {g}, 1); });
    loop(0, rows, [&](Value r) {
      Value at = arith::AddIOp::create(k.b, k.loc, groupOf(r), k.index(1));
      k.store(inc(k.load(offsets, {at}, 1)), offsets, {at}, 1);
    });
    loop(0, numGroups, [&](Value g) {
      Value next = arith::AddIOp::create(k.b, k.loc, g, k.index(1));
      Value sum = arith::AddIOp::create(k.b, k.loc, k.load(offsets, {g}, 1),
                                        k.load(offsets, {next}, 1));
      k.store(sum, offsets, {next}, 1);
    });
    loop(0, rows, [&](Value r) {
      Value g = groupOf(r);
      Value cursor = k.load(offsets, {g}, 1);
      k.store(
          arith::IndexCastOp::create(k.b, k.loc, i64, r), order,
          {arith::IndexCastOp::create(k.b, k.loc, k.b.getIndexType(), cursor)},
          1);
      k.store(inc(cursor), offsets, {g}, 1);
    });
    // offsets[g] is now group g's end: shift by one.
    loop(0, numGroups, [&](Value i) {
      Value g = arith::SubIOp::create(k.b, k.loc, k.index(numGroups), i);
      Value prev = arith::SubIOp::create(k.b, k.loc, g, k.index(1));
      k.store(k.load(offsets, {prev}, 1), offsets, {g}, 1);
    });
    k.store(k.constant(0, i64), offsets, {k.index(0)}, 1);
  });
}

bool mlir::rlx::isRoutingOp(Operation *op) {
  return isa<mir::TopKOp, mir::GroupedMatmulOp, mir::SortGroupsOp>(op);
}

LogicalResult mlir::rlx::emitRoutingKernel(KernelBuilder &k, Operation *op,
                                           ArrayRef<KernelView> ins,
                                           ArrayRef<KernelView> outs) {
  if (failed(requireTensorOperands(k, op, ins)))
    return failure();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](mir::TopKOp t) {
        emitTopK(k, t, ins[0], outs[0], outs[1]);
        return success();
      })
      .Case([&](mir::GroupedMatmulOp g) {
        bool sorted = static_cast<bool>(g.getOrder());
        emitGroupedMatmul(k, ins[0], ins[1], ins[2], sorted ? &ins[3] : nullptr,
                          sorted ? &ins[4] : nullptr, outs[0]);
        return success();
      })
      .Case([&](mir::SortGroupsOp s) {
        emitSortGroups(k, ins[0], outs[0], outs[1], s.getNumGroups());
        return success();
      })
      .Default([](Operation *o) {
        return o->emitOpError("is not a routing kernel");
      });
}
