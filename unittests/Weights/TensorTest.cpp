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
