//===- SPIRVTools.h - Validate and optimize SPIR-V kernels ------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The SPIR-V the Vulkan back end emits goes through spirv-tools' library
// before it reaches a driver: every kernel module is validated (a failure is
// a compile error naming the kernel) and, under the profile's
// `[backend.spirv] optimize`, run through spirv-opt's performance passes and
// validated again.
//
// The target environment is Vulkan 1.1 (SPIR-V 1.3): the SPIR-V version
// convert-lir-to-spirv emits and the oldest Vulkan the runtime accepts, so a
// module that validates runs on every device RLX opens.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_CONVERSION_LIRTOSPIRV_SPIRVTOOLS_H
#define RLX_CONVERSION_LIRTOSPIRV_SPIRVTOOLS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace mlir::rlx {

/// The Vulkan version kernels are validated and optimized for, as
/// "Vulkan 1.1".
llvm::StringRef spirvTargetEnvironment();

/// Validates kernel `kernel`'s SPIR-V module `words` for the target
/// environment. The error reads "SPIR-V validation of kernel '<kernel>'
/// failed: <the validator's messages>".
llvm::Error validateSpirv(llvm::ArrayRef<uint32_t> words,
                          llvm::StringRef kernel);

/// Runs spirv-opt's performance passes on kernel `kernel`'s module `words`
/// (which must be valid) and validates the result; errors name the kernel.
llvm::Expected<std::vector<uint32_t>>
optimizeSpirv(llvm::ArrayRef<uint32_t> words, llvm::StringRef kernel);

} // namespace mlir::rlx

#endif // RLX_CONVERSION_LIRTOSPIRV_SPIRVTOOLS_H
