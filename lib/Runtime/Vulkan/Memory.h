//===- Memory.h - Vulkan buffers, memory and staging uploads ----*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_RUNTIME_VULKAN_MEMORY_H
#define RLX_LIB_RUNTIME_VULKAN_MEMORY_H

#include "Device.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace rlx::vulkan {

/// A storage buffer with its own memory, mapped when host-visible. Move-only;
/// the buffer is destroyed before its memory is unmapped and freed.
struct Buffer {
  UniqueDeviceMemory memory;
  UniqueBuffer buffer;
  /// The buffer's size: the requested one rounded up to 256 bytes.
  uint64_t size = 0;

  /// The host address of the buffer; null when device-local.
  uint8_t *mapped() const { return memory.data(); }
};

/// A storage buffer (also a transfer source and destination) of at least
/// `size` bytes: host-visible, coherent and mapped when `hostVisible`, else
/// device-local where the device has such memory. `what` names it in errors.
llvm::Expected<Buffer> createBuffer(const Device &dev, uint64_t size,
                                    bool hostVisible, llvm::StringRef what);

/// Whether the executor's buffers can be device-local and host-visible at
/// once (integrated GPUs, CPU devices), so that no staging copy is needed.
bool hasUnifiedMemory(const Device &dev, const RuntimeOptions &options);

/// Copies `bytes` into `dst` at offset 0: directly when mapped, else through
/// a temporary staging buffer and a one-off command buffer from `pool`,
/// submitted and waited for on `fence`.
llvm::Error upload(Device &dev, VkCommandPool pool, VkFence fence,
                   const Buffer &dst, llvm::ArrayRef<uint8_t> bytes);

/// Records one global memory barrier.
void memoryBarrier(VkCommandBuffer cb, VkPipelineStageFlags src,
                   VkAccessFlags srcAccess, VkPipelineStageFlags dst,
                   VkAccessFlags dstAccess);

} // namespace rlx::vulkan

#endif // RLX_LIB_RUNTIME_VULKAN_MEMORY_H
