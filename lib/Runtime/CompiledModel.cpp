//===- CompiledModel.cpp - A compiled model ready to run ------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/CompiledModel.h"
#include "MemRefABI.h"
#include "RLX/Runtime/CpuExecutor.h"
#include "RLX/Runtime/MemoryBudget.h"
#include "RLX/Support/FileIO.h"
#include "RLX/UKernels/UKernels.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/Quant.h"
#include "RLX/Weights/WeightSource.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <map>
#include <optional>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

using namespace rlx;
using detail::MemRef1D;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// memcpy that accepts the null pointers of empty tensors.
static void copyBytes(void *dst, const void *src, size_t n) {
  if (n)
    std::memcpy(dst, src, n);
}

namespace {
/// 64-byte aligned, zero-initialized bytes; `data` is null when the
/// allocation failed. Large buffers (the arena and parameter pool of a real
/// model: gigabytes) are anonymous mappings: the kernel hands out zeroed
/// pages as they are first written (by loadParams), instead of a memset
/// faulting every page in at compile time, and they may use huge pages.
struct AlignedBuffer {
  static constexpr size_t kMapThreshold = size_t(1) << 20;
  uint8_t *data = nullptr;
  size_t size = 0;
  /// The length of the mapping; 0 for a heap allocation.
  size_t mappedBytes = 0;
  explicit AlignedBuffer(size_t n) : size(n) {
    if (n > SIZE_MAX - 64)
      return;
    size_t rounded = (std::max<size_t>(n, 1) + 63) / 64 * 64;
    if (rounded >= kMapThreshold) {
      void *p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED)
        return;
#ifdef MADV_HUGEPAGE
      ::madvise(p, rounded, MADV_HUGEPAGE);
#endif
      data = static_cast<uint8_t *>(p);
      mappedBytes = rounded;
      return;
    }
    data = static_cast<uint8_t *>(std::aligned_alloc(64, rounded));
    if (data)
      std::memset(data, 0, rounded);
  }
  ~AlignedBuffer() {
    if (mappedBytes)
      ::munmap(data, mappedBytes);
    else
      std::free(data);
  }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
};
} // namespace

struct CompiledModel::Storage {
  Storage(size_t arena, size_t params)
      : arena(arena), paramPool(std::make_shared<AlignedBuffer>(params)),
        set(std::make_shared<llvm::StringSet<>>()) {}
  AlignedBuffer arena;
  /// The pool may be shared with models of the same parameter layout.
  std::shared_ptr<AlignedBuffer> paramPool;
  /// Direct params that were set, and "derived\0source" pairs (shared with
  /// the pool).
  std::shared_ptr<llvm::StringSet<>> set;
  /// The pool changed since the last run.
  bool paramsChanged = true;
};

Executor::~Executor() = default;

namespace {
/// Runs host code through its MLIR C interface.
class HostExecutor : public Executor {
public:
  HostExecutor(CompiledModel::EntryFn fn, std::shared_ptr<void> owner)
      : fn(fn), owner(std::move(owner)) {}
  Error execute(const Manifest &, llvm::MutableArrayRef<uint8_t> arena,
                llvm::ArrayRef<uint8_t> params, bool) override {
    MemRef1D a{arena.data(),
               arena.data(),
               0,
               {static_cast<int64_t>(arena.size())},
               {1}};
    auto *p = const_cast<uint8_t *>(params.data());
    MemRef1D w{p, p, 0, {static_cast<int64_t>(params.size())}, {1}};
    fn(&a, &w);
    return Error::success();
  }
  std::string describe() const override { return "cpu"; }

private:
  CompiledModel::EntryFn fn;
  std::shared_ptr<void> owner;
};
} // namespace

CompiledModel::CompiledModel(Manifest manifest, EntryFn fn,
                             std::shared_ptr<void> owner)
    : CompiledModel(std::move(manifest),
                    std::make_unique<HostExecutor>(fn, std::move(owner))) {}

CompiledModel::CompiledModel(Manifest manifest,
                             std::unique_ptr<Executor> executor)
    : info(std::move(manifest)), executor(std::move(executor)) {
  // Sizes that wrap would give a small arena to a large tensor.
  if (Error err = info.verify()) {
    llvm::consumeError(std::move(err));
    return;
  }
  auto s = std::make_unique<Storage>(info.arenaSize, info.paramSize);
  // Without its memory the model refuses every call (see storageError()).
  if (s->arena.data && s->paramPool->data)
    storage = std::move(s);
}

Expected<CompiledModel>
CompiledModel::create(Manifest manifest, std::unique_ptr<Executor> executor,
                      std::optional<uint64_t> memoryBudgetMB) {
  Expected<MemoryBudget> budget = MemoryBudget::get(memoryBudgetMB);
  if (!budget)
    return budget.takeError();
  std::optional<uint64_t> total =
      addBytes(manifest.arenaSize, manifest.paramSize);
  if (Error err = budget->check(
          total.value_or(UINT64_MAX),
          "model '" + manifest.entry + "': arena (" +
              llvm::Twine(manifest.arenaSize) + " bytes) + parameters (" +
              llvm::Twine(manifest.paramSize) + " bytes)"))
    return std::move(err);
  // Sizes that wrap (the budget may be off) would give a tiny arena.
  if (Error err = manifest.verify())
    return std::move(err);
  CompiledModel model(std::move(manifest), std::move(executor));
  if (!model.storage)
    return model.storageError();
  return std::move(model);
}

Error CompiledModel::storageError() const {
  if (Error err = info.verify())
    return err;
  return fail("model '" + info.entry + "': cannot allocate its arena (" +
              llvm::Twine(info.arenaSize) + " bytes) and parameters (" +
              llvm::Twine(info.paramSize) + " bytes)");
}

std::string CompiledModel::deviceName() const { return executor->describe(); }

/// The param entries that define a pool's layout.
static bool sameParamLayout(const Manifest &a, const Manifest &b) {
  auto pa = a.ofKind(IOKind::Param), pb = b.ofKind(IOKind::Param);
  if (a.paramSize != b.paramSize || pa.size() != pb.size())
    return false;
  for (auto [x, y] : llvm::zip(pa, pb))
    if (x->name != y->name || x->offset != y->offset || x->shape != y->shape ||
        x->dtype != y->dtype || x->sources != y->sources ||
        x->sourceStarts != y->sourceStarts || x->layout != y->layout)
      return false;
  return true;
}

Error CompiledModel::shareParams(const CompiledModel &source) {
  if (!storage)
    return storageError();
  if (!source.storage)
    return source.storageError();
  if (!sameParamLayout(info, source.info))
    return fail("cannot share parameters between '" + info.entry + "' and '" +
                source.info.entry + "': their parameter layouts differ");
  storage->paramPool = source.storage->paramPool;
  storage->set = source.storage->set;
  storage->paramsChanged = true;
  return Error::success();
}
CompiledModel::CompiledModel(CompiledModel &&) noexcept = default;
CompiledModel &CompiledModel::operator=(CompiledModel &&) noexcept = default;
CompiledModel::~CompiledModel() = default;

static std::string describe(DType dtype, llvm::ArrayRef<int64_t> shape) {
  return (dtypeName(dtype) + formatShape(shape)).str();
}

static std::string derivedKey(StringRef derived, StringRef source) {
  return (derived + llvm::Twine('\0') + source).str();
}

std::vector<std::string> CompiledModel::weightNames() const {
  std::vector<std::string> names;
  llvm::StringSet<> seen;
  for (const ManifestEntry *e : info.ofKind(IOKind::Param)) {
    if (e->sources.empty()) {
      if (seen.insert(e->name).second)
        names.push_back(e->name);
      continue;
    }
    for (const std::string &s : e->sources)
      if (seen.insert(s).second)
        names.push_back(s);
  }
  return names;
}

std::vector<std::string> CompiledModel::missingParams() const {
  std::vector<std::string> missing;
  if (!storage)
    return weightNames();
  llvm::StringSet<> seen;
  for (const ManifestEntry *e : info.ofKind(IOKind::Param)) {
    if (e->sources.empty()) {
      if (!storage->set->contains(e->name) && seen.insert(e->name).second)
        missing.push_back(e->name);
      continue;
    }
    for (const std::string &s : e->sources)
      if (!storage->set->contains(derivedKey(e->name, s)) &&
          seen.insert(s).second)
        missing.push_back(s);
  }
  return missing;
}

/// Copies `src` (the source of `entry` with `index`) into its slice of the
/// derived parameter.
static void scatterSource(const ManifestEntry &entry, size_t index,
                          llvm::ArrayRef<float> src, uint8_t *pool) {
  int64_t axis = entry.concatAxis;
  int64_t before = 0;
  for (size_t i = 0; i < index; ++i)
    before += entry.sourceSizes[i];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= entry.shape[d];
  for (size_t d = axis + 1; d < entry.shape.size(); ++d)
    inner *= entry.shape[d];
  int64_t mine = entry.sourceSizes[index], full = entry.shape[axis];
  auto *dst = reinterpret_cast<float *>(pool + entry.offset);
  if (entry.layout == ParamLayout::NK16) {
    packWeightsNK16(src.data(), mine, entry.shape[1], before, dst);
    return;
  }
  for (int64_t o = 0; o < outer; ++o)
    copyBytes(dst + (o * full + before) * inner, src.data() + o * mine * inner,
              mine * inner * sizeof(float));
}

static llvm::SmallVector<int64_t, 4> weightShape(const ManifestEntry &e,
                                                 StringRef name);

/// Bytes of one row (the last dimension) of a tensor of `dtype`.
static uint64_t rowBytes(DType dtype, int64_t columns) {
  llvm::Expected<uint64_t> bytes = storageBytes(dtype, {1, columns});
  if (!bytes) {
    llvm::consumeError(bytes.takeError());
    return 0;
  }
  return *bytes;
}

/// Writes `rows`, whole rows of param `e`'s stored type (the bytes as the
/// file has them), at row `row0` of `e` in the pool: copied, or for an x8
/// param (q4_0, q8_0, q4_K, q5_K, q6_K, f16 or bf16 `[N, K]`; row0 and the row
/// count multiples of 8, as lir-pack-params checked) interleaved as the
/// micro-kernels read it on the way (rlx_uk_repack), so that the pool is
/// written once. Returns the non-finite values of `rows`, counted a chunk at a
/// time while it is in cache.
static uint64_t storeRows(const ManifestEntry &e, int64_t row0,
                          llvm::ArrayRef<uint8_t> rows, uint8_t *pool) {
  uint64_t rowSize = rowBytes(e.dtype, e.shape.back());
  uint8_t *dst = pool + e.offset + row0 * rowSize;
  uint64_t count = rowSize ? rows.size() / rowSize : 0;
  assert(count * rowSize == rows.size() && "whole rows");
  constexpr uint64_t kChunkBytes = 256 << 10;
  uint64_t chunkRows = std::max<uint64_t>(
      kChunkBytes / std::max<uint64_t>(rowSize, 1) / 8 * 8, 8);
  std::optional<uint32_t> code;
  if (e.layout == ParamLayout::X8) {
    code = ggmlTypeOf(e.dtype);
    assert(code && row0 % 8 == 0 && count % 8 == 0 &&
           "the manifest checked the x8 param's type and shape");
  }
  uint64_t nonFinite = 0;
  for (uint64_t r = 0; r < count; r += chunkRows) {
    uint64_t n = std::min(chunkRows, count - r);
    llvm::ArrayRef<uint8_t> chunk = rows.slice(r * rowSize, n * rowSize);
    if (code) {
      [[maybe_unused]] int rc =
          rlx_uk_repack(static_cast<int>(*code), e.shape.back(), chunk.data(),
                        0, static_cast<int64_t>(n), dst + r * rowSize);
      assert(rc == 0 && "the manifest checked the x8 param's shape");
    } else {
      copyBytes(dst + r * rowSize, chunk.data(), chunk.size());
    }
    nonFinite += countNonFinite(e.dtype, chunk);
  }
  return nonFinite;
}

//===----------------------------------------------------------------------===//
// Sliced parameters: ranges of their sources
//===----------------------------------------------------------------------===//

/// True if some param takes only a range of weight `name` (source_starts).
static bool isRangedWeight(const Manifest &info, StringRef name) {
  return llvm::any_of(info.entries, [&](const ManifestEntry &e) {
    return e.kind == IOKind::Param && !e.sourceStarts.empty() &&
           llvm::is_contained(e.sources, name);
  });
}

/// Bytes of `n` consecutive elements of `dtype` (whole blocks).
static uint64_t elementBytes(DType dtype, uint64_t n) {
  BlockFormat f = blockFormat(dtype);
  return n / f.elements * f.bytes;
}

/// The product of `shape[begin, end)`.
static uint64_t product(llvm::ArrayRef<int64_t> shape, size_t begin,
                        size_t end) {
  uint64_t n = 1;
  for (size_t d = begin; d < end && d < shape.size(); ++d)
    n *= static_cast<uint64_t>(shape[d]);
  return n;
}

namespace {
/// One place of a weight in the pool: param `entry` itself (`index` -1), or
/// its source `index`.
struct WeightPlace {
  const ManifestEntry *entry;
  int64_t index;
  /// Along the param's concat axis: where the piece goes in the param and
  /// how many entries it has there; where it starts in the source (0 unless
  /// the param takes a range of the source).
  int64_t before = 0, size = 0, start = 0;
  bool ranged() const { return index >= 0 && !entry->sourceStarts.empty(); }
};
} // namespace

/// Every place of weight `name` in the pool, in manifest order.
static std::vector<WeightPlace> weightPlaces(const Manifest &info,
                                             StringRef name) {
  std::vector<WeightPlace> places;
  for (const ManifestEntry &e : info.entries) {
    if (e.kind != IOKind::Param)
      continue;
    if (e.sources.empty()) {
      if (e.name == name)
        places.push_back({&e, -1, 0, e.shape.empty() ? 1 : e.shape[0], 0});
      continue;
    }
    int64_t before = 0;
    for (auto [i, s] : llvm::enumerate(e.sources)) {
      int64_t size = e.sourceSizes[i];
      if (s == name)
        places.push_back({&e, static_cast<int64_t>(i), before, size,
                          e.sourceStarts.empty() ? 0 : e.sourceStarts[i]});
      before += size;
    }
  }
  return places;
}

/// Checks that weight `name` of `dtype` and `shape` fits `place`: a whole
/// source has the shape the param expects; a range's source has the
/// param's other dims and reaches past the range's end (whole ggml blocks
/// along the blocked dim). The error names the param, the source and both
/// shapes.
static Error checkPlace(const WeightPlace &place, StringRef name, DType dtype,
                        llvm::ArrayRef<int64_t> shape) {
  const ManifestEntry &e = *place.entry;
  llvm::SmallVector<int64_t, 4> expected(e.shape.begin(), e.shape.end());
  if (place.index >= 0)
    expected[e.concatAxis] = place.size;
  if (!place.ranged()) {
    if (shape != llvm::ArrayRef<int64_t>(expected))
      return fail("param '" + e.name + "': source '" + name + "' has shape " +
                  formatShape(shape) + ", the param needs " +
                  formatShape(expected));
    return Error::success();
  }
  int64_t axis = e.concatAxis;
  std::string range = "[" + std::to_string(place.start) + ", " +
                      std::to_string(place.start + place.size) +
                      ") along axis " + std::to_string(axis);
  bool sameOthers = shape.size() == e.shape.size();
  for (size_t d = 0; sameOthers && d < shape.size(); ++d)
    sameOthers = static_cast<int64_t>(d) == axis || shape[d] == e.shape[d];
  if (!sameOthers)
    return fail("param '" + e.name + "' (shape " + formatShape(e.shape) +
                ") takes " + range + " of source '" + name + "', whose shape " +
                formatShape(shape) + " differs in another dimension");
  if (shape[axis] < place.start + place.size)
    return fail("param '" + e.name + "' (shape " + formatShape(e.shape) +
                ") takes " + range + " of source '" + name + "', but '" + name +
                "' has shape " + formatShape(shape) + " (only " +
                llvm::Twine(shape[axis]) + " along the axis)");
  uint64_t block = blockFormat(dtype).elements;
  if (block > 1 && axis + 1 == static_cast<int64_t>(shape.size()) &&
      (place.start % block || place.size % block))
    return fail("param '" + e.name + "' takes " + range + " of source '" +
                name + "', stored as " + dtypeName(dtype) +
                ": a range along the blocked (last) dimension must start and "
                "end on a block boundary (" +
                llvm::Twine(block) + " elements)");
  return Error::success();
}

/// The piece of `place` from weight `name` (`dtype`, `shape`, its stored
/// bytes `all`): the range along the param's axis, copied per outer index
/// (only those bytes of `all` are read), or `all` for a whole source.
static std::vector<uint8_t> takePiece(const WeightPlace &place, DType dtype,
                                      llvm::ArrayRef<int64_t> shape,
                                      llvm::ArrayRef<uint8_t> all) {
  if (!place.ranged())
    return std::vector<uint8_t>(all.begin(), all.end());
  int64_t axis = place.entry->concatAxis;
  uint64_t outer = product(shape, 0, axis),
           inner = product(shape, axis + 1, shape.size());
  uint64_t chunk = elementBytes(dtype, place.size * inner);
  std::vector<uint8_t> piece(outer * chunk);
  for (uint64_t o = 0; o < outer; ++o)
    copyBytes(piece.data() + o * chunk,
              all.data() +
                  elementBytes(dtype, (o * shape[axis] + place.start) * inner),
              chunk);
  return piece;
}

/// Writes `piece` (stored bytes of `dtype`, the param's elements of this
/// place: its shape with `place.size` along the axis) into `place` of the
/// pool, converting to the param's type and packing as its layout says.
/// Returns the piece's non-finite values.
static Expected<uint64_t> writePiece(const WeightPlace &place, StringRef name,
                                     DType dtype, std::vector<uint8_t> piece,
                                     uint8_t *pool) {
  const ManifestEntry &e = *place.entry;
  uint64_t nonFinite = 0;
  // The f32 values when the piece was decoded.
  std::vector<float> values;
  if (e.dtype != dtype) {
    // Through f32: decoded, then re-encoded unless the param is f32.
    BlockFormat f = blockFormat(dtype);
    values.resize(piece.size() / f.bytes * f.elements);
    if (Error err = decodeToF32(dtype, piece, values))
      return fail("param '" + e.name + "': source '" + name +
                  "': " + llvm::toString(std::move(err)));
    nonFinite = countNonFinite(
        DType::F32, {reinterpret_cast<const uint8_t *>(values.data()),
                     values.size() * sizeof(float)});
    if (e.dtype == DType::F32 && e.layout != ParamLayout::NK16) {
      piece.resize(values.size() * sizeof(float));
      copyBytes(piece.data(), values.data(), piece.size());
    } else if (e.dtype != DType::F32) {
      Expected<std::vector<uint8_t>> bytes = encodeFromF32(e.dtype, values);
      if (!bytes)
        return fail("param '" + e.name + "' is kept as " + dtypeName(e.dtype) +
                    "; converting " + dtypeName(dtype) + " source '" + name +
                    "': " + llvm::toString(bytes.takeError()));
      piece = std::move(*bytes);
    }
  } else {
    nonFinite = countNonFinite(dtype, piece);
  }
  if (e.layout == ParamLayout::NK16) {
    if (values.empty()) {
      values.resize(piece.size() / sizeof(float));
      copyBytes(values.data(), piece.data(), piece.size());
    }
    // Along N (rows), or a range of one source along K: the whole param.
    bool rows = place.index < 0 || e.concatAxis == 0;
    packWeightsNK16(values.data(), rows ? place.size : e.shape[0], e.shape[1],
                    rows ? place.before : 0,
                    reinterpret_cast<float *>(pool + e.offset));
    return nonFinite;
  }
  if (e.layout == ParamLayout::X8) {
    storeRows(e, place.before, piece, pool);
    return nonFinite;
  }
  if (place.index < 0) {
    copyBytes(pool + e.offset, piece.data(), piece.size());
    return nonFinite;
  }
  // Scattered along the axis: one chunk per outer index.
  int64_t axis = e.concatAxis;
  uint64_t outer = product(e.shape, 0, axis),
           inner = product(e.shape, axis + 1, e.shape.size());
  uint64_t chunk = elementBytes(e.dtype, place.size * inner);
  for (uint64_t o = 0; o < outer; ++o)
    copyBytes(
        pool + e.offset +
            elementBytes(e.dtype, (o * e.shape[axis] + place.before) * inner),
        piece.data() + o * chunk, chunk);
  return nonFinite;
}

/// Writes `place` straight from weight `all` (`dtype`, `shape`) into the
/// pool when it needs no conversion: the range's bytes per outer index, or
/// for an nk16 param an f32 block of whole rows packed from where it lies
/// (4-byte aligned). Returns the non-finite values written, or none when the
/// place needs a piece of its own (writePiece).
static std::optional<uint64_t> copyPlaceDirectly(const WeightPlace &place,
                                                 DType dtype,
                                                 llvm::ArrayRef<int64_t> shape,
                                                 llvm::ArrayRef<uint8_t> all,
                                                 uint8_t *pool) {
  const ManifestEntry &e = *place.entry;
  if (e.dtype != dtype)
    return std::nullopt;
  int64_t axis = place.index < 0 ? 0 : e.concatAxis;
  int64_t srcExtent = shape.empty() ? 1 : shape[axis];
  uint64_t outer = product(e.shape, 0, axis),
           inner = product(e.shape, axis + 1, e.shape.size());
  uint64_t chunk = elementBytes(dtype, place.size * inner);
  if (e.layout == ParamLayout::NK16) {
    // Whole rows, contiguous in the source: packed from there.
    const uint8_t *rows = all.data() + elementBytes(dtype, place.start * inner);
    if (axis != 0 || reinterpret_cast<uintptr_t>(rows) % alignof(float))
      return std::nullopt;
    packWeightsNK16(reinterpret_cast<const float *>(rows), place.size,
                    e.shape[1], place.before,
                    reinterpret_cast<float *>(pool + e.offset));
    return countNonFinite(dtype, {rows, static_cast<size_t>(chunk)});
  }
  if (e.layout == ParamLayout::X8) {
    // Whole rows: x8 matrices concatenate and slice along N.
    assert(axis == 0 && outer == 1 && "x8 params are matrices split by rows");
    return storeRows(e, place.before,
                     all.slice(elementBytes(dtype, place.start * inner), chunk),
                     pool);
  }
  uint64_t nonFinite = 0;
  int64_t dstExtent = place.index < 0 ? place.size : e.shape[axis];
  for (uint64_t o = 0; o < outer; ++o) {
    const uint8_t *src =
        all.data() + elementBytes(dtype, (o * srcExtent + place.start) * inner);
    uint8_t *dst = pool + e.offset +
                   elementBytes(dtype, (o * dstExtent + place.before) * inner);
    copyBytes(dst, src, chunk);
    nonFinite += countNonFinite(dtype, {dst, static_cast<size_t>(chunk)});
  }
  return nonFinite;
}

/// The key that marks `place` set.
static std::string placeKey(const WeightPlace &place, StringRef name) {
  return place.index < 0 ? place.entry->name
                         : derivedKey(place.entry->name, name);
}

/// Writes every place of weight `name`, a tensor of `dtype` and `shape`
/// whose stored bytes (row major) are `all`, reading only the ranges that
/// sliced params take; appends the keys of the places filled. Returns the
/// non-finite values read. With `firstRow`, `all` and `shape` are the
/// tensor's rows from there on (placesRowWindow): the places' ranges along
/// axis 0 are taken relative to it.
static Expected<uint64_t>
writeWeightPlaces(const Manifest &info, StringRef name, DType dtype,
                  llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<uint8_t> all,
                  uint8_t *pool, std::vector<std::string> &keys,
                  int64_t firstRow = 0) {
  std::vector<WeightPlace> places = weightPlaces(info, name);
  if (places.empty())
    return fail("the model has no param '" + name + "'");
  for (WeightPlace &place : places) {
    assert((firstRow == 0 || (place.ranged() && place.entry->concatAxis == 0 &&
                              place.start >= firstRow)) &&
           "a row window holds the ranges along axis 0 only");
    place.start -= firstRow;
  }
  Expected<uint64_t> bytes = storageBytes(dtype, shape);
  if (!bytes)
    return fail("weight '" + name + "': " + llvm::toString(bytes.takeError()));
  if (*bytes != all.size())
    return fail("weight '" + name + "': " + describe(dtype, shape) + " needs " +
                llvm::Twine(*bytes) + " bytes, got " + llvm::Twine(all.size()));
  for (const WeightPlace &place : places)
    if (Error err = checkPlace(place, name, dtype, shape))
      return std::move(err);
  uint64_t nonFinite = 0;
  for (const WeightPlace &place : places) {
    keys.push_back(placeKey(place, name));
    if (std::optional<uint64_t> count =
            copyPlaceDirectly(place, dtype, shape, all, pool)) {
      nonFinite += *count;
      continue;
    }
    Expected<uint64_t> count = writePiece(
        place, name, dtype, takePiece(place, dtype, shape, all), pool);
    if (!count)
      return count.takeError();
    nonFinite += *count;
  }
  return nonFinite;
}

/// The rows [begin, end) of weight `name` (`rows` of them) that its places
/// read, when every place takes a range along axis 0 and together they
/// leave some rows out (a tensor-parallel rank's heads); none otherwise.
static std::optional<std::pair<int64_t, int64_t>>
placesRowWindow(const Manifest &info, StringRef name, int64_t rows) {
  int64_t begin = rows, end = 0;
  for (const WeightPlace &place : weightPlaces(info, name)) {
    if (!place.ranged() || place.entry->concatAxis != 0)
      return std::nullopt;
    begin = std::min(begin, place.start);
    end = std::max(end, place.start + place.size);
  }
  if (begin >= end || (begin == 0 && end >= rows))
    return std::nullopt;
  return std::make_pair(begin, end);
}

namespace {
/// What the places of a weight read: its stored bytes (`all`, rows
/// `firstRow` on of `shape`, in `dtype`), in the source or in `buffer`.
struct PlacedBytes {
  std::vector<uint8_t> buffer;
  llvm::ArrayRef<uint8_t> all;
  DType dtype;
  llvm::SmallVector<int64_t, 4> shape;
  int64_t firstRow = 0;
};
} // namespace

/// The bytes the places of weight `name` (`dtype`, `shape`) read: the
/// source's own when it has a plain stored form; else (rows reordered) only
/// the rows the places take when they leave some out (a tensor-parallel
/// rank's heads of a GGUF's permuted Q/K), or the whole tensor as stored or,
/// failing that, as f32.
static Expected<PlacedBytes> readPlacedBytes(const WeightSource &source,
                                             const Manifest &info,
                                             StringRef name, DType dtype,
                                             llvm::ArrayRef<int64_t> shape) {
  PlacedBytes read{{}, {}, dtype, {shape.begin(), shape.end()}, 0};
  Expected<llvm::ArrayRef<uint8_t>> raw = source.rawBytes(name);
  if (raw) {
    read.all = *raw;
    return std::move(read);
  }
  llvm::consumeError(raw.takeError());
  if (auto window = shape.empty() ? std::nullopt
                                  : placesRowWindow(info, name, shape[0])) {
    read.shape[0] = window->second - window->first;
    Expected<uint64_t> bytes = storageBytes(dtype, read.shape);
    if (!bytes)
      return bytes.takeError();
    read.buffer.resize(*bytes);
    Error err =
        source.readStoredRows(name, window->first, window->second, read.buffer);
    if (!err) {
      read.firstRow = window->first;
      read.all = read.buffer;
      return std::move(read);
    }
    // No stored form at all (tensors made up as f32): as f32, below.
    llvm::consumeError(std::move(err));
    read.shape[0] = shape[0];
  }
  Expected<uint64_t> bytes = storageBytes(dtype, shape);
  if (!bytes)
    return bytes.takeError();
  read.buffer.resize(*bytes);
  if (Error err = source.readStored(name, read.buffer)) {
    llvm::consumeError(std::move(err));
    Expected<std::vector<float>> data = source.loadF32(name);
    if (!data)
      return data.takeError();
    read.buffer.resize(data->size() * sizeof(float));
    copyBytes(read.buffer.data(), data->data(), read.buffer.size());
    read.dtype = DType::F32;
  }
  read.all = read.buffer;
  return std::move(read);
}

namespace {
/// Where the stored bytes of a weight go in the parameter pool, and the key
/// that marks them set once written.
struct StoredPlace {
  llvm::MutableArrayRef<uint8_t> bytes;
  std::string key;
  /// The param, and the row of it where the bytes start.
  const ManifestEntry *entry;
  int64_t row0 = 0;

  /// Writes `rows` (exactly the place's bytes) there: see storeRows.
  uint64_t store(llvm::ArrayRef<uint8_t> rows, uint8_t *pool) const {
    assert(rows.size() == bytes.size() && "the place's bytes");
    return storeRows(*entry, row0, rows, pool);
  }
};
} // namespace

/// The place of param `name` (or of one source of a derived param) kept as
/// stored, after checking that the model keeps it as `dtype`.
static Expected<StoredPlace> storedPlace(const ManifestEntry &e, StringRef name,
                                         DType dtype, uint8_t *pool) {
  if (e.dtype != dtype)
    return fail("param '" + name + "' is kept as " + dtypeName(e.dtype) +
                ", got " + dtypeName(dtype) + " data");
  auto shape = weightShape(e, name);
  Expected<uint64_t> bytes = storageBytes(dtype, shape);
  if (!bytes)
    return fail("param '" + name + "': " + llvm::toString(bytes.takeError()));
  if (e.sources.empty())
    return StoredPlace{{pool + e.offset, *bytes}, e.name, &e};
  // Stored types are concatenated along their rows (axis 0 of a matrix).
  size_t index = llvm::find(e.sources, name) - e.sources.begin();
  int64_t before = 0;
  for (size_t i = 0; i < index; ++i)
    before += e.sourceSizes[i];
  uint64_t offset = e.offset + before * rowBytes(dtype, e.shape.back());
  return StoredPlace{
      {pool + offset, *bytes}, derivedKey(e.name, name), &e, before};
}

Error CompiledModel::setParamBytes(StringRef name, DType dtype,
                                   llvm::ArrayRef<uint8_t> bytes) {
  if (!storage)
    return storageError();
  const ManifestEntry *e = findWeight(name);
  if (!e)
    return fail("the model has no param '" + name + "'");
  if (isRangedWeight(info, name))
    return fail("param '" + name +
                "': the model takes a range of it; set it from a tensor "
                "with its shape (setParam)");
  Expected<StoredPlace> place =
      storedPlace(*e, name, dtype, storage->paramPool->data);
  if (!place)
    return place.takeError();
  if (bytes.size() != place->bytes.size())
    return fail("param '" + name + "': expected " +
                llvm::Twine(place->bytes.size()) + " bytes of " +
                describe(dtype, weightShape(*e, name)) + ", got " +
                llvm::Twine(bytes.size()));
  place->store(bytes, storage->paramPool->data);
  storage->set->insert(place->key);
  storage->paramsChanged = true;
  return Error::success();
}

/// Writes the f32 `values` of weight `name` into every place of the pool
/// that takes it (a param of its own, parts of derived params), packing
/// where the layout says so, and appends the keys of the places it filled.
/// Touches nothing but the pool, so that weights can load in parallel.
static Error writeF32Weight(const Manifest &info, StringRef name,
                            llvm::ArrayRef<float> values, uint8_t *pool,
                            std::vector<std::string> &keys) {
  bool used = false;
  for (const ManifestEntry &e : info.entries) {
    if (e.kind != IOKind::Param)
      continue;
    if (e.dtype != DType::F32) {
      if (e.name == name || llvm::is_contained(e.sources, name))
        return fail("param '" + name + "' is kept as " + dtypeName(e.dtype) +
                    "; set it from " + dtypeName(e.dtype) +
                    " data (it is not converted from f32)");
      continue;
    }
    if (e.sources.empty() && e.name == name) {
      if (values.size() != e.numElements())
        return fail("param '" + name + "': expected " +
                    llvm::Twine(e.numElements()) + " values for " +
                    describe(e.dtype, e.shape) + ", got " +
                    llvm::Twine(values.size()));
      if (e.layout == ParamLayout::NK16)
        packWeightsNK16(values.data(), e.shape[0], e.shape[1], 0,
                        reinterpret_cast<float *>(pool + e.offset));
      else
        copyBytes(pool + e.offset, values.data(),
                  values.size() * sizeof(float));
      keys.push_back(e.name);
      used = true;
      continue;
    }
    for (auto [i, s] : llvm::enumerate(e.sources)) {
      if (s != name)
        continue;
      // The elements of e.shape with the concat dim replaced by this
      // source's extent (which may be zero).
      uint64_t expected = e.sourceSizes[i];
      for (auto [d, dim] : llvm::enumerate(e.shape))
        if (static_cast<int64_t>(d) != e.concatAxis)
          expected *= dim;
      if (values.size() != expected)
        return fail("param '" + name + "': expected " + llvm::Twine(expected) +
                    " values (part " + llvm::Twine(i) + " of '" + e.name +
                    "'), got " + llvm::Twine(values.size()));
      scatterSource(e, i, values, pool);
      keys.push_back(derivedKey(e.name, s));
      used = true;
    }
  }
  if (!used)
    return fail("the model has no param '" + name + "'");
  return Error::success();
}

/// The shape of f32 weight `name` given as `count` values, for a model
/// that takes a range of it: the param's other dims, and along its axis
/// what the count leaves.
static Expected<llvm::SmallVector<int64_t, 4>>
rangedWeightShape(const Manifest &info, StringRef name, uint64_t count) {
  for (const WeightPlace &place : weightPlaces(info, name)) {
    if (!place.ranged())
      continue;
    const ManifestEntry &e = *place.entry;
    llvm::SmallVector<int64_t, 4> shape(e.shape.begin(), e.shape.end());
    uint64_t others =
        product(e.shape, 0, e.shape.size()) / e.shape[e.concatAxis];
    if (e.shape[e.concatAxis] == 0 || others == 0 || count % others)
      return fail("param '" + e.name + "' takes a range of '" + name +
                  "': " + llvm::Twine(count) +
                  " values are not a whole number of slices along axis " +
                  llvm::Twine(e.concatAxis) + " of " + formatShape(e.shape) +
                  "; set it from a tensor with its shape");
    shape[e.concatAxis] = count / others;
    return shape;
  }
  return fail("the model takes no range of param '" + name + "'");
}

Error CompiledModel::setParam(StringRef name, llvm::ArrayRef<float> values) {
  if (!storage)
    return storageError();
  if (isRangedWeight(info, name)) {
    Expected<llvm::SmallVector<int64_t, 4>> shape =
        rangedWeightShape(info, name, values.size());
    if (!shape)
      return shape.takeError();
    return setRangedWeight(name, DType::F32, *shape,
                           {reinterpret_cast<const uint8_t *>(values.data()),
                            values.size() * sizeof(float)});
  }
  std::vector<std::string> keys;
  if (Error err =
          writeF32Weight(info, name, values, storage->paramPool->data, keys))
    return err;
  for (const std::string &key : keys)
    storage->set->insert(key);
  storage->paramsChanged = true;
  return Error::success();
}

Error CompiledModel::setRangedWeight(StringRef name, DType dtype,
                                     llvm::ArrayRef<int64_t> shape,
                                     llvm::ArrayRef<uint8_t> bytes) {
  if (!storage)
    return storageError();
  std::vector<std::string> keys;
  Expected<uint64_t> written = writeWeightPlaces(
      info, name, dtype, shape, bytes, storage->paramPool->data, keys);
  if (!written)
    return written.takeError();
  for (const std::string &key : keys)
    storage->set->insert(key);
  storage->paramsChanged = true;
  return Error::success();
}

const ManifestEntry *CompiledModel::findWeight(StringRef name) const {
  for (const ManifestEntry &e : info.entries) {
    if (e.kind != IOKind::Param)
      continue;
    if (e.sources.empty() && e.name == name)
      return &e;
    if (llvm::is_contained(e.sources, name))
      return &e;
  }
  return nullptr;
}

/// The shape the model expects for weight `name`.
static llvm::SmallVector<int64_t, 4> weightShape(const ManifestEntry &e,
                                                 StringRef name) {
  llvm::SmallVector<int64_t, 4> shape(e.shape.begin(), e.shape.end());
  for (auto [i, s] : llvm::enumerate(e.sources))
    if (s == name)
      shape[e.concatAxis] = e.sourceSizes[i];
  return shape;
}

Error CompiledModel::setParam(StringRef name, const Tensor &value) {
  const ManifestEntry *e = findWeight(name);
  if (!e)
    return fail("the model has no param '" + name + "'");
  // Every place from the tensor, each reading its range.
  if (isRangedWeight(info, name))
    return setRangedWeight(name, value.dtype(), value.shape(), value.bytes());
  auto shape = weightShape(*e, name);
  if (llvm::ArrayRef<int64_t>(shape) != value.shape())
    return fail("param '" + name + "': expected shape " + formatShape(shape) +
                ", got " + value.describe());
  if (e->dtype != DType::F32 && value.dtype() == e->dtype)
    return setParamBytes(name, value.dtype(), value.bytes());
  if (value.dtype() == DType::F32 && e->dtype == DType::F32)
    return setParam(name, value.data<float>());
  std::vector<float> converted(value.numElements());
  if (Error err = decodeToF32(value.dtype(), value.bytes(), converted))
    return fail("param '" + name + "': " + llvm::toString(std::move(err)));
  if (e->dtype == DType::F32)
    return setParam(name, converted);
  // Kept in another type than the value's: converted (re-quantized).
  Expected<std::vector<uint8_t>> bytes = encodeFromF32(e->dtype, converted);
  if (!bytes)
    return fail("param '" + name + "' is kept as " + dtypeName(e->dtype) +
                "; converting " + dtypeName(value.dtype()) +
                " data: " + llvm::toString(bytes.takeError()));
  return setParamBytes(name, e->dtype, *bytes);
}

namespace {
/// What loading one weight did: the keys of the places it filled, how many
/// of its values are non-finite, and how many of its bytes were mapped from
/// its file rather than copied.
struct Loaded {
  std::vector<std::string> keys;
  uint64_t nonFinite = 0;
  uint64_t mapped = 0;
};
} // namespace

/// Loads one weight into the pool.
using LoadJob = std::function<Expected<Loaded>()>;

namespace {
/// The weight files loadParams maps pool pages from instead of copying: one
/// read-only descriptor per file, opened before the load jobs run and
/// closed after them (a mapping keeps its file). Only a pool that is itself
/// a page-aligned mapping takes file pages.
class FileMapper {
public:
  FileMapper(const WeightSource &source, llvm::ArrayRef<std::string> names,
             bool poolIsMapped)
      : source(source) {
    long pageSize = ::sysconf(_SC_PAGESIZE);
    if (!poolIsMapped || pageSize <= 0 || !llvm::isPowerOf2_64(pageSize))
      return;
    page = pageSize;
    for (const std::string &name : names)
      if (std::optional<WeightSource::FileRegion> r = source.fileRegion(name))
        if (!fds.count(r->path))
          fds[r->path] = ::open(r->path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  ~FileMapper() {
    for (auto &entry : fds)
      if (entry.second >= 0)
        ::close(entry.second);
  }
  FileMapper(const FileMapper &) = delete;
  FileMapper &operator=(const FileMapper &) = delete;

  /// Fills `dst`, a place in the pool for weight `name` as stored, by
  /// mapping its whole pages from the file when the place's address and
  /// the weight's file offset agree modulo the page size, and copying the
  /// partial pages at either end from the source. Returns the bytes mapped;
  /// 0 when nothing was (`dst` untouched: the caller copies).
  Expected<uint64_t> map(StringRef name,
                         llvm::MutableArrayRef<uint8_t> dst) const {
    if (!page)
      return 0;
    std::optional<WeightSource::FileRegion> region = source.fileRegion(name);
    if (!region)
      return 0;
    auto fd = fds.find(region->path);
    if (fd == fds.end() || fd->second < 0)
      return 0;
    auto d = reinterpret_cast<uintptr_t>(dst.data());
    if (d % page != region->offset % page)
      return 0;
    uintptr_t begin = llvm::alignTo(d, page);
    uintptr_t end = (d + dst.size()) / page * page;
    if (end <= begin)
      return 0;
    Expected<llvm::ArrayRef<uint8_t>> src = source.rawBytes(name);
    if (!src) {
      llvm::consumeError(src.takeError());
      return 0;
    }
    if (src->size() != dst.size())
      return 0;
    void *at = reinterpret_cast<void *>(begin);
    void *p =
        ::mmap(at, end - begin, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
               fd->second, static_cast<off_t>(region->offset + (begin - d)));
    if (p == MAP_FAILED) {
      // A failed MAP_FIXED may have unmapped the range: zero pages go back,
      // and the caller copies.
      if (::mmap(at, end - begin, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
        return fail("weight '" + name +
                    "': the parameter pool lost its pages while mapping "
                    "them from '" +
                    region->path + "': " + std::strerror(errno));
      return 0;
    }
    // Page tables filled in one call (no fault per page, no copy on write
    // broken), where the kernel can; else read ahead.
#ifdef MADV_POPULATE_READ
    if (::madvise(p, end - begin, MADV_POPULATE_READ) != 0)
#endif
      ::madvise(p, end - begin, MADV_WILLNEED);
    copyBytes(dst.data(), src->data(), begin - d);
    copyBytes(reinterpret_cast<uint8_t *>(end), src->data() + (end - d),
              d + dst.size() - end);
    return end - begin;
  }

private:
  const WeightSource &source;
  uint64_t page = 0;
  std::map<std::string, int> fds;
};
} // namespace

/// The non-finite values of weight `name` of `source`, read into `values`
/// (f32) from its stored `dtype`: from the stored bytes while they are
/// mapped when they are smaller than `values` (f16, bf16, ggml blocks: only
/// their scales are read), else from `values`, just written. f64 is counted
/// after the conversion, which may overflow.
static uint64_t nonFiniteF32(const WeightSource &source, StringRef name,
                             DType dtype, llvm::ArrayRef<float> values) {
  if (dtype != DType::F32 && dtype != DType::F64) {
    if (Expected<llvm::ArrayRef<uint8_t>> raw = source.rawBytes(name))
      return countNonFinite(dtype, *raw);
    else
      llvm::consumeError(raw.takeError());
  }
  return countNonFinite(
      DType::F32,
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(values.data()),
                              values.size() * sizeof(float)));
}

/// Runs `jobs` on up to the machine's cores, then marks the places the
/// successful ones filled in `set` and stores each job's count of non-finite
/// values in `nonFinite`; returns the first failure in job order (every job
/// runs).
static Error runInParallel(std::vector<LoadJob> &jobs, llvm::StringSet<> &set,
                           std::vector<uint64_t> &nonFinite, uint64_t &mapped) {
  std::vector<std::string> failures(jobs.size());
  std::vector<std::vector<std::string>> keys(jobs.size());
  nonFinite.assign(jobs.size(), 0);
  std::atomic<uint64_t> mappedBytes{0};
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      if (Expected<Loaded> loaded = jobs[i]()) {
        keys[i] = std::move(loaded->keys);
        nonFinite[i] = loaded->nonFinite;
        mappedBytes += loaded->mapped;
      } else {
        failures[i] = llvm::toString(loaded.takeError());
      }
    }
  };
  size_t workers = std::min<size_t>(
      jobs.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w)
    threads.emplace_back(work);
  work();
  for (std::thread &t : threads)
    t.join();
  mapped = mappedBytes;
  for (const std::vector<std::string> &filled : keys)
    for (const std::string &key : filled)
      set.insert(key);
  for (const std::string &f : failures)
    if (!f.empty())
      return fail(f);
  return Error::success();
}

Error CompiledModel::loadParams(const WeightSource &given) {
  // The source first, then what the flow synthesized.
  std::optional<WeightSourceStack> stack;
  if (synthesized)
    stack.emplace(std::vector<const WeightSource *>{&given, synthesized.get()});
  const WeightSource &source =
      stack ? static_cast<const WeightSource &>(*stack) : given;
  // Every weight is copied (or converted) straight into its place in the
  // pool, in parallel: the first touch of the pool's pages is most of a
  // load. Checks and places come first, in order. Each job counts the
  // non-finite values of its weight as it goes (see nonFiniteF32).
  warnings.clear();
  mappedBytes = 0;
  if (!storage)
    return storageError();
  // Weights kept as stored whose whole pages sit at their file's page
  // phase in the pool are mapped from the file, not copied.
  FileMapper files(source, weightNames(), storage->paramPool->mappedBytes != 0);
  std::vector<LoadJob> jobs;
  std::vector<std::string> jobNames;
  for (const std::string &name : weightNames()) {
    const TensorInfo *t = source.lookup(name);
    const ManifestEntry *e = findWeight(name);
    if (!t)
      return fail(source.description() + ": missing weight '" + name +
                  "' (the model needs " +
                  describe(DType::F32, weightShape(*e, name)) + ")");
    auto shape = weightShape(*e, name);
    bool floating = t->dtype == DType::F32 || t->dtype == DType::F16 ||
                    t->dtype == DType::BF16 || t->dtype == DType::F64 ||
                    isQuantized(t->dtype);
    if (!floating)
      return fail(source.description() + ": weight '" + name + "' is " +
                  dtypeName(t->dtype) +
                  "; the model needs floating-point weights (f32, f16, bf16 "
                  "or a GGUF quantized type)");
    if (isRangedWeight(info, name)) {
      // Sliced params take ranges of it: only those bytes are read (from
      // the mapping when the source has one).
      for (const WeightPlace &place : weightPlaces(info, name))
        if (Error err = checkPlace(place, name, t->dtype, t->shape))
          return fail(source.description() + ": " +
                      llvm::toString(std::move(err)));
      storage->paramsChanged = true;
      jobNames.push_back(name);
      jobs.push_back([this, &source, name, dtype = t->dtype,
                      shape = t->shape]() -> Expected<Loaded> {
        Expected<PlacedBytes> read =
            readPlacedBytes(source, info, name, dtype, shape);
        if (!read)
          return read.takeError();
        Loaded loaded;
        Expected<uint64_t> nonFinite = writeWeightPlaces(
            info, name, read->dtype, read->shape, read->all,
            storage->paramPool->data, loaded.keys, read->firstRow);
        source.release(name);
        if (!nonFinite)
          return fail(source.description() + ": " +
                      llvm::toString(nonFinite.takeError()));
        loaded.nonFinite = *nonFinite;
        return loaded;
      });
      continue;
    }
    if (llvm::ArrayRef<int64_t>(shape) != llvm::ArrayRef<int64_t>(t->shape))
      return fail(source.description() + ": weight '" + name + "' has shape " +
                  formatShape(t->shape) + ", the model needs " +
                  formatShape(shape));
    storage->paramsChanged = true;
    jobNames.push_back(name);
    if (e->dtype != DType::F32) {
      Expected<StoredPlace> place =
          storedPlace(*e, name, e->dtype, storage->paramPool->data);
      if (!place)
        return place.takeError();
      if (t->dtype == e->dtype && e->layout == ParamLayout::X8) {
        // Interleaved on the way from the file's bytes (or, for rows the
        // file stores reordered, a copy of them put back in order) into
        // the pool.
        jobs.push_back([this, &source, name,
                        place = *place]() -> Expected<Loaded> {
          std::vector<uint8_t> buffer;
          llvm::ArrayRef<uint8_t> rows;
          if (Expected<llvm::ArrayRef<uint8_t>> raw = source.rawBytes(name)) {
            rows = *raw;
          } else {
            llvm::consumeError(raw.takeError());
            buffer.resize(place.bytes.size());
            if (Error err = source.readStored(name, buffer))
              return std::move(err);
            rows = buffer;
          }
          if (rows.size() != place.bytes.size())
            return fail(source.description() + ": weight '" + name + "' has " +
                        llvm::Twine(rows.size()) +
                        " stored bytes, the model needs " +
                        llvm::Twine(place.bytes.size()));
          uint64_t nonFinite = place.store(rows, storage->paramPool->data);
          source.release(name);
          return Loaded{{place.key}, nonFinite};
        });
        continue;
      }
      if (t->dtype == e->dtype) {
        // Kept as stored: the bytes as the file has them, mapped from it
        // where the pool's layout allows.
        jobs.push_back([&source, &files, name, place = *place,
                        dtype = t->dtype]() -> Expected<Loaded> {
          Expected<uint64_t> mapped = files.map(name, place.bytes);
          if (!mapped)
            return mapped.takeError();
          if (!*mapped)
            if (Error err = source.readStored(name, place.bytes))
              return std::move(err);
          source.release(name);
          return Loaded{
              {place.key}, countNonFinite(dtype, place.bytes), *mapped};
        });
        continue;
      }
      // Kept in another type ([precision] weights = "q8_0"...): converted
      // from f32.
      jobs.push_back([this, &source, name, place = *place, from = t->dtype,
                      to = e->dtype]() -> Expected<Loaded> {
        Expected<std::vector<float>> data = source.loadF32(name);
        if (!data)
          return data.takeError();
        uint64_t nonFinite = nonFiniteF32(source, name, from, *data);
        source.release(name);
        Expected<std::vector<uint8_t>> bytes = encodeFromF32(to, *data);
        if (!bytes)
          return fail(
              source.description() + ": weight '" + name + "' is " +
              dtypeName(from) + "; the model keeps it as " + dtypeName(to) +
              ", and converting failed: " + llvm::toString(bytes.takeError()));
        if (bytes->size() != place.bytes.size())
          return fail("param '" + name + "': converted to " +
                      llvm::Twine(bytes->size()) + " bytes, expected " +
                      llvm::Twine(place.bytes.size()));
        place.store(*bytes, storage->paramPool->data);
        return Loaded{{place.key}, nonFinite};
      });
      continue;
    }
    // f32: read straight into the pool when the weight has one unpacked
    // place of its own, else through a buffer to pack or scatter.
    bool direct = e->sources.empty() && e->layout != ParamLayout::NK16 &&
                  llvm::none_of(info.entries, [&](const ManifestEntry &o) {
                    return llvm::is_contained(o.sources, name);
                  });
    if (direct) {
      auto *dst =
          reinterpret_cast<float *>(storage->paramPool->data + e->offset);
      jobs.push_back([&source, &files, name, dst, n = e->numElements(),
                      key = e->name, dtype = t->dtype]() -> Expected<Loaded> {
        uint64_t mapped = 0;
        if (dtype == DType::F32) {
          Expected<uint64_t> m = files.map(
              name, {reinterpret_cast<uint8_t *>(dst), n * sizeof(float)});
          if (!m)
            return m.takeError();
          mapped = *m;
        }
        if (!mapped)
          if (Error err =
                  source.readF32(name, llvm::MutableArrayRef<float>(dst, n)))
            return std::move(err);
        uint64_t nonFinite = nonFiniteF32(source, name, dtype, {dst, n});
        source.release(name);
        return Loaded{{key}, nonFinite, mapped};
      });
      continue;
    }
    jobs.push_back(
        [this, &source, name, dtype = t->dtype]() -> Expected<Loaded> {
          Expected<std::vector<float>> data = source.loadF32(name);
          if (!data)
            return data.takeError();
          Loaded loaded;
          loaded.nonFinite = nonFiniteF32(source, name, dtype, *data);
          source.release(name);
          if (Error err = writeF32Weight(info, name, *data,
                                         storage->paramPool->data, loaded.keys))
            return std::move(err);
          return loaded;
        });
  }
  std::vector<uint64_t> nonFinite;
  Error err = runInParallel(jobs, *storage->set, nonFinite, mappedBytes);
  for (auto [name, count] : llvm::zip(jobNames, nonFinite))
    if (count)
      warnings.push_back("weight '" + source.displayName(name) + "' in " +
                         source.description().str() + " has " +
                         std::to_string(count) +
                         " non-finite values (NaN or Inf)");
  return err;
}

/// Rejects integer values outside [0, bound).
static Error checkIndices(const ManifestEntry &e, const TensorRef &t) {
  auto check = [&](auto zero) -> Error {
    using T = decltype(zero);
    size_t n = t.bytes.size() / sizeof(T);
    for (size_t i = 0; i < n; ++i) {
      T v; // The view may be unaligned (a numpy slice of bytes).
      std::memcpy(&v, t.bytes.data() + i * sizeof(T), sizeof(T));
      if (v < 0 || v >= e.indexBound)
        return fail("input '" + e.name + "': value " + llvm::Twine(int64_t(v)) +
                    " at flat index " + llvm::Twine(i) + " is outside [0, " +
                    llvm::Twine(e.indexBound) + ")");
    }
    return Error::success();
  };
  if (t.dtype == DType::I32)
    return check(int32_t());
  if (t.dtype == DType::I64)
    return check(int64_t());
  return Error::success();
}

Expected<TensorMap_t> CompiledModel::run(const TensorMap_t &inputs) {
  TensorRefMap_t refs;
  for (const auto &[name, t] : inputs)
    refs.emplace(name, TensorRef(t));
  return runViews(refs);
}

Expected<TensorMap_t> CompiledModel::runViews(const TensorRefMap_t &inputs) {
  Expected<TensorRefMap_t> views = runInArena(inputs);
  if (!views)
    return views.takeError();
  TensorMap_t outputs;
  for (const auto &[name, view] : *views) {
    Tensor t(view.dtype, view.shape);
    copyBytes(t.mutableBytes().data(), view.bytes.data(), view.bytes.size());
    outputs.emplace(name, std::move(t));
  }
  return outputs;
}

Expected<TensorRefMap_t>
CompiledModel::runInArena(const TensorRefMap_t &inputs) {
  if (!storage)
    return storageError();
  std::vector<const ManifestEntry *> ins = info.ofKind(IOKind::Input);
  for (const auto &[name, t] : inputs)
    if (!info.find(IOKind::Input, name)) {
      std::string known;
      for (const ManifestEntry *e : ins)
        known += (known.empty() ? "" : ", ") + e->name;
      return fail("unknown input '" + name + "' (the model takes: " + known +
                  ")");
    }
  for (const ManifestEntry *e : ins) {
    auto it = inputs.find(e->name);
    if (it == inputs.end())
      return fail("missing input '" + e->name + "' (expects " +
                  describe(e->dtype, e->shape) + ")");
    const TensorRef &t = it->second;
    if (t.dtype != e->dtype || t.shape != llvm::ArrayRef<int64_t>(e->shape))
      return fail("input '" + e->name + "': expected " +
                  describe(e->dtype, e->shape) + ", got " +
                  describe(t.dtype, t.shape));
    if (t.bytes.size() != e->byteSize())
      return fail("input '" + e->name + "': " + describe(t.dtype, t.shape) +
                  " needs " + llvm::Twine(e->byteSize()) +
                  " bytes, the view has " + llvm::Twine(t.bytes.size()));
    if (e->indexBound >= 0)
      if (Error err = checkIndices(*e, t))
        return std::move(err);
  }
  std::vector<std::string> missing = missingParams();
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 5; ++i)
      list += (i ? ", '" : "'") + missing[i] + "'";
    return fail(llvm::Twine(missing.size()) + " param(s) never set: " + list +
                (missing.size() > 5 ? ", ..." : ""));
  }
  // An input written in place (see inputPlace) is not copied.
  for (const ManifestEntry *e : ins) {
    const uint8_t *src = inputs.find(e->name)->second.bytes.data();
    if (src != storage->arena.data + e->offset)
      copyBytes(storage->arena.data + e->offset, src, e->byteSize());
  }

  if (Error err = executor->execute(
          info, {storage->arena.data, storage->arena.size},
          {storage->paramPool->data, storage->paramPool->size},
          storage->paramsChanged))
    return std::move(err);
  storage->paramsChanged = false;

  TensorRefMap_t outputs;
  for (const ManifestEntry *e : info.ofKind(IOKind::Output))
    outputs.emplace(e->name, TensorRef(e->dtype, e->shape,
                                       llvm::ArrayRef<uint8_t>(
                                           storage->arena.data + e->offset,
                                           e->byteSize())));
  return outputs;
}

uint64_t CompiledModel::releaseArena() {
  if (!storage || !storage->arena.data || !storage->arena.mappedBytes)
    return 0;
  // MADV_DONTNEED on a private anonymous mapping drops its pages: the next
  // touch faults in a zero page.
  if (::madvise(storage->arena.data, storage->arena.mappedBytes,
                MADV_DONTNEED) != 0)
    return 0;
  return storage->arena.mappedBytes;
}

llvm::MutableArrayRef<uint8_t> CompiledModel::inputPlace(StringRef name) {
  const ManifestEntry *e = info.find(IOKind::Input, name);
  if (!storage || !storage->arena.data || !e)
    return {};
  return {storage->arena.data + e->offset, static_cast<size_t>(e->byteSize())};
}

Expected<CompiledModel>
CompiledModel::loadLibrary(StringRef libPath, StringRef manifestPath,
                           std::optional<uint64_t> memoryBudgetMB) {
  Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readRegularFile(manifestPath, /*requiresNullTerminator=*/true, "");
  if (!buffer)
    return buffer.takeError();
  Expected<Manifest> manifest =
      Manifest::fromJSON((*buffer)->getBuffer(), manifestPath);
  if (!manifest)
    return manifest.takeError();
  std::string err;
  auto lib = llvm::sys::DynamicLibrary::getPermanentLibrary(
      libPath.str().c_str(), &err);
  if (!lib.isValid())
    return fail(libPath + ": cannot load: " + err);
  std::string symbol = spmd::kCInterfacePrefix + manifest->entry;
  // SPMD code runs on a thread pool.
  if (void *spmd = lib.getAddressOfSymbol((symbol + spmd::kSpmdSuffix).c_str()))
    return create(std::move(*manifest),
                  std::make_unique<CpuExecutor>(
                      reinterpret_cast<CpuExecutor::SpmdFn>(spmd), nullptr,
                      cpuThreadCount(0)),
                  memoryBudgetMB);
  void *addr = lib.getAddressOfSymbol(symbol.c_str());
  if (!addr)
    return fail(libPath + ": no symbol '" + symbol + "'");
  return create(
      std::move(*manifest),
      std::make_unique<HostExecutor>(reinterpret_cast<EntryFn>(addr), nullptr),
      memoryBudgetMB);
}
