//===- Norms.cpp - Row-wise kernels, once for every target ----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// RMSNorm, LayerNorm, their fused residual forms, softmax and log-softmax
// work row by row over the last dimension (softmax over any axis, as rows of
// a view that makes it the last): reductions for the statistics, then one pass
// that writes the row. The target runs the rows (a thread per chunk of rows
// with vector accumulators on the CPU, a workgroup per row with a tree
// reduction in workgroup memory on SPIR-V).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"
#include <limits>

using namespace mlir;
using namespace mlir::rlx;

using vector::CombiningKind;

/// Scales the normalized row by (w) or (1 + w).
static Value applyWeight(KernelBuilder &k, Value y, Value w, bool unitOffset) {
  FloatOps m{k};
  if (unitOffset)
    w = m.add(k.constantLike(1.0, w), w);
  return m.mul(y, w);
}

/// With `roundTo` (the op's round_to), both outputs are rounded: the
/// residual sum after the normalization has read it unrounded.
static void emitRmsNorm(KernelBuilder &k, const KernelView &x,
                        const KernelView *residual, const KernelView &w,
                        float eps, bool unitOffset, const KernelView *sumOut,
                        const KernelView &out, Type roundTo) {
  FloatOps m{k};
  Type elt = out.elementType;
  SmallVector<KernelView> all = {x, out};
  if (residual)
    all.append({*residual, *sumOut});
  k.forEachRow(out, all, [&](RowScope &row) {
    // With a residual, the sum is written first and normalized from there
    // (by the same thread, so no barrier is needed).
    Value ss = row.reduce(k.constant(0.0, elt), CombiningKind::ADD,
                          [&](Value j, int64_t width) {
                            Value v = k.load(x, row.at(j), width);
                            if (residual) {
                              v = m.add(v, k.load(*residual, row.at(j), width));
                              k.store(v, *sumOut, row.at(j), width);
                            }
                            return m.mul(v, v);
                          });
    Value mean = m.div(ss, k.constant(row.n, elt));
    Value inv = m.rsqrt(m.add(mean, k.constant(eps, elt)));
    const KernelView &src = residual ? *sumOut : x;
    row.forEach([&](Value j, int64_t width) {
      Value v = k.load(src, row.at(j), width);
      Value y = m.mul(v, k.splat(inv, width));
      k.store(k.roundTo(applyWeight(k, y, k.load(w, {j}, width), unitOffset),
                        roundTo),
              out, row.at(j), width);
      if (residual && roundTo)
        k.store(k.roundTo(v, roundTo), *sumOut, row.at(j), width);
    });
  });
}

static void emitLayerNorm(KernelBuilder &k, const KernelView &x,
                          const KernelView *residual, const KernelView &gamma,
                          const KernelView &beta, float eps,
                          const KernelView *sumOut, const KernelView &out,
                          Type roundTo) {
  FloatOps m{k};
  Type elt = out.elementType;
  SmallVector<KernelView> all = {x, out};
  if (residual)
    all.append({*residual, *sumOut});
  k.forEachRow(out, all, [&](RowScope &row) {
    Value zero = k.constant(0.0, elt), count = k.constant(row.n, elt);
    Value total =
        row.reduce(zero, CombiningKind::ADD, [&](Value j, int64_t width) {
          Value v = k.load(x, row.at(j), width);
          if (residual) {
            v = m.add(v, k.load(*residual, row.at(j), width));
            k.store(v, *sumOut, row.at(j), width);
          }
          return v;
        });
    Value mean = m.div(total, count);
    const KernelView &src = residual ? *sumOut : x;
    Value sq =
        row.reduce(zero, CombiningKind::ADD, [&](Value j, int64_t width) {
          Value d = m.sub(k.load(src, row.at(j), width), k.splat(mean, width));
          return m.mul(d, d);
        });
    Value var = m.div(sq, count);
    Value inv = m.rsqrt(m.add(var, k.constant(eps, elt)));
    row.forEach([&](Value j, int64_t width) {
      Value v = k.load(src, row.at(j), width);
      Value d = m.sub(v, k.splat(mean, width));
      Value y = m.mul(m.mul(d, k.splat(inv, width)), k.load(gamma, {j}, width));
      k.store(k.roundTo(m.add(y, k.load(beta, {j}, width)), roundTo), out,
              row.at(j), width);
      if (residual && roundTo)
        k.store(k.roundTo(v, roundTo), *sumOut, row.at(j), width);
    });
  });
}

/// `view` with dimensions `a` and `b` exchanged, made addressable.
static KernelView swapDims(KernelBuilder &k, const KernelView &view, int64_t a,
                           int64_t b) {
  SmallVector<int64_t> shape = view.shape, strides = view.strides;
  std::swap(shape[a], shape[b]);
  std::swap(strides[a], strides[b]);
  return k.materialize(view.derive(view.offset, shape, strides));
}

/// Softmax, or with `log` its logarithm (x - max - log(sum(exp(x - max)))),
/// along `axis` (negative counts from the end).
static void emitSoftmax(KernelBuilder &k, int64_t axis, bool log, KernelView x,
                        KernelView out) {
  FloatOps m{k};
  int64_t rank = out.rank();
  if (axis < 0)
    axis += rank;
  // Softmax over another axis is the same row kernel on views whose last
  // dimension is that axis (strided rows: the loads and stores are scalar).
  if (rank > 0 && axis != rank - 1) {
    x = swapDims(k, x, axis, rank - 1);
    out = swapDims(k, out, axis, rank - 1);
  }
  Type elt = out.elementType;
  k.forEachRow(out, {x, out}, [&](RowScope &row) {
    Value lowest = k.constant(-std::numeric_limits<float>::infinity(), elt);
    Value mx = row.reduce(
        lowest, CombiningKind::MAXIMUMF,
        [&](Value j, int64_t width) { return k.load(x, row.at(j), width); });
    Value sum = row.reduce(
        k.constant(0.0, elt), CombiningKind::ADD, [&](Value j, int64_t width) {
          Value ex = math::ExpOp::create(
              k.b, k.loc,
              m.sub(k.load(x, row.at(j), width), k.splat(mx, width)));
          if (!log)
            k.store(ex, out, row.at(j), width);
          return ex;
        });
    if (log) {
      Value shift = m.add(mx, math::LogOp::create(k.b, k.loc, sum));
      row.forEach([&](Value j, int64_t width) {
        k.store(m.sub(k.load(x, row.at(j), width), k.splat(shift, width)), out,
                row.at(j), width);
      });
      return;
    }
    Value inv = m.div(k.constant(1.0, elt), sum);
    row.forEach([&](Value j, int64_t width) {
      k.store(m.mul(k.load(out, row.at(j), width), k.splat(inv, width)), out,
              row.at(j), width);
    });
  });
}

LogicalResult mlir::rlx::emitNormKernel(KernelBuilder &k, Operation *op,
                                        ArrayRef<KernelView> ins,
                                        ArrayRef<KernelView> outs) {
  if (failed(requireTensorOperands(k, op, ins)))
    return failure();
  if (!isa<FloatType>(outs[0].elementType))
    return op->emitOpError("expects float operands");
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](mir::RmsNormOp n) {
        emitRmsNorm(k, ins[0], nullptr, ins[1], n.getEpsilon(),
                    n.getUnitOffset(), nullptr, outs[0],
                    n.getRoundTo().value_or(Type()));
        return success();
      })
      .Case([&](mir::FusedResidualRmsNormOp n) {
        emitRmsNorm(k, ins[0], &ins[1], ins[2], n.getEpsilon(),
                    n.getUnitOffset(), &outs[0], outs[1],
                    n.getRoundTo().value_or(Type()));
        return success();
      })
      .Case([&](mir::LayerNormOp n) {
        emitLayerNorm(k, ins[0], nullptr, ins[1], ins[2], n.getEpsilon(),
                      nullptr, outs[0], n.getRoundTo().value_or(Type()));
        return success();
      })
      .Case([&](mir::FusedResidualLayerNormOp n) {
        emitLayerNorm(k, ins[0], &ins[1], ins[2], ins[3], n.getEpsilon(),
                      &outs[0], outs[1], n.getRoundTo().value_or(Type()));
        return success();
      })
      .Case([&](mir::SoftmaxOp s) {
        emitSoftmax(k, s.getAxis(), /*log=*/false, ins[0], outs[0]);
        return success();
      })
      .Case([&](mir::LogSoftmaxOp s) {
        emitSoftmax(k, s.getAxis(), /*log=*/true, ins[0], outs[0]);
        return success();
      })
      .Default(
          [](Operation *o) { return o->emitOpError("is not a norm kernel"); });
}
