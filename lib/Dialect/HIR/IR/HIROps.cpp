//===- HIROps.cpp - HIR op implementations --------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Verifiers for the HIR ops. Comments `hir_<op>_cN` cite the numbered
// constraints of docs/Dialects/HIR.md; test/Dialect/HIR/invalid.mlir has a case
// for each.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/SmallString.h"
#include <cmath>

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::hir;

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  // hir_param_c1: the name is not empty.
  if (getName().empty())
    return emitOpError("requires a non-empty parameter name");
  // hir_param_c2: the shape is static.
  if (!getType().hasStaticShape())
    return emitOpError("requires a static shape, got ") << getType();
  // hir_param_c3: a storage type is lower than the f32 the blocks compute
  // with, and ggml blocks divide each row.
  if (std::optional<Type> storage = getStorage()) {
    if (!getType().getElementType().isF32() ||
        !mir::isLowPrecisionWeightType(*storage))
      return emitOpError("stores an f32 weight as f16, bf16 or ggml blocks "
                         "only, got storage ")
             << *storage << " for " << getType();
    if (failed(mir::verifyQuantizedShape(
            *this, RankedTensorType::get(getType().getShape(), *storage),
            "a weight stored as")))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

/// Two dims agree when either is dynamic or both are equal.
static bool dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static std::string shapeStr(ArrayRef<int64_t> dims) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(dims, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

/// Checks that `value` is a ranked tensor whose shape agrees with `expected`
/// (dynamic entries of either side match anything).
static LogicalResult checkShape(Operation *op, StringRef what, Value value,
                                ArrayRef<int64_t> expected) {
  auto ty = cast<RankedTensorType>(value.getType());
  bool ok = ty.getRank() == static_cast<int64_t>(expected.size());
  for (auto [a, b] : llvm::zip(ty.getShape(), expected))
    ok = ok && dimsAgree(a, b);
  if (ok)
    return success();
  return op->emitOpError() << "expects " << what << " of shape "
                           << shapeStr(expected) << ", got " << ty;
}

static int64_t lastDim(Value v) {
  auto ty = cast<RankedTensorType>(v.getType());
  return ty.getRank() ? ty.getDimSize(ty.getRank() - 1) : ShapedType::kDynamic;
}

static int64_t dim(Value v, int64_t i) {
  return cast<RankedTensorType>(v.getType()).getDimSize(i);
}

static int64_t rank(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

/// `[..., n]` with the leading dims of `like` and the last one `n`.
static SmallVector<int64_t> withLastDim(Value like, int64_t n) {
  SmallVector<int64_t> dims(cast<RankedTensorType>(like.getType()).getShape());
  dims.back() = n;
  return dims;
}

static int64_t mulDims(int64_t a, int64_t b) {
  if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
    return ShapedType::kDynamic;
  return a * b;
}

static LogicalResult checkRank(Operation *op, StringRef what, Value v,
                               int64_t expected) {
  if (rank(v) == expected)
    return success();
  return op->emitOpError() << "expects " << what << " of rank " << expected
                           << ", got " << v.getType();
}

/// The shortest decimal form of `v` ("-50", "1.0E-5").
static std::string numStr(double v) {
  SmallString<16> str;
  APFloat(v).toString(str);
  return std::string(str);
}

static LogicalResult checkPositive(Operation *op, StringRef what, double v) {
  if (v > 0.0)
    return success();
  return op->emitOpError() << what << " must be positive, got " << numStr(v);
}

static LogicalResult checkNonNegative(Operation *op, StringRef what, double v) {
  if (v >= 0.0)
    return success();
  return op->emitOpError() << what << " must be non-negative, got "
                           << numStr(v);
}

/// Common attention-head constraints (hir_attention_c1..c2).
static LogicalResult checkHeads(Operation *op, int64_t heads, int64_t kvHeads) {
  if (heads % kvHeads != 0)
    return op->emitOpError() << "num_kv_heads (" << kvHeads
                             << ") must divide num_heads (" << heads << ")";
  return success();
}

/// Positions are `[seq]` or `[batch, seq]` and agree with `x` = [B, T, ...].
static LogicalResult checkPositions(Operation *op, Value positions, Value x) {
  int64_t r = rank(positions);
  if (r == 1)
    return checkShape(op, "positions", positions, {dim(x, 1)});
  if (r == 2)
    return checkShape(op, "positions", positions, {dim(x, 0), dim(x, 1)});
  return op->emitOpError() << "expects positions of rank 1 or 2, got "
                           << positions.getType();
}

static LogicalResult checkRotary(Operation *op, int64_t rotaryDim,
                                 int64_t headDim, Value invFreq) {
  if (rotaryDim < 0 || rotaryDim > headDim || rotaryDim % 2 != 0)
    return op->emitOpError()
           << "rotary_dim (" << rotaryDim
           << ") must be even and at most head_dim (" << headDim << ")";
  if (invFreq)
    return checkShape(op, "inv_freq", invFreq, {rotaryDim / 2});
  return success();
}

static LogicalResult checkSameType(Operation *op, StringRef what, Value a,
                                   Type expected) {
  if (a.getType() == expected)
    return success();
  return op->emitOpError() << "expects " << what << " of type " << expected
                           << ", got " << a.getType();
}

static LogicalResult checkMask(Operation *op, Value mask, Value keys) {
  if (!mask)
    return success();
  return checkShape(op, "mask", mask, {dim(keys, 0), dim(keys, 1)});
}

//===----------------------------------------------------------------------===//
// Embeddings and heads
//===----------------------------------------------------------------------===//

LogicalResult EmbedOp::verify() {
  // hir_embed_c1: ids are [batch, seq]; table is [vocab, hidden].
  if (failed(checkRank(*this, "ids", getIds(), 2)) ||
      failed(checkRank(*this, "table", getTable(), 2)))
    return failure();
  // hir_embed_c2: the result is [batch, seq, hidden] of the table's type.
  if (getType().getElementType() != getTable().getType().getElementType())
    return emitOpError("result element type must match the table's");
  return checkShape(*this, "result", getResult(),
                    {dim(getIds(), 0), dim(getIds(), 1), dim(getTable(), 1)});
}

OpFoldResult EmbedScaleOp::fold(FoldAdaptor) {
  // x * 1 is x.
  if (getScale().convertToFloat() == 1.0f)
    return getInput();
  return {};
}

LogicalResult GatherLastTokenOp::verify() {
  // hir_gather_last_token_c1
  if (failed(checkRank(*this, "input", getInput(), 3)))
    return failure();
  return checkShape(*this, "result", getResult(),
                    {dim(getInput(), 0), 1, dim(getInput(), 2)});
}

LogicalResult LmHeadOp::verify() {
  // hir_lm_head_c1: weight is [vocab, hidden].
  if (failed(checkRank(*this, "weight", getWeight(), 2)) ||
      failed(checkShape(*this, "weight", getWeight(),
                        {dim(getWeight(), 0), lastDim(getInput())})))
    return failure();
  // hir_lm_head_c2: the result is [..., vocab].
  return checkShape(*this, "result", getResult(),
                    withLastDim(getInput(), dim(getWeight(), 0)));
}

LogicalResult LogitSoftcapOp::verify() {
  // hir_logit_softcap_c1
  return checkPositive(*this, "cap", getCap().convertToFloat());
}

LogicalResult ClsPoolOp::verify() {
  // hir_cls_pool_c1
  if (failed(checkRank(*this, "input", getInput(), 3)))
    return failure();
  return checkShape(*this, "result", getResult(),
                    {dim(getInput(), 0), dim(getInput(), 2)});
}

LogicalResult MeanPoolOp::verify() {
  // hir_mean_pool_c1
  if (failed(checkRank(*this, "input", getInput(), 3)) ||
      failed(checkMask(*this, getMask(), getInput())))
    return failure();
  return checkShape(*this, "result", getResult(),
                    {dim(getInput(), 0), dim(getInput(), 2)});
}

//===----------------------------------------------------------------------===//
// Vision embeddings
//===----------------------------------------------------------------------===//

/// `a / b` for a static `a`, else dynamic.
static int64_t divDim(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) ? ShapedType::kDynamic : a / b;
}

LogicalResult PatchEmbedOp::verify() {
  // hir_patch_embed_c1: pixels [B, C, H, W]; weight [hidden, C, P, P];
  // bias [hidden].
  int64_t p = getPatchSize();
  if (failed(checkRank(*this, "pixels", getPixels(), 4)) ||
      failed(checkRank(*this, "weight", getWeight(), 4)))
    return failure();
  int64_t hidden = dim(getWeight(), 0);
  if (failed(checkShape(*this, "weight", getWeight(),
                        {hidden, dim(getPixels(), 1), p, p})) ||
      failed(checkShape(*this, "bias", getBias(), {hidden})))
    return failure();
  // hir_patch_embed_c2: the image holds at least one patch each way.
  for (int64_t d : {dim(getPixels(), 2), dim(getPixels(), 3)})
    if (!ShapedType::isDynamic(d) && d < p)
      return emitOpError("expects an image of at least one ")
             << p << "x" << p << " patch, got " << getPixels().getType();
  // hir_patch_embed_c3: the result is [B, (H/P)*(W/P), hidden].
  return checkShape(
      *this, "result", getResult(),
      {dim(getPixels(), 0),
       mulDims(divDim(dim(getPixels(), 2), p), divDim(dim(getPixels(), 3), p)),
       hidden});
}

/// `a + b` for static dims, else dynamic.
static int64_t addDims(int64_t a, int64_t b) {
  if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
    return ShapedType::kDynamic;
  return a + b;
}

LogicalResult InsertTokensOp::verify() {
  // hir_insert_tokens_c1: input [B, T, H]; tokens [1, n, H] with n >= 1.
  if (failed(checkRank(*this, "input", getInput(), 3)) ||
      failed(checkRank(*this, "tokens", getTokens(), 3)))
    return failure();
  int64_t n = dim(getTokens(), 1);
  if (failed(
          checkShape(*this, "tokens", getTokens(), {1, n, dim(getInput(), 2)})))
    return failure();
  if (n == 0)
    return emitOpError("expects at least one token to insert");
  // hir_insert_tokens_c2: the position is within the sequence.
  int64_t t = dim(getInput(), 1);
  if (!ShapedType::isDynamic(t) && static_cast<int64_t>(getPosition()) > t)
    return emitOpError("inserts at position ")
           << getPosition() << " of a sequence of " << t << " tokens";
  // hir_insert_tokens_c3: the result is [B, T + n, H].
  return checkShape(*this, "result", getResult(),
                    {dim(getInput(), 0), addDims(t, n), dim(getInput(), 2)});
}

LogicalResult PositionEmbedOp::verify() {
  // hir_position_embed_c1: input [B, leading + gh*gw, H] for a grid of two
  // positive sizes.
  if (failed(checkRank(*this, "input", getInput(), 3)))
    return failure();
  ArrayRef<int64_t> grid = getGrid();
  if (grid.size() != 2 || grid[0] <= 0 || grid[1] <= 0)
    return emitOpError("expects a grid of two positive sizes, got [")
           << grid << "]";
  int64_t leading = getLeading();
  int64_t hidden = dim(getInput(), 2);
  if (failed(checkShape(
          *this, "input", getInput(),
          {dim(getInput(), 0), leading + grid[0] * grid[1], hidden})))
    return failure();
  // hir_position_embed_c2: table [1, leading + s*s, H] for a square s x s.
  if (failed(checkRank(*this, "table", getTable(), 3)))
    return failure();
  int64_t rows = dim(getTable(), 1);
  if (failed(checkShape(*this, "table", getTable(), {1, rows, hidden})))
    return failure();
  if (!ShapedType::isDynamic(rows)) {
    int64_t s = static_cast<int64_t>(
        std::llround(std::sqrt(static_cast<double>(rows - leading))));
    if (rows <= leading || s * s != rows - leading)
      return emitOpError("expects a table of ")
             << leading << " leading rows and a square grid of patch rows, "
             << "got " << rows << " rows";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// hir_rms_norm_c1..c2 (shared with gemma_rms_norm).
static LogicalResult verifyRmsNorm(Operation *op, Value input, Value weight,
                                   float epsilon) {
  if (rank(input) < 1)
    return op->emitOpError("expects an input of rank >= 1");
  if (failed(checkShape(op, "weight", weight, {lastDim(input)})))
    return failure();
  return checkPositive(op, "epsilon", epsilon);
}

LogicalResult RmsNormOp::verify() {
  return verifyRmsNorm(*this, getInput(), getWeight(),
                       getEpsilon().convertToFloat());
}

LogicalResult GemmaRmsNormOp::verify() {
  return verifyRmsNorm(*this, getInput(), getWeight(),
                       getEpsilon().convertToFloat());
}

LogicalResult LayerNormOp::verify() {
  // hir_layer_norm_c1: gamma and beta are [hidden]; c2: epsilon > 0.
  if (failed(verifyRmsNorm(*this, getInput(), getGamma(),
                           getEpsilon().convertToFloat())))
    return failure();
  return checkShape(*this, "beta", getBeta(), {lastDim(getInput())});
}

LogicalResult LayerScaleOp::verify() {
  // hir_layer_scale_c1
  return checkShape(*this, "gamma", getGamma(), {lastDim(getInput())});
}

OpFoldResult LayerScaleOp::fold(FoldAdaptor adaptor) {
  // A gamma of all ones leaves x unchanged.
  auto gamma = dyn_cast_if_present<SplatElementsAttr>(adaptor.getGamma());
  if (gamma && isa<FloatType>(gamma.getElementType()) &&
      gamma.getSplatValue<APFloat>().isExactlyValue(1.0))
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  // hir_linear_c1: weight is [out, in] with in = last dim of the input.
  if (rank(getInput()) < 1)
    return emitOpError("expects an input of rank >= 1");
  if (failed(checkRank(*this, "weight", getWeight(), 2)) ||
      failed(checkShape(*this, "weight", getWeight(),
                        {dim(getWeight(), 0), lastDim(getInput())})))
    return failure();
  int64_t out = dim(getWeight(), 0);
  // hir_linear_c2: bias is [out].
  if (getBias() && failed(checkShape(*this, "bias", getBias(), {out})))
    return failure();
  // hir_linear_c3: the result is [..., out].
  return checkShape(*this, "result", getResult(), withLastDim(getInput(), out));
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  // hir_rope_c1: x is [batch, seq, heads * head_dim].
  if (failed(checkRank(*this, "input", getInput(), 3)))
    return failure();
  int64_t width = lastDim(getInput());
  if (!ShapedType::isDynamic(width) && width % getHeadDim() != 0)
    return emitOpError() << "last dimension (" << width
                         << ") must be a multiple of head_dim (" << getHeadDim()
                         << ")";
  // hir_rope_c2: rotary_dim is even and <= head_dim; inv_freq is
  // [rotary_dim / 2].
  if (failed(checkRotary(*this, getRotaryDim(), getHeadDim(), getInvFreq())))
    return failure();
  // hir_rope_c3: theta > 0.
  if (failed(checkPositive(*this, "theta", getTheta().convertToFloat())))
    return failure();
  // hir_rope_c4: positions agree with the input.
  return checkPositions(*this, getPositions(), getInput());
}

/// hir_attention_c1..c6, shared by every op that embeds an attention.
static LogicalResult verifyAttentionConfig(Operation *op, int64_t heads,
                                           int64_t kvHeads, MaskKind kind,
                                           int64_t window, Value mask,
                                           double scale, double softcap) {
  if (failed(checkHeads(op, heads, kvHeads)))
    return failure();
  // hir_attention_c3: window > 0 exactly for sliding_window masks.
  if ((kind == MaskKind::SlidingWindow) != (window > 0))
    return op->emitOpError()
           << "window must be positive exactly when the mask kind is "
              "sliding_window (mask "
           << stringifyMaskKind(kind) << ", window " << window << ")";
  // hir_attention_c4: padding needs the mask operand; causal and sliding
  // masks may add a key mask; `none` takes none.
  if (kind == MaskKind::Padding && !mask)
    return op->emitOpError("a padding mask needs the mask operand");
  if (kind == MaskKind::None && mask)
    return op->emitOpError("mask kind none takes no mask operand (use "
                           "padding)");
  // hir_attention_c5
  if (failed(checkNonNegative(op, "scale", scale)) ||
      failed(checkNonNegative(op, "softcap", softcap)))
    return failure();
  return success();
}

LogicalResult AttentionOp::verify() {
  int64_t heads = getNumHeads(), kv = getNumKvHeads(), hd = getHeadDim();
  if (failed(verifyAttentionConfig(
          *this, heads, kv, getMaskKind(), getWindowAttr().getInt(), getMask(),
          getScale().convertToDouble(), getSoftcap().convertToDouble())))
    return failure();
  // hir_attention_c2: q is [B, Tq, heads*hd]; k and v are [B, Tk, kv*hd].
  for (Value v : {getQ(), getK(), getV()})
    if (failed(checkRank(*this, "q, k and v", v, 3)))
      return failure();
  int64_t b = dim(getQ(), 0), tk = dim(getK(), 1);
  if (failed(checkShape(*this, "q", getQ(), {b, dim(getQ(), 1), heads * hd})) ||
      failed(checkShape(*this, "k", getK(), {b, tk, kv * hd})) ||
      failed(checkShape(*this, "v", getV(), {b, tk, kv * hd})) ||
      failed(checkSameType(*this, "result", getResult(), getQ().getType())))
    return failure();
  // hir_attention_c6: the mask is [B, Tk].
  return checkMask(*this, getMask(), getK());
}

//===----------------------------------------------------------------------===//
// Feed-forward blocks
//===----------------------------------------------------------------------===//

/// hir_swiglu_c1: gate and up are [inter, hidden], down is [hidden, inter].
static LogicalResult verifyGatedFfn(Operation *op, Value x, Value gate,
                                    Value up, Value down) {
  if (rank(x) < 1)
    return op->emitOpError("expects an input of rank >= 1");
  int64_t hidden = lastDim(x);
  if (failed(checkRank(op, "w_gate", gate, 2)))
    return failure();
  int64_t inter = dim(gate, 0);
  if (failed(checkShape(op, "w_gate", gate, {inter, hidden})) ||
      failed(checkShape(op, "w_up", up, {inter, hidden})) ||
      failed(checkShape(op, "w_down", down, {hidden, inter})))
    return failure();
  return success();
}

LogicalResult PackedSwigluOp::verify() {
  // hir_packed_swiglu_c1: w_in [2*inter, hidden], w_out [hidden, inter];
  // the optional biases [2*inter] and [hidden].
  if (rank(getInput()) < 1)
    return emitOpError("expects an input of rank >= 1");
  int64_t hidden = lastDim(getInput());
  if (failed(checkRank(*this, "w_in", getWIn(), 2)))
    return failure();
  int64_t rows = dim(getWIn(), 0);
  if (!ShapedType::isDynamic(rows) && rows % 2 != 0)
    return emitOpError("expects w_in with an even number of rows (gate, "
                       "then up), got ")
           << getWIn().getType();
  int64_t inter = divDim(rows, 2);
  if (failed(checkShape(*this, "w_in", getWIn(), {rows, hidden})) ||
      failed(checkShape(*this, "w_out", getWOut(), {hidden, inter})))
    return failure();
  if (getBIn() && failed(checkShape(*this, "b_in", getBIn(), {rows})))
    return failure();
  if (getBOut() && failed(checkShape(*this, "b_out", getBOut(), {hidden})))
    return failure();
  return success();
}

LogicalResult StackOp::verify() {
  // hir_stack_c1: at least one input; the result is [n, input shape...] of
  // the inputs' element type (SameTypeOperands makes them one type).
  if (getInputs().empty())
    return emitOpError("stacks at least one tensor");
  auto in = cast<RankedTensorType>(getInputs().front().getType());
  SmallVector<int64_t> shape = {static_cast<int64_t>(getInputs().size())};
  llvm::append_range(shape, in.getShape());
  RankedTensorType expected = in.clone(shape);
  if (getType() != expected)
    return emitOpError("result must be ") << expected << ", got " << getType();
  return success();
}

LogicalResult SwigluOp::verify() {
  return verifyGatedFfn(*this, getInput(), getWGate(), getWUp(), getWDown());
}

LogicalResult GegluOp::verify() {
  return verifyGatedFfn(*this, getInput(), getWGate(), getWUp(), getWDown());
}

LogicalResult GeluFfnOp::verify() {
  // hir_gelu_ffn_c1: w_in [inter, hidden], b_in [inter], w_out [hidden,
  // inter], b_out [hidden].
  if (rank(getInput()) < 1)
    return emitOpError("expects an input of rank >= 1");
  int64_t hidden = lastDim(getInput());
  if (failed(checkRank(*this, "w_in", getWIn(), 2)))
    return failure();
  int64_t inter = dim(getWIn(), 0);
  if (failed(checkShape(*this, "w_in", getWIn(), {inter, hidden})) ||
      failed(checkShape(*this, "b_in", getBIn(), {inter})) ||
      failed(checkShape(*this, "w_out", getWOut(), {hidden, inter})) ||
      failed(checkShape(*this, "b_out", getBOut(), {hidden})))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Composite layers
//===----------------------------------------------------------------------===//

namespace {
/// The operands of a decoder layer that differ between the variants.
struct DecoderExtras {
  Value pastK, pastV, presentK, presentV, mask;
  Value qNorm, kNorm;
  SmallVector<std::pair<StringRef, Value>> hiddenNorms;
  double softcap = 0;
};
} // namespace

/// hir_decoder_layer_c11: a mixture-of-experts MLP. With a router
/// `[E, hidden]` the MLP weights are stacks (`[E, inter, hidden]` twice,
/// `[E, hidden, inter]`), `experts_per_token` is in [1, E] and there are no
/// MLP biases; the shared expert is a dense MLP of its own size with a
/// `[1, hidden]` gate. Without a router none of it may be set.
template <typename OpTy> static LogicalResult verifyMoe(OpTy op) {
  Operation *o = op.getOperation();
  Value router = op.getRouter();
  bool shared = static_cast<bool>(op.getSharedWGate());
  if (shared != static_cast<bool>(op.getSharedWUp()) ||
      shared != static_cast<bool>(op.getSharedWDown()) ||
      shared != static_cast<bool>(op.getSharedExpertGate()))
    return op.emitOpError("takes the shared expert's gate, up, down and gate "
                          "weights together (shared_expert)");
  if (!router) {
    if (op.getExpertsPerToken() != 0 || op.getNormTopkProb() || shared)
      return op.emitOpError("sets experts_per_token, norm_topk_prob or a "
                            "shared expert without a router (moe)");
    return success();
  }
  int64_t hidden = dim(op.getInput(), 2);
  if (failed(checkRank(o, "router", router, 2)))
    return failure();
  int64_t experts = dim(router, 0);
  if (failed(checkShape(o, "router", router, {experts, hidden})) ||
      failed(checkRank(o, "w_gate", op.getWGate(), 3)))
    return failure();
  int64_t inter = dim(op.getWGate(), 1);
  if (failed(
          checkShape(o, "w_gate", op.getWGate(), {experts, inter, hidden})) ||
      failed(checkShape(o, "w_up", op.getWUp(), {experts, inter, hidden})) ||
      failed(checkShape(o, "w_down", op.getWDown(), {experts, hidden, inter})))
    return failure();
  int64_t k = op.getExpertsPerToken();
  if (k < 1 || (!ShapedType::isDynamic(experts) && k > experts))
    return op.emitOpError("experts_per_token = ")
           << k << " must be in [1, " << experts << "] (the router's experts)";
  if constexpr (!std::is_same_v<OpTy, MoeMlpOp>)
    if (op.getBGate())
      return op.emitOpError("takes no MLP biases (mlp_bias) with experts");
  if (!shared)
    return success();
  if (failed(verifyGatedFfn(o, op.getInput(), op.getSharedWGate(),
                            op.getSharedWUp(), op.getSharedWDown())) ||
      failed(checkShape(o, "shared_expert_gate", op.getSharedExpertGate(),
                        {1, hidden})))
    return failure();
  return success();
}

LogicalResult MoeMlpOp::verify() {
  // hir_moe_mlp_c1: x is [B, T, hidden]; the rest as a decoder layer's
  // mixture of experts (hir_decoder_layer_c11).
  if (failed(checkRank(*this, "input", getInput(), 3)))
    return failure();
  return verifyMoe(*this);
}

/// hir_decoder_layer_c1..c8: the constraints every decoder layer shares.
template <typename OpTy>
static LogicalResult verifyDecoderLayer(OpTy op, const DecoderExtras &extras) {
  Operation *o = op.getOperation();
  Value x = op.getInput();
  int64_t heads = op.getNumHeads(), kv = op.getNumKvHeads();
  int64_t hd = op.getHeadDim();
  // c1: x is [B, T, hidden] and the result has its type.
  if (failed(checkRank(o, "input", x, 3)) ||
      failed(checkSameType(o, "result", op.getResult(), x.getType())))
    return failure();
  int64_t hidden = dim(x, 2);
  // c2: attention heads.
  if (failed(checkHeads(o, heads, kv)))
    return failure();
  // c3: positions.
  if (failed(checkPositions(o, op.getPositions(), x)))
    return failure();
  // c4: projection weights.
  if (failed(checkShape(o, "input_norm", op.getInputNorm(), {hidden})) ||
      failed(checkShape(o, "wq", op.getWq(), {heads * hd, hidden})) ||
      failed(checkShape(o, "wk", op.getWk(), {kv * hd, hidden})) ||
      failed(checkShape(o, "wv", op.getWv(), {kv * hd, hidden})) ||
      failed(checkShape(o, "wo", op.getWo(), {hidden, heads * hd})))
    return failure();
  for (auto [name, w] : extras.hiddenNorms)
    if (failed(checkShape(o, name, w, {hidden})))
      return failure();
  if (!extras.qNorm != !extras.kNorm)
    return op.emitOpError("takes q and k norms together (qk_norm)");
  if (extras.qNorm && (failed(checkShape(o, "q_norm", extras.qNorm, {hd})) ||
                       failed(checkShape(o, "k_norm", extras.kNorm, {hd}))))
    return failure();
  // c5: the MLP, dense or a mixture of experts (c11).
  if (failed(verifyMoe(op)))
    return failure();
  if (!op.getRouter() &&
      failed(verifyGatedFfn(o, x, op.getWGate(), op.getWUp(), op.getWDown())))
    return failure();
  // c10: biases. q, k and v come together; each bias is a vector of its
  // projection's output size.
  Value bq = op.getBq(), bk = op.getBk(), bv = op.getBv();
  if ((bq || bk || bv) && !(bq && bk && bv))
    return op.emitOpError("takes q, k and v biases together (qkv_bias)");
  int64_t inter = dim(op.getWGate(), op.getRouter() ? 1 : 0);
  Value bg = op.getBGate(), bu = op.getBUp(), bd = op.getBDown();
  if ((bg || bu || bd) && !(bg && bu && bd))
    return op.emitOpError("takes gate, up and down biases together (mlp_bias)");
  for (auto [name, b, size] :
       {std::tuple<StringRef, Value, int64_t>{"bq", bq, heads * hd},
        {"bk", bk, kv * hd},
        {"bv", bv, kv * hd},
        {"bo", op.getBo(), hidden},
        {"b_gate", bg, inter},
        {"b_up", bu, inter},
        {"b_down", bd, hidden}})
    if (b && failed(checkShape(o, name, b, {size})))
      return failure();
  // c6: RoPE.
  int64_t rotary = op.getRotaryDim() ? op.getRotaryDim() : hd;
  if (failed(checkRotary(o, rotary, hd, op.getInvFreq())) ||
      failed(
          checkPositive(o, "rope_theta", op.getRopeTheta().convertToFloat())))
    return failure();
  // c7: epsilon, window, scale and softcap.
  if (failed(checkPositive(o, "rms_epsilon",
                           op.getRmsEpsilon().convertToFloat())) ||
      failed(checkNonNegative(o, "window", op.getWindowAttr().getInt())) ||
      failed(checkNonNegative(o, "scale", op.getScale().convertToDouble())) ||
      failed(checkNonNegative(o, "attn_softcap", extras.softcap)))
    return failure();
  // c8: the cache. past is [B, P, kv*hd]; present is [B, P + T, kv*hd].
  if (!extras.pastK)
    return success();
  if (failed(checkRank(o, "past_k", extras.pastK, 3)))
    return failure();
  int64_t p = dim(extras.pastK, 1);
  int64_t total = ShapedType::isDynamic(p) || ShapedType::isDynamic(dim(x, 1))
                      ? ShapedType::kDynamic
                      : p + dim(x, 1);
  int64_t b = dim(x, 0);
  if (failed(checkShape(o, "past_k", extras.pastK, {b, p, kv * hd})) ||
      failed(
          checkSameType(o, "past_v", extras.pastV, extras.pastK.getType())) ||
      failed(
          checkShape(o, "present_k", extras.presentK, {b, total, kv * hd})) ||
      failed(checkSameType(o, "present_v", extras.presentV,
                           extras.presentK.getType())))
    return failure();
  // c8: the cache is kept in the input's element type, or in f16 / bf16
  // beside f32 inputs; past and present agree.
  Type cache = cast<RankedTensorType>(extras.pastK.getType()).getElementType();
  Type input = cast<RankedTensorType>(x.getType()).getElementType();
  if (cache != input && !(input.isF32() && (cache.isF16() || cache.isBF16())))
    return o->emitOpError("keeps its KV cache in ")
           << cache << ", which must be the input's element type (" << input
           << ") or f16/bf16 beside f32";
  Type present =
      cast<RankedTensorType>(extras.presentK.getType()).getElementType();
  if (present != cache)
    return o->emitOpError("returns present keys of element type ")
           << present << ", not the past's " << cache;
  // c9: the key mask covers past and new keys.
  if (extras.mask && failed(checkShape(o, "mask", extras.mask, {b, total})))
    return failure();
  return success();
}

LogicalResult LlamaDecoderLayerOp::verify() {
  DecoderExtras e;
  e.hiddenNorms = {{"post_norm", getPostNorm()}};
  return verifyDecoderLayer(*this, e);
}

LogicalResult LlamaCachedDecoderLayerOp::verify() {
  DecoderExtras e;
  e.pastK = getPastK();
  e.pastV = getPastV();
  e.mask = getMask();
  e.presentK = getPresentK();
  e.presentV = getPresentV();
  e.hiddenNorms = {{"post_norm", getPostNorm()}};
  return verifyDecoderLayer(*this, e);
}

LogicalResult Qwen3DecoderLayerOp::verify() {
  DecoderExtras e;
  e.qNorm = getQNorm();
  e.kNorm = getKNorm();
  e.hiddenNorms = {{"post_norm", getPostNorm()}};
  return verifyDecoderLayer(*this, e);
}

LogicalResult Qwen3CachedDecoderLayerOp::verify() {
  DecoderExtras e;
  e.pastK = getPastK();
  e.pastV = getPastV();
  e.mask = getMask();
  e.presentK = getPresentK();
  e.presentV = getPresentV();
  e.qNorm = getQNorm();
  e.kNorm = getKNorm();
  e.hiddenNorms = {{"post_norm", getPostNorm()}};
  return verifyDecoderLayer(*this, e);
}

LogicalResult GemmaDecoderLayerOp::verify() {
  DecoderExtras e;
  e.hiddenNorms = {{"post_attn_norm", getPostAttnNorm()},
                   {"pre_ffn_norm", getPreFfnNorm()},
                   {"post_ffn_norm", getPostFfnNorm()}};
  e.qNorm = getQNorm();
  e.kNorm = getKNorm();
  e.softcap = getAttnSoftcap().convertToDouble();
  return verifyDecoderLayer(*this, e);
}

LogicalResult GemmaCachedDecoderLayerOp::verify() {
  DecoderExtras e;
  e.pastK = getPastK();
  e.pastV = getPastV();
  e.mask = getMask();
  e.presentK = getPresentK();
  e.presentV = getPresentV();
  e.hiddenNorms = {{"post_attn_norm", getPostAttnNorm()},
                   {"pre_ffn_norm", getPreFfnNorm()},
                   {"post_ffn_norm", getPostFfnNorm()}};
  e.qNorm = getQNorm();
  e.kNorm = getKNorm();
  e.softcap = getAttnSoftcap().convertToDouble();
  return verifyDecoderLayer(*this, e);
}

LogicalResult BertEncoderLayerOp::verify() {
  Value x = getInput();
  // hir_bert_encoder_layer_c1: x is [B, T, hidden], hidden = heads*head_dim.
  if (failed(checkRank(*this, "input", x, 3)) ||
      failed(checkSameType(*this, "result", getResult(), x.getType())))
    return failure();
  int64_t hidden = dim(x, 2);
  int64_t hd = mulDims(getNumHeads(), getHeadDim());
  if (!dimsAgree(hidden, hd))
    return emitOpError() << "num_heads * head_dim (" << hd
                         << ") must equal the hidden size (" << hidden << ")";
  // hir_bert_encoder_layer_c2: weights.
  std::pair<StringRef, Value> square[] = {
      {"wq", getWq()}, {"wk", getWk()}, {"wv", getWv()}, {"wo", getWo()}};
  for (auto [name, w] : square)
    if (failed(checkShape(*this, name, w, {hidden, hidden})))
      return failure();
  std::pair<StringRef, Value> vectors[] = {{"bq", getBq()},
                                           {"bk", getBk()},
                                           {"bv", getBv()},
                                           {"bo", getBo()},
                                           {"ln1_gamma", getLn1Gamma()},
                                           {"ln1_beta", getLn1Beta()},
                                           {"b_out", getBOut()},
                                           {"ln2_gamma", getLn2Gamma()},
                                           {"ln2_beta", getLn2Beta()}};
  for (auto [name, w] : vectors)
    if (failed(checkShape(*this, name, w, {hidden})))
      return failure();
  if (failed(checkRank(*this, "w_in", getWIn(), 2)))
    return failure();
  int64_t inter = dim(getWIn(), 0);
  if (failed(checkShape(*this, "w_in", getWIn(), {inter, hidden})) ||
      failed(checkShape(*this, "b_in", getBIn(), {inter})) ||
      failed(checkShape(*this, "w_out", getWOut(), {hidden, inter})))
    return failure();
  // hir_bert_encoder_layer_c3: mask and epsilon.
  if (failed(checkMask(*this, getMask(), x)))
    return failure();
  return checkPositive(*this, "ln_epsilon", getLnEpsilon().convertToFloat());
}

//===----------------------------------------------------------------------===//
// CustomOp
//===----------------------------------------------------------------------===//

LogicalResult CustomOp::verify() {
  Block &body = getBody().front();
  // hir_custom_c1: block arguments mirror the operands.
  if (body.getArgumentTypes() != getInputs().getTypes())
    return emitOpError("block argument types must match the operand types");
  // hir_custom_c2: the yielded values match the results.
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResults().getTypes())
    return emitOpError("yielded types must match the result types");
  // hir_custom_c3: only non-HIR ops (MIR and scalar ops) inside.
  for (Operation &op : body.without_terminator())
    if (isa<HIRDialect>(op.getDialect()))
      return op.emitOpError("is not allowed inside hir.custom: the region "
                            "holds MIR ops; pass weights as operands");
  return success();
}

#define GET_OP_CLASSES
#include "RLX/Dialect/HIR/IR/HIROps.cpp.inc"
