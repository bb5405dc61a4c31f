//===- VulkanExecutorTest.cpp - Programs the Vulkan executor refuses ------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// createExecutor is a public API: a Program built by hand (or read back from
// the compile cache) is checked before any of it reaches the driver.
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/Manifest.h"
#include "RLX/Runtime/Vulkan.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <cstring>

using namespace rlx;

namespace {

/// The first device, or null after skipping (failing under
/// RLX_REQUIRE_VULKAN=1) when this machine has none.
std::shared_ptr<vulkan::Device> deviceOrSkip() {
  llvm::Expected<std::shared_ptr<vulkan::Device>> device =
      vulkan::openDevice("");
  if (device)
    return *device;
  std::string why = llvm::toString(device.takeError());
  const char *require = std::getenv("RLX_REQUIRE_VULKAN");
  if (require && std::strcmp(require, "1") == 0)
    ADD_FAILURE() << "RLX_REQUIRE_VULKAN=1 and no device: " << why;
  return nullptr;
}

TEST(VulkanExecutorTest, DispatchOfAMissingKernelIsRefused) {
  std::shared_ptr<vulkan::Device> device = deviceOrSkip();
  if (!device)
    GTEST_SKIP() << "no Vulkan device";
  Manifest manifest;
  manifest.arenaSize = 64;
  manifest.paramSize = 64;
  vulkan::Program program;
  vulkan::Dispatch dispatch;
  dispatch.kernel = 2;
  program.dispatches.push_back(dispatch);
  llvm::Expected<std::unique_ptr<Executor>> exec =
      vulkan::createExecutor(device, program, manifest);
  ASSERT_FALSE(exec);
  EXPECT_EQ(llvm::toString(exec.takeError()),
            "Vulkan: a dispatch runs kernel 2, but the program has 0 kernels");
}

} // namespace
