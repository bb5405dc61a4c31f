//===- InitAllDialects.h - Register the RLX dialects -------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_INITALLDIALECTS_H
#define RLX_INITALLDIALECTS_H

namespace mlir {
class DialectRegistry;
namespace rlx {

/// Adds the RLX dialects (hir, mir, lir) to `registry`.
void registerRLXDialects(DialectRegistry &registry);

/// Adds the RLX dialects and the upstream dialects RLX pipelines produce or
/// consume (func, arith, math, tensor, memref, scf, vector, linalg, llvm, ...).
void registerAllRLXDialects(DialectRegistry &registry);

} // namespace rlx
} // namespace mlir

#endif // RLX_INITALLDIALECTS_H
