//===- LIROps.h - LIR operations ---------------------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_LIR_IR_LIROPS_H
#define RLX_DIALECT_LIR_IR_LIROPS_H

#include "RLX/Dialect/LIR/IR/LIRDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "RLX/Dialect/LIR/IR/LIREnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "RLX/Dialect/LIR/IR/LIRAttrs.h.inc"

namespace mlir::rlx::lir {
/// Bytes per element as stored in the arena and the parameter pool (an i1
/// takes a byte). Elements of ggml blocks (!mir.quant) have no size of
/// their own: 1, views of them are addressed in bytes.
inline int64_t getElementBytes(Type t) {
  if (!t.isIntOrIndexOrFloat())
    return 1;
  return std::max<int64_t>(1, (t.getIntOrFloatBitWidth() + 7) / 8);
}

/// Whether element type `t` has an x8 layout (#lir.layout<x8>): q4_0, q8_0,
/// q4_K, q5_K, q6_K, f16 and bf16, the types the micro-kernels read repacked
/// (rlx_uk_supports with RLX_UK_REPACKED_X8).
bool hasX8Form(Type t);

/// Whether a collective (lir.all_reduce, lir.all_gather) moves elements of
/// type `t`: f32, f16 and bf16 (the runtime's rlx_all_reduce_* /
/// rlx_all_gather_*).
inline bool isCollectiveElementType(Type t) {
  return t.isF32() || t.isF16() || t.isBF16();
}
} // namespace mlir::rlx::lir

#define GET_OP_CLASSES
#include "RLX/Dialect/LIR/IR/LIROps.h.inc"

namespace mlir::rlx::lir {
/// The phase of `kernel`'s lir.all_reduce, or nullopt when its compute op
/// is something else.
std::optional<CollectivePhase> getAllReducePhase(KernelOp kernel);

/// Whether the storage of buffers `a` and `b` (lir.alloc or lir.view
/// results) may overlap: the same allocation or memory space and
/// intersecting byte ranges.
bool mayAlias(Value a, Value b);

/// Whether `kernel` reads or writes storage that one of `buffers` uses.
bool touchesAny(KernelOp kernel, ValueRange buffers);
} // namespace mlir::rlx::lir

#endif // RLX_DIALECT_LIR_IR_LIROPS_H
