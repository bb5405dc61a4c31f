//===- FuzzUtil.h - Helpers shared by the fuzz targets ----------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_FUZZ_FUZZUTIL_H
#define RLX_FUZZ_FUZZUTIL_H

#include "RLX/Weights/WeightSource.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <cstdlib>

namespace rlx::fuzz {

/// The largest tensor (in elements) a target decodes: bigger ones are only
/// looked up, so that a valid header for a huge tensor does not stall the
/// fuzzer.
constexpr uint64_t kMaxDecodeElements = uint64_t(1) << 16;

/// The fuzzer's bytes as a MemoryBuffer that does not copy them (so ASan
/// sees any read past the end).
inline std::unique_ptr<llvm::MemoryBuffer> bufferOf(const uint8_t *data,
                                                    size_t size) {
  return llvm::MemoryBuffer::getMemBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz",
      /*RequiresNullTerminator=*/false);
}

/// Reads every tensor of `source` the ways the runtime does: lookup,
/// rawBytes, viewF32 and (for small ones) loadF32. Errors are fine; crashes
/// and sanitizer reports are the bugs.
inline void readAll(const WeightSource &source) {
  for (const std::string &name : source.names()) {
    const TensorInfo *info = source.lookup(name);
    if (!info)
      abort(); // names() and lookup() disagree.
    llvm::Expected<llvm::ArrayRef<uint8_t>> raw = source.rawBytes(name);
    if (raw && raw->size() != info->byteSize)
      abort(); // rawBytes() must return the byte size it promised.
    if (!raw)
      llvm::consumeError(raw.takeError());
    llvm::Expected<llvm::ArrayRef<float>> view = source.viewF32(name);
    if (!view)
      llvm::consumeError(view.takeError());
    llvm::Expected<uint64_t> count = numElements(info->shape);
    if (!count) {
      llvm::consumeError(count.takeError());
      continue;
    }
    if (*count > kMaxDecodeElements)
      continue;
    llvm::Expected<std::vector<float>> values = source.loadF32(name);
    if (!values)
      llvm::consumeError(values.takeError());
  }
}

} // namespace rlx::fuzz

#endif // RLX_FUZZ_FUZZUTIL_H
