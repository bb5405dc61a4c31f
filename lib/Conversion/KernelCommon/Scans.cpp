//===- Scans.cpp - Kernels that walk one axis in order, for every target --===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// argmax / argmin and cumsum carry a state along one axis: each position of
// the other axes (an element of the target's map, so a thread each on
// SPIR-V, chunks of them per thread on the CPU) walks its line in order with
// an scf.for. Written once on KernelBuilder's primitives.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rlx;

/// argmax (`isMax`) or argmin along `axis`: the first index of the extreme,
/// a NaN beating every number (the first NaN), as NumPy.
static void emitArgReduce(KernelBuilder &k, const KernelView &in,
                          const KernelView &out, int64_t axis, bool keepDims,
                          bool isMax) {
  int64_t n = in.shape[axis];
  bool isFloat = isa<FloatType>(in.elementType);
  // One map position per output element; the input line has the output's
  // coordinates with the axis inserted (or replaced, under keep_dims).
  k.forEachElement(out, 1, [&](const ElementPos &pos) {
    SmallVector<Value> base(pos.coords);
    if (!keepDims)
      base.insert(base.begin() + axis, k.index(0));
    Value first = k.load(in, withAxis(base, axis, k.index(0)), 1);
    SmallVector<Value> best = k.forLoop(
        1, n, 1, {first, k.index(0)},
        [&](Value j, ValueRange it) -> SmallVector<Value> {
          Value v = k.load(in, withAxis(base, axis, j), 1);
          Value better =
              k.compare(isMax ? CmpPredicate::GT : CmpPredicate::LT, v, it[0]);
          if (isFloat) {
            // A NaN after numbers wins; nothing beats the first NaN.
            Value isNan = arith::CmpFOp::create(
                k.b, k.loc, arith::CmpFPredicate::UNO, v, v);
            Value bestIsNumber = arith::CmpFOp::create(
                k.b, k.loc, arith::CmpFPredicate::ORD, it[0], it[0]);
            Value newNan =
                arith::AndIOp::create(k.b, k.loc, isNan, bestIsNumber);
            better = arith::OrIOp::create(k.b, k.loc, better, newNan);
          }
          return {arith::SelectOp::create(k.b, k.loc, better, v, it[0]),
                  arith::SelectOp::create(k.b, k.loc, better, j, it[1])};
        });
    Value index =
        arith::IndexCastOp::create(k.b, k.loc, out.elementType, best[1]);
    k.store(index, out, pos.coords, 1);
  });
}

/// out[..., j, ...] = in[..., 0, ...] + ... + in[..., j, ...], in order.
static void emitCumSum(KernelBuilder &k, const KernelView &in,
                       const KernelView &out, int64_t axis) {
  int64_t n = in.shape[axis];
  // The map runs over the lines: the output's shape with the axis as 1.
  SmallVector<int64_t> lines(out.shape);
  lines[axis] = 1;
  KernelView lineView = out.derive(out.offset, lines, out.strides);
  k.forEachElement(lineView, 1, [&](const ElementPos &pos) {
    Value zero = k.constant(0.0, out.elementType);
    k.forLoop(
        0, n, 1, {zero}, [&](Value j, ValueRange it) -> SmallVector<Value> {
          SmallVector<Value> at = withAxis(pos.coords, axis, j);
          Value sum =
              k.combine(vector::CombiningKind::ADD, it[0], k.load(in, at, 1));
          k.store(sum, out, at, 1);
          return {sum};
        });
  });
}

bool mlir::rlx::isScanOp(Operation *op) {
  return isa<mir::ArgMaxOp, mir::ArgMinOp, mir::CumSumOp>(op);
}

LogicalResult mlir::rlx::emitScanKernel(KernelBuilder &k, Operation *op,
                                        ArrayRef<KernelView> ins,
                                        const KernelView &out) {
  if (ins[0].isScalar())
    return op->emitOpError("expects a tensor operand on the ")
           << k.targetName() << " back end";
  const KernelView &in = ins[0];
  auto axisOf = [&](int64_t axis) {
    return axis < 0 ? axis + in.rank() : axis;
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](mir::ArgMaxOp a) {
        emitArgReduce(k, in, out, axisOf(a.getAxis()), a.getKeepDims(),
                      /*isMax=*/true);
        return success();
      })
      .Case([&](mir::ArgMinOp a) {
        emitArgReduce(k, in, out, axisOf(a.getAxis()), a.getKeepDims(),
                      /*isMax=*/false);
        return success();
      })
      .Case([&](mir::CumSumOp c) {
        emitCumSum(k, in, out, axisOf(c.getAxis()));
        return success();
      })
      .Default(
          [](Operation *o) { return o->emitOpError("is not a scan kernel"); });
}
