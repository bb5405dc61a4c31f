//===- PopulatePatterns.h - HIR to MIR pattern groups ----------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_CONVERSION_HIRTOMIR_POPULATEPATTERNS_H
#define RLX_LIB_CONVERSION_HIRTOMIR_POPULATEPATTERNS_H

#include "RLX/Conversion/HIRToMIR/HIRToMIR.h"
#include "RLX/Dialect/MIR/Utils/Compose.h"
#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::rlx {

/// Scaled dot-product attention over [B, T, heads*hd] tensors: mir.attention
/// under Direct, primitives (reshape, transpose, batch_matmul, mask, softmax)
/// under Fusable. Fails (with a diagnostic on `op`) when the primitive form
/// needs static sequence lengths it does not have.
FailureOr<Value> lowerAttention(MIRBuilder &mb, Operation *op,
                                ::rlx::FusionPolicy policy, Value q, Value k,
                                Value v, Value mask,
                                const AttentionConfig &cfg);

void populateBlockPatterns(RewritePatternSet &patterns,
                           ::rlx::FusionPolicy policy);
void populateLayerPatterns(RewritePatternSet &patterns,
                           ::rlx::FusionPolicy policy);

} // namespace mlir::rlx

#endif // RLX_LIB_CONVERSION_HIRTOMIR_POPULATEPATTERNS_H
