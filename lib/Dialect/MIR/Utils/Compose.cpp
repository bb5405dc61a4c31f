//===- Compose.cpp - Fused MIR computations as primitive ops --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/Utils/Compose.h"
#include <limits>

using namespace mlir;
using namespace mlir::rlx;

/// The attention attributes mir.attention and mir.attention_block share.
template <typename OpTy> static AttentionConfig configOf(OpTy op) {
  AttentionConfig cfg;
  cfg.numHeads = op.getNumHeads();
  cfg.numKvHeads = op.getNumKvHeads();
  cfg.headDim = op.getHeadDim();
  cfg.maskKind = op.getMaskKind();
  cfg.window = op.getWindow();
  cfg.scale = op.getScale();
  cfg.softcap = op.getSoftcap();
  return cfg;
}

AttentionConfig AttentionConfig::of(mir::AttentionOp op) {
  return configOf(op);
}

AttentionConfig AttentionConfig::of(mir::AttentionBlockOp op) {
  return configOf(op);
}

Value mlir::rlx::createAttentionOp(MIRBuilder &mb, Value q, Value k, Value v,
                                   Value mask, const AttentionConfig &cfg) {
  SmallVector<Value> operands = {q, k, v};
  if (mask)
    operands.push_back(mask);
  return mb
      .create(
          "mir.attention", q.getType(), operands,
          {mb.i64("num_heads", cfg.numHeads),
           mb.i64("num_kv_heads", cfg.numKvHeads),
           mb.i64("head_dim", cfg.headDim),
           mb.f32("scale", cfg.effectiveScale()),
           mb.f32("softcap", cfg.softcap),
           mb.attr("mask_kind", mir::MaskKindAttr::get(
                                    mb.builder().getContext(), cfg.maskKind)),
           mb.i64("window", cfg.window)})
      ->getResult(0);
}

/// [B, T, n*hd] -> [B, n, T, hd].
static Value splitHeads(MIRBuilder &mb, Value x, int64_t n, int64_t hd) {
  auto ty = MIRBuilder::typeOf(x);
  Value r = mb.reshape(x, {ty.getDimSize(0), ty.getDimSize(1), n, hd});
  return mb.transpose(r, {0, 2, 1, 3});
}

/// [B, kv, T, hd] -> [B, kv*g, T, hd]: each KV head serves g query heads.
static Value repeatKv(MIRBuilder &mb, Value x, int64_t groups) {
  if (groups == 1)
    return x;
  auto ty = MIRBuilder::typeOf(x);
  int64_t b = ty.getDimSize(0), kv = ty.getDimSize(1), t = ty.getDimSize(2),
          hd = ty.getDimSize(3);
  Value r = mb.reshape(x, {b, kv, 1, t, hd});
  r = mb.broadcast(r, {b, kv, groups, t, hd});
  return mb.reshape(r, {b, kv * groups, t, hd});
}

bool mlir::rlx::canComposeAttention(Value query, Value key, MaskKind kind) {
  if (kind != MaskKind::Causal && kind != MaskKind::SlidingWindow)
    return true;
  return !ShapedType::isDynamic(MIRBuilder::typeOf(query).getDimSize(1)) &&
         !ShapedType::isDynamic(MIRBuilder::typeOf(key).getDimSize(1));
}

Value mlir::rlx::composeAttention(MIRBuilder &mb, Value q, Value k, Value v,
                                  Value mask, const AttentionConfig &cfg) {
  assert(canComposeAttention(q, k, cfg.maskKind) && "static sequence lengths");
  OpBuilder &b = mb.builder();
  auto qTy = MIRBuilder::typeOf(q);
  auto kTy = MIRBuilder::typeOf(k);
  Type elt = qTy.getElementType();
  int64_t tq = qTy.getDimSize(1), tk = kTy.getDimSize(1);
  bool positional = cfg.maskKind == MaskKind::Causal ||
                    cfg.maskKind == MaskKind::SlidingWindow;

  // Keys and values kept in f16 / bf16 are read as the query's type.
  if (MIRBuilder::typeOf(k).getElementType() != elt) {
    k = mb.convert(k, elt);
    v = mb.convert(v, elt);
  }
  Value qh = splitHeads(mb, q, cfg.numHeads, cfg.headDim);
  Value kh = repeatKv(mb, splitHeads(mb, k, cfg.numKvHeads, cfg.headDim),
                      cfg.numHeads / cfg.numKvHeads);
  Value vh = repeatKv(mb, splitHeads(mb, v, cfg.numKvHeads, cfg.headDim),
                      cfg.numHeads / cfg.numKvHeads);
  Value scores = mb.batchMatmul(qh, kh, /*transposeRhs=*/true);
  scores = mb.mul(scores, mb.scalar(cfg.effectiveScale(), elt));
  if (cfg.softcap > 0) {
    Value cap = mb.scalar(cfg.softcap, elt);
    scores = mb.mul(mb.unary("mir.tanh", mb.div(scores, cap)), cap);
  }
  // Masked scores take the lowest finite value, as Hugging Face does.
  Value lowest = mb.scalar(std::numeric_limits<float>::lowest(), elt);
  if (positional) {
    auto posTy = RankedTensorType::get({tq, tk}, b.getI64Type());
    Value qPos = mb.add(mb.iota(posTy, 0), mb.scalar(tk - tq, b.getI64Type()));
    Value kPos = mb.iota(posTy, 1);
    scores =
        mb.select(mb.compare(kPos, qPos, CmpPredicate::LE), scores, lowest);
    if (cfg.maskKind == MaskKind::SlidingWindow) {
      Value dist = mb.sub(qPos, kPos);
      scores = mb.select(mb.compare(dist, mb.scalar(cfg.window, b.getI64Type()),
                                    CmpPredicate::LT),
                         scores, lowest);
    }
  }
  if (mask) {
    auto mTy = MIRBuilder::typeOf(mask);
    Value zero = mb.scalar(0, mTy.getElementType());
    Value keep = mb.compare(mask, zero, CmpPredicate::NE);
    keep = mb.reshape(keep, {mTy.getDimSize(0), 1, 1, mTy.getDimSize(1)});
    scores = mb.select(keep, scores, lowest);
  }
  Value probs = mb.softmax(scores, -1);
  Value out = mb.batchMatmul(probs, vh);
  out = mb.transpose(out, {0, 2, 1, 3});
  return mb.reshape(out, qTy.getShape());
}

/// Per-head RMSNorm of [B, T, n*hd] with a [hd] weight.
static Value headNorm(MIRBuilder &mb, Value x, Value w, int64_t n, int64_t hd,
                      float eps, bool unitOffset) {
  auto ty = MIRBuilder::typeOf(x);
  Value r = mb.reshape(x, {ty.getDimSize(0), ty.getDimSize(1), n, hd});
  r = mb.rmsNorm(r, w, eps, unitOffset);
  return mb.reshape(r, ty.getShape());
}

/// x · wᵀ (+ bias), rounded to `roundTo` when set: one fused_matmul (a
/// plain matmul when there is neither), or primitives when `plain`.
static Value linear(MIRBuilder &mb, Value x, Value w, Value bias, bool plain,
                    Type roundTo = {}) {
  if (plain) {
    Value y = mb.matmul(x, w);
    return mb.roundTo(bias ? mb.add(y, bias) : y, roundTo);
  }
  if (!bias && !roundTo)
    return mb.matmul(x, w);
  return mb.fusedMatmul(x, w, bias, nullptr, Activation::None,
                        /*transposeRhs=*/true, roundTo);
}

Value mlir::rlx::expandAttentionBlock(MIRBuilder &mb, mir::AttentionBlockOp op,
                                      bool composeCore) {
  int64_t heads = op.getNumHeads(), kv = op.getNumKvHeads();
  int64_t hd = op.getHeadDim();
  int64_t qDim = heads * hd, kvDim = kv * hd;
  Value qkv =
      linear(mb, op.getInput(), op.getWQkv(), op.getQkvBias(), composeCore);
  Value q = mb.slice(qkv, 2, 0, qDim);
  Value k = mb.slice(qkv, 2, qDim, kvDim);
  Value v = mb.slice(qkv, 2, qDim + kvDim, kvDim);
  if (op.getQNorm()) {
    q = headNorm(mb, q, op.getQNorm(), heads, hd, op.getNormEpsilon(),
                 op.getNormUnitOffset());
    k = headNorm(mb, k, op.getKNorm(), kv, hd, op.getNormEpsilon(),
                 op.getNormUnitOffset());
  }
  if (op.getRotaryDim() > 0) {
    q = mb.rope(q, op.getPositions(), op.getInvFreq(), hd, op.getRotaryDim(),
                op.getRopeTheta(), op.getRopeStyle());
    k = mb.rope(k, op.getPositions(), op.getInvFreq(), hd, op.getRotaryDim(),
                op.getRopeTheta(), op.getRopeStyle());
  }
  AttentionConfig cfg = AttentionConfig::of(op);
  Value attn = composeCore ? composeAttention(mb, q, k, v, op.getMask(), cfg)
                           : createAttentionOp(mb, q, k, v, op.getMask(), cfg);
  // round_to: the output projection rounds as it stores.
  return linear(mb, attn, op.getWO(), op.getOutBias(), composeCore,
                op.getRoundTo().value_or(Type()));
}
