//===- Vision.cpp - Lower the vision-encoder HIR blocks to MIR ------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The blocks of ViT-style image encoders: patch embedding (a stride-P
// convolution as one matmul over unfolded patches), learned tokens inserted
// into every sequence, 2-D position embeddings resized to the image's grid
// (bicubic interpolation as two matmuls with constant resampling matrices),
// and the packed SwiGLU feed-forward of DINOv2.
//
//===----------------------------------------------------------------------===//

#include "PopulatePatterns.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::rlx;

/// The cubic convolution kernel with parameter `a` (Keys).
static double cubicKernel(double x, double a) {
  x = std::abs(x);
  if (x < 1)
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2)
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

/// PyTorch's bicubic resampling of `in` samples to `out` with the scale
/// in/out: row `o` of the [out, in] matrix holds the weights of the input
/// samples. Plain (upsample_bicubic2d, align_corners=False): the source
/// position is `(o + 0.5) * in/out - 0.5` and its four taps (A = -0.75)
/// clamp to the edge. Antialiased (_upsample_bicubic2d_aa): PIL's kernel
/// (A = -0.5) stretched by the scale when downsampling, cut at the edges
/// and renormalized.
std::vector<float> mlir::rlx::bicubicResampleMatrix(int64_t in, int64_t out,
                                                    bool antialias) {
  std::vector<float> m(static_cast<size_t>(in * out), 0.0f);
  // PyTorch computes the scale and the source position in f32.
  float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t o = 0; o < out; ++o) {
    if (antialias) {
      double center = scale * (o + 0.5);
      double support = scale >= 1 ? 2.0 * scale : 2.0;
      double inv = scale >= 1 ? 1.0 / scale : 1.0;
      int64_t lo =
          std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
      int64_t hi =
          std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in);
      std::vector<double> w;
      double total = 0;
      for (int64_t i = lo; i < hi; ++i) {
        w.push_back(cubicKernel((i - center + 0.5) * inv, -0.5));
        total += w.back();
      }
      for (int64_t i = lo; i < hi; ++i)
        m[o * in + i] =
            static_cast<float>(total != 0 ? w[i - lo] / total : w[i - lo]);
      continue;
    }
    float real = scale * (static_cast<float>(o) + 0.5f) - 0.5f;
    float fl = std::floor(real);
    double t = real - fl;
    int64_t base = static_cast<int64_t>(fl);
    for (int64_t k = 0; k < 4; ++k) {
      int64_t i = std::clamp<int64_t>(base - 1 + k, 0, in - 1);
      m[o * in + i] += static_cast<float>(cubicKernel(t + 1 - k, -0.75));
    }
  }
  return m;
}

namespace {

template <typename OpTy> struct VisionPattern : public OpRewritePattern<OpTy> {
  VisionPattern(MLIRContext *ctx, ::rlx::FusionPolicy policy)
      : OpRewritePattern<OpTy>(ctx), policy(policy) {}
  ::rlx::FusionPolicy policy;

  /// `x · wᵀ + bias` (bias optional), as one fused op under Direct.
  Value linear(MIRBuilder &mb, Value x, Value w, Value bias) const {
    if (policy == ::rlx::FusionPolicy::Direct && bias)
      return mb.fusedMatmul(x, w, bias, nullptr, Activation::None);
    Value y = mb.matmul(x, w);
    return bias ? mb.add(y, bias) : y;
  }
};

/// [B, C, H, W] viewed as [B, C, gh, P, gw, P] and unfolded to
/// [B, gh*gw, C*P*P] rows (each patch in the weight's (c, i, j) order), then
/// one matmul with the weight viewed as [hidden, C*P*P].
struct PatchEmbedLowering : VisionPattern<hir::PatchEmbedOp> {
  using VisionPattern::VisionPattern;
  LogicalResult matchAndRewrite(hir::PatchEmbedOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    ArrayRef<int64_t> px = MIRBuilder::typeOf(op.getPixels()).getShape();
    int64_t b = px[0], c = px[1], p = op.getPatchSize();
    if (ShapedType::isDynamic(px[2]) || ShapedType::isDynamic(px[3]) ||
        ShapedType::isDynamic(c))
      return op.emitOpError("needs static channels, height and width to "
                            "lower; specialize the shapes first");
    int64_t gh = px[2] / p, gw = px[3] / p;
    Value pixels = op.getPixels();
    // The convolution drops what is past the last whole patch.
    if (gh * p != px[2])
      pixels = mb.slice(pixels, 2, 0, gh * p);
    if (gw * p != px[3])
      pixels = mb.slice(pixels, 3, 0, gw * p);
    Value grid = mb.reshape(pixels, {b, c, gh, p, gw, p});
    Value patches = mb.reshape(mb.transpose(grid, {0, 2, 4, 1, 3, 5}),
                               {b, gh * gw, c * p * p});
    int64_t hidden = MIRBuilder::typeOf(op.getWeight()).getDimSize(0);
    Value w = mb.reshape(op.getWeight(), {hidden, c * p * p});
    rewriter.replaceOp(op, linear(mb, patches, w, op.getBias()));
    return success();
  }
};

/// The tokens broadcast over the batch and concatenated in place.
struct InsertTokensLowering : VisionPattern<hir::InsertTokensOp> {
  using VisionPattern::VisionPattern;
  LogicalResult matchAndRewrite(hir::InsertTokensOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    ArrayRef<int64_t> in = MIRBuilder::typeOf(op.getInput()).getShape();
    ArrayRef<int64_t> tok = MIRBuilder::typeOf(op.getTokens()).getShape();
    if (ShapedType::isDynamic(in[0]) || ShapedType::isDynamic(in[1]))
      return op.emitOpError("needs a static batch and sequence to lower; "
                            "specialize the shapes first");
    Value tokens = mb.broadcast(op.getTokens(), {in[0], tok[1], tok[2]});
    int64_t pos = op.getPosition();
    SmallVector<Value> parts;
    if (pos > 0)
      parts.push_back(mb.slice(op.getInput(), 1, 0, pos));
    parts.push_back(tokens);
    if (pos == 0)
      parts.push_back(op.getInput());
    else if (pos < in[1])
      parts.push_back(mb.slice(op.getInput(), 1, pos, in[1] - pos));
    rewriter.replaceOp(op, mb.concat(parts, 1));
    return success();
  }
};

/// The table added as is on its own grid; else its patch rows resized by
/// two matmuls, Ah · P over the rows of the grid and P · Awᵀ over its
/// columns, with the [gh, s] and [gw, s] bicubic matrices as constants.
struct PositionEmbedLowering : VisionPattern<hir::PositionEmbedOp> {
  using VisionPattern::VisionPattern;
  LogicalResult matchAndRewrite(hir::PositionEmbedOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    Value table = op.getTable();
    ArrayRef<int64_t> ts = MIRBuilder::typeOf(table).getShape();
    int64_t lead = op.getLeading(), h = ts[2];
    int64_t s = static_cast<int64_t>(
        std::llround(std::sqrt(static_cast<double>(ts[1] - lead))));
    int64_t gh = op.getGrid()[0], gw = op.getGrid()[1];
    if (gh == s && gw == s) {
      rewriter.replaceOp(op, mb.add(op.getInput(), table));
      return success();
    }
    Type f32 = rewriter.getF32Type();
    auto matrix = [&](int64_t out) {
      std::vector<float> m = bicubicResampleMatrix(s, out, op.getAntialias());
      auto ty = RankedTensorType::get({out, s}, f32);
      return mb
          .create("mir.constant", ty, {},
                  {mb.attr("value",
                           DenseElementsAttr::get(ty, ArrayRef<float>(m)))})
          ->getResult(0);
    };
    Value patch = mb.reshape(mb.slice(table, 1, lead, s * s), {s, s * h});
    // Rows: [gh, s] · [s, s*h].
    Value ah = matrix(gh);
    Value rows = mb.reshape(mb.matmul(ah, patch, false), {gh, s, h});
    // Columns: [gh, h, s] · [gw, s]ᵀ, back to [gh, gw, h].
    Value aw = matrix(gw);
    Value cols = mb.matmul(mb.transpose(rows, {0, 2, 1}), aw);
    Value grid = mb.reshape(mb.transpose(cols, {0, 2, 1}), {1, gh * gw, h});
    Value full = grid;
    if (lead) {
      Value leading = mb.slice(table, 1, 0, lead);
      full = mb.concat({leading, grid}, 1);
    }
    rewriter.replaceOp(op, mb.add(op.getInput(), full));
    return success();
  }
};

struct PackedSwigluLowering : VisionPattern<hir::PackedSwigluOp> {
  using VisionPattern::VisionPattern;
  LogicalResult matchAndRewrite(hir::PackedSwigluOp op,
                                PatternRewriter &rewriter) const override {
    MIRBuilder mb(rewriter, op.getLoc());
    Value gateUp = linear(mb, op.getInput(), op.getWIn(), op.getBIn());
    Value hidden;
    if (policy == ::rlx::FusionPolicy::Direct) {
      hidden = mb.fusedGlu(gateUp, Activation::Silu);
    } else {
      auto ty = MIRBuilder::typeOf(gateUp);
      int64_t last = ty.getRank() - 1, inter = ty.getDimSize(last) / 2;
      Value gate =
          mb.activation(mb.slice(gateUp, last, 0, inter), Activation::Silu);
      Value up = mb.slice(gateUp, last, inter, inter);
      hidden = mb.mul(gate, up);
    }
    rewriter.replaceOp(op, linear(mb, hidden, op.getWOut(), op.getBOut()));
    return success();
  }
};

} // namespace

void mlir::rlx::populateVisionPatterns(RewritePatternSet &patterns,
                                       ::rlx::FusionPolicy policy) {
  patterns.add<PatchEmbedLowering, InsertTokensLowering, PositionEmbedLowering,
               PackedSwigluLowering>(patterns.getContext(), policy);
}
