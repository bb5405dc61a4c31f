//===- Norms.cpp - Row-wise CPU kernels: norms, softmax, reductions -------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// RMSNorm, LayerNorm, their fused residual forms and softmax work row by row
// over the last dimension: vector accumulators for the statistics, then one
// vectorized pass that writes the row. Reductions over arbitrary axes
// accumulate into the output, vectorized when the last axis is kept.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"
#include <limits>

using namespace mlir;
using namespace mlir::rlx;

namespace {
/// A row-wise kernel over `shape[:-1]` rows of `n` elements.
struct RowKernel {
  KernelEmitter &e;
  int64_t n;
  int64_t vl;
  SmallVector<Value> outer;

  SmallVector<Value> at(Value j) {
    SmallVector<Value> i(outer);
    i.push_back(j);
    return i;
  }
  Value load(Value m, Value j, int64_t w) { return e.load(m, at(j), w); }
  void store(Value v, Value m, Value j, int64_t w) { e.store(v, m, at(j), w); }
  /// A rank-1 weight [n].
  Value weight(Value m, Value j, int64_t w) { return e.load(m, {j}, w); }
};
} // namespace

static int64_t rowVectorWidth(ArrayRef<Value> memrefs) {
  int64_t vl = 16;
  for (Value m : memrefs) {
    vl = std::min(vl, KernelEmitter::vectorWidth(
                          cast<MemRefType>(m.getType()).getElementType()));
    if (KernelEmitter::innerStride(m) != 1)
      vl = 1;
  }
  return vl;
}

static void forEachRow(KernelEmitter &e, Value like, ArrayRef<Value> memrefs,
                       function_ref<void(RowKernel &)> body) {
  auto ty = cast<MemRefType>(like.getType());
  ArrayRef<int64_t> shape = ty.getShape();
  int64_t chunks = std::clamp<int64_t>(ty.getNumElements() / 16384, 1, 64);
  e.parallelNest(shape.drop_back(), chunks, [&](ValueRange ivs) {
    RowKernel row{e, shape.back(), rowVectorWidth(memrefs),
                  SmallVector<Value>(ivs)};
    body(row);
  });
}

/// Scales the normalized row by (w) or (1 + w) and writes it.
static Value applyWeight(KernelEmitter &e, Value y, Value w, bool unitOffset,
                         int64_t width) {
  if (unitOffset)
    w = arith::AddFOp::create(
        e.b, e.loc,
        e.splat(e.constant(1.0, getElementTypeOrSelf(w.getType())), width), w);
  return arith::MulFOp::create(e.b, e.loc, y, w);
}

static LogicalResult emitRmsNorm(KernelEmitter &e, Value x, Value residual,
                                 Value w, float eps, bool unitOffset,
                                 Value sumOut, Value out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Type elt = cast<MemRefType>(out.getType()).getElementType();
  SmallVector<Value> all = {x, out};
  if (residual)
    all.append({residual, sumOut});
  forEachRow(e, out, all, [&](RowKernel &row) {
    // With a residual, the sum is written first and normalized from there.
    Value src = x;
    Value zero = e.constant(0.0, elt);
    Value ss = e.reduceChunks(
        row.n, row.vl, vector::CombiningKind::ADD, zero,
        [&](Value j, int64_t width) {
          Value v = row.load(x, j, width);
          if (residual) {
            v = arith::AddFOp::create(b, loc, v, row.load(residual, j, width));
            row.store(v, sumOut, j, width);
          }
          return arith::MulFOp::create(b, loc, v, v).getResult();
        });
    if (residual)
      src = sumOut;
    Value mean = arith::DivFOp::create(b, loc, ss, e.constant(row.n, elt));
    Value inv = math::RsqrtOp::create(
        b, loc, arith::AddFOp::create(b, loc, mean, e.constant(eps, elt)));
    e.forChunks(row.n, row.vl, [&](Value j, int64_t width) {
      Value y = arith::MulFOp::create(b, loc, row.load(src, j, width),
                                      e.splat(inv, width));
      row.store(applyWeight(e, y, row.weight(w, j, width), unitOffset, width),
                out, j, width);
    });
  });
  return success();
}

static LogicalResult emitLayerNorm(KernelEmitter &e, Value x, Value residual,
                                   Value gamma, Value beta, float eps,
                                   Value sumOut, Value out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Type elt = cast<MemRefType>(out.getType()).getElementType();
  SmallVector<Value> all = {x, out};
  if (residual)
    all.append({residual, sumOut});
  forEachRow(e, out, all, [&](RowKernel &row) {
    Value zero = e.constant(0.0, elt);
    Value count = e.constant(row.n, elt);
    Value total = e.reduceChunks(
        row.n, row.vl, vector::CombiningKind::ADD, zero,
        [&](Value j, int64_t width) {
          Value v = row.load(x, j, width);
          if (residual) {
            v = arith::AddFOp::create(b, loc, v, row.load(residual, j, width));
            row.store(v, sumOut, j, width);
          }
          return v;
        });
    Value src = residual ? sumOut : x;
    Value mean = arith::DivFOp::create(b, loc, total, count);
    Value sq = e.reduceChunks(
        row.n, row.vl, vector::CombiningKind::ADD, zero,
        [&](Value j, int64_t width) {
          Value d = arith::SubFOp::create(b, loc, row.load(src, j, width),
                                          e.splat(mean, width));
          return arith::MulFOp::create(b, loc, d, d).getResult();
        });
    Value var = arith::DivFOp::create(b, loc, sq, count);
    Value inv = math::RsqrtOp::create(
        b, loc, arith::AddFOp::create(b, loc, var, e.constant(eps, elt)));
    e.forChunks(row.n, row.vl, [&](Value j, int64_t width) {
      Value d = arith::SubFOp::create(b, loc, row.load(src, j, width),
                                      e.splat(mean, width));
      Value y = arith::MulFOp::create(b, loc, d, e.splat(inv, width));
      y = arith::MulFOp::create(b, loc, y, row.weight(gamma, j, width));
      y = arith::AddFOp::create(b, loc, y, row.weight(beta, j, width));
      row.store(y, out, j, width);
    });
  });
  return success();
}

static LogicalResult emitSoftmax(KernelEmitter &e, mir::SoftmaxOp op, Value x,
                                 Value out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  int64_t rank = cast<MemRefType>(out.getType()).getRank();
  int64_t axis = op.getAxis() < 0 ? op.getAxis() + rank : op.getAxis();
  if (axis != rank - 1)
    return op.emitOpError("the CPU back end implements softmax over the last "
                          "axis only");
  Type elt = cast<MemRefType>(out.getType()).getElementType();
  forEachRow(e, out, {x, out}, [&](RowKernel &row) {
    Value lowest = e.constant(-std::numeric_limits<float>::infinity(), elt);
    Value m = e.reduceChunks(
        row.n, row.vl, vector::CombiningKind::MAXIMUMF, lowest,
        [&](Value j, int64_t width) { return row.load(x, j, width); });
    Value sum =
        e.reduceChunks(row.n, row.vl, vector::CombiningKind::ADD,
                       e.constant(0.0, elt), [&](Value j, int64_t width) {
                         Value d = arith::SubFOp::create(
                             b, loc, row.load(x, j, width), e.splat(m, width));
                         Value ex = math::ExpOp::create(b, loc, d);
                         row.store(ex, out, j, width);
                         return ex;
                       });
    Value inv = arith::DivFOp::create(b, loc, e.constant(1.0, elt), sum);
    e.forChunks(row.n, row.vl, [&](Value j, int64_t width) {
      row.store(arith::MulFOp::create(b, loc, row.load(out, j, width),
                                      e.splat(inv, width)),
                out, j, width);
    });
  });
  return success();
}

LogicalResult mlir::rlx::emitNormKernel(KernelEmitter &e, Operation *op,
                                        ArrayRef<KernelInput> ins,
                                        ArrayRef<Value> outs) {
  for (const KernelInput &in : ins)
    if (!in.memref)
      return op->emitOpError("expects tensor operands on the CPU back end");
  auto m = [&](unsigned i) { return ins[i].memref; };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](mir::RmsNormOp n) {
        return emitRmsNorm(e, m(0), nullptr, m(1), n.getEpsilon(),
                           n.getUnitOffset(), nullptr, outs[0]);
      })
      .Case([&](mir::FusedResidualRmsNormOp n) {
        return emitRmsNorm(e, m(0), m(1), m(2), n.getEpsilon(),
                           n.getUnitOffset(), outs[0], outs[1]);
      })
      .Case([&](mir::LayerNormOp n) {
        return emitLayerNorm(e, m(0), nullptr, m(1), m(2), n.getEpsilon(),
                             nullptr, outs[0]);
      })
      .Case([&](mir::FusedResidualLayerNormOp n) {
        return emitLayerNorm(e, m(0), m(1), m(2), m(3), n.getEpsilon(), outs[0],
                             outs[1]);
      })
      .Case([&](mir::SoftmaxOp s) { return emitSoftmax(e, s, m(0), outs[0]); })
      .Default(
          [](Operation *o) { return o->emitOpError("is not a norm kernel"); });
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult mlir::rlx::emitReduceKernel(KernelEmitter &e, Operation *op,
                                          ArrayRef<KernelInput> ins,
                                          Value out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value in = ins[0].memref;
  if (!in)
    return op->emitOpError("expects a tensor operand on the CPU back end");
  auto inTy = cast<MemRefType>(in.getType());
  auto outTy = cast<MemRefType>(out.getType());
  Type elt = outTy.getElementType();
  ArrayRef<int64_t> axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
  bool keep = op->hasAttr("keep_dims");
  bool isMax = isa<mir::ReduceMaxOp>(op);
  auto kind =
      isMax ? vector::CombiningKind::MAXIMUMF : vector::CombiningKind::ADD;
  int64_t rank = inTy.getRank();
  auto reduced = [&](int64_t d) {
    return llvm::is_contained(axes, d) || llvm::is_contained(axes, d - rank);
  };
  bool lastKept = !reduced(rank - 1);

  // out = identity.
  double init = isMax ? -std::numeric_limits<float>::infinity() : 0.0;
  e.fill(out, init);

  // out[proj(i)] = combine(out[proj(i)], in[i]).
  int64_t vl =
      lastKept ? std::min<int64_t>(KernelEmitter::vectorWidth(elt), 16) : 1;
  if (lastKept && (KernelEmitter::innerStride(in) != 1 ||
                   KernelEmitter::innerStride(out) != 1))
    vl = 1;
  ArrayRef<int64_t> shape = inTy.getShape();
  auto project = [&](ValueRange ivs) {
    SmallVector<Value> o;
    for (int64_t d = 0; d < rank; ++d) {
      if (!reduced(d))
        o.push_back(ivs[d]);
      else if (keep)
        o.push_back(e.index(0));
    }
    return o;
  };
  if (lastKept) {
    e.loopNest(shape.drop_back(), [&](ValueRange outer) {
      e.forChunks(shape.back(), vl, [&](Value j, int64_t width) {
        SmallVector<Value> ivs(outer);
        ivs.push_back(j);
        SmallVector<Value> o = project(ivs);
        Value acc =
            e.combine(kind, e.load(out, o, width), e.load(in, ivs, width));
        e.store(acc, out, o, width);
      });
    });
  } else {
    e.loopNest(shape, [&](ValueRange ivs) {
      SmallVector<Value> o = project(ivs);
      Value acc = e.combine(kind, e.load(out, o, 1), e.load(in, ivs, 1));
      e.store(acc, out, o, 1);
    });
  }
  if (isa<mir::ReduceMeanOp>(op)) {
    int64_t count = 1;
    for (int64_t d = 0; d < rank; ++d)
      if (reduced(d))
        count *= shape[d];
    Value inv = e.constant(1.0 / count, elt);
    e.loopNest(outTy.getShape(), [&](ValueRange ivs) {
      Value v = e.load(out, ivs, 1);
      e.store(arith::MulFOp::create(b, loc, v, inv), out, ivs, 1);
    });
  }
  return success();
}
