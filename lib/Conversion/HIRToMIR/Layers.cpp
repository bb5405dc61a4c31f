//===- Layers.cpp - Lower composite HIR layers to MIR ---------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The decoder layers (LLaMA, Qwen3, Gemma 2; prefill and KV-cache decode) and
// the BERT encoder layer. Under `direct` they become the fused MIR ops
// (mir.attention_block, mir.fused_residual_rms_norm, mir.fused_glu,
// mir.fused_matmul with a residual); under `fusable`, primitives.
//
//===----------------------------------------------------------------------===//

#include "PopulatePatterns.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"

using namespace mlir;
using namespace mlir::rlx;

namespace {

/// Operands of a decoder layer; absent ones are null.
struct LayerParts {
  Value x, positions, pastK, pastV, mask, invFreq;
  Value inputNorm, wq, wk, wv, wo;
  Value bq, bk, bv, bo;                        // optional biases
  Value postNorm;                              // LLaMA, Qwen3
  Value qNorm, kNorm;                          // Qwen3
  Value postAttnNorm, preFfnNorm, postFfnNorm; // Gemma
  Value wGate, wUp, wDown;
  Value bGate, bUp, bDown; // optional biases
  // Mixture of experts: the router, and the optional shared expert.
  Value router, sharedGate, sharedUp, sharedDown, sharedExpertGate;
};

struct LayerConfig : AttentionConfig {
  int64_t rotaryDim = 0;
  float theta = 10000.0f;
  RopeStyle style = RopeStyle::Half;
  float eps = 1e-5f;
  bool gemma = false;
  Activation act = Activation::Silu;
  int64_t expertsPerToken = 0;
  bool normTopK = false;
};

struct LayerResults {
  Value hidden, presentK, presentV;
};

template <typename OpTy>
static void readCommon(OpTy op, LayerParts &p, LayerConfig &c) {
  p.x = op.getInput();
  p.positions = op.getPositions();
  p.invFreq = op.getInvFreq();
  p.inputNorm = op.getInputNorm();
  p.wq = op.getWq();
  p.wk = op.getWk();
  p.wv = op.getWv();
  p.wo = op.getWo();
  p.wGate = op.getWGate();
  p.wUp = op.getWUp();
  p.wDown = op.getWDown();
  p.bq = op.getBq();
  p.bk = op.getBk();
  p.bv = op.getBv();
  p.bo = op.getBo();
  p.bGate = op.getBGate();
  p.bUp = op.getBUp();
  p.bDown = op.getBDown();
  p.router = op.getRouter();
  p.sharedGate = op.getSharedWGate();
  p.sharedUp = op.getSharedWUp();
  p.sharedDown = op.getSharedWDown();
  p.sharedExpertGate = op.getSharedExpertGate();
  c.expertsPerToken = op.getExpertsPerToken();
  c.normTopK = op.getNormTopkProb();
  c.act = op.getMlpActivation();
  c.scale = op.getScale().convertToDouble();
  c.numHeads = op.getNumHeads();
  c.numKvHeads = op.getNumKvHeads();
  c.headDim = op.getHeadDim();
  c.rotaryDim = op.getRotaryDim() ? op.getRotaryDim() : op.getHeadDim();
  c.theta = op.getRopeTheta().convertToFloat();
  c.style = op.getRopeStyle();
  c.eps = op.getRmsEpsilon().convertToFloat();
  c.window = op.getWindowAttr().getInt();
  c.maskKind = c.window > 0 ? MaskKind::SlidingWindow : MaskKind::Causal;
}

/// Per-head RMSNorm of [B, T, n*hd] with a [hd] weight (Qwen3 QK-norm).
static Value headNorm(MIRBuilder &mb, Value x, Value w, int64_t n, int64_t hd,
                      float eps, bool unitOffset) {
  auto ty = MIRBuilder::typeOf(x);
  Value r = mb.reshape(x, {ty.getDimSize(0), ty.getDimSize(1), n, hd});
  r = mb.rmsNorm(r, w, eps, unitOffset);
  return mb.reshape(r, ty.getShape());
}

/// `x · wᵀ`, plus `bias` when there is one.
static Value linear(MIRBuilder &mb, Value x, Value w, Value bias) {
  Value y = mb.matmul(x, w);
  return bias ? mb.add(y, bias) : y;
}

/// `weights` joined along their rows into one weight at load time
/// (concatParams), or null when they do not join: weights stored in
/// different types (a Q4_K_M file's q4_K q and k rows beside its q6_K v
/// rows) would join only as a run-time concatenation of widened copies.
static Value joinedWeights(MIRBuilder &mb, ArrayRef<Value> weights) {
  return MIRBuilder::joinsAtLoad(weights, 0) ? mb.concatParams(weights, 0)
                                             : Value();
}

/// The MLP half of a layer after attention: `attnOut` is the projected
/// attention output, `x` the layer input.
static Value lowerMlpHalf(MIRBuilder &mb, ::rlx::FusionPolicy policy,
                          const LayerParts &p, const LayerConfig &c,
                          Value attnOut) {
  bool direct = policy == ::rlx::FusionPolicy::Direct;
  Activation act = c.act;
  if (c.gemma)
    attnOut = mb.rmsNorm(attnOut, p.postAttnNorm, c.eps, true);
  Value mlpNorm = c.gemma ? p.preFfnNorm : p.postNorm;
  Value h, n2;
  if (p.router) {
    if (direct) {
      std::tie(h, n2) =
          mb.fusedResidualRmsNorm(attnOut, p.x, mlpNorm, c.eps, c.gemma);
    } else {
      h = mb.add(p.x, attnOut);
      n2 = mb.rmsNorm(h, mlpNorm, c.eps, c.gemma);
    }
    Value d = lowerMoeMlp(
        mb, n2, p.router, p.wGate, p.wUp, p.wDown,
        {p.sharedGate, p.sharedUp, p.sharedDown, p.sharedExpertGate},
        c.expertsPerToken, c.normTopK, c.act);
    if (c.gemma)
      d = mb.rmsNorm(d, p.postFfnNorm, c.eps, true);
    return mb.add(h, d);
  }
  if (direct) {
    std::tie(h, n2) =
        mb.fusedResidualRmsNorm(attnOut, p.x, mlpNorm, c.eps, c.gemma);
    Value g;
    if (Value wGateUp = joinedWeights(mb, {p.wGate, p.wUp})) {
      Value gateUp = p.bGate
                         ? mb.fusedMatmul(n2, wGateUp,
                                          mb.concatParams({p.bGate, p.bUp}, 0),
                                          nullptr, Activation::None)
                         : mb.matmul(n2, wGateUp);
      g = mb.fusedGlu(gateUp, act);
    } else {
      // Gate and up stored in different types: a matmul each.
      g = mb.mul(mb.activation(linear(mb, n2, p.wGate, p.bGate), act),
                 linear(mb, n2, p.wUp, p.bUp));
    }
    if (c.gemma) {
      Value d = mb.rmsNorm(linear(mb, g, p.wDown, p.bDown), p.postFfnNorm,
                           c.eps, true);
      return mb.add(h, d);
    }
    return mb.fusedMatmul(g, p.wDown, p.bDown, h, Activation::None);
  }
  h = mb.add(p.x, attnOut);
  n2 = mb.rmsNorm(h, mlpNorm, c.eps, c.gemma);
  Value g = mb.activation(linear(mb, n2, p.wGate, p.bGate), act);
  Value d =
      linear(mb, mb.mul(g, linear(mb, n2, p.wUp, p.bUp)), p.wDown, p.bDown);
  if (c.gemma)
    d = mb.rmsNorm(d, p.postFfnNorm, c.eps, true);
  return mb.add(h, d);
}

static FailureOr<LayerResults> lowerDecoderLayer(MIRBuilder &mb, Operation *op,
                                                 ::rlx::FusionPolicy policy,
                                                 const LayerParts &p,
                                                 const LayerConfig &c) {
  bool direct = policy == ::rlx::FusionPolicy::Direct;
  int64_t qDim = c.numHeads * c.headDim, kvDim = c.numKvHeads * c.headDim;
  Value n = mb.rmsNorm(p.x, p.inputNorm, c.eps, c.gemma);
  LayerResults r;

  // Under `direct` the q, k and v rows are one weight, where they join.
  Value wqkv = direct ? joinedWeights(mb, {p.wq, p.wk, p.wv}) : Value();
  // Prefill under `direct`: the whole attention is one fused block.
  if (wqkv && !p.pastK) {
    SmallVector<Value> operands = {n, wqkv, p.wo, p.positions};
    if (p.invFreq)
      operands.push_back(p.invFreq);
    if (p.qNorm)
      operands.append({p.qNorm, p.kNorm});
    if (p.bq)
      operands.push_back(mb.concatParams({p.bq, p.bk, p.bv}, 0));
    if (p.bo)
      operands.push_back(p.bo);
    int32_t has = p.qNorm ? 1 : 0;
    Value attn =
        mb.create(
              "mir.attention_block", p.x.getType(), operands,
              {mb.attr("operandSegmentSizes",
                       mb.builder().getDenseI32ArrayAttr(
                           {1, 1, 1, 1, p.invFreq ? 1 : 0, has, has,
                            p.bq ? 1 : 0, p.bo ? 1 : 0, 0})),
               mb.i64("num_heads", c.numHeads),
               mb.i64("num_kv_heads", c.numKvHeads),
               mb.i64("head_dim", c.headDim), mb.i64("rotary_dim", c.rotaryDim),
               mb.f32("rope_theta", c.theta),
               mb.attr("rope_style",
                       mir::RopeStyleAttr::get(op->getContext(), c.style)),
               mb.f32("scale", c.effectiveScale()),
               mb.f32("softcap", c.softcap),
               mb.attr("mask_kind",
                       mir::MaskKindAttr::get(op->getContext(), c.maskKind)),
               mb.i64("window", c.window), mb.f32("norm_epsilon", c.eps)})
            ->getResult(0);
    // Gemma's QK norms scale by (1 + w).
    if (c.gemma && p.qNorm)
      attn.getDefiningOp()->setAttr("norm_unit_offset",
                                    mb.builder().getUnitAttr());
    r.hidden = lowerMlpHalf(mb, policy, p, c, attn);
    return r;
  }

  // Otherwise the projections are explicit.
  Value q, k, v;
  if (wqkv) {
    Value qkv =
        p.bq ? mb.fusedMatmul(n, wqkv, mb.concatParams({p.bq, p.bk, p.bv}, 0),
                              nullptr, Activation::None)
             : mb.matmul(n, wqkv);
    q = mb.slice(qkv, 2, 0, qDim);
    k = mb.slice(qkv, 2, qDim, kvDim);
    v = mb.slice(qkv, 2, qDim + kvDim, kvDim);
  } else {
    q = linear(mb, n, p.wq, p.bq);
    k = linear(mb, n, p.wk, p.bk);
    v = linear(mb, n, p.wv, p.bv);
  }
  if (p.qNorm) {
    q = headNorm(mb, q, p.qNorm, c.numHeads, c.headDim, c.eps, c.gemma);
    k = headNorm(mb, k, p.kNorm, c.numKvHeads, c.headDim, c.eps, c.gemma);
  }
  q = mb.rope(q, p.positions, p.invFreq, c.headDim, c.rotaryDim, c.theta,
              c.style);
  k = mb.rope(k, p.positions, p.invFreq, c.headDim, c.rotaryDim, c.theta,
              c.style);
  if (p.pastK) {
    // A cache kept in f16 / bf16 stores the new keys and values rounded.
    Type cache = MIRBuilder::typeOf(p.pastK).getElementType();
    if (MIRBuilder::typeOf(k).getElementType() != cache) {
      k = mb.convert(k, cache);
      v = mb.convert(v, cache);
    }
    k = mb.concat({p.pastK, k}, 1);
    v = mb.concat({p.pastV, v}, 1);
    r.presentK = k;
    r.presentV = v;
  }
  FailureOr<Value> attn = lowerAttention(mb, op, policy, q, k, v, p.mask, c);
  if (failed(attn))
    return failure();
  r.hidden = lowerMlpHalf(mb, policy, p, c, linear(mb, *attn, p.wo, p.bo));
  return r;
}

template <typename OpTy>
struct DecoderLayerLowering : public OpRewritePattern<OpTy> {
  DecoderLayerLowering(MLIRContext *ctx, ::rlx::FusionPolicy policy)
      : OpRewritePattern<OpTy>(ctx), policy(policy) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    LayerParts p;
    LayerConfig c;
    readCommon(op, p, c);
    constexpr bool isDecode =
        std::is_same_v<OpTy, hir::LlamaCachedDecoderLayerOp> ||
        std::is_same_v<OpTy, hir::Qwen3CachedDecoderLayerOp> ||
        std::is_same_v<OpTy, hir::GemmaCachedDecoderLayerOp>;
    constexpr bool isGemma =
        std::is_same_v<OpTy, hir::GemmaDecoderLayerOp> ||
        std::is_same_v<OpTy, hir::GemmaCachedDecoderLayerOp>;
    constexpr bool isQwen3 =
        std::is_same_v<OpTy, hir::Qwen3DecoderLayerOp> ||
        std::is_same_v<OpTy, hir::Qwen3CachedDecoderLayerOp>;
    if constexpr (isDecode) {
      p.pastK = op.getPastK();
      p.pastV = op.getPastV();
      p.mask = op.getMask();
    }
    if constexpr (isGemma) {
      p.postAttnNorm = op.getPostAttnNorm();
      p.preFfnNorm = op.getPreFfnNorm();
      p.postFfnNorm = op.getPostFfnNorm();
      p.qNorm = op.getQNorm();
      p.kNorm = op.getKNorm();
      c.gemma = true;
      c.softcap = op.getAttnSoftcap().convertToDouble();
    } else {
      p.postNorm = op.getPostNorm();
    }
    if constexpr (isQwen3) {
      p.qNorm = op.getQNorm();
      p.kNorm = op.getKNorm();
    }
    MIRBuilder mb(rewriter, op.getLoc());
    FailureOr<LayerResults> r = lowerDecoderLayer(mb, op, policy, p, c);
    if (failed(r))
      return failure();
    if constexpr (isDecode)
      rewriter.replaceOp(op, {r->hidden, r->presentK, r->presentV});
    else
      rewriter.replaceOp(op, r->hidden);
    return success();
  }

  ::rlx::FusionPolicy policy;
};

struct BertEncoderLayerLowering
    : public OpRewritePattern<hir::BertEncoderLayerOp> {
  BertEncoderLayerLowering(MLIRContext *ctx, ::rlx::FusionPolicy policy)
      : OpRewritePattern(ctx), policy(policy) {}

  LogicalResult matchAndRewrite(hir::BertEncoderLayerOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    Value x = op.getInput();
    Value mask = op.getMask();
    float eps = op.getLnEpsilon().convertToFloat();
    Activation act = op.getActivation();
    AttentionConfig cfg;
    cfg.numHeads = cfg.numKvHeads = op.getNumHeads();
    cfg.headDim = op.getHeadDim();
    cfg.maskKind = mask ? MaskKind::Padding : MaskKind::None;

    if (policy == ::rlx::FusionPolicy::Direct) {
      Value wqkv = mb.concatParams({op.getWq(), op.getWk(), op.getWv()}, 0);
      Value bqkv = mb.concatParams({op.getBq(), op.getBk(), op.getBv()}, 0);
      SmallVector<Value> operands = {x, wqkv, op.getWo(), bqkv, op.getBo()};
      if (mask)
        operands.push_back(mask);
      Value attn =
          mb.create("mir.attention_block", x.getType(), operands,
                    {mb.attr("operandSegmentSizes",
                             rewriter.getDenseI32ArrayAttr(
                                 {1, 1, 1, 0, 0, 0, 0, 1, 1, mask ? 1 : 0})),
                     mb.i64("num_heads", cfg.numHeads),
                     mb.i64("num_kv_heads", cfg.numKvHeads),
                     mb.i64("head_dim", cfg.headDim), mb.i64("rotary_dim", 0),
                     mb.f32("scale", cfg.effectiveScale()),
                     mb.attr("mask_kind", mir::MaskKindAttr::get(
                                              op.getContext(), cfg.maskKind))})
              ->getResult(0);
      Value a = mb.fusedResidualLayerNorm(attn, x, op.getLn1Gamma(),
                                          op.getLn1Beta(), eps)
                    .second;
      Value h = mb.fusedMatmul(a, op.getWIn(), op.getBIn(), nullptr, act);
      Value o = mb.fusedMatmul(h, op.getWOut(), op.getBOut(), nullptr,
                               Activation::None);
      rewriter.replaceOp(op, mb.fusedResidualLayerNorm(o, a, op.getLn2Gamma(),
                                                       op.getLn2Beta(), eps)
                                 .second);
      return success();
    }

    auto dense = [&](Value in, Value w, Value b) {
      return mb.add(mb.matmul(in, w), b);
    };
    Value q = dense(x, op.getWq(), op.getBq());
    Value k = dense(x, op.getWk(), op.getBk());
    Value v = dense(x, op.getWv(), op.getBv());
    FailureOr<Value> attn = lowerAttention(mb, op, policy, q, k, v, mask, cfg);
    if (failed(attn))
      return failure();
    Value o = dense(*attn, op.getWo(), op.getBo());
    Value a =
        mb.layerNorm(mb.add(x, o), op.getLn1Gamma(), op.getLn1Beta(), eps);
    Value h = mb.activation(dense(a, op.getWIn(), op.getBIn()), act);
    Value o2 = dense(h, op.getWOut(), op.getBOut());
    rewriter.replaceOp(op, mb.layerNorm(mb.add(a, o2), op.getLn2Gamma(),
                                        op.getLn2Beta(), eps));
    return success();
  }

  ::rlx::FusionPolicy policy;
};

} // namespace

void mlir::rlx::populateLayerPatterns(RewritePatternSet &patterns,
                                      ::rlx::FusionPolicy policy) {
  patterns.add<DecoderLayerLowering<hir::LlamaDecoderLayerOp>,
               DecoderLayerLowering<hir::LlamaCachedDecoderLayerOp>,
               DecoderLayerLowering<hir::Qwen3DecoderLayerOp>,
               DecoderLayerLowering<hir::Qwen3CachedDecoderLayerOp>,
               DecoderLayerLowering<hir::GemmaDecoderLayerOp>,
               DecoderLayerLowering<hir::GemmaCachedDecoderLayerOp>,
               BertEncoderLayerLowering>(patterns.getContext(), policy);
}
