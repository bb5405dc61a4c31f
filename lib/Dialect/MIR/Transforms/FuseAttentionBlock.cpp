//===- FuseAttentionBlock.cpp - Fuse a whole self-attention block ---------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// IN (rooted at the mir.attention):
//   %qkv = mir.matmul %x, %wqkv {transpose_rhs}      [+ mir.add %qkv_bias,
//                                                      or mir.fused_matmul
//                                                      with bias only]
//   %q = mir.slice %qkv [0, H*D)   %k = [H*D, +KV*D)   %v = [.., +KV*D)
//   (QK-norm: reshape [B, T, n, D] → mir.rms_norm → reshape, on q and k)
//   %q2 = mir.rope %q, %pos        %k2 = mir.rope %k, %pos      (optional)
//   %a = mir.attention %q2, %k2, %v [mask(%m)] {...}
//   %o = mir.matmul %a, %wo {transpose_rhs}            [+ mir.add %out_bias]
// OUT: %o = mir.attention_block %x, %wqkv, %wo positions(%pos) ... {...}
// K and V read from a KV cache (mir.concat) are not a block.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRFUSEATTENTIONBLOCKPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::fusion;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

namespace {
/// A projection `x · wᵀ (+ b)`.
struct Projection {
  Value input, weight, bias;
  bool transposeRhs = false;
  /// The ops computing it, the last one producing the projection.
  SmallVector<Operation *> ops;
};

/// A per-head RMSNorm: reshape [B, T, n, D] → rms_norm → reshape back.
struct HeadNorm {
  Value source, weight;
  float epsilon = 0;
  bool unitOffset = false;
  SmallVector<Operation *> ops;
};
} // namespace

/// `v` as a projection: a matmul, a matmul whose only use adds an [N] bias,
/// or a fused matmul with at most a bias.
static std::optional<Projection> getProjection(Value v) {
  Projection p;
  if (auto fm = v.getDefiningOp<mir::FusedMatmulOp>()) {
    if (fm.getActivation() != Activation::None || fm.getResidual() ||
        fm.getRoundTo())
      return std::nullopt;
    p.input = fm.getInput();
    p.weight = fm.getWeight();
    p.bias = fm.getBias();
    p.transposeRhs = fm.getTransposeRhs();
    p.ops = {fm};
    return p;
  }
  mir::MatmulOp mm = v.getDefiningOp<mir::MatmulOp>();
  auto add = v.getDefiningOp<mir::AddOp>();
  if (add) {
    for (auto [y, b] : {std::pair(add.getLhs(), add.getRhs()),
                        std::pair(add.getRhs(), add.getLhs())}) {
      auto candidate = y.getDefiningOp<mir::MatmulOp>();
      if (candidate &&
          shapeOf(b) == ArrayRef<int64_t>{shapeOf(candidate).back()} &&
          add.getType() == candidate.getType() && candidate->hasOneUse()) {
        mm = candidate;
        p.bias = b;
        break;
      }
    }
  }
  if (!mm || mm.getTransposeLhs())
    return std::nullopt;
  p.input = mm.getLhs();
  p.weight = mm.getRhs();
  p.transposeRhs = mm.getTransposeRhs();
  p.ops = {mm};
  if (p.bias)
    p.ops.push_back(add);
  return p;
}

static std::optional<HeadNorm> getHeadNorm(Value v, int64_t heads,
                                           int64_t headDim) {
  auto r2 = v.getDefiningOp<mir::ReshapeOp>();
  auto norm = r2 ? r2.getInput().getDefiningOp<mir::RmsNormOp>() : nullptr;
  auto r1 = norm ? norm.getInput().getDefiningOp<mir::ReshapeOp>() : nullptr;
  if (!r1)
    return std::nullopt;
  ArrayRef<int64_t> in = shapeOf(r1.getInput()), split = shapeOf(r1);
  if (in.size() != 3 || r2.getType() != r1.getInput().getType() ||
      split != ArrayRef<int64_t>{in[0], in[1], heads, headDim})
    return std::nullopt;
  HeadNorm h;
  h.source = r1.getInput();
  h.weight = norm.getWeight();
  h.epsilon = norm.getEpsilon();
  h.unitOffset = norm.getUnitOffset();
  h.ops = {r1, norm, r2};
  return h;
}

/// The miss for Q, K, V that are three projections of one input rather than
/// slices of one projection. Projections of different inputs (cross
/// attention) are no self-attention block at all.
static MIRMatchResult diagnoseSeparateProjections(Value q, Value k, Value v) {
  std::optional<Projection> pq = getProjection(q), pk = getProjection(k),
                            pv = getProjection(v);
  if (!pq || !pk || !pv || pq->input != pk->input || pq->input != pv->input)
    return MIRMatchResult::noMatch();
  return MIRMatchResult::missed(
      kNotConcatenated, "q, k and v are three matmuls on one input",
      "run mir-fuse-shared-input-matmuls first (the weights must be "
      "mir.param)");
}

MIRMatchResult mlir::rlx::matchAttentionBlock(mir::AttentionOp op,
                                              AttentionBlockMatch &match) {
  int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads(),
          headDim = op.getHeadDim();
  SmallVector<Operation *> ops = {op};

  // The output projection, with its bias add if it has one.
  Value attn = op.getResult();
  Operation *user = getSingleUser(attn);
  Value projected;
  if (auto mm = dyn_cast_or_null<mir::MatmulOp>(user)) {
    projected = mm.getResult();
    if (auto add = dyn_cast_or_null<mir::AddOp>(getSingleUser(projected)))
      if (getProjection(add.getResult()))
        projected = add.getResult();
  } else if (isa_and_nonnull<mir::FusedMatmulOp>(user)) {
    projected = user->getResult(0);
  }
  std::optional<Projection> out =
      projected ? getProjection(projected) : std::nullopt;
  if (!out || out->input != attn) {
    // Attention on its own (or with a projection among several users).
    if (!user && llvm::any_of(attn.getUsers(), [](Operation *u) {
          return isa<mir::MatmulOp, mir::FusedMatmulOp>(u);
        }))
      return multiConsumer(op);
    return MIRMatchResult::noMatch();
  }

  // Q, K, V; K/V from a cache are a decode step, not a block.
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  auto qRope = q.getDefiningOp<mir::RopeOp>();
  auto kRope = k.getDefiningOp<mir::RopeOp>();
  if ((kRope ? kRope.getInput() : k).getDefiningOp<mir::ConcatOp>() ||
      k.getDefiningOp<mir::ConcatOp>() || v.getDefiningOp<mir::ConcatOp>())
    return MIRMatchResult::noMatch();
  if (static_cast<bool>(qRope) != static_cast<bool>(kRope))
    return MIRMatchResult::missed(kMismatch, "RoPE on only one of q and k",
                                  "rotate both q and k, or neither");
  if (qRope) {
    if (qRope.getPositions() != kRope.getPositions() ||
        qRope.getInvFreq() != kRope.getInvFreq() ||
        qRope.getHeadDim() != kRope.getHeadDim() ||
        qRope.getRotaryDim() != kRope.getRotaryDim() ||
        qRope.getTheta() != kRope.getTheta() ||
        qRope.getStyle() != kRope.getStyle())
      return MIRMatchResult::missed(
          kMismatch, "q and k are rotated differently",
          "apply one RoPE (positions, frequencies, style) to q and k");
    if (qRope.getHeadDim() != headDim)
      return MIRMatchResult::missed(
          kMismatch, "the RoPE head_dim differs from the attention's",
          "rotate heads of the attention's head_dim");
    for (Operation *rope : {qRope.getOperation(), kRope.getOperation()})
      if (!rope->hasOneUse())
        return multiConsumer(rope);
    match.positions = qRope.getPositions();
    match.invFreq = qRope.getInvFreq();
    match.rotaryDim = qRope.getRotaryDim();
    match.ropeTheta = qRope.getTheta();
    match.ropeStyle = qRope.getStyle();
    ops.append({qRope, kRope});
    q = qRope.getInput();
    k = kRope.getInput();
  }

  // QK-norm.
  std::optional<HeadNorm> qNorm = getHeadNorm(q, heads, headDim);
  std::optional<HeadNorm> kNorm = getHeadNorm(k, kvHeads, headDim);
  if (static_cast<bool>(qNorm) != static_cast<bool>(kNorm))
    return MIRMatchResult::missed(kMismatch,
                                  "a per-head norm on only one of q and k",
                                  "normalize both q and k, or neither");
  if (qNorm) {
    if (qNorm->epsilon != kNorm->epsilon ||
        qNorm->unitOffset != kNorm->unitOffset)
      return MIRMatchResult::missed(
          kMismatch, "q and k are normalized with different settings",
          "use one epsilon and one unit_offset for the q and k norms");
    for (Operation *inner : llvm::concat<Operation *>(qNorm->ops, kNorm->ops))
      if (!inner->getResult(0).hasOneUse())
        return multiConsumer(inner);
    match.qNorm = qNorm->weight;
    match.kNorm = kNorm->weight;
    match.normEpsilon = qNorm->epsilon;
    match.normUnitOffset = qNorm->unitOffset;
    ops.append(qNorm->ops);
    ops.append(kNorm->ops);
    q = qNorm->source;
    k = kNorm->source;
  }

  // The three slices of one projection.
  auto sq = q.getDefiningOp<mir::SliceOp>(),
       sk = k.getDefiningOp<mir::SliceOp>(),
       sv = v.getDefiningOp<mir::SliceOp>();
  if (!sq || !sk || !sv)
    return diagnoseSeparateProjections(q, k, v);
  Value qkv = sq.getInput();
  std::optional<Projection> proj = getProjection(qkv);
  if (sk.getInput() != qkv || sv.getInput() != qkv || !proj)
    return MIRMatchResult::noMatch();
  ArrayRef<int64_t> qkvShape = shapeOf(qkv);
  int64_t last = qkvShape.size() - 1;
  int64_t qDim = heads * headDim, kvDim = kvHeads * headDim;
  auto isRange = [&](mir::SliceOp s, int64_t start, int64_t size) {
    return s.getAxis() == last && s.getStart() == start &&
           s.getSize() == size && s.getStep() == 1;
  };
  if (qkvShape.size() != 3 || qkvShape[last] != qDim + 2 * kvDim ||
      !isRange(sq, 0, qDim) || !isRange(sk, qDim, kvDim) ||
      !isRange(sv, qDim + kvDim, kvDim))
    return MIRMatchResult::missed(
        kLayout,
        "q, k and v are not the [q | k | v] column ranges of the "
        "projection",
        "concatenate the projection weights in q, k, v order");
  for (Operation *slice :
       {sq.getOperation(), sk.getOperation(), sv.getOperation()})
    if (!slice->hasOneUse())
      return multiConsumer(slice);
  if (llvm::any_of(qkv.getUsers(),
                   [&](Operation *u) { return u != sq && u != sk && u != sv; }))
    return multiConsumer(qkv.getDefiningOp());
  if (!proj->transposeRhs || !out->transposeRhs)
    return MIRMatchResult::missed(
        kLayout, "a projection weight is not in [out, in] layout",
        "use HF-layout weights with transpose_rhs");
  ops.append({sq, sk, sv});
  ops.append(proj->ops);
  for (Operation *inner : ops)
    if (inner->getBlock() != op->getBlock())
      return MIRMatchResult::noMatch();
  ops.append(out->ops);

  match.attention = op;
  match.output = out->ops.back();
  match.input = proj->input;
  match.wQkv = proj->weight;
  match.qkvBias = proj->bias;
  match.wO = out->weight;
  match.outBias = out->bias;
  match.ops = std::move(ops);
  return MIRMatchResult::matched();
}

FailureOr<mir::AttentionBlockOp>
mlir::rlx::fuseAttentionBlock(RewriterBase &rewriter,
                              const AttentionBlockMatch &match) {
  mir::AttentionOp att = match.attention;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(match.output);
  auto block = mir::AttentionBlockOp::create(
      rewriter, match.output->getLoc(), match.input, match.wQkv, match.wO,
      match.positions, match.invFreq, match.qNorm, match.kNorm, match.qkvBias,
      match.outBias, att.getMask(), att.getNumHeads(), att.getNumKvHeads(),
      att.getHeadDim(), match.rotaryDim, match.ropeTheta, match.ropeStyle,
      att.getScale(), att.getSoftcap(), att.getMaskKind(), att.getWindow(),
      match.normEpsilon, match.normUnitOffset, /*round_to=*/nullptr);
  if (block.getType() != match.output->getResult(0).getType()) {
    rewriter.eraseOp(block);
    return failure();
  }
  rewriter.replaceOp(match.output, block);
  SmallVector<Operation *> dead(match.ops);
  llvm::erase(dead, match.output);
  eraseDeadOps(rewriter, dead);
  return block;
}

void mlir::rlx::populateMIRFuseAttentionBlockPatterns(
    RewritePatternSet &patterns, const MIRFusionControlFn &control) {
  patterns.add<FusionPattern<mir::AttentionOp, AttentionBlockMatch,
                             matchAttentionBlock, fuseAttentionBlock>>(
      patterns.getContext(), control);
}

namespace {
struct MIRFuseAttentionBlockPass
    : public mlir::rlx::impl::MIRFuseAttentionBlockPassBase<
          MIRFuseAttentionBlockPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(
            applyMIRFusions(getOperation(), {MIRFusionKind::AttentionBlock})))
      signalPassFailure();
  }
};
} // namespace
