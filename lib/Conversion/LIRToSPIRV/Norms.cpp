//===- Norms.cpp - Row-wise GPU kernels: norms, softmax, reductions -------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// RMSNorm, LayerNorm, their fused residual forms and softmax: one workgroup
// per row of the last dimension. Each thread strides over the row, the
// partial statistics meet in a tree reduction through workgroup memory, and
// the thread that read an element writes its result (so no barrier guards
// the row itself). Reductions over arbitrary axes: one workgroup per output
// element, the threads striding over the reduced elements.
//
//===----------------------------------------------------------------------===//

#include "GPUKernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"
#include <limits>

using namespace mlir;
using namespace mlir::rlx;

/// Threads per workgroup for rows (or reductions) of `n` elements: a power
/// of two in [32, 256], within the device limit.
static int64_t rowThreads(GPUKernelEmitter &e, int64_t n) {
  int64_t limit = std::min<int64_t>(256, e.target.maxInvocations);
  int64_t t =
      std::max<int64_t>(32, llvm::PowerOf2Ceil(std::max<int64_t>(n, 1)));
  return std::min<int64_t>(
      t, static_cast<int64_t>(llvm::bit_floor(static_cast<uint64_t>(limit))));
}

namespace {
/// One row of a row-wise kernel, processed by the threads of a workgroup.
struct Row {
  GPUKernelEmitter &e;
  SmallVector<Value> outer;
  Value tid;
  int64_t n, threads;

  SmallVector<Value> at(Value j) const {
    SmallVector<Value> i(outer);
    i.push_back(j);
    return i;
  }
  Value load(const GPUView &v, Value j) const { return e.load(v, at(j)); }
  void store(Value x, const GPUView &v, Value j) const { e.store(x, v, at(j)); }
  /// Folds `body(j)` over this thread's elements of the row.
  Value partial(Value init, bool isMax,
                function_ref<Value(Value j)> body) const {
    return e.forLoop(tid, e.index(n), threads, {init},
                     [&](Value j, ValueRange it) -> SmallVector<Value> {
                       return {e.combine(isMax, it[0], body(j))};
                     })[0];
  }
  void forEach(function_ref<void(Value j)> body) const {
    e.forLoop(tid, e.index(n), threads, {},
              [&](Value j, ValueRange) -> SmallVector<Value> {
                body(j);
                return {};
              });
  }
};
} // namespace

/// Runs `body` once per row of `like` (all dims but the last).
static void forEachRow(GPUKernelEmitter &e, const GPUView &like,
                       function_ref<void(Row &, Value scratch)> body) {
  int64_t n = like.shape.empty() ? 1 : like.shape.back();
  ArrayRef<int64_t> outerShape = ArrayRef<int64_t>(like.shape).drop_back();
  int64_t rows = 1;
  for (int64_t d : outerShape)
    rows *= d;
  int64_t threads = rowThreads(e, n);
  Value scratch = e.sharedAlloc({threads}, like.elementType);
  e.forEachWorkgroupItem(rows, threads, [&](Value row, Value tid) {
    Row r{e, e.delinearize(row, outerShape), tid, n, threads};
    body(r, scratch);
  });
}

/// Scales the normalized value by w or (1 + w).
static Value applyWeight(GPUKernelEmitter &e, Value y, Value w,
                         bool unitOffset) {
  if (unitOffset)
    w = e.addF(e.constant(1.0, w.getType()), w);
  return e.mulF(y, w);
}

static void emitRmsNorm(GPUKernelEmitter &e, const GPUView &x,
                        const GPUView *residual, const GPUView &w, float eps,
                        bool unitOffset, const GPUView *sumOut,
                        const GPUView &out) {
  Type elt = out.elementType;
  forEachRow(e, out, [&](Row &row, Value scratch) {
    // With a residual, the sum is written first and normalized from there
    // (by the same thread, so no barrier is needed).
    Value ss = row.partial(e.constant(0.0, elt), false, [&](Value j) {
      Value v = row.load(x, j);
      if (residual) {
        v = e.addF(v, row.load(*residual, j));
        row.store(v, *sumOut, j);
      }
      return e.mulF(v, v);
    });
    ss = e.workgroupReduce(ss, false, scratch, row.tid, row.threads);
    Value mean = arith::DivFOp::create(e.b, e.loc, ss, e.constant(row.n, elt));
    Value inv =
        math::RsqrtOp::create(e.b, e.loc, e.addF(mean, e.constant(eps, elt)));
    const GPUView &src = residual ? *sumOut : x;
    row.forEach([&](Value j) {
      Value y = e.mulF(row.load(src, j), inv);
      row.store(applyWeight(e, y, e.load(w, {j}), unitOffset), out, j);
    });
  });
}

static void emitLayerNorm(GPUKernelEmitter &e, const GPUView &x,
                          const GPUView *residual, const GPUView &gamma,
                          const GPUView &beta, float eps, const GPUView *sumOut,
                          const GPUView &out) {
  Type elt = out.elementType;
  forEachRow(e, out, [&](Row &row, Value scratch) {
    Value zero = e.constant(0.0, elt), count = e.constant(row.n, elt);
    Value total = row.partial(zero, false, [&](Value j) {
      Value v = row.load(x, j);
      if (residual) {
        v = e.addF(v, row.load(*residual, j));
        row.store(v, *sumOut, j);
      }
      return v;
    });
    total = e.workgroupReduce(total, false, scratch, row.tid, row.threads);
    Value mean = arith::DivFOp::create(e.b, e.loc, total, count);
    const GPUView &src = residual ? *sumOut : x;
    Value sq = row.partial(zero, false, [&](Value j) {
      Value d = arith::SubFOp::create(e.b, e.loc, row.load(src, j), mean);
      return e.mulF(d, d);
    });
    sq = e.workgroupReduce(sq, false, scratch, row.tid, row.threads);
    Value var = arith::DivFOp::create(e.b, e.loc, sq, count);
    Value inv =
        math::RsqrtOp::create(e.b, e.loc, e.addF(var, e.constant(eps, elt)));
    row.forEach([&](Value j) {
      Value d = arith::SubFOp::create(e.b, e.loc, row.load(src, j), mean);
      Value y = e.mulF(e.mulF(d, inv), e.load(gamma, {j}));
      row.store(e.addF(y, e.load(beta, {j})), out, j);
    });
  });
}

static LogicalResult emitSoftmax(GPUKernelEmitter &e, mir::SoftmaxOp op,
                                 const GPUView &x, const GPUView &out) {
  int64_t rank = out.rank();
  int64_t axis = op.getAxis() < 0 ? op.getAxis() + rank : op.getAxis();
  if (axis != rank - 1)
    return op.emitOpError("the SPIR-V back end implements softmax over the "
                          "last axis only");
  Type elt = out.elementType;
  forEachRow(e, out, [&](Row &row, Value scratch) {
    Value lowest = e.constant(-std::numeric_limits<float>::infinity(), elt);
    Value m =
        row.partial(lowest, true, [&](Value j) { return row.load(x, j); });
    m = e.workgroupReduce(m, true, scratch, row.tid, row.threads);
    Value sum = row.partial(e.constant(0.0, elt), false, [&](Value j) {
      Value ex = math::ExpOp::create(
          e.b, e.loc, arith::SubFOp::create(e.b, e.loc, row.load(x, j), m));
      row.store(ex, out, j);
      return ex;
    });
    sum = e.workgroupReduce(sum, false, scratch, row.tid, row.threads);
    Value inv = arith::DivFOp::create(e.b, e.loc, e.constant(1.0, elt), sum);
    row.forEach(
        [&](Value j) { row.store(e.mulF(row.load(out, j), inv), out, j); });
  });
  return success();
}

LogicalResult mlir::rlx::emitGPUNormKernel(GPUKernelEmitter &e, Operation *op,
                                           ArrayRef<GPUView> ins,
                                           ArrayRef<GPUView> outs) {
  for (const GPUView &in : ins)
    if (in.isScalar())
      return op->emitOpError("expects tensor operands on the SPIR-V back end");
  if (!isa<FloatType>(outs[0].elementType))
    return op->emitOpError("expects float operands");
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](mir::RmsNormOp n) {
        emitRmsNorm(e, ins[0], nullptr, ins[1], n.getEpsilon(),
                    n.getUnitOffset(), nullptr, outs[0]);
        return success();
      })
      .Case([&](mir::FusedResidualRmsNormOp n) {
        emitRmsNorm(e, ins[0], &ins[1], ins[2], n.getEpsilon(),
                    n.getUnitOffset(), &outs[0], outs[1]);
        return success();
      })
      .Case([&](mir::LayerNormOp n) {
        emitLayerNorm(e, ins[0], nullptr, ins[1], ins[2], n.getEpsilon(),
                      nullptr, outs[0]);
        return success();
      })
      .Case([&](mir::FusedResidualLayerNormOp n) {
        emitLayerNorm(e, ins[0], &ins[1], ins[2], ins[3], n.getEpsilon(),
                      &outs[0], outs[1]);
        return success();
      })
      .Case(
          [&](mir::SoftmaxOp s) { return emitSoftmax(e, s, ins[0], outs[0]); })
      .Default(
          [](Operation *o) { return o->emitOpError("is not a norm kernel"); });
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult mlir::rlx::emitGPUReduceKernel(GPUKernelEmitter &e, Operation *op,
                                             ArrayRef<GPUView> ins,
                                             const GPUView &out) {
  const GPUView &in = ins[0];
  if (in.isScalar())
    return op->emitOpError("expects a tensor operand on the SPIR-V back end");
  Type elt = out.elementType;
  ArrayRef<int64_t> axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
  bool keep = op->hasAttr("keep_dims");
  bool isMax = isa<mir::ReduceMaxOp>(op);
  int64_t rank = in.rank();
  auto reduced = [&](int64_t d) {
    return llvm::is_contained(axes, d) || llvm::is_contained(axes, d - rank);
  };
  SmallVector<int64_t> keptShape, reducedShape;
  for (int64_t d = 0; d < rank; ++d)
    (reduced(d) ? reducedShape : keptShape).push_back(in.shape[d]);
  int64_t outputs = 1, count = 1;
  for (int64_t d : keptShape)
    outputs *= d;
  for (int64_t d : reducedShape)
    count *= d;

  Value init;
  if (isa<FloatType>(elt))
    init =
        e.constant(isMax ? -std::numeric_limits<float>::infinity() : 0.0, elt);
  else
    init = arith::ConstantOp::create(
        e.b, e.loc,
        e.b.getIntegerAttr(
            elt, isMax ? APInt::getSignedMinValue(elt.getIntOrFloatBitWidth())
                       : APInt(elt.getIntOrFloatBitWidth(), 0)));
  int64_t threads = rowThreads(e, count);
  Value scratch = e.sharedAlloc({threads}, elt);
  e.forEachWorkgroupItem(outputs, threads, [&](Value o, Value tid) {
    SmallVector<Value> kept = e.delinearize(o, keptShape);
    Value acc =
        e.forLoop(tid, e.index(count), threads, {init},
                  [&](Value r, ValueRange it) -> SmallVector<Value> {
                    SmallVector<Value> red = e.delinearize(r, reducedShape);
                    SmallVector<Value> idx;
                    unsigned ki = 0, ri = 0;
                    for (int64_t d = 0; d < rank; ++d)
                      idx.push_back(reduced(d) ? red[ri++] : kept[ki++]);
                    return {e.combine(isMax, it[0], e.load(in, idx))};
                  })[0];
    acc = e.workgroupReduce(acc, isMax, scratch, tid, threads);
    if (isa<mir::ReduceMeanOp>(op))
      acc = e.mulF(acc, e.constant(1.0 / count, elt));
    e.ifThen(arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::eq, tid,
                                   e.index(0)),
             [&] {
               SmallVector<Value> oidx;
               unsigned ki = 0;
               for (int64_t d = 0; d < rank; ++d) {
                 if (!reduced(d))
                   oidx.push_back(kept[ki++]);
                 else if (keep)
                   oidx.push_back(e.index(0));
               }
               e.store(acc, out, oidx);
             });
  });
  return success();
}
