//===- Blocks.cpp - Lower the small HIR blocks to MIR ---------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One pattern per small HIR block (params, embeddings, norms, linear, RoPE,
// attention, feed-forward blocks, heads, pooling, hir.custom). Composite
// layers are in Layers.cpp.
//
//===----------------------------------------------------------------------===//

#include "PopulatePatterns.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/IR/IRMapping.h"
#include <limits>

using namespace mlir;
using namespace mlir::rlx;

namespace {

/// Base for the HIR lowering patterns: carries the policy.
template <typename OpTy> struct HIRPattern : public OpRewritePattern<OpTy> {
  HIRPattern(MLIRContext *ctx, ::rlx::FusionPolicy policy)
      : OpRewritePattern<OpTy>(ctx), policy(policy) {}
  bool fusable() const { return policy == ::rlx::FusionPolicy::Fusable; }
  ::rlx::FusionPolicy policy;
};

//===----------------------------------------------------------------------===//
// Parameters, embeddings and heads
//===----------------------------------------------------------------------===//

struct ParamLowering : HIRPattern<hir::ParamOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::ParamOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<Type> storage = op.getStorage();
    if (!storage) {
      rewriter.replaceOpWithNewOp<mir::ParamOp>(op, op.getType(), op.getName());
      return success();
    }
    // The weight as stored, widened where it is read: mir-fuse-dequantize
    // lets the kernels that can read the stored form do so.
    auto stored = mir::ParamOp::create(
        rewriter, op.getLoc(),
        RankedTensorType::get(op.getType().getShape(), *storage), op.getName());
    rewriter.replaceOpWithNewOp<mir::DequantizeOp>(op, op.getType(), stored);
    return success();
  }
};

/// Stacked parameters become one parameter joined at load time (viewed as
/// the stack); anything else a run-time concatenation.
struct StackLowering : HIRPattern<hir::StackOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::StackOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    SmallVector<Value> inputs(op.getInputs());
    ArrayRef<int64_t> shape = op.getType().getShape();
    Value joined;
    if (shape.size() > 1) {
      joined = mb.concatParams(inputs, 0);
    } else {
      for (Value &v : inputs)
        v = mb.reshape(v, {1});
      joined = mb.concat(inputs, 0);
    }
    rewriter.replaceOp(op, mb.reshape(joined, shape));
    return success();
  }
};

struct EmbedLowering : HIRPattern<hir::EmbedOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::EmbedOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(op, mb.gather(op.getTable(), op.getIds()));
    return success();
  }
};

struct EmbedScaleLowering : HIRPattern<hir::EmbedScaleOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::EmbedScaleOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    Type elt = op.getType().getElementType();
    rewriter.replaceOp(
        op,
        mb.mul(op.getInput(), mb.scalar(op.getScale().convertToDouble(), elt)));
    return success();
  }
};

struct GatherLastTokenLowering : HIRPattern<hir::GatherLastTokenOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::GatherLastTokenOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(op, mb.slice(op.getInput(), 1, -1, 1));
    return success();
  }
};

struct LmHeadLowering : HIRPattern<hir::LmHeadOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::LmHeadOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(op, mb.matmul(op.getInput(), op.getWeight()));
    return success();
  }
};

struct LogitSoftcapLowering : HIRPattern<hir::LogitSoftcapOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::LogitSoftcapOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    Type elt = op.getType().getElementType();
    Value cap = mb.scalar(op.getCap().convertToDouble(), elt);
    Value t = mb.unary("mir.tanh", mb.div(op.getInput(), cap));
    rewriter.replaceOp(op, mb.mul(t, cap));
    return success();
  }
};

struct ClsPoolLowering : HIRPattern<hir::ClsPoolOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::ClsPoolOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    Value first = mb.slice(op.getInput(), 1, 0, 1);
    rewriter.replaceOp(op, mb.reshape(first, op.getType().getShape()));
    return success();
  }
};

struct MeanPoolLowering : HIRPattern<hir::MeanPoolOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::MeanPoolOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    Value x = op.getInput();
    if (!op.getMask()) {
      rewriter.replaceOp(op, mb.reduce("mir.reduce_mean", x, {1}, false));
      return success();
    }
    // sum(x * m) / max(sum(m), 1e-9), as sentence-transformers pools.
    Type elt = op.getType().getElementType();
    Value m = mb.convert(op.getMask(), elt);
    auto mTy = MIRBuilder::typeOf(m);
    m = mb.reshape(m, {mTy.getDimSize(0), mTy.getDimSize(1), 1});
    Value sum = mb.reduce("mir.reduce_sum", mb.mul(x, m), {1}, false);
    Value count = mb.reduce("mir.reduce_sum", m, {1}, false);
    count = mb.binary("mir.max", count, mb.scalar(1e-9, elt));
    rewriter.replaceOp(op, mb.div(sum, count));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Normalization and elementwise
//===----------------------------------------------------------------------===//

struct RmsNormLowering : HIRPattern<hir::RmsNormOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::RmsNormOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(op, mb.rmsNorm(op.getInput(), op.getWeight(),
                                      op.getEpsilon().convertToFloat(),
                                      /*unitOffset=*/false));
    return success();
  }
};

struct GemmaRmsNormLowering : HIRPattern<hir::GemmaRmsNormOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::GemmaRmsNormOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(op, mb.rmsNorm(op.getInput(), op.getWeight(),
                                      op.getEpsilon().convertToFloat(),
                                      /*unitOffset=*/true));
    return success();
  }
};

struct LayerNormLowering : HIRPattern<hir::LayerNormOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(op,
                       mb.layerNorm(op.getInput(), op.getGamma(), op.getBeta(),
                                    op.getEpsilon().convertToFloat()));
    return success();
  }
};

struct LayerScaleLowering : HIRPattern<hir::LayerScaleOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::LayerScaleOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(op, mb.mul(op.getInput(), op.getGamma()));
    return success();
  }
};

struct AddLowering : HIRPattern<hir::AddOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::AddOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(op, mb.add(op.getLhs(), op.getRhs()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Linear and feed-forward blocks
//===----------------------------------------------------------------------===//

struct LinearLowering : HIRPattern<hir::LinearOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::LinearOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    Activation act = op.getActivation();
    Value bias = op.getBias();
    if (!fusable() && (bias || act != Activation::None)) {
      rewriter.replaceOp(op, mb.fusedMatmul(op.getInput(), op.getWeight(), bias,
                                            nullptr, act));
      return success();
    }
    Value y = mb.matmul(op.getInput(), op.getWeight());
    if (bias)
      y = mb.add(y, bias);
    rewriter.replaceOp(op, mb.activation(y, act));
    return success();
  }
};

/// down(act(gate(x)) * up(x)) for SwiGLU and GeGLU.
static Value lowerGatedFfn(MIRBuilder &mb, ::rlx::FusionPolicy policy, Value x,
                           Value gate, Value up, Value down, Activation act) {
  if (policy == ::rlx::FusionPolicy::Direct) {
    Value gateUp = mb.matmul(x, mb.concatParams({gate, up}, 0));
    return mb.matmul(mb.fusedGlu(gateUp, act), down);
  }
  Value g = mb.activation(mb.matmul(x, gate), act);
  return mb.matmul(mb.mul(g, mb.matmul(x, up)), down);
}

struct MoeMlpLowering : HIRPattern<hir::MoeMlpOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::MoeMlpOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(
        op, lowerMoeMlp(mb, op.getInput(), op.getRouter(), op.getWGate(),
                        op.getWUp(), op.getWDown(),
                        {op.getSharedWGate(), op.getSharedWUp(),
                         op.getSharedWDown(), op.getSharedExpertGate()},
                        op.getExpertsPerToken(), op.getNormTopkProb(),
                        op.getActivation()));
    return success();
  }
};

struct SwigluLowering : HIRPattern<hir::SwigluOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::SwigluOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(op, lowerGatedFfn(mb, policy, op.getInput(),
                                         op.getWGate(), op.getWUp(),
                                         op.getWDown(), Activation::Silu));
    return success();
  }
};

struct GegluLowering : HIRPattern<hir::GegluOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::GegluOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(op, lowerGatedFfn(mb, policy, op.getInput(),
                                         op.getWGate(), op.getWUp(),
                                         op.getWDown(), Activation::GeluTanh));
    return success();
  }
};

struct GeluFfnLowering : HIRPattern<hir::GeluFfnOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::GeluFfnOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    Activation act =
        op.getTanhApprox() ? Activation::GeluTanh : Activation::Gelu;
    if (!fusable()) {
      Value h =
          mb.fusedMatmul(op.getInput(), op.getWIn(), op.getBIn(), nullptr, act);
      rewriter.replaceOp(op, mb.fusedMatmul(h, op.getWOut(), op.getBOut(),
                                            nullptr, Activation::None));
      return success();
    }
    Value h = mb.activation(
        mb.add(mb.matmul(op.getInput(), op.getWIn()), op.getBIn()), act);
    rewriter.replaceOp(op, mb.add(mb.matmul(h, op.getWOut()), op.getBOut()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// RoPE and attention
//===----------------------------------------------------------------------===//

struct RopeLowering : HIRPattern<hir::RopeOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::RopeOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    rewriter.replaceOp(
        op, mb.rope(op.getInput(), op.getPositions(), op.getInvFreq(),
                    op.getHeadDim(), op.getRotaryDim(),
                    op.getTheta().convertToFloat(), op.getStyle()));
    return success();
  }
};

struct AttentionLowering : HIRPattern<hir::AttentionOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::AttentionOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    AttentionConfig cfg;
    cfg.numHeads = op.getNumHeads();
    cfg.numKvHeads = op.getNumKvHeads();
    cfg.headDim = op.getHeadDim();
    cfg.maskKind = op.getMaskKind();
    cfg.window = op.getWindowAttr().getInt();
    cfg.scale = op.getScale().convertToDouble();
    cfg.softcap = op.getSoftcap().convertToDouble();
    FailureOr<Value> out = lowerAttention(mb, op, policy, op.getQ(), op.getK(),
                                          op.getV(), op.getMask(), cfg);
    if (failed(out))
      return failure();
    rewriter.replaceOp(op, *out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Escape hatch
//===----------------------------------------------------------------------===//

struct CustomLowering : HIRPattern<hir::CustomOp> {
  using HIRPattern::HIRPattern;
  LogicalResult matchAndRewrite(hir::CustomOp op,
                                PatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    IRMapping map;
    map.map(body.getArguments(), op.getInputs());
    for (Operation &inner : body.without_terminator())
      rewriter.clone(inner, map);
    auto yield = cast<hir::YieldOp>(body.getTerminator());
    SmallVector<Value> results;
    for (Value v : yield.getValues())
      results.push_back(map.lookupOrDefault(v));
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

Value mlir::rlx::lowerMoeMlp(MIRBuilder &mb, Value x, Value router, Value wGate,
                             Value wUp, Value wDown,
                             std::array<Value, 4> shared, int64_t k,
                             bool normTopK, Activation act) {
  auto xt = MIRBuilder::typeOf(x);
  int64_t b = xt.getDimSize(0), t = xt.getDimSize(1), h = xt.getDimSize(2);
  Value probs = mb.softmax(mb.matmul(x, router), -1);
  auto [weights, experts] = mb.topK(probs, k);
  if (normTopK)
    weights = mb.div(weights, mb.reduce("mir.reduce_sum", weights, {2},
                                        /*keepDims=*/true));
  Value rows = mb.broadcast(mb.reshape(x, {b, t, 1, h}), {b, t, k, h});
  // The slots sorted by expert once, for the three grouped matmuls.
  auto [order, offsets] =
      mb.sortGroups(experts, MIRBuilder::typeOf(router).getDimSize(0));
  Value g = mb.activation(
      mb.groupedMatmul(rows, wGate, experts, order, offsets), act);
  Value u = mb.groupedMatmul(rows, wUp, experts, order, offsets);
  Value y = mb.groupedMatmul(mb.mul(g, u), wDown, experts, order, offsets);
  y = mb.mul(y, mb.reshape(weights, {b, t, k, 1}));
  Value out = mb.reduce("mir.reduce_sum", y, {2}, /*keepDims=*/false);
  auto [sGate, sUp, sDown, sExpertGate] = shared;
  if (!sGate)
    return out;
  Value sg = mb.activation(mb.matmul(x, sGate), act);
  Value sharedOut = mb.matmul(mb.mul(sg, mb.matmul(x, sUp)), sDown);
  Value gate = mb.activation(mb.matmul(x, sExpertGate), Activation::Sigmoid);
  return mb.add(out, mb.mul(gate, sharedOut));
}

//===----------------------------------------------------------------------===//
// Attention core
//===----------------------------------------------------------------------===//

FailureOr<Value> mlir::rlx::lowerAttention(MIRBuilder &mb, Operation *op,
                                           ::rlx::FusionPolicy policy, Value q,
                                           Value k, Value v, Value mask,
                                           const AttentionConfig &cfg) {
  if (policy == ::rlx::FusionPolicy::Direct)
    return createAttentionOp(mb, q, k, v, mask, cfg);

  if (!canComposeAttention(q, k, cfg.maskKind))
    return op->emitOpError("the fusable lowering of a ")
           << stringifyMaskKind(cfg.maskKind)
           << " attention needs static sequence lengths; specialize the "
              "shapes first (or use policy=direct)";
  return composeAttention(mb, q, k, v, mask, cfg);
}

void mlir::rlx::populateBlockPatterns(RewritePatternSet &patterns,
                                      ::rlx::FusionPolicy policy) {
  patterns.add<ParamLowering, StackLowering, EmbedLowering, EmbedScaleLowering,
               GatherLastTokenLowering, LmHeadLowering, LogitSoftcapLowering,
               ClsPoolLowering, MeanPoolLowering, RmsNormLowering,
               GemmaRmsNormLowering, LayerNormLowering, LayerScaleLowering,
               AddLowering, LinearLowering, SwigluLowering, GegluLowering,
               MoeMlpLowering, GeluFfnLowering, RopeLowering, AttentionLowering,
               CustomLowering>(patterns.getContext(), policy);
}
