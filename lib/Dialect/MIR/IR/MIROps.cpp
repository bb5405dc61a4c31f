//===- MIROps.cpp - MIR op implementations --------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Shape helpers, verifiers, type inference, folds and canonicalizations of the
// MIR ops. Comments `mir_<op>_cN` cite the numbered constraints of
// docs/Dialects/MIR.md; test/Dialect/MIR/invalid.mlir has a case for each.
//
// Verifiers run before the InferTypeOpInterface check (which the interface
// runs with the region verifiers), so `verify()` diagnoses bad operands with a
// precise message and `inferReturnTypes` only computes the result type, failing
// quietly on operands that the verifier rejects.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/MathExtras.h"
#include <cmath>

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::mir;

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

bool mir::areDimsCompatible(int64_t a, int64_t b) {
  return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
}

FailureOr<SmallVector<int64_t>> mir::broadcastShapes(ArrayRef<int64_t> lhs,
                                                     ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t b = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    int64_t &dim = result[rank - 1 - i];
    if (a == 1)
      dim = b;
    else if (b == 1)
      dim = a;
    else if (ShapedType::isDynamic(a))
      dim = b;
    else if (ShapedType::isDynamic(b) || a == b)
      dim = a;
    else
      return failure();
  }
  return result;
}

FailureOr<SmallVector<int64_t>>
mir::broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes) {
  SmallVector<int64_t> result;
  for (ArrayRef<int64_t> shape : shapes) {
    FailureOr<SmallVector<int64_t>> next = broadcastShapes(result, shape);
    if (failed(next))
      return failure();
    result = std::move(*next);
  }
  return result;
}

bool mir::isBroadcastableTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t lead = to.size() - from.size();
  for (auto [i, target] : llvm::enumerate(to)) {
    // A new leading dim: its size must be known.
    if (i < lead) {
      if (ShapedType::isDynamic(target))
        return false;
      continue;
    }
    int64_t source = from[i - lead];
    // A dynamic target dim takes the size of the source dim, which must not
    // be a stretched 1.
    if (ShapedType::isDynamic(target)) {
      if (source == 1)
        return false;
      continue;
    }
    if (source != 1 && !areDimsCompatible(source, target))
      return false;
  }
  return true;
}

std::optional<int64_t> mir::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

FailureOr<SmallVector<int64_t>>
mir::matmulResultShape(ArrayRef<int64_t> lhsShape, ArrayRef<int64_t> rhsShape,
                       bool transposeLhs, bool transposeRhs, bool batched) {
  size_t lhsRank = lhsShape.size(), rhsRank = rhsShape.size();
  if (batched ? (lhsRank < 3 || rhsRank != lhsRank)
              : (lhsRank < 2 || rhsRank != 2))
    return failure();
  int64_t m = lhsShape[lhsRank - (transposeLhs ? 1 : 2)];
  int64_t lhsK = lhsShape[lhsRank - (transposeLhs ? 2 : 1)];
  int64_t rhsK = rhsShape[rhsRank - (transposeRhs ? 1 : 2)];
  int64_t n = rhsShape[rhsRank - (transposeRhs ? 2 : 1)];
  if (!areDimsCompatible(lhsK, rhsK))
    return failure();
  SmallVector<int64_t> result(lhsShape.drop_back(2));
  if (batched) {
    for (auto [dim, rhsDim] : llvm::zip(result, rhsShape.drop_back(2))) {
      if (!areDimsCompatible(dim, rhsDim))
        return failure();
      if (ShapedType::isDynamic(dim))
        dim = rhsDim;
    }
  }
  result.push_back(m);
  result.push_back(n);
  return result;
}

bool mir::isPermutation(ArrayRef<int64_t> permutation) {
  SmallVector<bool> seen(permutation.size(), false);
  for (int64_t p : permutation) {
    if (p < 0 || p >= static_cast<int64_t>(permutation.size()) || seen[p])
      return false;
    seen[p] = true;
  }
  return true;
}

SmallVector<int64_t> mir::composePermutations(ArrayRef<int64_t> inner,
                                              ArrayRef<int64_t> outer) {
  return llvm::map_to_vector(outer, [&](int64_t p) { return inner[p]; });
}

//===----------------------------------------------------------------------===//
// Local helpers
//===----------------------------------------------------------------------===//

/// Prints a dim as a number or `?`.
static std::string dimToString(int64_t dim) {
  return ShapedType::isDynamic(dim) ? "?" : std::to_string(dim);
}

/// Returns the ranked tensor type of `value`, or null.
static RankedTensorType getTensorType(Value value) {
  return value ? dyn_cast<RankedTensorType>(value.getType())
               : RankedTensorType();
}

/// Returns true if every dim of `a` is compatible with the same dim of `b`
/// (equal ranks).
static bool areShapesCompatible(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](auto dims) {
           return areDimsCompatible(std::get<0>(dims), std::get<1>(dims));
         });
}

/// Returns the static one of two compatible dims, or dynamic.
static int64_t mergeDims(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) ? b : a;
}

/// Checks that `vector` is the 1-D `[last dim]` vector of `input` (norm
/// weights, gammas, betas), with the element type of `input`.
static LogicalResult verifyLastDimVector(Operation *op, RankedTensorType input,
                                         Value vector, StringRef name) {
  auto type = cast<RankedTensorType>(vector.getType());
  if (input.getRank() < 1 || type.getRank() != 1 ||
      !areDimsCompatible(type.getDimSize(0),
                         input.getDimSize(input.getRank() - 1)))
    return op->emitOpError()
           << name << " must be 1-D and match the last dim of the input, got "
           << type << " for " << input;
  if (type.getElementType() != input.getElementType())
    return op->emitOpError()
           << name << " must have the element type of the input, got " << type
           << " for " << input;
  return success();
}

/// Checks that a float attribute (an epsilon, a scale) is positive.
static LogicalResult verifyPositive(Operation *op, float value,
                                    StringRef name) {
  if (!(value > 0.0f))
    return op->emitOpError("requires a positive ") << name << ", got " << value;
  return success();
}

/// Checks `positions` against an activation `[B, T, ...]`: an integer `[B, T]`
/// or `[T]` tensor.
static LogicalResult verifyPositions(Operation *op, Value positions,
                                     RankedTensorType input) {
  auto type = cast<RankedTensorType>(positions.getType());
  int64_t batch = input.getDimSize(0), seq = input.getDimSize(1);
  bool ok = type.getRank() == 1
                ? areDimsCompatible(type.getDimSize(0), seq)
                : type.getRank() == 2 &&
                      areShapesCompatible(type.getShape(), {batch, seq});
  if (!ok)
    return op->emitOpError("positions must be [B, T] or [T] = [")
           << dimToString(batch) << ", " << dimToString(seq) << "], got "
           << type;
  return success();
}

/// Checks an `inv_freq` operand: `[rotary_dim / 2]`.
static LogicalResult verifyInvFreq(Operation *op, Value invFreq,
                                   int64_t rotaryDim) {
  auto type = cast<RankedTensorType>(invFreq.getType());
  if (type.getRank() != 1 ||
      !areDimsCompatible(type.getDimSize(0), rotaryDim / 2))
    return op->emitOpError("inv_freq must be [rotary_dim / 2] = [")
           << rotaryDim / 2 << "], got " << type;
  return success();
}

/// Checks the head, scaling and masking attributes shared by mir.attention
/// and mir.attention_block, and the presence of the mask operand.
static LogicalResult verifyAttentionAttrs(Operation *op, int64_t numHeads,
                                          int64_t numKvHeads, int64_t headDim,
                                          float scale, float softcap,
                                          MaskKind maskKind, int64_t window,
                                          Value mask) {
  // mir_attention_c2, mir_attention_block_c2: positive head counts and size.
  if (numHeads <= 0 || numKvHeads <= 0 || headDim <= 0)
    return op->emitOpError("requires positive num_heads, num_kv_heads and "
                           "head_dim, got ")
           << numHeads << ", " << numKvHeads << ", " << headDim;
  // mir_attention_c3, mir_attention_block_c3: GQA groups.
  if (numHeads % numKvHeads != 0)
    return op->emitOpError("num_kv_heads (")
           << numKvHeads << ") must divide num_heads (" << numHeads << ")";
  // mir_attention_c7, mir_attention_block_c7: scale and softcap.
  if (failed(verifyPositive(op, scale, "scale")))
    return failure();
  if (!(softcap >= 0.0f))
    return op->emitOpError("requires a non-negative softcap, got ") << softcap;
  // mir_attention_c8, mir_attention_block_c8: window iff sliding_window.
  bool sliding = maskKind == MaskKind::SlidingWindow;
  if (sliding ? window <= 0 : window != 0)
    return op->emitOpError("requires window > 0 exactly for mask_kind "
                           "sliding_window, got window = ")
           << window << " with mask_kind " << stringifyMaskKind(maskKind);
  // mir_attention_c9, mir_attention_block_c9: padding needs the mask
  // operand; causal and sliding-window masks may add one (a key mask, e.g.
  // the unused tail of a KV-cache bucket); `none` takes none.
  if (maskKind == MaskKind::Padding && !mask)
    return op->emitOpError("requires a mask operand for mask_kind padding");
  if (maskKind == MaskKind::None && mask)
    return op->emitOpError("takes no mask operand with mask_kind none (use "
                           "mask_kind padding)");
  return success();
}

/// Checks a padding mask operand: `[B, Tk]`.
static LogicalResult verifyMaskShape(Operation *op, Value mask, int64_t batch,
                                     int64_t keys) {
  auto type = cast<RankedTensorType>(mask.getType());
  if (!areShapesCompatible(type.getShape(), {batch, keys}))
    return op->emitOpError("mask must be [B, Tk] = [")
           << dimToString(batch) << ", " << dimToString(keys) << "], got "
           << type;
  return success();
}

/// The identity elements the binary folds look for.
enum class SplatValue { Zero, One };

/// Returns true if `attr` is a splat constant equal to `value` (either sign of
/// zero for floats; `true` is one for i1).
static bool isSplatOf(Attribute attr, SplatValue value) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  Type elementType = splat.getElementType();
  if (isa<FloatType>(elementType)) {
    APFloat splatValue = splat.getSplatValue<APFloat>();
    return value == SplatValue::Zero ? splatValue.isZero()
                                     : splatValue.isExactlyValue(1.0);
  }
  if (isa<IntegerType>(elementType)) {
    APInt splatValue = splat.getSplatValue<APInt>();
    return value == SplatValue::Zero ? splatValue.isZero() : splatValue.isOne();
  }
  return false;
}

/// Folds `op(x, identity) -> x` when the result type is the type of `x`.
static OpFoldResult foldRightIdentity(Operation *op, Attribute rhs,
                                      SplatValue identity) {
  Value lhs = op->getOperand(0);
  if (lhs.getType() != op->getResult(0).getType() || !isSplatOf(rhs, identity))
    return {};
  return lhs;
}

//===----------------------------------------------------------------------===//
// Helpers called from the op classes in MIROps.td
//===----------------------------------------------------------------------===//

/// Checks the result types of an op with an inferred result type against the
/// types it infers (mir_infer_c1). The verifiers call it last, so a mismatch
/// gets one precise diagnostic ahead of InferTypeOpInterface's generic check.
static LogicalResult verifyResultMatchesInference(Operation *op) {
  SmallVector<Type> inferred;
  if (failed(cast<InferTypeOpInterface>(op).inferReturnTypes(
          op->getContext(), op->getLoc(), op->getOperands(),
          op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
          op->getRegions(), inferred)))
    return failure();
  if (TypeRange(inferred) != op->getResultTypes())
    return op->emitOpError("result type ")
           << op->getResultTypes() << " does not match the inferred type "
           << TypeRange(inferred);
  return success();
}

/// Verifies a binary broadcasting op (mir_binary_c2).
static LogicalResult verifyBroadcastingOp(Operation *op) {
  auto lhs = cast<RankedTensorType>(op->getOperand(0).getType());
  auto rhs = cast<RankedTensorType>(op->getOperand(1).getType());
  // mir_binary_c2: the shapes broadcast.
  if (failed(broadcastShapes(lhs.getShape(), rhs.getShape())))
    return op->emitOpError("operands are not broadcast-compatible: ")
           << lhs << " and " << rhs;
  return verifyResultMatchesInference(op);
}

/// Infers the result of an op broadcasting `operands`, with
/// `resultElementType` or else the element type of the first operand.
static LogicalResult
inferBroadcastingReturnType(std::optional<Location> location,
                            ValueRange operands, Type resultElementType,
                            SmallVectorImpl<Type> &inferredReturnTypes) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value operand : operands) {
    RankedTensorType type = getTensorType(operand);
    if (!type)
      return emitOptionalError(location, "expected ranked tensor operands");
    shapes.push_back(type.getShape());
  }
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(shapes);
  if (failed(shape) || operands.empty())
    return emitOptionalError(location, "operands are not broadcast-compatible");
  if (!resultElementType)
    resultElementType = getElementTypeOrSelf(operands.front().getType());
  inferredReturnTypes.push_back(
      RankedTensorType::get(*shape, resultElementType));
  return success();
}

/// Verifies the `axes` of a reduction.
static LogicalResult verifyArgReduceOp(Operation *op, RankedTensorType input,
                                       int64_t axis) {
  int64_t rank = input.getRank();
  // mir_argmax_c1: axis is in [-rank, rank) (so the input has rank >= 1).
  std::optional<int64_t> d = normalizeAxis(axis, rank);
  if (!d)
    return op->emitOpError("axis ")
           << axis << " is out of range [" << -rank << ", " << rank << ")";
  // mir_argmax_c2: the axis is not empty (no index to give, as NumPy).
  if (input.getDimSize(*d) == 0)
    return op->emitOpError("takes the index over an empty axis ") << axis;
  return verifyResultMatchesInference(op);
}

static LogicalResult inferArgReduceReturnType(std::optional<Location> location,
                                              Type inputType, int64_t axis,
                                              bool keepDims,
                                              SmallVectorImpl<Type> &inferred) {
  auto input = dyn_cast<RankedTensorType>(inputType);
  std::optional<int64_t> d =
      input ? normalizeAxis(axis, input.getRank()) : std::nullopt;
  if (!d)
    return emitOptionalError(location, "axis ", axis, " is out of range");
  SmallVector<int64_t> shape(input.getShape());
  if (keepDims)
    shape[*d] = 1;
  else
    shape.erase(shape.begin() + *d);
  inferred.push_back(
      RankedTensorType::get(shape, IntegerType::get(input.getContext(), 64)));
  return success();
}

static LogicalResult verifyReduceOp(Operation *op, RankedTensorType input,
                                    ArrayRef<int64_t> axes) {
  // mir_reduce_c1: at least one axis.
  if (axes.empty())
    return op->emitOpError("requires at least one axis");
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t axis : axes) {
    // mir_reduce_c2: each axis is in [0, rank).
    if (axis < 0 || axis >= input.getRank())
      return op->emitOpError("axis ")
             << axis << " is out of range [0, " << input.getRank() << ")";
    // mir_reduce_c3: no axis repeats.
    if (!seen.insert(axis).second)
      return op->emitOpError("axis ") << axis << " appears more than once";
  }
  return verifyResultMatchesInference(op);
}

/// Infers the result of a reduction: reduced dims dropped, or kept as 1.
static LogicalResult
inferReduceReturnType(std::optional<Location> location, Type inputType,
                      ArrayRef<int64_t> axes, bool keepDims,
                      SmallVectorImpl<Type> &inferredReturnTypes) {
  auto input = dyn_cast<RankedTensorType>(inputType);
  if (!input || llvm::any_of(axes, [&](int64_t a) {
        return a < 0 || a >= input.getRank();
      }))
    return emitOptionalError(location, "invalid reduction axes");
  SmallVector<int64_t> shape;
  for (auto [i, dim] : llvm::enumerate(input.getShape())) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(i)))
      shape.push_back(dim);
    else if (keepDims)
      shape.push_back(1);
  }
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  // mir_param_c1: the name is not empty.
  if (getName().empty())
    return emitOpError("requires a non-empty parameter name");
  // mir_param_c2: the shape is static.
  if (!getType().hasStaticShape())
    return emitOpError("requires a static shape, got ") << getType();
  // mir_param_c7: a weight of ggml blocks is a whole number of blocks per
  // row; a derived one is concatenated along its rows unless it takes
  // block-aligned ranges of its sources (mir_param_c9).
  if (failed(verifyQuantizedShape(*this, getType(), "a parameter of type")))
    return failure();
  auto quant = dyn_cast<QuantType>(getType().getElementType());
  bool alongBlocks =
      getConcatAxis() && *getConcatAxis() == getType().getRank() - 1;
  if (quant && alongBlocks && !getSourceStarts())
    return emitOpError("concatenates ggml blocks along the blocked "
                       "(innermost) dimension");
  // mir_param_c3: sources, concat_axis and source_sizes come together.
  if ((getSourcesAttr() != nullptr) != getConcatAxis().has_value() ||
      (getSourcesAttr() != nullptr) != getSourceSizes().has_value())
    return emitOpError(
        "requires 'sources', 'concat_axis' and 'source_sizes' together");
  // mir_param_c8: source_starts needs sources.
  if (getSourceStarts() && !getSourcesAttr())
    return emitOpError("'source_starts' requires 'sources'");
  if (ArrayAttr sources = getSourcesAttr()) {
    // mir_param_c4: two or more non-empty source names (one is enough for a
    // range of one tensor, with source_starts).
    size_t minSources = getSourceStarts() ? 1 : 2;
    if (sources.size() < minSources ||
        llvm::any_of(sources, [](Attribute name) {
          return cast<StringAttr>(name).getValue().empty();
        }))
      return emitOpError("requires at least ")
             << (minSources == 1 ? "one non-empty source name"
                                 : "two non-empty source names")
             << ", got " << sources;
    // mir_param_c5: concat_axis is in [0, rank).
    int64_t axis = *getConcatAxis();
    if (axis < 0 || axis >= getType().getRank())
      return emitOpError("concat_axis ")
             << axis << " is out of range [0, " << getType().getRank() << ")";
    // mir_param_c6: one positive size per source, adding up to the axis.
    ArrayRef<int64_t> sizes = *getSourceSizes();
    int64_t total = 0;
    for (int64_t size : sizes)
      total += size > 0 ? size : getType().getDimSize(axis) + 1;
    if (sizes.size() != sources.size() || total != getType().getDimSize(axis))
      return emitOpError("source_sizes must give one positive size per source "
                         "adding up to dimension ")
             << axis << " (" << getType().getDimSize(axis) << ")";
    if (std::optional<ArrayRef<int64_t>> starts = getSourceStarts()) {
      // mir_param_c8: one non-negative start per source.
      if (starts->size() != sources.size() ||
          llvm::any_of(*starts, [](int64_t s) { return s < 0; }))
        return emitOpError("source_starts must give one non-negative start "
                           "per source, got ")
               << getSourceStartsAttr();
      // mir_param_c9: ranges of ggml blocks along the blocked dimension
      // start and end on block boundaries.
      if (quant && alongBlocks) {
        int64_t block = quant.getBlockElements();
        for (auto [start, size] : llvm::zip(*starts, sizes))
          if (start % block || size % block)
            return emitOpError("range [")
                   << start << ", " << start + size
                   << ") of ggml blocks along the blocked (innermost) "
                      "dimension must start and end on a block boundary ("
                   << block << " elements)";
      }
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor adaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// IotaOp
//===----------------------------------------------------------------------===//

LogicalResult IotaOp::verify() {
  RankedTensorType type = getType();
  // mir_iota_c1: static shape of rank >= 1.
  if (type.getRank() < 1 || !type.hasStaticShape())
    return emitOpError("requires a static shape of rank >= 1, got ") << type;
  // mir_iota_c2: axis is in [0, rank).
  if (getAxis() < 0 || getAxis() >= type.getRank())
    return emitOpError("axis ")
           << getAxis() << " is out of range [0, " << type.getRank() << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp and BatchMatmulOp
//===----------------------------------------------------------------------===//

/// Checks that the contraction dims of a matmul-like op agree.
static LogicalResult verifyContraction(Operation *op, RankedTensorType lhs,
                                       RankedTensorType rhs, bool transposeLhs,
                                       bool transposeRhs) {
  int64_t lhsK = lhs.getDimSize(lhs.getRank() - (transposeLhs ? 2 : 1));
  int64_t rhsK = rhs.getDimSize(rhs.getRank() - (transposeRhs ? 1 : 2));
  if (!areDimsCompatible(lhsK, rhsK))
    return op->emitOpError("contraction dims do not match: lhs has K = ")
           << lhsK << ", rhs has K = " << rhsK;
  return success();
}

LogicalResult MatmulOp::verify() {
  RankedTensorType lhs = getLhs().getType(), rhs = getRhs().getType();
  // mir_matmul_c1: lhs has rank >= 2.
  if (lhs.getRank() < 2)
    return emitOpError("requires an lhs of rank >= 2, got ") << lhs;
  // mir_matmul_c2: rhs has rank 2.
  if (rhs.getRank() != 2)
    return emitOpError("requires a rank-2 rhs, got ") << rhs;
  // mir_matmul_c3: one element type, or a transposed weight stored in lower
  // precision.
  if (lhs.getElementType() != rhs.getElementType() &&
      (!isLowPrecisionWeightType(rhs.getElementType()) || !getTransposeRhs()))
    return emitOpError("requires lhs and rhs of the same element type (or an "
                       "[N, K] rhs stored in f16, bf16 or ggml blocks with "
                       "transpose_rhs), got ")
           << lhs << " and " << rhs;
  if (failed(verifyQuantizedShape(*this, rhs, "rhs")))
    return failure();
  // mir_matmul_c4: K matches.
  if (failed(verifyContraction(*this, lhs, rhs, getTransposeLhs(),
                               getTransposeRhs())))
    return failure();
  return verifyResultMatchesInference(*this);
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType lhs = getTensorType(adaptor.getLhs());
  RankedTensorType rhs = getTensorType(adaptor.getRhs());
  if (!lhs || !rhs)
    return emitOptionalError(location, "expected ranked tensor operands");
  FailureOr<SmallVector<int64_t>> shape =
      matmulResultShape(lhs.getShape(), rhs.getShape(),
                        adaptor.getTransposeLhs(), adaptor.getTransposeRhs());
  if (failed(shape))
    return emitOptionalError(location, "invalid matmul operand shapes");
  inferred.push_back(RankedTensorType::get(*shape, lhs.getElementType()));
  return success();
}

LogicalResult BatchMatmulOp::verify() {
  RankedTensorType lhs = getLhs().getType(), rhs = getRhs().getType();
  // mir_batch_matmul_c1: equal ranks >= 3.
  if (lhs.getRank() < 3 || rhs.getRank() != lhs.getRank())
    return emitOpError("requires lhs and rhs of the same rank >= 3, got ")
           << lhs << " and " << rhs;
  // mir_batch_matmul_c2: equal batch dims.
  if (!areShapesCompatible(lhs.getShape().drop_back(2),
                           rhs.getShape().drop_back(2)))
    return emitOpError("batch dims do not match: ") << lhs << " and " << rhs;
  // mir_batch_matmul_c3: one element type.
  if (lhs.getElementType() != rhs.getElementType())
    return emitOpError("requires lhs and rhs of the same element type, got ")
           << lhs << " and " << rhs;
  // mir_batch_matmul_c4: K matches.
  if (failed(verifyContraction(*this, lhs, rhs, getTransposeLhs(),
                               getTransposeRhs())))
    return failure();
  return verifyResultMatchesInference(*this);
}

LogicalResult BatchMatmulOp::inferReturnTypes(MLIRContext *context,
                                              std::optional<Location> location,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  RankedTensorType lhs = getTensorType(adaptor.getLhs());
  RankedTensorType rhs = getTensorType(adaptor.getRhs());
  if (!lhs || !rhs)
    return emitOptionalError(location, "expected ranked tensor operands");
  FailureOr<SmallVector<int64_t>> shape = matmulResultShape(
      lhs.getShape(), rhs.getShape(), adaptor.getTransposeLhs(),
      adaptor.getTransposeRhs(), /*batched=*/true);
  if (failed(shape))
    return emitOptionalError(location, "invalid batch_matmul operand shapes");
  inferred.push_back(RankedTensorType::get(*shape, lhs.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Binary broadcasting ops
//===----------------------------------------------------------------------===//

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(*this, adaptor.getRhs(), SplatValue::Zero);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(*this, adaptor.getRhs(), SplatValue::Zero);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(*this, adaptor.getRhs(), SplatValue::One);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(*this, adaptor.getRhs(), SplatValue::One);
}

//===----------------------------------------------------------------------===//
// CompareOp and SelectOp
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::verify() {
  // mir_compare_c2: the shapes broadcast.
  return verifyBroadcastingOp(*this);
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferBroadcastingReturnType(location, adaptor.getOperands(),
                                     IntegerType::get(context, 1), inferred);
}

LogicalResult SelectOp::verify() {
  RankedTensorType cond = getCond().getType();
  RankedTensorType onTrue = getOnTrue().getType();
  RankedTensorType onFalse = getOnFalse().getType();
  // mir_select_c1: one value element type.
  if (onTrue.getElementType() != onFalse.getElementType())
    return emitOpError("requires on_true and on_false of the same element "
                       "type, got ")
           << onTrue << " and " << onFalse;
  // mir_select_c2: the three shapes broadcast.
  if (failed(broadcastShapes(
          {cond.getShape(), onTrue.getShape(), onFalse.getShape()})))
    return emitOpError("operands are not broadcast-compatible: ")
           << cond << ", " << onTrue << " and " << onFalse;
  return verifyResultMatchesInference(*this);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType onTrue = getTensorType(adaptor.getOnTrue());
  if (!onTrue)
    return emitOptionalError(location, "expected ranked tensor operands");
  return inferBroadcastingReturnType(location, adaptor.getOperands(),
                                     onTrue.getElementType(), inferred);
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  if (auto producer = getInput().getDefiningOp<NegOp>())
    return producer.getInput();
  return {};
}

OpFoldResult AbsOp::fold(FoldAdaptor adaptor) {
  if (auto producer = getInput().getDefiningOp<AbsOp>())
    return producer.getResult();
  // |-x| = |x|: read x directly.
  if (auto producer = getInput().getDefiningOp<NegOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  return {};
}

/// Whether `input` is the result of floor, ceil or round: its values are
/// integers already, which another rounding op leaves as they are.
static bool isIntegerValued(Value input) {
  return isa_and_nonnull<FloorOp, CeilOp, RoundOp>(input.getDefiningOp());
}

OpFoldResult FloorOp::fold(FoldAdaptor adaptor) {
  if (isIntegerValued(getInput()))
    return getInput();
  return {};
}

OpFoldResult CeilOp::fold(FoldAdaptor adaptor) {
  if (isIntegerValued(getInput()))
    return getInput();
  return {};
}

OpFoldResult RoundOp::fold(FoldAdaptor adaptor) {
  if (isIntegerValued(getInput()))
    return getInput();
  return {};
}

OpFoldResult SignOp::fold(FoldAdaptor adaptor) {
  if (auto producer = getInput().getDefiningOp<SignOp>())
    return producer.getResult();
  return {};
}

LogicalResult ClipOp::verify() {
  // mir_clip_c1: the bounds are numbers, in order.
  float lo = getMin(), hi = getMax();
  if (std::isnan(lo) || std::isnan(hi))
    return emitOpError("bounds must not be NaN");
  if (lo > hi)
    return emitOpError("min ") << lo << " is above max " << hi;
  return success();
}

OpFoldResult ClipOp::fold(FoldAdaptor adaptor) {
  float lo = getMin(), hi = getMax();
  if (std::isinf(lo) && lo < 0 && std::isinf(hi) && hi > 0)
    return getInput();
  // clip(clip(x, a, b), lo, hi) with lo <= a and b <= hi is the inner clip.
  if (auto inner = getInput().getDefiningOp<ClipOp>())
    if (lo <= inner.getMin() && inner.getMax() <= hi)
      return inner.getResult();
  return {};
}

LogicalResult ActivationOp::verify() {
  // mir_activation_c1: an activation other than the identity.
  if (getActivation() == Activation::None)
    return emitOpError("activation 'none' is the identity: use the input");
  return success();
}

//===----------------------------------------------------------------------===//
// SoftmaxOp, RmsNormOp, LayerNormOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getInput().getType().getRank();
  // mir_softmax_c1: axis is in [-rank, rank).
  if (!normalizeAxis(getAxis(), rank))
    return emitOpError("axis ")
           << getAxis() << " is out of range [" << -rank << ", " << rank << ")";
  return success();
}

LogicalResult LogSoftmaxOp::verify() {
  int64_t rank = getInput().getType().getRank();
  // mir_log_softmax_c1: axis is in [-rank, rank).
  if (!normalizeAxis(getAxis(), rank))
    return emitOpError("axis ")
           << getAxis() << " is out of range [" << -rank << ", " << rank << ")";
  return success();
}

LogicalResult CumSumOp::verify() {
  int64_t rank = getInput().getType().getRank();
  // mir_cumsum_c1: axis is in [-rank, rank).
  if (!normalizeAxis(getAxis(), rank))
    return emitOpError("axis ")
           << getAxis() << " is out of range [" << -rank << ", " << rank << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// Routing
//===----------------------------------------------------------------------===//

LogicalResult TopKOp::inferReturnTypes(MLIRContext *context,
                                       std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  std::optional<int64_t> d = normalizeAxis(adaptor.getAxis(), input.getRank());
  if (!d)
    return emitOptionalError(location, "axis ", adaptor.getAxis(),
                             " is out of range");
  SmallVector<int64_t> shape(input.getShape());
  shape[*d] = adaptor.getK();
  inferred.push_back(input.clone(shape));
  inferred.push_back(
      RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

LogicalResult TopKOp::verify() {
  RankedTensorType input = getInput().getType();
  int64_t rank = input.getRank();
  // mir_top_k_c1: axis is in [-rank, rank) (so the input has rank >= 1).
  std::optional<int64_t> d = normalizeAxis(getAxis(), rank);
  if (!d)
    return emitOpError("axis ")
           << getAxis() << " is out of range [" << -rank << ", " << rank << ")";
  // mir_top_k_c2: k is in [1, size of the axis].
  int64_t n = input.getDimSize(*d), k = getK();
  if (k < 1)
    return emitOpError("k must be positive, got ") << k;
  if (!ShapedType::isDynamic(n) && k > n)
    return emitOpError("k = ")
           << k << " exceeds the size " << n << " of axis " << getAxis();
  return verifyResultMatchesInference(getOperation());
}

LogicalResult SortGroupsOp::inferReturnTypes(MLIRContext *context,
                                             std::optional<Location>,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  auto groups = cast<RankedTensorType>(adaptor.getGroups().getType());
  int64_t rows =
      groups.hasStaticShape() ? groups.getNumElements() : ShapedType::kDynamic;
  Type i64 = IntegerType::get(context, 64);
  inferred.push_back(RankedTensorType::get({rows}, i64));
  inferred.push_back(RankedTensorType::get({adaptor.getNumGroups() + 1}, i64));
  return success();
}

LogicalResult SortGroupsOp::verify() {
  // mir_sort_groups_c1: order is [rows], offsets [num_groups + 1] (inferred).
  return verifyResultMatchesInference(getOperation());
}

LogicalResult GroupedMatmulOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto weights = cast<RankedTensorType>(adaptor.getWeights().getType());
  if (input.getRank() < 2 || weights.getRank() != 3)
    return emitOptionalError(location, "takes a [..., R, K] input and "
                                       "[G, N, K] weights");
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = weights.getDimSize(1);
  inferred.push_back(input.clone(shape));
  return success();
}

LogicalResult GroupedMatmulOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType weights = getWeights().getType();
  RankedTensorType groups = getGroups().getType();
  // mir_grouped_matmul_c1: input is [..., K] (rank >= 2), weights [G, N, K],
  // groups the input's shape without K.
  if (input.getRank() < 2)
    return emitOpError("input must be [..., R, K], got ") << input;
  if (weights.getRank() != 3)
    return emitOpError("weights must be [G, N, K], got ") << weights;
  if (!areDimsCompatible(input.getShape().back(), weights.getDimSize(2)))
    return emitOpError("input has K = ")
           << input.getShape().back() << " but the weights' K is "
           << weights.getDimSize(2);
  ArrayRef<int64_t> rows = input.getShape().drop_back();
  if (!areShapesCompatible(groups.getShape(), rows))
    return emitOpError("groups ")
           << groups << " must have the input's shape without its last dim";
  // mir_grouped_matmul_c2: at least one matrix to choose from.
  if (weights.getDimSize(0) == 0)
    return emitOpError("has no weight matrix to choose from (G = 0)");
  // mir_grouped_matmul_c3: `sorted` gives the rows of groups.shape in order
  // and the G + 1 offsets of mir.sort_groups.
  if (Value order = getOrder()) {
    int64_t rowCount = groups.hasStaticShape() ? groups.getNumElements()
                                               : ShapedType::kDynamic;
    auto orderTy = cast<RankedTensorType>(order.getType());
    auto offsetsTy = cast<RankedTensorType>(getOffsets().getType());
    int64_t g = weights.getDimSize(0);
    if (!areShapesCompatible(orderTy.getShape(), {rowCount}))
      return emitOpError("sorted order ")
             << orderTy << " must list the " << rowCount << " rows";
    if (!areShapesCompatible(offsetsTy.getShape(),
                             {ShapedType::isDynamic(g) ? g : g + 1}))
      return emitOpError("sorted offsets ")
             << offsetsTy << " must have G + 1 = " << g + 1 << " entries";
  }
  return verifyResultMatchesInference(getOperation());
}

//===----------------------------------------------------------------------===//
// Recurrences
//===----------------------------------------------------------------------===//

LogicalResult GatedDeltaRuleOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto key = cast<RankedTensorType>(adaptor.getKey().getType());
  auto value = cast<RankedTensorType>(adaptor.getValue().getType());
  if (key.getRank() != 4 || value.getRank() != 4)
    return emitOptionalError(location, "takes [B, T, Hk, Dk] keys and "
                                       "[B, T, Hv, Dv] values");
  // result: the values' shape; final_state: [B, Hv, Dk, Dv].
  ArrayRef<int64_t> v = value.getShape();
  inferred.push_back(value);
  inferred.push_back(value.clone({v[0], v[2], key.getDimSize(3), v[3]}));
  return success();
}

LogicalResult GatedDeltaRuleOp::verify() {
  RankedTensorType q = getQuery().getType(), k = getKey().getType();
  RankedTensorType v = getValue().getType(), g = getG().getType();
  RankedTensorType beta = getBeta().getType();
  // mir_gated_delta_rule_c1: query, key and value have rank 4, g and beta
  // rank 3, initial_state rank 4.
  for (auto [name, type, rank] :
       {std::tuple<StringRef, RankedTensorType, int64_t>{"query", q, 4},
        {"key", k, 4},
        {"value", v, 4},
        {"g", g, 3},
        {"beta", beta, 3}})
    if (type.getRank() != rank)
      return emitOpError(name)
             << " must have rank " << rank << ", got " << type;
  auto init = cast_if_present<TypedValue<RankedTensorType>>(getInitialState());
  if (init && init.getType().getRank() != 4)
    return emitOpError("initial_state must be [B, Hv, Dk, Dv], got ")
           << init.getType();
  // mir_gated_delta_rule_c2: key has the query's shape [B, T, Hk, Dk].
  if (!areShapesCompatible(q.getShape(), k.getShape()))
    return emitOpError("key ") << k << " must have the query's shape " << q;
  // mir_gated_delta_rule_c3: value is [B, T, Hv, Dv] with the query's B, T.
  if (!areShapesCompatible(v.getShape().take_front(2),
                           q.getShape().take_front(2)))
    return emitOpError("value ")
           << v << " must have the query's batch and length (" << q << ")";
  // mir_gated_delta_rule_c4: Hk is positive and divides Hv.
  int64_t hk = q.getDimSize(2), hv = v.getDimSize(2);
  if (hk == 0)
    return emitOpError("has no query/key head (Hk = 0)");
  if (!ShapedType::isDynamic(hk) && !ShapedType::isDynamic(hv) && hv % hk != 0)
    return emitOpError("Hk = ")
           << hk << " query/key heads do not divide Hv = " << hv
           << " value heads";
  // mir_gated_delta_rule_c5: g and beta are [B, T, Hv].
  ArrayRef<int64_t> perHead = v.getShape().drop_back();
  for (auto [name, type] :
       {std::pair<StringRef, RankedTensorType>{"g", g}, {"beta", beta}})
    if (!areShapesCompatible(type.getShape(), perHead))
      return emitOpError(name)
             << " " << type << " must be [B, T, Hv] of the value " << v;
  // mir_gated_delta_rule_c6: initial_state is [B, Hv, Dk, Dv].
  auto stateType =
      v.clone({v.getDimSize(0), hv, k.getDimSize(3), v.getDimSize(3)});
  if (init &&
      !areShapesCompatible(init.getType().getShape(), stateType.getShape()))
    return emitOpError("initial_state ")
           << init.getType() << " must be [B, Hv, Dk, Dv] = " << stateType;
  // mir_gated_delta_rule_c7: scale is positive and finite.
  if (std::optional<float> scale = getScale())
    if (!(*scale > 0) || std::isinf(*scale))
      return emitOpError("scale must be positive and finite, got ") << *scale;
  return verifyResultMatchesInference(getOperation());
}

/// mir_round_to_c1: `round_to`, when set, is f16 or bf16 and `op`'s results
/// are f32 (what a compute-precision round trip applies to).
static LogicalResult verifyRoundTo(Operation *op, std::optional<Type> roundTo) {
  if (!roundTo)
    return success();
  if (!roundTo->isF16() && !roundTo->isBF16())
    return op->emitOpError("round_to must be f16 or bf16, got ") << *roundTo;
  for (Type t : op->getResultTypes())
    if (!cast<ShapedType>(t).getElementType().isF32())
      return op->emitOpError("round_to rounds f32 results, got ") << t;
  return success();
}

LogicalResult RmsNormOp::verify() {
  // mir_rms_norm_c1, mir_rms_norm_c2: weight is [last dim] of the input's
  // element type.
  if (failed(verifyLastDimVector(*this, getInput().getType(), getWeight(),
                                 "weight")))
    return failure();
  // mir_rms_norm_c3: epsilon is positive.
  if (failed(verifyRoundTo(*this, getRoundTo())))
    return failure();
  return verifyPositive(*this, getEpsilon(), "epsilon");
}

LogicalResult LayerNormOp::verify() {
  // mir_layer_norm_c1, mir_layer_norm_c2: gamma and beta are [last dim] of
  // the input's element type.
  if (failed(verifyLastDimVector(*this, getInput().getType(), getGamma(),
                                 "gamma")) ||
      failed(
          verifyLastDimVector(*this, getInput().getType(), getBeta(), "beta")))
    return failure();
  // mir_layer_norm_c3: epsilon is positive.
  if (failed(verifyRoundTo(*this, getRoundTo())))
    return failure();
  return verifyPositive(*this, getEpsilon(), "epsilon");
}

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

/// Checks `rotary_dim` against `head_dim`: even and in (0, head_dim].
static LogicalResult verifyRotaryDim(Operation *op, int64_t rotaryDim,
                                     int64_t headDim) {
  if (rotaryDim <= 0 || rotaryDim > headDim || rotaryDim % 2 != 0)
    return op->emitOpError("requires an even rotary_dim in (0, head_dim = ")
           << headDim << "], got " << rotaryDim;
  return success();
}

LogicalResult RopeOp::verify() {
  RankedTensorType input = getInput().getType();
  int64_t headDim = getHeadDim();
  // mir_rope_c1: input is [B, T, N*head_dim].
  if (input.getRank() != 3)
    return emitOpError("requires a rank-3 input [B, T, N*head_dim], got ")
           << input;
  // mir_rope_c2: head_dim is positive and divides the last dim.
  int64_t channels = input.getDimSize(2);
  if (headDim <= 0)
    return emitOpError("requires a positive head_dim, got ") << headDim;
  if (!ShapedType::isDynamic(channels) && channels % headDim != 0)
    return emitOpError("last dim ")
           << channels << " of the input is not a multiple of head_dim "
           << headDim;
  // mir_rope_c3: rotary_dim is even and in (0, head_dim].
  if (failed(verifyRotaryDim(*this, getRotaryDim(), headDim)))
    return failure();
  // mir_rope_c4: positions is [B, T] or [T].
  if (failed(verifyPositions(*this, getPositions(), input)))
    return failure();
  // mir_rope_c5: inv_freq is [rotary_dim / 2].
  if (getInvFreq() &&
      failed(verifyInvFreq(*this, getInvFreq(), getRotaryDim())))
    return failure();
  // mir_rope_c6: theta is positive.
  return verifyPositive(*this, getTheta(), "theta");
}

//===----------------------------------------------------------------------===//
// GatherOp
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// DequantizeOp
//===----------------------------------------------------------------------===//

LogicalResult DequantizeOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  // mir_dequantize_c1: equal shapes.
  if (input.getShape() != result.getShape())
    return emitOpError("requires equal shapes, got ")
           << input << " and " << result;
  // mir_dequantize_c2: a lower-precision storage type, a wider result.
  Type from = input.getElementType(), to = result.getElementType();
  if (!isLowPrecisionWeightType(from) || from == to ||
      (!isa<QuantType>(from) &&
       from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth()))
    return emitOpError("widens a weight stored in f16, bf16 or ggml blocks "
                       "to a float type at least as wide, got ")
           << from << " to " << to;
  // mir_dequantize_c3: whole blocks.
  return verifyQuantizedShape(*this, input, "input");
}

LogicalResult GatherOp::verify() {
  RankedTensorType table = getTable().getType();
  // mir_gather_c1: axis is in [0, rank(table)) (so the table has rank >= 1).
  if (getAxis() < 0 || getAxis() >= table.getRank())
    return emitOpError("axis ")
           << getAxis() << " is out of range [0, " << table.getRank() << ")";
  // mir_gather_c2: a table of ggml blocks gathers whole rows (axis 0 of a
  // rank-2 table), dequantized to f32.
  if (isa<QuantType>(table.getElementType()) &&
      (table.getRank() != 2 || getAxis() != 0))
    return emitOpError("gathers a table of ggml blocks along axis 0 of a "
                       "rank-2 table only, got ")
           << table << " and axis " << getAxis();
  if (failed(verifyQuantizedShape(*this, table, "table")))
    return failure();
  return verifyResultMatchesInference(*this);
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType table = getTensorType(adaptor.getTable());
  RankedTensorType indices = getTensorType(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (!table || !indices || axis < 0 || axis >= table.getRank())
    return emitOptionalError(location, "invalid gather operands");
  SmallVector<int64_t> shape(table.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, table.getShape().drop_front(axis + 1));
  Type elt = table.getElementType();
  // Rows of ggml blocks come out dequantized.
  if (isa<QuantType>(elt))
    elt = Float32Type::get(context);
  inferred.push_back(RankedTensorType::get(shape, elt));
  return success();
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

/// Returns the product of the static dims of `shape`.
static int64_t staticElementCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    if (!ShapedType::isDynamic(dim))
      count *= dim;
  return count;
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  // mir_reshape_c1: one element type.
  if (input.getElementType() != result.getElementType())
    return emitOpError("requires the same element type, got ")
           << input << " and " << result;
  // mir_reshape_c2: as many dynamic dims on both sides.
  if (input.getNumDynamicDims() != result.getNumDynamicDims())
    return emitOpError("requires as many dynamic dims in the result as in the "
                       "input, got ")
           << input << " and " << result;
  // mir_reshape_c3: equal products of the static dims.
  if (staticElementCount(input.getShape()) !=
      staticElementCount(result.getShape()))
    return emitOpError("requires equal products of the static dims, got ")
           << input << " and " << result;
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

LogicalResult ReshapeOp::canonicalize(ReshapeOp op, PatternRewriter &rewriter) {
  // reshape(reshape(x)) -> reshape(x): the static products and the order of
  // the dynamic dims carry through both.
  auto producer = op.getInput().getDefiningOp<ReshapeOp>();
  if (!producer)
    return failure();
  rewriter.modifyOpInPlace(
      op, [&] { op.getInputMutable().assign(producer.getInput()); });
  return success();
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::verify() {
  ArrayRef<int64_t> permutation = getPermutation();
  int64_t rank = getInput().getType().getRank();
  // mir_transpose_c1: one entry per dim.
  if (static_cast<int64_t>(permutation.size()) != rank)
    return emitOpError("permutation has ")
           << permutation.size() << " entries for an input of rank " << rank;
  // mir_transpose_c2: a permutation of 0..rank-1.
  if (!isPermutation(permutation))
    return emitOpError("permutation is not a permutation of 0..") << rank - 1;
  return verifyResultMatchesInference(*this);
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = getTensorType(adaptor.getInput());
  ArrayRef<int64_t> permutation = adaptor.getPermutation();
  if (!input || static_cast<int64_t>(permutation.size()) != input.getRank() ||
      !isPermutation(permutation))
    return emitOptionalError(location, "invalid transpose permutation");
  SmallVector<int64_t> shape = llvm::map_to_vector(
      permutation, [&](int64_t p) { return input.getDimSize(p); });
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  for (auto [i, p] : llvm::enumerate(getPermutation()))
    if (p != static_cast<int64_t>(i))
      return {};
  return getInput();
}

LogicalResult TransposeOp::canonicalize(TransposeOp op,
                                        PatternRewriter &rewriter) {
  // transpose(transpose(x, inner), outer) -> transpose(x, inner[outer[k]]);
  // the fold then removes an identity.
  auto producer = op.getInput().getDefiningOp<TransposeOp>();
  if (!producer)
    return failure();
  SmallVector<int64_t> permutation =
      composePermutations(producer.getPermutation(), op.getPermutation());
  rewriter.modifyOpInPlace(op, [&] {
    op.getInputMutable().assign(producer.getInput());
    op.setPermutation(permutation);
  });
  return success();
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::verify() {
  RankedTensorType input = getInput().getType();
  int64_t axis = getAxis(), start = getStart(), size = getSize(),
          step = getStep();
  // mir_slice_c1: axis is in [0, rank).
  if (axis < 0 || axis >= input.getRank())
    return emitOpError("axis ")
           << axis << " is out of range [0, " << input.getRank() << ")";
  // mir_slice_c2: size is non-negative (0: an empty slice).
  if (size < 0)
    return emitOpError("requires a non-negative size, got ") << size;
  // mir_slice_c4: the step is not 0.
  if (step == 0)
    return emitOpError("requires a non-zero step");
  // The position of the last element, start + (size - 1) * step, without
  // overflow.
  int64_t span = 0, last = start;
  if (size > 0 && (llvm::MulOverflow(size - 1, step, span) ||
                   llvm::AddOverflow(start, span, last)))
    return emitOpError("slice of ")
           << size << " from " << start << " with step " << step
           << " overflows the axis positions";
  // mir_slice_c3: every position lies inside the axis.
  int64_t dim = input.getDimSize(axis);
  auto outOfRange = [&]() {
    InFlightDiagnostic diag = emitOpError("slice of ")
                              << size << " from " << start;
    if (step != 1)
      diag << " with step " << step;
    return diag;
  };
  if (!ShapedType::isDynamic(dim)) {
    int64_t begin = start < 0 ? dim + start : start;
    int64_t end = begin + (last - start);
    if (size == 0 ? begin < 0 || begin > dim
                  : begin < 0 || begin >= dim || end < 0 || end >= dim)
      return outOfRange() << " is out of range for a dim of " << dim;
  } else if (size > 0 && (start < 0) != (last < 0)) {
    // On a dynamic dim the positions must keep the sign of the start (all
    // counted from the end, or all from the front).
    return outOfRange() << (start < 0 ? " runs past the end of the axis"
                                      : " runs before the start of the axis");
  }
  return verifyResultMatchesInference(*this);
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = getTensorType(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (!input || axis < 0 || axis >= input.getRank())
    return emitOptionalError(location, "invalid slice axis");
  SmallVector<int64_t> shape(input.getShape());
  shape[axis] = adaptor.getSize();
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  int64_t dim = getInput().getType().getDimSize(getAxis());
  if (ShapedType::isDynamic(dim) || getSize() != dim || getStep() != 1)
    return {};
  if (getStart() != 0 && getStart() != -dim)
    return {};
  return getInput();
}

LogicalResult SliceOp::canonicalize(SliceOp op, PatternRewriter &rewriter) {
  // A slice of at most one element takes it with step 1.
  if (op.getStep() != 1 && op.getSize() <= 1) {
    rewriter.modifyOpInPlace(op, [&] { op.setStep(1); });
    return success();
  }
  // slice(slice(x)) on one axis -> slice(x) at the inner start plus the
  // outer start times the inner step, with the product of the steps, once
  // both starts are non-negative. The outer start is relative to the static
  // size of the inner slice; the inner one needs a static dim when negative.
  auto producer = op.getInput().getDefiningOp<SliceOp>();
  if (!producer || producer.getAxis() != op.getAxis())
    return failure();
  int64_t innerStart = producer.getStart();
  if (innerStart < 0) {
    int64_t dim = producer.getInput().getType().getDimSize(op.getAxis());
    if (ShapedType::isDynamic(dim))
      return failure();
    innerStart += dim;
  }
  int64_t outerStart = op.getStart();
  if (outerStart < 0)
    outerStart += producer.getSize();
  int64_t innerStep = producer.getStep(), outerStep = op.getStep();
  int64_t step = innerStep * outerStep;
  int64_t start = innerStart + outerStart * innerStep;
  // An empty outer slice with steps may start one past the inner range,
  // which need not be a position of the axis: keep the two.
  if ((innerStep != 1 || outerStep != 1) && op.getSize() == 0)
    return failure();
  rewriter.modifyOpInPlace(op, [&] {
    op.getInputMutable().assign(producer.getInput());
    op.setStart(start);
    op.setStep(step);
  });
  return success();
}

//===----------------------------------------------------------------------===//
// SplitOp
//===----------------------------------------------------------------------===//

LogicalResult SplitOp::verify() {
  RankedTensorType input = getInput().getType();
  int64_t rank = input.getRank();
  // mir_split_c1: axis is in [-rank, rank).
  std::optional<int64_t> axis = normalizeAxis(getAxis(), rank);
  if (!axis)
    return emitOpError("axis ")
           << getAxis() << " is out of range [" << -rank << ", " << rank << ")";
  // mir_split_c2: at least one size, each >= 0.
  ArrayRef<int64_t> sizes = getSizes();
  if (sizes.empty())
    return emitOpError("requires at least one size");
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0)
      return emitOpError("requires non-negative sizes, got ") << size;
    if (llvm::AddOverflow(total, size, total))
      return emitOpError("sizes add up past 2^63 - 1");
  }
  // mir_split_c3: on a static dim the sizes add up to it.
  int64_t dim = input.getDimSize(*axis);
  if (!ShapedType::isDynamic(dim) && total != dim)
    return emitOpError("sizes add up to ")
           << total << ", not to the dim of " << dim << " they split";
  return verifyResultMatchesInference(*this);
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = getTensorType(adaptor.getInput());
  std::optional<int64_t> axis =
      input ? normalizeAxis(adaptor.getAxis(), input.getRank()) : std::nullopt;
  if (!axis)
    return emitOptionalError(location, "invalid split axis");
  for (int64_t size : adaptor.getSizes()) {
    SmallVector<int64_t> shape(input.getShape());
    shape[*axis] = size;
    inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  }
  return success();
}

LogicalResult SplitOp::fold(FoldAdaptor adaptor,
                            SmallVectorImpl<OpFoldResult> &results) {
  // A single piece of a static dim is the whole input.
  if (getNumResults() != 1 || getResult(0).getType() != getInput().getType())
    return failure();
  results.push_back(getInput());
  return success();
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// TileOp, PadOp, OneHotOp
//===----------------------------------------------------------------------===//

LogicalResult TileOp::verify() {
  int64_t rank = getInput().getType().getRank();
  ArrayRef<int64_t> multiples = getMultiples();
  // mir_tile_c1: one multiple >= 1 per dim.
  if (static_cast<int64_t>(multiples.size()) != rank)
    return emitOpError("expects ")
           << rank << " multiples (one per dim), got " << multiples.size();
  for (int64_t m : multiples)
    if (m < 1)
      return emitOpError("multiples must be >= 1, got ") << m;
  return verifyResultMatchesInference(*this);
}

LogicalResult TileOp::inferReturnTypes(MLIRContext *context,
                                       std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = getTensorType(adaptor.getInput());
  ArrayRef<int64_t> multiples = adaptor.getMultiples();
  if (!input || static_cast<int64_t>(multiples.size()) != input.getRank())
    return emitOptionalError(location, "invalid tile operands");
  SmallVector<int64_t> shape;
  for (auto [d, m] : llvm::zip(input.getShape(), multiples)) {
    int64_t size;
    if (ShapedType::isDynamic(d) || m < 1 ||
        __builtin_mul_overflow(d, m, &size))
      size = ShapedType::kDynamic;
    shape.push_back(size);
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

OpFoldResult TileOp::fold(FoldAdaptor adaptor) {
  if (llvm::all_of(getMultiples(), [](int64_t m) { return m == 1; }))
    return getInput();
  return {};
}

LogicalResult PadOp::verify() {
  int64_t rank = getInput().getType().getRank();
  // mir_pad_c1: one low and one high pad >= 0 per dim.
  if (static_cast<int64_t>(getLow().size()) != rank ||
      static_cast<int64_t>(getHigh().size()) != rank)
    return emitOpError("expects ")
           << rank << " low and high pads (one per dim), got "
           << getLow().size() << " and " << getHigh().size();
  for (int64_t p : llvm::concat<const int64_t>(getLow(), getHigh()))
    if (p < 0)
      return emitOpError("pads must be >= 0, got ") << p;
  // mir_pad_c2: the value is a number.
  if (std::isnan(getValue().convertToDouble()) &&
      !isa<FloatType>(getInput().getType().getElementType()))
    return emitOpError("pads an integer tensor with NaN");
  return verifyResultMatchesInference(*this);
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *context,
                                      std::optional<Location> location,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = getTensorType(adaptor.getInput());
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
  if (!input || static_cast<int64_t>(low.size()) != input.getRank() ||
      static_cast<int64_t>(high.size()) != input.getRank())
    return emitOptionalError(location, "invalid pad operands");
  SmallVector<int64_t> shape;
  for (auto [d, l, h] : llvm::zip(input.getShape(), low, high)) {
    int64_t size;
    if (ShapedType::isDynamic(d) || l < 0 || h < 0 ||
        __builtin_add_overflow(d, l, &size) ||
        __builtin_add_overflow(size, h, &size))
      size = ShapedType::kDynamic;
    shape.push_back(size);
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

OpFoldResult PadOp::fold(FoldAdaptor adaptor) {
  auto zero = [](int64_t p) { return p == 0; };
  if (llvm::all_of(getLow(), zero) && llvm::all_of(getHigh(), zero))
    return getInput();
  return {};
}

LogicalResult OneHotOp::verify() {
  RankedTensorType indices = getIndices().getType();
  RankedTensorType result = getResult().getType();
  // mir_one_hot_c1: depth >= 1.
  if (getDepth() < 1)
    return emitOpError("depth must be >= 1, got ") << getDepth();
  // mir_one_hot_c2: axis is in [-rank - 1, rank] of the indices.
  std::optional<int64_t> axis = normalizeAxis(getAxis(), indices.getRank() + 1);
  if (!axis)
    return emitOpError("axis ")
           << getAxis() << " is out of range [" << -indices.getRank() - 1
           << ", " << indices.getRank() + 1 << ")";
  // mir_one_hot_c3: the result is the indices' shape with depth at axis.
  SmallVector<int64_t> shape(indices.getShape());
  shape.insert(shape.begin() + *axis, getDepth());
  if (failed(verifyCompatibleShape(result.getShape(), shape)))
    return emitOpError("result type ")
           << result << " does not match the shape "
           << RankedTensorType::get(shape, result.getElementType());
  return success();
}

LogicalResult ConcatOp::verify() {
  // mir_concat_c1: at least one input.
  if (getInputs().empty())
    return emitOpError("requires at least one input");
  auto first = cast<RankedTensorType>(getInputs().front().getType());
  int64_t rank = first.getRank(), axis = getAxis();
  // mir_concat_c2: one rank and one element type.
  for (Value input : getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getRank() != rank ||
        type.getElementType() != first.getElementType())
      return emitOpError("requires inputs of the same rank and element type, "
                         "got ")
             << first << " and " << type;
  }
  // mir_concat_c3: axis is in [0, rank).
  if (axis < 0 || axis >= rank)
    return emitOpError("axis ")
           << axis << " is out of range [0, " << rank << ")";
  // mir_concat_c4: the other dims match.
  for (Value input : getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis &&
          !areDimsCompatible(type.getDimSize(d), first.getDimSize(d)))
        return emitOpError("inputs differ in dim ")
               << d << ", which is not the concatenation axis: " << first
               << " and " << type;
  }
  return verifyResultMatchesInference(*this);
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  RankedTensorType first = inputs.empty() ? nullptr : getTensorType(inputs[0]);
  int64_t axis = adaptor.getAxis();
  if (!first || axis < 0 || axis >= first.getRank())
    return emitOptionalError(location, "invalid concat operands");
  SmallVector<int64_t> shape(first.getShape());
  for (Value input : inputs.drop_front()) {
    RankedTensorType type = getTensorType(input);
    if (!type || type.getRank() != first.getRank())
      return emitOptionalError(location, "invalid concat operands");
    for (int64_t d = 0, e = first.getRank(); d < e; ++d) {
      int64_t dim = type.getDimSize(d);
      if (d != axis)
        shape[d] = mergeDims(shape[d], dim);
      else if (ShapedType::isDynamic(shape[d]) || ShapedType::isDynamic(dim))
        shape[d] = ShapedType::kDynamic;
      else
        shape[d] += dim;
    }
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  return {};
}

//===----------------------------------------------------------------------===//
// BroadcastOp and CastOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  // mir_broadcast_c1: one element type.
  if (input.getElementType() != result.getElementType())
    return emitOpError("requires the same element type, got ")
           << input << " and " << result;
  // mir_broadcast_c2: the result rank is at least the input rank.
  if (result.getRank() < input.getRank())
    return emitOpError("cannot broadcast to a lower rank: ")
           << input << " to " << result;
  // mir_broadcast_c3, mir_broadcast_c4: each input dim is 1 or matches, and
  // each dynamic result dim comes from an input dim that is not a static 1.
  if (!isBroadcastableTo(input.getShape(), result.getShape()))
    return emitOpError("cannot broadcast ") << input << " to " << result;
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto splat = dyn_cast_or_null<SplatElementsAttr>(adaptor.getInput());
  if (splat && getType().hasStaticShape())
    return DenseElementsAttr::get(getType(), splat.getSplatValue<Attribute>());
  return {};
}

LogicalResult CastOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  // mir_cast_c1: one shape.
  if (!areShapesCompatible(input.getShape(), result.getShape()))
    return emitOpError("requires the same shape, got ")
           << input << " and " << result;
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// FusedMatmulOp
//===----------------------------------------------------------------------===//

LogicalResult FusedMatmulOp::verify() {
  RankedTensorType input = getInput().getType(), weight = getWeight().getType();
  // mir_fused_matmul_c1: input has rank >= 2, weight has rank 2.
  if (input.getRank() < 2 || weight.getRank() != 2)
    return emitOpError("requires an input of rank >= 2 and a rank-2 weight, "
                       "got ")
           << input << " and " << weight;
  // mir_fused_matmul_c2: one element type (the weight may be stored in lower
  // precision when transposed).
  for (Value operand : getOperands()) {
    Type elt = getElementTypeOrSelf(operand.getType());
    if (operand == getWeight() && getTransposeRhs() &&
        isLowPrecisionWeightType(elt))
      continue;
    if (elt != input.getElementType())
      return emitOpError("requires operands of one element type, got ")
             << operand.getType() << " with input " << input;
  }
  if (failed(verifyQuantizedShape(*this, weight, "weight")))
    return failure();
  // mir_fused_matmul_c3: K matches.
  if (failed(verifyContraction(*this, input, weight, /*transposeLhs=*/false,
                               getTransposeRhs())))
    return failure();
  // mir_fused_matmul_c4: bias is [N].
  int64_t n = weight.getDimSize(getTransposeRhs() ? 0 : 1);
  if (Value bias = getBias()) {
    auto type = cast<RankedTensorType>(bias.getType());
    if (type.getRank() != 1 || !areDimsCompatible(type.getDimSize(0), n))
      return emitOpError("bias must be [N] = [")
             << dimToString(n) << "], got " << type;
  }
  // mir_fused_matmul_c5: residual has the result type.
  if (Value residual = getResidual();
      residual && residual.getType() != getType())
    return emitOpError("residual must have the result type ")
           << getType() << ", got " << residual.getType();
  if (failed(verifyRoundTo(*this, getRoundTo())))
    return failure();
  return verifyResultMatchesInference(*this);
}

LogicalResult FusedMatmulOp::inferReturnTypes(MLIRContext *context,
                                              std::optional<Location> location,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = getTensorType(adaptor.getInput());
  RankedTensorType weight = getTensorType(adaptor.getWeight());
  if (!input || !weight)
    return emitOptionalError(location, "expected ranked tensor operands");
  FailureOr<SmallVector<int64_t>> shape =
      matmulResultShape(input.getShape(), weight.getShape(),
                        /*transposeLhs=*/false, adaptor.getTransposeRhs());
  if (failed(shape))
    return emitOptionalError(location, "invalid fused_matmul operand shapes");
  inferred.push_back(RankedTensorType::get(*shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// FusedResidualRmsNormOp and FusedResidualLayerNormOp
//===----------------------------------------------------------------------===//

LogicalResult FusedResidualRmsNormOp::verify() {
  // mir_fused_residual_rms_norm_c1, mir_fused_residual_rms_norm_c2: weight is
  // [last dim] of the input's element type.
  if (failed(verifyLastDimVector(*this, getInput().getType(), getWeight(),
                                 "weight")))
    return failure();
  // mir_fused_residual_rms_norm_c3: epsilon is positive.
  if (failed(verifyRoundTo(*this, getRoundTo())))
    return failure();
  return verifyPositive(*this, getEpsilon(), "epsilon");
}

LogicalResult FusedResidualLayerNormOp::verify() {
  // mir_fused_residual_layer_norm_c1, mir_fused_residual_layer_norm_c2: gamma
  // and beta are [last dim] of the input's element type.
  if (failed(verifyLastDimVector(*this, getInput().getType(), getGamma(),
                                 "gamma")) ||
      failed(
          verifyLastDimVector(*this, getInput().getType(), getBeta(), "beta")))
    return failure();
  // mir_fused_residual_layer_norm_c3: epsilon is positive.
  if (failed(verifyRoundTo(*this, getRoundTo())))
    return failure();
  return verifyPositive(*this, getEpsilon(), "epsilon");
}

//===----------------------------------------------------------------------===//
// FusedGluOp
//===----------------------------------------------------------------------===//

LogicalResult FusedGluOp::verify() {
  RankedTensorType input = getGateUp().getType();
  // mir_fused_glu_c1: rank >= 1.
  if (input.getRank() < 1)
    return emitOpError("requires an input of rank >= 1");
  // mir_fused_glu_c2: the last dim is even.
  int64_t last = input.getDimSize(input.getRank() - 1);
  if (!ShapedType::isDynamic(last) && last % 2 != 0)
    return emitOpError("requires an even last dim (gate and up halves), got ")
           << last;
  if (failed(verifyRoundTo(*this, getRoundTo())))
    return failure();
  return verifyResultMatchesInference(*this);
}

LogicalResult FusedGluOp::inferReturnTypes(MLIRContext *context,
                                           std::optional<Location> location,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = getTensorType(adaptor.getGateUp());
  if (!input || input.getRank() < 1)
    return emitOptionalError(location, "invalid fused_glu operand");
  SmallVector<int64_t> shape(input.getShape());
  if (!ShapedType::isDynamic(shape.back()))
    shape.back() /= 2;
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  RankedTensorType q = getQuery().getType(), k = getKey().getType(),
                   v = getValue().getType();
  // mir_attention_c1: q, k, v are rank 3 with one element type.
  if (q.getRank() != 3 || k.getRank() != 3 || v.getRank() != 3)
    return emitOpError("requires rank-3 query, key and value, got ")
           << q << ", " << k << " and " << v;
  // Keys and values share one element type: the query's, or f16 / bf16
  // beside an f32 query (a KV cache kept in half precision).
  Type qe = q.getElementType(), ke = k.getElementType();
  if (v.getElementType() != ke ||
      (ke != qe && !(qe.isF32() && (ke.isF16() || ke.isBF16()))))
    return emitOpError("requires key and value of one element type, the "
                       "query's or f16/bf16 beside an f32 query, got ")
           << q << ", " << k << " and " << v;
  // mir_attention_c2, c3, c7, c8, c9.
  int64_t numHeads = getNumHeads(), numKvHeads = getNumKvHeads(),
          headDim = getHeadDim();
  if (failed(verifyAttentionAttrs(*this, numHeads, numKvHeads, headDim,
                                  getScale(), getSoftcap(), getMaskKind(),
                                  getWindow(), getMask())))
    return failure();
  // mir_attention_c4: query is [B, Tq, num_heads*head_dim].
  if (!areDimsCompatible(q.getDimSize(2), numHeads * headDim))
    return emitOpError("query last dim must be num_heads*head_dim = ")
           << numHeads * headDim << ", got " << q;
  // mir_attention_c5: key and value are [B, Tk, num_kv_heads*head_dim].
  if (!areDimsCompatible(k.getDimSize(2), numKvHeads * headDim) ||
      !areDimsCompatible(v.getDimSize(2), numKvHeads * headDim))
    return emitOpError("key and value last dims must be "
                       "num_kv_heads*head_dim = ")
           << numKvHeads * headDim << ", got " << k << " and " << v;
  // mir_attention_c6: one batch; key and value have one length.
  if (!areDimsCompatible(q.getDimSize(0), k.getDimSize(0)) ||
      !areDimsCompatible(q.getDimSize(0), v.getDimSize(0)) ||
      !areDimsCompatible(k.getDimSize(0), v.getDimSize(0)) ||
      !areDimsCompatible(k.getDimSize(1), v.getDimSize(1)))
    return emitOpError("requires one batch size and key and value of one "
                       "length, got ")
           << q << ", " << k << " and " << v;
  // mir_attention_c10: the mask is [B, Tk].
  if (Value mask = getMask())
    return verifyMaskShape(*this, mask,
                           mergeDims(q.getDimSize(0), k.getDimSize(0)),
                           k.getDimSize(1));
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionBlockOp
//===----------------------------------------------------------------------===//

/// Checks that an optional 1-D operand is `[size]`.
static LogicalResult verifyVector(Operation *op, Value vector, int64_t size,
                                  StringRef name, StringRef sizeName) {
  if (!vector)
    return success();
  auto type = cast<RankedTensorType>(vector.getType());
  if (type.getRank() != 1 || !areDimsCompatible(type.getDimSize(0), size))
    return op->emitOpError() << name << " must be [" << sizeName << "] = ["
                             << dimToString(size) << "], got " << type;
  return success();
}

LogicalResult AttentionBlockOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType wQkv = getWQkv().getType(), wO = getWO().getType();
  // mir_attention_block_c1: input is rank 3, the weights rank 2.
  if (input.getRank() != 3 || wQkv.getRank() != 2 || wO.getRank() != 2)
    return emitOpError("requires a rank-3 input and rank-2 w_qkv and w_o, got ")
           << input << ", " << wQkv << " and " << wO;
  // mir_attention_block_c2, c3, c7, c8, c9.
  int64_t numHeads = getNumHeads(), numKvHeads = getNumKvHeads(),
          headDim = getHeadDim();
  if (failed(verifyAttentionAttrs(*this, numHeads, numKvHeads, headDim,
                                  getScale(), getSoftcap(), getMaskKind(),
                                  getWindow(), getMask())))
    return failure();
  int64_t hidden = input.getDimSize(2);
  int64_t qkvRows = (numHeads + 2 * numKvHeads) * headDim;
  // mir_attention_block_c4: w_qkv is [(num_heads + 2*num_kv_heads)*head_dim,
  // H].
  if (!areShapesCompatible(wQkv.getShape(), {qkvRows, hidden}))
    return emitOpError("w_qkv must be [(num_heads + 2*num_kv_heads)*head_dim, "
                       "H] = [")
           << qkvRows << ", " << dimToString(hidden) << "], got " << wQkv;
  // mir_attention_block_c5: w_o is [H_out, num_heads*head_dim].
  if (!areDimsCompatible(wO.getDimSize(1), numHeads * headDim))
    return emitOpError("w_o must be [H_out, num_heads*head_dim = ")
           << numHeads * headDim << "], got " << wO;
  // mir_attention_block_c6: the biases are [rows of w_qkv] and [H_out].
  if (failed(verifyVector(*this, getQkvBias(), qkvRows, "qkv_bias",
                          "(num_heads + 2*num_kv_heads)*head_dim")) ||
      failed(verifyVector(*this, getOutBias(), wO.getDimSize(0), "out_bias",
                          "H_out")))
    return failure();
  // mir_attention_block_c10: the mask is [B, T].
  if (Value mask = getMask();
      mask && failed(verifyMaskShape(*this, mask, input.getDimSize(0),
                                     input.getDimSize(1))))
    return failure();
  // mir_attention_block_c11: q_norm and k_norm come together, each
  // [head_dim].
  if (static_cast<bool>(getQNorm()) != static_cast<bool>(getKNorm()))
    return emitOpError("requires q_norm and k_norm together");
  if (failed(verifyVector(*this, getQNorm(), headDim, "q_norm", "head_dim")) ||
      failed(verifyVector(*this, getKNorm(), headDim, "k_norm", "head_dim")))
    return failure();
  // mir_attention_block_c12: rotary_dim is 0 or even in (0, head_dim].
  int64_t rotaryDim = getRotaryDim();
  if (rotaryDim != 0 && failed(verifyRotaryDim(*this, rotaryDim, headDim)))
    return failure();
  // mir_attention_block_c13: positions iff rotary_dim > 0, [B, T] or [T].
  if ((rotaryDim > 0) != static_cast<bool>(getPositions()))
    return emitOpError("requires positions exactly when rotary_dim > 0, got "
                       "rotary_dim = ")
           << rotaryDim << (getPositions() ? " with" : " without")
           << " positions";
  if (getPositions() && failed(verifyPositions(*this, getPositions(), input)))
    return failure();
  // mir_attention_block_c14: inv_freq only with RoPE, [rotary_dim / 2].
  if (getInvFreq()) {
    if (rotaryDim == 0)
      return emitOpError("inv_freq requires rotary_dim > 0");
    if (failed(verifyInvFreq(*this, getInvFreq(), rotaryDim)))
      return failure();
  }
  // mir_attention_block_c15: rope_theta and norm_epsilon are positive.
  if (failed(verifyPositive(*this, getRopeTheta(), "rope_theta")) ||
      failed(verifyPositive(*this, getNormEpsilon(), "norm_epsilon")))
    return failure();
  // mir_attention_block_c16: the float operands (but inv_freq) share the
  // input's element type; the projection weights may be kept as stored
  // (their rows a whole number of blocks) when the input is f32.
  for (Value operand : {getWQkv(), getWO(), getQNorm(), getKNorm(),
                        getQkvBias(), getOutBias()}) {
    if (!operand)
      continue;
    Type elt = getElementTypeOrSelf(operand.getType());
    if ((operand == getWQkv() || operand == getWO()) &&
        input.getElementType().isF32() && isLowPrecisionWeightType(elt)) {
      if (failed(verifyQuantizedShape(*this,
                                      cast<RankedTensorType>(operand.getType()),
                                      operand == getWQkv() ? "w_qkv" : "w_o")))
        return failure();
      continue;
    }
    if (elt != input.getElementType())
      return emitOpError("requires weights of the input's element type, got ")
             << operand.getType() << " with input " << input;
  }
  if (failed(verifyRoundTo(*this, getRoundTo())))
    return failure();
  return verifyResultMatchesInference(*this);
}

LogicalResult AttentionBlockOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = getTensorType(adaptor.getInput());
  RankedTensorType wO = getTensorType(adaptor.getWO());
  if (!input || !wO || input.getRank() != 3 || wO.getRank() != 2)
    return emitOptionalError(location, "invalid attention_block operands");
  inferred.push_back(RankedTensorType::get(
      {input.getDimSize(0), input.getDimSize(1), wO.getDimSize(0)},
      input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ElementwiseOp and YieldOp
//===----------------------------------------------------------------------===//

LogicalResult ElementwiseOp::verify() {
  // mir_elementwise_c1: at least one input.
  if (getInputs().empty())
    return emitOpError("requires at least one input");
  // mir_elementwise_c2: the result shape is the inputs' broadcast shape.
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value input : getInputs())
    shapes.push_back(cast<RankedTensorType>(input.getType()).getShape());
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(shapes);
  if (failed(shape))
    return emitOpError("inputs are not broadcast-compatible");
  if (ArrayRef<int64_t>(*shape) != getType().getShape())
    return emitOpError("result shape must be the broadcast of the input "
                       "shapes, ")
           << RankedTensorType::get(*shape, getType().getElementType())
           << ", got " << getType();
  // mir_elementwise_c3: one block argument per input, of its element type.
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body must have one argument per input (")
           << getInputs().size() << "), got " << body.getNumArguments();
  for (auto [input, arg] : llvm::zip(getInputs(), body.getArguments()))
    if (arg.getType() != getElementTypeOrSelf(input.getType()))
      return emitOpError("body argument ")
             << arg.getArgNumber() << " must have the element type of input "
             << arg.getArgNumber() << ", got " << arg.getType() << " for "
             << input.getType();
  return success();
}

LogicalResult ElementwiseOp::verifyRegions() {
  // mir_elementwise_c4: the body holds scalar arith and math ops without
  // regions, and ends in mir.yield (mir_elementwise_c5, see YieldOp).
  for (Operation &op : getBody().front()) {
    if (isa<YieldOp>(op))
      continue;
    bool scalar =
        llvm::all_of(op.getOperandTypes(),
                     [](Type t) { return t.isIntOrIndexOrFloat(); }) &&
        llvm::all_of(op.getResultTypes(),
                     [](Type t) { return t.isIntOrIndexOrFloat(); });
    if (!isa_and_nonnull<arith::ArithDialect, math::MathDialect>(
            op.getDialect()) ||
        op.getNumRegions() != 0 || !scalar)
      return emitOpError("body may hold only scalar arith and math ops "
                         "without regions, got ")
             << op.getName();
  }
  return success();
}

LogicalResult YieldOp::verify() {
  // mir_elementwise_c5: one value of the result element type.
  auto parent = cast<ElementwiseOp>((*this)->getParentOp());
  Type expected = parent.getType().getElementType();
  if (getValue().getType() != expected)
    return emitOpError("yields ")
           << getValue().getType() << " but the result element type is "
           << expected;
  return success();
}

#define GET_OP_CLASSES
#include "RLX/Dialect/MIR/IR/MIROps.cpp.inc"
