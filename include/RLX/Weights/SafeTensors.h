//===- SafeTensors.h - safetensors file reader and writer -------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON (an object mapping tensor names to {"dtype", "shape", "data_offsets"},
// plus an optional "__metadata__" string map), then the data section; the
// offsets are relative to the start of the data section. The reader maps the
// file and validates every header field before handing out a tensor (see
// docs/Weights.md for the rules).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_WEIGHTS_SAFETENSORS_H
#define RLX_WEIGHTS_SAFETENSORS_H

#include "RLX/Weights/WeightSource.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>
#include <memory>

namespace rlx {

class SafeTensorsFile final : public WeightSource {
public:
  /// Maps and validates the file at `path`.
  static llvm::Expected<std::unique_ptr<SafeTensorsFile>>
  open(llvm::StringRef path);

  /// Validates `buffer`; `description` names it in messages.
  static llvm::Expected<std::unique_ptr<SafeTensorsFile>>
  fromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
             llvm::StringRef description);

  /// Opens a Hugging Face model directory: `dir/model.safetensors`, or the
  /// shards listed by the `weight_map` of `dir/model.safetensors.index.json`.
  /// A path to a single .safetensors file is accepted too.
  static llvm::Expected<std::unique_ptr<WeightSource>>
  openModelDir(llvm::StringRef dir);

  /// One tensor to write: f32 values stored as `dtype` (F32, F16 or BF16,
  /// rounded to nearest even).
  struct WriteTensor {
    std::string name;
    DType dtype = DType::F32;
    llvm::SmallVector<int64_t> shape;
    llvm::ArrayRef<float> data;
  };

  /// Writes a safetensors file: tensors in the given order, packed without
  /// gaps, the header padded with spaces so the data starts 8-byte aligned.
  static llvm::Error
  write(llvm::StringRef path, llvm::ArrayRef<WriteTensor> tensors,
        const std::map<std::string, std::string> &metadata = {});

  std::vector<std::string> names() const override;
  const TensorInfo *lookup(llvm::StringRef name) const override;
  llvm::StringRef description() const override { return path; }
  llvm::Expected<llvm::ArrayRef<uint8_t>>
  rawBytes(llvm::StringRef name) const override;
  void release(llvm::StringRef name) const override;
  std::optional<FileRegion> fileRegion(llvm::StringRef name) const override;

  /// The "__metadata__" map (empty if the header has none).
  const std::map<std::string, std::string> &metadata() const {
    return metadataMap;
  }

  /// The file offset of the data section (8 + header length).
  uint64_t dataOffset() const { return dataStart; }

private:
  SafeTensorsFile() = default;
  llvm::Error parse();

  std::string path;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  uint64_t dataStart = 0;
  /// Tensors sorted by offset.
  std::vector<TensorInfo> tensors;
  llvm::StringMap<size_t> index;
  std::map<std::string, std::string> metadataMap;
};

} // namespace rlx

#endif // RLX_WEIGHTS_SAFETENSORS_H
