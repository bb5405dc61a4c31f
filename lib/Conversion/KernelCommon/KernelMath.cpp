//===- KernelMath.cpp - MIR's scalar and vector math, once ----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Dialect/MIR/Utils/ActivationMath.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::rlx;

//===----------------------------------------------------------------------===//
// Views
//===----------------------------------------------------------------------===//

SmallVector<int64_t> mlir::rlx::contiguousStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

int64_t KernelView::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

bool KernelView::isContiguous() const {
  return !isScalar() && strides == contiguousStrides(shape);
}

KernelView KernelView::derive(int64_t newOffset, ArrayRef<int64_t> newShape,
                              ArrayRef<int64_t> newStrides) const {
  KernelView v = *this;
  v.offset = newOffset;
  v.shape.assign(newShape.begin(), newShape.end());
  v.strides.assign(newStrides.begin(), newStrides.end());
  v.memref = nullptr;
  return v;
}

KernelView KernelView::flat() const {
  return derive(offset, {numElements()}, {1});
}

SmallVector<Value> RowScope::at(Value j) const {
  SmallVector<Value> i(outer);
  i.push_back(j);
  return i;
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

Value KernelMath::index(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value KernelMath::constant(double v, Type type) {
  if (isa<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
  if (type.isIndex())
    return index(static_cast<int64_t>(v));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(v)));
}

Value KernelMath::splat(Value scalar, int64_t width) {
  if (width == 1)
    return scalar;
  return vector::BroadcastOp::create(
      b, loc, VectorType::get({width}, scalar.getType()), scalar);
}

SmallVector<Value> KernelMath::delinearize(Value linear,
                                           ArrayRef<int64_t> shape) {
  SmallVector<Value> coords(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      coords[d] = linear;
      break;
    }
    if (shape[d] == 1) {
      coords[d] = index(0);
      continue;
    }
    Value size = index(shape[d]);
    coords[d] = arith::RemUIOp::create(b, loc, linear, size);
    linear = arith::DivUIOp::create(b, loc, linear, size);
  }
  return coords;
}

void KernelMath::ifThen(Value cond, function_ref<void()> body) {
  auto op = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op.thenBlock()->getTerminator());
  body();
}

SmallVector<Value> mlir::rlx::withAxis(ArrayRef<Value> coords, int64_t axis,
                                       Value j) {
  SmallVector<Value> at(coords);
  at[axis] = j;
  return at;
}

LogicalResult mlir::rlx::requireTensorOperands(KernelBuilder &k, Operation *op,
                                               ArrayRef<KernelView> ins) {
  for (const KernelView &in : ins)
    if (in.isScalar())
      return op->emitOpError("expects tensor operands on the ")
             << k.targetName() << " back end";
  return success();
}

SmallVector<Value> KernelMath::forLoop(
    int64_t lb, int64_t ub, int64_t step, ValueRange init,
    function_ref<SmallVector<Value>(Value iv, ValueRange iter)> body) {
  // An empty range gives `init` without a loop (SCFToSPIRV must not be asked
  // for the results of a loop that may not run).
  if (ub <= lb)
    return SmallVector<Value>(init.begin(), init.end());
  auto loop =
      scf::ForOp::create(b, loc, index(lb), index(ub), index(step), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> next =
      body(loop.getInductionVar(), loop.getRegionIterArgs());
  if (!init.empty())
    scf::YieldOp::create(b, loc, next);
  return SmallVector<Value>(loop.getResults());
}

Value KernelMath::sumLanes(Value v) {
  if (!isa<VectorType>(v.getType()))
    return v;
  return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, v);
}

SmallVector<Value>
KernelMath::ifThenElse(Value cond, TypeRange types,
                       function_ref<SmallVector<Value>()> thenBody,
                       function_ref<SmallVector<Value>()> elseBody) {
  auto op = scf::IfOp::create(b, loc, types, cond, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(op.thenBlock());
    scf::YieldOp::create(b, loc, thenBody());
    b.setInsertionPointToStart(op.elseBlock());
    scf::YieldOp::create(b, loc, elseBody());
  }
  return SmallVector<Value>(op.getResults());
}

Value KernelMath::constantLike(double v, Value like) {
  Type t = like.getType();
  Value s = constant(v, getElementTypeOrSelf(t));
  if (auto vt = dyn_cast<VectorType>(t))
    return splat(s, vt.getNumElements());
  return s;
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

Value KernelMath::sigmoid(Value x) { return buildSigmoid(b, loc, x); }

Value KernelMath::gelu(Value x, bool tanhApprox) {
  return buildGelu(b, loc, x, tanhApprox);
}

Value KernelMath::softplus(Value x) { return buildSoftplus(b, loc, x); }

Value KernelMath::activation(Activation act, Value x) {
  return buildActivation(b, loc, act, x);
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

bool mlir::rlx::isBinaryMathOp(Operation *op) {
  return isa<mir::AddOp, mir::SubOp, mir::MulOp, mir::DivOp, mir::MaxOp,
             mir::MinOp, mir::PowOp>(op);
}

bool mlir::rlx::isUnaryMathOp(Operation *op) {
  return isa<mir::ExpOp, mir::LogOp, mir::SqrtOp, mir::RsqrtOp, mir::TanhOp,
             mir::ErfOp, mir::SinOp, mir::CosOp, mir::SigmoidOp, mir::SiluOp,
             mir::GeluOp, mir::ReluOp, mir::NegOp, mir::ActivationOp,
             mir::AbsOp, mir::FloorOp, mir::CeilOp, mir::RoundOp, mir::SignOp,
             mir::ClipOp>(op);
}

/// i1 arithmetic as logic (SPIR-V has no integer arithmetic on booleans):
/// i1 is signed, true being -1, and wraps mod 2, so add and sub are xor, mul
/// and max are and, min is or.
static Value booleanCombine(OpBuilder &b, Location loc,
                            vector::CombiningKind kind, Value a, Value c) {
  using Kind = vector::CombiningKind;
  switch (kind) {
  case Kind::MAXIMUMF:
  case Kind::MAXNUMF:
  case Kind::MAXSI:
  case Kind::MUL:
    return arith::AndIOp::create(b, loc, a, c);
  case Kind::MINIMUMF:
  case Kind::MINNUMF:
  case Kind::MINSI:
    return arith::OrIOp::create(b, loc, a, c);
  default:
    return arith::XOrIOp::create(b, loc, a, c);
  }
}

static bool isBoolean(Value v) {
  return getElementTypeOrSelf(v.getType()).isInteger(1);
}

Value KernelMath::binary(Operation *op, Value a, Value c) {
  bool isFloat = isa<FloatType>(getElementTypeOrSelf(a.getType()));
  if (isBoolean(a)) {
    using Kind = vector::CombiningKind;
    return llvm::TypeSwitch<Operation *, Value>(op)
        .Case<mir::AddOp, mir::SubOp>([&](Operation *) {
          return booleanCombine(b, loc, Kind::ADD, a, c);
        })
        .Case<mir::MulOp, mir::MaxOp>([&](Operation *) {
          return booleanCombine(b, loc, Kind::MUL, a, c);
        })
        .Case([&](mir::MinOp) {
          return booleanCombine(b, loc, Kind::MINSI, a, c);
        })
        // x / -1 is x mod 2 (a division by false is undefined).
        .Case([&](mir::DivOp) { return a; })
        .Default([](Operation *) { return Value(); });
  }
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

Value KernelMath::sign(Value x) {
  // x itself for zeros and NaN (both compares are false), as np.sign.
  Value zero = constantLike(0.0, x);
  Value positive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero);
  Value negative =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero);
  Value r = arith::SelectOp::create(b, loc, negative, constantLike(-1.0, x), x);
  return arith::SelectOp::create(b, loc, positive, constantLike(1.0, x), r);
}

Value KernelMath::unary(Operation *op, Value x) {
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](mir::ExpOp) { return math::ExpOp::create(b, loc, x); })
      .Case([&](mir::LogOp) { return math::LogOp::create(b, loc, x); })
      .Case([&](mir::SqrtOp) { return math::SqrtOp::create(b, loc, x); })
      .Case([&](mir::RsqrtOp) { return math::RsqrtOp::create(b, loc, x); })
      .Case([&](mir::TanhOp) { return math::TanhOp::create(b, loc, x); })
      .Case([&](mir::ErfOp) { return math::ErfOp::create(b, loc, x); })
      .Case([&](mir::SinOp) { return math::SinOp::create(b, loc, x); })
      .Case([&](mir::CosOp) { return math::CosOp::create(b, loc, x); })
      .Case([&](mir::SigmoidOp) { return sigmoid(x); })
      .Case([&](mir::SiluOp) { return activation(Activation::Silu, x); })
      .Case([&](mir::GeluOp g) { return gelu(x, g.getTanhApprox()); })
      .Case([&](mir::ReluOp) { return activation(Activation::Relu, x); })
      .Case([&](mir::NegOp) { return arith::NegFOp::create(b, loc, x); })
      .Case([&](mir::AbsOp) { return math::AbsFOp::create(b, loc, x); })
      .Case([&](mir::FloorOp) { return math::FloorOp::create(b, loc, x); })
      .Case([&](mir::CeilOp) { return math::CeilOp::create(b, loc, x); })
      .Case([&](mir::RoundOp) { return math::RoundEvenOp::create(b, loc, x); })
      .Case([&](mir::SignOp) { return sign(x); })
      .Case([&](mir::ClipOp c) -> Value {
        // max first: NaN stays NaN (maximumf and minimumf propagate it).
        Value lo =
            arith::MaximumFOp::create(b, loc, x, constantLike(c.getMin(), x));
        return arith::MinimumFOp::create(b, loc, lo,
                                         constantLike(c.getMax(), x));
      })
      .Case(
          [&](mir::ActivationOp a) { return activation(a.getActivation(), x); })
      .Default([](Operation *) { return Value(); });
}

Value KernelMath::compare(CmpPredicate pred, Value a, Value c) {
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
    return arith::CmpFOp::create(b, loc, p, a, c);
  }
  if (isBoolean(a) && pred != CmpPredicate::EQ && pred != CmpPredicate::NE) {
    // Signed i1 (true is -1) as logic: a < c is a and not c.
    Value one = constantLike(1, a);
    auto notOf = [&](Value v) -> Value {
      return arith::XOrIOp::create(b, loc, v, one);
    };
    switch (pred) {
    case CmpPredicate::LT:
      return arith::AndIOp::create(b, loc, a, notOf(c));
    case CmpPredicate::LE:
      return arith::OrIOp::create(b, loc, a, notOf(c));
    case CmpPredicate::GT:
      return arith::AndIOp::create(b, loc, c, notOf(a));
    default:
      return arith::OrIOp::create(b, loc, c, notOf(a));
    }
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
  return arith::CmpIOp::create(b, loc, p, a, c);
}

static Type withElement(Type like, Type elt) {
  if (auto vt = dyn_cast<VectorType>(like))
    return VectorType::get(vt.getShape(), elt);
  return elt;
}

Value KernelMath::castValue(Value x, Type to) {
  Type from = getElementTypeOrSelf(x.getType());
  Type rt = withElement(x.getType(), to);
  if (from == to)
    return x;
  bool fFrom = isa<FloatType>(from), fTo = isa<FloatType>(to);
  // f16 <-> bf16: one width, neither wider; exact to f32, then one rounding.
  if (fFrom && fTo &&
      from.getIntOrFloatBitWidth() == to.getIntOrFloatBitWidth())
    return arith::TruncFOp::create(
        b, loc, rt,
        arith::ExtFOp::create(b, loc, withElement(x.getType(), b.getF32Type()),
                              x));
  if (fFrom && fTo)
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? arith::ExtFOp::create(b, loc, rt, x).getResult()
               : arith::TruncFOp::create(b, loc, rt, x).getResult();
  if (!fFrom && fTo)
    return from.isInteger(1)
               ? arith::UIToFPOp::create(b, loc, rt, x).getResult()
               : arith::SIToFPOp::create(b, loc, rt, x).getResult();
  if (fFrom && !fTo) {
    if (to.isInteger(1))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x,
                                   constantLike(0.0, x));
    return arith::FPToSIOp::create(b, loc, rt, x);
  }
  if (to.isInteger(1))
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x,
                                 constantLike(0, x));
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return from.isInteger(1)
               ? arith::ExtUIOp::create(b, loc, rt, x).getResult()
               : arith::ExtSIOp::create(b, loc, rt, x).getResult();
  return arith::TruncIOp::create(b, loc, rt, x);
}

Value KernelMath::roundTo(Value x, Type type) {
  if (!type)
    return x;
  return castValue(castValue(x, type), getElementTypeOrSelf(x.getType()));
}

Value KernelMath::gemmEpilogue(Value x, Value bias, Activation act,
                               Value residual, Type roundTo) {
  if (bias)
    x = arith::AddFOp::create(b, loc, x, bias);
  x = activation(act, x);
  if (residual)
    x = arith::AddFOp::create(b, loc, x, residual);
  return this->roundTo(x, roundTo);
}

Value KernelMath::gluProduct(Activation act, Value gate, Value up,
                             Type roundTo) {
  return this->roundTo(arith::MulFOp::create(b, loc, activation(act, gate), up),
                       roundTo);
}

Value KernelMath::combine(vector::CombiningKind kind, Value a, Value c) {
  using Kind = vector::CombiningKind;
  if (isBoolean(a))
    return booleanCombine(b, loc, kind, a, c);
  bool isFloat = isa<FloatType>(getElementTypeOrSelf(a.getType()));
  switch (kind) {
  case Kind::MAXIMUMF:
  case Kind::MAXNUMF:
  case Kind::MAXSI:
    return isFloat ? arith::MaximumFOp::create(b, loc, a, c).getResult()
                   : arith::MaxSIOp::create(b, loc, a, c).getResult();
  case Kind::MINIMUMF:
  case Kind::MINNUMF:
  case Kind::MINSI:
    return isFloat ? arith::MinimumFOp::create(b, loc, a, c).getResult()
                   : arith::MinSIOp::create(b, loc, a, c).getResult();
  case Kind::MUL:
    return isFloat ? arith::MulFOp::create(b, loc, a, c).getResult()
                   : arith::MulIOp::create(b, loc, a, c).getResult();
  default:
    return isFloat ? arith::AddFOp::create(b, loc, a, c).getResult()
                   : arith::AddIOp::create(b, loc, a, c).getResult();
  }
}

vector::CombiningKind mlir::rlx::reductionKind(Operation *op) {
  if (isa<mir::ReduceMaxOp>(op))
    return vector::CombiningKind::MAXIMUMF;
  if (isa<mir::ReduceMinOp>(op))
    return vector::CombiningKind::MINIMUMF;
  if (isa<mir::ReduceProdOp>(op))
    return vector::CombiningKind::MUL;
  return vector::CombiningKind::ADD;
}

Value KernelMath::tableRow(Value id, int64_t rows) {
  Value row = arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, row, index(0));
  Value fromEnd = arith::AddIOp::create(b, loc, row, index(rows));
  row = arith::SelectOp::create(b, loc, negative, fromEnd, row);
  row = arith::MaxSIOp::create(b, loc, row, index(0));
  return arith::MinSIOp::create(b, loc, row, index(rows - 1));
}

Value KernelMath::reductionIdentity(vector::CombiningKind kind, Type type) {
  using Kind = vector::CombiningKind;
  if (isa<FloatType>(type)) {
    double inf = std::numeric_limits<double>::infinity();
    double v = kind == Kind::MAXIMUMF   ? -inf
               : kind == Kind::MINIMUMF ? inf
               : kind == Kind::MUL      ? 1.0
                                        : 0.0;
    return constant(v, type);
  }
  unsigned bits = type.getIntOrFloatBitWidth();
  APInt v = kind == Kind::MAXIMUMF   ? APInt::getSignedMinValue(bits)
            : kind == Kind::MINIMUMF ? APInt::getSignedMaxValue(bits)
            : kind == Kind::MUL      ? APInt(bits, 1)
                                     : APInt(bits, 0);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
}

Value KernelMath::cloneElementwiseBody(mir::ElementwiseOp op, ValueRange values,
                                       int64_t width) {
  Block &body = op.getBody().front();
  IRMapping map;
  map.map(body.getArguments(), values);
  for (Operation &inner : body.without_terminator()) {
    if (auto c = dyn_cast<arith::ConstantOp>(inner)) {
      Value s = arith::ConstantOp::create(b, loc, c.getValue());
      map.map(c.getResult(), splat(s, width));
      continue;
    }
    OperationState state(loc, inner.getName());
    for (Value operand : inner.getOperands())
      state.addOperands(map.lookupOrDefault(operand));
    for (Type t : inner.getResultTypes())
      state.addTypes(width == 1 ? t : VectorType::get({width}, t));
    state.addAttributes(inner.getAttrs());
    Operation *clone = b.create(state);
    map.map(inner.getResults(), clone->getResults());
  }
  return map.lookupOrDefault(body.getTerminator()->getOperand(0));
}

//===----------------------------------------------------------------------===//
// Kernel keys
//===----------------------------------------------------------------------===//

std::string mlir::rlx::kernelKey(lir::KernelOp kernel, StringRef extra) {
  std::string key;
  llvm::raw_string_ostream os(key);
  for (Value v : kernel->getOperands())
    os << v.getType() << ";";
  if (lir::LoweringConfigAttr config = kernel.getConfigAttr())
    os << config << ";";
  if (kernel.getInplace())
    os << "inplace;";
  os << extra << "|";
  for (Operation &op : kernel.getBody().front())
    os << op.getName() << ";";
  return key;
}

//===----------------------------------------------------------------------===//
// FloatOps
//===----------------------------------------------------------------------===//

Value FloatOps::add(Value a, Value c) {
  return arith::AddFOp::create(k.b, k.loc, a, c);
}
Value FloatOps::sub(Value a, Value c) {
  return arith::SubFOp::create(k.b, k.loc, a, c);
}
Value FloatOps::mul(Value a, Value c) {
  return arith::MulFOp::create(k.b, k.loc, a, c);
}
Value FloatOps::div(Value a, Value c) {
  return arith::DivFOp::create(k.b, k.loc, a, c);
}
Value FloatOps::rsqrt(Value a) { return math::RsqrtOp::create(k.b, k.loc, a); }
Value FloatOps::fma(Value a, Value c, Value d) {
  return math::FmaOp::create(k.b, k.loc, a, c, d);
}
