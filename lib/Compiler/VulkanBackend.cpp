//===- VulkanBackend.cpp - LIR to SPIR-V and Vulkan -----------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

using namespace rlx;

llvm::Expected<CompiledModel>
detail::compileLIRForVulkan(LIRModule &, const CompileProfile &,
                            CompileStats &) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "the Vulkan back end is not available in this build");
}
