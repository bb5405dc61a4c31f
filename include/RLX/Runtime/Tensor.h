//===- Tensor.h - Host tensors for the RLX runtime ---------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A dense row-major tensor in host memory that owns its bytes: what a model
// takes as inputs and returns as outputs.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_RUNTIME_TENSOR_H
#define RLX_RUNTIME_TENSOR_H

#include "RLX/Weights/Tensor.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <string>
#include <vector>

namespace rlx {

/// Bytes per element of a non-quantized dtype.
size_t dtypeBytes(DType dtype);

class Tensor {
public:
  Tensor() = default;
  /// A zero-filled tensor.
  Tensor(DType dtype, llvm::ArrayRef<int64_t> shape);

  static Tensor fromF32(llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<float> values);
  static Tensor fromI32(llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<int32_t> values);
  static Tensor fromI64(llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<int64_t> values);

  DType dtype() const { return type; }
  llvm::ArrayRef<int64_t> shape() const { return dims; }
  size_t numElements() const;
  size_t byteSize() const { return storage.size(); }
  llvm::ArrayRef<uint8_t> bytes() const { return storage; }
  llvm::MutableArrayRef<uint8_t> mutableBytes() { return storage; }

  template <typename T> llvm::ArrayRef<T> data() const {
    return {reinterpret_cast<const T *>(storage.data()),
            storage.size() / sizeof(T)};
  }
  template <typename T> llvm::MutableArrayRef<T> mutableData() {
    return {reinterpret_cast<T *>(storage.data()), storage.size() / sizeof(T)};
  }

  /// "f32[1, 8, 64]".
  std::string describe() const;
  /// describe() plus, for f32, the sum, the mean magnitude and the first
  /// values: what the tools print for an output.
  std::string summary() const;

private:
  DType type = DType::F32;
  llvm::SmallVector<int64_t, 4> dims;
  std::vector<uint8_t> storage;
};

/// A borrowed, read-only view of a dense row-major tensor owned elsewhere
/// (a Tensor, a numpy array): what CompiledModel::run reads its inputs from
/// without copying them first.
struct TensorRef {
  DType dtype = DType::F32;
  llvm::ArrayRef<int64_t> shape;
  llvm::ArrayRef<uint8_t> bytes;

  TensorRef(DType dtype, llvm::ArrayRef<int64_t> shape,
            llvm::ArrayRef<uint8_t> bytes)
      : dtype(dtype), shape(shape), bytes(bytes) {}
  /*implicit*/ TensorRef(const Tensor &t)
      : dtype(t.dtype()), shape(t.shape()), bytes(t.bytes()) {}
};

/// Reads a `.npy` file (f32, f16, i32, i64, bool, u8) into a Tensor.
llvm::Expected<Tensor> readTensorNpy(llvm::StringRef path);
/// Writes an f32, i32 or i64 tensor as `.npy`.
llvm::Error writeTensorNpy(llvm::StringRef path, const Tensor &tensor);

} // namespace rlx

#endif // RLX_RUNTIME_TENSOR_H
