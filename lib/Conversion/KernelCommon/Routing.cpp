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

/// The dot products of one row of `x` (indices `xAt` before the last dim)
/// with `count` consecutive weight rows (`w[group, col0 + c, :]`), in f32:
/// each load of `x` serves every weight row, and the `count` accumulators
/// are independent chains.
static SmallVector<Value> dotTile(KernelBuilder &k, const KernelView &x,
                                  ArrayRef<Value> xAt, const KernelView &w,
                                  Value group, Value col0, int64_t count,
                                  int64_t len, int64_t width) {
  Type f32 = k.b.getF32Type();
  auto step = [&](Value j, int64_t lanes, ValueRange acc) {
    SmallVector<Value> xi(xAt);
    xi.push_back(j);
    Value a = k.castValue(k.load(x, xi, lanes), f32);
    SmallVector<Value> next;
    for (int64_t c = 0; c < count; ++c) {
      Value col = arith::AddIOp::create(k.b, k.loc, col0, k.index(c));
      Value wv = k.castValue(k.load(w, {group, col, j}, lanes), f32);
      next.push_back(arith::AddFOp::create(
          k.b, k.loc, acc[c], arith::MulFOp::create(k.b, k.loc, a, wv)));
    }
    return next;
  };
  int64_t main = width > 1 ? len - len % width : 0;
  SmallVector<Value> acc(count, k.constant(0.0, f32));
  if (main > 0) {
    SmallVector<Value> lanes = k.forLoop(
        0, main, width, SmallVector<Value>(count, k.splat(acc[0], width)),
        [&](Value j, ValueRange it) { return step(j, width, it); });
    for (int64_t c = 0; c < count; ++c)
      acc[c] = k.sumLanes(lanes[c]);
  }
  return k.forLoop(main, len, 1, acc,
                   [&](Value j, ValueRange it) { return step(j, 1, it); });
}

static void emitGroupedMatmul(KernelBuilder &k, const KernelView &x,
                              const KernelView &w, const KernelView &groups,
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
  // Columns in tiles of `tile` weight rows sharing each load of x.
  int64_t tile = 8;
  while (cols % tile != 0)
    tile /= 2;
  // Positions (column tile, group); a position touches its group's rows.
  int64_t cost = tile * len * std::max<int64_t>(1, rows / numGroups) + rows;
  k.forEachPosition({cols / tile, numGroups}, cost, [&](ValueRange pos) {
    Value col0 = arith::MulIOp::create(k.b, k.loc, pos[0], k.index(tile));
    Value group = pos[1];
    k.forLoop(0, rows, 1, {}, [&](Value r, ValueRange) -> SmallVector<Value> {
      SmallVector<Value> at = k.delinearize(r, lead);
      Value mine = k.tableRow(k.load(groups, at, 1), numGroups);
      Value routed = arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::eq,
                                           mine, group);
      k.ifThen(routed, [&] {
        SmallVector<Value> dots =
            dotTile(k, x, at, w, group, col0, tile, len, width);
        for (int64_t c = 0; c < tile; ++c) {
          SmallVector<Value> outAt(at);
          outAt.push_back(arith::AddIOp::create(k.b, k.loc, col0, k.index(c)));
          k.store(k.castValue(dots[c], out.elementType), out, outAt, 1);
        }
      });
      return {};
    });
  });
}

bool mlir::rlx::isRoutingOp(Operation *op) {
  return isa<mir::TopKOp, mir::GroupedMatmulOp>(op);
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
      .Case([&](mir::GroupedMatmulOp) {
        emitGroupedMatmul(k, ins[0], ins[1], ins[2], outs[0]);
        return success();
      })
      .Default([](Operation *o) {
        return o->emitOpError("is not a routing kernel");
      });
}
