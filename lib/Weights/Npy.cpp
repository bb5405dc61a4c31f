//===- Npy.cpp - numpy .npy reader and writer -----------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/Npy.h"
#include "RLX/Support/FileIO.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace llvm;

namespace rlx {

static constexpr char kMagic[] = "\x93NUMPY";
static constexpr size_t kMagicLen = 6;

uint64_t NpyArray::numElements() const {
  uint64_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<uint64_t>(d);
  return n;
}

Expected<std::vector<float>> NpyArray::toF32() const {
  std::vector<float> result(numElements());
  if (Error err = decodeToF32(dtype, data, result))
    return std::move(err);
  return result;
}

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

namespace {
struct NpyDescr {
  DType dtype;
  const char *descr;
};
} // namespace

/// The descr each plain DType is written with, and read from. numpy has no
/// bfloat16: bf16 is the raw 16 bits as a 2-byte void ('|V2'), which numpy
/// reads as `np.load(f).view(np.uint16)` (or `.view(ml_dtypes.bfloat16)`).
static constexpr NpyDescr kNpyDescrs[] = {
    {DType::F32, "<f4"},  {DType::F16, "<f2"}, {DType::BF16, "|V2"},
    {DType::F64, "<f8"},  {DType::I8, "|i1"},  {DType::I16, "<i2"},
    {DType::I32, "<i4"},  {DType::I64, "<i8"}, {DType::U8, "|u1"},
    {DType::Bool, "|b1"},
};

std::optional<DType> dtypeOfNpyDescr(StringRef descr) {
  for (const NpyDescr &d : kNpyDescrs) {
    StringRef want(d.descr);
    if (descr == want)
      return d.dtype;
    // A single byte or a void type has no byte order: numpy writes '|' and
    // reads '<', '>' and '=' as the same type.
    if (want[0] == '|' && descr.size() == 3 &&
        StringRef("<>=").contains(descr[0]) &&
        descr.drop_front() == want.drop_front())
      return d.dtype;
  }
  return std::nullopt;
}

std::optional<StringRef> npyDescrOf(DType dtype) {
  for (const NpyDescr &d : kNpyDescrs)
    if (d.dtype == dtype)
      return StringRef(d.descr);
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Header parsing
//===----------------------------------------------------------------------===//

namespace {
/// A parser for the Python dict literal of a .npy header.
class HeaderParser {
public:
  HeaderParser(StringRef desc, StringRef text) : desc(desc), text(text) {}

  Error parse(NpyArray &out);

private:
  Error error(const Twine &message) const {
    return createStringError(desc + ": header: " + message);
  }
  void skipSpace() { text = text.ltrim(" \t\r\n"); }
  bool consume(char c) {
    skipSpace();
    return text.consume_front(StringRef(&c, 1));
  }
  Expected<std::string> parseString();
  Expected<bool> parseBool();
  Error parseShape(SmallVectorImpl<int64_t> &shape);

  StringRef desc;
  StringRef text;
};
} // namespace

Expected<std::string> HeaderParser::parseString() {
  skipSpace();
  if (text.empty() || (text.front() != '\'' && text.front() != '"'))
    return error("expected a quoted string at '" + text.take_front(16) + "'");
  char quote = text.front();
  size_t end = text.find(quote, 1);
  if (end == StringRef::npos)
    return error("unterminated string");
  std::string result = text.slice(1, end).str();
  text = text.drop_front(end + 1);
  return result;
}

Expected<bool> HeaderParser::parseBool() {
  skipSpace();
  if (text.consume_front("True"))
    return true;
  if (text.consume_front("False"))
    return false;
  return error("expected True or False at '" + text.take_front(16) + "'");
}

Error HeaderParser::parseShape(SmallVectorImpl<int64_t> &shape) {
  if (!consume('('))
    return error("'shape' is not a tuple");
  while (!consume(')')) {
    skipSpace();
    size_t digits = std::min(text.find_first_not_of("0123456789"), text.size());
    if (digits == 0)
      return error("'shape' element is not a non-negative integer at '" +
                   text.take_front(16) + "'");
    uint64_t dim;
    if (text.take_front(digits).getAsInteger(10, dim) ||
        dim > static_cast<uint64_t>(INT64_MAX))
      return error("'shape' element " + text.take_front(digits) +
                   " is too large");
    shape.push_back(static_cast<int64_t>(dim));
    text = text.drop_front(digits);
    if (consume(','))
      continue;
    if (consume(')'))
      break;
    return error("expected ',' or ')' in 'shape'");
  }
  return Error::success();
}

Error HeaderParser::parse(NpyArray &out) {
  if (!consume('{'))
    return error("expected '{'");
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  bool haveShape = false;
  while (!consume('}')) {
    Expected<std::string> key = parseString();
    if (!key)
      return key.takeError();
    if (!consume(':'))
      return error("expected ':' after '" + *key + "'");
    if (*key == "descr") {
      Expected<std::string> value = parseString();
      if (!value)
        return value.takeError();
      descr = *value;
    } else if (*key == "fortran_order") {
      Expected<bool> value = parseBool();
      if (!value)
        return value.takeError();
      fortran = *value;
    } else if (*key == "shape") {
      if (Error err = parseShape(out.shape))
        return err;
      haveShape = true;
    } else {
      return error("unknown key '" + *key + "'");
    }
    if (consume(','))
      continue;
    if (consume('}'))
      break;
    return error("expected ',' or '}' after '" + *key + "'");
  }
  skipSpace();
  if (!text.empty())
    return error("unexpected text after the dict");
  if (!descr)
    return error("missing 'descr'");
  if (!fortran)
    return error("missing 'fortran_order'");
  if (!haveShape)
    return error("missing 'shape'");
  if (*fortran)
    return error("Fortran order is not supported");
  std::optional<DType> dtype = dtypeOfNpyDescr(*descr);
  if (!dtype)
    return error("unsupported descr '" + *descr + "'");
  out.dtype = *dtype;
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

Expected<NpyArray> parseNpy(ArrayRef<uint8_t> bytes, StringRef desc) {
  StringRef data(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  auto fail = [&](const Twine &message) {
    return createStringError(desc + ": " + message);
  };
  if (data.size() < kMagicLen + 2 ||
      !data.starts_with(StringRef(kMagic, kMagicLen)))
    return fail("not a .npy file (bad magic)");
  uint8_t major = data[6], minor = data[7];
  uint64_t headerLen, preamble;
  if (major == 1) {
    preamble = 10;
    if (data.size() < preamble)
      return fail("file ends inside the header length");
    headerLen = support::endian::read16le(bytes.data() + 8);
  } else if (major == 2 || major == 3) {
    preamble = 12;
    if (data.size() < preamble)
      return fail("file ends inside the header length");
    headerLen = support::endian::read32le(bytes.data() + 8);
  } else {
    return fail("unsupported .npy version " + Twine(unsigned(major)) + "." +
                Twine(unsigned(minor)));
  }
  if (headerLen > data.size() - preamble)
    return fail("header length " + Twine(headerLen) + " exceeds the " +
                Twine(data.size() - preamble) + " bytes after the preamble");

  NpyArray result;
  HeaderParser parser(desc, data.substr(preamble, headerLen));
  if (Error err = parser.parse(result))
    return std::move(err);

  Expected<uint64_t> need = storageBytes(result.dtype, result.shape);
  if (!need)
    return fail("header: " + toString(need.takeError()));
  uint64_t have = data.size() - preamble - headerLen;
  if (have != *need)
    return fail("data has " + Twine(have) + " bytes, but " +
                dtypeName(result.dtype) + " shape " +
                formatShape(result.shape) + " needs " + Twine(*need));
  const uint8_t *begin = bytes.data() + preamble + headerLen;
  result.data.assign(begin, begin + have);
  return result;
}

Expected<NpyArray> readNpy(StringRef path) {
  Expected<std::unique_ptr<MemoryBuffer>> buf =
      readRegularFile(path, /*requiresNullTerminator=*/false);
  if (!buf)
    return buf.takeError();
  return parseNpy(ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(
                                        (*buf)->getBufferStart()),
                                    (*buf)->getBufferSize()),
                  path);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// Writes `data` as `descr` elements; `perElement` values of T make one
/// element (raw bytes of a wider type).
template <typename T>
static Error writeNpyImpl(StringRef path, ArrayRef<int64_t> shape,
                          ArrayRef<T> data, StringRef descr,
                          uint64_t perElement = 1) {
  Expected<uint64_t> count = numElements(shape);
  if (!count)
    return createStringError(path + ": " + toString(count.takeError()));
  if (*count * perElement != data.size())
    return createStringError(path + ": shape " + formatShape(shape) + " has " +
                             Twine(*count) + " elements, but " +
                             Twine(data.size()) + " values were given");
  std::string dims;
  for (auto [i, d] : llvm::enumerate(shape))
    dims += (i ? ", " : "") + std::to_string(d);
  if (shape.size() == 1)
    dims += ",";
  std::string header = "{'descr': '" + descr.str() +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Pad with spaces and a newline so that the data starts 64-byte aligned.
  size_t preamble = header.size() + 1 + 10 > 65535 ? 12 : 10;
  header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');

  return writeToOutput(path, [&](raw_ostream &out) -> Error {
    out.write(kMagic, kMagicLen);
    if (preamble == 10) {
      out << char(1) << char(0);
      uint8_t len[2];
      support::endian::write16le(len, header.size());
      out.write(reinterpret_cast<const char *>(len), 2);
    } else {
      out << char(2) << char(0);
      uint8_t len[4];
      support::endian::write32le(len, header.size());
      out.write(reinterpret_cast<const char *>(len), 4);
    }
    out << header;
    for (T v : data) {
      uint8_t b[sizeof(T)];
      support::endian::write<T, llvm::endianness::little>(b, v);
      out.write(reinterpret_cast<const char *>(b), sizeof(T));
    }
    return Error::success();
  });
}

Error writeNpy(StringRef path, ArrayRef<int64_t> shape, ArrayRef<float> data) {
  return writeNpyImpl(path, shape, data, "<f4");
}

Error writeNpy(StringRef path, ArrayRef<int64_t> shape,
               ArrayRef<int32_t> data) {
  return writeNpyImpl(path, shape, data, "<i4");
}

Error writeNpy(StringRef path, ArrayRef<int64_t> shape,
               ArrayRef<int64_t> data) {
  return writeNpyImpl(path, shape, data, "<i8");
}

Error writeNpyBool(StringRef path, ArrayRef<int64_t> shape,
                   ArrayRef<uint8_t> data) {
  std::vector<uint8_t> bits(data.size());
  for (auto [b, v] : llvm::zip(bits, data))
    b = v != 0;
  return writeNpyImpl(path, shape, ArrayRef<uint8_t>(bits), "|b1");
}

Error writeNpy(StringRef path, DType dtype, ArrayRef<int64_t> shape,
               ArrayRef<uint8_t> bytes) {
  std::optional<StringRef> descr = npyDescrOf(dtype);
  if (!descr)
    return createStringError(path + ": no .npy type for " + dtypeName(dtype) +
                             formatShape(shape));
  if (dtype == DType::Bool)
    return writeNpyBool(path, shape, bytes);
  Expected<uint64_t> need = storageBytes(dtype, shape);
  if (!need)
    return createStringError(path + ": " + toString(need.takeError()));
  if (*need != bytes.size())
    return createStringError(path + ": " + dtypeName(dtype) + " shape " +
                             formatShape(shape) + " needs " + Twine(*need) +
                             " bytes, but " + Twine(bytes.size()) +
                             " were given");
  // The bytes are little-endian already: written as they are, one byte per
  // "element" of the header's element count check.
  return writeNpyImpl(path, shape, bytes, *descr, dtypeBlockBytes(dtype));
}

} // namespace rlx
