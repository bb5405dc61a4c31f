//===- EmitterOps.h - HIR blocks for custom stages -------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The HIR blocks the built-in recipes written as custom stages (FLUX,
// Qwen3-Next) place through an Emitter, with weights checked by shape, and
// the check that a recipe read every tensor of its checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_FLOW_EMITTEROPS_H
#define RLX_LIB_FLOW_EMITTEROPS_H

#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"
#include "RLX/Flow/ModelFlow.h"

namespace rlx {

/// hir.linear: `x · Wᵀ (+ b)` for weight `prefix.weight` [out, in] (and
/// `prefix.bias` [out]).
llvm::Expected<mlir::Value> emitterLinear(Emitter &e, mlir::Value x,
                                          llvm::StringRef prefix, int64_t out,
                                          bool bias);

/// hir.attention over [B, T, heads*headDim] q and [B, S, kvHeads*headDim]
/// k, v: causal, or every key.
llvm::Expected<mlir::Value> emitterAttention(Emitter &e, mlir::Value q,
                                             mlir::Value k, mlir::Value v,
                                             int64_t heads, int64_t kvHeads,
                                             int64_t headDim, bool causal);

/// hir.attention over the keys `mask` ([B, S], nonzero) keeps (a padding
/// mask: a one-token decode step over a past bucket).
llvm::Expected<mlir::Value>
emitterMaskedAttention(Emitter &e, mlir::Value q, mlir::Value k, mlir::Value v,
                       mlir::Value mask, int64_t heads, int64_t kvHeads,
                       int64_t headDim);

/// An error naming the tensors of `weights` that `built` does not read
/// (the checkpoint does not match its config), for model `what`.
llvm::Error checkAllWeightsRead(const WeightSource &weights,
                                const BuiltModel &built, llvm::StringRef what);

} // namespace rlx

#endif // RLX_LIB_FLOW_EMITTEROPS_H
