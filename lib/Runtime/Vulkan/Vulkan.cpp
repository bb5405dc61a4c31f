//===- Vulkan.cpp - Run compiled SPIR-V kernels through Vulkan ------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Devices (instance, logical device, compute queue), shared per process;
// executors holding a compiled model's device objects. Every Vulkan call is
// checked and a failure becomes an llvm::Error naming the call.
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/Vulkan.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vulkan/vulkan.h>

using namespace rlx;
using namespace rlx::vulkan;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static const char *resultName(VkResult r) {
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

static Error check(VkResult r, const char *call) {
  if (r == VK_SUCCESS)
    return Error::success();
  return fail(llvm::Twine("Vulkan: ") + call + " failed: " + resultName(r) +
              " (" + llvm::Twine(static_cast<int>(r)) + ")");
}

#define RLX_VK(call)                                                           \
  if (Error err = check((call), #call))                                        \
  return std::move(err)

//===----------------------------------------------------------------------===//
// Instances and device queries
//===----------------------------------------------------------------------===//

namespace {
/// A VkInstance, destroyed last.
struct Instance {
  VkInstance handle = VK_NULL_HANDLE;
  uint32_t apiVersion = VK_API_VERSION_1_1;
  ~Instance() {
    if (handle)
      vkDestroyInstance(handle, nullptr);
  }
};
} // namespace

static Expected<std::shared_ptr<Instance>> createInstance() {
  auto instance = std::make_shared<Instance>();
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
  instance->apiVersion = std::min<uint32_t>(loaderVersion, VK_API_VERSION_1_3);

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
  app.apiVersion = instance->apiVersion;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.flags = flags;
  info.pApplicationInfo = &app;
  info.enabledExtensionCount = enabled.size();
  info.ppEnabledExtensionNames = enabled.data();
  VkResult r = vkCreateInstance(&info, nullptr, &instance->handle);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return fail("Vulkan: no driver (vkCreateInstance: "
                "VK_ERROR_INCOMPATIBLE_DRIVER); install one, e.g. Mesa's "
                "lavapipe (mesa-vulkan-drivers)");
  if (Error err = check(r, "vkCreateInstance"))
    return std::move(err);
  return instance;
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
  auto instance = createInstance();
  if (!instance)
    return instance.takeError();
  std::vector<DeviceInfo> infos;
  for (auto [i, pd] : llvm::enumerate(physicalDevices((*instance)->handle)))
    infos.push_back(queryDevice(pd, i, (*instance)->apiVersion));
  return infos;
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

class vulkan::Device {
public:
  ~Device() {
    if (device) {
      vkDeviceWaitIdle(device);
      vkDestroyDevice(device, nullptr);
    }
  }

  std::shared_ptr<Instance> instance;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  uint32_t timestampValidBits = 0;
  float timestampPeriod = 1.0f;
  VkPhysicalDeviceMemoryProperties memory{};
  DeviceInfo info;
  /// Serializes submissions to the queue (Vulkan queues are not
  /// thread-safe).
  std::mutex queueMutex;
};

const DeviceInfo &vulkan::getDeviceInfo(const Device &device) {
  return device.info;
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
  auto instance = createInstance();
  if (!instance)
    return instance.takeError();
  std::vector<VkPhysicalDevice> pds = physicalDevices((*instance)->handle);
  auto dev = std::make_shared<Device>();
  dev->instance = *instance;
  dev->physical = pds[index];
  dev->info = queryDevice(dev->physical, index, (*instance)->apiVersion);
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
  uint32_t version = std::min(dev->info.apiVersion, (*instance)->apiVersion);
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
  RLX_VK(vkCreateDevice(dev->physical, &info, nullptr, &dev->device));
  vkGetDeviceQueue(dev->device, dev->queueFamily, 0, &dev->queue);
  return dev;
}

Expected<std::shared_ptr<Device>> vulkan::openDevice(StringRef preference) {
  static std::mutex mutex;
  static std::map<unsigned, std::weak_ptr<Device>> open;
  std::lock_guard<std::mutex> lock(mutex);
  auto infos = listDevices();
  if (!infos)
    return infos.takeError();
  StringRef from = "the profile's backend.spirv.device";
  if (const char *env = std::getenv("RLX_VULKAN_DEVICE"); env && *env) {
    preference = env;
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

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

namespace {
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint8_t *mapped = nullptr;
  uint64_t size = 0;
};
} // namespace

static int findMemoryType(const VkPhysicalDeviceMemoryProperties &props,
                          uint32_t typeBits, VkMemoryPropertyFlags required) {
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i)
    if ((typeBits & (1u << i)) &&
        (props.memoryTypes[i].propertyFlags & required) == required)
      return i;
  return -1;
}

static Expected<Buffer> createBuffer(Device &dev, uint64_t size,
                                     bool hostVisible, StringRef what) {
  Buffer b;
  b.size = llvm::alignTo(std::max<uint64_t>(size, 4), 256);
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = b.size;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
               VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  RLX_VK(vkCreateBuffer(dev.device, &info, nullptr, &b.buffer));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev.device, b.buffer, &req);
  VkMemoryPropertyFlags want = hostVisible
                                   ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                         VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                   : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  int type = findMemoryType(dev.memory, req.memoryTypeBits, want);
  if (type < 0 && !hostVisible)
    type = findMemoryType(dev.memory, req.memoryTypeBits, 0);
  if (type < 0) {
    vkDestroyBuffer(dev.device, b.buffer, nullptr);
    return fail("Vulkan: device '" + dev.info.name + "' has no " +
                (hostVisible ? "host-visible coherent" : "usable") +
                " memory for the " + what);
  }
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  VkResult r = vkAllocateMemory(dev.device, &alloc, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(dev.device, b.buffer, nullptr);
    return fail("Vulkan: cannot allocate " + llvm::Twine(req.size) +
                " bytes for the " + what + ": " + resultName(r));
  }
  RLX_VK(vkBindBufferMemory(dev.device, b.buffer, b.memory, 0));
  if (hostVisible) {
    void *p = nullptr;
    RLX_VK(vkMapMemory(dev.device, b.memory, 0, VK_WHOLE_SIZE, 0, &p));
    b.mapped = static_cast<uint8_t *>(p);
  }
  return b;
}

static void destroyBuffer(Device &dev, Buffer &b) {
  if (b.mapped)
    vkUnmapMemory(dev.device, b.memory);
  if (b.buffer)
    vkDestroyBuffer(dev.device, b.buffer, nullptr);
  if (b.memory)
    vkFreeMemory(dev.device, b.memory, nullptr);
  b = Buffer();
}

//===----------------------------------------------------------------------===//
// The executor
//===----------------------------------------------------------------------===//

namespace {

/// A byte range of one space, for ordering dispatches.
struct Range {
  BufferSpace space;
  uint64_t lo, hi;
  bool overlaps(const Range &o) const {
    return space == o.space && lo < o.hi && o.lo < hi;
  }
};

class VulkanExecutor : public Executor {
public:
  VulkanExecutor(std::shared_ptr<Device> dev, Program program)
      : dev(std::move(dev)), program(std::move(program)) {}
  ~VulkanExecutor() override;

  Error init(const Manifest &manifest);
  Error execute(const Manifest &manifest, llvm::MutableArrayRef<uint8_t> arena,
                llvm::ArrayRef<uint8_t> params, bool paramsChanged) override;
  std::string describe() const override {
    return "vulkan: " + dev->info.describe();
  }

private:
  Error createPipelines();
  Error createDescriptors();
  Error record();
  /// Copies `bytes` into `dst` at offset 0: directly when mapped, else
  /// through a staging buffer and a one-off command buffer.
  Error upload(Buffer &dst, llvm::ArrayRef<uint8_t> bytes);
  Error submit(VkCommandBuffer cb);
  const Buffer &bufferOf(BufferSpace space) const {
    return space == BufferSpace::Arena
               ? arena
               : (space == BufferSpace::Params ? params : constants);
  }

  std::shared_ptr<Device> dev;
  Program program;
  /// Host-visible device memory (integrated GPUs, CPU devices): no copies
  /// beyond the inputs and outputs, no staging buffer.
  bool unified = false;
  Buffer arena, params, constants, staging;
  std::vector<VkShaderModule> modules;
  std::vector<VkDescriptorSetLayout> setLayouts;
  std::vector<VkPipelineLayout> layouts;
  std::vector<VkPipeline> pipelines;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> sets;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkQueryPool queries = VK_NULL_HANDLE;
  bool profile = false;
  /// Per kernel: accumulated milliseconds and dispatch count.
  std::vector<std::pair<double, unsigned>> kernelTimes;
  unsigned runs = 0;
  /// (offset, bytes) of the inputs and outputs in the arena.
  std::vector<std::pair<uint64_t, uint64_t>> inputs, outputs;
  bool paramsUploaded = false;
  unsigned barriers = 0;
};

} // namespace

VulkanExecutor::~VulkanExecutor() {
  VkDevice d = dev->device;
  if (profile && runs > 0) {
    llvm::errs() << "rlx vulkan profile (" << dev->info.name << ", " << runs
                 << " runs, " << program.dispatches.size() << " dispatches, "
                 << barriers << " barriers):\n";
    std::vector<unsigned> order(program.kernels.size());
    for (unsigned i = 0; i < order.size(); ++i)
      order[i] = i;
    llvm::sort(order, [&](unsigned a, unsigned b) {
      return kernelTimes[a].first > kernelTimes[b].first;
    });
    for (unsigned k : order)
      if (kernelTimes[k].second)
        llvm::errs() << llvm::format(
            "  %10.3f ms/run  %4u x  %s\n", kernelTimes[k].first / runs,
            kernelTimes[k].second / runs, program.kernels[k].name.c_str());
  }
  if (fence)
    vkDestroyFence(d, fence, nullptr);
  if (queries)
    vkDestroyQueryPool(d, queries, nullptr);
  if (commandPool)
    vkDestroyCommandPool(d, commandPool, nullptr);
  if (pool)
    vkDestroyDescriptorPool(d, pool, nullptr);
  for (VkPipeline p : pipelines)
    if (p)
      vkDestroyPipeline(d, p, nullptr);
  for (VkPipelineLayout l : layouts)
    if (l)
      vkDestroyPipelineLayout(d, l, nullptr);
  for (VkDescriptorSetLayout l : setLayouts)
    if (l)
      vkDestroyDescriptorSetLayout(d, l, nullptr);
  for (VkShaderModule m : modules)
    if (m)
      vkDestroyShaderModule(d, m, nullptr);
  destroyBuffer(*dev, arena);
  destroyBuffer(*dev, params);
  destroyBuffer(*dev, constants);
  destroyBuffer(*dev, staging);
}

Error VulkanExecutor::createPipelines() {
  VkDevice d = dev->device;
  for (const Kernel &k : program.kernels) {
    VkShaderModuleCreateInfo mi{};
    mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    mi.codeSize = k.spirv.size() * sizeof(uint32_t);
    mi.pCode = k.spirv.data();
    modules.push_back(VK_NULL_HANDLE);
    RLX_VK(vkCreateShaderModule(d, &mi, nullptr, &modules.back()));

    std::vector<VkDescriptorSetLayoutBinding> bindings(k.numBindings);
    for (unsigned i = 0; i < k.numBindings; ++i) {
      bindings[i] = VkDescriptorSetLayoutBinding{};
      bindings[i].binding = i;
      bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      bindings[i].descriptorCount = 1;
      bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo si{};
    si.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    si.bindingCount = bindings.size();
    si.pBindings = bindings.data();
    setLayouts.push_back(VK_NULL_HANDLE);
    RLX_VK(vkCreateDescriptorSetLayout(d, &si, nullptr, &setLayouts.back()));

    VkPipelineLayoutCreateInfo li{};
    li.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    li.setLayoutCount = 1;
    li.pSetLayouts = &setLayouts.back();
    layouts.push_back(VK_NULL_HANDLE);
    RLX_VK(vkCreatePipelineLayout(d, &li, nullptr, &layouts.back()));

    VkComputePipelineCreateInfo pi{};
    pi.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pi.stage.module = modules.back();
    pi.stage.pName = k.entryPoint.c_str();
    pi.layout = layouts.back();
    pipelines.push_back(VK_NULL_HANDLE);
    VkResult r = vkCreateComputePipelines(d, VK_NULL_HANDLE, 1, &pi, nullptr,
                                          &pipelines.back());
    if (r != VK_SUCCESS)
      return fail("Vulkan: creating the pipeline of kernel '" + k.name +
                  "' failed: " + resultName(r));
  }
  return Error::success();
}

Error VulkanExecutor::createDescriptors() {
  VkDevice d = dev->device;
  uint32_t total = 0;
  for (const Dispatch &dp : program.dispatches)
    total += dp.bindings.size();
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                            std::max<uint32_t>(total, 1)};
  VkDescriptorPoolCreateInfo pi{};
  pi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  pi.maxSets = std::max<uint32_t>(program.dispatches.size(), 1);
  pi.poolSizeCount = 1;
  pi.pPoolSizes = &size;
  RLX_VK(vkCreateDescriptorPool(d, &pi, nullptr, &pool));

  const DeviceInfo &info = dev->info;
  for (const Dispatch &dp : program.dispatches) {
    const Kernel &k = program.kernels[dp.kernel];
    if (dp.bindings.size() != k.numBindings)
      return fail("Vulkan: a dispatch of kernel '" + k.name + "' has " +
                  llvm::Twine(dp.bindings.size()) + " bindings, the kernel " +
                  llvm::Twine(k.numBindings));
    for (int i = 0; i < 3; ++i)
      if (dp.workgroups[i] > info.maxComputeWorkGroupCount[i])
        return fail("Vulkan: kernel '" + k.name + "' dispatches " +
                    llvm::Twine(dp.workgroups[i]) +
                    " workgroups in a dimension where '" + info.name +
                    "' allows " +
                    llvm::Twine(info.maxComputeWorkGroupCount[i]));
    VkDescriptorSetAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = pool;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &setLayouts[dp.kernel];
    sets.push_back(VK_NULL_HANDLE);
    RLX_VK(vkAllocateDescriptorSets(d, &ai, &sets.back()));
    std::vector<VkDescriptorBufferInfo> infos;
    for (const Binding &b : dp.bindings) {
      const Buffer &buf = bufferOf(b.space);
      if (b.offset % info.minStorageBufferOffsetAlignment)
        return fail("Vulkan: kernel '" + k.name + "' binds offset " +
                    llvm::Twine(b.offset) + ", not a multiple of '" +
                    info.name + "''s minStorageBufferOffsetAlignment " +
                    llvm::Twine(info.minStorageBufferOffsetAlignment) +
                    " (compiled for another device?)");
      if (b.range > info.maxStorageBufferRange)
        return fail("Vulkan: kernel '" + k.name + "' binds " +
                    llvm::Twine(b.range) + " bytes, more than '" + info.name +
                    "''s maxStorageBufferRange " +
                    llvm::Twine(info.maxStorageBufferRange));
      if (b.offset + b.range > buf.size)
        return fail("Vulkan: kernel '" + k.name +
                    "' binds bytes past the end of a buffer");
      infos.push_back(VkDescriptorBufferInfo{buf.buffer, b.offset, b.range});
    }
    std::vector<VkWriteDescriptorSet> writes(infos.size());
    for (unsigned i = 0; i < infos.size(); ++i) {
      writes[i] = VkWriteDescriptorSet{};
      writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      writes[i].dstSet = sets.back();
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(d, writes.size(), writes.data(), 0, nullptr);
  }
  return Error::success();
}

static void memoryBarrier(VkCommandBuffer cb, VkPipelineStageFlags src,
                          VkAccessFlags srcAccess, VkPipelineStageFlags dst,
                          VkAccessFlags dstAccess) {
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = srcAccess;
  mb.dstAccessMask = dstAccess;
  vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

Error VulkanExecutor::record() {
  VkDevice d = dev->device;
  VkCommandBufferAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.commandPool = commandPool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  RLX_VK(vkAllocateCommandBuffers(d, &ai, &commands));
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  RLX_VK(vkBeginCommandBuffer(commands, &bi));
  VkCommandBuffer cb = commands;
  if (queries)
    vkCmdResetQueryPool(cb, queries, 0, 2 * program.dispatches.size());

  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const VkAccessFlags shaderRW =
      VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  // Everything earlier on the queue (the previous run) before this run.
  memoryBarrier(cb, compute | VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                compute | VK_PIPELINE_STAGE_TRANSFER_BIT,
                shaderRW | VK_ACCESS_TRANSFER_READ_BIT |
                    VK_ACCESS_TRANSFER_WRITE_BIT);
  if (!unified && !inputs.empty()) {
    std::vector<VkBufferCopy> regions;
    for (auto [off, bytes] : inputs)
      regions.push_back(VkBufferCopy{off, off, bytes});
    vkCmdCopyBuffer(cb, staging.buffer, arena.buffer, regions.size(),
                    regions.data());
    memoryBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT, compute, shaderRW);
  }

  // Dispatches in order; a barrier only where a dispatch touches arena
  // bytes that a dispatch since the last barrier wrote (or writes bytes one
  // read).
  std::vector<Range> pendingReads, pendingWrites;
  VkPipeline bound = VK_NULL_HANDLE;
  for (auto [i, dp] : llvm::enumerate(program.dispatches)) {
    std::vector<Range> reads, writes;
    for (const Binding &b : dp.bindings) {
      if (b.space != BufferSpace::Arena)
        continue; // Params and constants are read-only.
      Range r{b.space, b.viewOffset, b.viewOffset + b.viewBytes};
      (b.writes ? writes : reads).push_back(r);
    }
    auto hits = [](const std::vector<Range> &a, const std::vector<Range> &b) {
      return llvm::any_of(a, [&](const Range &x) {
        return llvm::any_of(b, [&](const Range &y) { return x.overlaps(y); });
      });
    };
    bool dependent = hits(reads, pendingWrites) ||
                     hits(writes, pendingWrites) || hits(writes, pendingReads);
    if (dependent || (profile && i > 0)) {
      memoryBarrier(cb, compute, VK_ACCESS_SHADER_WRITE_BIT, compute, shaderRW);
      ++barriers;
      pendingReads.clear();
      pendingWrites.clear();
    }
    llvm::append_range(pendingReads, reads);
    llvm::append_range(pendingWrites, writes);
    if (pipelines[dp.kernel] != bound) {
      bound = pipelines[dp.kernel];
      vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, bound);
    }
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE,
                            layouts[dp.kernel], 0, 1, &sets[i], 0, nullptr);
    if (queries)
      vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries,
                          2 * i);
    vkCmdDispatch(cb, dp.workgroups[0], dp.workgroups[1], dp.workgroups[2]);
    if (queries)
      vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries,
                          2 * i + 1);
  }

  if (!unified && !outputs.empty()) {
    memoryBarrier(cb, compute, VK_ACCESS_SHADER_WRITE_BIT,
                  VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    std::vector<VkBufferCopy> regions;
    for (auto [off, bytes] : outputs)
      regions.push_back(VkBufferCopy{off, off, bytes});
    vkCmdCopyBuffer(cb, arena.buffer, staging.buffer, regions.size(),
                    regions.data());
    memoryBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                  VK_ACCESS_HOST_READ_BIT);
  } else {
    memoryBarrier(cb, compute, VK_ACCESS_SHADER_WRITE_BIT,
                  VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  }
  RLX_VK(vkEndCommandBuffer(cb));
  return Error::success();
}

Error VulkanExecutor::submit(VkCommandBuffer cb) {
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  {
    std::lock_guard<std::mutex> lock(dev->queueMutex);
    RLX_VK(vkQueueSubmit(dev->queue, 1, &si, fence));
  }
  RLX_VK(vkWaitForFences(dev->device, 1, &fence, VK_TRUE, UINT64_MAX));
  RLX_VK(vkResetFences(dev->device, 1, &fence));
  return Error::success();
}

Error VulkanExecutor::upload(Buffer &dst, llvm::ArrayRef<uint8_t> bytes) {
  if (bytes.empty())
    return Error::success();
  if (dst.mapped) {
    std::memcpy(dst.mapped, bytes.data(), bytes.size());
    return Error::success();
  }
  auto tmp = createBuffer(*dev, bytes.size(), /*hostVisible=*/true,
                          "upload staging buffer");
  if (!tmp)
    return tmp.takeError();
  std::memcpy(tmp->mapped, bytes.data(), bytes.size());
  VkCommandBufferAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.commandPool = commandPool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb;
  Error err = check(vkAllocateCommandBuffers(dev->device, &ai, &cb),
                    "vkAllocateCommandBuffers");
  if (!err) {
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkBeginCommandBuffer(cb, &bi);
    // The previous run may still read the buffer in submission order.
    memoryBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                  VK_ACCESS_SHADER_READ_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT);
    VkBufferCopy region{0, 0, bytes.size()};
    vkCmdCopyBuffer(cb, tmp->buffer, dst.buffer, 1, &region);
    memoryBarrier(
        cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
    err = check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    if (!err)
      err = submit(cb);
    vkFreeCommandBuffers(dev->device, commandPool, 1, &cb);
  }
  destroyBuffer(*dev, *tmp);
  return err;
}

Error VulkanExecutor::init(const Manifest &manifest) {
  VkDevice d = dev->device;
  const DeviceInfo &info = dev->info;
  // Host-visible device memory when the device shares the host's.
  // RLX_VULKAN_STAGING=1 forces the discrete-GPU path (device-local buffers,
  // staging copies), to test it on any device.
  const char *forceStaging = std::getenv("RLX_VULKAN_STAGING");
  if (!info.discrete && !(forceStaging && StringRef(forceStaging) != "0")) {
    for (uint32_t i = 0; i < dev->memory.memoryTypeCount; ++i) {
      VkMemoryPropertyFlags f = dev->memory.memoryTypes[i].propertyFlags;
      VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      if ((f & want) == want)
        unified = true;
    }
  }
  auto make = [&](Buffer &b, uint64_t size, bool host,
                  StringRef what) -> Error {
    auto buf = createBuffer(*dev, size, host, what);
    if (!buf)
      return buf.takeError();
    b = *buf;
    return Error::success();
  };
  if (Error err = make(arena, manifest.arenaSize, unified, "arena"))
    return err;
  if (Error err = make(params, manifest.paramSize, unified, "parameter pool"))
    return err;
  if (Error err =
          make(constants, program.constants.size(), unified, "constants"))
    return err;
  if (!unified)
    if (Error err = make(staging, manifest.arenaSize, true, "staging buffer"))
      return err;
  for (const ManifestEntry &e : manifest.entries) {
    if (e.kind == IOKind::Input)
      inputs.push_back({e.offset, e.byteSize()});
    else if (e.kind == IOKind::Output)
      outputs.push_back({e.offset, e.byteSize()});
  }

  VkCommandPoolCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  ci.queueFamilyIndex = dev->queueFamily;
  RLX_VK(vkCreateCommandPool(d, &ci, nullptr, &commandPool));
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  RLX_VK(vkCreateFence(d, &fi, nullptr, &fence));

  const char *prof = std::getenv("RLX_VULKAN_PROFILE");
  profile = prof && StringRef(prof) != "0" && dev->timestampValidBits > 0 &&
            !program.dispatches.empty();
  if (profile) {
    VkQueryPoolCreateInfo qi{};
    qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2 * program.dispatches.size();
    RLX_VK(vkCreateQueryPool(d, &qi, nullptr, &queries));
    kernelTimes.assign(program.kernels.size(), {0.0, 0});
  }

  if (Error err = createPipelines())
    return err;
  if (Error err = createDescriptors())
    return err;
  if (Error err = upload(constants, program.constants))
    return err;
  return record();
}

Error VulkanExecutor::execute(const Manifest &,
                              llvm::MutableArrayRef<uint8_t> hostArena,
                              llvm::ArrayRef<uint8_t> hostParams,
                              bool paramsChanged) {
  if (paramsChanged || !paramsUploaded) {
    if (Error err = upload(params, hostParams))
      return err;
    paramsUploaded = true;
  }
  uint8_t *io = unified ? arena.mapped : staging.mapped;
  for (auto [off, bytes] : inputs)
    std::memcpy(io + off, hostArena.data() + off, bytes);
  if (Error err = submit(commands))
    return err;
  for (auto [off, bytes] : outputs)
    std::memcpy(hostArena.data() + off, io + off, bytes);
  if (profile) {
    std::vector<uint64_t> stamps(2 * program.dispatches.size());
    RLX_VK(vkGetQueryPoolResults(
        dev->device, queries, 0, stamps.size(),
        stamps.size() * sizeof(uint64_t), stamps.data(), sizeof(uint64_t),
        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    for (auto [i, dp] : llvm::enumerate(program.dispatches)) {
      double ms =
          (stamps[2 * i + 1] - stamps[2 * i]) * dev->timestampPeriod * 1e-6;
      kernelTimes[dp.kernel].first += ms;
      kernelTimes[dp.kernel].second += 1;
    }
    ++runs;
  }
  return Error::success();
}

Expected<std::unique_ptr<Executor>>
vulkan::createExecutor(std::shared_ptr<Device> device, Program program,
                       const Manifest &manifest) {
  auto exec =
      std::make_unique<VulkanExecutor>(std::move(device), std::move(program));
  if (Error err = exec->init(manifest))
    return std::move(err);
  return std::unique_ptr<Executor>(std::move(exec));
}
