//===- Tensor.cpp - Element types and tensor descriptions -----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/Tensor.h"
#include "RLX/Support/CheckedSize.h"
#include "RLX/Weights/Quant.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <iterator>

using namespace llvm;

namespace rlx {

//===----------------------------------------------------------------------===//
// DType
//===----------------------------------------------------------------------===//

namespace {
struct DTypeDesc {
  DType dtype;
  const char *name;
  uint64_t blockElements;
  uint64_t blockBytes;
};
} // namespace

static constexpr DTypeDesc kDTypes[] = {
    {DType::F32, "f32", 1, 4},       {DType::F16, "f16", 1, 2},
    {DType::BF16, "bf16", 1, 2},     {DType::F64, "f64", 1, 8},
    {DType::I8, "i8", 1, 1},         {DType::I32, "i32", 1, 4},
    {DType::I64, "i64", 1, 8},       {DType::U8, "u8", 1, 1},
    {DType::Bool, "bool", 1, 1},     {DType::Q8_0, "q8_0", 32, 34},
    {DType::Q4_0, "q4_0", 32, 18},   {DType::Q4_K, "q4_K", 256, 144},
    {DType::Q6_K, "q6_K", 256, 210}, {DType::Q4_1, "q4_1", 32, 20},
    {DType::Q5_0, "q5_0", 32, 22},   {DType::Q5_1, "q5_1", 32, 24},
    {DType::Q2_K, "q2_K", 256, 84},  {DType::Q3_K, "q3_K", 256, 110},
    {DType::Q5_K, "q5_K", 256, 176}, {DType::I16, "i16", 1, 2},
};
static_assert(std::size(kDTypes) == static_cast<size_t>(DType::I16) + 1,
              "kDTypes must list every DType, in enumerator order");

static const DTypeDesc &desc(DType dtype) {
  const DTypeDesc &d = kDTypes[static_cast<unsigned>(dtype)];
  assert(d.dtype == dtype && "kDTypes out of order");
  return d;
}

StringRef dtypeName(DType dtype) { return desc(dtype).name; }

std::optional<DType> dtypeFromName(StringRef name) {
  for (const DTypeDesc &d : kDTypes)
    if (name.equals_insensitive(d.name))
      return d.dtype;
  return std::nullopt;
}

uint64_t dtypeBlockElements(DType dtype) { return desc(dtype).blockElements; }

uint64_t dtypeBlockBytes(DType dtype) { return desc(dtype).blockBytes; }

BlockFormat blockFormat(DType dtype) {
  const DTypeDesc &d = desc(dtype);
  return {static_cast<uint32_t>(d.blockElements),
          static_cast<uint32_t>(d.blockBytes)};
}

//===----------------------------------------------------------------------===//
// Counts
//===----------------------------------------------------------------------===//

Expected<uint64_t> numElements(ArrayRef<int64_t> shape) {
  if (std::optional<uint64_t> count = checkedNumElements(shape))
    return *count;
  for (auto [i, dim] : llvm::enumerate(shape))
    if (dim < 0)
      return createStringError("dimension " + Twine(i) + " is negative (" +
                               Twine(dim) + ")");
  return createStringError("element count of shape " + formatShape(shape) +
                           " overflows 64 bits");
}

Expected<uint64_t> storageBytes(DType dtype, ArrayRef<int64_t> shape) {
  Expected<uint64_t> count = numElements(shape);
  if (!count)
    return count.takeError();
  uint64_t blockElements = dtypeBlockElements(dtype);
  if (blockElements > 1) {
    if (shape.empty())
      return createStringError("a " + dtypeName(dtype) +
                               " tensor needs at least one dimension");
    if (shape.back() % blockElements != 0)
      return createStringError("last dimension " + Twine(shape.back()) +
                               " is not a multiple of the " + dtypeName(dtype) +
                               " block size " + Twine(blockElements));
  }
  if (std::optional<uint64_t> bytes =
          checkedByteSize(shape, dtypeBlockBytes(dtype), blockElements))
    return *bytes;
  uint64_t wide;
  if (__builtin_mul_overflow(*count / blockElements, dtypeBlockBytes(dtype),
                             &wide))
    return createStringError("byte size of " + Twine(*count) + " " +
                             dtypeName(dtype) + " elements overflows 64 bits");
  return createStringError("byte size of " + Twine(*count) + " " +
                           dtypeName(dtype) + " elements (" + Twine(wide) +
                           ") exceeds the largest tensor, 2^63 - 1 bytes");
}

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string result;
  raw_string_ostream os(result);
  os << '[';
  llvm::interleaveComma(shape, os);
  os << ']';
  return result;
}

//===----------------------------------------------------------------------===//
// f16 / bf16
//===----------------------------------------------------------------------===//

static float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

static uint32_t toBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

float f16ToF32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) // Infinity or NaN; keep the payload.
    return fromBits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) // Normal: rebias 15 -> 127.
    return fromBits(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in f32.
  float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return sign ? -magnitude : magnitude;
}

uint16_t f32ToF16(float value) {
  uint32_t x = toBits(value);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN: keep the top payload bits, force quiet.
    return sign | 0x7e00u | static_cast<uint16_t>((a >> 13) & 0x3ffu);
  if (a >= 0x477ff000u) // >= 65520 rounds to infinity.
    return sign | 0x7c00u;
  if (a >= 0x38800000u) { // Normal half (>= 2^-14).
    uint32_t h = ((a >> 23) - 112) << 10 | ((a >> 13) & 0x3ffu);
    uint32_t rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
      ++h; // A carry into the exponent is the right answer too.
    return sign | static_cast<uint16_t>(h);
  }
  if (a <= 0x33000000u) // <= 2^-25 rounds (to even) to zero.
    return sign;
  // Subnormal half: the value in units of 2^-24, rounded to nearest even.
  uint32_t exponent = a >> 23;                     // 102 .. 112
  uint32_t mantissa = (a & 0x7fffffu) | 0x800000u; // value = m * 2^(e-150)
  uint32_t shift = 126 - exponent;                 // 14 .. 24
  uint32_t h = mantissa >> shift;
  uint32_t rest = mantissa & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u)))
    ++h; // 0x400 is the smallest normal: still right.
  return sign | static_cast<uint16_t>(h);
}

uint16_t f32ToBF16(float value) {
  uint32_t x = toBits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

template <typename T, typename Fn>
static void decodeEach(const uint8_t *src, MutableArrayRef<float> dst, Fn fn) {
  for (size_t i = 0, e = dst.size(); i != e; ++i)
    dst[i] = fn(support::endian::read<T, llvm::endianness::little>(
        src + i * sizeof(T)));
}

Error decodeToF32(DType dtype, ArrayRef<uint8_t> src,
                  MutableArrayRef<float> dst) {
  uint64_t blockElements = dtypeBlockElements(dtype);
  if (dst.size() % blockElements != 0)
    return createStringError(Twine(dst.size()) +
                             " elements are not a whole "
                             "number of " +
                             dtypeName(dtype) + " blocks");
  uint64_t need = dst.size() / blockElements * dtypeBlockBytes(dtype);
  if (src.size() != need)
    return createStringError("storage has " + Twine(src.size()) +
                             " bytes, but " + Twine(dst.size()) + " " +
                             dtypeName(dtype) + " elements need " +
                             Twine(need));
  const uint8_t *p = src.data();
  switch (dtype) {
  case DType::F32:
    decodeEach<uint32_t>(p, dst, fromBits);
    break;
  case DType::F16:
    decodeEach<uint16_t>(p, dst, f16ToF32);
    break;
  case DType::BF16:
    decodeEach<uint16_t>(p, dst, bf16ToF32);
    break;
  case DType::F64:
    decodeEach<uint64_t>(p, dst, [](uint64_t bits) {
      double d;
      std::memcpy(&d, &bits, sizeof(d));
      return static_cast<float>(d);
    });
    break;
  case DType::I8:
    decodeEach<int8_t>(p, dst, [](int8_t v) { return float(v); });
    break;
  case DType::I16:
    decodeEach<int16_t>(p, dst, [](int16_t v) { return float(v); });
    break;
  case DType::I32:
    decodeEach<int32_t>(p, dst, [](int32_t v) { return float(v); });
    break;
  case DType::I64:
    decodeEach<int64_t>(p, dst, [](int64_t v) { return float(v); });
    break;
  case DType::U8:
    decodeEach<uint8_t>(p, dst, [](uint8_t v) { return float(v); });
    break;
  case DType::Bool:
    decodeEach<uint8_t>(p, dst, [](uint8_t v) { return v ? 1.0f : 0.0f; });
    break;
  case DType::Q8_0:
    dequantizeQ8_0(p, dst);
    break;
  case DType::Q4_0:
    dequantizeQ4_0(p, dst);
    break;
  case DType::Q4_K:
    dequantizeQ4_K(p, dst);
    break;
  case DType::Q6_K:
    dequantizeQ6_K(p, dst);
    break;
  case DType::Q4_1:
    dequantizeQ4_1(p, dst);
    break;
  case DType::Q5_0:
    dequantizeQ5_0(p, dst);
    break;
  case DType::Q5_1:
    dequantizeQ5_1(p, dst);
    break;
  case DType::Q2_K:
    dequantizeQ2_K(p, dst);
    break;
  case DType::Q3_K:
    dequantizeQ3_K(p, dst);
    break;
  case DType::Q5_K:
    dequantizeQ5_K(p, dst);
    break;
  }
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Non-finite values
//===----------------------------------------------------------------------===//

/// The words of type `T` in `bytes` whose `exponent` bits are all ones. One
/// branch-free pass that vectorizes: counts of chunks small enough for a
/// narrow (T-sized) counter, summed wide.
template <typename T>
static uint64_t countExponentAllOnes(ArrayRef<uint8_t> bytes, T exponent) {
  constexpr size_t kChunk = sizeof(T) == 2 ? 32768 : 65536;
  const uint8_t *p = bytes.data();
  size_t n = bytes.size() / sizeof(T);
  uint64_t count = 0;
  for (size_t start = 0; start < n; start += kChunk) {
    size_t end = std::min(n, start + kChunk);
    T chunk = 0;
    // memcpy rather than endian::read: GCC vectorizes this form only (the
    // library assumes a little-endian host).
    for (size_t i = start; i < end; ++i) {
      T word;
      std::memcpy(&word, p + i * sizeof(T), sizeof(T));
      chunk += static_cast<T>((word & exponent) == exponent);
    }
    count += chunk;
  }
  return count;
}

/// The elements of the blocks in `bytes` (of `format`) whose f16 scale at
/// byte `scale`, or whose f16 min scale at byte `minScale` (if any), is
/// non-finite.
static uint64_t countNonFiniteBlocks(ArrayRef<uint8_t> bytes,
                                     BlockFormat format, unsigned scale,
                                     std::optional<unsigned> minScale) {
  auto nonFinite = [](const uint8_t *p) {
    return (support::endian::read<uint16_t, llvm::endianness::little>(p) &
            0x7c00) == 0x7c00;
  };
  const uint8_t *p = bytes.data();
  size_t blocks = bytes.size() / format.bytes;
  uint64_t count = 0;
  for (size_t i = 0; i < blocks; ++i, p += format.bytes) {
    bool bad = nonFinite(p + scale);
    if (minScale)
      bad |= nonFinite(p + *minScale);
    count += bad;
  }
  return count * format.elements;
}

uint64_t countNonFinite(DType dtype, ArrayRef<uint8_t> bytes) {
  BlockFormat format = blockFormat(dtype);
  // Scale offsets from the block layouts in Quant.h.
  switch (dtype) {
  case DType::F32:
    return countExponentAllOnes<uint32_t>(bytes, 0x7f800000u);
  case DType::F16:
    return countExponentAllOnes<uint16_t>(bytes, 0x7c00u);
  case DType::BF16:
    return countExponentAllOnes<uint16_t>(bytes, 0x7f80u);
  case DType::F64:
    return countExponentAllOnes<uint64_t>(bytes, 0x7ff0000000000000ull);
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::Bool:
    return 0;
  case DType::Q8_0:
  case DType::Q4_0:
  case DType::Q5_0:
    return countNonFiniteBlocks(bytes, format, 0, std::nullopt);
  case DType::Q4_1:
  case DType::Q5_1:
  case DType::Q4_K:
  case DType::Q5_K:
    return countNonFiniteBlocks(bytes, format, 0, 2);
  case DType::Q2_K:
    return countNonFiniteBlocks(bytes, format, 80, 82);
  case DType::Q3_K:
    return countNonFiniteBlocks(bytes, format, 108, std::nullopt);
  case DType::Q6_K:
    return countNonFiniteBlocks(bytes, format, 208, std::nullopt);
  }
  llvm_unreachable("unknown DType");
}

} // namespace rlx
