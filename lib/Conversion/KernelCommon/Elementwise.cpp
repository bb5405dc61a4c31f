//===- Elementwise.cpp - Elementwise kernels, once for every target -------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Unary and broadcasting binary ops, compare, select, cast, elementwise
// regions, the fused GLU and copies: one map over the output. The target
// chooses how many elements a step handles (512-bit vectors with a scalar
// tail on the CPU, one per thread on SPIR-V) and spreads the map over its
// threads. An input broadcast along the innermost dimension is loaded once
// per step and splatted; an input of the output's shape read at the
// element's linear index where the target numbers its elements.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::rlx;

/// `in` at the output position `pos`, with numpy broadcasting.
static Value loadBroadcast(KernelBuilder &k, const KernelView &in,
                           const KernelView &out, const ElementPos &pos) {
  if (in.isScalar())
    return k.splat(in.scalar, pos.width);
  if (pos.linear && in.shape == out.shape && in.isContiguous())
    return k.load(in.flat(), {pos.linear}, pos.width);
  int64_t rank = out.rank(), irank = in.rank(), off = rank - irank;
  int64_t n = rank ? out.shape.back() : 1;
  SmallVector<Value> idx;
  for (int64_t d = 0; d < irank; ++d)
    idx.push_back(in.shape[d] == 1 && out.shape[d + off] != 1
                      ? k.index(0)
                      : pos.coords[d + off]);
  bool broadcastInner = irank == 0 || (in.shape.back() == 1 && n != 1);
  if (broadcastInner && pos.width > 1)
    return k.splat(k.load(in, idx, 1), pos.width);
  return k.load(in, idx, pos.width);
}

void mlir::rlx::emitMap(
    KernelBuilder &k, ArrayRef<KernelView> ins, const KernelView &out,
    function_ref<Value(ValueRange values, int64_t width)> body) {
  int64_t width = k.mapWidth(out, ins);
  k.forEachElement(out, width, [&](const ElementPos &pos) {
    SmallVector<Value> vals;
    for (const KernelView &in : ins)
      vals.push_back(loadBroadcast(k, in, out, pos));
    Value r = body(vals, pos.width);
    if (pos.linear && out.isContiguous())
      k.store(r, out.flat(), {pos.linear}, pos.width);
    else
      k.store(r, out, pos.coords, pos.width);
  });
}

void mlir::rlx::emitCopy(KernelBuilder &k, const KernelView &in,
                         const KernelView &out) {
  emitMap(k, {in}, out, [](ValueRange v, int64_t) { return v[0]; });
}

LogicalResult mlir::rlx::emitElementwiseKernel(KernelBuilder &k, Operation *op,
                                               ArrayRef<KernelView> ins,
                                               const KernelView &out) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  if (auto glu = dyn_cast<mir::FusedGluOp>(op)) {
    if (ins[0].isScalar())
      return op->emitOpError("expects a tensor operand");
    // The gate and up halves are two views of the input.
    const KernelView &gu = ins[0];
    SmallVector<int64_t> half(gu.shape);
    half.back() /= 2;
    KernelView gate = k.materialize(gu.derive(gu.offset, half, gu.strides));
    KernelView up = k.materialize(gu.derive(
        gu.offset + half.back() * gu.innerStride(), half, gu.strides));
    Activation act = glu.getActivation();
    Type roundTo = glu.getRoundTo().value_or(Type());
    emitMap(k, {gate, up}, out, [&](ValueRange v, int64_t) {
      return k.gluProduct(act, v[0], v[1], roundTo);
    });
    return success();
  }
  if (auto region = dyn_cast<mir::ElementwiseOp>(op)) {
    emitMap(k, ins, out, [&](ValueRange v, int64_t width) {
      return k.cloneElementwiseBody(region, v, width);
    });
    return success();
  }
  if (auto cmp = dyn_cast<mir::CompareOp>(op)) {
    CmpPredicate pred = cmp.getPredicate();
    emitMap(k, ins, out,
            [&](ValueRange v, int64_t) { return k.compare(pred, v[0], v[1]); });
    return success();
  }
  if (isa<mir::SelectOp>(op)) {
    emitMap(k, ins, out, [&](ValueRange v, int64_t) {
      return arith::SelectOp::create(b, loc, v[0], v[1], v[2]);
    });
    return success();
  }
  if (isa<mir::CastOp, mir::DequantizeOp>(op)) {
    // f16/bf16 weights widen elementwise (ggml blocks are target kernels).
    Type to = out.elementType;
    emitMap(k, ins, out,
            [&](ValueRange v, int64_t) { return k.castValue(v[0], to); });
    return success();
  }
  if (isBinaryMathOp(op)) {
    emitMap(k, ins, out,
            [&](ValueRange v, int64_t) { return k.binary(op, v[0], v[1]); });
    return success();
  }
  if (!isUnaryMathOp(op))
    return op->emitOpError("has no ") << k.targetName() << " kernel";
  emitMap(k, ins, out,
          [&](ValueRange v, int64_t) { return k.unary(op, v[0]); });
  return success();
}
