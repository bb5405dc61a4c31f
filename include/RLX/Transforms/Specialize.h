//===- Specialize.h - Bind dynamic shapes of a template ----------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_TRANSFORMS_SPECIALIZE_H
#define RLX_TRANSFORMS_SPECIALIZE_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <string>

namespace mlir {
class ModuleOp;
namespace func {
class FuncOp;
} // namespace func
namespace rlx {

/// The function a compilation starts from: the one named `name`, or, when
/// `name` is empty, the module's only public function with a body. Emits an
/// error on the module and fails otherwise.
FailureOr<func::FuncOp> findEntryFunction(ModuleOp module, StringRef name);

/// The manifest name of argument `index`: its `rlx.name`, else `inputN`.
std::string inputName(func::FuncOp func, unsigned index);

/// Gives the arguments of `func` (a template with dynamic dims) the concrete
/// `shapes` and recomputes every result type of its HIR and MIR ops, then the
/// function's result types. Emits an error and fails when a shape disagrees
/// with a static dim or an op's result cannot be refined.
LogicalResult specializeFunction(func::FuncOp func,
                                 ArrayRef<SmallVector<int64_t, 4>> shapes);

} // namespace rlx
} // namespace mlir

#endif // RLX_TRANSFORMS_SPECIALIZE_H
