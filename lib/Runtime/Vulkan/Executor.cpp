//===- Executor.cpp - Run a compiled program on a Vulkan device -----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The executor of a compiled model: its buffers, one compute pipeline per
// kernel, one descriptor set per dispatch and one command buffer recorded
// once, with a barrier only between dependent dispatches. A run copies the
// inputs in, replays the command buffer and copies the outputs out.
//
//===----------------------------------------------------------------------===//

#include "Device.h"
#include "Memory.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cstring>

using namespace rlx;
using namespace rlx::vulkan;
using llvm::Error;
using llvm::Expected;

//===----------------------------------------------------------------------===//
// The executor
//===----------------------------------------------------------------------===//

namespace {

/// The compute pipeline of one kernel and what it is made of.
struct KernelPipeline {
  UniqueShaderModule module;
  UniqueDescriptorSetLayout setLayout;
  UniquePipelineLayout layout;
  UniquePipeline pipeline;
};

/// A byte range of one space, for ordering dispatches.
struct Range {
  BufferSpace space;
  uint64_t lo, hi;
  bool overlaps(const Range &o) const {
    return space == o.space && lo < o.hi && o.lo < hi;
  }
};

/// The arena bytes the dispatches recorded since the last barrier read and
/// wrote. A dispatch needs a barrier before it when it reads bytes one of
/// them wrote, or writes bytes one of them read or wrote (exact view ranges;
/// the parameters and constants are read-only and never order dispatches).
class Hazards {
public:
  /// Whether `dp` must wait for a dispatch since the last barrier.
  bool dependent(const Dispatch &dp) const {
    std::vector<Range> reads, writes;
    collect(dp, reads, writes);
    return hits(reads, pendingWrites) || hits(writes, pendingWrites) ||
           hits(writes, pendingReads);
  }
  /// A barrier was recorded: everything before it is visible.
  void clear() {
    pendingReads.clear();
    pendingWrites.clear();
  }
  /// `dp` was recorded.
  void add(const Dispatch &dp) { collect(dp, pendingReads, pendingWrites); }

private:
  static void collect(const Dispatch &dp, std::vector<Range> &reads,
                      std::vector<Range> &writes) {
    for (const Binding &b : dp.bindings) {
      if (b.space != BufferSpace::Arena)
        continue; // Params and constants are read-only.
      Range r{b.space, b.viewOffset, b.viewOffset + b.viewBytes};
      (b.writes ? writes : reads).push_back(r);
    }
  }
  static bool hits(const std::vector<Range> &a, const std::vector<Range> &b) {
    return llvm::any_of(a, [&](const Range &x) {
      return llvm::any_of(b, [&](const Range &y) { return x.overlaps(y); });
    });
  }

  std::vector<Range> pendingReads, pendingWrites;
};

class VulkanExecutor : public Executor {
public:
  VulkanExecutor(std::shared_ptr<Device> dev, Program program)
      : dev(std::move(dev)), program(std::move(program)) {}
  /// Prints the profile, if any; the members destroy the Vulkan objects.
  ~VulkanExecutor() override;

  Error init(const Manifest &manifest, const RuntimeOptions &options);
  Error execute(const Manifest &manifest, llvm::MutableArrayRef<uint8_t> arena,
                llvm::ArrayRef<uint8_t> params, bool paramsChanged) override;
  std::string describe() const override {
    return "vulkan: " + dev->info.describe();
  }

private:
  Error createPipelines();
  Error createDescriptors();
  Error record();
  Error upload(const Buffer &dst, llvm::ArrayRef<uint8_t> bytes) {
    return vulkan::upload(*dev, commandPool.get(), fence.get(), dst, bytes);
  }
  const Buffer &bufferOf(BufferSpace space) const {
    return space == BufferSpace::Arena
               ? arena
               : (space == BufferSpace::Params ? params : constants);
  }

  // The Vulkan objects are destroyed bottom-up: each before those it was
  // created from, all before the device.
  std::shared_ptr<Device> dev;
  Program program;
  /// Host-visible device memory (integrated GPUs, CPU devices): no copies
  /// beyond the inputs and outputs, no staging buffer.
  bool unified = false;
  Buffer arena, params, constants, staging;
  /// One per kernel.
  std::vector<KernelPipeline> pipelines;
  UniqueDescriptorPool descriptorPool;
  /// One per dispatch, freed with `descriptorPool`.
  std::vector<VkDescriptorSet> sets;
  UniqueCommandPool commandPool;
  /// Recorded once, replayed by every run.
  UniqueCommandBuffer commands;
  /// Two timestamps per dispatch when profiling.
  UniqueQueryPool queries;
  UniqueFence fence;
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
}

//===----------------------------------------------------------------------===//
// Pipelines and descriptor sets
//===----------------------------------------------------------------------===//

Error VulkanExecutor::createPipelines() {
  VkDevice d = dev->device.get();
  for (const Kernel &k : program.kernels) {
    KernelPipeline &kp = pipelines.emplace_back();
    VkShaderModuleCreateInfo mi{};
    mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    mi.codeSize = k.spirv.size() * sizeof(uint32_t);
    mi.pCode = k.spirv.data();
    VkShaderModule module = VK_NULL_HANDLE;
    RLX_VK(vkCreateShaderModule(d, &mi, nullptr, &module));
    kp.module = adopt<VkShaderModule, vkDestroyShaderModule>(d, module);

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
    VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
    RLX_VK(vkCreateDescriptorSetLayout(d, &si, nullptr, &setLayout));
    kp.setLayout = adopt<VkDescriptorSetLayout, vkDestroyDescriptorSetLayout>(
        d, setLayout);

    VkPipelineLayoutCreateInfo li{};
    li.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    li.setLayoutCount = 1;
    li.pSetLayouts = &setLayout;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    RLX_VK(vkCreatePipelineLayout(d, &li, nullptr, &layout));
    kp.layout = adopt<VkPipelineLayout, vkDestroyPipelineLayout>(d, layout);

    VkComputePipelineCreateInfo pi{};
    pi.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pi.stage.module = module;
    pi.stage.pName = k.entryPoint.c_str();
    pi.layout = layout;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkResult r =
        vkCreateComputePipelines(d, VK_NULL_HANDLE, 1, &pi, nullptr, &pipeline);
    if (r != VK_SUCCESS)
      return fail("Vulkan: creating the pipeline of kernel '" + k.name +
                  "' failed: " + resultName(r));
    kp.pipeline = adopt<VkPipeline, vkDestroyPipeline>(d, pipeline);
  }
  return Error::success();
}

Error VulkanExecutor::createDescriptors() {
  VkDevice d = dev->device.get();
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
  VkDescriptorPool pool = VK_NULL_HANDLE;
  RLX_VK(vkCreateDescriptorPool(d, &pi, nullptr, &pool));
  descriptorPool = adopt<VkDescriptorPool, vkDestroyDescriptorPool>(d, pool);

  const DeviceInfo &info = dev->info;
  for (const Dispatch &dp : program.dispatches) {
    // A program read back from the compile cache is checked like any input.
    if (dp.kernel >= program.kernels.size())
      return fail("Vulkan: a dispatch runs kernel " + llvm::Twine(dp.kernel) +
                  ", but the program has " +
                  llvm::Twine(program.kernels.size()) + " kernels");
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
    VkDescriptorSetLayout setLayout = pipelines[dp.kernel].setLayout.get();
    ai.pSetLayouts = &setLayout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    RLX_VK(vkAllocateDescriptorSets(d, &ai, &set));
    sets.push_back(set);
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
      infos.push_back(
          VkDescriptorBufferInfo{buf.buffer.get(), b.offset, b.range});
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

//===----------------------------------------------------------------------===//
// The command buffer
//===----------------------------------------------------------------------===//

Error VulkanExecutor::record() {
  VkDevice d = dev->device.get();
  VkCommandBufferAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.commandPool = commandPool.get();
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  RLX_VK(vkAllocateCommandBuffers(d, &ai, &cb));
  commands = UniqueCommandBuffer(cb, CommandBufferDeleter{d, ai.commandPool});
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  RLX_VK(vkBeginCommandBuffer(cb, &bi));
  VkQueryPool timestamps = queries.get();
  if (timestamps)
    vkCmdResetQueryPool(cb, timestamps, 0, 2 * program.dispatches.size());

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
    vkCmdCopyBuffer(cb, staging.buffer.get(), arena.buffer.get(),
                    regions.size(), regions.data());
    memoryBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT, compute, shaderRW);
  }

  // Dispatches in order; a barrier only where a dispatch depends on one
  // since the last barrier (between all of them when profiling).
  Hazards hazards;
  VkPipeline bound = VK_NULL_HANDLE;
  for (auto [i, dp] : llvm::enumerate(program.dispatches)) {
    if (hazards.dependent(dp) || (profile && i > 0)) {
      memoryBarrier(cb, compute, VK_ACCESS_SHADER_WRITE_BIT, compute, shaderRW);
      ++barriers;
      hazards.clear();
    }
    hazards.add(dp);
    const KernelPipeline &kp = pipelines[dp.kernel];
    if (kp.pipeline.get() != bound) {
      bound = kp.pipeline.get();
      vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, bound);
    }
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, kp.layout.get(),
                            0, 1, &sets[i], 0, nullptr);
    if (timestamps)
      vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, timestamps,
                          2 * i);
    vkCmdDispatch(cb, dp.workgroups[0], dp.workgroups[1], dp.workgroups[2]);
    if (timestamps)
      vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps,
                          2 * i + 1);
  }

  if (!unified && !outputs.empty()) {
    memoryBarrier(cb, compute, VK_ACCESS_SHADER_WRITE_BIT,
                  VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    std::vector<VkBufferCopy> regions;
    for (auto [off, bytes] : outputs)
      regions.push_back(VkBufferCopy{off, off, bytes});
    vkCmdCopyBuffer(cb, arena.buffer.get(), staging.buffer.get(),
                    regions.size(), regions.data());
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

//===----------------------------------------------------------------------===//
// Creation and runs
//===----------------------------------------------------------------------===//

Error VulkanExecutor::init(const Manifest &manifest,
                           const RuntimeOptions &options) {
  VkDevice d = dev->device.get();
  unified = hasUnifiedMemory(*dev, options);
  auto make = [&](Buffer &b, uint64_t size, bool host,
                  llvm::StringRef what) -> Error {
    Expected<Buffer> buf = createBuffer(*dev, size, host, what);
    if (!buf)
      return buf.takeError();
    b = std::move(*buf);
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
  VkCommandPool pool = VK_NULL_HANDLE;
  RLX_VK(vkCreateCommandPool(d, &ci, nullptr, &pool));
  commandPool = adopt<VkCommandPool, vkDestroyCommandPool>(d, pool);
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  VkFence f = VK_NULL_HANDLE;
  RLX_VK(vkCreateFence(d, &fi, nullptr, &f));
  fence = adopt<VkFence, vkDestroyFence>(d, f);

  profile = options.profile && dev->timestampValidBits > 0 &&
            !program.dispatches.empty();
  if (profile) {
    VkQueryPoolCreateInfo qi{};
    qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2 * program.dispatches.size();
    VkQueryPool timestamps = VK_NULL_HANDLE;
    RLX_VK(vkCreateQueryPool(d, &qi, nullptr, &timestamps));
    queries = adopt<VkQueryPool, vkDestroyQueryPool>(d, timestamps);
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
  uint8_t *io = unified ? arena.mapped() : staging.mapped();
  for (auto [off, bytes] : inputs)
    std::memcpy(io + off, hostArena.data() + off, bytes);
  if (Error err = dev->submitAndWait(commands.get(), fence.get()))
    return err;
  for (auto [off, bytes] : outputs)
    std::memcpy(hostArena.data() + off, io + off, bytes);
  if (profile) {
    std::vector<uint64_t> stamps(2 * program.dispatches.size());
    RLX_VK(vkGetQueryPoolResults(
        dev->device.get(), queries.get(), 0, stamps.size(),
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
  return createExecutor(std::move(device), std::move(program), manifest,
                        RuntimeOptions::fromEnvironment());
}

Expected<std::unique_ptr<Executor>>
vulkan::createExecutor(std::shared_ptr<Device> device, Program program,
                       const Manifest &manifest,
                       const RuntimeOptions &options) {
  auto exec =
      std::make_unique<VulkanExecutor>(std::move(device), std::move(program));
  // On failure `exec` goes here, and with it every object created so far.
  if (Error err = exec->init(manifest, options))
    return std::move(err);
  return std::unique_ptr<Executor>(std::move(exec));
}
