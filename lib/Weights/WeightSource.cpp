//===- WeightSource.cpp - Named tensors readable as f32 -------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/WeightSource.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include <algorithm>
#include <sys/mman.h>

using namespace llvm;

namespace rlx {

//===----------------------------------------------------------------------===//
// WeightSource
//===----------------------------------------------------------------------===//

WeightSource::~WeightSource() = default;

Error WeightSource::tensorError(StringRef name, const Twine &message) const {
  return createStringError(description() + ": tensor '" + name +
                           "': " + message);
}

Error WeightSource::missingTensor(StringRef name) const {
  return tensorError(name, "not found");
}

Expected<uint64_t> WeightSource::checkDestination(const TensorInfo &info,
                                                  size_t dstSize) const {
  Expected<uint64_t> count = numElements(info.shape);
  if (!count)
    return tensorError(info.name, toString(count.takeError()));
  if (*count != dstSize)
    return tensorError(info.name, "destination has " + Twine(dstSize) +
                                      " elements, but the tensor has " +
                                      Twine(*count) + " (shape " +
                                      formatShape(info.shape) + ")");
  return *count;
}

void WeightSource::releaseMapped(const llvm::MemoryBuffer &buffer,
                                 StringRef name) const {
  if (buffer.getBufferKind() != llvm::MemoryBuffer::MemoryBuffer_MMap)
    return;
  Expected<ArrayRef<uint8_t>> range = rawBytes(name);
  if (!range) {
    llvm::consumeError(range.takeError());
    return;
  }
  if (range->empty())
    return;
  const uintptr_t page = llvm::sys::Process::getPageSizeEstimate();
  uintptr_t begin = reinterpret_cast<uintptr_t>(range->data());
  uintptr_t end = begin + range->size();
  // Whole pages inside the range only: the neighbours may be in use.
  begin = (begin + page - 1) / page * page;
  end = end / page * page;
  if (end > begin)
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

std::optional<WeightSource::FileRegion>
WeightSource::mappedFileRegion(const llvm::MemoryBuffer &buffer, StringRef path,
                               StringRef name) const {
  if (buffer.getBufferKind() != llvm::MemoryBuffer::MemoryBuffer_MMap)
    return std::nullopt;
  Expected<ArrayRef<uint8_t>> range = rawBytes(name);
  if (!range) {
    llvm::consumeError(range.takeError());
    return std::nullopt;
  }
  const auto *start =
      reinterpret_cast<const uint8_t *>(buffer.getBufferStart());
  if (range->data() < start ||
      range->data() + range->size() > start + buffer.getBufferSize())
    return std::nullopt;
  return FileRegion{path.str(), static_cast<uint64_t>(range->data() - start)};
}

Error WeightSource::readStored(StringRef name,
                               MutableArrayRef<uint8_t> dst) const {
  Expected<ArrayRef<uint8_t>> bytes = rawBytes(name);
  if (!bytes)
    return bytes.takeError();
  if (Error err = checkStoredDestination(name, bytes->size(), dst.size()))
    return err;
  std::copy(bytes->begin(), bytes->end(), dst.begin());
  return Error::success();
}

Expected<uint64_t> WeightSource::checkRowRange(StringRef name,
                                               const TensorInfo &info,
                                               uint64_t begin, uint64_t end,
                                               size_t dstBytes) const {
  if (info.shape.empty() || info.shape[0] <= 0)
    return tensorError(name, "has no rows to take a range of (shape " +
                                 formatShape(info.shape) + ")");
  uint64_t rows = static_cast<uint64_t>(info.shape[0]);
  if (begin >= end || end > rows)
    return tensorError(name, "rows [" + Twine(begin) + ", " + Twine(end) +
                                 ") are not a range of its " + Twine(rows));
  uint64_t rowBytes = info.byteSize / rows;
  if (dstBytes != (end - begin) * rowBytes)
    return tensorError(name, "destination has " + Twine(dstBytes) +
                                 " bytes, but rows [" + Twine(begin) + ", " +
                                 Twine(end) + ") have " +
                                 Twine((end - begin) * rowBytes));
  return rowBytes;
}

Error WeightSource::readStoredRows(StringRef name, uint64_t begin, uint64_t end,
                                   MutableArrayRef<uint8_t> dst) const {
  const TensorInfo *info = lookup(name);
  if (!info)
    return missingTensor(name);
  Expected<uint64_t> rowBytes =
      checkRowRange(name, *info, begin, end, dst.size());
  if (!rowBytes)
    return rowBytes.takeError();
  Expected<ArrayRef<uint8_t>> raw = rawBytes(name);
  if (raw) {
    ArrayRef<uint8_t> rows = raw->slice(begin * *rowBytes, dst.size());
    std::copy(rows.begin(), rows.end(), dst.begin());
    return Error::success();
  }
  // No raw form (rows reordered): the whole tensor, then the range.
  consumeError(raw.takeError());
  std::vector<uint8_t> all(info->byteSize);
  if (Error err = readStored(name, all))
    return err;
  std::copy_n(all.begin() + begin * *rowBytes, dst.size(), dst.begin());
  return Error::success();
}

Error WeightSource::checkStoredDestination(StringRef name, uint64_t tensorBytes,
                                           size_t dstBytes) const {
  if (tensorBytes == dstBytes)
    return Error::success();
  return tensorError(name, "destination has " + Twine(dstBytes) +
                               " bytes, but the tensor has " +
                               Twine(tensorBytes));
}

Error WeightSource::readF32(StringRef name, MutableArrayRef<float> dst) const {
  const TensorInfo *info = lookup(name);
  if (!info)
    return missingTensor(name);
  if (Expected<uint64_t> count = checkDestination(*info, dst.size()); !count)
    return count.takeError();
  Expected<ArrayRef<uint8_t>> bytes = rawBytes(name);
  if (!bytes)
    return bytes.takeError();
  if (Error err = decodeToF32(info->dtype, *bytes, dst))
    return tensorError(name, toString(std::move(err)));
  return Error::success();
}

Expected<ArrayRef<float>> WeightSource::viewF32(StringRef name) const {
  const TensorInfo *info = lookup(name);
  if (!info)
    return missingTensor(name);
  if (info->dtype != DType::F32)
    return tensorError(name, "cannot view as f32 without a copy: stored as " +
                                 dtypeName(info->dtype));
  Expected<ArrayRef<uint8_t>> bytes = rawBytes(name);
  if (!bytes)
    return bytes.takeError();
  if (reinterpret_cast<uintptr_t>(bytes->data()) % alignof(float) != 0)
    return tensorError(name, "cannot view as f32 without a copy: data at "
                             "file offset " +
                                 Twine(info->offset) +
                                 " is not 4-byte aligned");
  return ArrayRef<float>(reinterpret_cast<const float *>(bytes->data()),
                         bytes->size() / sizeof(float));
}

Expected<std::vector<float>> WeightSource::loadF32(StringRef name) const {
  const TensorInfo *info = lookup(name);
  if (!info)
    return missingTensor(name);
  Expected<uint64_t> count = numElements(info->shape);
  if (!count)
    return tensorError(name, toString(count.takeError()));
  std::vector<float> result(*count);
  if (Error err = readF32(name, result))
    return std::move(err);
  return result;
}

//===----------------------------------------------------------------------===//
// TensorMap
//===----------------------------------------------------------------------===//

Error TensorMap::add(StringRef name, ArrayRef<int64_t> shape,
                     std::vector<float> data) {
  if (entries.count(name))
    return tensorError(name, "duplicate name");
  Expected<uint64_t> count = numElements(shape);
  if (!count)
    return tensorError(name, toString(count.takeError()));
  if (*count != data.size())
    return tensorError(name, "shape " + formatShape(shape) + " has " +
                                 Twine(*count) + " elements, but " +
                                 Twine(data.size()) + " values were given");
  Entry &entry = entries[name];
  entry.info.name = name.str();
  entry.info.dtype = DType::F32;
  entry.info.shape.assign(shape.begin(), shape.end());
  entry.info.offset = 0;
  entry.info.byteSize = data.size() * sizeof(float);
  entry.data = std::move(data);
  order.push_back(name.str());
  return Error::success();
}

std::vector<std::string> TensorMap::names() const { return order; }

const TensorInfo *TensorMap::lookup(StringRef name) const {
  auto it = entries.find(name);
  return it == entries.end() ? nullptr : &it->second.info;
}

Expected<ArrayRef<uint8_t>> TensorMap::rawBytes(StringRef name) const {
  auto it = entries.find(name);
  if (it == entries.end())
    return missingTensor(name);
  const std::vector<float> &data = it->second.data;
  return ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(data.data()),
                           data.size() * sizeof(float));
}

Expected<ArrayRef<float>> TensorMap::viewF32(StringRef name) const {
  auto it = entries.find(name);
  if (it == entries.end())
    return missingTensor(name);
  return ArrayRef<float>(it->second.data);
}

//===----------------------------------------------------------------------===//
// WeightSourceStack
//===----------------------------------------------------------------------===//

WeightSourceStack::WeightSourceStack(std::vector<const WeightSource *> srcs)
    : sources(std::move(srcs)) {
  for (const WeightSource *s : sources)
    desc += (desc.empty() ? "" : " + ") + s->description().str();
}

const WeightSource *WeightSourceStack::owner(StringRef name) const {
  for (const WeightSource *s : sources)
    if (s->lookup(name))
      return s;
  return nullptr;
}

std::vector<std::string> WeightSourceStack::names() const {
  std::vector<std::string> all;
  for (const WeightSource *s : sources)
    for (std::string &n : s->names())
      if (owner(n) == s)
        all.push_back(std::move(n));
  return all;
}

const TensorInfo *WeightSourceStack::lookup(StringRef name) const {
  const WeightSource *s = owner(name);
  return s ? s->lookup(name) : nullptr;
}

Expected<ArrayRef<uint8_t>> WeightSourceStack::rawBytes(StringRef name) const {
  if (const WeightSource *s = owner(name))
    return s->rawBytes(name);
  return missingTensor(name);
}

std::string WeightSourceStack::displayName(StringRef name) const {
  if (const WeightSource *s = owner(name))
    return s->displayName(name);
  return sources.empty() ? name.str() : sources.front()->displayName(name);
}

void WeightSourceStack::release(StringRef name) const {
  if (const WeightSource *s = owner(name))
    s->release(name);
}

std::optional<WeightSource::FileRegion>
WeightSourceStack::fileRegion(StringRef name) const {
  if (const WeightSource *s = owner(name))
    return s->fileRegion(name);
  return std::nullopt;
}

Error WeightSourceStack::readStored(StringRef name,
                                    MutableArrayRef<uint8_t> dst) const {
  if (const WeightSource *s = owner(name))
    return s->readStored(name, dst);
  return missingTensor(name);
}

Error WeightSourceStack::readStoredRows(StringRef name, uint64_t begin,
                                        uint64_t end,
                                        MutableArrayRef<uint8_t> dst) const {
  if (const WeightSource *s = owner(name))
    return s->readStoredRows(name, begin, end, dst);
  return missingTensor(name);
}

Error WeightSourceStack::readF32(StringRef name,
                                 MutableArrayRef<float> dst) const {
  if (const WeightSource *s = owner(name))
    return s->readF32(name, dst);
  return missingTensor(name);
}

Expected<ArrayRef<float>> WeightSourceStack::viewF32(StringRef name) const {
  if (const WeightSource *s = owner(name))
    return s->viewF32(name);
  return missingTensor(name);
}

//===----------------------------------------------------------------------===//
// RowSplitWeights
//===----------------------------------------------------------------------===//

RowSplitWeights::RowSplitWeights(std::unique_ptr<WeightSource> base)
    : base(std::move(base)) {}

Error RowSplitWeights::split(StringRef parent, ArrayRef<Part> parts) {
  const TensorInfo *info = base->lookup(parent);
  if (!info)
    return missingTensor(parent);
  if (info->shape.empty() || info->shape.size() > 2)
    return tensorError(parent, "has shape " + formatShape(info->shape) +
                                   "; only matrices and vectors split by rows");
  int64_t total = 0;
  for (const Part &p : parts)
    total += p.rows;
  int64_t rows = info->shape[0];
  if (total != rows)
    return tensorError(parent, "has " + Twine(rows) + " rows, expected " +
                                   Twine(total) + " to split into " +
                                   Twine(parts.size()) + " parts");
  uint64_t rowBytes = info->byteSize / rows;
  int64_t row = 0;
  for (const Part &p : parts) {
    Slice s{parent.str(), *info, row * rowBytes};
    s.info.name = p.name;
    s.info.shape[0] = p.rows;
    s.info.byteSize = p.rows * rowBytes;
    s.info.offset = info->offset + s.byteOffset;
    slices[p.name] = std::move(s);
    row += p.rows;
  }
  splitParents.insert(parent);
  return Error::success();
}

std::vector<std::string> RowSplitWeights::names() const {
  std::vector<std::string> all;
  for (std::string &n : base->names()) {
    if (!splitParents.contains(n)) {
      all.push_back(std::move(n));
      continue;
    }
    // The parts in row order, where the parent was.
    std::vector<const Slice *> parts;
    for (const auto &entry : slices)
      if (entry.second.parent == n)
        parts.push_back(&entry.second);
    llvm::sort(parts, [](const Slice *a, const Slice *b) {
      return a->byteOffset < b->byteOffset;
    });
    for (const Slice *s : parts)
      all.push_back(s->info.name);
  }
  return all;
}

const TensorInfo *RowSplitWeights::lookup(StringRef name) const {
  auto it = slices.find(name);
  if (it != slices.end())
    return &it->second.info;
  if (splitParents.contains(name))
    return nullptr;
  return base->lookup(name);
}

Expected<ArrayRef<uint8_t>> RowSplitWeights::rawBytes(StringRef name) const {
  auto it = slices.find(name);
  if (it == slices.end()) {
    if (splitParents.contains(name))
      return missingTensor(name);
    return base->rawBytes(name);
  }
  const Slice &s = it->second;
  Expected<ArrayRef<uint8_t>> all = base->rawBytes(s.parent);
  if (!all)
    return all.takeError();
  return all->slice(s.byteOffset, s.info.byteSize);
}

std::optional<WeightSource::FileRegion>
RowSplitWeights::fileRegion(StringRef name) const {
  auto it = slices.find(name);
  if (it == slices.end())
    return splitParents.contains(name) ? std::nullopt : base->fileRegion(name);
  std::optional<FileRegion> parent = base->fileRegion(it->second.parent);
  if (parent)
    parent->offset += it->second.byteOffset;
  return parent;
}

void RowSplitWeights::release(StringRef name) const {
  auto it = slices.find(name);
  // The parent's pages hold the other parts too: keep them.
  if (it == slices.end())
    base->release(name);
}

std::string RowSplitWeights::displayName(StringRef name) const {
  auto it = slices.find(name);
  if (it == slices.end())
    return base->displayName(name);
  return name.str() + " (rows of '" + base->displayName(it->second.parent) +
         "')";
}

} // namespace rlx
