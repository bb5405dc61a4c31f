//===- QuantGoldenTest.cpp - ggml block types against gguf-py -------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every ggml block type RLX decodes, bit for bit against gguf-py: the golden
// data in Inputs/QuantGolden.h comes from gguf.quants (regenerate it with
// Inputs/make_quant_golden.py). Dequantization is compared as uint32 bit
// patterns, directly and through a GGUF file; the reference quantizers must
// produce gguf.quants.quantize's bytes exactly.
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/Quant.h"
#include "TestUtil.h"

#include "Inputs/QuantGolden.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <ostream>

using namespace rlx;
using namespace rlx::test;
using namespace rlx::test::golden;

// gtest prints parameters through these (found by ADL).
namespace rlx::test::golden {
static void PrintTo(const DequantCase &c, std::ostream *os) { *os << c.type; }
static void PrintTo(const QuantCase &c, std::ostream *os) { *os << c.type; }
} // namespace rlx::test::golden

namespace {

uint32_t bitsOf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

float floatOf(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// Compares decoded values with gguf-py's, bit for bit; reports the first few
/// mismatches with their block and index.
void expectSameBits(llvm::ArrayRef<float> got, const uint32_t *want,
                    uint32_t blockElements) {
  unsigned mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (bitsOf(got[i]) == want[i])
      continue;
    if (++mismatches <= 8)
      ADD_FAILURE() << "element " << i << " (block " << i / blockElements
                    << ", index " << i % blockElements << "): got " << got[i]
                    << " (0x" << std::hex << bitsOf(got[i]) << "), gguf-py "
                    << floatOf(want[i]) << " (0x" << want[i] << ")" << std::dec;
  }
  EXPECT_EQ(mismatches, 0u);
}

//===----------------------------------------------------------------------===//
// Dequantization
//===----------------------------------------------------------------------===//

class DequantGolden : public TempDirTest,
                      public ::testing::WithParamInterface<DequantCase> {};

TEST_P(DequantGolden, FormatMatchesGGUFPy) {
  const DequantCase &c = GetParam();
  std::optional<DType> dtype = dtypeFromName(c.type);
  ASSERT_TRUE(dtype.has_value()) << c.type;
  EXPECT_EQ(dtypeName(*dtype), c.type);
  EXPECT_TRUE(isQuantized(*dtype));
  BlockFormat format = blockFormat(*dtype);
  EXPECT_EQ(format.elements, c.blockElements);
  EXPECT_EQ(format.bytes, c.blockBytes);
  EXPECT_EQ(dtypeBlockElements(*dtype), c.blockElements);
  EXPECT_EQ(dtypeBlockBytes(*dtype), c.blockBytes);
  EXPECT_EQ(ggmlTypeOf(*dtype), c.ggmlType);
  EXPECT_EQ(dtypeOfGGMLType(c.ggmlType), *dtype);
  EXPECT_EQ(ggmlTypeName(c.ggmlType), llvm::StringRef(c.type));
}

TEST_P(DequantGolden, DecodeIsBitExact) {
  const DequantCase &c = GetParam();
  DType dtype = *dtypeFromName(c.type);
  llvm::ArrayRef<uint8_t> bytes(c.bytes, c.blocks * c.blockBytes);
  std::vector<float> got(c.blocks * c.blockElements);
  ASSERT_EQ(errorOf(decodeToF32(dtype, bytes, got)), "<success>");
  expectSameBits(got, c.values, c.blockElements);
}

TEST_P(DequantGolden, GGUFFileIsBitExact) {
  const DequantCase &c = GetParam();
  DType dtype = *dtypeFromName(c.type);
  llvm::ArrayRef<uint8_t> bytes(c.bytes, c.blocks * c.blockBytes);
  // One row per block, so that ne[0] is exactly the block size; then all
  // blocks in one row.
  GGUFWriter w;
  ASSERT_EQ(
      errorOf(w.addRawTensor(
          "rows", {int64_t(c.blocks), int64_t(c.blockElements)}, dtype, bytes)),
      "<success>");
  ASSERT_EQ(errorOf(w.addRawTensor("row", {int64_t(c.blocks * c.blockElements)},
                                   dtype, bytes)),
            "<success>");
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  auto file = GGUFFile::open(path("m.gguf"));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  for (const char *name : {"rows", "row"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ((*file)->ggmlType(name), c.ggmlType);
    EXPECT_EQ((*file)->lookup(name)->dtype, dtype);
    EXPECT_EQ((*file)->lookup(name)->byteSize, bytes.size());
    auto got = (*file)->loadF32(name);
    ASSERT_TRUE(bool(got)) << errorOf(std::move(got));
    expectSameBits(*got, c.values, c.blockElements);
  }
}

TEST_P(DequantGolden, RowNotWholeBlocks) {
  const DequantCase &c = GetParam();
  DType dtype = *dtypeFromName(c.type);
  std::vector<float> out(c.blockElements + 1);
  std::vector<uint8_t> bytes(2 * c.blockBytes);
  EXPECT_EQ(errorOf(decodeToF32(dtype, bytes, out)),
            std::to_string(c.blockElements + 1) +
                " elements are not a whole number of " + c.type + " blocks");
  out.resize(c.blockElements);
  EXPECT_EQ(errorOf(decodeToF32(dtype, bytes, out)),
            "storage has " + std::to_string(2 * c.blockBytes) + " bytes, but " +
                std::to_string(c.blockElements) + " " + c.type +
                " elements need " + std::to_string(c.blockBytes));
}

INSTANTIATE_TEST_SUITE_P(GGUFPy, DequantGolden,
                         ::testing::ValuesIn(kDequantCases),
                         [](const ::testing::TestParamInfo<DequantCase> &info) {
                           return std::string(info.param.type);
                         });

//===----------------------------------------------------------------------===//
// Reference quantizers
//===----------------------------------------------------------------------===//

/// make_quant_golden.py's quant_input(seed): pseudoRandom blocks scaled by a
/// power of two and shifted, then a block of 0.75 and a block of zeros.
std::vector<float> quantInput(uint32_t seed) {
  const float scales[] = {1.0f, 0x1p-4f, 0x1p4f, 0x1p-10f, 0.25f, 0.125f};
  const float shifts[] = {0.0f, 0.0f, 0.0f, 0.0f, 3.0f, -5.0f};
  constexpr size_t qk = 32, randomBlocks = std::size(scales);
  std::vector<float> x = pseudoRandom(randomBlocks * qk, seed);
  for (size_t b = 0; b < randomBlocks; ++b)
    for (size_t j = 0; j < qk; ++j)
      x[b * qk + j] = x[b * qk + j] * scales[b] + shifts[b];
  x.insert(x.end(), qk, 0.75f);
  x.insert(x.end(), qk, 0.0f);
  return x;
}

class QuantGolden : public ::testing::TestWithParam<QuantCase> {};

TEST_P(QuantGolden, SameBytesAsGGUFPy) {
  const QuantCase &c = GetParam();
  DType dtype = *dtypeFromName(c.type);
  std::vector<float> x = quantInput(c.seed);
  ASSERT_EQ(x.size(), c.blocks * dtypeBlockElements(dtype));
  llvm::ArrayRef<uint8_t> want(c.bytes, c.blocks * dtypeBlockBytes(dtype));

  auto encoded = encodeFromF32(dtype, x);
  ASSERT_TRUE(bool(encoded)) << errorOf(std::move(encoded));
  ASSERT_EQ(encoded->size(), want.size());
  unsigned mismatches = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if ((*encoded)[i] != want[i] && ++mismatches <= 8)
      ADD_FAILURE() << "byte " << i << " (block " << i / dtypeBlockBytes(dtype)
                    << "): got " << unsigned((*encoded)[i]) << ", gguf-py "
                    << unsigned(want[i]);
  EXPECT_EQ(mismatches, 0u);
}

TEST_P(QuantGolden, RoundTripIsClose) {
  // Each value comes back within one quantization step d of its block (the
  // clipped extreme of q4_0 and q5_0 is a whole step off), plus the f16
  // rounding of d and of the minimum: relative 2^-11 of up to 32 steps or of
  // the block's largest magnitude, or 2^-25 absolute for subnormal halves.
  const QuantCase &c = GetParam();
  DType dtype = *dtypeFromName(c.type);
  std::vector<float> x = quantInput(c.seed);
  auto encoded = encodeFromF32(dtype, x);
  ASSERT_TRUE(bool(encoded)) << errorOf(std::move(encoded));
  std::vector<float> y(x.size());
  ASSERT_EQ(errorOf(decodeToF32(dtype, *encoded, y)), "<success>");
  constexpr size_t qk = 32;
  size_t blockBytes = dtypeBlockBytes(dtype);
  for (size_t b = 0; b < c.blocks; ++b) {
    const uint8_t *block = encoded->data() + b * blockBytes;
    float d = std::fabs(f16ToF32(uint16_t(block[0] | block[1] << 8)));
    float amax = 0;
    for (size_t j = 0; j < qk; ++j)
      amax = std::max(amax, std::fabs(x[b * qk + j]));
    float tolerance = d * 1.02f + amax * 0x1p-10f + 0x1p-17f;
    for (size_t j = 0; j < qk; ++j)
      EXPECT_NEAR(y[b * qk + j], x[b * qk + j], tolerance)
          << "block " << b << ", index " << j;
  }
  // The block of zeros comes back as zeros.
  for (size_t j = y.size() - qk; j < y.size(); ++j)
    EXPECT_EQ(y[j], 0.0f) << j;
}

INSTANTIATE_TEST_SUITE_P(GGUFPy, QuantGolden, ::testing::ValuesIn(kQuantCases),
                         [](const ::testing::TestParamInfo<QuantCase> &info) {
                           return std::string(info.param.type);
                         });

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

TEST(QuantTypes, GGMLCodes) {
  // gguf-py's GGMLQuantizationType.
  const std::pair<DType, uint32_t> codes[] = {
      {DType::F32, 0},   {DType::F16, 1},   {DType::Q4_0, 2},
      {DType::Q4_1, 3},  {DType::Q5_0, 6},  {DType::Q5_1, 7},
      {DType::Q8_0, 8},  {DType::Q2_K, 10}, {DType::Q3_K, 11},
      {DType::Q4_K, 12}, {DType::Q5_K, 13}, {DType::Q6_K, 14},
      {DType::I8, 24},   {DType::I32, 26},  {DType::I64, 27},
      {DType::F64, 28},  {DType::BF16, 30},
  };
  for (auto [dtype, code] : codes) {
    EXPECT_EQ(ggmlTypeOf(dtype), code) << dtypeName(dtype).str();
    EXPECT_EQ(dtypeOfGGMLType(code), dtype) << code;
  }
  EXPECT_FALSE(ggmlTypeOf(DType::U8).has_value());
  EXPECT_FALSE(ggmlTypeOf(DType::Bool).has_value());
  // Known to ggml, not decoded by RLX.
  EXPECT_FALSE(dtypeOfGGMLType(9).has_value());
  EXPECT_EQ(ggmlTypeName(9), llvm::StringRef("q8_1"));
  EXPECT_EQ(ggmlTypeName(15), llvm::StringRef("q8_K"));
  EXPECT_EQ(ggmlTypeName(39), llvm::StringRef("mxfp4"));
  // Unknown.
  EXPECT_FALSE(ggmlTypeName(31).has_value());
  EXPECT_FALSE(dtypeOfGGMLType(99).has_value());
}

TEST(QuantTypes, KQuantsHaveNoEncoder) {
  for (DType dtype :
       {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    std::vector<float> x(256, 1.0f);
    EXPECT_EQ(errorOf(encodeFromF32(dtype, x)),
              "cannot encode f32 data as " + dtypeName(dtype).str());
  }
}

} // namespace
