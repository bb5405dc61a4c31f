//===- Vulkan.h - Run compiled SPIR-V kernels through Vulkan ----*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The Vulkan side of the runtime, free of MLIR. A Program is what the SPIR-V
// back end compiled: one SPIR-V binary per kernel and the dispatch schedule
// (kernel, workgroup count, storage-buffer bindings into the arena, the
// parameter pool or the constant pool). A Device is a Vulkan instance,
// logical device and compute queue, shared by the models compiled for it.
// createExecutor builds everything a run needs once (buffers, pipelines,
// descriptor sets, one command buffer with barriers only between dependent
// dispatches); each run copies the inputs in, replays the command buffer and
// copies the outputs out. docs/GPU.md describes the object lifetimes.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_RUNTIME_VULKAN_H
#define RLX_RUNTIME_VULKAN_H

#include "RLX/Runtime/CompiledModel.h"
#include "RLX/Support/Enums.h"
#include "llvm/Support/Error.h"
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rlx::vulkan {

/// A Vulkan device as its driver reports it.
struct DeviceInfo {
  unsigned index = 0;
  std::string name;
  /// "discrete GPU", "integrated GPU", "virtual GPU", "CPU" or "other".
  std::string type;
  bool discrete = false;
  uint32_t apiVersion = 0;
  uint64_t minStorageBufferOffsetAlignment = 256;
  uint64_t maxStorageBufferRange = 0;
  uint32_t maxComputeWorkGroupInvocations = 128;
  uint32_t maxComputeSharedMemorySize = 16384;
  std::array<uint32_t, 3> maxComputeWorkGroupCount = {65535, 65535, 65535};
  /// shaderInt64.
  bool int64 = false;
  /// shaderInt8 and storageBuffer8BitAccess.
  bool int8Storage = false;
  /// shaderFloat16 and storageBuffer16BitAccess.
  bool float16Storage = false;
  /// VK_KHR_cooperative_matrix is exposed.
  bool cooperativeMatrix = false;

  /// "llvmpipe (LLVM 15.0.6, 256 bits) (CPU, Vulkan 1.3)".
  std::string describe() const;
};

/// The devices of every Vulkan driver on this machine; an error when there
/// is no Vulkan loader or driver.
llvm::Expected<std::vector<DeviceInfo>> listDevices();

/// An open Vulkan device (instance, logical device, compute queue).
class Device;

/// Opens a device: `RLX_VULKAN_DEVICE` when set, else `preference`, each a
/// device index or a case-insensitive substring of the name; with neither,
/// the first discrete GPU, else the first device. Devices are shared: a
/// second call for the same device returns the open one.
llvm::Expected<std::shared_ptr<Device>> openDevice(llvm::StringRef preference);
const DeviceInfo &getDeviceInfo(const Device &device);

/// One storage buffer of a dispatch (descriptor set 0, binding = index).
struct Binding {
  BufferSpace space = BufferSpace::Arena;
  /// Descriptor offset (a multiple of minStorageBufferOffsetAlignment) and
  /// range, in bytes.
  uint64_t offset = 0, range = 0;
  /// The bytes the kernel reads or writes, for ordering dispatches.
  uint64_t viewOffset = 0, viewBytes = 0;
  bool writes = false;
};

/// A compiled kernel: a SPIR-V module with one compute entry point.
struct Kernel {
  std::string name;
  std::string entryPoint;
  std::vector<uint32_t> spirv;
  unsigned numBindings = 0;
};

struct Dispatch {
  unsigned kernel = 0;
  std::array<uint32_t, 3> workgroups = {1, 1, 1};
  std::vector<Binding> bindings;
};

/// What the SPIR-V back end compiled for one entry point.
struct Program {
  std::vector<Kernel> kernels;
  /// In execution order.
  std::vector<Dispatch> dispatches;
  /// The constant pool (non-splat constants the kernels read).
  std::vector<uint8_t> constants;
};

/// An executor running `program` on `device` for a model with `manifest`:
/// device buffers for the arena, parameter pool and constants, one compute
/// pipeline per kernel, one descriptor set per dispatch and one command
/// buffer, all created here. With `RLX_VULKAN_PROFILE=1` every dispatch is
/// timed and a per-kernel table is printed to stderr when the executor is
/// destroyed.
llvm::Expected<std::unique_ptr<Executor>>
createExecutor(std::shared_ptr<Device> device, Program program,
               const Manifest &manifest);

} // namespace rlx::vulkan

#endif // RLX_RUNTIME_VULKAN_H
