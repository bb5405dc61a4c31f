//===- Device.cpp - Vulkan instances, device discovery and selection ------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The runtime options, error reporting for Vulkan calls, instances, the
// device queries behind listDevices, and openDevice: device selection and the
// process-wide cache of open devices (instance, logical device, compute
// queue). Every Vulkan call is checked and a failure becomes an llvm::Error
// naming the call.
//
//===----------------------------------------------------------------------===//

#include "Device.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include <algorithm>
#include <cstdlib>
#include <map>

using namespace rlx;
using namespace rlx::vulkan;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

RuntimeOptions RuntimeOptions::fromEnvironment() {
  // Every environment variable the Vulkan runtime honours, in one place, so
  // that the tools can later pass these in instead. A flag is on when set to
  // anything but "0".
  auto flag = [](const char *name) {
    const char *value = std::getenv(name);
    return value && StringRef(value) != "0";
  };
  RuntimeOptions options;
  if (const char *device = std::getenv("RLX_VULKAN_DEVICE"))
    options.device = device;
  options.forceStaging = flag("RLX_VULKAN_STAGING");
  options.profile = flag("RLX_VULKAN_PROFILE");
  return options;
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

const char *vulkan::resultName(VkResult r) {
  switch (r) {
  case VK_SUCCESS:
    return "VK_SUCCESS";
  case VK_NOT_READY:
    return "VK_NOT_READY";
  case VK_TIMEOUT:
    return "VK_TIMEOUT";
  case VK_INCOMPLETE:
    return "VK_INCOMPLETE";
  case VK_ERROR_OUT_OF_HOST_MEMORY:
    return "VK_ERROR_OUT_OF_HOST_MEMORY";
  case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
  case VK_ERROR_INITIALIZATION_FAILED:
    return "VK_ERROR_INITIALIZATION_FAILED";
  case VK_ERROR_DEVICE_LOST:
    return "VK_ERROR_DEVICE_LOST";
  case VK_ERROR_MEMORY_MAP_FAILED:
    return "VK_ERROR_MEMORY_MAP_FAILED";
  case VK_ERROR_LAYER_NOT_PRESENT:
    return "VK_ERROR_LAYER_NOT_PRESENT";
  case VK_ERROR_EXTENSION_NOT_PRESENT:
    return "VK_ERROR_EXTENSION_NOT_PRESENT";
  case VK_ERROR_FEATURE_NOT_PRESENT:
    return "VK_ERROR_FEATURE_NOT_PRESENT";
  case VK_ERROR_INCOMPATIBLE_DRIVER:
    return "VK_ERROR_INCOMPATIBLE_DRIVER";
  case VK_ERROR_TOO_MANY_OBJECTS:
    return "VK_ERROR_TOO_MANY_OBJECTS";
  case VK_ERROR_FORMAT_NOT_SUPPORTED:
    return "VK_ERROR_FORMAT_NOT_SUPPORTED";
  case VK_ERROR_OUT_OF_POOL_MEMORY:
    return "VK_ERROR_OUT_OF_POOL_MEMORY";
  default:
    return "VkResult error";
  }
}

Error vulkan::check(VkResult r, const char *call) {
  if (r == VK_SUCCESS)
    return Error::success();
  return fail(llvm::Twine("Vulkan: ") + call + " failed: " + resultName(r) +
              " (" + llvm::Twine(static_cast<int>(r)) + ")");
}

//===----------------------------------------------------------------------===//
// Instances and device queries
//===----------------------------------------------------------------------===//

/// An instance for min(loader, 1.3), which it sets `apiVersion` to.
static Expected<UniqueInstance> createInstance(uint32_t &apiVersion) {
  uint32_t loaderVersion = VK_API_VERSION_1_0;
  auto enumerateVersion = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
      vkGetInstanceProcAddr(nullptr, "vkEnumerateInstanceVersion"));
  if (enumerateVersion)
    enumerateVersion(&loaderVersion);
  if (loaderVersion < VK_API_VERSION_1_1)
    return fail("Vulkan: the loader supports Vulkan " +
                llvm::Twine(VK_API_VERSION_MAJOR(loaderVersion)) + "." +
                llvm::Twine(VK_API_VERSION_MINOR(loaderVersion)) +
                "; RLX needs 1.1");
  apiVersion = std::min<uint32_t>(loaderVersion, VK_API_VERSION_1_3);

  // Portability drivers (MoltenVK) are only listed when asked for.
  uint32_t count = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> exts(count);
  vkEnumerateInstanceExtensionProperties(nullptr, &count, exts.data());
  std::vector<const char *> enabled;
  VkInstanceCreateFlags flags = 0;
  for (const VkExtensionProperties &e : exts)
    if (StringRef(e.extensionName) ==
        VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME) {
      enabled.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
      flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }

  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "rlx";
  app.pEngineName = "rlx";
  app.apiVersion = apiVersion;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.flags = flags;
  info.pApplicationInfo = &app;
  info.enabledExtensionCount = enabled.size();
  info.ppEnabledExtensionNames = enabled.data();
  VkInstance instance = VK_NULL_HANDLE;
  VkResult r = vkCreateInstance(&info, nullptr, &instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return fail("Vulkan: no driver (vkCreateInstance: "
                "VK_ERROR_INCOMPATIBLE_DRIVER); install one, e.g. Mesa's "
                "lavapipe (mesa-vulkan-drivers)");
  if (Error err = check(r, "vkCreateInstance"))
    return std::move(err);
  return UniqueInstance(instance, InstanceDeleter());
}

static std::vector<VkPhysicalDevice> physicalDevices(VkInstance instance) {
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance, &count, devices.data());
  devices.resize(count);
  return devices;
}

static std::vector<std::string> deviceExtensions(VkPhysicalDevice pd) {
  uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> exts(count);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, exts.data());
  std::vector<std::string> names;
  for (const VkExtensionProperties &e : exts)
    names.push_back(e.extensionName);
  return names;
}

namespace {
/// The feature structs RLX queries and enables, chained.
struct FeatureChain {
  VkPhysicalDeviceFeatures2 base{};
  VkPhysicalDevice16BitStorageFeatures storage16{};
  VkPhysicalDevice8BitStorageFeatures storage8{};
  VkPhysicalDeviceShaderFloat16Int8Features float16Int8{};

  /// Chains the structs the device can take (core 1.2, or the extensions).
  FeatureChain(bool has8Bit, bool hasFloat16Int8) {
    base.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    storage16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
    storage8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
    float16Int8.sType =
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
    base.pNext = &storage16;
    void **next = &storage16.pNext;
    if (has8Bit) {
      *next = &storage8;
      next = &storage8.pNext;
    }
    if (hasFloat16Int8)
      *next = &float16Int8;
  }
};
} // namespace

static bool contains(const std::vector<std::string> &names, StringRef name) {
  return llvm::is_contained(names, name.str());
}

/// Whether a 1.2 feature struct may be chained: core 1.2, or its extension.
static bool canQuery(uint32_t apiVersion, const std::vector<std::string> &exts,
                     StringRef extension) {
  return apiVersion >= VK_API_VERSION_1_2 || contains(exts, extension);
}

static DeviceInfo queryDevice(VkPhysicalDevice pd, unsigned index,
                              uint32_t instanceVersion) {
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(pd, &props);
  DeviceInfo info;
  info.index = index;
  info.name = props.deviceName;
  switch (props.deviceType) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    info.type = "discrete GPU";
    info.discrete = true;
    break;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    info.type = "integrated GPU";
    break;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    info.type = "virtual GPU";
    break;
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    info.type = "CPU";
    break;
  default:
    info.type = "other";
  }
  info.apiVersion = props.apiVersion;
  const VkPhysicalDeviceLimits &l = props.limits;
  info.minStorageBufferOffsetAlignment = l.minStorageBufferOffsetAlignment;
  info.maxStorageBufferRange = l.maxStorageBufferRange;
  info.maxComputeWorkGroupInvocations = l.maxComputeWorkGroupInvocations;
  info.maxComputeSharedMemorySize = l.maxComputeSharedMemorySize;
  for (int i = 0; i < 3; ++i)
    info.maxComputeWorkGroupCount[i] = l.maxComputeWorkGroupCount[i];

  std::vector<std::string> exts = deviceExtensions(pd);
  uint32_t version = std::min(props.apiVersion, instanceVersion);
  FeatureChain chain(
      canQuery(version, exts, VK_KHR_8BIT_STORAGE_EXTENSION_NAME),
      canQuery(version, exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME));
  vkGetPhysicalDeviceFeatures2(pd, &chain.base);
  info.int64 = chain.base.features.shaderInt64;
  info.int8Storage =
      chain.storage8.storageBuffer8BitAccess && chain.float16Int8.shaderInt8;
  info.float16Storage = chain.storage16.storageBuffer16BitAccess &&
                        chain.float16Int8.shaderFloat16;
  info.cooperativeMatrix = contains(exts, "VK_KHR_cooperative_matrix");
  return info;
}

std::string DeviceInfo::describe() const {
  return (name + " (" + type + ", Vulkan " +
          llvm::Twine(VK_API_VERSION_MAJOR(apiVersion)) + "." +
          llvm::Twine(VK_API_VERSION_MINOR(apiVersion)) + ")")
      .str();
}

Expected<std::vector<DeviceInfo>> vulkan::listDevices() {
  uint32_t apiVersion;
  Expected<UniqueInstance> instance = createInstance(apiVersion);
  if (!instance)
    return instance.takeError();
  std::vector<DeviceInfo> infos;
  for (auto [i, pd] : llvm::enumerate(physicalDevices(instance->get())))
    infos.push_back(queryDevice(pd, i, apiVersion));
  return infos;
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

const DeviceInfo &vulkan::getDeviceInfo(const Device &device) {
  return device.info;
}

Error Device::submitAndWait(VkCommandBuffer commands, VkFence fence) {
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &commands;
  {
    std::lock_guard<std::mutex> lock(queueMutex);
    RLX_VK(vkQueueSubmit(queue, 1, &si, fence));
  }
  RLX_VK(vkWaitForFences(device.get(), 1, &fence, VK_TRUE, UINT64_MAX));
  RLX_VK(vkResetFences(device.get(), 1, &fence));
  return Error::success();
}

/// The index `preference` selects among `infos`, or an error listing them.
static Expected<unsigned> selectDevice(const std::vector<DeviceInfo> &infos,
                                       StringRef preference, StringRef from) {
  std::string listing;
  for (const DeviceInfo &d : infos)
    listing += "\n  " + std::to_string(d.index) + ": " + d.describe();
  if (infos.empty())
    return fail("Vulkan: no device found (is a driver such as Mesa's "
                "lavapipe installed?)");
  if (preference.empty()) {
    for (const DeviceInfo &d : infos)
      if (d.discrete)
        return d.index;
    return infos.front().index;
  }
  unsigned index;
  if (!preference.getAsInteger(10, index)) {
    if (index < infos.size())
      return index;
    return fail("Vulkan: " + from + " selects device " + llvm::Twine(index) +
                ", but there are " + llvm::Twine(infos.size()) +
                " devices:" + listing);
  }
  for (const DeviceInfo &d : infos)
    if (StringRef(d.name).contains_insensitive(preference))
      return d.index;
  return fail("Vulkan: " + from + " asks for a device named '" + preference +
              "'; found:" + listing);
}

static Expected<std::shared_ptr<Device>> createDevice(unsigned index) {
  auto dev = std::make_shared<Device>();
  Expected<UniqueInstance> instance = createInstance(dev->instanceVersion);
  if (!instance)
    return instance.takeError();
  dev->instance = std::move(*instance);
  std::vector<VkPhysicalDevice> pds = physicalDevices(dev->instance.get());
  // The index comes from an earlier enumeration: the device may be gone.
  if (index >= pds.size())
    return fail("Vulkan: device " + llvm::Twine(index) +
                " is no longer listed (the driver now lists " +
                llvm::Twine(pds.size()) + " devices)");
  dev->physical = pds[index];
  dev->info = queryDevice(dev->physical, index, dev->instanceVersion);
  vkGetPhysicalDeviceMemoryProperties(dev->physical, &dev->memory);
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(dev->physical, &props);
  dev->timestampPeriod = props.limits.timestampPeriod;

  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(dev->physical, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(dev->physical, &count,
                                           families.data());
  bool found = false;
  for (uint32_t i = 0; i < count && !found; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      dev->queueFamily = i;
      dev->timestampValidBits = families[i].timestampValidBits;
      found = true;
    }
  if (!found)
    return fail("Vulkan: device '" + dev->info.name + "' has no compute queue");

  std::vector<std::string> exts = deviceExtensions(dev->physical);
  uint32_t version = std::min(dev->info.apiVersion, dev->instanceVersion);
  bool has8Bit = canQuery(version, exts, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  bool hasF16I8 =
      canQuery(version, exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  FeatureChain enable(has8Bit, hasF16I8);
  enable.base.features.shaderInt64 = dev->info.int64;
  enable.storage8.storageBuffer8BitAccess = dev->info.int8Storage;
  enable.float16Int8.shaderInt8 = dev->info.int8Storage;
  enable.storage16.storageBuffer16BitAccess = dev->info.float16Storage;
  enable.float16Int8.shaderFloat16 = dev->info.float16Storage;
  std::vector<const char *> enabled;
  if (version < VK_API_VERSION_1_2) {
    if (dev->info.int8Storage)
      enabled.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
    if (dev->info.int8Storage || dev->info.float16Storage)
      enabled.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  }
  if (contains(exts, "VK_KHR_portability_subset"))
    enabled.push_back("VK_KHR_portability_subset");

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queueInfo{};
  queueInfo.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queueInfo.queueFamilyIndex = dev->queueFamily;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.pNext = &enable.base;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queueInfo;
  info.enabledExtensionCount = enabled.size();
  info.ppEnabledExtensionNames = enabled.data();
  VkDevice device = VK_NULL_HANDLE;
  RLX_VK(vkCreateDevice(dev->physical, &info, nullptr, &device));
  dev->device = UniqueDevice(device, DeviceDeleter());
  vkGetDeviceQueue(device, dev->queueFamily, 0, &dev->queue);
  return dev;
}

Expected<std::shared_ptr<Device>> vulkan::openDevice(StringRef preference) {
  return openDevice(preference, RuntimeOptions::fromEnvironment());
}

Expected<std::shared_ptr<Device>>
vulkan::openDevice(StringRef preference, const RuntimeOptions &options) {
  static std::mutex mutex;
  static std::map<unsigned, std::weak_ptr<Device>> open;
  std::lock_guard<std::mutex> lock(mutex);
  auto infos = listDevices();
  if (!infos)
    return infos.takeError();
  StringRef from = "the profile's backend.spirv.device";
  if (!options.device.empty()) {
    preference = options.device;
    from = "RLX_VULKAN_DEVICE";
  }
  Expected<unsigned> index = selectDevice(*infos, preference.trim(), from);
  if (!index)
    return index.takeError();
  if (std::shared_ptr<Device> dev = open[*index].lock())
    return dev;
  auto dev = createDevice(*index);
  if (!dev)
    return dev.takeError();
  open[*index] = *dev;
  return dev;
}
