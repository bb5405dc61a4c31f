//===- MIROps.h - MIR operations --------------------------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The MIR op classes, plus the shape helpers their verifiers use, exposed for
// the passes that build MIR (HIR->MIR lowering, MIR fusion, MIR->LIR).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_IR_MIROPS_H
#define RLX_DIALECT_MIR_IR_MIROPS_H

#include "RLX/Dialect/Common/RLXEnums.h"
#include "RLX/Dialect/MIR/IR/MIRDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "RLX/Dialect/MIR/IR/MIREnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "RLX/Dialect/MIR/IR/MIRTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "RLX/Dialect/MIR/IR/MIRAttrs.h.inc"

#define GET_OP_CLASSES
#include "RLX/Dialect/MIR/IR/MIROps.h.inc"

namespace mlir::rlx::mir {

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

/// Returns true if dims `a` and `b` may be equal: they are equal or one of
/// them is dynamic.
bool areDimsCompatible(int64_t a, int64_t b);

/// True for the types a weight may be stored in below f32 (f16, bf16, ggml
/// blocks).
bool isLowPrecisionWeightType(Type t);

/// Bytes of a static tensor of `type` as stored (ggml blocks for
/// !mir.quant; an i1 takes a byte), or nullopt when they exceed 2^63 - 1
/// (rlx::checkedByteSize) or the shape is dynamic.
std::optional<int64_t> getCheckedStorageBytes(ShapedType type);

/// getCheckedStorageBytes of a type known to fit (convert-mir-to-lir and the
/// LIR verifier refuse the others); INT64_MAX when it does not.
int64_t getStorageBytes(ShapedType type);

/// Checks a tensor of quantized elements: its last dimension is a whole
/// number of blocks. Emits the error on `op` and fails otherwise.
LogicalResult verifyQuantizedShape(Operation *op, ShapedType type,
                                   StringRef what);

/// Broadcasts two shapes with numpy rules: the shapes are aligned on the
/// right; a missing or size-1 dim stretches to the other size; otherwise the
/// sizes must be equal. A dynamic dim broadcasts with a static `n > 1` to `n`
/// and with `1` or another dynamic dim to dynamic. Fails on two different
/// static sizes, neither of them 1.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> lhs,
                                                ArrayRef<int64_t> rhs);

/// Broadcasts any number of shapes (left fold of the two-shape version). An
/// empty list gives the rank-0 shape.
FailureOr<SmallVector<int64_t>>
broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes);

/// Returns true if `mir.broadcast` may broadcast a tensor of shape `from` to
/// shape `to`: `to` has at least the rank of `from`; aligned on the right,
/// each dim of `from` is 1 or compatible with the dim of `to`; and each
/// dynamic dim of `to` lines up with a dim of `from` that is not a static 1.
bool isBroadcastableTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to);

/// Returns `axis` in `[0, rank)` for an axis in `[-rank, rank)` (negative
/// axes count from the end), or std::nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Returns the result shape of `mir.matmul` (`rhsShape` of rank 2) or, with
/// `batched`, of `mir.batch_matmul`; fails on ranks or contraction dims the op
/// does not accept.
FailureOr<SmallVector<int64_t>>
matmulResultShape(ArrayRef<int64_t> lhsShape, ArrayRef<int64_t> rhsShape,
                  bool transposeLhs, bool transposeRhs, bool batched = false);

/// Returns true if `permutation` is a permutation of `0..size-1`.
bool isPermutation(ArrayRef<int64_t> permutation);

/// Returns the permutation of `transpose(transpose(x, inner), outer)` as one
/// transpose of `x`: `result[k] = inner[outer[k]]`.
SmallVector<int64_t> composePermutations(ArrayRef<int64_t> inner,
                                         ArrayRef<int64_t> outer);

} // namespace mlir::rlx::mir

#endif // RLX_DIALECT_MIR_IR_MIROPS_H
