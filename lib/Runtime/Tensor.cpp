//===- Tensor.cpp - Host tensors for the RLX runtime ----------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/Tensor.h"
#include "llvm/Support/raw_ostream.h"
#include <cstring>

using namespace rlx;

size_t rlx::dtypeBytes(DType dtype) { return dtypeBlockBytes(dtype); }

Tensor::Tensor(DType dtype, llvm::ArrayRef<int64_t> shape)
    : type(dtype), dims(shape.begin(), shape.end()) {
  storage.assign(numElements() * dtypeBytes(dtype), 0);
}

size_t Tensor::numElements() const {
  size_t n = 1;
  for (int64_t d : dims)
    n *= static_cast<size_t>(d);
  return n;
}

template <typename T>
static Tensor make(DType dtype, llvm::ArrayRef<int64_t> shape,
                   llvm::ArrayRef<T> values) {
  Tensor t(dtype, shape);
  size_t n = std::min(values.size() * sizeof(T), t.byteSize());
  if (n)
    std::memcpy(t.mutableBytes().data(), values.data(), n);
  return t;
}

Tensor Tensor::fromF32(llvm::ArrayRef<int64_t> shape,
                       llvm::ArrayRef<float> values) {
  return make(DType::F32, shape, values);
}
Tensor Tensor::fromI32(llvm::ArrayRef<int64_t> shape,
                       llvm::ArrayRef<int32_t> values) {
  return make(DType::I32, shape, values);
}
Tensor Tensor::fromI64(llvm::ArrayRef<int64_t> shape,
                       llvm::ArrayRef<int64_t> values) {
  return make(DType::I64, shape, values);
}

std::string Tensor::describe() const {
  return (dtypeName(type) + formatShape(dims)).str();
}
