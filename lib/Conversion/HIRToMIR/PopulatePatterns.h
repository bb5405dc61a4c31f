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
#include <array>
#include <vector>

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
/// A mixture-of-experts MLP on `x` ([B, T, H]): the router's softmax picks
/// each token's top `k` experts; the token, repeated once per pick
/// ([B, T, k, H]), goes through its experts' gated MLP as grouped matmuls
/// (only the picked experts' weights are read), and the k results are
/// summed with the routing weights (renormalized under `normTopK`); plus,
/// when `shared` holds its four weights (gate, up, down, gate vector), the
/// shared expert scaled by a sigmoid gate.
Value lowerMoeMlp(MIRBuilder &mb, Value x, Value router, Value wGate, Value wUp,
                  Value wDown, std::array<Value, 4> shared, int64_t k,
                  bool normTopK, Activation act);

/// The blocks of image encoders (patch embedding, inserted tokens, resized
/// position embeddings, packed SwiGLU).
void populateVisionPatterns(RewritePatternSet &patterns,
                            ::rlx::FusionPolicy policy);
/// The [out, in] matrix of PyTorch's bicubic resampling (align_corners
/// false, optionally antialiased) of `in` samples to `out`.
std::vector<float> bicubicResampleMatrix(int64_t in, int64_t out,
                                         bool antialias);

void populateLayerPatterns(RewritePatternSet &patterns,
                           ::rlx::FusionPolicy policy);

} // namespace mlir::rlx

#endif // RLX_LIB_CONVERSION_HIRTOMIR_POPULATEPATTERNS_H
