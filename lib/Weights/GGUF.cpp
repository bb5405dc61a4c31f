//===- GGUF.cpp - GGUF file reader and writer -----------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The reader never trusts a count, length or offset from the file: each is
// checked against the bytes that remain before it is used, so a truncated or
// lying file gives an error naming the file and the key or tensor at fault.
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/GGUF.h"
#include "RLX/Support/FileIO.h"
#include "RLX/Weights/Quant.h"
#include "llvm/Support/Format.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>

using namespace llvm;

namespace rlx {

//===----------------------------------------------------------------------===//
// ggml types
//===----------------------------------------------------------------------===//

namespace {
struct GGMLTypeDesc {
  uint32_t code;
  const char *name;
  std::optional<DType> dtype;
};
} // namespace

/// ggml_type codes (ggml.h; gguf-py's GGMLQuantizationType). Types RLX cannot
/// decode have no DType; codes missing here (31..33 and 36..38 were dropped
/// from ggml) are unknown.
static const GGMLTypeDesc kGGMLTypes[] = {
    {0, "f32", DType::F32},        {1, "f16", DType::F16},
    {2, "q4_0", DType::Q4_0},      {3, "q4_1", DType::Q4_1},
    {6, "q5_0", DType::Q5_0},      {7, "q5_1", DType::Q5_1},
    {8, "q8_0", DType::Q8_0},      {9, "q8_1", std::nullopt},
    {10, "q2_K", DType::Q2_K},     {11, "q3_K", DType::Q3_K},
    {12, "q4_K", DType::Q4_K},     {13, "q5_K", DType::Q5_K},
    {14, "q6_K", DType::Q6_K},     {15, "q8_K", std::nullopt},
    {16, "iq2_xxs", std::nullopt}, {17, "iq2_xs", std::nullopt},
    {18, "iq3_xxs", std::nullopt}, {19, "iq1_s", std::nullopt},
    {20, "iq4_nl", std::nullopt},  {21, "iq3_s", std::nullopt},
    {22, "iq2_s", std::nullopt},   {23, "iq4_xs", std::nullopt},
    {24, "i8", DType::I8},         {25, "i16", std::nullopt},
    {26, "i32", DType::I32},       {27, "i64", DType::I64},
    {28, "f64", DType::F64},       {29, "iq1_m", std::nullopt},
    {30, "bf16", DType::BF16},     {34, "tq1_0", std::nullopt},
    {35, "tq2_0", std::nullopt},   {39, "mxfp4", std::nullopt},
    {40, "nvfp4", std::nullopt},   {41, "q1_0", std::nullopt},
};

static const GGMLTypeDesc *findGGMLType(uint32_t code) {
  for (const GGMLTypeDesc &d : kGGMLTypes)
    if (d.code == code)
      return &d;
  return nullptr;
}

std::optional<uint32_t> ggmlTypeOf(DType dtype) {
  for (const GGMLTypeDesc &d : kGGMLTypes)
    if (d.dtype == dtype)
      return d.code;
  return std::nullopt;
}

std::optional<DType> dtypeOfGGMLType(uint32_t code) {
  if (const GGMLTypeDesc *d = findGGMLType(code))
    return d->dtype;
  return std::nullopt;
}

std::optional<StringRef> ggmlTypeName(uint32_t code) {
  if (const GGMLTypeDesc *d = findGGMLType(code))
    return StringRef(d->name);
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// GGUFValue
//===----------------------------------------------------------------------===//

StringRef ggufTypeName(GGUFType type) {
  switch (type) {
  case GGUFType::UInt8:
    return "uint8";
  case GGUFType::Int8:
    return "int8";
  case GGUFType::UInt16:
    return "uint16";
  case GGUFType::Int16:
    return "int16";
  case GGUFType::UInt32:
    return "uint32";
  case GGUFType::Int32:
    return "int32";
  case GGUFType::Float32:
    return "float32";
  case GGUFType::Bool:
    return "bool";
  case GGUFType::String:
    return "string";
  case GGUFType::Array:
    return "array";
  case GGUFType::UInt64:
    return "uint64";
  case GGUFType::Int64:
    return "int64";
  case GGUFType::Float64:
    return "float64";
  }
  return "unknown";
}

static bool isValidType(uint32_t code) { return code <= 12; }

/// Bytes of a scalar of `type` on disk (0 for strings and arrays).
static uint64_t scalarSize(GGUFType type) {
  switch (type) {
  case GGUFType::UInt8:
  case GGUFType::Int8:
  case GGUFType::Bool:
    return 1;
  case GGUFType::UInt16:
  case GGUFType::Int16:
    return 2;
  case GGUFType::UInt32:
  case GGUFType::Int32:
  case GGUFType::Float32:
    return 4;
  case GGUFType::UInt64:
  case GGUFType::Int64:
  case GGUFType::Float64:
    return 8;
  case GGUFType::String:
  case GGUFType::Array:
    return 0;
  }
  return 0;
}

static bool isSigned(GGUFType type) {
  return type == GGUFType::Int8 || type == GGUFType::Int16 ||
         type == GGUFType::Int32 || type == GGUFType::Int64;
}

static bool isUnsigned(GGUFType type) {
  return type == GGUFType::UInt8 || type == GGUFType::UInt16 ||
         type == GGUFType::UInt32 || type == GGUFType::UInt64;
}

GGUFValue GGUFValue::float32(float v) {
  GGUFValue result;
  result.kind = GGUFType::Float32;
  double d = v;
  std::memcpy(&result.bits, &d, sizeof(d));
  return result;
}

GGUFValue GGUFValue::float64(double v) {
  GGUFValue result;
  result.kind = GGUFType::Float64;
  std::memcpy(&result.bits, &v, sizeof(v));
  return result;
}

GGUFValue GGUFValue::string(StringRef v) {
  GGUFValue result;
  result.kind = GGUFType::String;
  result.str = v.str();
  return result;
}

GGUFValue GGUFValue::array(GGUFType elementType,
                           std::vector<GGUFValue> elements) {
  GGUFValue result;
  result.kind = GGUFType::Array;
  result.elemKind = elementType;
  result.elements = std::move(elements);
  return result;
}

std::optional<uint64_t> GGUFValue::asUInt() const {
  if (isUnsigned(kind))
    return bits;
  if (isSigned(kind) && static_cast<int64_t>(bits) >= 0)
    return bits;
  return std::nullopt;
}

std::optional<int64_t> GGUFValue::asInt() const {
  if (isSigned(kind))
    return static_cast<int64_t>(bits);
  if (isUnsigned(kind) && bits <= static_cast<uint64_t>(INT64_MAX))
    return static_cast<int64_t>(bits);
  return std::nullopt;
}

std::optional<double> GGUFValue::asFloat() const {
  if (kind == GGUFType::Float32 || kind == GGUFType::Float64) {
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    return d;
  }
  if (isSigned(kind))
    return static_cast<double>(static_cast<int64_t>(bits));
  if (isUnsigned(kind))
    return static_cast<double>(bits);
  return std::nullopt;
}

std::optional<bool> GGUFValue::asBool() const {
  if (kind != GGUFType::Bool)
    return std::nullopt;
  return bits != 0;
}

std::optional<StringRef> GGUFValue::asString() const {
  if (kind != GGUFType::String)
    return std::nullopt;
  return StringRef(str);
}

std::optional<ArrayRef<GGUFValue>> GGUFValue::asArray() const {
  if (kind != GGUFType::Array)
    return std::nullopt;
  return ArrayRef<GGUFValue>(elements);
}

std::string GGUFValue::toString() const {
  std::string result;
  raw_string_ostream os(result);
  switch (kind) {
  case GGUFType::String:
    // UTF-8 passes through; quotes, backslashes and control bytes are
    // escaped.
    os << '"';
    for (unsigned char c : str) {
      if (c == '"' || c == '\\')
        os << '\\' << c;
      else if (c < 0x20 || c == 0x7f)
        os << "\\x" << hexdigit(c >> 4) << hexdigit(c & 15);
      else
        os << c;
    }
    os << '"';
    break;
  case GGUFType::Bool:
    os << (bits ? "true" : "false");
    break;
  case GGUFType::Float32:
    // Digits enough to tell the float apart, not its double expansion.
    os << llvm::format("%.7g", *asFloat());
    break;
  case GGUFType::Float64:
    os << llvm::format("%.15g", *asFloat());
    break;
  case GGUFType::Array:
    os << '[';
    for (auto [i, e] : llvm::enumerate(elements)) {
      if (i == 8) {
        os << ", ... (" << elements.size() << " elements)";
        break;
      }
      os << (i ? ", " : "") << e.toString();
    }
    os << ']';
    break;
  default:
    if (isSigned(kind))
      os << static_cast<int64_t>(bits);
    else
      os << bits;
    break;
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// Bounds-checked little-endian reads. Contexts are built lazily, only for
/// messages, because metadata arrays can hold hundreds of thousands of items.
/// (Not in an anonymous namespace: GGUFValue befriends it.)
class GGUFReader {
public:
  using Context = function_ref<std::string()>;

  GGUFReader(StringRef path, ArrayRef<uint8_t> data) : path(path), data(data) {}

  uint64_t left() const { return data.size() - pos; }

  Error error(const Twine &message) const {
    return createStringError(path + ": " + message);
  }

  Error truncated(Context what, uint64_t need) const {
    return error(what() + ": unexpected end of file at offset " + Twine(pos) +
                 " (need " + Twine(need) + " bytes, " + Twine(left()) +
                 " left)");
  }

  template <typename T> Error read(T &out, Context what) {
    if (left() < sizeof(T))
      return truncated(what, sizeof(T));
    out = support::endian::read<T, llvm::endianness::little>(data.data() + pos);
    pos += sizeof(T);
    return Error::success();
  }

  Error readString(std::string &out, Context what) {
    uint64_t len = 0;
    if (Error err = read(len, [&] { return what() + ": string length"; }))
      return err;
    if (len > left())
      return error(what() + ": string length " + Twine(len) + " exceeds the " +
                   Twine(left()) + " bytes left in the file");
    out.assign(reinterpret_cast<const char *>(data.data() + pos), len);
    pos += len;
    return Error::success();
  }

  Error readValue(GGUFValue &out, GGUFType type, unsigned depth, Context what);

  StringRef path;
  ArrayRef<uint8_t> data;
  uint64_t pos = 0;
  uint64_t arrayBudget = kGGUFMaxArrayElements;
};

Error GGUFReader::readValue(GGUFValue &out, GGUFType type, unsigned depth,
                            Context what) {
  out.kind = type;
  switch (type) {
  case GGUFType::UInt8: {
    uint8_t v = 0;
    if (Error err = read(v, what))
      return err;
    out.bits = v;
    return Error::success();
  }
  case GGUFType::Int8: {
    int8_t v = 0;
    if (Error err = read(v, what))
      return err;
    out.bits = static_cast<uint64_t>(static_cast<int64_t>(v));
    return Error::success();
  }
  case GGUFType::UInt16: {
    uint16_t v = 0;
    if (Error err = read(v, what))
      return err;
    out.bits = v;
    return Error::success();
  }
  case GGUFType::Int16: {
    int16_t v = 0;
    if (Error err = read(v, what))
      return err;
    out.bits = static_cast<uint64_t>(static_cast<int64_t>(v));
    return Error::success();
  }
  case GGUFType::UInt32: {
    uint32_t v = 0;
    if (Error err = read(v, what))
      return err;
    out.bits = v;
    return Error::success();
  }
  case GGUFType::Int32: {
    int32_t v = 0;
    if (Error err = read(v, what))
      return err;
    out.bits = static_cast<uint64_t>(static_cast<int64_t>(v));
    return Error::success();
  }
  case GGUFType::UInt64:
    return read(out.bits, what);
  case GGUFType::Int64:
    return read(out.bits, what);
  case GGUFType::Float32: {
    uint32_t v = 0;
    if (Error err = read(v, what))
      return err;
    float f;
    std::memcpy(&f, &v, sizeof(f));
    double d = f;
    std::memcpy(&out.bits, &d, sizeof(d));
    return Error::success();
  }
  case GGUFType::Float64:
    return read(out.bits, what);
  case GGUFType::Bool: {
    uint8_t v = 0;
    if (Error err = read(v, what))
      return err;
    if (v > 1)
      return error(what() + ": bool value " + Twine(unsigned(v)) +
                   " is not 0 or 1");
    out.bits = v;
    return Error::success();
  }
  case GGUFType::String:
    return readString(out.str, what);
  case GGUFType::Array: {
    if (depth >= kGGUFMaxArrayDepth)
      return error(what() + ": arrays nested deeper than " +
                   Twine(kGGUFMaxArrayDepth));
    uint32_t elemCode = 0;
    if (Error err =
            read(elemCode, [&] { return what() + ": array element type"; }))
      return err;
    if (!isValidType(elemCode))
      return error(what() + ": unknown array element type " + Twine(elemCode));
    GGUFType elemType = static_cast<GGUFType>(elemCode);
    uint64_t len = 0;
    if (Error err = read(len, [&] { return what() + ": array length"; }))
      return err;
    // The least each element can occupy: a scalar's size, a string's length
    // field, an array's type and length fields.
    uint64_t minSize = scalarSize(elemType);
    if (elemType == GGUFType::String)
      minSize = 8;
    else if (elemType == GGUFType::Array)
      minSize = 12;
    if (len > left() / minSize)
      return error(what() + ": array length " + Twine(len) + " of " +
                   ggufTypeName(elemType) + " exceeds what the " +
                   Twine(left()) + " bytes left in the file can hold");
    if (len > arrayBudget)
      return error(what() + ": array length " + Twine(len) +
                   " exceeds the limit of " + Twine(kGGUFMaxArrayElements) +
                   " metadata array elements per file");
    arrayBudget -= len;
    out.elemKind = elemType;
    out.elements.resize(len);
    for (uint64_t i = 0; i != len; ++i) {
      if (Error err = readValue(out.elements[i], elemType, depth + 1, [&] {
            return what() + "[" + std::to_string(i) + "]";
          }))
        return err;
    }
    return Error::success();
  }
  }
  llvm_unreachable("unknown GGUF type");
}

Expected<std::unique_ptr<GGUFFile>> GGUFFile::open(StringRef path) {
  Expected<std::unique_ptr<MemoryBuffer>> buf =
      readRegularFile(path, /*requiresNullTerminator=*/false);
  if (!buf)
    return buf.takeError();
  return fromBuffer(std::move(*buf), path);
}

Expected<std::unique_ptr<GGUFFile>>
GGUFFile::fromBuffer(std::unique_ptr<MemoryBuffer> buffer,
                     StringRef description) {
  std::unique_ptr<GGUFFile> file(new GGUFFile());
  file->path = description.str();
  file->buffer = std::move(buffer);
  if (Error err = file->parse())
    return std::move(err);
  return file;
}

/// Smallest on-disk size of one key/value pair and one tensor info, used to
/// bound allocations made from untrusted counts.
static constexpr uint64_t kMinKVBytes = 8 + 4 + 1;
static constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;
/// GGML_MAX_DIMS.
static constexpr uint32_t kMaxDims = 4;

Error GGUFFile::parse() {
  ArrayRef<uint8_t> bytes(
      reinterpret_cast<const uint8_t *>(buffer->getBufferStart()),
      buffer->getBufferSize());
  GGUFReader r(path, bytes);
  uint64_t fileSize = bytes.size();

  // Header.
  uint32_t magic = 0;
  if (Error err = r.read(magic, [] { return "header: magic"; }))
    return err;
  if (magic != 0x46554747u) // "GGUF" little-endian.
    return r.error("header: not a GGUF file (bad magic)");
  if (Error err = r.read(ver, [] { return "header: version"; }))
    return err;
  if (ver != 2 && ver != 3) {
    uint32_t swapped = llvm::byteswap(ver);
    return r.error("header: unsupported GGUF version " + Twine(ver) +
                   (swapped == 2 || swapped == 3 ? " (a big-endian file?)"
                                                 : " (supported: 2 and 3)"));
  }
  uint64_t tensorCount = 0, kvCount = 0;
  if (Error err = r.read(tensorCount, [] { return "header: tensor count"; }))
    return err;
  if (Error err = r.read(kvCount, [] { return "header: metadata count"; }))
    return err;
  // Metadata.
  // Counts are not trusted: reserve only what the file could hold; a lying
  // count fails at the precise point where the data runs out.
  kvs.reserve(std::min(kvCount, r.left() / kMinKVBytes));
  for (uint64_t i = 0; i != kvCount; ++i) {
    std::string key;
    if (Error err = r.readString(
            key, [&] { return "metadata #" + std::to_string(i) + ": key"; }))
      return err;
    auto what = [&] { return "metadata '" + key + "'"; };
    uint32_t typeCode = 0;
    if (Error err = r.read(typeCode, [&] { return what() + ": value type"; }))
      return err;
    if (!isValidType(typeCode))
      return r.error(what() + ": unknown value type " + Twine(typeCode));
    GGUFValue value;
    if (Error err = r.readValue(value, static_cast<GGUFType>(typeCode),
                                /*depth=*/0, what))
      return err;
    if (!kvIndex.try_emplace(key, kvs.size()).second)
      return r.error(what() + ": duplicate key");
    kvs.emplace_back(std::move(key), std::move(value));
  }

  // general.alignment.
  if (const GGUFValue *alignValue = get("general.alignment")) {
    std::optional<uint64_t> a = alignValue->asUInt();
    if (!a)
      return r.error("metadata 'general.alignment': expected an unsigned "
                     "integer, found " +
                     ggufTypeName(alignValue->type()));
    if (*a == 0 || !isPowerOf2_64(*a))
      return r.error("metadata 'general.alignment': " + Twine(*a) +
                     " is not a power of two");
    align = *a;
  }

  // Tensor infos.
  tensors.reserve(std::min(tensorCount, r.left() / kMinTensorInfoBytes));
  ggmlTypes.reserve(tensors.capacity());
  for (uint64_t i = 0; i != tensorCount; ++i) {
    TensorInfo info;
    if (Error err = r.readString(info.name, [&] {
          return "tensor #" + std::to_string(i) + ": name";
        }))
      return err;
    auto what = [&] { return "tensor '" + info.name + "'"; };
    uint32_t nDims = 0;
    if (Error err = r.read(nDims, [&] { return what() + ": dimension count"; }))
      return err;
    if (nDims > kMaxDims)
      return r.error(what() + ": " + Twine(nDims) + " dimensions, at most " +
                     Twine(kMaxDims) + " are supported");
    SmallVector<uint64_t, 4> dims(nDims);
    for (uint32_t d = 0; d != nDims; ++d)
      if (Error err = r.read(dims[d], [&] { return what() + ": dimensions"; }))
        return err;
    uint32_t typeCode = 0;
    if (Error err = r.read(typeCode, [&] { return what() + ": type"; }))
      return err;
    uint64_t relOffset = 0;
    if (Error err = r.read(relOffset, [&] { return what() + ": offset"; }))
      return err;

    if (!tensorIndex.try_emplace(info.name, tensors.size()).second)
      return r.error(what() + ": duplicate name");
    for (auto [d, dim] : llvm::enumerate(dims)) {
      if (dim == 0)
        return r.error(what() + ": dims[" + Twine(d) + "] is zero");
      if (dim > static_cast<uint64_t>(INT64_MAX))
        return r.error(what() + ": dims[" + Twine(d) + "] = " + Twine(dim) +
                       " is too large");
    }
    const GGMLTypeDesc *type = findGGMLType(typeCode);
    if (!type)
      return r.error(what() + ": unknown ggml type " + Twine(typeCode));
    if (!type->dtype)
      return r.error(what() + ": unsupported ggml type " + Twine(typeCode) +
                     " (" + type->name + ")");
    info.dtype = *type->dtype;
    // GGUF lists the fastest-varying dimension first.
    for (uint64_t dim : llvm::reverse(dims))
      info.shape.push_back(static_cast<int64_t>(dim));
    Expected<uint64_t> size = storageBytes(info.dtype, info.shape);
    if (!size)
      return r.error(what() + ": " + toString(size.takeError()));
    info.byteSize = *size;
    if (relOffset % align != 0)
      return r.error(what() + ": offset " + Twine(relOffset) +
                     " is not a multiple of the alignment " + Twine(align));
    info.offset = relOffset; // Made absolute below.
    tensors.push_back(std::move(info));
    ggmlTypes.push_back(typeCode);
  }

  // Data section and tensor bounds.
  dataStart = alignTo(r.pos, align);
  for (TensorInfo &info : tensors) {
    uint64_t begin, end;
    if (__builtin_add_overflow(dataStart, info.offset, &begin) ||
        __builtin_add_overflow(begin, info.byteSize, &end) || end > fileSize)
      return r.error("tensor '" + info.name + "': data at offset " +
                     Twine(info.offset) + " (" + Twine(info.byteSize) +
                     " bytes) extends past the end of the file (" +
                     Twine(fileSize) + " bytes, data section at " +
                     Twine(dataStart) + ")");
    info.offset = begin;
  }
  std::vector<const TensorInfo *> sorted;
  for (const TensorInfo &info : tensors)
    sorted.push_back(&info);
  llvm::stable_sort(sorted, [](const TensorInfo *a, const TensorInfo *b) {
    return a->offset < b->offset;
  });
  const TensorInfo *reach = nullptr;
  for (const TensorInfo *info : sorted) {
    if (reach && info->offset < reach->offset + reach->byteSize)
      return r.error("tensor '" + info->name + "': data at offset " +
                     Twine(info->offset - dataStart) + " overlaps tensor '" +
                     reach->name + "' at offset " +
                     Twine(reach->offset - dataStart) + " (" +
                     Twine(reach->byteSize) + " bytes)");
    if (!reach ||
        info->offset + info->byteSize > reach->offset + reach->byteSize)
      reach = info;
  }
  return Error::success();
}

const GGUFValue *GGUFFile::get(StringRef key) const {
  auto it = kvIndex.find(key);
  return it == kvIndex.end() ? nullptr : &kvs[it->second].second;
}

std::optional<uint64_t> GGUFFile::getUInt(StringRef key) const {
  const GGUFValue *v = get(key);
  return v ? v->asUInt() : std::nullopt;
}

std::optional<int64_t> GGUFFile::getInt(StringRef key) const {
  const GGUFValue *v = get(key);
  return v ? v->asInt() : std::nullopt;
}

std::optional<double> GGUFFile::getFloat(StringRef key) const {
  const GGUFValue *v = get(key);
  return v ? v->asFloat() : std::nullopt;
}

std::optional<bool> GGUFFile::getBool(StringRef key) const {
  const GGUFValue *v = get(key);
  return v ? v->asBool() : std::nullopt;
}

std::optional<StringRef> GGUFFile::getString(StringRef key) const {
  const GGUFValue *v = get(key);
  return v ? v->asString() : std::nullopt;
}

std::optional<ArrayRef<GGUFValue>> GGUFFile::getArray(StringRef key) const {
  const GGUFValue *v = get(key);
  return v ? v->asArray() : std::nullopt;
}

static Error wrongType(StringRef path, StringRef key, StringRef expected,
                       const GGUFValue &v) {
  return createStringError(path + ": metadata '" + key + "': expected " +
                           expected + ", found " + ggufTypeName(v.type()) +
                           " " + v.toString());
}

Expected<uint64_t> GGUFFile::requireUInt(StringRef key) const {
  const GGUFValue *v = get(key);
  if (!v)
    return createStringError(path + ": metadata '" + key + "': missing");
  if (std::optional<uint64_t> u = v->asUInt())
    return *u;
  return wrongType(path, key, "an unsigned integer", *v);
}

Expected<double> GGUFFile::requireFloat(StringRef key) const {
  const GGUFValue *v = get(key);
  if (!v)
    return createStringError(path + ": metadata '" + key + "': missing");
  if (std::optional<double> f = v->asFloat())
    return *f;
  return wrongType(path, key, "a number", *v);
}

Expected<StringRef> GGUFFile::requireString(StringRef key) const {
  const GGUFValue *v = get(key);
  if (!v)
    return createStringError(path + ": metadata '" + key + "': missing");
  if (std::optional<StringRef> s = v->asString())
    return *s;
  return wrongType(path, key, "a string", *v);
}

std::optional<uint32_t> GGUFFile::ggmlType(StringRef name) const {
  auto it = tensorIndex.find(name);
  if (it == tensorIndex.end())
    return std::nullopt;
  return ggmlTypes[it->second];
}

std::vector<std::string> GGUFFile::names() const {
  std::vector<std::string> result;
  result.reserve(tensors.size());
  for (const TensorInfo &info : tensors)
    result.push_back(info.name);
  return result;
}

const TensorInfo *GGUFFile::lookup(StringRef name) const {
  auto it = tensorIndex.find(name);
  return it == tensorIndex.end() ? nullptr : &tensors[it->second];
}

Expected<ArrayRef<uint8_t>> GGUFFile::rawBytes(StringRef name) const {
  const TensorInfo *info = lookup(name);
  if (!info)
    return missingTensor(name);
  return ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(buffer->getBufferStart()) +
          info->offset,
      info->byteSize);
}

void GGUFFile::release(StringRef name) const { releaseMapped(*buffer, name); }

std::optional<WeightSource::FileRegion>
GGUFFile::fileRegion(StringRef name) const {
  return mappedFileRegion(*buffer, path, name);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

GGUFWriter::GGUFWriter(uint32_t alignment) : align(alignment) {
  assert(alignment && isPowerOf2_32(alignment) && "bad GGUF alignment");
  if (alignment != 32)
    set("general.alignment", GGUFValue::uint32(alignment));
}

void GGUFWriter::set(StringRef key, GGUFValue value) {
  for (auto &kv : kvs) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  kvs.emplace_back(key.str(), std::move(value));
}

Error GGUFWriter::addRawTensor(StringRef name, ArrayRef<int64_t> shape,
                               DType dtype, ArrayRef<uint8_t> bytes) {
  auto fail = [&](const Twine &message) {
    return createStringError("GGUFWriter: tensor '" + name + "': " + message);
  };
  if (!ggmlTypeOf(dtype))
    return fail("ggml has no type for " + dtypeName(dtype));
  if (shape.size() > kMaxDims)
    return fail(Twine(shape.size()) + " dimensions, at most " +
                Twine(kMaxDims) + " are supported");
  for (const Tensor &t : tensorList)
    if (t.name == name)
      return fail("duplicate name");
  Expected<uint64_t> size = storageBytes(dtype, shape);
  if (!size)
    return fail(toString(size.takeError()));
  if (*size != bytes.size())
    return fail("shape " + formatShape(shape) + " needs " + Twine(*size) +
                " bytes of " + dtypeName(dtype) + ", got " +
                Twine(bytes.size()));
  tensorList.push_back({name.str(), SmallVector<int64_t>(shape), dtype,
                        std::vector<uint8_t>(bytes.begin(), bytes.end())});
  return Error::success();
}

Error GGUFWriter::addTensor(StringRef name, ArrayRef<int64_t> shape,
                            DType dtype, ArrayRef<float> data) {
  Expected<uint64_t> count = numElements(shape);
  if (!count)
    return createStringError("GGUFWriter: tensor '" + name +
                             "': " + toString(count.takeError()));
  if (*count != data.size())
    return createStringError("GGUFWriter: tensor '" + name + "': shape " +
                             formatShape(shape) + " has " + Twine(*count) +
                             " elements, but " + Twine(data.size()) +
                             " values were given");
  if (Expected<uint64_t> size = storageBytes(dtype, shape); !size)
    return createStringError("GGUFWriter: tensor '" + name +
                             "': " + toString(size.takeError()));
  Expected<std::vector<uint8_t>> bytes = encodeFromF32(dtype, data);
  if (!bytes)
    return createStringError("GGUFWriter: tensor '" + name +
                             "': " + toString(bytes.takeError()));
  return addRawTensor(name, shape, dtype, *bytes);
}

namespace {
/// Little-endian serialization helpers.
struct Emitter {
  raw_ostream &os;
  uint64_t pos = 0;

  void bytes(const void *p, size_t n) {
    os.write(static_cast<const char *>(p), n);
    pos += n;
  }
  template <typename T> void scalar(T v) {
    uint8_t b[sizeof(T)];
    support::endian::write<T, llvm::endianness::little>(b, v);
    bytes(b, sizeof(T));
  }
  void string(StringRef s) {
    scalar<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void pad(uint64_t align) {
    while (pos % align)
      scalar<uint8_t>(0);
  }
  void value(const GGUFValue &v) {
    switch (v.type()) {
    case GGUFType::UInt8:
      return scalar<uint8_t>(*v.asUInt());
    case GGUFType::Int8:
      return scalar<int8_t>(*v.asInt());
    case GGUFType::UInt16:
      return scalar<uint16_t>(*v.asUInt());
    case GGUFType::Int16:
      return scalar<int16_t>(*v.asInt());
    case GGUFType::UInt32:
      return scalar<uint32_t>(*v.asUInt());
    case GGUFType::Int32:
      return scalar<int32_t>(*v.asInt());
    case GGUFType::UInt64:
      return scalar<uint64_t>(*v.asUInt());
    case GGUFType::Int64:
      return scalar<int64_t>(*v.asInt());
    case GGUFType::Float32:
      return scalar<float>(static_cast<float>(*v.asFloat()));
    case GGUFType::Float64:
      return scalar<double>(*v.asFloat());
    case GGUFType::Bool:
      return scalar<uint8_t>(*v.asBool() ? 1 : 0);
    case GGUFType::String:
      return string(*v.asString());
    case GGUFType::Array: {
      ArrayRef<GGUFValue> elements = *v.asArray();
      scalar<uint32_t>(static_cast<uint32_t>(v.elementType()));
      scalar<uint64_t>(elements.size());
      for (const GGUFValue &e : elements) {
        assert(e.type() == v.elementType() && "mixed GGUF array");
        value(e);
      }
      return;
    }
    }
  }
};
} // namespace

void GGUFWriter::writeTo(raw_ostream &os) const {
  Emitter e{os};
  e.bytes("GGUF", 4);
  e.scalar<uint32_t>(3);
  e.scalar<uint64_t>(tensorList.size());
  e.scalar<uint64_t>(kvs.size());
  for (const auto &[key, value] : kvs) {
    e.string(key);
    e.scalar<uint32_t>(static_cast<uint32_t>(value.type()));
    e.value(value);
  }
  uint64_t offset = 0;
  for (const Tensor &t : tensorList) {
    e.string(t.name);
    e.scalar<uint32_t>(t.shape.size());
    for (int64_t d : llvm::reverse(t.shape))
      e.scalar<uint64_t>(d);
    e.scalar<uint32_t>(*ggmlTypeOf(t.dtype));
    e.scalar<uint64_t>(offset);
    offset = alignTo(offset + t.bytes.size(), align);
  }
  e.pad(align);
  for (const Tensor &t : tensorList) {
    e.bytes(t.bytes.data(), t.bytes.size());
    e.pad(align);
  }
}

Error GGUFWriter::write(StringRef path) const {
  return writeToOutput(path, [&](raw_ostream &os) {
    writeTo(os);
    return Error::success();
  });
}

} // namespace rlx
