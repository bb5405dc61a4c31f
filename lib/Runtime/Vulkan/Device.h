//===- Device.h - Vulkan runtime internals: devices, errors -----*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the files of the Vulkan runtime share: the options the environment
// sets, error reporting for Vulkan calls, and the open Device.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_RUNTIME_VULKAN_DEVICE_H
#define RLX_LIB_RUNTIME_VULKAN_DEVICE_H

#include "Handles.h"
#include "RLX/Runtime/Vulkan.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include <mutex>

namespace rlx::vulkan {

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

/// Settings of the Vulkan runtime the caller does not pass in (yet).
struct RuntimeOptions {
  /// A device index or case-insensitive name substring that overrides the
  /// caller's preference; empty: none.
  std::string device;
  /// Device-local buffers and staging copies (the discrete-GPU path) on any
  /// device.
  bool forceStaging = false;
  /// Time every dispatch and print a per-kernel table when an executor is
  /// destroyed.
  bool profile = false;

  /// The options from RLX_VULKAN_DEVICE, RLX_VULKAN_STAGING and
  /// RLX_VULKAN_PROFILE, read anew on each call. The only place the runtime
  /// reads the environment.
  static RuntimeOptions fromEnvironment();
};

/// openDevice and createExecutor with explicit options.
llvm::Expected<std::shared_ptr<Device>>
openDevice(llvm::StringRef preference, const RuntimeOptions &options);
llvm::Expected<std::unique_ptr<Executor>>
createExecutor(std::shared_ptr<Device> device, Program program,
               const Manifest &manifest, const RuntimeOptions &options);

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

inline llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// "VK_ERROR_OUT_OF_DEVICE_MEMORY"; "VkResult error" for the rarer codes.
const char *resultName(VkResult r);

/// Success, or "Vulkan: <call> failed: <result> (<code>)".
llvm::Error check(VkResult r, const char *call);

/// Returns the error from the enclosing function when `call` fails.
#define RLX_VK(call)                                                           \
  if (llvm::Error err = ::rlx::vulkan::check((call), #call))                   \
  return std::move(err)

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

/// An open Vulkan device: its instance, logical device and compute queue.
/// Members are destroyed bottom-up: the device before its instance.
class Device {
public:
  /// Submits `commands` to the queue, waits for them on `fence` and resets
  /// it.
  llvm::Error submitAndWait(VkCommandBuffer commands, VkFence fence);

  UniqueInstance instance;
  /// min(loader, 1.3): the API version the instance was created for.
  uint32_t instanceVersion = VK_API_VERSION_1_1;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  UniqueDevice device;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  uint32_t timestampValidBits = 0;
  float timestampPeriod = 1.0f;
  VkPhysicalDeviceMemoryProperties memory{};
  DeviceInfo info;

private:
  /// Serializes submissions to the queue (Vulkan queues are not
  /// thread-safe).
  std::mutex queueMutex;
};

} // namespace rlx::vulkan

#endif // RLX_LIB_RUNTIME_VULKAN_DEVICE_H
