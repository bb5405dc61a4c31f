//===- Npy.h - numpy .npy reader and writer ---------------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The .npy format: "\x93NUMPY", major and minor version bytes, a header
// length (u16 for version 1, u32 for versions 2 and 3), then a Python dict
// literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline, then the raw C-order data.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_WEIGHTS_NPY_H
#define RLX_WEIGHTS_NPY_H

#include "RLX/Weights/Tensor.h"

#include <optional>
#include <vector>

namespace rlx {

/// An owned array read from a .npy file. The data is little-endian, C order.
struct NpyArray {
  DType dtype = DType::F32;
  llvm::SmallVector<int64_t> shape;
  std::vector<uint8_t> data;

  /// The element count (the product of `shape`).
  uint64_t numElements() const;
  /// Converts to f32 (see decodeToF32).
  llvm::Expected<std::vector<float>> toF32() const;
};

/// Reads a .npy file. Supported descr: '<f4', '<f2', '<f8', '|i1', '<i2',
/// '<i4', '<i8', '|u1', '|b1', and '|V2' for bf16 (numpy has no bfloat16:
/// the raw bits as a 2-byte void, `np.load(f).view(np.uint16)` in numpy).
/// A single-byte or void descr may carry any byte-order character. Fortran
/// order is rejected; the data must be exactly the size the shape implies.
/// 0-d arrays (shape ()) and empty ones (a 0 in the shape) are read.
llvm::Expected<NpyArray> readNpy(llvm::StringRef path);

/// Parses .npy bytes; `description` names them in messages.
llvm::Expected<NpyArray> parseNpy(llvm::ArrayRef<uint8_t> bytes,
                                  llvm::StringRef description);

/// Writes a version 1.0 .npy file (version 2.0 if the header needs it).
/// Errors if `data` does not have the element count of `shape`.
llvm::Error writeNpy(llvm::StringRef path, llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<float> data);
llvm::Error writeNpy(llvm::StringRef path, llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<int32_t> data);
llvm::Error writeNpy(llvm::StringRef path, llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<int64_t> data);
/// Booleans ('|b1'), one byte each; a nonzero byte is written as 1.
llvm::Error writeNpyBool(llvm::StringRef path, llvm::ArrayRef<int64_t> shape,
                         llvm::ArrayRef<uint8_t> data);
/// Any plain DType (every one but the ggml block types) from its
/// little-endian storage bytes, with the descr readNpy reads back; errors
/// if `bytes` is not the storage size of `shape`.
llvm::Error writeNpy(llvm::StringRef path, DType dtype,
                     llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<uint8_t> bytes);

/// The DType of a .npy descr ('<f4', '|V2', ...), if readNpy reads it.
std::optional<DType> dtypeOfNpyDescr(llvm::StringRef descr);
/// The descr a DType is written with; none for the ggml block types.
std::optional<llvm::StringRef> npyDescrOf(DType dtype);

} // namespace rlx

#endif // RLX_WEIGHTS_NPY_H
