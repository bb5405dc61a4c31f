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
    // max(x, 0) + log1p(t), t = e^-|x| in (0, 1]. log1p(t) = 2 atanh(s) with
    // s = t / (2 + t) in (0, 1/3]: 2 s (1 + z/3 + z^2/5 + ... + z^6/13), z =
    // s^2, within 2e-8 relative (the next term is under z^7/15). No log op:
    // the targets' log need not be relatively exact near 1 (GLSL's Log is
    // only absolutely so), and log(1 + t) itself rounds to 0 for t < 6e-8.
    Value zero = constant(0.0, x);
    Value two = constant(2.0, x);
    Value abs = math::AbsFOp::create(b, loc, x);
    Value t = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, abs));
    Value s = div(t, add(two, t));
    Value z = mul(s, s);
    Value poly = constant(1.0 / 13.0, x);
    for (double c :
         {1.0 / 11.0, 1.0 / 9.0, 1.0 / 7.0, 1.0 / 5.0, 1.0 / 3.0, 1.0}) {
      Value k = constant(c, x);
      poly = add(mul(poly, z), k);
    }
    Value twoS = mul(two, s);
    Value log1p = mul(twoS, poly);
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
