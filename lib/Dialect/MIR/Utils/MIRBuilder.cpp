//===- MIRBuilder.cpp - Terse construction of MIR ops ---------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::rlx;

Operation *MIRBuilder::create(StringRef name, TypeRange results,
                              ValueRange operands,
                              ArrayRef<NamedAttribute> attrs) {
  OperationState state(loc, name);
  state.addTypes(results);
  state.addOperands(operands);
  state.addAttributes(attrs);
  return b.create(state);
}

Value MIRBuilder::splat(double value, RankedTensorType type) {
  Type elt = type.getElementType();
  Attribute v;
  if (isa<FloatType>(elt))
    v = DenseElementsAttr::get(type, b.getFloatAttr(elt, value));
  else
    v = DenseElementsAttr::get(
        type, b.getIntegerAttr(elt, static_cast<int64_t>(value)));
  return create("mir.constant", type, {}, {attr("value", v)})->getResult(0);
}

Value MIRBuilder::scalar(double value, Type elementType) {
  return splat(value, RankedTensorType::get({}, elementType));
}

/// The params `values` join at load time, or none: each a mir.param without
/// sources, of one element type; or each the mir.dequantize of one, of one
/// stored type (`stored` set), joined only along rows (the blocks run along
/// a row).
static SmallVector<mir::ParamOp> paramsToJoin(ArrayRef<Value> values,
                                              int64_t axis, bool &stored) {
  SmallVector<mir::ParamOp> params;
  stored = !values.empty() && values[0].getDefiningOp<mir::DequantizeOp>();
  for (Value v : values) {
    if (stored) {
      auto dq = v.getDefiningOp<mir::DequantizeOp>();
      if (!dq || axis != 0 ||
          MIRBuilder::typeOf(v).getElementType() !=
              MIRBuilder::typeOf(values[0]).getElementType())
        return {};
      v = dq.getInput();
    }
    auto op = v.getDefiningOp<mir::ParamOp>();
    if (!op || op.getSources() ||
        (!params.empty() &&
         op.getType().getElementType() != params[0].getType().getElementType()))
      return {};
    params.push_back(op);
  }
  return params;
}

bool MIRBuilder::joinsAtLoad(ArrayRef<Value> params, int64_t axis) {
  bool stored;
  return !paramsToJoin(params, axis, stored).empty();
}

Value MIRBuilder::concatParams(ArrayRef<Value> params, int64_t axis) {
  bool stored;
  SmallVector<mir::ParamOp> ps = paramsToJoin(params, axis, stored);
  if (ps.empty())
    return concat(params, axis);
  SmallVector<Attribute> names;
  SmallVector<std::string> parts;
  SmallVector<int64_t> sizes;
  for (mir::ParamOp op : ps) {
    names.push_back(op.getNameAttr());
    parts.push_back(op.getName().str());
    sizes.push_back(op.getType().getDimSize(axis));
  }
  SmallVector<int64_t> shape(ps[0].getType().getShape());
  shape[axis] = llvm::sum_of(sizes);
  Value joined =
      create("mir.param", ps[0].getType().clone(shape), {},
             {attr("name", b.getStringAttr(llvm::join(parts, "+"))),
              attr("sources", b.getArrayAttr(names)), i64("concat_axis", axis),
              attr("source_sizes", b.getDenseI64ArrayAttr(sizes))})
          ->getResult(0);
  // Weights kept as stored: joined as stored, widened where read.
  if (stored)
    return create("mir.dequantize", withShape(params[0], shape), {joined})
        ->getResult(0);
  return joined;
}

Value MIRBuilder::matmul(Value x, Value w, bool transposeRhs) {
  auto shape = mir::matmulResultShape(
      typeOf(x).getShape(), typeOf(w).getShape(), false, transposeRhs);
  assert(succeeded(shape) && "matmul shapes checked by the HIR verifier");
  SmallVector<NamedAttribute> attrs;
  if (transposeRhs)
    attrs.push_back(unit("transpose_rhs"));
  return create("mir.matmul", withShape(x, *shape), {x, w}, attrs)
      ->getResult(0);
}

Value MIRBuilder::batchMatmul(Value a, Value w, bool transposeRhs) {
  auto shape =
      mir::matmulResultShape(typeOf(a).getShape(), typeOf(w).getShape(), false,
                             transposeRhs, /*batched=*/true);
  assert(succeeded(shape) && "batch_matmul shapes");
  SmallVector<NamedAttribute> attrs;
  if (transposeRhs)
    attrs.push_back(unit("transpose_rhs"));
  return create("mir.batch_matmul", withShape(a, *shape), {a, w}, attrs)
      ->getResult(0);
}

Value MIRBuilder::fusedMatmul(Value x, Value w, Value bias, Value residual,
                              Activation act, bool transposeRhs, Type roundTo) {
  auto shape = mir::matmulResultShape(
      typeOf(x).getShape(), typeOf(w).getShape(), false, transposeRhs);
  assert(succeeded(shape) && "matmul shapes checked by the HIR verifier");
  SmallVector<Value> operands = {x, w};
  if (bias)
    operands.push_back(bias);
  if (residual)
    operands.push_back(residual);
  SmallVector<NamedAttribute> attrs = {
      attr("operandSegmentSizes",
           b.getDenseI32ArrayAttr({1, 1, bias ? 1 : 0, residual ? 1 : 0})),
      attr("activation", mir::ActivationAttr::get(b.getContext(), act))};
  if (transposeRhs)
    attrs.push_back(unit("transpose_rhs"));
  if (roundTo)
    attrs.push_back(attr("round_to", TypeAttr::get(roundTo)));
  return create("mir.fused_matmul", withShape(x, *shape), operands, attrs)
      ->getResult(0);
}

Value MIRBuilder::binary(StringRef name, Value a, Value c) {
  auto shape = mir::broadcastShapes(typeOf(a).getShape(), typeOf(c).getShape());
  assert(succeeded(shape) && "broadcastable operands");
  return create(name, withShape(a, *shape), {a, c})->getResult(0);
}

Value MIRBuilder::unary(StringRef name, Value x,
                        ArrayRef<NamedAttribute> attrs) {
  return create(name, x.getType(), {x}, attrs)->getResult(0);
}

Value MIRBuilder::activation(Value x, Activation act) {
  switch (act) {
  case Activation::None:
    return x;
  case Activation::Relu:
    return unary("mir.relu", x);
  case Activation::Gelu:
    return unary("mir.gelu", x);
  case Activation::GeluTanh:
    return unary("mir.gelu", x, {unit("tanh_approx")});
  case Activation::Silu:
    return unary("mir.silu", x);
  case Activation::Sigmoid:
    return unary("mir.sigmoid", x);
  case Activation::Tanh:
    return unary("mir.tanh", x);
  case Activation::QuickGelu:
  case Activation::Relu2:
  case Activation::Relu6:
  case Activation::LeakyRelu:
  case Activation::Mish:
  case Activation::Gelu10:
  case Activation::Laplace:
  case Activation::Hardswish:
  case Activation::SqrtSoftplus:
    return unary(
        "mir.activation", x,
        {attr("activation", mir::ActivationAttr::get(b.getContext(), act))});
  }
  llvm_unreachable("unknown activation");
}

Value MIRBuilder::compare(Value a, Value c, CmpPredicate pred) {
  auto shape = mir::broadcastShapes(typeOf(a).getShape(), typeOf(c).getShape());
  assert(succeeded(shape) && "broadcastable operands");
  return create("mir.compare", RankedTensorType::get(*shape, b.getI1Type()),
                {a, c},
                {attr("predicate",
                      mir::CmpPredicateAttr::get(b.getContext(), pred))})
      ->getResult(0);
}

Value MIRBuilder::select(Value cond, Value a, Value c) {
  auto shape = mir::broadcastShapes(
      {typeOf(cond).getShape(), typeOf(a).getShape(), typeOf(c).getShape()});
  assert(succeeded(shape) && "broadcastable operands");
  return create("mir.select", withShape(a, *shape), {cond, a, c})->getResult(0);
}

Value MIRBuilder::iota(RankedTensorType type, int64_t axis) {
  return create("mir.iota", type, {}, {i64("axis", axis)})->getResult(0);
}

Value MIRBuilder::rmsNorm(Value x, Value w, float eps, bool unitOffset) {
  SmallVector<NamedAttribute> attrs = {f32("epsilon", eps)};
  if (unitOffset)
    attrs.push_back(unit("unit_offset"));
  return create("mir.rms_norm", x.getType(), {x, w}, attrs)->getResult(0);
}

Value MIRBuilder::layerNorm(Value x, Value gamma, Value beta, float eps) {
  return create("mir.layer_norm", x.getType(), {x, gamma, beta},
                {f32("epsilon", eps)})
      ->getResult(0);
}

std::pair<Value, Value> MIRBuilder::fusedResidualRmsNorm(Value x,
                                                         Value residual,
                                                         Value w, float eps,
                                                         bool unitOffset) {
  SmallVector<NamedAttribute> attrs = {f32("epsilon", eps)};
  if (unitOffset)
    attrs.push_back(unit("unit_offset"));
  Operation *op = create("mir.fused_residual_rms_norm",
                         {x.getType(), x.getType()}, {x, residual, w}, attrs);
  return {op->getResult(0), op->getResult(1)};
}

std::pair<Value, Value>
MIRBuilder::fusedResidualLayerNorm(Value x, Value residual, Value gamma,
                                   Value beta, float eps) {
  Operation *op =
      create("mir.fused_residual_layer_norm", {x.getType(), x.getType()},
             {x, residual, gamma, beta}, {f32("epsilon", eps)});
  return {op->getResult(0), op->getResult(1)};
}

Value MIRBuilder::softmax(Value x, int64_t axis) {
  return create("mir.softmax", x.getType(), {x}, {i64("axis", axis)})
      ->getResult(0);
}

Value MIRBuilder::rope(Value x, Value positions, Value invFreq, int64_t headDim,
                       int64_t rotaryDim, float theta, RopeStyle style) {
  SmallVector<Value> operands = {x, positions};
  if (invFreq)
    operands.push_back(invFreq);
  return create("mir.rope", x.getType(), operands,
                {i64("head_dim", headDim), i64("rotary_dim", rotaryDim),
                 f32("theta", theta),
                 attr("style", mir::RopeStyleAttr::get(b.getContext(), style))})
      ->getResult(0);
}

Value MIRBuilder::gather(Value table, Value indices) {
  SmallVector<int64_t> shape(typeOf(indices).getShape());
  llvm::append_range(shape, typeOf(table).getShape().drop_front());
  // Rows of a table of ggml blocks come out decoded, in f32.
  Type element = typeOf(table).getElementType();
  if (isa<mir::QuantType>(element))
    element = b.getF32Type();
  return create("mir.gather", RankedTensorType::get(shape, element),
                {table, indices}, {i64("axis", 0)})
      ->getResult(0);
}

Value MIRBuilder::fusedGlu(Value gateUp, Activation act) {
  SmallVector<int64_t> shape(typeOf(gateUp).getShape());
  if (!ShapedType::isDynamic(shape.back()))
    shape.back() /= 2;
  return create("mir.fused_glu", withShape(gateUp, shape), {gateUp},
                {attr("activation",
                      mir::ActivationAttr::get(b.getContext(), act))})
      ->getResult(0);
}

std::pair<Value, Value> MIRBuilder::topK(Value x, int64_t k) {
  SmallVector<int64_t> shape(typeOf(x).getShape());
  shape.back() = k;
  Operation *op = create(
      "mir.top_k",
      {withShape(x, shape), RankedTensorType::get(shape, b.getI64Type())}, {x},
      {i64("k", k)});
  return {op->getResult(0), op->getResult(1)};
}

Value MIRBuilder::groupedMatmul(Value x, Value weights, Value groups,
                                Value order, Value offsets) {
  SmallVector<int64_t> shape(typeOf(x).getShape());
  shape.back() = typeOf(weights).getDimSize(1);
  SmallVector<Value> operands = {x, weights, groups};
  int32_t sorted = order ? 1 : 0;
  if (order)
    operands.append({order, offsets});
  return create("mir.grouped_matmul", withShape(x, shape), operands,
                {attr("operandSegmentSizes",
                      b.getDenseI32ArrayAttr({1, 1, 1, sorted, sorted}))})
      ->getResult(0);
}

std::pair<Value, Value> MIRBuilder::sortGroups(Value groups,
                                               int64_t numGroups) {
  auto gt = typeOf(groups);
  int64_t rows =
      gt.hasStaticShape() ? gt.getNumElements() : ShapedType::kDynamic;
  Type index64 = b.getI64Type();
  Operation *op = create("mir.sort_groups",
                         {RankedTensorType::get({rows}, index64),
                          RankedTensorType::get({numGroups + 1}, index64)},
                         {groups}, {i64("num_groups", numGroups)});
  return {op->getResult(0), op->getResult(1)};
}

Value MIRBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  return create("mir.reshape", withShape(x, shape), {x})->getResult(0);
}

Value MIRBuilder::transpose(Value x, ArrayRef<int64_t> permutation) {
  SmallVector<int64_t> shape;
  for (int64_t p : permutation)
    shape.push_back(typeOf(x).getDimSize(p));
  return create("mir.transpose", withShape(x, shape), {x},
                {attr("permutation", b.getDenseI64ArrayAttr(permutation))})
      ->getResult(0);
}

Value MIRBuilder::broadcast(Value x, ArrayRef<int64_t> shape) {
  return create("mir.broadcast", withShape(x, shape), {x})->getResult(0);
}

Value MIRBuilder::slice(Value x, int64_t axis, int64_t start, int64_t size) {
  SmallVector<int64_t> shape(typeOf(x).getShape());
  shape[axis] = size;
  return create("mir.slice", withShape(x, shape), {x},
                {i64("axis", axis), i64("start", start), i64("size", size)})
      ->getResult(0);
}

Value MIRBuilder::concat(ValueRange values, int64_t axis) {
  SmallVector<int64_t> shape(typeOf(values[0]).getShape());
  shape[axis] = 0;
  for (Value v : values) {
    int64_t d = typeOf(v).getDimSize(axis);
    shape[axis] = ShapedType::isDynamic(d) || ShapedType::isDynamic(shape[axis])
                      ? ShapedType::kDynamic
                      : shape[axis] + d;
  }
  return create("mir.concat", withShape(values[0], shape), values,
                {i64("axis", axis)})
      ->getResult(0);
}

Value MIRBuilder::convert(Value x, Type elementType) {
  return create("mir.cast",
                RankedTensorType::get(typeOf(x).getShape(), elementType), {x})
      ->getResult(0);
}

Value MIRBuilder::roundTo(Value x, Type type) {
  if (!type)
    return x;
  return convert(convert(x, type), typeOf(x).getElementType());
}

Value MIRBuilder::reduce(StringRef name, Value x, ArrayRef<int64_t> axes,
                         bool keepDims) {
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(typeOf(x).getShape())) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(i)))
      shape.push_back(d);
    else if (keepDims)
      shape.push_back(1);
  }
  SmallVector<NamedAttribute> attrs = {
      attr("axes", b.getDenseI64ArrayAttr(axes))};
  if (keepDims)
    attrs.push_back(unit("keep_dims"));
  return create(name, withShape(x, shape), {x}, attrs)->getResult(0);
}
