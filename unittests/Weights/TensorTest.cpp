//===- TensorTest.cpp - DType, counts, f16/bf16, TensorMap ----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/Tensor.h"
#include "RLX/Weights/WeightSource.h"
#include "TestUtil.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace rlx;
using namespace rlx::test;

namespace {

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float floatOf(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

/// The value of IEEE half `h`, computed from the definition in double.
double halfValue(uint16_t h) {
  int sign = (h >> 15) ? -1 : 1;
  int exponent = (h >> 10) & 31;
  int mantissa = h & 1023;
  if (exponent == 0)
    return sign * std::ldexp(double(mantissa), -24);
  if (exponent == 31)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(1.0 + mantissa / 1024.0, exponent - 15);
}

//===----------------------------------------------------------------------===//
// DType and counts
//===----------------------------------------------------------------------===//

TEST(DTypeTest, NamesRoundTrip) {
  for (DType d :
       {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8, DType::I32,
        DType::I64, DType::U8, DType::Bool, DType::Q8_0, DType::Q4_0,
        DType::Q4_K, DType::Q6_K, DType::Q4_1, DType::Q5_0, DType::Q5_1,
        DType::Q2_K, DType::Q3_K, DType::Q5_K}) {
    EXPECT_EQ(dtypeFromName(dtypeName(d)), d) << dtypeName(d).str();
    EXPECT_EQ(dtypeFromName(dtypeName(d).upper()), d);
  }
  EXPECT_EQ(dtypeName(DType::Q4_K), "q4_K");
  EXPECT_FALSE(dtypeFromName("f17").has_value());
}

TEST(DTypeTest, BlockSizes) {
  EXPECT_EQ(dtypeBlockElements(DType::F32), 1u);
  EXPECT_EQ(dtypeBlockBytes(DType::BF16), 2u);
  EXPECT_EQ(dtypeBlockBytes(DType::Bool), 1u);
  EXPECT_EQ(dtypeBlockElements(DType::Q8_0), 32u);
  EXPECT_EQ(dtypeBlockBytes(DType::Q8_0), 34u);
  EXPECT_EQ(dtypeBlockBytes(DType::Q4_0), 18u);
  EXPECT_EQ(dtypeBlockElements(DType::Q4_K), 256u);
  EXPECT_EQ(dtypeBlockBytes(DType::Q4_K), 144u);
  EXPECT_EQ(dtypeBlockBytes(DType::Q6_K), 210u);
  EXPECT_TRUE(isQuantized(DType::Q6_K));
  EXPECT_FALSE(isQuantized(DType::F16));
  // ggml-common.h's block sizes (gguf-py's GGML_QUANT_SIZES).
  EXPECT_EQ(dtypeBlockBytes(DType::Q4_1), 20u);
  EXPECT_EQ(dtypeBlockBytes(DType::Q5_0), 22u);
  EXPECT_EQ(dtypeBlockBytes(DType::Q5_1), 24u);
  EXPECT_EQ(dtypeBlockElements(DType::Q5_1), 32u);
  EXPECT_EQ(dtypeBlockBytes(DType::Q2_K), 84u);
  EXPECT_EQ(dtypeBlockBytes(DType::Q3_K), 110u);
  EXPECT_EQ(dtypeBlockBytes(DType::Q5_K), 176u);
  EXPECT_EQ(dtypeBlockElements(DType::Q2_K), 256u);
  EXPECT_EQ(blockFormat(DType::Q3_K).elements, 256u);
  EXPECT_EQ(blockFormat(DType::Q3_K).bytes, 110u);
  EXPECT_EQ(blockFormat(DType::F64).elements, 1u);
  EXPECT_EQ(blockFormat(DType::F64).bytes, 8u);
}

TEST(CountTest, NumElements) {
  EXPECT_EQ(*numElements({}), 1u);
  EXPECT_EQ(*numElements({2, 3, 4}), 24u);
  EXPECT_EQ(*numElements({5, 0}), 0u);
  // Overflowing partial products followed by a zero still give 0.
  EXPECT_EQ(*numElements({int64_t(1) << 40, int64_t(1) << 40, 0}), 0u);
}

TEST(CountTest, NegativeDimension) {
  EXPECT_EQ(errorOf(numElements({2, -3})), "dimension 1 is negative (-3)");
}

TEST(CountTest, ElementCountOverflow) {
  EXPECT_EQ(errorOf(numElements({int64_t(1) << 32, int64_t(1) << 32})),
            "element count of shape [4294967296, 4294967296] overflows 64 "
            "bits");
}

TEST(CountTest, ByteSizeOverflow) {
  EXPECT_EQ(*storageBytes(DType::F32, {(int64_t(1) << 61) - 1}),
            (uint64_t(1) << 63) - 4);
  // 2^63 bytes fit in 64 bits but not in the int64 offsets and sizes of LIR
  // and the memref ABI (RLX/Support/CheckedSize.h).
  EXPECT_EQ(errorOf(storageBytes(DType::F32, {int64_t(1) << 61})),
            "byte size of 2305843009213693952 f32 elements "
            "(9223372036854775808) exceeds the largest tensor, 2^63 - 1 bytes");
  EXPECT_EQ(errorOf(storageBytes(DType::F32, {int64_t(1) << 62})),
            "byte size of 4611686018427387904 f32 elements overflows 64 "
            "bits");
}

TEST(CountTest, QuantizedShapes) {
  EXPECT_EQ(*storageBytes(DType::Q8_0, {3, 64}), 3u * 2 * 34);
  EXPECT_EQ(*storageBytes(DType::Q4_K, {2, 512}), 2u * 2 * 144);
  EXPECT_EQ(errorOf(storageBytes(DType::Q8_0, {64, 33})),
            "last dimension 33 is not a multiple of the q8_0 block size 32");
  EXPECT_EQ(errorOf(storageBytes(DType::Q6_K, {})),
            "a q6_K tensor needs at least one dimension");
}

//===----------------------------------------------------------------------===//
// f16 / bf16
//===----------------------------------------------------------------------===//

TEST(HalfTest, F16ToF32Exhaustive) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float got = f16ToF32(static_cast<uint16_t>(h));
    double want = halfValue(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
      // The payload moves to the top of the f32 mantissa.
      EXPECT_EQ(bitsOf(got) & 0x7fffff, (h & 0x3ffu) << 13) << h;
      continue;
    }
    ASSERT_EQ(double(got), want) << "half 0x" << std::hex << h;
    ASSERT_EQ(std::signbit(got), bool(h & 0x8000)) << h;
  }
  EXPECT_EQ(f16ToF32(0x0001), std::ldexp(1.0f, -24)); // Smallest subnormal.
  EXPECT_EQ(f16ToF32(0x7bff), 65504.0f);
  EXPECT_EQ(f16ToF32(0xfc00), -std::numeric_limits<float>::infinity());
}

TEST(HalfTest, F32ToF16RoundTripsEveryHalf) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float f = f16ToF32(static_cast<uint16_t>(h));
    uint16_t back = f32ToF16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16ToF32(back))) << h;
      continue;
    }
    ASSERT_EQ(back, h) << "half 0x" << std::hex << h;
  }
}

TEST(HalfTest, F32ToF16RoundsToNearestEven) {
  // Midpoints between consecutive halves (exact in f32) go to the even one;
  // a hair above goes up, a hair below goes down. Covers subnormals, the
  // subnormal/normal boundary, and the top of the range.
  for (uint16_t h : {0x0000, 0x0001, 0x0002, 0x03fe, 0x03ff, 0x0400, 0x1234,
                     0x3c00, 0x3c01, 0x7bfe}) {
    float lo = f16ToF32(h), hi = f16ToF32(h + 1);
    float mid = (lo + hi) / 2; // Exact: one more bit than a half has.
    uint16_t even = (h & 1) ? h + 1 : h;
    EXPECT_EQ(f32ToF16(mid), even) << h;
    EXPECT_EQ(f32ToF16(std::nextafter(mid, hi)), h + 1) << h;
    EXPECT_EQ(f32ToF16(std::nextafter(mid, lo)), h) << h;
    EXPECT_EQ(f32ToF16(-mid), even | 0x8000) << h;
  }
  EXPECT_EQ(f32ToF16(65519.0f), 0x7bff);
  EXPECT_EQ(f32ToF16(65520.0f), 0x7c00); // Rounds up to infinity.
  EXPECT_EQ(f32ToF16(1e10f), 0x7c00);
  EXPECT_EQ(f32ToF16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(f32ToF16(std::ldexp(1.0f, -25)), 0x0000); // Tie to even (zero).
  EXPECT_EQ(f32ToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32ToF16(1e-30f), 0x0000);
  EXPECT_EQ(f32ToF16(-0.0f), 0x8000);
  uint16_t nan = f32ToF16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
  // A signalling NaN whose payload sits below the half mantissa stays NaN.
  EXPECT_TRUE(std::isnan(f16ToF32(f32ToF16(floatOf(0x7f800001)))));
}

TEST(HalfTest, BF16) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float f = bf16ToF32(static_cast<uint16_t>(h));
    ASSERT_EQ(bitsOf(f), h << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(f32ToBF16(f), h);
    }
  }
  // 1 + 2^-8 is halfway between bf16 1.0 (0x3f80) and 1.0078125 (0x3f81).
  EXPECT_EQ(f32ToBF16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(f32ToBF16(1.0078125f + std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(f32ToBF16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)),
            0x3f81);
  EXPECT_EQ(f32ToBF16(std::numeric_limits<float>::max()), 0x7f80); // Inf.
  EXPECT_TRUE(std::isnan(bf16ToF32(f32ToBF16(floatOf(0x7f800001)))));
}

TEST(DecodeTest, SizeMismatch) {
  std::vector<uint8_t> src(6);
  std::vector<float> dst(2);
  EXPECT_EQ(errorOf(decodeToF32(DType::F32, src, dst)),
            "storage has 6 bytes, but 2 f32 elements need 8");
  std::vector<float> partial(33);
  EXPECT_EQ(errorOf(decodeToF32(DType::Q8_0, src, partial)),
            "33 elements are not a whole number of q8_0 blocks");
}

TEST(DecodeTest, IntegersAndBools) {
  Bytes b;
  b.i32(-7).i32(123456);
  std::vector<float> out(2);
  ASSERT_EQ(errorOf(decodeToF32(DType::I32, b.data, out)), "<success>");
  EXPECT_EQ(out, (std::vector<float>{-7.0f, 123456.0f}));
  std::vector<uint8_t> bools = {0, 1, 2};
  std::vector<float> outBools(3);
  ASSERT_EQ(errorOf(decodeToF32(DType::Bool, bools, outBools)), "<success>");
  EXPECT_EQ(outBools, (std::vector<float>{0.0f, 1.0f, 1.0f}));
}

//===----------------------------------------------------------------------===//
// TensorMap
//===----------------------------------------------------------------------===//

TEST(TensorMapTest, AddReadView) {
  TensorMap map("params");
  ASSERT_EQ(errorOf(map.add("w", {2, 3}, {1, 2, 3, 4, 5, 6})), "<success>");
  ASSERT_EQ(errorOf(map.add("b", {3}, {7, 8, 9})), "<success>");
  EXPECT_EQ(map.names(), (std::vector<std::string>{"w", "b"}));
  const TensorInfo *w = map.lookup("w");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->shape, (llvm::SmallVector<int64_t>{2, 3}));
  EXPECT_EQ(w->byteSize, 24u);
  std::vector<float> out(6);
  ASSERT_EQ(errorOf(map.readF32("w", out)), "<success>");
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  llvm::Expected<llvm::ArrayRef<float>> view = map.viewF32("b");
  ASSERT_TRUE(bool(view));
  EXPECT_EQ(view->vec(), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(*map.loadF32("b"), (std::vector<float>{7, 8, 9}));
}

TEST(TensorMapTest, DuplicateName) {
  TensorMap map("params");
  ASSERT_EQ(errorOf(map.add("w", {1}, {1})), "<success>");
  EXPECT_EQ(errorOf(map.add("w", {1}, {2})),
            "params: tensor 'w': duplicate name");
}

TEST(TensorMapTest, ShapeMismatch) {
  TensorMap map("params");
  EXPECT_EQ(errorOf(map.add("w", {2, 2}, {1, 2, 3})),
            "params: tensor 'w': shape [2, 2] has 4 elements, but 3 values "
            "were given");
}

TEST(TensorMapTest, MissingTensor) {
  TensorMap map("params");
  std::vector<float> out(1);
  EXPECT_EQ(errorOf(map.readF32("nope", out)),
            "params: tensor 'nope': not found");
  EXPECT_EQ(errorOf(map.viewF32("nope")), "params: tensor 'nope': not found");
}

TEST(TensorMapTest, DestinationSizeMismatch) {
  TensorMap map("params");
  ASSERT_EQ(errorOf(map.add("w", {2, 2}, {1, 2, 3, 4})), "<success>");
  std::vector<float> out(5);
  EXPECT_EQ(errorOf(map.readF32("w", out)),
            "params: tensor 'w': destination has 5 elements, but the tensor "
            "has 4 (shape [2, 2])");
}

} // namespace

//===----------------------------------------------------------------------===//
// RowSplitWeights
//===----------------------------------------------------------------------===//

TEST(RowSplitWeightsTest, SplitsRowsAndHidesTheParent) {
  auto map = std::make_unique<TensorMap>("params");
  ASSERT_EQ(errorOf(map->add("qkv", {3, 2}, {1, 2, 3, 4, 5, 6})), "<success>");
  ASSERT_EQ(errorOf(map->add("other", {1}, {7})), "<success>");
  RowSplitWeights split(std::move(map));
  ASSERT_EQ(errorOf(split.split("qkv", {{"q", 1}, {"kv", 2}})), "<success>");
  EXPECT_EQ(split.names(), (std::vector<std::string>{"q", "kv", "other"}));
  EXPECT_EQ(split.lookup("qkv"), nullptr);
  const TensorInfo *kv = split.lookup("kv");
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->shape, (llvm::SmallVector<int64_t>{2, 2}));
  EXPECT_EQ(kv->byteSize, 16u);
  EXPECT_EQ(*split.loadF32("kv"), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(*split.loadF32("q"), (std::vector<float>{1, 2}));
  EXPECT_EQ(*split.loadF32("other"), (std::vector<float>{7}));
  EXPECT_EQ(split.displayName("kv"), "kv (rows of 'qkv')");
}

TEST(RowSplitWeightsTest, RowsMustAddUp) {
  auto map = std::make_unique<TensorMap>("params");
  ASSERT_EQ(errorOf(map->add("qkv", {3, 2}, {1, 2, 3, 4, 5, 6})), "<success>");
  RowSplitWeights split(std::move(map));
  EXPECT_EQ(errorOf(split.split("qkv", {{"q", 1}, {"kv", 1}})),
            "params: tensor 'qkv': has 3 rows, expected 2 to split into 2 "
            "parts");
  EXPECT_EQ(errorOf(split.split("missing", {{"q", 1}})),
            "params: tensor 'missing': not found");
}

//===----------------------------------------------------------------------===//
// countNonFinite
//===----------------------------------------------------------------------===//

namespace {

/// The little-endian bytes of `values`.
template <typename T>
std::vector<uint8_t> bytesOf(std::initializer_list<T> values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.begin(), bytes.size());
  return bytes;
}

/// Writes the f16 `bits` at `p` (little-endian).
void putHalf(uint8_t *p, uint16_t bits) {
  p[0] = bits & 0xff;
  p[1] = bits >> 8;
}

/// Deterministic pseudo-random bytes (a 64-bit LCG).
std::vector<uint8_t> noiseBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> bytes(n);
  for (uint8_t &b : bytes) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    b = seed >> 56;
  }
  return bytes;
}

} // namespace

TEST(CountNonFiniteTest, F32) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  constexpr float nan = std::numeric_limits<float>::quiet_NaN();
  constexpr float big = std::numeric_limits<float>::max();
  constexpr float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(countNonFinite(DType::F32,
                           bytesOf<float>({1, -2, big, -big, tiny, 0, -0.0f})),
            0u);
  EXPECT_EQ(
      countNonFinite(DType::F32, bytesOf<float>({1, nan, inf, -inf, -nan, 2})),
      4u);
  // A signalling NaN and one with the smallest payload.
  EXPECT_EQ(
      countNonFinite(DType::F32, bytesOf<uint32_t>({0x7f800001u, 0xff800001u})),
      2u);
  EXPECT_EQ(countNonFinite(DType::F32, {}), 0u);
}

TEST(CountNonFiniteTest, TrailingBytesAreIgnored) {
  std::vector<uint8_t> bytes = bytesOf<uint32_t>({0x7f800000u});
  bytes.resize(3);
  EXPECT_EQ(countNonFinite(DType::F32, bytes), 0u);
}

TEST(CountNonFiniteTest, F16) {
  // 1, -max finite, smallest subnormal, -0.
  EXPECT_EQ(countNonFinite(DType::F16,
                           bytesOf<uint16_t>({0x3c00, 0xfbff, 0x0001, 0x8000})),
            0u);
  // +Inf, -Inf, quiet NaN, NaN with the lowest payload bit, 1.
  EXPECT_EQ(countNonFinite(
                DType::F16,
                bytesOf<uint16_t>({0x7c00, 0xfc00, 0x7e00, 0x7c01, 0x3c00})),
            4u);
}

TEST(CountNonFiniteTest, BF16) {
  // 1, -max finite, a subnormal; f16's infinity pattern is a finite bf16.
  EXPECT_EQ(countNonFinite(DType::BF16,
                           bytesOf<uint16_t>({0x3f80, 0xff7f, 0x0001, 0x7c00})),
            0u);
  EXPECT_EQ(countNonFinite(DType::BF16,
                           bytesOf<uint16_t>({0x7f80, 0xff80, 0x7fc0, 0x3f80})),
            3u);
}

TEST(CountNonFiniteTest, F64) {
  EXPECT_EQ(
      countNonFinite(DType::F64,
                     bytesOf<double>({1, 1e300, -1e-310,
                                      std::numeric_limits<double>::infinity(),
                                      std::nan("")})),
      2u);
}

TEST(CountNonFiniteTest, IntegersAreFinite) {
  std::vector<uint8_t> ones(64, 0xff);
  for (DType dtype :
       {DType::I8, DType::I32, DType::I64, DType::U8, DType::Bool})
    EXPECT_EQ(countNonFinite(dtype, ones), 0u) << dtypeName(dtype).str();
}

TEST(CountNonFiniteTest, Q8_0CountsBlocksWithANonFiniteScale) {
  // Three blocks of f16 d + 32 int8: only the scale can be non-finite, and
  // 0xff quants (-1) never are.
  std::vector<uint8_t> blocks(3 * 34, 0xff);
  for (int b = 0; b < 3; ++b)
    putHalf(&blocks[b * 34], 0x3c00);
  EXPECT_EQ(countNonFinite(DType::Q8_0, blocks), 0u);
  putHalf(&blocks[34], 0x7c00);
  EXPECT_EQ(countNonFinite(DType::Q8_0, blocks), 32u);
  putHalf(&blocks[2 * 34], 0x7e00);
  EXPECT_EQ(countNonFinite(DType::Q8_0, blocks), 64u);
}

TEST(CountNonFiniteTest, Q4_0CountsBlocksWithANonFiniteScale) {
  std::vector<uint8_t> blocks(2 * 18, 0xff);
  putHalf(&blocks[0], 0x3c00);
  putHalf(&blocks[18], 0xfc00);
  EXPECT_EQ(countNonFinite(DType::Q4_0, blocks), 32u);
}

TEST(CountNonFiniteTest, Q4_KCountsDAndDmin) {
  // f16 d, f16 dmin, 12 scale bytes, 128 quant bytes per 256 elements.
  std::vector<uint8_t> blocks(4 * 144, 0);
  EXPECT_EQ(countNonFinite(DType::Q4_K, blocks), 0u);
  putHalf(&blocks[0 * 144], 0x7c00);     // d
  putHalf(&blocks[1 * 144 + 2], 0x7e00); // dmin
  putHalf(&blocks[2 * 144], 0xfc00);     // both: the block counts once
  putHalf(&blocks[2 * 144 + 2], 0x7c00);
  std::fill(blocks.begin() + 3 * 144 + 4, blocks.end(), 0xff); // not scales
  EXPECT_EQ(countNonFinite(DType::Q4_K, blocks), 3 * 256u);
}

/// For every ggml type, the count from the scale fields matches that of the
/// decoded values, over blocks of random bytes where about one scale in four
/// is made non-finite (the scales are wherever the layouts of Quant.h put
/// them; random finite scales never overflow when decoded).
TEST(CountNonFiniteTest, BlockScalesAgreeWithDecodedValues) {
  for (DType dtype :
       {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
        DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    BlockFormat format = blockFormat(dtype);
    constexpr size_t blocks = 64;
    std::vector<uint8_t> bytes =
        noiseBytes(blocks * format.bytes, static_cast<uint64_t>(dtype) + 1);
    // Random f16 scales are non-finite 1 time in 32; make it more often by
    // setting the exponent of every 2-byte field at random.
    std::vector<uint8_t> pick = noiseBytes(bytes.size() / 2, 99);
    for (size_t i = 0; i + 1 < bytes.size(); i += 2)
      if (pick[i / 2] < 24)
        bytes[i + 1] |= 0x7c;
    std::vector<float> values(blocks * format.elements);
    ASSERT_EQ(errorOf(decodeToF32(dtype, bytes, values)), "<success>");
    uint64_t expected =
        llvm::count_if(values, [](float v) { return !std::isfinite(v); });
    EXPECT_GT(expected, 0u) << dtypeName(dtype).str();
    EXPECT_LT(expected, values.size()) << dtypeName(dtype).str();
    EXPECT_EQ(countNonFinite(dtype, bytes), expected) << dtypeName(dtype).str();
  }
}

/// Not a test: the scan's speed over 1 GiB of f32, f16 and q8_0 next to a
/// copy of the same bytes (gtest prints each one's milliseconds). Run with
/// --gtest_also_run_disabled_tests --gtest_filter='*Throughput*' in a build
/// without sanitizers.
TEST(CountNonFiniteTest, DISABLED_ThroughputCopy1GiB) {
  std::vector<uint8_t> src(size_t(1) << 30, 1), dst(src.size(), 0);
  for (int i = 0; i < 4; ++i)
    std::memcpy(dst.data(), src.data(), src.size());
  EXPECT_EQ(dst[12345], 1);
}

TEST(CountNonFiniteTest, DISABLED_ThroughputScan1GiB) {
  std::vector<uint8_t> src(size_t(1) << 30, 1);
  uint64_t total = 0;
  for (DType dtype : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_K})
    total += countNonFinite(dtype, src);
  EXPECT_EQ(total, 0u);
}
