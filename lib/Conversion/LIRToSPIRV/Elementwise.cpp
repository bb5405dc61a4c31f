//===- Elementwise.cpp - Elementwise GPU kernels --------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Unary and broadcasting binary ops, compare, select, cast, elementwise
// regions, fused GLU and copies: one thread per output element (grid-stride
// when the output has more elements than the launch has threads). Inputs of
// the output's shape that are contiguous are read at the thread's linear
// index; others (broadcast, strided) through the output coordinates.
//
//===----------------------------------------------------------------------===//

#include "GPUKernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rlx;

using MapBody = function_ref<Value(ValueRange values)>;

/// Loads `in` at the output position `i` (linear) / `coords`, with numpy
/// broadcasting. `coords` is computed on demand.
static Value loadBroadcast(GPUKernelEmitter &e, const GPUView &in,
                           const GPUView &out, Value i,
                           function_ref<ArrayRef<Value>()> coords) {
  if (in.isScalar())
    return in.scalar;
  if (in.shape == out.shape && in.isContiguous())
    return e.load(
        GPUView{
            in.buffer, {}, in.elementType, in.offset, {in.numElements()}, {1}},
        {i});
  ArrayRef<Value> oc = coords();
  int64_t off = out.rank() - in.rank();
  SmallVector<Value> idx;
  for (int64_t d = 0; d < in.rank(); ++d)
    idx.push_back(in.shape[d] == 1 ? e.index(0) : oc[d + off]);
  return e.load(in, idx);
}

/// out[i] = body(ins[i]...) with numpy broadcasting of the inputs.
static void emitMap(GPUKernelEmitter &e, ArrayRef<GPUView> ins,
                    const GPUView &out, MapBody body) {
  e.forEachElement(out.numElements(), [&](Value i) {
    SmallVector<Value> coords;
    auto getCoords = [&]() -> ArrayRef<Value> {
      if (coords.empty() && out.rank() > 0)
        coords = e.delinearize(i, out.shape);
      return coords;
    };
    SmallVector<Value> vals;
    for (const GPUView &in : ins)
      vals.push_back(loadBroadcast(e, in, out, i, getCoords));
    Value r = body(vals);
    if (out.isContiguous())
      e.store(r,
              GPUView{out.buffer,
                      {},
                      out.elementType,
                      out.offset,
                      {out.numElements()},
                      {1}},
              {i});
    else
      e.store(r, out, getCoords());
  });
}

static Value binaryOp(GPUKernelEmitter &e, Operation *op, Value a, Value c) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  bool isFloat = isa<FloatType>(a.getType());
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](mir::AddOp) -> Value {
        return isFloat ? arith::AddFOp::create(b, loc, a, c).getResult()
                       : arith::AddIOp::create(b, loc, a, c).getResult();
      })
      .Case([&](mir::SubOp) -> Value {
        return isFloat ? arith::SubFOp::create(b, loc, a, c).getResult()
                       : arith::SubIOp::create(b, loc, a, c).getResult();
      })
      .Case([&](mir::MulOp) -> Value {
        return isFloat ? arith::MulFOp::create(b, loc, a, c).getResult()
                       : arith::MulIOp::create(b, loc, a, c).getResult();
      })
      .Case([&](mir::DivOp) -> Value {
        return isFloat ? arith::DivFOp::create(b, loc, a, c).getResult()
                       : arith::DivSIOp::create(b, loc, a, c).getResult();
      })
      .Case([&](mir::MaxOp) -> Value {
        return isFloat ? arith::MaximumFOp::create(b, loc, a, c).getResult()
                       : arith::MaxSIOp::create(b, loc, a, c).getResult();
      })
      .Case([&](mir::MinOp) -> Value {
        return isFloat ? arith::MinimumFOp::create(b, loc, a, c).getResult()
                       : arith::MinSIOp::create(b, loc, a, c).getResult();
      })
      .Case([&](mir::PowOp) -> Value {
        return math::PowFOp::create(b, loc, a, c);
      })
      .Default([](Operation *) { return Value(); });
}

static Value compareOp(GPUKernelEmitter &e, CmpPredicate pred, Value a,
                       Value c) {
  if (isa<FloatType>(a.getType())) {
    arith::CmpFPredicate p = arith::CmpFPredicate::OEQ;
    switch (pred) {
    case CmpPredicate::EQ:
      p = arith::CmpFPredicate::OEQ;
      break;
    case CmpPredicate::NE:
      p = arith::CmpFPredicate::UNE;
      break;
    case CmpPredicate::LT:
      p = arith::CmpFPredicate::OLT;
      break;
    case CmpPredicate::LE:
      p = arith::CmpFPredicate::OLE;
      break;
    case CmpPredicate::GT:
      p = arith::CmpFPredicate::OGT;
      break;
    case CmpPredicate::GE:
      p = arith::CmpFPredicate::OGE;
      break;
    }
    return arith::CmpFOp::create(e.b, e.loc, p, a, c);
  }
  arith::CmpIPredicate p = arith::CmpIPredicate::eq;
  switch (pred) {
  case CmpPredicate::EQ:
    p = arith::CmpIPredicate::eq;
    break;
  case CmpPredicate::NE:
    p = arith::CmpIPredicate::ne;
    break;
  case CmpPredicate::LT:
    p = arith::CmpIPredicate::slt;
    break;
  case CmpPredicate::LE:
    p = arith::CmpIPredicate::sle;
    break;
  case CmpPredicate::GT:
    p = arith::CmpIPredicate::sgt;
    break;
  case CmpPredicate::GE:
    p = arith::CmpIPredicate::sge;
    break;
  }
  return arith::CmpIOp::create(e.b, e.loc, p, a, c);
}

/// Clones the scalar body of a mir.elementwise on `values`.
static Value cloneRegionBody(GPUKernelEmitter &e, mir::ElementwiseOp op,
                             ValueRange values) {
  Block &body = op.getBody().front();
  IRMapping map;
  map.map(body.getArguments(), values);
  for (Operation &inner : body.without_terminator())
    e.b.clone(inner, map);
  return map.lookupOrDefault(body.getTerminator()->getOperand(0));
}

LogicalResult mlir::rlx::emitGPUElementwiseKernel(GPUKernelEmitter &e,
                                                  Operation *op,
                                                  ArrayRef<GPUView> ins,
                                                  const GPUView &out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  if (!op) {
    emitMap(e, ins, out, [](ValueRange v) { return v[0]; });
    return success();
  }
  if (auto glu = dyn_cast<mir::FusedGluOp>(op)) {
    if (ins[0].isScalar())
      return op->emitOpError("expects a tensor operand");
    // The gate and up halves are two views of the input.
    GPUView gate = ins[0], up = ins[0];
    int64_t half = ins[0].shape.back() / 2;
    gate.shape.back() = half;
    up.shape.back() = half;
    up.offset += half * ins[0].innerStride();
    Activation act = glu.getActivation();
    emitMap(e, {gate, up}, out, [&](ValueRange v) {
      return e.mulF(e.activation(act, v[0]), v[1]);
    });
    return success();
  }
  if (auto region = dyn_cast<mir::ElementwiseOp>(op)) {
    emitMap(e, ins, out,
            [&](ValueRange v) { return cloneRegionBody(e, region, v); });
    return success();
  }
  if (auto cmp = dyn_cast<mir::CompareOp>(op)) {
    CmpPredicate pred = cmp.getPredicate();
    emitMap(e, ins, out,
            [&](ValueRange v) { return compareOp(e, pred, v[0], v[1]); });
    return success();
  }
  if (isa<mir::SelectOp>(op)) {
    emitMap(e, ins, out, [&](ValueRange v) {
      return arith::SelectOp::create(b, loc, v[0], v[1], v[2]);
    });
    return success();
  }
  if (isa<mir::CastOp>(op)) {
    Type to = out.elementType;
    emitMap(e, ins, out, [&](ValueRange v) { return e.cast(v[0], to); });
    return success();
  }
  if (isa<mir::AddOp, mir::SubOp, mir::MulOp, mir::DivOp, mir::MaxOp,
          mir::MinOp, mir::PowOp>(op)) {
    emitMap(e, ins, out,
            [&](ValueRange v) { return binaryOp(e, op, v[0], v[1]); });
    return success();
  }
  auto unary = [&](Value x) -> Value {
    return llvm::TypeSwitch<Operation *, Value>(op)
        .Case([&](mir::ExpOp) { return math::ExpOp::create(b, loc, x); })
        .Case([&](mir::LogOp) { return math::LogOp::create(b, loc, x); })
        .Case([&](mir::SqrtOp) { return math::SqrtOp::create(b, loc, x); })
        .Case([&](mir::RsqrtOp) { return math::RsqrtOp::create(b, loc, x); })
        .Case([&](mir::TanhOp) { return math::TanhOp::create(b, loc, x); })
        .Case([&](mir::ErfOp) { return math::ErfOp::create(b, loc, x); })
        .Case([&](mir::SigmoidOp) { return e.sigmoid(x); })
        .Case([&](mir::SiluOp) { return e.activation(Activation::Silu, x); })
        .Case([&](mir::GeluOp g) { return e.gelu(x, g.getTanhApprox()); })
        .Case([&](mir::ReluOp) { return e.activation(Activation::Relu, x); })
        .Case([&](mir::NegOp) { return arith::NegFOp::create(b, loc, x); })
        .Default([](Operation *) { return Value(); });
  };
  if (!isa<mir::ExpOp, mir::LogOp, mir::SqrtOp, mir::RsqrtOp, mir::TanhOp,
           mir::ErfOp, mir::SigmoidOp, mir::SiluOp, mir::GeluOp, mir::ReluOp,
           mir::NegOp>(op))
    return op->emitOpError("has no SPIR-V kernel");
  emitMap(e, ins, out, [&](ValueRange v) { return unary(v[0]); });
  return success();
}
