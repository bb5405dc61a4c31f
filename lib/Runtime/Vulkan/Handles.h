//===- Handles.h - Owning wrappers for Vulkan handles -----------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One move-only owner per kind of Vulkan object the runtime creates: it
// destroys its handle in its destructor, so an early return on an error
// releases everything created before it. Create into a plain handle and wrap
// it (adopt) only once the vkCreate* call succeeded: a failed call leaves its
// output undefined. Objects whose lifetime another object ends are not wrapped:
// a VkQueue dies with its VkDevice, a VkDescriptorSet with its
// VkDescriptorPool. Destroy children before their parent: a member declared
// later is destroyed earlier.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_RUNTIME_VULKAN_HANDLES_H
#define RLX_LIB_RUNTIME_VULKAN_HANDLES_H

#include <cstdint>
#include <utility>
#include <vulkan/vulkan.h>

namespace rlx::vulkan {

/// Owns one `T`, handed to `Deleter` (which holds what destroying it needs,
/// such as the VkDevice) when the owner goes.
template <typename T, typename Deleter> class UniqueHandle {
public:
  UniqueHandle() = default;
  /// Takes ownership of `handle`.
  UniqueHandle(T handle, Deleter deleter)
      : handle(handle), deleter(std::move(deleter)) {}
  UniqueHandle(UniqueHandle &&other) noexcept
      : handle(other.release()), deleter(std::move(other.deleter)) {}
  UniqueHandle &operator=(UniqueHandle &&other) noexcept {
    if (this != &other) {
      reset();
      handle = other.release();
      deleter = std::move(other.deleter);
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle &) = delete;
  UniqueHandle &operator=(const UniqueHandle &) = delete;
  ~UniqueHandle() { reset(); }

  T get() const { return handle; }
  explicit operator bool() const { return handle != T{}; }
  /// Gives up ownership without destroying.
  T release() { return std::exchange(handle, T{}); }
  /// Destroys the handle now.
  void reset() {
    if (handle != T{})
      deleter(handle);
    handle = T{};
  }

private:
  T handle{};
  Deleter deleter{};
};

/// Destroys a child of a VkDevice with `Destroy(device, handle, nullptr)`,
/// a vkDestroy* function.
template <typename T, auto Destroy> struct DeviceChildDeleter {
  VkDevice device = VK_NULL_HANDLE;
  void operator()(T handle) const { Destroy(device, handle, nullptr); }
};

template <typename T, auto Destroy>
using UniqueDeviceChild = UniqueHandle<T, DeviceChildDeleter<T, Destroy>>;

/// Wraps `handle`, created from `device`.
template <typename T, auto Destroy>
UniqueDeviceChild<T, Destroy> adopt(VkDevice device, T handle) {
  return {handle, DeviceChildDeleter<T, Destroy>{device}};
}

using UniqueBuffer = UniqueDeviceChild<VkBuffer, vkDestroyBuffer>;
using UniqueShaderModule =
    UniqueDeviceChild<VkShaderModule, vkDestroyShaderModule>;
using UniqueDescriptorSetLayout =
    UniqueDeviceChild<VkDescriptorSetLayout, vkDestroyDescriptorSetLayout>;
using UniquePipelineLayout =
    UniqueDeviceChild<VkPipelineLayout, vkDestroyPipelineLayout>;
using UniquePipeline = UniqueDeviceChild<VkPipeline, vkDestroyPipeline>;
/// Frees the descriptor sets allocated from it.
using UniqueDescriptorPool =
    UniqueDeviceChild<VkDescriptorPool, vkDestroyDescriptorPool>;
/// Frees the command buffers still allocated from it.
using UniqueCommandPool =
    UniqueDeviceChild<VkCommandPool, vkDestroyCommandPool>;
using UniqueFence = UniqueDeviceChild<VkFence, vkDestroyFence>;
using UniqueQueryPool = UniqueDeviceChild<VkQueryPool, vkDestroyQueryPool>;

/// Frees a primary command buffer back to its pool (before the pool goes).
struct CommandBufferDeleter {
  VkDevice device = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  void operator()(VkCommandBuffer commands) const {
    vkFreeCommandBuffers(device, pool, 1, &commands);
  }
};
using UniqueCommandBuffer = UniqueHandle<VkCommandBuffer, CommandBufferDeleter>;

/// Waits for a VkDevice to go idle, then destroys it; everything created
/// from it must be gone by then.
struct DeviceDeleter {
  void operator()(VkDevice device) const {
    vkDeviceWaitIdle(device);
    vkDestroyDevice(device, nullptr);
  }
};
using UniqueDevice = UniqueHandle<VkDevice, DeviceDeleter>;

/// Destroys a VkInstance, after every device created from it.
struct InstanceDeleter {
  void operator()(VkInstance instance) const {
    vkDestroyInstance(instance, nullptr);
  }
};
using UniqueInstance = UniqueHandle<VkInstance, InstanceDeleter>;

/// Owns a VkDeviceMemory allocation and its host mapping, if any: unmapped
/// and freed on destruction (after the buffers bound to it).
class UniqueDeviceMemory {
public:
  UniqueDeviceMemory() = default;
  UniqueDeviceMemory(VkDevice device, VkDeviceMemory memory)
      : memory(memory,
               DeviceChildDeleter<VkDeviceMemory, vkFreeMemory>{device}),
        device(device) {}
  UniqueDeviceMemory(UniqueDeviceMemory &&other) noexcept
      : memory(std::move(other.memory)), device(other.device),
        mapped(std::exchange(other.mapped, nullptr)) {}
  UniqueDeviceMemory &operator=(UniqueDeviceMemory &&other) noexcept {
    if (this != &other) {
      reset();
      memory = std::move(other.memory);
      device = other.device;
      mapped = std::exchange(other.mapped, nullptr);
    }
    return *this;
  }
  UniqueDeviceMemory(const UniqueDeviceMemory &) = delete;
  UniqueDeviceMemory &operator=(const UniqueDeviceMemory &) = delete;
  ~UniqueDeviceMemory() { reset(); }

  VkDeviceMemory get() const { return memory.get(); }
  /// The host address of the whole allocation; null when not mapped.
  uint8_t *data() const { return mapped; }
  /// Maps the whole allocation (host-visible memory only).
  VkResult map() {
    void *p = nullptr;
    VkResult r = vkMapMemory(device, memory.get(), 0, VK_WHOLE_SIZE, 0, &p);
    if (r == VK_SUCCESS)
      mapped = static_cast<uint8_t *>(p);
    return r;
  }
  void reset() {
    if (mapped)
      vkUnmapMemory(device, memory.get());
    mapped = nullptr;
    memory.reset();
  }

private:
  UniqueDeviceChild<VkDeviceMemory, vkFreeMemory> memory;
  VkDevice device = VK_NULL_HANDLE;
  uint8_t *mapped = nullptr;
};

} // namespace rlx::vulkan

#endif // RLX_LIB_RUNTIME_VULKAN_HANDLES_H
