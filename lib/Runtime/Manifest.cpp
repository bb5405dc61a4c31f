//===- Manifest.cpp - The binding manifest of a compiled model ------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/Manifest.h"
#include "RLX/Runtime/Tensor.h"
#include "RLX/Support/CheckedSize.h"
#include "RLX/UKernels/UKernels.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/JSON.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace rlx;
namespace json = llvm::json;

llvm::StringRef rlx::ioKindName(IOKind kind) {
  switch (kind) {
  case IOKind::Input:
    return "input";
  case IOKind::Param:
    return "param";
  case IOKind::Output:
    return "output";
  }
  return "?";
}

uint64_t ManifestEntry::numElements() const {
  return checkedNumElements(shape).value_or(UINT64_MAX);
}

uint64_t ManifestEntry::byteSize() const {
  return checkedByteSize(shape, dtypeBlockBytes(dtype),
                         dtypeBlockElements(dtype))
      .value_or(UINT64_MAX);
}

/// Checks that `e`'s byte size is representable and that it lies inside its
/// storage of `limit` bytes.
static llvm::Error checkEntryBounds(const ManifestEntry &e, uint64_t limit) {
  llvm::Expected<uint64_t> bytes = storageBytes(e.dtype, e.shape);
  if (!bytes)
    return llvm::createStringError("entry '" + e.name +
                                   "': " + llvm::toString(bytes.takeError()));
  std::optional<uint64_t> end = checkedAddBytes(e.offset, *bytes);
  if (!end || *end > limit)
    return llvm::createStringError(
        "entry '" + e.name + "' lies past the end of its storage (" +
        llvm::Twine(*bytes) + " bytes at offset " + llvm::Twine(e.offset) +
        ", " + llvm::Twine(limit) + " bytes)");
  return llvm::Error::success();
}

llvm::Error Manifest::verify() const {
  if (arenaSize > kMaxByteSize || paramSize > kMaxByteSize)
    return llvm::createStringError(
        "model '" + entry + "': arena (" + llvm::Twine(arenaSize) +
        " bytes) or parameters (" + llvm::Twine(paramSize) +
        " bytes) exceed 2^63 - 1 bytes");
  for (const ManifestEntry &e : entries)
    if (llvm::Error err = checkEntryBounds(
            e, e.kind == IOKind::Param ? paramSize : arenaSize))
      return llvm::createStringError("model '" + entry +
                                     "': " + llvm::toString(std::move(err)));
  return llvm::Error::success();
}

const ManifestEntry *Manifest::find(IOKind kind, llvm::StringRef name) const {
  for (const ManifestEntry &e : entries)
    if (e.kind == kind && e.name == name)
      return &e;
  return nullptr;
}

std::vector<const ManifestEntry *> Manifest::ofKind(IOKind kind) const {
  std::vector<const ManifestEntry *> out;
  for (const ManifestEntry &e : entries)
    if (e.kind == kind)
      out.push_back(&e);
  return out;
}

std::string Manifest::toJSON() const {
  json::Array list;
  for (const ManifestEntry &e : entries) {
    json::Object o{{"kind", ioKindName(e.kind)},
                   {"name", e.name},
                   {"offset", static_cast<int64_t>(e.offset)},
                   {"dtype", dtypeName(e.dtype)},
                   {"shape", json::Array(e.shape)}};
    if (!e.sources.empty()) {
      o["sources"] = json::Array(e.sources);
      o["source_sizes"] = json::Array(e.sourceSizes);
      if (!e.sourceStarts.empty())
        o["source_starts"] = json::Array(e.sourceStarts);
      o["concat_axis"] = e.concatAxis;
    }
    if (e.indexBound >= 0)
      o["index_bound"] = e.indexBound;
    if (e.layout != ParamLayout::RowMajor)
      o["layout"] = stringifyParamLayout(e.layout);
    list.push_back(std::move(o));
  }
  json::Object root{{"entry", entry},
                    {"arena_size", static_cast<int64_t>(arenaSize)},
                    {"param_size", static_cast<int64_t>(paramSize)},
                    {"alignment", static_cast<int64_t>(alignment)},
                    {"entries", std::move(list)}};
  if (worldSize > 1)
    root["world_size"] = static_cast<int64_t>(worldSize);
  if (rank >= 0)
    root["rank"] = rank;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", json::Value(std::move(root)));
  return s;
}

static llvm::Error bad(llvm::StringRef file, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 file + ": " + msg);
}

llvm::Expected<Manifest> Manifest::fromJSON(llvm::StringRef text,
                                            llvm::StringRef fileName) {
  llvm::Expected<json::Value> parsed = parseJSON(text);
  if (!parsed)
    return bad(fileName, "invalid JSON: " + llvm::toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return bad(fileName, "the manifest must be a JSON object");
  Manifest m;
  auto str = root->getString("entry");
  auto arena = root->getInteger("arena_size");
  auto params = root->getInteger("param_size");
  const json::Array *list = root->getArray("entries");
  if (!str || !arena || !params || !list || *arena < 0 || *params < 0)
    return bad(fileName, "expects 'entry', 'arena_size', 'param_size' and "
                         "'entries'");
  m.entry = str->str();
  m.arenaSize = *arena;
  m.paramSize = *params;
  if (auto a = root->getInteger("alignment")) {
    if (*a <= 0 || !llvm::isPowerOf2_64(*a))
      return bad(fileName,
                 "'alignment' " + llvm::Twine(*a) + " is not a power of two");
    m.alignment = *a;
  }
  if (auto w = root->getInteger("world_size")) {
    if (*w < 1)
      return bad(fileName,
                 "'world_size' " + llvm::Twine(*w) + " must be at least 1");
    m.worldSize = *w;
  }
  if (const json::Value *r = root->get("rank")) {
    std::optional<int64_t> rank = r->getAsInteger();
    if (!rank || *rank < 0 || static_cast<uint64_t>(*rank) >= m.worldSize)
      return bad(fileName, "'rank' must be an integer in [0, world_size = " +
                               llvm::Twine(m.worldSize) + ")");
    m.rank = *rank;
  }
  for (const json::Value &v : *list) {
    const json::Object *o = v.getAsObject();
    if (!o)
      return bad(fileName, "each entry must be an object");
    ManifestEntry e;
    auto kind = o->getString("kind");
    auto name = o->getString("name");
    auto offset = o->getInteger("offset");
    auto dtype = o->getString("dtype");
    const json::Array *shape = o->getArray("shape");
    if (!kind || !name || !offset || !dtype || !shape || *offset < 0)
      return bad(fileName, "entry missing kind/name/offset/dtype/shape");
    e.name = name->str();
    if (*kind == "input")
      e.kind = IOKind::Input;
    else if (*kind == "param")
      e.kind = IOKind::Param;
    else if (*kind == "output")
      e.kind = IOKind::Output;
    else
      return bad(fileName,
                 "entry '" + e.name + "': unknown kind '" + *kind + "'");
    std::optional<DType> dt = dtypeFromName(*dtype);
    if (!dt)
      return bad(fileName,
                 "entry '" + e.name + "': unknown dtype '" + *dtype + "'");
    // Parameters may be kept as stored (ggml blocks, read by the
    // micro-kernels); what runs in and out is a runtime type.
    if (isQuantized(*dt) && e.kind != IOKind::Param)
      return bad(fileName, "entry '" + e.name + "': dtype '" + *dtype +
                               "' is a storage format, not a runtime type");
    e.dtype = *dt;
    if (m.find(e.kind, e.name))
      return bad(fileName,
                 "duplicate " + ioKindName(e.kind) + " '" + e.name + "'");
    e.offset = *offset;
    for (const json::Value &d : *shape) {
      auto dim = d.getAsInteger();
      if (!dim || *dim < 0)
        return bad(fileName, "entry '" + e.name + "': bad shape");
      e.shape.push_back(*dim);
    }
    if (const json::Array *src = o->getArray("sources")) {
      for (const json::Value &s : *src) {
        std::optional<llvm::StringRef> n = s.getAsString();
        if (!n)
          return bad(fileName,
                     "entry '" + e.name + "': 'sources' must be strings");
        e.sources.push_back(n->str());
      }
      if (const json::Array *sizes = o->getArray("source_sizes"))
        for (const json::Value &s : *sizes) {
          std::optional<int64_t> size = s.getAsInteger();
          if (!size || *size < 0)
            return bad(fileName, "entry '" + e.name +
                                     "': 'source_sizes' must be "
                                     "non-negative integers");
          e.sourceSizes.push_back(*size);
        }
      if (const json::Value *starts = o->get("source_starts")) {
        const json::Array *list = starts->getAsArray();
        if (!list)
          return bad(fileName, "entry '" + e.name +
                                   "': 'source_starts' must be an array");
        for (const json::Value &s : *list) {
          std::optional<int64_t> start = s.getAsInteger();
          if (!start || *start < 0)
            return bad(fileName, "entry '" + e.name +
                                     "': 'source_starts' must be "
                                     "non-negative integers");
          e.sourceStarts.push_back(*start);
        }
        if (e.sourceStarts.size() != e.sources.size())
          return bad(fileName, "entry '" + e.name + "': 'source_starts' has " +
                                   llvm::Twine(e.sourceStarts.size()) +
                                   " entries for " +
                                   llvm::Twine(e.sources.size()) + " sources");
        for (auto [start, size] : llvm::zip(e.sourceStarts, e.sourceSizes))
          if (start > INT64_MAX - size)
            return bad(fileName,
                       "entry '" + e.name + "': a source range overflows");
      }
      e.concatAxis = o->getInteger("concat_axis").value_or(-1);
      if (e.concatAxis < 0 ||
          e.concatAxis >= static_cast<int64_t>(e.shape.size()))
        return bad(fileName, "entry '" + e.name + "': bad concat_axis");
      uint64_t total = 0;
      bool overflow = false;
      for (int64_t s : e.sourceSizes)
        overflow |= __builtin_add_overflow(total, uint64_t(s), &total);
      if (e.sourceSizes.size() != e.sources.size() || overflow ||
          total != uint64_t(e.shape[e.concatAxis]))
        return bad(fileName, "entry '" + e.name +
                                 "': source_sizes must "
                                 "match the sources and add up to the concat "
                                 "dimension");
    }
    if (e.sources.empty() && o->get("source_starts"))
      return bad(fileName,
                 "entry '" + e.name + "': 'source_starts' needs 'sources'");
    e.indexBound = o->getInteger("index_bound").value_or(-1);
    if (std::optional<llvm::StringRef> layout = o->getString("layout")) {
      // nk16: an f32 [N, K] param, N a multiple of 16 (each source's too,
      // unless it is a range of one source, packed whole).
      bool oneRange = !e.sourceStarts.empty() && e.sources.size() == 1;
      std::optional<ParamLayout> parsed = symbolizeParamLayout(*layout);
      bool ok = parsed == ParamLayout::NK16 && e.kind == IOKind::Param &&
                e.dtype == DType::F32 && e.shape.size() == 2 &&
                e.shape[0] % 16 == 0 &&
                (e.sources.empty() || e.concatAxis == 0 || oneRange);
      if (ok && !oneRange)
        for (int64_t s : e.sourceSizes)
          ok &= s % 16 == 0;
      // x8: a q4_0, q8_0, q4_K, q5_K, q6_K, f16 or bf16 [N, K] param, N (and
      // each source's or range's rows) a multiple of 8, concatenated along N.
      if (parsed == ParamLayout::X8) {
        std::optional<uint32_t> ggml = ggmlTypeOf(e.dtype);
        ok = e.kind == IOKind::Param && ggml &&
             rlx_uk_supports(static_cast<int>(*ggml) | RLX_UK_REPACKED_X8) &&
             e.shape.size() == 2 && e.shape[0] % 8 == 0 &&
             (e.sources.empty() || e.concatAxis == 0);
        for (int64_t s : e.sourceSizes)
          ok &= s % 8 == 0;
      }
      if (!ok)
        return bad(fileName, "entry '" + e.name + "': unsupported layout '" +
                                 *layout + "'");
      e.layout = *parsed;
    }
    if (llvm::Error err = checkEntryBounds(
            e, e.kind == IOKind::Param ? m.paramSize : m.arenaSize))
      return bad(fileName, llvm::toString(std::move(err)));
    m.entries.push_back(std::move(e));
  }
  return m;
}
