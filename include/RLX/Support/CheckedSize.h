//===- CheckedSize.h - Overflow-checked element counts and byte sizes ----===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The one place RLX multiplies a shape out. Shapes come from files, `.mlir`
// modules and Python callers: a product that wraps around 64 bits gives a
// small arena for a huge tensor, and a kernel then writes past it. The
// compiler (lir-plan-arena, the LIR verifier, the MIR -> LIR conversion), the
// runtime (manifests, tensors) and the weight readers all size tensors
// through these functions. Header-only: no library to link, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_SUPPORT_CHECKEDSIZE_H
#define RLX_SUPPORT_CHECKEDSIZE_H

#include "llvm/ADT/ArrayRef.h"
#include <cstdint>
#include <limits>
#include <optional>

namespace rlx {

/// The largest byte size (and byte offset) RLX stores or addresses: LIR keeps
/// offsets and sizes in int64 attributes and the memref ABI in ptrdiff_t.
inline constexpr uint64_t kMaxByteSize =
    static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

/// The product of `shape`: nullopt when a dimension is negative (or dynamic)
/// or the product overflows 64 bits. A zero dimension anywhere makes it 0,
/// even after a partial product overflowed. The empty shape has 1 element.
inline std::optional<uint64_t>
checkedNumElements(llvm::ArrayRef<int64_t> shape) {
  uint64_t count = 1;
  bool overflow = false;
  for (int64_t dim : shape) {
    if (dim < 0)
      return std::nullopt;
    uint64_t next;
    overflow |=
        __builtin_mul_overflow(count, static_cast<uint64_t>(dim), &next);
    count = next;
  }
  for (int64_t dim : shape)
    if (dim == 0)
      return 0;
  if (overflow)
    return std::nullopt;
  return count;
}

/// The bytes of a dense tensor of `shape` whose elements are stored
/// `blockElements` at a time in blocks of `blockBytes` (1 and the element
/// size for ordinary types; 32 and 18 for ggml q4_0). Nullopt when
/// checkedNumElements fails, the product overflows, or it exceeds
/// kMaxByteSize. Partial blocks round up.
inline std::optional<uint64_t> checkedByteSize(llvm::ArrayRef<int64_t> shape,
                                               uint64_t blockBytes,
                                               uint64_t blockElements = 1) {
  std::optional<uint64_t> count = checkedNumElements(shape);
  if (!count || blockElements == 0)
    return std::nullopt;
  uint64_t blocks = *count / blockElements + (*count % blockElements != 0);
  uint64_t bytes;
  if (__builtin_mul_overflow(blocks, blockBytes, &bytes) ||
      bytes > kMaxByteSize)
    return std::nullopt;
  return bytes;
}

/// `a + b` when it does not exceed kMaxByteSize (an end offset).
inline std::optional<uint64_t> checkedAddBytes(uint64_t a, uint64_t b) {
  uint64_t sum;
  if (__builtin_add_overflow(a, b, &sum) || sum > kMaxByteSize)
    return std::nullopt;
  return sum;
}

} // namespace rlx

#endif // RLX_SUPPORT_CHECKEDSIZE_H
