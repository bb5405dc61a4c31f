//===- FoldParamSlices.cpp - Sliced parameters from slices of params ------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// IN:  %q  = mir.param "l0.q" : tensor<64x64xf32>
//      %q0 = mir.slice %q {axis = 0, start = 0, size = 32}
//      %k0 = mir.slice %k {axis = 0, start = 0, size = 16}   (%k, %v alike)
//      %w  = mir.concat %q0, %k0, %v0 {axis = 0}
// OUT: %w  = mir.param "l0.q[0:32]+l0.k[0:16]+l0.v[0:16]"
//             {sources = ["l0.q", "l0.k", "l0.v"], concat_axis = 0,
//              source_sizes = array<i64: 32, 16, 16>,
//              source_starts = array<i64: 0, 0, 0>}
// The loader then reads only those rows of each source (a tensor-parallel
// rank holds only its share) and concatenates them once at load time.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRFOLDPARAMSLICESPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;

namespace {
/// A range `[start, start + size)` of checkpoint tensor `source` along the
/// parameter's axis. `extent` is the source's whole extent along it when
/// known (a plain param, or a whole source of a derived one).
struct Piece {
  StringAttr source;
  int64_t start = 0, size = 0;
  std::optional<int64_t> extent;

  bool isWhole() const { return extent && start == 0 && size == *extent; }
};
} // namespace

/// What `param` holds along `axis`, as ranges of its sources; none when it
/// is derived along another axis.
static std::optional<SmallVector<Piece>> getPieces(mir::ParamOp param,
                                                   int64_t axis) {
  RankedTensorType type = param.getType();
  if (!param.getSourcesAttr())
    return SmallVector<Piece>{
        {param.getNameAttr(), 0, type.getDimSize(axis), type.getDimSize(axis)}};
  if (static_cast<int64_t>(*param.getConcatAxis()) != axis)
    return std::nullopt;
  std::optional<ArrayRef<int64_t>> starts = param.getSourceStarts();
  SmallVector<Piece> pieces;
  for (auto [i, source] : llvm::enumerate(param.getSourcesAttr())) {
    int64_t size = (*param.getSourceSizes())[i];
    if (starts)
      pieces.push_back({cast<StringAttr>(source), (*starts)[i], size, {}});
    else
      pieces.push_back({cast<StringAttr>(source), 0, size, size});
  }
  return pieces;
}

/// Appends `piece`, merging it into the last one when it continues the same
/// source's range.
static void appendPiece(SmallVectorImpl<Piece> &pieces, const Piece &piece) {
  if (!pieces.empty()) {
    Piece &last = pieces.back();
    if (last.source == piece.source && last.start + last.size == piece.start) {
      last.size += piece.size;
      if (last.extent != piece.extent)
        last.extent.reset();
      return;
    }
  }
  pieces.push_back(piece);
}

/// "name" for a whole source, else "name[a:b]" along axis 0 and
/// "name[:,a:b]" (one ":," per leading axis) along another.
static std::string pieceName(const Piece &piece, int64_t axis) {
  if (piece.isWhole())
    return piece.source.str();
  std::string name = piece.source.str() + "[";
  for (int64_t i = 0; i < axis; ++i)
    name += ":,";
  return name + std::to_string(piece.start) + ":" +
         std::to_string(piece.start + piece.size) + "]";
}

/// True if a parameter of `type` can hold `pieces` along `axis`: a range
/// of ggml blocks along the blocked dimension starts and ends on a block
/// boundary (mir_param_c9).
static bool isValidRange(RankedTensorType type, int64_t axis,
                         ArrayRef<Piece> pieces) {
  if (llvm::any_of(pieces, [](const Piece &p) { return p.size <= 0; }))
    return false;
  auto quant = dyn_cast<mir::QuantType>(type.getElementType());
  if (!quant || axis != type.getRank() - 1)
    return true;
  int64_t block = quant.getBlockElements();
  return llvm::all_of(pieces, [&](const Piece &p) {
    return p.start % block == 0 && p.size % block == 0;
  });
}

/// A `mir.param` of `type` holding `pieces` along `axis`: the plain param
/// for one whole source, a derived one without ranges for several whole
/// sources (f32, or rows), else a sliced one (`source_starts`).
static Value createParam(PatternRewriter &rewriter, Location loc,
                         RankedTensorType type, int64_t axis,
                         ArrayRef<Piece> pieces) {
  if (pieces.size() == 1 && pieces.front().isWhole())
    return mir::ParamOp::create(rewriter, loc, type,
                                pieces.front().source.getValue());
  SmallVector<std::string> names;
  SmallVector<Attribute> sources;
  SmallVector<int64_t> starts, sizes;
  for (const Piece &p : pieces) {
    names.push_back(pieceName(p, axis));
    sources.push_back(p.source);
    starts.push_back(p.start);
    sizes.push_back(p.size);
  }
  bool whole = llvm::all_of(pieces, [](const Piece &p) { return p.isWhole(); });
  // The loader concatenates whole stored (non-f32) sources along rows only;
  // it reads ranges along any axis.
  bool ranged = !whole || (!type.getElementType().isF32() && axis != 0);
  return mir::ParamOp::create(
      rewriter, loc, type, rewriter.getStringAttr(llvm::join(names, "+")),
      rewriter.getArrayAttr(sources), rewriter.getI64IntegerAttr(axis),
      rewriter.getDenseI64ArrayAttr(sizes),
      ranged ? rewriter.getDenseI64ArrayAttr(starts) : DenseI64ArrayAttr());
}

/// The parameter `value` reads: a `mir.param`, or the `mir.param` that a
/// `mir.dequantize` widens (then set in `dequantize`).
static mir::ParamOp getParam(Value value, mir::DequantizeOp &dequantize) {
  dequantize = value.getDefiningOp<mir::DequantizeOp>();
  if (dequantize)
    value = dequantize.getInput();
  return value.getDefiningOp<mir::ParamOp>();
}

/// Replaces `op` (of result type `type`) by a parameter holding `pieces`
/// along `axis`, widened by a `mir.dequantize` to `type` when the
/// parameter is read through one (of element type `stored`).
static void replaceByParam(PatternRewriter &rewriter, Operation *op,
                           RankedTensorType type, Type stored, int64_t axis,
                           ArrayRef<Piece> pieces) {
  Value param =
      createParam(rewriter, op->getLoc(), type.clone(stored), axis, pieces);
  if (stored != type.getElementType())
    param = mir::DequantizeOp::create(rewriter, op->getLoc(), type, param);
  rewriter.replaceOp(op, param);
}

namespace {
/// What a value holds along an axis: ranges of checkpoint tensors, stored
/// in element type `stored`.
struct Taken {
  SmallVector<Piece> pieces;
  Type stored;
};
} // namespace

/// What `value` holds along `axis`: a `mir.param` (plain, or derived along
/// `axis`), a `mir.dequantize` of one, or a static `mir.slice` (step 1) along
/// `axis` of either. Fails, saying why, for anything else.
static FailureOr<Taken> getTaken(Value value, int64_t axis, std::string &why) {
  auto slice = value.getDefiningOp<mir::SliceOp>();
  if (slice)
    value = slice.getInput();
  mir::DequantizeOp dequantize;
  mir::ParamOp param = getParam(value, dequantize);
  if (!param) {
    why = "not a mir.param or a slice of one";
    return failure();
  }
  RankedTensorType type = param.getType();
  std::optional<SmallVector<Piece>> pieces = getPieces(param, axis);
  if (!pieces) {
    why = "the param is derived along another axis";
    return failure();
  }
  Taken taken{{}, type.getElementType()};
  if (!slice) {
    taken.pieces = std::move(*pieces);
    return taken;
  }
  int64_t dim = type.getDimSize(axis);
  int64_t start = slice.getStart() < 0 ? dim + slice.getStart()
                                       : static_cast<int64_t>(slice.getStart());
  int64_t size = slice.getSize();
  if (static_cast<int64_t>(slice.getAxis()) != axis || slice.getStep() != 1 ||
      start < 0 || size <= 0 || start + size > dim) {
    why = "not a static range along the axis";
    return failure();
  }
  // The sources' ranges that [start, start + size) covers.
  int64_t offset = 0;
  for (const Piece &p : *pieces) {
    int64_t lo = std::max(start, offset);
    int64_t hi = std::min(start + size, offset + p.size);
    if (lo < hi)
      appendPiece(taken.pieces,
                  {p.source, p.start + (lo - offset), hi - lo, p.extent});
    offset += p.size;
  }
  return taken;
}

namespace {
/// mir.slice (step 1) of a mir.param → the sliced mir.param; of a widened
/// one (mir.dequantize) → the widened sliced param.
struct FoldSliceOfParam : OpRewritePattern<mir::SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(mir::SliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(slice.getType());
    std::string why;
    int64_t axis = slice.getAxis();
    FailureOr<Taken> taken = getTaken(slice, axis, why);
    if (failed(taken))
      return rewriter.notifyMatchFailure(slice, why);
    if (!resultType.hasStaticShape() ||
        !isValidRange(resultType.clone(taken->stored), axis, taken->pieces))
      return rewriter.notifyMatchFailure(slice,
                                         "range splits a block of ggml blocks");
    replaceByParam(rewriter, slice, resultType, taken->stored, axis,
                   taken->pieces);
    return success();
  }
};

/// mir.concat of mir.params (plain, or derived along the concat axis) or of
/// static slices of them along the axis, all read directly or all widened
/// alike → one derived mir.param (widened). Looking through the slices
/// keeps knowing which ranges are whole sources.
struct FoldConcatOfParams : OpRewritePattern<mir::ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(mir::ConcatOp concat,
                                PatternRewriter &rewriter) const override {
    int64_t axis = concat.getAxis();
    auto resultType = cast<RankedTensorType>(concat.getType());
    if (!resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(concat, "dynamic result");
    SmallVector<Piece> pieces;
    Type stored;
    for (Value input : concat.getInputs()) {
      std::string why;
      FailureOr<Taken> taken = getTaken(input, axis, why);
      if (failed(taken))
        return rewriter.notifyMatchFailure(concat, "an input: " + why);
      if (stored && stored != taken->stored)
        return rewriter.notifyMatchFailure(
            concat, "inputs stored in different element types");
      stored = taken->stored;
      for (const Piece &p : taken->pieces)
        appendPiece(pieces, p);
    }
    if (!stored || !isValidRange(resultType.clone(stored), axis, pieces))
      return rewriter.notifyMatchFailure(concat,
                                         "range splits a block of ggml blocks");
    replaceByParam(rewriter, concat, resultType, stored, axis, pieces);
    return success();
  }
};
} // namespace

void mlir::rlx::populateMIRFoldParamSlicesPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FoldSliceOfParam, FoldConcatOfParams>(patterns.getContext());
}

LogicalResult mlir::rlx::foldMIRParamSlices(Operation *func) {
  RewritePatternSet patterns(func->getContext());
  populateMIRFoldParamSlicesPatterns(patterns);
  // Only these rewrites: the rest of the IR stays as it is.
  GreedyRewriteConfig config;
  config.enableFolding(false);
  return applyPatternsGreedily(func, std::move(patterns), config);
}

namespace {
struct MIRFoldParamSlicesPass
    : public mlir::rlx::impl::MIRFoldParamSlicesPassBase<
          MIRFoldParamSlicesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(foldMIRParamSlices(getOperation())))
      signalPassFailure();
  }
};
} // namespace
