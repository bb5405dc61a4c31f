//===- WeightSource.h - Named tensors readable as f32 -----------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// WeightSource is what the runtime loads parameters from: a set of named
// tensors, each readable as f32 whatever its storage type. Files
// (SafeTensorsFile, GGUFFile), views of files (GGUFLlamaWeights, sharded
// model directories) and in-memory maps (TensorMap) implement it.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_WEIGHTS_WEIGHTSOURCE_H
#define RLX_WEIGHTS_WEIGHTSOURCE_H

#include "RLX/Weights/Tensor.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace rlx {

class WeightSource {
public:
  virtual ~WeightSource();

  /// The tensor names, in the source's natural order (file order for files,
  /// insertion order for TensorMap).
  virtual std::vector<std::string> names() const = 0;

  /// The tensor called `name`, or null.
  virtual const TensorInfo *lookup(llvm::StringRef name) const = 0;

  /// Where the tensors come from, for messages (a path, usually).
  virtual llvm::StringRef description() const = 0;

  /// The stored bytes of tensor `name` (`lookup(name)->byteSize` of them, in
  /// storage order). Errors if the tensor is missing or has no raw form.
  virtual llvm::Expected<llvm::ArrayRef<uint8_t>>
  rawBytes(llvm::StringRef name) const = 0;

  /// Copies tensor `name` in its stored type (f16, bf16, ggml blocks...) into
  /// `dst`, which must hold exactly `lookup(name)->byteSize` bytes; rows come
  /// in the order the name promises (a source that stores them reordered
  /// puts them back). Errors, naming the tensor, if it is missing, has no
  /// stored form or `dst` has the wrong size.
  virtual llvm::Error readStored(llvm::StringRef name,
                                 llvm::MutableArrayRef<uint8_t> dst) const;

  /// Copies rows [`begin`, `end`) of tensor `name` (along its first
  /// dimension) in its stored type into `dst`, which must hold exactly
  /// those rows' bytes, in the order readStored() gives them. The default
  /// takes them from rawBytes(), or from a whole readStored() copy when the
  /// source has no raw form; a source that reorders rows only within groups
  /// (a GGUF's permuted Q/K heads) reads just the groups the range covers.
  /// Errors, naming the tensor, if it is missing, the range is empty or
  /// past its rows, or `dst` has the wrong size.
  virtual llvm::Error readStoredRows(llvm::StringRef name, uint64_t begin,
                                     uint64_t end,
                                     llvm::MutableArrayRef<uint8_t> dst) const;

  /// Converts (or dequantizes) tensor `name` to f32 into `dst`. Errors,
  /// naming the tensor and description(), if the tensor is missing or `dst`
  /// does not have exactly its element count.
  virtual llvm::Error readF32(llvm::StringRef name,
                              llvm::MutableArrayRef<float> dst) const;

  /// The data of tensor `name` without a copy. Errors unless it is stored as
  /// f32 at a 4-byte aligned address.
  virtual llvm::Expected<llvm::ArrayRef<float>>
  viewF32(llvm::StringRef name) const;

  /// readF32 into a new vector of the right size.
  llvm::Expected<std::vector<float>> loadF32(llvm::StringRef name) const;

  bool contains(llvm::StringRef name) const { return lookup(name) != nullptr; }

  /// How messages name tensor `name` (present or not): the name itself, or
  /// the file's own name for a source that renames its tensors (a GGUF's
  /// `blk.0.ffn_down.weight` for `model.layers.0.mlp.down_proj.weight`).
  virtual std::string displayName(llvm::StringRef name) const {
    return name.str();
  }

  /// Says the caller is done with tensor `name` for now (a model copied it
  /// into its parameter pool): a memory-mapped file drops the tensor's pages
  /// from the process's resident set (the OS keeps them cached; reading the
  /// tensor again maps them back), so that a loaded model does not hold its
  /// weights twice. Does nothing for other sources.
  virtual void release(llvm::StringRef name) const {}

  /// Where a tensor's stored bytes lie in a file: its path and the offset of
  /// the first byte.
  struct FileRegion {
    std::string path;
    uint64_t offset = 0;
  };
  /// The file region of tensor `name` when the source reads it from a file
  /// it maps and its readStored() bytes are the file's bytes as they are
  /// (no rows reordered, nothing added): a loader may then map those pages
  /// itself instead of copying them. None otherwise.
  virtual std::optional<FileRegion> fileRegion(llvm::StringRef name) const {
    return std::nullopt;
  }

protected:
  /// fileRegion() for a source whose tensors are rawBytes() inside
  /// `buffer`, the mapping of the whole file at `path`.
  std::optional<FileRegion> mappedFileRegion(const llvm::MemoryBuffer &buffer,
                                             llvm::StringRef path,
                                             llvm::StringRef name) const;
  /// release() for a source whose tensors are rawBytes() inside `buffer`:
  /// drops the whole pages of tensor `name` from the process if `buffer` is
  /// a read-only file mapping (never for heap memory).
  void releaseMapped(const llvm::MemoryBuffer &buffer,
                     llvm::StringRef name) const;
  /// Checks that rows [`begin`, `end`) lie in tensor `name` (`info`) and
  /// that `dstBytes` holds exactly their stored bytes; returns the bytes of
  /// one row.
  llvm::Expected<uint64_t> checkRowRange(llvm::StringRef name,
                                         const TensorInfo &info, uint64_t begin,
                                         uint64_t end, size_t dstBytes) const;
  /// Checks that a destination of `dstBytes` bytes fits tensor `name`'s
  /// `tensorBytes` stored bytes.
  llvm::Error checkStoredDestination(llvm::StringRef name, uint64_t tensorBytes,
                                     size_t dstBytes) const;
  /// "<description>: tensor '<name>': <message>".
  llvm::Error tensorError(llvm::StringRef name,
                          const llvm::Twine &message) const;
  /// "<description>: tensor '<name>': not found".
  llvm::Error missingTensor(llvm::StringRef name) const;
  /// Checks that `dst` fits `info` and returns its element count.
  llvm::Expected<uint64_t> checkDestination(const TensorInfo &info,
                                            size_t dstSize) const;
};

/// Owned f32 tensors held in memory, for tests and synthesized parameters.
class TensorMap final : public WeightSource {
public:
  explicit TensorMap(std::string description = "<tensor map>")
      : desc(std::move(description)) {}

  /// Adds a tensor. Errors if `name` is already present or `data` does not
  /// have the element count of `shape`.
  llvm::Error add(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                  std::vector<float> data);

  std::vector<std::string> names() const override;
  const TensorInfo *lookup(llvm::StringRef name) const override;
  llvm::StringRef description() const override { return desc; }
  llvm::Expected<llvm::ArrayRef<uint8_t>>
  rawBytes(llvm::StringRef name) const override;
  llvm::Expected<llvm::ArrayRef<float>>
  viewF32(llvm::StringRef name) const override;

private:
  struct Entry {
    TensorInfo info;
    std::vector<float> data;
  };
  std::string desc;
  std::vector<std::string> order;
  llvm::StringMap<Entry> entries;
};

/// Several sources seen as one: a name resolves to the first source that
/// has it (e.g. a checkpoint plus the parameters a flow synthesized).
class WeightSourceStack final : public WeightSource {
public:
  explicit WeightSourceStack(std::vector<const WeightSource *> sources);

  std::vector<std::string> names() const override;
  const TensorInfo *lookup(llvm::StringRef name) const override;
  llvm::StringRef description() const override { return desc; }
  llvm::Expected<llvm::ArrayRef<uint8_t>>
  rawBytes(llvm::StringRef name) const override;
  llvm::Error readStored(llvm::StringRef name,
                         llvm::MutableArrayRef<uint8_t> dst) const override;
  llvm::Error readStoredRows(llvm::StringRef name, uint64_t begin, uint64_t end,
                             llvm::MutableArrayRef<uint8_t> dst) const override;
  llvm::Error readF32(llvm::StringRef name,
                      llvm::MutableArrayRef<float> dst) const override;
  llvm::Expected<llvm::ArrayRef<float>>
  viewF32(llvm::StringRef name) const override;
  void release(llvm::StringRef name) const override;
  std::optional<FileRegion> fileRegion(llvm::StringRef name) const override;
  std::string displayName(llvm::StringRef name) const override;

private:
  const WeightSource *owner(llvm::StringRef name) const;
  std::vector<const WeightSource *> sources;
  std::string desc;
};

/// A source whose tensors include row ranges of another's, under their own
/// names: a checkpoint that stores fused matrices (Phi-3's `qkv_proj`,
/// `gate_up_proj`) seen as the separate ones a recipe reads. A split tensor
/// hides its parent; the other tensors pass through. Rows of a row-major
/// tensor are contiguous, so a split reads as a byte range of its parent
/// (in any stored type).
class RowSplitWeights final : public WeightSource {
public:
  struct Part {
    std::string name;
    int64_t rows;
  };
  explicit RowSplitWeights(std::unique_ptr<WeightSource> base);

  /// Splits tensor `parent` (rank 1 or 2) into `parts`, in row order. Errors,
  /// naming the tensor, if it is missing or the rows do not add up.
  llvm::Error split(llvm::StringRef parent, llvm::ArrayRef<Part> parts);

  std::vector<std::string> names() const override;
  const TensorInfo *lookup(llvm::StringRef name) const override;
  llvm::StringRef description() const override { return base->description(); }
  llvm::Expected<llvm::ArrayRef<uint8_t>>
  rawBytes(llvm::StringRef name) const override;
  void release(llvm::StringRef name) const override;
  std::optional<FileRegion> fileRegion(llvm::StringRef name) const override;
  std::string displayName(llvm::StringRef name) const override;

private:
  struct Slice {
    std::string parent;
    TensorInfo info;
    uint64_t byteOffset;
  };
  std::unique_ptr<WeightSource> base;
  llvm::StringMap<Slice> slices;
  llvm::StringSet<> splitParents;
};

} // namespace rlx

#endif // RLX_WEIGHTS_WEIGHTSOURCE_H
