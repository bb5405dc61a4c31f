//===- MIRBuilder.h - Terse construction of MIR ops --------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A MultiDialectBuilder-style helper for the HIR -> MIR lowering and the MIR
// fusion patterns: each method computes the result type and creates one MIR
// op, so a block's lowering reads like the math it implements.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_UTILS_MIRBUILDER_H
#define RLX_DIALECT_MIR_UTILS_MIRBUILDER_H

#include "RLX/Dialect/Common/RLXEnums.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::rlx {

class MIRBuilder {
public:
  MIRBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpBuilder &builder() { return b; }
  Location getLoc() { return loc; }

  /// A rank-0 constant of `elementType`.
  Value scalar(double value, Type elementType);
  /// A constant splat of `type`.
  Value splat(double value, RankedTensorType type);

  /// A parameter concatenating `params` (mir.param results) along `axis`,
  /// computed once at load time; for weights kept as stored (each the
  /// mir.dequantize of a param, of one stored type) the stored params'
  /// rows joined, widened by one mir.dequantize; a run-time mir.concat when
  /// they do not join (joinsAtLoad).
  Value concatParams(ArrayRef<Value> params, int64_t axis);
  /// Whether concatParams joins `params` at load time.
  static bool joinsAtLoad(ArrayRef<Value> params, int64_t axis);

  Value matmul(Value x, Value w, bool transposeRhs = true);
  Value batchMatmul(Value a, Value b, bool transposeRhs = false);
  /// mir.fused_matmul; with `roundTo` (f16 or bf16) its result rounded to
  /// that type as it is stored (`round_to`).
  Value fusedMatmul(Value x, Value w, Value bias, Value residual,
                    Activation act, bool transposeRhs = true,
                    Type roundTo = {});

  Value add(Value a, Value b) { return binary("mir.add", a, b); }
  Value sub(Value a, Value b) { return binary("mir.sub", a, b); }
  Value mul(Value a, Value b) { return binary("mir.mul", a, b); }
  Value div(Value a, Value b) { return binary("mir.div", a, b); }
  Value binary(StringRef name, Value a, Value b);
  Value unary(StringRef name, Value x, ArrayRef<NamedAttribute> attrs = {});
  /// The activation as unary MIR ops (identity for None).
  Value activation(Value x, Activation act);

  Value compare(Value a, Value b, CmpPredicate pred);
  Value select(Value cond, Value a, Value b);
  Value iota(RankedTensorType type, int64_t axis);

  Value rmsNorm(Value x, Value w, float eps, bool unitOffset);
  Value layerNorm(Value x, Value gamma, Value beta, float eps);
  std::pair<Value, Value> fusedResidualRmsNorm(Value x, Value residual, Value w,
                                               float eps, bool unitOffset);
  std::pair<Value, Value> fusedResidualLayerNorm(Value x, Value residual,
                                                 Value gamma, Value beta,
                                                 float eps);
  Value softmax(Value x, int64_t axis = -1);
  Value rope(Value x, Value positions, Value invFreq, int64_t headDim,
             int64_t rotaryDim, float theta, RopeStyle style);
  Value gather(Value table, Value indices);
  Value fusedGlu(Value gateUp, Activation act);
  /// mir.top_k over the last axis: (values, i64 indices).
  std::pair<Value, Value> topK(Value x, int64_t k);
  /// mir.grouped_matmul: each row times the matrix of its group; with
  /// `order` and `offsets` (mir.sort_groups) the rows are taken group by
  /// group.
  Value groupedMatmul(Value x, Value weights, Value groups,
                      Value order = nullptr, Value offsets = nullptr);
  /// mir.sort_groups: (order, offsets) of the rows of `groups`.
  std::pair<Value, Value> sortGroups(Value groups, int64_t numGroups);

  Value reshape(Value x, ArrayRef<int64_t> shape);
  Value transpose(Value x, ArrayRef<int64_t> permutation);
  Value broadcast(Value x, ArrayRef<int64_t> shape);
  Value slice(Value x, int64_t axis, int64_t start, int64_t size);
  Value concat(ValueRange values, int64_t axis);
  Value convert(Value x, Type elementType);
  /// `x` rounded to `type` and converted back (two mir.cast ops): a fused
  /// op's `round_to` as primitives; `x` itself when `type` is null.
  Value roundTo(Value x, Type type);
  Value reduce(StringRef name, Value x, ArrayRef<int64_t> axes, bool keepDims);

  /// Creates op `name` with explicit result types; attributes may be inherent
  /// (they become properties).
  Operation *create(StringRef name, TypeRange results, ValueRange operands,
                    ArrayRef<NamedAttribute> attrs = {});

  NamedAttribute attr(StringRef name, Attribute value) {
    return b.getNamedAttr(name, value);
  }
  NamedAttribute i64(StringRef name, int64_t v) {
    return attr(name, b.getI64IntegerAttr(v));
  }
  NamedAttribute f32(StringRef name, double v) {
    return attr(name, b.getF32FloatAttr(v));
  }
  NamedAttribute unit(StringRef name) { return attr(name, b.getUnitAttr()); }

  static RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }
  static RankedTensorType withShape(Value like, ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, typeOf(like).getElementType());
  }

private:
  OpBuilder &b;
  Location loc;
};

} // namespace mlir::rlx

#endif // RLX_DIALECT_MIR_UTILS_MIRBUILDER_H
