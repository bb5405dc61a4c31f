//===- Compose.h - Fused MIR computations as primitive ops -----*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The compositions of primitive MIR ops that fused ops stand for, shared by
// the `fusable` HIR lowering (which emits them for the fusion patterns to
// find), the CPU expansion of mir.attention_block and mir-unfuse (which
// undoes fusion for a back end asked to run plain ops).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_UTILS_COMPOSE_H
#define RLX_DIALECT_MIR_UTILS_COMPOSE_H

#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"
#include <cmath>

namespace mlir::rlx {

/// Multi-head scaled dot-product attention, as hir.attention, the layer ops
/// and mir.attention configure it.
struct AttentionConfig {
  int64_t numHeads = 1, numKvHeads = 1, headDim = 1;
  MaskKind maskKind = MaskKind::Causal;
  int64_t window = 0;
  /// 0 means 1/sqrt(head_dim).
  double scale = 0;
  double softcap = 0;
  double effectiveScale() const {
    return scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(headDim));
  }
  static AttentionConfig of(mir::AttentionOp op);
  static AttentionConfig of(mir::AttentionBlockOp op);
};

/// One mir.attention with `cfg`'s attributes; `mask` is the optional
/// padding mask [B, Tk].
Value createAttentionOp(MIRBuilder &mb, Value query, Value key, Value value,
                        Value mask, const AttentionConfig &cfg);

/// Whether composeAttention can build the primitive form of an attention
/// over `query` [B, Tq, .] and `key` [B, Tk, .]: the positional masks
/// (causal, sliding window) need static Tq and Tk.
bool canComposeAttention(Value query, Value key, MaskKind maskKind);

/// Attention over [B, T, heads*hd] tensors as primitives: split heads,
/// repeat KV heads (GQA), batch_matmul, scale, softcap, masks (masked scores
/// take the lowest finite value, as Hugging Face does), softmax, batch_matmul,
/// merge heads. `mask` is the optional padding mask [B, Tk]. Requires
/// canComposeAttention.
Value composeAttention(MIRBuilder &mb, Value query, Value key, Value value,
                       Value mask, const AttentionConfig &cfg);

/// mir.attention_block as its steps: the QKV GEMM (+ bias), slices of its
/// result, per-head QK RMSNorm, RoPE, the attention (mir.attention, or its
/// primitive form with `composeCore`, which requires canComposeAttention on
/// the block's input), the output GEMM (+ bias). With `composeCore` the
/// GEMMs with bias are plain matmul + add too.
Value expandAttentionBlock(MIRBuilder &mb, mir::AttentionBlockOp op,
                           bool composeCore);

} // namespace mlir::rlx

#endif // RLX_DIALECT_MIR_UTILS_COMPOSE_H
