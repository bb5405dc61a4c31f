//===- rlx-vulkan-probe.cpp - List the Vulkan devices RLX can use ---------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Prints one line per Vulkan device (index, name, type, API version and the
// features RLX uses) and the one `Session(Device::Vulkan)` would select.
// Exits 0 when a device can be opened, 1 otherwise: the lit and pytest
// suites use it to decide whether the Vulkan tests can run.
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/Vulkan.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace rlx;
namespace cl = llvm::cl;

static cl::opt<bool> quiet("quiet",
                           cl::desc("Print nothing; exit status only"));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "rlx-vulkan-probe: list the Vulkan devices\n");
  auto devices = vulkan::listDevices();
  if (!devices) {
    std::string msg = llvm::toString(devices.takeError());
    if (!quiet)
      llvm::WithColor::error(llvm::errs(), "rlx-vulkan-probe") << msg << "\n";
    return 1;
  }
  if (!quiet)
    for (const vulkan::DeviceInfo &d : *devices)
      llvm::outs() << d.index << ": " << d.describe()
                   << (d.int64 ? " int64" : "")
                   << (d.int8Storage ? " int8" : "")
                   << (d.float16Storage ? " float16" : "")
                   << " minStorageBufferOffsetAlignment="
                   << d.minStorageBufferOffsetAlignment
                   << " maxComputeWorkGroupInvocations="
                   << d.maxComputeWorkGroupInvocations
                   << " maxComputeSharedMemorySize="
                   << d.maxComputeSharedMemorySize << "\n";
  auto device = vulkan::openDevice("");
  if (!device) {
    std::string msg = llvm::toString(device.takeError());
    if (!quiet)
      llvm::WithColor::error(llvm::errs(), "rlx-vulkan-probe") << msg << "\n";
    return 1;
  }
  if (!quiet)
    llvm::outs() << "selected: " << vulkan::getDeviceInfo(**device).describe()
                 << "\n";
  return 0;
}
