//===- FuzzNpy.cpp - Fuzz the .npy reader ---------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// parseNpy on arbitrary bytes, then what readTensorNpy and the tools do with
// the array: a runtime Tensor of its shape, its f32 values and a summary.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "RLX/Runtime/Tensor.h"
#include "RLX/Weights/Npy.h"

#include <cstring>

using namespace rlx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<NpyArray> array =
      parseNpy(llvm::ArrayRef<uint8_t>(data, size), "fuzz");
  if (!array) {
    llvm::consumeError(array.takeError());
    return 0;
  }
  if (array->numElements() > fuzz::kMaxDecodeElements)
    return 0;
  llvm::Expected<std::vector<float>> values = array->toF32();
  if (!values)
    llvm::consumeError(values.takeError());
  Tensor t(array->dtype, array->shape);
  if (t.byteSize() != array->data.size())
    abort(); // readTensorNpy relies on this.
  if (!array->data.empty())
    std::memcpy(t.mutableBytes().data(), array->data.data(), t.byteSize());
  (void)t.summary();
  return 0;
}
