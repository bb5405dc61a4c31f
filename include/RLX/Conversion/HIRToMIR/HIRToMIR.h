//===- HIRToMIR.h - Lower HIR blocks to MIR ----------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_CONVERSION_HIRTOMIR_HIRTOMIR_H
#define RLX_CONVERSION_HIRTOMIR_HIRTOMIR_H

#include "RLX/Support/Enums.h"
#include "llvm/ADT/StringRef.h"
#include <optional>

namespace mlir {
class RewritePatternSet;
namespace rlx {

/// Adds one rewrite pattern per HIR op, lowering it to MIR under `policy`.
void populateHIRToMIRPatterns(RewritePatternSet &patterns,
                              ::rlx::FusionPolicy policy);

} // namespace rlx
} // namespace mlir

#endif // RLX_CONVERSION_HIRTOMIR_HIRTOMIR_H
