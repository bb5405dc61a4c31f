//===- FuseAttention.cpp - Fuse primitive attention into mir.attention ----===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// IN (what convert-hir-to-mir{policy=fusable} emits, rooted at the softmax):
//   qh = transpose(reshape(q, [B, Tq, H, D]), [0, 2, 1, 3])
//   kh = transpose(reshape(k, [B, Tk, KV, D]), [0, 2, 1, 3])
//        (GQA: reshape [B, KV, 1, Tk, D] → broadcast [B, KV, G, Tk, D]
//         → reshape [B, H, Tk, D]); vh likewise
//   s  = batch_matmul(qh, kh) {transpose_rhs}
//   s  = mul(s, scale)
//   s  = mul(tanh(div(s, cap)), cap)                       (softcap)
//   s  = select(mask_cond, s, lowest)                      (0, 1 or 2 masks)
//   p  = softmax(s, -1)
//   o  = reshape(transpose(batch_matmul(p, vh), [0, 2, 1, 3]), [B, Tq, H*D])
// Mask conditions:
//   causal:  compare(iota1, iota0 (+ Tk-Tq), le)           [Tq, Tk]
//   window:  compare(sub(iota0 (+ Tk-Tq), iota1), window, lt)
//   padding: reshape(compare(mask, 0, ne), [B, 1, 1, Tk])
// OUT: o = mir.attention q, k, v [mask(mask)] {num_heads = H,
//          num_kv_heads = KV, head_dim = D, scale, softcap, mask_kind, window}
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRFUSEATTENTIONPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::fusion;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

//===----------------------------------------------------------------------===//
// Heads
//===----------------------------------------------------------------------===//

namespace {
/// A [B, T, heads*headDim] tensor split into [B, heads', T, headDim] heads,
/// heads' = heads * groups (GQA repeat).
struct Heads {
  Value source;
  int64_t heads = 0, headDim = 0, groups = 1;
  SmallVector<Operation *> ops;
};
} // namespace

/// v = transpose(reshape(src, [B, T, H, D]), [0, 2, 1, 3]). With
/// `widened`, src may be cast(src') from f16 / bf16 to f32 (the keys and
/// values of a KV cache kept in half precision: mir.attention reads src').
static MIRMatchResult matchSplitHeads(Value v, Heads &heads,
                                      bool widened = false) {
  auto tr = v.getDefiningOp<mir::TransposeOp>();
  if (!tr || tr.getPermutation() != ArrayRef<int64_t>{0, 2, 1, 3})
    return MIRMatchResult::noMatch();
  auto rs = tr.getInput().getDefiningOp<mir::ReshapeOp>();
  if (!rs)
    return MIRMatchResult::noMatch();
  ArrayRef<int64_t> in = shapeOf(rs.getInput()), out = shapeOf(rs);
  if (in.size() != 3 || out.size() != 4 || in[0] != out[0] || in[1] != out[1] ||
      ShapedType::isDynamic(out[2]) || ShapedType::isDynamic(out[3]) ||
      in[2] != out[2] * out[3])
    return MIRMatchResult::missed(
        kLayout, "the heads are not split as [B, T, heads, head_dim]",
        "split heads with a reshape to [B, T, heads, head_dim] and a "
        "[0, 2, 1, 3] transpose, with static heads and head_dim");
  if (!rs->hasOneUse())
    return multiConsumer(rs);
  heads.source = rs.getInput();
  heads.heads = out[2];
  heads.headDim = out[3];
  heads.ops = {rs, tr};
  if (auto cast =
          widened ? heads.source.getDefiningOp<mir::CastOp>() : mir::CastOp()) {
    Type from = cast.getInput().getType().getElementType();
    if (cast.getType().getElementType().isF32() &&
        (from.isF16() || from.isBF16()) && cast->hasOneUse()) {
      heads.source = cast.getInput();
      heads.ops.insert(heads.ops.begin(), cast);
    }
  }
  return MIRMatchResult::matched();
}

/// v = split heads, possibly repeated for GQA:
/// reshape(broadcast(reshape(split, [B, KV, 1, T, D]), [B, KV, G, T, D]),
///         [B, KV*G, T, D]).
static MIRMatchResult matchKvHeads(Value v, Heads &heads) {
  auto r2 = v.getDefiningOp<mir::ReshapeOp>();
  auto bc = r2 ? r2.getInput().getDefiningOp<mir::BroadcastOp>() : nullptr;
  auto r1 = bc ? bc.getInput().getDefiningOp<mir::ReshapeOp>() : nullptr;
  if (!r1)
    return matchSplitHeads(v, heads, /*widened=*/true);
  MIRMatchResult split = matchSplitHeads(r1.getInput(), heads, true);
  if (!split.isMatched())
    return split;
  ArrayRef<int64_t> s0 = shapeOf(r1.getInput()), s1 = shapeOf(r1),
                    s2 = shapeOf(bc), s3 = shapeOf(r2);
  if (s1.size() != 5 || s2.size() != 5 || s3.size() != 4 ||
      s1 != ArrayRef<int64_t>{s0[0], s0[1], 1, s0[2], s0[3]} ||
      s2[0] != s0[0] || s2[1] != s0[1] || s2[3] != s0[2] || s2[4] != s0[3] ||
      ShapedType::isDynamic(s2[2]) ||
      s3 != ArrayRef<int64_t>{s0[0], s0[1] * s2[2], s0[2], s0[3]})
    return MIRMatchResult::missed(
        kLayout, "the key/value heads are not repeated as the GQA form",
        "repeat KV heads as reshape [B, KV, 1, T, D], broadcast "
        "[B, KV, G, T, D], reshape [B, KV*G, T, D]");
  for (Operation *op :
       {r1.getInput().getDefiningOp(), r1.getOperation(), bc.getOperation()})
    if (!op->getResult(0).hasOneUse())
      return multiConsumer(op);
  heads.groups = s2[2];
  heads.ops.append({r1, bc, r2});
  return MIRMatchResult::matched();
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

/// True if `v` is the mask fill value: the lowest finite float of its type
/// or -inf (the lowest f32 rounds to -inf in f16 and bf16).
static bool isLowest(Value v) {
  std::optional<APFloat> f = getSplatFloat(v);
  if (!f || !llvm::all_of(shapeOf(v), [](int64_t d) { return d == 1; }))
    return false;
  if (f->isInfinity() && f->isNegative())
    return true;
  return f->isNegative() &&
         *f == APFloat::getLargest(f->getSemantics(), /*Negative=*/true);
}

/// `iota {axis}` of static shape [tq, tk].
static bool isIota(Value v, int64_t axis, int64_t tq, int64_t tk) {
  auto iota = v.getDefiningOp<mir::IotaOp>();
  return iota && iota.getAxis() == axis &&
         shapeOf(iota) == ArrayRef<int64_t>{tq, tk};
}

/// The query positions: `iota0` or `add(iota0, c)`; sets `offset` to c.
static bool isQueryPositions(Value v, int64_t tq, int64_t tk, int64_t &offset) {
  offset = 0;
  if (isIota(v, 0, tq, tk))
    return true;
  auto add = v.getDefiningOp<mir::AddOp>();
  if (!add)
    return false;
  for (auto [pos, c] : {std::pair(add.getLhs(), add.getRhs()),
                        std::pair(add.getRhs(), add.getLhs())}) {
    std::optional<double> value = getScalarConstant(c);
    if (value && isIota(pos, 0, tq, tk)) {
      offset = static_cast<int64_t>(*value);
      return true;
    }
  }
  return false;
}

/// Checks the query offset: mir.attention aligns the queries bottom-right.
static MIRMatchResult checkOffset(int64_t offset, int64_t tq, int64_t tk) {
  if (offset == tk - tq)
    return MIRMatchResult::matched();
  return MIRMatchResult::missed(
      kUnsupportedMask,
      Twine("the query positions are offset by ") + Twine(offset) +
          ", not Tk - Tq = " + Twine(tk - tq),
      "mir.attention aligns queries to the end of the keys (query i at "
      "position Tk - Tq + i)");
}

namespace {
struct Masks {
  bool causal = false;
  int64_t window = 0;
  Value padding;
};
} // namespace

/// Classifies one mask condition.
static MIRMatchResult matchMaskCondition(Value cond, int64_t batch, int64_t tq,
                                         int64_t tk, Masks &masks) {
  // Padding: reshape(compare(mask, 0, ne), [B, 1, 1, Tk]).
  if (auto rs = cond.getDefiningOp<mir::ReshapeOp>()) {
    auto cmp = rs.getInput().getDefiningOp<mir::CompareOp>();
    ArrayRef<int64_t> in = shapeOf(rs.getInput());
    if (cmp && cmp.getPredicate() == CmpPredicate::NE && in.size() == 2 &&
        shapeOf(rs) == ArrayRef<int64_t>{in[0], 1, 1, in[1]}) {
      for (auto [mask, zero] : {std::pair(cmp.getLhs(), cmp.getRhs()),
                                std::pair(cmp.getRhs(), cmp.getLhs())}) {
        std::optional<double> z = getScalarConstant(zero);
        ArrayRef<int64_t> ms = shapeOf(mask);
        if (z && *z == 0.0 && ms.size() == 2 &&
            mir::areDimsCompatible(ms[0], batch) &&
            mir::areDimsCompatible(ms[1], tk)) {
          masks.padding = mask;
          return MIRMatchResult::matched();
        }
      }
    }
    return MIRMatchResult::noMatch();
  }
  auto cmp = cond.getDefiningOp<mir::CompareOp>();
  if (!cmp)
    return MIRMatchResult::noMatch();
  if (ShapedType::isDynamic(tq) || ShapedType::isDynamic(tk))
    return MIRMatchResult::missed(
        kDynamic, "a positional mask on dynamic sequence lengths",
        "specialize the sequence lengths");
  CmpPredicate pred = cmp.getPredicate();
  Value lhs = cmp.getLhs(), rhs = cmp.getRhs();
  int64_t offset = 0;
  // Causal: kPos <= qPos (or qPos >= kPos).
  if ((pred == CmpPredicate::LE && isIota(lhs, 1, tq, tk) &&
       isQueryPositions(rhs, tq, tk, offset)) ||
      (pred == CmpPredicate::GE && isIota(rhs, 1, tq, tk) &&
       isQueryPositions(lhs, tq, tk, offset))) {
    masks.causal = true;
    return checkOffset(offset, tq, tk);
  }
  // Window: qPos - kPos < window (or window > qPos - kPos).
  Value dist = pred == CmpPredicate::LT   ? lhs
               : pred == CmpPredicate::GT ? rhs
                                          : Value();
  Value bound = dist == lhs ? rhs : lhs;
  auto sub = dist ? dist.getDefiningOp<mir::SubOp>() : nullptr;
  std::optional<double> window = getScalarConstant(bound);
  if (sub && window && isIota(sub.getRhs(), 1, tq, tk) &&
      isQueryPositions(sub.getLhs(), tq, tk, offset)) {
    if (*window < 1)
      return MIRMatchResult::missed(kUnsupportedMask,
                                    "a sliding window below 1",
                                    "use a window of at least one key");
    masks.window = static_cast<int64_t>(*window);
    return checkOffset(offset, tq, tk);
  }
  return MIRMatchResult::noMatch();
}

//===----------------------------------------------------------------------===//
// Matcher
//===----------------------------------------------------------------------===//

MIRMatchResult mlir::rlx::matchAttention(mir::SoftmaxOp op,
                                         AttentionMatch &match) {
  ArrayRef<int64_t> scoresShape = shapeOf(op);
  if (scoresShape.size() != 4)
    return MIRMatchResult::noMatch();

  // Walk back from the softmax over the score modifiers: masks, then the
  // softcap, then the scale, down to q·kᵀ.
  enum Phase { Masks_, Softcap, Scale, Done } phase = Masks_;
  SmallVector<Operation *> scoreOps;
  SmallVector<Value> conds;
  std::optional<double> scale, softcap;
  Operation *unsupported = nullptr;
  Value s = op.getInput();
  for (int steps = 0;; ++steps) {
    Operation *def = s.getDefiningOp();
    if (!def || steps > 16)
      return MIRMatchResult::noMatch();
    if (isa<mir::BatchMatmulOp>(def))
      break;
    scoreOps.push_back(def);
    if (auto sel = dyn_cast<mir::SelectOp>(def);
        sel && phase == Masks_ && isLowest(sel.getOnFalse()) &&
        sel.getOnTrue().getType() == sel.getType()) {
      conds.push_back(sel.getCond());
      s = sel.getOnTrue();
      continue;
    }
    if (auto mul = dyn_cast<mir::MulOp>(def); mul && phase <= Softcap) {
      // softcap: mul(tanh(div(y, cap)), cap).
      bool found = false;
      for (auto [t, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                          std::pair(mul.getRhs(), mul.getLhs())}) {
        auto tanh = t.getDefiningOp<mir::TanhOp>();
        auto div = tanh ? tanh.getInput().getDefiningOp<mir::DivOp>() : nullptr;
        std::optional<double> cap = getScalarConstant(c);
        std::optional<double> cap2 =
            div ? getScalarConstant(div.getRhs()) : std::nullopt;
        if (cap && cap2 && *cap == *cap2 && *cap > 0 &&
            div.getLhs().getType() == mul.getType()) {
          softcap = *cap;
          scoreOps.append({tanh, div});
          s = div.getLhs();
          phase = Scale;
          found = true;
          break;
        }
      }
      if (found)
        continue;
    }
    if (auto mul = dyn_cast<mir::MulOp>(def); mul && phase <= Scale) {
      bool found = false;
      for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                          std::pair(mul.getRhs(), mul.getLhs())}) {
        std::optional<double> value = getScalarConstant(c);
        if (value && x.getType() == mul.getType()) {
          scale = *value;
          s = x;
          phase = Done;
          found = true;
          break;
        }
      }
      if (found)
        continue;
    }
    // Not a supported modifier: keep walking through the operand that
    // carries the scores to see whether this is an attention at all.
    if (!unsupported)
      unsupported = def;
    Value next;
    for (Value operand : def->getOperands())
      if (operand.getType() == s.getType()) {
        next = operand;
        break;
      }
    if (!next)
      return MIRMatchResult::noMatch();
    s = next;
  }
  auto qk = s.getDefiningOp<mir::BatchMatmulOp>();
  if (!qk.getTransposeRhs() || qk.getTransposeLhs() || shapeOf(qk).size() != 4)
    return MIRMatchResult::noMatch();

  // From here on this is an attention.
  if (unsupported)
    return MIRMatchResult::missed(
        kUnsupportedScores,
        Twine("'") + unsupported->getName().getStringRef() +
            "' between the scores and the softmax",
        "mir.attention applies scale, softcap and a causal, sliding-window or "
        "padding mask, in that order; other score terms stay unfused");
  if (mir::normalizeAxis(op.getAxis(), 4) != 3)
    return MIRMatchResult::missed(kLayout, "the softmax is not over the keys",
                                  "take the softmax over the last axis");
  if (!qk->hasOneUse())
    return multiConsumer(qk);
  for (Operation *inner : scoreOps)
    if (!inner->getResult(0).hasOneUse())
      return multiConsumer(inner);

  // Forward: p·v, heads merged back.
  Operation *pvUser = getSingleUser(op.getResult());
  auto pv = dyn_cast_or_null<mir::BatchMatmulOp>(pvUser);
  if (!pv && !op->hasOneUse())
    return multiConsumer(op);
  if (!pv || pv.getLhs() != op.getResult() || pv.getTransposeLhs() ||
      pv.getTransposeRhs())
    return MIRMatchResult::missed(
        kLayout, "the probabilities do not feed a batch_matmul with V",
        "multiply the probabilities by V as batch_matmul(p, v)");
  auto tr = dyn_cast_or_null<mir::TransposeOp>(getSingleUser(pv.getResult()));
  auto out = tr ? dyn_cast_or_null<mir::ReshapeOp>(getSingleUser(tr)) : nullptr;
  if (!pv->hasOneUse() || (tr && !tr->hasOneUse()))
    return multiConsumer(tr && !tr->hasOneUse() ? tr.getOperation()
                                                : pv.getOperation());
  if (!tr || tr.getPermutation() != ArrayRef<int64_t>{0, 2, 1, 3} || !out)
    return MIRMatchResult::missed(
        kLayout, "the output heads are not merged back",
        "merge the heads with a [0, 2, 1, 3] transpose and a reshape to "
        "[B, T, heads*head_dim]");

  // Q, K and V heads.
  Heads q, k, v;
  for (auto [value, heads, isQuery] :
       {std::tuple(qk.getLhs(), &q, true), std::tuple(qk.getRhs(), &k, false),
        std::tuple(pv.getRhs(), &v, false)}) {
    MIRMatchResult r =
        isQuery ? matchSplitHeads(value, *heads) : matchKvHeads(value, *heads);
    if (r.isMissed())
      return r;
    if (!r.isMatched())
      return MIRMatchResult::missed(
          kLayout,
          Twine(isQuery ? "the query" : "a key/value") +
              " is not split into heads",
          "split heads with reshape [B, T, heads, head_dim] and transpose "
          "[0, 2, 1, 3]");
    if (!value.hasOneUse())
      return multiConsumer(value.getDefiningOp());
  }
  if (q.groups != 1 || k.headDim != q.headDim || v.headDim != q.headDim ||
      k.heads != v.heads || k.groups != v.groups ||
      k.heads * k.groups != q.heads)
    return MIRMatchResult::missed(
        kLayout, "the query and key/value heads do not line up",
        "use num_heads query heads, num_kv_heads K/V heads each repeated "
        "num_heads/num_kv_heads times, and one head_dim");
  if (k.source.getType() != v.source.getType())
    return MIRMatchResult::missed(
        kLayout, "the keys and values are read in different element types",
        "keep keys and values in one element type");
  if (out.getType() != q.source.getType())
    return MIRMatchResult::missed(
        kLayout, "the output does not have the query's type",
        "reshape the output to [B, Tq, num_heads*head_dim]");

  // Masks.
  Masks masks;
  int64_t batch = scoresShape[0], tq = scoresShape[2], tk = scoresShape[3];
  for (Value cond : conds) {
    MIRMatchResult r = matchMaskCondition(cond, batch, tq, tk, masks);
    if (r.isMissed())
      return r;
    if (!r.isMatched())
      return MIRMatchResult::missed(
          kUnsupportedMask,
          "an unrecognised mask condition, " + describeValue(cond),
          "build masks as the HIR lowering does (causal: iota + compare le; "
          "window: sub + compare lt; padding: compare ne 0 + reshape)");
  }
  // A key mask may come alone (padding) or on top of the causal or
  // sliding-window mask (the unused slots of a KV-cache bucket).
  MaskKind kind = MaskKind::None;
  if (masks.causal)
    kind = masks.window ? MaskKind::SlidingWindow : MaskKind::Causal;
  else if (masks.window)
    return MIRMatchResult::missed(
        kUnsupportedMask, "a sliding window without the causal mask",
        "mir.attention's sliding_window mask is causal plus a window");
  else if (masks.padding)
    kind = MaskKind::Padding;

  match.softmax = op;
  match.output = out;
  match.query = q.source;
  match.key = k.source;
  match.value = v.source;
  match.mask = masks.padding;
  match.numHeads = q.heads;
  match.numKvHeads = k.heads;
  match.headDim = q.headDim;
  match.scale = scale ? static_cast<float>(*scale) : 1.0f;
  match.softcap = softcap ? static_cast<float>(*softcap) : 0.0f;
  match.maskKind = kind;
  match.window = masks.window;
  match.ops = {qk, op, pv, tr, out};
  match.ops.append(scoreOps);
  for (Heads *h : {&q, &k, &v})
    match.ops.append(h->ops);
  for (Value cond : conds)
    if (Operation *def = cond.getDefiningOp())
      match.ops.push_back(def);
  return MIRMatchResult::matched();
}

FailureOr<mir::AttentionOp>
mlir::rlx::fuseAttention(RewriterBase &rewriter, const AttentionMatch &match) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(match.output);
  auto attention = mir::AttentionOp::create(
      rewriter, match.output->getLoc(), match.query, match.key, match.value,
      match.mask, match.numHeads, match.numKvHeads, match.headDim, match.scale,
      match.softcap, match.maskKind, match.window);
  rewriter.replaceOp(match.output, attention);
  SmallVector<Operation *> dead(match.ops);
  llvm::erase(dead, match.output);
  eraseDeadOps(rewriter, dead);
  return attention;
}

void mlir::rlx::populateMIRFuseAttentionPatterns(
    RewritePatternSet &patterns, const MIRFusionControlFn &control) {
  patterns.add<FusionPattern<mir::SoftmaxOp, AttentionMatch, matchAttention,
                             fuseAttention>>(patterns.getContext(), control);
}

namespace {
struct MIRFuseAttentionPass
    : public mlir::rlx::impl::MIRFuseAttentionPassBase<MIRFuseAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(applyMIRFusions(getOperation(), {MIRFusionKind::Attention})))
      signalPassFailure();
  }
};
} // namespace
