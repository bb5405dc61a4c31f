//===- InitAllPasses.h - Register the RLX passes -----------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_INITALLPASSES_H
#define RLX_INITALLPASSES_H

namespace mlir {
namespace rlx {

/// Registers every RLX pass and pipeline with the global pass registry, plus
/// the upstream passes the RLX pipelines are built from.
void registerAllRLXPasses();

} // namespace rlx
} // namespace mlir

#endif // RLX_INITALLPASSES_H
