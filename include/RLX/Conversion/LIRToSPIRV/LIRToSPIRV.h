//===- LIRToSPIRV.h - LIR to SPIR-V compute kernels --------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The SPIR-V back end: convert-lir-to-spirv writes every LIR kernel as a
// gpu.func and converts it to a spirv.module; the lir.entry it leaves
// behind, annotated with the attributes below, is the dispatch schedule the
// Vulkan runtime replays. docs/GPU.md describes the scheme.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_CONVERSION_LIRTOSPIRV_LIRTOSPIRV_H
#define RLX_CONVERSION_LIRTOSPIRV_LIRTOSPIRV_H

#include "llvm/ADT/StringRef.h"

namespace mlir {
class OpPassManager;
namespace rlx {
struct ConvertLIRToSPIRVPassOptions;

/// convert-lir-to-spirv, then per spirv.module: ABI lowering (storage
/// buffers at set 0, binding = argument), minimal version / capabilities /
/// extensions, canonicalization. The entry must be planned.
void buildLIRToSPIRVPipeline(OpPassManager &pm,
                             const ConvertLIRToSPIRVPassOptions &options);

} // namespace rlx
} // namespace mlir

#endif // RLX_CONVERSION_LIRTOSPIRV_LIRTOSPIRV_H
