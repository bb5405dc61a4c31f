//===- Tensor.h - Element types and tensor descriptions ---------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The element types that weight files store, the description of one stored
// tensor, checked element and byte counts, and exact conversions between
// f16/bf16 and f32. Nothing here depends on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_WEIGHTS_TENSOR_H
#define RLX_WEIGHTS_TENSOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace rlx {

/// The storage type of a tensor. The quantized types follow ggml's block
/// layouts (ggml-common.h): Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 pack 32 elements
/// per block, the K-quants Q2_K, Q3_K, Q4_K, Q5_K and Q6_K pack 256. New
/// enumerators go at the end (tables are indexed by the value).
enum class DType : uint8_t {
  F32,
  F16,
  BF16,
  F64,
  I8,
  I32,
  I64,
  U8,
  Bool,
  Q8_0,
  Q4_0,
  Q4_K,
  Q6_K,
  Q4_1,
  Q5_0,
  Q5_1,
  Q2_K,
  Q3_K,
  Q5_K,
  I16,
};

/// The canonical name (ggml's spelling for the quantized types): "f32",
/// "f16", "bf16", "f64", "i8", "i32", "i64", "u8", "bool", "q8_0", "q4_0",
/// "q4_K", "q6_K", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "q5_K", "i16".
llvm::StringRef dtypeName(DType dtype);

/// The type named `name`, compared case-insensitively with dtypeName().
std::optional<DType> dtypeFromName(llvm::StringRef name);

/// Elements per storage block: 1 for the plain types, 32 for Q8_0, Q4_0,
/// Q4_1, Q5_0 and Q5_1, 256 for the K-quants.
uint64_t dtypeBlockElements(DType dtype);

/// Bytes per storage block (for the plain types, the element size).
uint64_t dtypeBlockBytes(DType dtype);

/// How `dtype` is stored, without decoding anything: `elements` values in
/// `bytes` bytes per block (1 element of its size for the plain types).
struct BlockFormat {
  uint32_t elements;
  uint32_t bytes;
};
BlockFormat blockFormat(DType dtype);

/// Whether `dtype` is a block-quantized type.
inline bool isQuantized(DType dtype) { return dtypeBlockElements(dtype) > 1; }

/// One tensor stored in a file: its name, storage type, row-major shape
/// (numpy order: the last dimension varies fastest), and the byte range of
/// its data (`offset` is relative to the start of the file).
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  llvm::SmallVector<int64_t> shape;
  uint64_t offset = 0;
  uint64_t byteSize = 0;
};

/// The product of `shape`; errors on a negative dimension or if the product
/// overflows 64 bits. The empty shape (a scalar) has one element.
llvm::Expected<uint64_t> numElements(llvm::ArrayRef<int64_t> shape);

/// The number of bytes a tensor of `dtype` and `shape` occupies. Errors on a
/// negative dimension, an overflowing element or byte count, and, for the
/// quantized types, a shape whose last dimension is not a whole number of
/// blocks (or a scalar shape).
llvm::Expected<uint64_t> storageBytes(DType dtype,
                                      llvm::ArrayRef<int64_t> shape);

/// Formats a shape as "[2, 3]".
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Exact IEEE half to single conversion (subnormals, infinities and NaN
/// payloads included).
float f16ToF32(uint16_t bits);

/// Exact bfloat16 to single conversion.
inline float bf16ToF32(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float result;
  static_assert(sizeof(result) == sizeof(wide), "float is not 32 bits");
  __builtin_memcpy(&result, &wide, sizeof(result));
  return result;
}

/// Single to half with round-to-nearest-even; overflow gives infinity and NaN
/// stays a (quiet) NaN.
uint16_t f32ToF16(float value);

/// Single to bfloat16 with round-to-nearest-even; NaN stays a (quiet) NaN.
uint16_t f32ToBF16(float value);

/// Decodes `src`, the storage of `dst.size()` elements of type `dtype`, into
/// f32 (quantized types are dequantized as ggml does; integers and bools are
/// converted by value). Errors if `src` is not exactly the storage size of
/// that many elements, or if the count is not a whole number of blocks.
llvm::Error decodeToF32(DType dtype, llvm::ArrayRef<uint8_t> src,
                        llvm::MutableArrayRef<float> dst);

/// The number of non-finite values (NaN or infinity) in `bytes`, the
/// storage of a tensor of `dtype`, read from the bits alone: an f32, f16,
/// bf16 or f64 value whose exponent bits are all ones; every element of a
/// ggml block whose f16 scale (d, or the min scale of Q4_1, Q5_1, Q2_K, Q4_K
/// and Q5_K) is non-finite (the quantized integers are always finite). The
/// integer types and bool give 0, as do trailing bytes short of a whole
/// element or block.
uint64_t countNonFinite(DType dtype, llvm::ArrayRef<uint8_t> bytes);

} // namespace rlx

#endif // RLX_WEIGHTS_TENSOR_H
