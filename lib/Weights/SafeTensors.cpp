//===- SafeTensors.cpp - safetensors file reader and writer ---------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/SafeTensors.h"
#include "RLX/Support/FileIO.h"
#include "RLX/Weights/JSON.h"
#include "RLX/Weights/Quant.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace llvm;

namespace rlx {

/// The reference implementation's cap on the JSON header.
static constexpr uint64_t kMaxHeaderBytes = 100'000'000;
/// Tensors in one file. The largest published checkpoints hold tens of
/// thousands in all, split over shards; each tensor's JSON object costs
/// llvm::json about 4 KiB (a DenseMap starts at 64 buckets), so a header of
/// a million tiny entries used to take gigabytes.
static constexpr uint64_t kMaxTensors = 65'536;
/// A sharded index's 'weight_map' names every tensor of the model: up to 16
/// files' worth, in a handful of objects (the root, 'metadata',
/// 'weight_map').
static constexpr uint64_t kMaxIndexItems = 2 * 16 * kMaxTensors + 1024;
static constexpr uint64_t kMaxIndexObjects = 64;
/// Entries of '__metadata__' (string to string).
static constexpr uint64_t kMaxMetadataEntries = 65'536;
/// JSON members and array elements (',' and ':') in the header: about ten
/// per tensor, and each costs llvm::json a 40-byte value or more.
static constexpr uint64_t kMaxHeaderItems =
    16 * kMaxTensors + 2 * kMaxMetadataEntries;

static Error headerError(StringRef path, const Twine &message) {
  return createStringError(path + ": header: " + message);
}

static Error fileTensorError(StringRef path, StringRef name,
                             const Twine &message) {
  return createStringError(path + ": tensor '" + name + "': " + message);
}

//===----------------------------------------------------------------------===//
// Header scanning
//===----------------------------------------------------------------------===//

/// The keys of the top-level object of `json` (already validated by
/// json::parse), decoded, in file order and with repeats. llvm::json keeps
/// only the last of repeated keys, so this is how duplicates are found, and
/// it gives a deterministic order for diagnostics.
static std::vector<std::string> topLevelKeys(StringRef json) {
  std::vector<std::string> keys;
  int depth = 0;
  bool expectKey = false;
  for (size_t i = 0, e = json.size(); i < e; ++i) {
    char c = json[i];
    if (c == '"') {
      size_t start = i;
      for (++i; i < e && json[i] != '"'; ++i)
        if (json[i] == '\\')
          ++i;
      if (depth == 1 && expectKey) {
        // Decode escapes by parsing the string literal on its own.
        Expected<json::Value> key =
            json::parse(json.slice(start, std::min(i + 1, e)));
        if (key && key->getAsString())
          keys.push_back(key->getAsString()->str());
        else
          consumeError(key.takeError());
        expectKey = false;
      }
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
      expectKey = depth == 1 && c == '{';
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 1) {
      expectKey = true;
    }
  }
  return keys;
}

/// Counts the objects ('{') and the members and elements (',' and ':')
/// outside strings of a header not yet parsed: they bound what llvm::json
/// would allocate for it.
static std::pair<uint64_t, uint64_t> countHeaderItems(StringRef json) {
  uint64_t objects = 0, items = 0;
  for (size_t i = 0, e = json.size(); i < e; ++i) {
    char c = json[i];
    if (c == '"') {
      for (++i; i < e && json[i] != '"'; ++i)
        if (json[i] == '\\')
          ++i;
    } else if (c == '{') {
      ++objects;
    } else if (c == ',' || c == ':') {
      ++items;
    }
  }
  return {objects, items};
}

/// Maps a safetensors dtype string to a DType.
static Expected<DType> parseDType(StringRef path, StringRef name,
                                  StringRef dtype) {
  std::optional<DType> result = StringSwitch<std::optional<DType>>(dtype)
                                    .Case("F64", DType::F64)
                                    .Case("F32", DType::F32)
                                    .Case("F16", DType::F16)
                                    .Case("BF16", DType::BF16)
                                    .Case("I64", DType::I64)
                                    .Case("I32", DType::I32)
                                    .Case("I8", DType::I8)
                                    .Case("U8", DType::U8)
                                    .Case("BOOL", DType::Bool)
                                    .Default(std::nullopt);
  if (result)
    return *result;
  bool known = StringSwitch<bool>(dtype)
                   .Cases({"I16", "U16", "U32", "U64", "C64"}, true)
                   .StartsWith("F8_", true)
                   .StartsWith("F6_", true)
                   .Case("F4", true)
                   .Default(false);
  return fileTensorError(path, name,
                         (known ? "unsupported dtype '" : "unknown dtype '") +
                             dtype + "'");
}

/// A non-negative JSON integer (`what` names it in messages).
static Expected<uint64_t> parseUInt(StringRef path, StringRef name,
                                    const json::Value &v, const Twine &what) {
  if (std::optional<int64_t> i = v.getAsInteger()) {
    if (*i < 0)
      return fileTensorError(path, name,
                             what + " is negative (" + Twine(*i) + ")");
    return static_cast<uint64_t>(*i);
  }
  if (std::optional<uint64_t> u = v.getAsUINT64())
    return *u;
  return fileTensorError(path, name, what + " is not an integer");
}

//===----------------------------------------------------------------------===//
// SafeTensorsFile
//===----------------------------------------------------------------------===//

Expected<std::unique_ptr<SafeTensorsFile>>
SafeTensorsFile::open(StringRef path) {
  Expected<std::unique_ptr<MemoryBuffer>> buf =
      readRegularFile(path, /*requiresNullTerminator=*/false);
  if (!buf)
    return buf.takeError();
  return fromBuffer(std::move(*buf), path);
}

Expected<std::unique_ptr<SafeTensorsFile>>
SafeTensorsFile::fromBuffer(std::unique_ptr<MemoryBuffer> buffer,
                            StringRef description) {
  std::unique_ptr<SafeTensorsFile> file(new SafeTensorsFile());
  file->path = description.str();
  file->buffer = std::move(buffer);
  if (Error err = file->parse())
    return std::move(err);
  return file;
}

Error SafeTensorsFile::parse() {
  StringRef data = buffer->getBuffer();
  uint64_t fileSize = data.size();
  if (fileSize < 8)
    return headerError(path, "file has " + Twine(fileSize) +
                                 " bytes, too few for the 8-byte header "
                                 "length");
  uint64_t headerLen =
      support::endian::read64le(reinterpret_cast<const uint8_t *>(data.data()));
  if (headerLen > fileSize - 8)
    return headerError(path, "header length " + Twine(headerLen) +
                                 " exceeds the " + Twine(fileSize - 8) +
                                 " bytes after the length field");
  if (headerLen > kMaxHeaderBytes)
    return headerError(path, "header length " + Twine(headerLen) +
                                 " exceeds the limit of " +
                                 Twine(kMaxHeaderBytes) + " bytes");
  StringRef text = data.substr(8, headerLen);
  // Bound the parse's memory before parsing: the root, '__metadata__' and
  // one object per tensor.
  auto [objects, items] = countHeaderItems(text);
  if (objects > kMaxTensors + 2)
    return headerError(
        path, "holds " + Twine(objects) + " JSON objects: more than the " +
                  Twine(kMaxTensors) + " tensors a file may hold");
  if (items > kMaxHeaderItems)
    return headerError(path, "holds " + Twine(items) +
                                 " JSON members and elements, more than " +
                                 Twine(kMaxHeaderItems) + " (" +
                                 Twine(kMaxTensors) + " tensors and " +
                                 Twine(kMaxMetadataEntries) +
                                 " metadata entries)");
  Expected<json::Value> header = parseJSON(text);
  if (!header)
    return headerError(path, "invalid JSON: " + toString(header.takeError()));
  const json::Object *root = header->getAsObject();
  if (!root)
    return headerError(path,
                       "expected a JSON object, found " + jsonKind(*header));

  dataStart = 8 + headerLen;
  uint64_t dataSize = fileSize - dataStart;
  StringSet<> seen;
  for (const std::string &key : topLevelKeys(text)) {
    if (!seen.insert(key).second) {
      if (key == "__metadata__")
        return headerError(path, "duplicate '__metadata__'");
      return fileTensorError(path, key, "duplicate name");
    }
    const json::Value *valuePtr = root->get(key);
    if (!valuePtr) // The scanner and llvm::json disagree: never expected.
      return headerError(path, "cannot decode key '" + key + "'");
    const json::Value &value = *valuePtr;

    if (key == "__metadata__") {
      const json::Object *meta = value.getAsObject();
      if (!meta)
        return headerError(path, "'__metadata__' is " + jsonKind(value) +
                                     ", expected an object");
      if (meta->size() > kMaxMetadataEntries)
        return headerError(path, "'__metadata__' has " + Twine(meta->size()) +
                                     " entries, more than " +
                                     Twine(kMaxMetadataEntries));
      for (const auto &[metaKey, metaValue] : *meta) {
        std::optional<StringRef> s = metaValue.getAsString();
        if (!s)
          return headerError(
              path, "'__metadata__' value of '" + StringRef(metaKey) + "' is " +
                        jsonKind(metaValue) + ", expected a string");
        metadataMap[metaKey.str()] = s->str();
      }
      continue;
    }

    const json::Object *entry = value.getAsObject();
    if (!entry)
      return fileTensorError(
          path, key, "entry is " + jsonKind(value) + ", expected an object");

    // dtype
    const json::Value *dtypeValue = entry->get("dtype");
    if (!dtypeValue)
      return fileTensorError(path, key, "missing 'dtype'");
    std::optional<StringRef> dtypeString = dtypeValue->getAsString();
    if (!dtypeString)
      return fileTensorError(path, key,
                             "'dtype' is " + jsonKind(*dtypeValue) +
                                 ", expected a string");
    Expected<DType> dtype = parseDType(path, key, *dtypeString);
    if (!dtype)
      return dtype.takeError();

    // shape
    const json::Value *shapeValue = entry->get("shape");
    if (!shapeValue)
      return fileTensorError(path, key, "missing 'shape'");
    const json::Array *shapeArray = shapeValue->getAsArray();
    if (!shapeArray)
      return fileTensorError(path, key,
                             "'shape' is " + jsonKind(*shapeValue) +
                                 ", expected an array");
    SmallVector<int64_t> shape;
    for (auto [i, dimValue] : llvm::enumerate(*shapeArray)) {
      Expected<uint64_t> dim =
          parseUInt(path, key, dimValue, "shape[" + Twine(i) + "]");
      if (!dim)
        return dim.takeError();
      if (*dim > static_cast<uint64_t>(INT64_MAX))
        return fileTensorError(path, key,
                               "shape[" + Twine(i) + "] = " + Twine(*dim) +
                                   " is too large");
      shape.push_back(static_cast<int64_t>(*dim));
    }

    // data_offsets
    const json::Value *offsetsValue = entry->get("data_offsets");
    if (!offsetsValue)
      return fileTensorError(path, key, "missing 'data_offsets'");
    const json::Array *offsets = offsetsValue->getAsArray();
    if (!offsets)
      return fileTensorError(path, key,
                             "'data_offsets' is " + jsonKind(*offsetsValue) +
                                 ", expected an array");
    if (offsets->size() != 2)
      return fileTensorError(path, key,
                             "'data_offsets' has " + Twine(offsets->size()) +
                                 " elements, expected 2");
    Expected<uint64_t> begin =
        parseUInt(path, key, (*offsets)[0], "data_offsets[0]");
    if (!begin)
      return begin.takeError();
    Expected<uint64_t> end =
        parseUInt(path, key, (*offsets)[1], "data_offsets[1]");
    if (!end)
      return end.takeError();
    std::string range =
        ("data_offsets [" + Twine(*begin) + ", " + Twine(*end) + "]").str();
    if (*end < *begin)
      return fileTensorError(path, key, range + ": end is before begin");
    if (*end > dataSize)
      return fileTensorError(path, key,
                             range +
                                 " extend past the end of the data section (" +
                                 Twine(dataSize) + " bytes)");

    Expected<uint64_t> bytes = storageBytes(*dtype, shape);
    if (!bytes)
      return fileTensorError(path, key, toString(bytes.takeError()));
    if (*end - *begin != *bytes)
      return fileTensorError(path, key,
                             range + " hold " + Twine(*end - *begin) +
                                 " bytes, but " + dtypeName(*dtype) +
                                 " shape " + formatShape(shape) + " needs " +
                                 Twine(*bytes));

    TensorInfo info;
    info.name = key;
    info.dtype = *dtype;
    info.shape = std::move(shape);
    info.offset = dataStart + *begin;
    info.byteSize = *bytes;
    tensors.push_back(std::move(info));
  }

  // Overlaps: sort by offset and compare each tensor with the furthest-
  // reaching earlier one. Empty tensors overlap nothing.
  llvm::stable_sort(tensors, [](const TensorInfo &a, const TensorInfo &b) {
    return std::make_pair(a.offset, a.byteSize) <
           std::make_pair(b.offset, b.byteSize);
  });
  const TensorInfo *reach = nullptr;
  for (const TensorInfo &info : tensors) {
    if (info.byteSize == 0)
      continue;
    if (reach && info.offset < reach->offset + reach->byteSize) {
      uint64_t b = info.offset - dataStart, rb = reach->offset - dataStart;
      return fileTensorError(
          path, info.name,
          "data_offsets [" + Twine(b) + ", " + Twine(b + info.byteSize) +
              "] overlap tensor '" + reach->name + "' [" + Twine(rb) + ", " +
              Twine(rb + reach->byteSize) + "]");
    }
    if (!reach || info.offset + info.byteSize > reach->offset + reach->byteSize)
      reach = &info;
  }
  for (auto [i, info] : llvm::enumerate(tensors))
    index[info.name] = i;
  return Error::success();
}

std::vector<std::string> SafeTensorsFile::names() const {
  std::vector<std::string> result;
  result.reserve(tensors.size());
  for (const TensorInfo &info : tensors)
    result.push_back(info.name);
  return result;
}

const TensorInfo *SafeTensorsFile::lookup(StringRef name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &tensors[it->second];
}

void SafeTensorsFile::release(StringRef name) const {
  releaseMapped(*buffer, name);
}

std::optional<WeightSource::FileRegion>
SafeTensorsFile::fileRegion(StringRef name) const {
  return mappedFileRegion(*buffer, path, name);
}

Expected<ArrayRef<uint8_t>> SafeTensorsFile::rawBytes(StringRef name) const {
  const TensorInfo *info = lookup(name);
  if (!info)
    return missingTensor(name);
  return ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(buffer->getBufferStart()) +
          info->offset,
      info->byteSize);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

static StringRef safetensorsDTypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  default:
    return "";
  }
}

Error SafeTensorsFile::write(StringRef path, ArrayRef<WriteTensor> tensors,
                             const std::map<std::string, std::string> &meta) {
  std::vector<std::vector<uint8_t>> encoded;
  StringSet<> names;
  for (const WriteTensor &t : tensors) {
    if (safetensorsDTypeName(t.dtype).empty())
      return fileTensorError(path, t.name,
                             "cannot write dtype " + dtypeName(t.dtype) +
                                 " (only f32, f16 and bf16)");
    if (t.name == "__metadata__")
      return fileTensorError(path, t.name, "reserved name");
    if (!names.insert(t.name).second)
      return fileTensorError(path, t.name, "duplicate name");
    Expected<uint64_t> count = numElements(t.shape);
    if (!count)
      return fileTensorError(path, t.name, toString(count.takeError()));
    if (*count != t.data.size())
      return fileTensorError(path, t.name,
                             "shape " + formatShape(t.shape) + " has " +
                                 Twine(*count) + " elements, but " +
                                 Twine(t.data.size()) + " values were given");
    Expected<std::vector<uint8_t>> bytes = encodeFromF32(t.dtype, t.data);
    if (!bytes)
      return fileTensorError(path, t.name, toString(bytes.takeError()));
    encoded.push_back(std::move(*bytes));
  }

  std::string header;
  {
    raw_string_ostream os(header);
    json::OStream j(os);
    j.object([&] {
      if (!meta.empty())
        j.attributeObject("__metadata__", [&] {
          for (const auto &[k, v] : meta)
            j.attribute(k, v);
        });
      uint64_t offset = 0;
      for (auto [t, bytes] : llvm::zip_equal(tensors, encoded)) {
        j.attributeObject(t.name, [&] {
          j.attribute("dtype", safetensorsDTypeName(t.dtype));
          j.attributeArray("shape", [&] {
            for (int64_t d : t.shape)
              j.value(d);
          });
          j.attributeArray("data_offsets", [&] {
            j.value(offset);
            j.value(offset + bytes.size());
          });
        });
        offset += bytes.size();
      }
    });
  }
  // Pad with spaces so that the data section starts 8-byte aligned.
  header.append((8 - header.size() % 8) % 8, ' ');

  return writeToOutput(path, [&](raw_ostream &os) -> Error {
    uint8_t len[8];
    support::endian::write64le(len, header.size());
    os.write(reinterpret_cast<const char *>(len), sizeof(len));
    os << header;
    for (const std::vector<uint8_t> &bytes : encoded)
      os.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    return Error::success();
  });
}

//===----------------------------------------------------------------------===//
// Model directories
//===----------------------------------------------------------------------===//

namespace {
/// The tensors of several safetensors shards under one name space.
class ShardedSafeTensors final : public WeightSource {
public:
  std::vector<std::string> names() const override { return order; }
  const TensorInfo *lookup(StringRef name) const override {
    auto it = shardOf.find(name);
    return it == shardOf.end() ? nullptr : shards[it->second]->lookup(name);
  }
  StringRef description() const override { return dir; }
  Expected<ArrayRef<uint8_t>> rawBytes(StringRef name) const override {
    auto it = shardOf.find(name);
    if (it == shardOf.end())
      return missingTensor(name);
    return shards[it->second]->rawBytes(name);
  }
  Expected<ArrayRef<float>> viewF32(StringRef name) const override {
    auto it = shardOf.find(name);
    if (it == shardOf.end())
      return missingTensor(name);
    return shards[it->second]->viewF32(name);
  }
  void release(StringRef name) const override {
    auto it = shardOf.find(name);
    if (it != shardOf.end())
      shards[it->second]->release(name);
  }
  std::optional<FileRegion> fileRegion(StringRef name) const override {
    auto it = shardOf.find(name);
    if (it == shardOf.end())
      return std::nullopt;
    return shards[it->second]->fileRegion(name);
  }

  std::string dir;
  std::vector<std::unique_ptr<SafeTensorsFile>> shards;
  StringMap<size_t> shardOf;
  std::vector<std::string> order;
};
} // namespace

static Expected<std::unique_ptr<WeightSource>>
openShardedIndex(StringRef dir, StringRef indexPath) {
  Expected<std::unique_ptr<MemoryBuffer>> buf = readRegularFile(indexPath);
  if (!buf)
    return buf.takeError();
  // The limits of a header, for the whole model: the index names every
  // tensor of every shard.
  StringRef text = (*buf)->getBuffer();
  if (text.size() > kMaxHeaderBytes)
    return createStringError(indexPath + ": " + Twine(text.size()) +
                             " bytes, more than the limit of " +
                             Twine(kMaxHeaderBytes));
  auto [objects, items] = countHeaderItems(text);
  if (objects > kMaxIndexObjects || items > kMaxIndexItems)
    return createStringError(indexPath + ": holds " + Twine(items) +
                             " JSON members and elements in " + Twine(objects) +
                             " objects; an index may hold at most " +
                             Twine(kMaxIndexItems) + " in " +
                             Twine(kMaxIndexObjects) + " objects");
  Expected<json::Value> root = parseJSON(text);
  if (!root)
    return createStringError(indexPath +
                             ": invalid JSON: " + toString(root.takeError()));
  const json::Object *obj = root->getAsObject();
  if (!obj)
    return createStringError(indexPath + ": expected a JSON object, found " +
                             jsonKind(*root));
  const json::Value *mapValue = obj->get("weight_map");
  if (!mapValue)
    return createStringError(indexPath + ": missing 'weight_map'");
  const json::Object *weightMap = mapValue->getAsObject();
  if (!weightMap)
    return createStringError(indexPath + ": 'weight_map' is " +
                             jsonKind(*mapValue) + ", expected an object");

  // Sorted for deterministic diagnostics and shard order.
  std::vector<std::pair<std::string, std::string>> mapping;
  for (const auto &[name, shardValue] : *weightMap) {
    std::optional<StringRef> shard = shardValue.getAsString();
    if (!shard)
      return createStringError(indexPath + ": weight_map: tensor '" +
                               StringRef(name) + "': shard is " +
                               jsonKind(shardValue) + ", expected a string");
    if (shard->empty() || *shard == "." || *shard == ".." ||
        shard->find_first_of("/\\") != StringRef::npos)
      return createStringError(indexPath + ": weight_map: tensor '" +
                               StringRef(name) + "': shard '" + *shard +
                               "' is not a plain file name");
    mapping.emplace_back(name.str(), shard->str());
  }
  llvm::sort(mapping);

  auto result = std::make_unique<ShardedSafeTensors>();
  result->dir = dir.str();
  StringMap<size_t> shardIndex;
  std::vector<std::string> shardNames;
  for (const auto &entry : mapping)
    if (shardIndex.try_emplace(entry.second, shardNames.size()).second)
      shardNames.push_back(entry.second);
  // Open the shards in name order (model-00001-of-..., model-00002-of-...).
  llvm::sort(shardNames);
  for (auto [i, shard] : llvm::enumerate(shardNames)) {
    shardIndex[shard] = i;
    SmallString<256> shardPath(dir);
    sys::path::append(shardPath, shard);
    Expected<std::unique_ptr<SafeTensorsFile>> file =
        SafeTensorsFile::open(shardPath);
    if (!file)
      return file.takeError();
    result->shards.push_back(std::move(*file));
  }

  for (const auto &[name, shard] : mapping) {
    size_t s = shardIndex[shard];
    if (!result->shards[s]->lookup(name))
      return createStringError(indexPath + ": weight_map: tensor '" + name +
                               "': not found in shard '" + shard + "'");
    result->shardOf[name] = s;
  }
  for (auto [s, file] : llvm::enumerate(result->shards)) {
    for (const std::string &name : file->names()) {
      auto it = result->shardOf.find(name);
      if (it == result->shardOf.end())
        return createStringError(indexPath + ": tensor '" + name +
                                 "' in shard '" + shardNames[s] +
                                 "' is not listed in weight_map");
      if (it->second != s)
        return createStringError(
            indexPath + ": tensor '" + name + "' is in shard '" +
            shardNames[s] + "' and in shard '" + shardNames[it->second] + "'");
      result->order.push_back(name);
    }
  }
  return std::unique_ptr<WeightSource>(std::move(result));
}

Expected<std::unique_ptr<WeightSource>>
SafeTensorsFile::openModelDir(StringRef dir) {
  // A FIFO or a device is opened as a file, which refuses it by name.
  if (sys::fs::exists(dir) && !sys::fs::is_directory(dir)) {
    Expected<std::unique_ptr<SafeTensorsFile>> file = open(dir);
    if (!file)
      return file.takeError();
    return std::unique_ptr<WeightSource>(std::move(*file));
  }
  if (!sys::fs::is_directory(dir))
    return createStringError(dir + ": no such file or directory");
  SmallString<256> single(dir);
  sys::path::append(single, "model.safetensors");
  if (sys::fs::exists(single)) {
    Expected<std::unique_ptr<SafeTensorsFile>> file = open(single);
    if (!file)
      return file.takeError();
    return std::unique_ptr<WeightSource>(std::move(*file));
  }
  SmallString<256> indexPath(dir);
  sys::path::append(indexPath, "model.safetensors.index.json");
  if (sys::fs::exists(indexPath))
    return openShardedIndex(dir, indexPath);
  return createStringError(dir + ": neither model.safetensors nor "
                                 "model.safetensors.index.json found");
}

} // namespace rlx
