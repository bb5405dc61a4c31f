//===- Elementwise.cpp - Elementwise CPU kernels --------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Unary and broadcasting binary ops, compare, select, cast, elementwise
// regions, fused GLU and copies: one loop nest over the output whose
// innermost dimension runs in 512-bit vectors with a scalar tail. Inputs
// broadcast along the innermost dimension are loaded once and splatted.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rlx;

using MapBody = function_ref<Value(ValueRange values, int64_t width)>;

/// Chunks for a memory-bound kernel over `elements` values: about 16K
/// values each, at most 64.
static int64_t parallelChunks(int64_t elements) {
  return std::clamp<int64_t>(elements / 16384, 1, 64);
}

/// out[i] = body(ins[i]...) with numpy broadcasting of the inputs.
static void emitMap(KernelEmitter &e, ArrayRef<KernelInput> ins, Value out,
                    MapBody body) {
  auto outTy = cast<MemRefType>(out.getType());
  ArrayRef<int64_t> shape = outTy.getShape();
  int64_t rank = shape.size();
  int64_t n = rank ? shape.back() : 1;

  // One vector width for every value of the body; scalar code when some
  // access is not unit-stride or involves i1.
  int64_t vl = KernelEmitter::vectorWidth(outTy.getElementType());
  if (rank == 0 || KernelEmitter::innerStride(out) != 1)
    vl = 1;
  for (const KernelInput &in : ins) {
    vl = std::min(vl, KernelEmitter::vectorWidth(in.elementType()));
    if (!in.memref || in.shape().empty())
      continue;
    bool broadcastInner = in.shape().back() == 1 && n != 1;
    if (!broadcastInner && KernelEmitter::innerStride(in.memref) != 1)
      vl = 1;
  }

  auto emitRow = [&](ValueRange outer) {
    e.forChunks(n, vl, [&](Value j, int64_t width) {
      SmallVector<Value> vals;
      for (const KernelInput &in : ins) {
        if (!in.memref) {
          vals.push_back(e.splat(in.scalar, width));
          continue;
        }
        ArrayRef<int64_t> ishape = in.shape();
        int64_t irank = ishape.size(), off = rank - irank;
        SmallVector<Value> idx;
        for (int64_t d = 0; d < irank; ++d) {
          int64_t od = d + off;
          if (ishape[d] == 1 && shape[od] != 1)
            idx.push_back(e.index(0));
          else
            idx.push_back(od == rank - 1 ? j : outer[od]);
        }
        bool broadcastInner = irank == 0 || (ishape.back() == 1 && n != 1);
        if (broadcastInner)
          vals.push_back(e.splat(e.load(in.memref, idx, 1), width));
        else
          vals.push_back(e.load(in.memref, idx, width));
      }
      SmallVector<Value> oidx(outer.begin(), outer.end());
      if (rank)
        oidx.push_back(j);
      e.store(body(vals, width), out, oidx, width);
    });
  };
  if (rank == 0) {
    e.serial([&] {
      SmallVector<Value> vals;
      for (const KernelInput &in : ins)
        vals.push_back(in.memref ? e.load(in.memref, {}, 1) : in.scalar);
      e.store(body(vals, 1), out, {}, 1);
    });
    return;
  }
  e.parallelNest(shape.drop_back(), parallelChunks(outTy.getNumElements()),
                 emitRow);
}

static Value binaryOp(KernelEmitter &e, Operation *op, Value a, Value c) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  bool isFloat = isa<FloatType>(getElementTypeOrSelf(a.getType()));
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

static Value compareOp(KernelEmitter &e, CmpPredicate pred, Value a, Value c) {
  if (isa<FloatType>(getElementTypeOrSelf(a.getType()))) {
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

static Type withElement(Type like, Type elt) {
  if (auto vt = dyn_cast<VectorType>(like))
    return VectorType::get(vt.getShape(), elt);
  return elt;
}

static Value castOp(KernelEmitter &e, Value x, Type to) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Type from = getElementTypeOrSelf(x.getType());
  Type rt = withElement(x.getType(), to);
  if (from == to)
    return x;
  bool fFrom = isa<FloatType>(from), fTo = isa<FloatType>(to);
  if (fFrom && fTo)
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? arith::ExtFOp::create(b, loc, rt, x).getResult()
               : arith::TruncFOp::create(b, loc, rt, x).getResult();
  if (!fFrom && fTo)
    return from.isInteger(1)
               ? arith::UIToFPOp::create(b, loc, rt, x).getResult()
               : arith::SIToFPOp::create(b, loc, rt, x).getResult();
  if (fFrom && !fTo)
    return arith::FPToSIOp::create(b, loc, rt, x);
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return from.isInteger(1)
               ? arith::ExtUIOp::create(b, loc, rt, x).getResult()
               : arith::ExtSIOp::create(b, loc, rt, x).getResult();
  return arith::TruncIOp::create(b, loc, rt, x);
}

/// Clones the scalar body of a mir.elementwise at `width` lanes.
static Value cloneRegionBody(KernelEmitter &e, mir::ElementwiseOp op,
                             ValueRange values, int64_t width) {
  Block &body = op.getBody().front();
  IRMapping map;
  map.map(body.getArguments(), values);
  for (Operation &inner : body.without_terminator()) {
    OperationState state(e.loc, inner.getName());
    for (Value operand : inner.getOperands())
      state.addOperands(map.lookupOrDefault(operand));
    for (Type t : inner.getResultTypes())
      state.addTypes(width == 1 ? t : VectorType::get({width}, t));
    state.addAttributes(inner.getAttrs());
    if (auto c = dyn_cast<arith::ConstantOp>(inner)) {
      Value s = arith::ConstantOp::create(e.b, e.loc, c.getValue());
      map.map(c.getResult(), e.splat(s, width));
      continue;
    }
    Operation *clone = e.b.create(state);
    map.map(inner.getResults(), clone->getResults());
  }
  return map.lookupOrDefault(body.getTerminator()->getOperand(0));
}

LogicalResult mlir::rlx::emitElementwiseKernel(KernelEmitter &e, Operation *op,
                                               ArrayRef<KernelInput> ins,
                                               Value out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  if (!op) {
    emitMap(e, ins, out, [](ValueRange v, int64_t) { return v[0]; });
    return success();
  }
  if (auto glu = dyn_cast<mir::FusedGluOp>(op)) {
    Value gu = ins[0].memref;
    auto ty = cast<MemRefType>(gu.getType());
    int64_t rank = ty.getRank(), half = ty.getShape().back() / 2;
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
        strides(rank, b.getIndexAttr(1));
    for (int64_t d : ty.getShape())
      sizes.push_back(b.getIndexAttr(d));
    sizes.back() = b.getIndexAttr(half);
    Value gate = memref::SubViewOp::create(b, loc, gu, offsets, sizes, strides);
    offsets.back() = b.getIndexAttr(half);
    Value up = memref::SubViewOp::create(b, loc, gu, offsets, sizes, strides);
    Activation act = glu.getActivation();
    emitMap(e, {KernelInput{gate, {}}, KernelInput{up, {}}}, out,
            [&](ValueRange v, int64_t) {
              return arith::MulFOp::create(b, loc, e.activation(act, v[0]),
                                           v[1]);
            });
    return success();
  }
  if (auto region = dyn_cast<mir::ElementwiseOp>(op)) {
    emitMap(e, ins, out, [&](ValueRange v, int64_t width) {
      return cloneRegionBody(e, region, v, width);
    });
    return success();
  }
  if (auto cmp = dyn_cast<mir::CompareOp>(op)) {
    CmpPredicate pred = cmp.getPredicate();
    emitMap(e, ins, out, [&](ValueRange v, int64_t) {
      return compareOp(e, pred, v[0], v[1]);
    });
    return success();
  }
  if (isa<mir::SelectOp>(op)) {
    emitMap(e, ins, out, [&](ValueRange v, int64_t) {
      return arith::SelectOp::create(b, loc, v[0], v[1], v[2]);
    });
    return success();
  }
  if (isa<mir::CastOp>(op)) {
    Type to = cast<MemRefType>(out.getType()).getElementType();
    emitMap(e, ins, out,
            [&](ValueRange v, int64_t) { return castOp(e, v[0], to); });
    return success();
  }
  if (isa<mir::AddOp, mir::SubOp, mir::MulOp, mir::DivOp, mir::MaxOp,
          mir::MinOp, mir::PowOp>(op)) {
    emitMap(e, ins, out,
            [&](ValueRange v, int64_t) { return binaryOp(e, op, v[0], v[1]); });
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
    return op->emitOpError("has no CPU kernel");
  emitMap(e, ins, out, [&](ValueRange v, int64_t) { return unary(v[0]); });
  return success();
}
