//===- Memory.cpp - Vulkan buffers, memory and staging uploads ------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Storage buffers with their own memory (mapped on devices that share the
// host's memory), and uploads that copy through a staging buffer into
// device-local ones.
//
//===----------------------------------------------------------------------===//

#include "Memory.h"
#include "llvm/Support/MathExtras.h"
#include <algorithm>
#include <cstring>

using namespace rlx;
using namespace rlx::vulkan;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

static int findMemoryType(const VkPhysicalDeviceMemoryProperties &props,
                          uint32_t typeBits, VkMemoryPropertyFlags required) {
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i)
    if ((typeBits & (1u << i)) &&
        (props.memoryTypes[i].propertyFlags & required) == required)
      return i;
  return -1;
}

Expected<Buffer> vulkan::createBuffer(const Device &dev, uint64_t size,
                                      bool hostVisible, StringRef what) {
  VkDevice d = dev.device.get();
  Buffer b;
  b.size = llvm::alignTo(std::max<uint64_t>(size, 4), 256);
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = b.size;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
               VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  RLX_VK(vkCreateBuffer(d, &info, nullptr, &buffer));
  b.buffer = adopt<VkBuffer, vkDestroyBuffer>(d, buffer);

  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(d, buffer, &req);
  VkMemoryPropertyFlags want = hostVisible
                                   ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                         VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                   : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  int type = findMemoryType(dev.memory, req.memoryTypeBits, want);
  if (type < 0 && !hostVisible)
    type = findMemoryType(dev.memory, req.memoryTypeBits, 0);
  if (type < 0)
    return fail("Vulkan: device '" + dev.info.name + "' has no " +
                (hostVisible ? "host-visible coherent" : "usable") +
                " memory for the " + what);
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  if (VkResult r = vkAllocateMemory(d, &alloc, nullptr, &memory);
      r != VK_SUCCESS)
    return fail("Vulkan: cannot allocate " + llvm::Twine(req.size) +
                " bytes for the " + what + ": " + resultName(r));
  b.memory = UniqueDeviceMemory(d, memory);
  RLX_VK(vkBindBufferMemory(d, buffer, memory, 0));
  if (hostVisible)
    if (Error err = check(b.memory.map(), "vkMapMemory"))
      return std::move(err);
  return b;
}

bool vulkan::hasUnifiedMemory(const Device &dev,
                              const RuntimeOptions &options) {
  if (dev.info.discrete || options.forceStaging)
    return false;
  const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                     VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < dev.memory.memoryTypeCount; ++i)
    if ((dev.memory.memoryTypes[i].propertyFlags & want) == want)
      return true;
  return false;
}

//===----------------------------------------------------------------------===//
// Uploads
//===----------------------------------------------------------------------===//

void vulkan::memoryBarrier(VkCommandBuffer cb, VkPipelineStageFlags src,
                           VkAccessFlags srcAccess, VkPipelineStageFlags dst,
                           VkAccessFlags dstAccess) {
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = srcAccess;
  mb.dstAccessMask = dstAccess;
  vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

Error vulkan::upload(Device &dev, VkCommandPool pool, VkFence fence,
                     const Buffer &dst, llvm::ArrayRef<uint8_t> bytes) {
  if (bytes.empty())
    return Error::success();
  if (uint8_t *mapped = dst.mapped()) {
    std::memcpy(mapped, bytes.data(), bytes.size());
    return Error::success();
  }
  Expected<Buffer> tmp = createBuffer(dev, bytes.size(), /*hostVisible=*/true,
                                      "upload staging buffer");
  if (!tmp)
    return tmp.takeError();
  std::memcpy(tmp->mapped(), bytes.data(), bytes.size());

  VkDevice d = dev.device.get();
  VkCommandBufferAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.commandPool = pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  RLX_VK(vkAllocateCommandBuffers(d, &ai, &cb));
  // Declared after `tmp`: freed before the staging buffer goes.
  UniqueCommandBuffer commands(cb, CommandBufferDeleter{d, pool});
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  RLX_VK(vkBeginCommandBuffer(cb, &bi));
  // The previous run may still read the buffer in submission order.
  memoryBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_TRANSFER_WRITE_BIT);
  VkBufferCopy region{0, 0, bytes.size()};
  vkCmdCopyBuffer(cb, tmp->buffer.get(), dst.buffer.get(), 1, &region);
  memoryBarrier(
      cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
  RLX_VK(vkEndCommandBuffer(cb));
  return dev.submitAndWait(cb, fence);
}
