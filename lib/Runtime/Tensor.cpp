//===- Tensor.cpp - Host tensors for the RLX runtime ----------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/Tensor.h"
#include "RLX/Support/CheckedSize.h"
#include "RLX/Weights/Npy.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <cstring>

using namespace rlx;

size_t rlx::dtypeBytes(DType dtype) { return dtypeBlockBytes(dtype); }

Tensor::Tensor(DType dtype, llvm::ArrayRef<int64_t> shape)
    : type(dtype), dims(shape.begin(), shape.end()) {
  std::optional<uint64_t> bytes =
      checkedByteSize(shape, dtypeBlockBytes(dtype), dtypeBlockElements(dtype));
  // Callers size tensors from checked manifests and existing arrays; a shape
  // that wraps must not give a small buffer.
  if (!bytes)
    llvm::report_fatal_error(llvm::Twine("tensor ") + describe() +
                             ": byte size overflows");
  storage.assign(*bytes, 0);
}

size_t Tensor::numElements() const {
  return checkedNumElements(dims).value_or(SIZE_MAX);
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

std::string Tensor::summary() const {
  std::string s = describe();
  if (type != DType::F32)
    return s;
  llvm::raw_string_ostream os(s);
  auto v = data<float>();
  double sum = 0, sumAbs = 0;
  for (float x : v) {
    sum += x;
    sumAbs += std::fabs(x);
  }
  os << "  sum " << llvm::format("%.6g", sum) << "  mean|x| "
     << llvm::format("%.6g", v.empty() ? 0.0 : sumAbs / v.size()) << "  [";
  for (size_t i = 0; i < v.size() && i < 6; ++i)
    os << (i ? ", " : "") << llvm::format("%.6g", v[i]);
  os << (v.size() > 6 ? ", ...]" : "]");
  return s;
}

llvm::Expected<Tensor> rlx::readTensorNpy(llvm::StringRef path) {
  llvm::Expected<NpyArray> array = readNpy(path);
  if (!array)
    return array.takeError();
  Tensor t(array->dtype, array->shape);
  if (t.byteSize() != array->data.size())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": unsupported .npy dtype");
  if (t.byteSize())
    std::memcpy(t.mutableBytes().data(), array->data.data(), t.byteSize());
  return t;
}

llvm::Error rlx::writeTensorNpy(llvm::StringRef path, const Tensor &t) {
  if (!npyDescrOf(t.dtype()))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": no .npy writer for " +
                                       t.describe());
  return writeNpy(path, t.dtype(), t.shape(), t.bytes());
}
