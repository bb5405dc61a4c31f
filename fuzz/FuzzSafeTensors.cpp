//===- FuzzSafeTensors.cpp - Fuzz the safetensors reader ------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// SafeTensorsFile::fromBuffer on arbitrary bytes, then every tensor read the
// ways the runtime reads them.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "RLX/Weights/SafeTensors.h"

using namespace rlx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<std::unique_ptr<SafeTensorsFile>> file =
      SafeTensorsFile::fromBuffer(fuzz::bufferOf(data, size), "fuzz");
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  fuzz::readAll(**file);
  return 0;
}
