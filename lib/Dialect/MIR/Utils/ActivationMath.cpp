//===- ActivationMath.cpp - RLX's activations in arith and math ops -------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each step is its own statement: the order of the emitted ops must not
// depend on the order C++ evaluates arguments in.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/Utils/ActivationMath.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/ErrorHandling.h"
#include <cmath>

using namespace mlir;
using namespace mlir::rlx;

namespace {
/// Arith and math ops on values of one float scalar or vector type.
struct Emitter {
  OpBuilder &b;
  Location loc;

  /// `v` of `like`'s type (a splat for a vector).
  Value constant(double v, Value like) {
    Type t = like.getType();
    auto elt = cast<FloatType>(getElementTypeOrSelf(t));
    FloatAttr attr = b.getFloatAttr(elt, v);
    if (auto vt = dyn_cast<VectorType>(t))
      return arith::ConstantOp::create(b, loc,
                                       DenseElementsAttr::get(vt, attr));
    return arith::ConstantOp::create(b, loc, attr);
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value max(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value min(Value x, Value y) {
    return arith::MinimumFOp::create(b, loc, x, y);
  }
  Value mulBy(Value x, double c) {
    Value k = constant(c, x);
    return mul(x, k);
  }
  Value clamp(Value x, double lo, double hi) {
    Value l = constant(lo, x);
    Value h = constant(hi, x);
    return min(max(x, l), h);
  }

  Value sigmoid(Value x) {
    Value one = constant(1.0, x);
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return div(one, add(one, e));
  }

  Value gelu(Value x, bool tanhApprox) {
    Value inner;
    if (tanhApprox) {
      Value x2 = mul(x, x);
      Value x3 = mul(x, x2);
      Value poly = add(x, mulBy(x3, 0.044715));
      inner = math::TanhOp::create(b, loc, mulBy(poly, std::sqrt(2.0 / M_PI)));
    } else {
      inner = math::ErfOp::create(b, loc, mulBy(x, M_SQRT1_2));
    }
    Value hx = mulBy(x, 0.5);
    Value one = constant(1.0, x);
    return mul(hx, add(one, inner));
  }

  Value softplus(Value x) {
    // log1p(t) for t = e^-|x| in (0, 1]: log(u) * t / (u - 1) with u = 1 + t,
    // or t itself where u rounds to 1 (Goldberg's formula; no log1p op is
    // needed from the targets).
    Value zero = constant(0.0, x);
    Value one = constant(1.0, x);
    Value abs = math::AbsFOp::create(b, loc, x);
    Value t = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, abs));
    Value u = add(one, t);
    Value logU = math::LogOp::create(b, loc, u);
    Value num = mul(logU, t);
    Value den = sub(u, one);
    Value scaled = div(num, den);
    Value isOne =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, u, one);
    Value log1p = arith::SelectOp::create(b, loc, isOne, t, scaled);
    return add(max(x, zero), log1p);
  }

  Value activation(Activation act, Value x) {
    switch (act) {
    case Activation::None:
      return x;
    case Activation::Relu:
      return max(x, constant(0.0, x));
    case Activation::Gelu:
      return gelu(x, false);
    case Activation::GeluTanh:
      return gelu(x, true);
    case Activation::Silu:
      return mul(x, sigmoid(x));
    case Activation::Sigmoid:
      return sigmoid(x);
    case Activation::Tanh:
      return math::TanhOp::create(b, loc, x);
    case Activation::QuickGelu:
      return mul(x, sigmoid(mulBy(x, 1.702)));
    case Activation::Relu2: {
      Value r = max(x, constant(0.0, x));
      return mul(r, r);
    }
    case Activation::Relu6:
      return clamp(x, 0.0, 6.0);
    case Activation::LeakyRelu:
      // nn.LeakyReLU()'s slope 0.01: max(x, 0.01 x) as the slope is < 1.
      return max(x, mulBy(x, 0.01));
    case Activation::Mish: {
      Value sp = softplus(x);
      return mul(x, math::TanhOp::create(b, loc, sp));
    }
    case Activation::Gelu10:
      return clamp(gelu(x, false), -10.0, 10.0);
    case Activation::Laplace: {
      // transformers' LaplaceActivation: mu = 0.707107, sigma = 0.282095.
      Value centered = sub(x, constant(0.707107, x));
      Value scaled = mulBy(centered, 1.0 / (0.282095 * M_SQRT2));
      Value e = math::ErfOp::create(b, loc, scaled);
      Value one = constant(1.0, x);
      return mulBy(add(one, e), 0.5);
    }
    case Activation::Hardswish: {
      Value shifted = add(x, constant(3.0, x));
      Value r6 = clamp(shifted, 0.0, 6.0);
      return mul(x, mulBy(r6, 1.0 / 6.0));
    }
    case Activation::SqrtSoftplus: {
      Value sp = softplus(x);
      return math::SqrtOp::create(b, loc, sp);
    }
    }
    llvm_unreachable("unknown activation");
  }
};
} // namespace

Value mlir::rlx::buildActivation(OpBuilder &b, Location loc, Activation act,
                                 Value x) {
  return Emitter{b, loc}.activation(act, x);
}

Value mlir::rlx::buildSigmoid(OpBuilder &b, Location loc, Value x) {
  return Emitter{b, loc}.sigmoid(x);
}

Value mlir::rlx::buildGelu(OpBuilder &b, Location loc, Value x,
                           bool tanhApprox) {
  return Emitter{b, loc}.gelu(x, tanhApprox);
}

Value mlir::rlx::buildSoftplus(OpBuilder &b, Location loc, Value x) {
  return Emitter{b, loc}.softplus(x);
}
