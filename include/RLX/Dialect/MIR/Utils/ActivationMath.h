//===- ActivationMath.h - RLX's activations in arith and math ops -*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The formula of every Activation, written once in arith and math ops on a
// float scalar or vector. Both code generators (KernelMath) and the body of
// mir.elementwise (mir-fuse-elementwise) build activations through it.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_UTILS_ACTIVATIONMATH_H
#define RLX_DIALECT_MIR_UTILS_ACTIVATIONMATH_H

#include "RLX/Dialect/Common/RLXEnums.h"
#include "mlir/IR/Builders.h"

namespace mlir::rlx {

/// `act(x)` for a float scalar or vector `x`.
Value buildActivation(OpBuilder &b, Location loc, Activation act, Value x);
/// 1 / (1 + e^-x).
Value buildSigmoid(OpBuilder &b, Location loc, Value x);
/// 0.5 x (1 + erf(x / sqrt 2)), or with `tanhApprox`
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Value buildGelu(OpBuilder &b, Location loc, Value x, bool tanhApprox);
/// log(1 + e^x) as max(x, 0) + log1p(e^-|x|), log1p by its atanh series: no
/// overflow at large x, and relatively exact (e^x) at very negative x.
Value buildSoftplus(OpBuilder &b, Location loc, Value x);

} // namespace mlir::rlx

#endif // RLX_DIALECT_MIR_UTILS_ACTIVATIONMATH_H
