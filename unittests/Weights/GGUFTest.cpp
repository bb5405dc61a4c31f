//===- GGUFTest.cpp - GGUF reader, writer and llama view tests ------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The expected values here are computed independently of lib/Weights: f16
// scales are decoded from the IEEE definition, quantized blocks are built by
// packing chosen codes, and the Q/K permutation emulates numpy's
// reshape/swapaxes index by index.
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/GGUF.h"
#include "TestUtil.h"

#include "gtest/gtest.h"

#include <cmath>
#include <numeric>

using namespace rlx;
using namespace rlx::test;
using llvm::StringRef;

namespace {

// GGUF metadata value type codes.
enum : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// ggml type codes.
enum : uint32_t {
  kGGMLF32 = 0,
  kGGMLF16 = 1,
  kGGMLQ8_0 = 8,
  kGGMLQ3_K = 11,
  kGGMLQ5_K = 13,
  kGGMLQ5_1 = 7,
  kGGMLQ8_K = 15,
};

/// The value of IEEE half `h` from the definition (normal and subnormal).
float halfValue(uint16_t h) {
  int exponent = (h >> 10) & 31, mantissa = h & 1023;
  double v = exponent ? std::ldexp(1.0 + mantissa / 1024.0, exponent - 15)
                      : std::ldexp(double(mantissa), -24);
  return static_cast<float>((h >> 15) ? -v : v);
}

void ggufHeader(Bytes &b, uint32_t version, uint64_t nTensors, uint64_t nKV) {
  b.raw("GGUF").u32(version).u64(nTensors).u64(nKV);
}

void tensorInfo(Bytes &b, StringRef name, std::vector<uint64_t> dims,
                uint32_t type, uint64_t offset) {
  b.str(name).u32(dims.size());
  for (uint64_t d : dims)
    b.u64(d);
  b.u32(type).u64(offset);
}

class GGUFTest : public TempDirTest {
protected:
  std::string openError(const Bytes &b) {
    return errorOf(GGUFFile::open(writeFile("m.gguf", b.data)));
  }
  std::string msg(StringRef rest) { return path("m.gguf") + ": " + rest.str(); }
};

//===----------------------------------------------------------------------===//
// Metadata
//===----------------------------------------------------------------------===//

TEST_F(GGUFTest, MetadataAllTypes) {
  GGUFWriter w;
  w.set("u8", GGUFValue::uint8(200));
  w.set("i8", GGUFValue::int8(-100));
  w.set("u16", GGUFValue::uint16(60000));
  w.set("i16", GGUFValue::int16(-30000));
  w.set("u32", GGUFValue::uint32(4000000000u));
  w.set("i32", GGUFValue::int32(-7));
  w.set("u64", GGUFValue::uint64(uint64_t(1) << 63));
  w.set("i64", GGUFValue::int64(-(int64_t(1) << 40)));
  w.set("f32", GGUFValue::float32(1.5f));
  w.set("f64", GGUFValue::float64(0.1));
  w.set("bool", GGUFValue::boolean(true));
  w.set("str", GGUFValue::string("h\xc3\xa9llo"));
  w.set("strs", GGUFValue::array(GGUFType::String,
                                 {GGUFValue::string("a"), GGUFValue::string(""),
                                  GGUFValue::string("ccc")}));
  w.set("nested", GGUFValue::array(GGUFType::Array,
                                   {GGUFValue::array(GGUFType::Int32,
                                                     {GGUFValue::int32(1),
                                                      GGUFValue::int32(-2)}),
                                    GGUFValue::array(GGUFType::Int32, {})}));
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");

  auto file = GGUFFile::open(path("m.gguf"));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  GGUFFile &f = **file;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  ASSERT_EQ(f.metadata().size(), 14u);
  EXPECT_EQ(f.metadata()[0].first, "u8");
  EXPECT_EQ(f.metadata()[13].first, "nested");

  EXPECT_EQ(f.getUInt("u8"), 200u);
  EXPECT_EQ(f.get("u8")->type(), GGUFType::UInt8);
  EXPECT_EQ(f.getInt("i8"), -100);
  EXPECT_FALSE(f.getUInt("i8").has_value()); // Negative.
  EXPECT_EQ(f.getUInt("u16"), 60000u);
  EXPECT_EQ(f.getInt("i16"), -30000);
  EXPECT_EQ(f.getUInt("u32"), 4000000000u);
  EXPECT_EQ(f.getInt("i32"), -7);
  EXPECT_EQ(f.getUInt("u64"), uint64_t(1) << 63);
  EXPECT_FALSE(f.getInt("u64").has_value()); // Does not fit int64.
  EXPECT_EQ(f.getInt("i64"), -(int64_t(1) << 40));
  EXPECT_EQ(f.getFloat("f32"), 1.5);
  EXPECT_EQ(f.getFloat("f64"), 0.1);
  EXPECT_EQ(f.getFloat("u16"), 60000.0);
  EXPECT_EQ(f.getBool("bool"), true);
  EXPECT_EQ(f.getString("str"), StringRef("h\xc3\xa9llo"));

  auto strs = f.getArray("strs");
  ASSERT_TRUE(strs.has_value());
  EXPECT_EQ(f.get("strs")->elementType(), GGUFType::String);
  ASSERT_EQ(strs->size(), 3u);
  EXPECT_EQ((*strs)[2].asString(), StringRef("ccc"));
  EXPECT_EQ((*strs)[1].asString(), StringRef(""));

  auto nested = f.getArray("nested");
  ASSERT_TRUE(nested.has_value());
  ASSERT_EQ(nested->size(), 2u);
  auto inner = (*nested)[0].asArray();
  ASSERT_TRUE(inner.has_value());
  ASSERT_EQ(inner->size(), 2u);
  EXPECT_EQ((*inner)[1].asInt(), -2);
  EXPECT_EQ((*nested)[1].asArray()->size(), 0u);
  EXPECT_EQ(f.get("nested")->toString(), "[[1, -2], []]");
  EXPECT_EQ(GGUFValue::float32(50.0f).toString(), "50");
  EXPECT_EQ(GGUFValue::float32(1e-5f).toString(), "1e-05");
  EXPECT_EQ(GGUFValue::float64(0.1).toString(), "0.1");

  // Wrong type and missing keys give std::nullopt.
  EXPECT_FALSE(f.getString("u32").has_value());
  EXPECT_FALSE(f.getUInt("str").has_value());
  EXPECT_FALSE(f.getBool("u8").has_value());
  EXPECT_FALSE(f.getArray("u8").has_value());
  EXPECT_FALSE(f.getUInt("missing").has_value());
  EXPECT_EQ(f.get("missing"), nullptr);
  EXPECT_EQ(errorOf(f.requireUInt("str")),
            msg("metadata 'str': expected an unsigned integer, found string "
                "\"h\xc3\xa9llo\""));
  EXPECT_EQ(GGUFValue::string("a\"b\\c\n").toString(), "\"a\\\"b\\\\c\\x0A\"");
  EXPECT_EQ(errorOf(f.requireString("missing")),
            msg("metadata 'missing': missing"));
}

TEST_F(GGUFTest, Version2AndNestingAtTheLimit) {
  // Eight nested arrays are accepted (kGGUFMaxArrayDepth).
  Bytes b;
  ggufHeader(b, 2, 0, 1);
  b.str("deep").u32(kArray);
  for (int i = 0; i < 7; ++i)
    b.u32(kArray).u64(1);
  b.u32(kU8).u64(1).u8(42);
  auto file = GGUFFile::open(writeFile("m.gguf", b.data));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  EXPECT_EQ((*file)->version(), 2u);
  const GGUFValue *v = (*file)->get("deep");
  for (int i = 0; i < 7; ++i)
    v = &(*v->asArray())[0];
  EXPECT_EQ((*v->asArray())[0].asUInt(), 42u);
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

TEST_F(GGUFTest, ReleaseKeepsTheDataReadable) {
  // Large enough that the file is memory-mapped; released pages are read
  // back from the file, never zeros.
  std::vector<float> big = pseudoRandom(1 << 20, 4), small = pseudoRandom(5, 5);
  GGUFWriter w;
  ASSERT_EQ(errorOf(w.addTensor("small", {5}, DType::F32, small)), "<success>");
  ASSERT_EQ(errorOf(w.addTensor("big", {1024, 1024}, DType::F32, big)),
            "<success>");
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  auto file = GGUFFile::open(path("m.gguf"));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  EXPECT_EQ(*(*file)->loadF32("big"), big);
  (*file)->release("big");
  (*file)->release("small");
  (*file)->release("no such tensor");
  EXPECT_EQ(*(*file)->loadF32("big"), big);
  EXPECT_EQ(*(*file)->loadF32("small"), small);
}

TEST_F(GGUFTest, RoundTripF32F16BF16) {
  std::vector<float> a = pseudoRandom(12, 1), h = pseudoRandom(8, 2),
                     bf = pseudoRandom(6, 3);
  GGUFWriter w;
  ASSERT_EQ(errorOf(w.addTensor("a", {3, 4}, DType::F32, a)), "<success>");
  ASSERT_EQ(errorOf(w.addTensor("h", {2, 2, 2}, DType::F16, h)), "<success>");
  ASSERT_EQ(errorOf(w.addTensor("bf", {6}, DType::BF16, bf)), "<success>");
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");

  auto file = GGUFFile::open(path("m.gguf"));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  GGUFFile &f = **file;
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a", "h", "bf"}));
  const TensorInfo *ai = f.lookup("a");
  ASSERT_TRUE(ai);
  EXPECT_EQ(ai->shape, (llvm::SmallVector<int64_t>{3, 4})); // Row-major.
  EXPECT_EQ(ai->dtype, DType::F32);
  EXPECT_EQ(ai->offset, f.dataOffset());
  EXPECT_EQ(f.dataOffset() % 32, 0u);
  EXPECT_EQ(f.lookup("h")->offset % 32, 0u);
  EXPECT_EQ(f.ggmlType("h"), kGGMLF16);
  EXPECT_EQ(*f.loadF32("a"), a);
  std::vector<float> hWant, bfWant;
  for (float x : h)
    hWant.push_back(f16ToF32(f32ToF16(x)));
  for (float x : bf)
    bfWant.push_back(bf16ToF32(f32ToBF16(x)));
  EXPECT_EQ(*f.loadF32("h"), hWant);
  EXPECT_EQ(*f.loadF32("bf"), bfWant);
  auto view = f.viewF32("a");
  ASSERT_TRUE(bool(view));
  EXPECT_EQ(view->vec(), a);
  EXPECT_EQ(errorOf(f.viewF32("h")),
            msg("tensor 'h': cannot view as f32 without a copy: stored as "
                "f16"));
}

TEST_F(GGUFTest, DimsAreReversed) {
  // A hand-built file: dims [4, 2] in GGUF order is shape [2, 4].
  Bytes b;
  ggufHeader(b, 3, 1, 0);
  tensorInfo(b, "w", {4, 2}, kGGMLF32, 0);
  b.padTo(32);
  for (int i = 0; i < 8; ++i)
    b.f32(float(i));
  auto file = GGUFFile::open(writeFile("m.gguf", b.data));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  EXPECT_EQ((*file)->lookup("w")->shape, (llvm::SmallVector<int64_t>{2, 4}));
  EXPECT_EQ((*file)->dataOffset(), 96u); // 24 + 41 bytes, aligned to 32.
  EXPECT_EQ(*(*file)->loadF32("w"),
            (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST_F(GGUFTest, CustomAlignment) {
  GGUFWriter w(64);
  std::vector<float> a = {1, 2, 3}, b = {4};
  ASSERT_EQ(errorOf(w.addTensor("a", {3}, DType::F32, a)), "<success>");
  ASSERT_EQ(errorOf(w.addTensor("b", {1}, DType::F32, b)), "<success>");
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  auto file = GGUFFile::open(path("m.gguf"));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  EXPECT_EQ((*file)->alignment(), 64u);
  EXPECT_EQ((*file)->getUInt("general.alignment"), 64u);
  EXPECT_EQ((*file)->dataOffset() % 64, 0u);
  EXPECT_EQ((*file)->lookup("b")->offset - (*file)->dataOffset(), 64u);
  EXPECT_EQ(*(*file)->loadF32("b"), b);
}

/// Decodes Q8_0 blocks from the layout (f16 d, 32 x int8), naively.
std::vector<float> naiveQ8_0(llvm::ArrayRef<uint8_t> raw) {
  std::vector<float> out;
  for (size_t blk = 0; blk < raw.size() / 34; ++blk) {
    const uint8_t *p = raw.data() + blk * 34;
    float d = halfValue(uint16_t(p[0] | p[1] << 8));
    for (int j = 0; j < 32; ++j)
      out.push_back(float(int8_t(p[2 + j])) * d);
  }
  return out;
}

/// Decodes Q4_0 blocks from the layout (f16 d, 16 bytes of nibbles; low
/// nibbles are elements 0..15, high nibbles 16..31), naively.
std::vector<float> naiveQ4_0(llvm::ArrayRef<uint8_t> raw) {
  std::vector<float> out;
  for (size_t blk = 0; blk < raw.size() / 18; ++blk) {
    const uint8_t *p = raw.data() + blk * 18;
    float d = halfValue(uint16_t(p[0] | p[1] << 8));
    float block[32];
    for (int j = 0; j < 16; ++j) {
      block[j] = float((p[2 + j] & 15) - 8) * d;
      block[j + 16] = float((p[2 + j] >> 4) - 8) * d;
    }
    out.insert(out.end(), block, block + 32);
  }
  return out;
}

TEST_F(GGUFTest, Q8_0RoundTrip) {
  std::vector<float> x = pseudoRandom(4 * 64, 7);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] *= 1.0f + float(i / 32); // Different scale per block.
  GGUFWriter w;
  ASSERT_EQ(errorOf(w.addTensor("q", {4, 64}, DType::Q8_0, x)), "<success>");
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  auto file = GGUFFile::open(path("m.gguf"));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  EXPECT_EQ((*file)->lookup("q")->dtype, DType::Q8_0);
  EXPECT_EQ((*file)->lookup("q")->byteSize, 8u * 34);
  EXPECT_EQ((*file)->ggmlType("q"), kGGMLQ8_0);
  std::vector<float> got = *(*file)->loadF32("q");
  // Exactly the naive decoding of the stored blocks...
  EXPECT_EQ(got, naiveQ8_0(*(*file)->rawBytes("q")));
  // ...and within 0.6 * d of the input, d = amax / 127 (0.5 * d rounding of
  // the code, plus up to 127 * 2^-11 * d from storing d as f16).
  for (size_t blk = 0; blk < 8; ++blk) {
    float amax = 0;
    for (int j = 0; j < 32; ++j)
      amax = std::max(amax, std::fabs(x[blk * 32 + j]));
    for (int j = 0; j < 32; ++j)
      EXPECT_NEAR(got[blk * 32 + j], x[blk * 32 + j], 0.6f * amax / 127)
          << blk << " " << j;
  }
  EXPECT_EQ(errorOf((*file)->viewF32("q")),
            msg("tensor 'q': cannot view as f32 without a copy: stored as "
                "q8_0"));
}

TEST_F(GGUFTest, Q4_0RoundTrip) {
  std::vector<float> x = pseudoRandom(2 * 64, 9);
  GGUFWriter w;
  ASSERT_EQ(errorOf(w.addTensor("q", {2, 64}, DType::Q4_0, x)), "<success>");
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  auto file = GGUFFile::open(path("m.gguf"));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  EXPECT_EQ((*file)->lookup("q")->byteSize, 4u * 18);
  std::vector<float> got = *(*file)->loadF32("q");
  EXPECT_EQ(got, naiveQ4_0(*(*file)->rawBytes("q")));
  // Within 1.01 * |d|, |d| = amax / 8: codes round to 0.5 * |d|, except
  // that +amax clamps from code 16 to 15 (a full |d|); 1% covers the f16 d.
  for (size_t blk = 0; blk < 4; ++blk) {
    float amax = 0;
    for (int j = 0; j < 32; ++j)
      amax = std::max(amax, std::fabs(x[blk * 32 + j]));
    for (int j = 0; j < 32; ++j)
      EXPECT_NEAR(got[blk * 32 + j], x[blk * 32 + j], 1.01f * amax / 8)
          << blk << " " << j;
  }
}

//===----------------------------------------------------------------------===//
// K-quants on hand-built blocks
//===----------------------------------------------------------------------===//

/// Two Q4_K super-blocks with chosen 6-bit scales/mins and 4-bit codes, and
/// the values ggml's formula gives for them: y = (d * sc) * q - (dmin * m).
struct Q4KCase {
  std::vector<uint8_t> bytes;
  std::vector<float> expected;
};

Q4KCase makeQ4K() {
  Q4KCase c;
  const uint16_t ds[2] = {0x3800 /*0.5*/, 0x2e66 /*~0.0999*/};
  const uint16_t dmins[2] = {0x3400 /*0.25*/, 0x1e00 /*~0.0059*/};
  const uint8_t scales[2][8] = {{1, 2, 63, 17, 33, 40, 5, 60},
                                {0, 63, 31, 32, 16, 48, 7, 9}};
  const uint8_t mins[2][8] = {{0, 3, 62, 9, 48, 11, 63, 1},
                              {63, 0, 1, 2, 55, 17, 32, 40}};
  std::vector<float> codes = pseudoRandom(512, 11);
  for (int blk = 0; blk < 2; ++blk) {
    Bytes b;
    b.u16(ds[blk]).u16(dmins[blk]);
    // Pack: bytes 0-3 hold sc[0..3] (6 bits) + top 2 bits of sc[4..7];
    // bytes 4-7 the same for the mins; bytes 8-11 the low 4 bits of
    // sc[4..7] (low nibble) and m[4..7] (high nibble).
    uint8_t packed[12];
    for (int j = 0; j < 4; ++j) {
      packed[j] = scales[blk][j] | (scales[blk][j + 4] >> 4) << 6;
      packed[j + 4] = mins[blk][j] | (mins[blk][j + 4] >> 4) << 6;
      packed[j + 8] = (scales[blk][j + 4] & 15) | (mins[blk][j + 4] & 15) << 4;
    }
    b.data.insert(b.data.end(), packed, packed + 12);
    uint8_t q[256];
    for (int e = 0; e < 256; ++e)
      q[e] = uint8_t((codes[blk * 256 + e] + 1) * 8) & 15;
    // Element e: 64-element chunk e / 64 uses qs[32 * chunk ..+32], low
    // nibbles for its first 32 elements, high nibbles for the next 32.
    uint8_t qs[128] = {};
    for (int e = 0; e < 256; ++e) {
      int chunk = e / 64, within = e % 64;
      uint8_t &byte = qs[chunk * 32 + within % 32];
      byte |= within < 32 ? q[e] : q[e] << 4;
    }
    b.data.insert(b.data.end(), qs, qs + 128);
    c.bytes.insert(c.bytes.end(), b.data.begin(), b.data.end());
    float d = halfValue(ds[blk]), dmin = halfValue(dmins[blk]);
    for (int e = 0; e < 256; ++e) {
      int sub = e / 32; // Sub-block of 32 elements.
      float d1 = d * float(scales[blk][sub]);
      float m1 = dmin * float(mins[blk][sub]);
      c.expected.push_back(d1 * float(q[e]) - m1);
    }
  }
  return c;
}

/// One Q6_K super-block with chosen 6-bit codes and int8 scales, and the
/// values ggml's formula gives: y = d * sc[16-element group] * (q - 32).
struct Q6KCase {
  std::vector<uint8_t> bytes;
  std::vector<float> expected;
};

Q6KCase makeQ6K(uint16_t dBits, uint32_t seed) {
  Q6KCase c;
  const int8_t scales[16] = {-128, 127, -3, 5,  1,  0,   64, -64,
                             17,   -17, 99, -1, 33, -90, 2,  120};
  std::vector<float> codes = pseudoRandom(256, seed);
  uint8_t q[256];
  for (int e = 0; e < 256; ++e)
    q[e] = uint8_t((codes[e] + 1) * 32) & 63;
  q[0] = 0;
  q[1] = 63;
  // Element e: half = e / 128; within it, group g = (e % 128) / 32 and lane
  // l = e % 32. The low 4 bits live in ql[64 * half + l + 32 * (g & 1)]
  // (low nibble for g < 2, high for g >= 2); the top 2 bits in
  // qh[32 * half + l] at bit 2 * g.
  uint8_t ql[128] = {}, qh[64] = {};
  for (int e = 0; e < 256; ++e) {
    int half = e / 128, g = (e % 128) / 32, l = e % 32;
    uint8_t &lo = ql[64 * half + l + 32 * (g & 1)];
    lo |= g < 2 ? (q[e] & 15) : (q[e] & 15) << 4;
    qh[32 * half + l] |= (q[e] >> 4) << (2 * g);
  }
  Bytes b;
  b.data.insert(b.data.end(), ql, ql + 128);
  b.data.insert(b.data.end(), qh, qh + 64);
  for (int8_t s : scales)
    b.u8(uint8_t(s));
  b.u16(dBits);
  c.bytes = b.data;
  float d = halfValue(dBits);
  for (int e = 0; e < 256; ++e) {
    int half = e / 128, g = (e % 128) / 32, l = e % 32;
    int s = 8 * half + 2 * g + l / 16;
    c.expected.push_back(d * float(scales[s]) * float(int(q[e]) - 32));
  }
  return c;
}

/// K-quant results match the formula up to FMA contraction: a relative
/// 2^-20 of the largest term.
void expectClose(const std::vector<float> &got,
                 const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], std::ldexp(std::fabs(want[i]) + 8, -20))
        << "element " << i;
}

TEST_F(GGUFTest, Q4_KHandBuiltBlocks) {
  Q4KCase c = makeQ4K();
  ASSERT_EQ(c.bytes.size(), 2u * 144);
  std::vector<float> direct(512);
  ASSERT_EQ(errorOf(decodeToF32(DType::Q4_K, c.bytes, direct)), "<success>");
  expectClose(direct, c.expected);

  GGUFWriter w;
  ASSERT_EQ(errorOf(w.addRawTensor("k", {2, 256}, DType::Q4_K, c.bytes)),
            "<success>");
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  auto file = GGUFFile::open(path("m.gguf"));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  EXPECT_EQ((*file)->lookup("k")->dtype, DType::Q4_K);
  expectClose(*(*file)->loadF32("k"), c.expected);
}

TEST_F(GGUFTest, Q6_KHandBuiltBlocks) {
  Q6KCase a = makeQ6K(0x2c00 /*0.0625*/, 5), b = makeQ6K(0x0203, 6);
  std::vector<uint8_t> bytes = a.bytes;
  bytes.insert(bytes.end(), b.bytes.begin(), b.bytes.end());
  std::vector<float> want = a.expected;
  want.insert(want.end(), b.expected.begin(), b.expected.end());
  ASSERT_EQ(bytes.size(), 2u * 210);
  std::vector<float> direct(512);
  ASSERT_EQ(errorOf(decodeToF32(DType::Q6_K, bytes, direct)), "<success>");
  expectClose(direct, want);

  GGUFWriter w;
  ASSERT_EQ(errorOf(w.addRawTensor("k", {512}, DType::Q6_K, bytes)),
            "<success>");
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  auto file = GGUFFile::open(path("m.gguf"));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  expectClose(*(*file)->loadF32("k"), want);
}

//===----------------------------------------------------------------------===//
// Llama view
//===----------------------------------------------------------------------===//

/// convert_hf_to_gguf.py's permute, emulating numpy: view w as
/// [n_head, 2, rows / n_head / 2, cols], swap axes 1 and 2, and read the
/// result back in C order.
std::vector<float> pythonPermute(const std::vector<float> &w, int64_t rows,
                                 int64_t cols, int64_t nHead) {
  int64_t half = rows / nHead / 2;
  std::vector<float> out;
  for (int64_t h = 0; h < nHead; ++h)
    for (int64_t b = 0; b < half; ++b)     // Axis 1 after the swap.
      for (int64_t a = 0; a < 2; ++a)      // Axis 2 after the swap.
        for (int64_t c = 0; c < cols; ++c) // Element [h][a][b][c] of the view.
          out.push_back(w[((h * 2 + a) * half + b) * cols + c]);
  return out;
}

struct LlamaModel {
  // Hugging Face name -> (shape, values in HF layout).
  std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> hf;
};

constexpr int64_t kHidden = 32, kHeads = 4, kKVHeads = 2, kFFN = 64,
                  kVocab = 10;

/// A one-layer llama GGUF writer holding `model`'s tensors under GGUF names,
/// q/k permuted as llama.cpp stores them (q with `qRows` rows; a count that
/// does not split into heads is stored unpermuted).
GGUFWriter makeLlama(LlamaModel &model, DType qkType = DType::F32,
                     int64_t qRows = kHidden) {
  GGUFWriter w;
  w.set("general.architecture", GGUFValue::string("llama"));
  w.set("llama.embedding_length", GGUFValue::uint32(kHidden));
  w.set("llama.block_count", GGUFValue::uint32(1));
  w.set("llama.attention.head_count", GGUFValue::uint32(kHeads));
  w.set("llama.attention.head_count_kv", GGUFValue::uint32(kKVHeads));
  w.set("llama.feed_forward_length", GGUFValue::uint32(kFFN));
  w.set("llama.context_length", GGUFValue::uint32(128));
  w.set("llama.rope.freq_base", GGUFValue::float32(500000.0f));
  w.set("llama.rope.dimension_count", GGUFValue::uint32(kHidden / kHeads));
  w.set("llama.attention.layer_norm_rms_epsilon", GGUFValue::float32(1e-5f));
  int64_t kvRows = kKVHeads * (kHidden / kHeads);
  struct Spec {
    const char *gguf, *hf;
    std::vector<int64_t> shape;
    int64_t permuteHeads;
  };
  std::vector<Spec> specs = {
      {"token_embd.weight", "model.embed_tokens.weight", {kVocab, kHidden}, 0},
      {"blk.0.attn_norm.weight",
       "model.layers.0.input_layernorm.weight",
       {kHidden},
       0},
      {"blk.0.attn_q.weight",
       "model.layers.0.self_attn.q_proj.weight",
       {qRows, kHidden},
       qRows % (2 * kHeads) ? 0 : kHeads},
      {"blk.0.attn_k.weight",
       "model.layers.0.self_attn.k_proj.weight",
       {kvRows, kHidden},
       kKVHeads},
      {"blk.0.attn_v.weight",
       "model.layers.0.self_attn.v_proj.weight",
       {kvRows, kHidden},
       0},
      {"blk.0.attn_output.weight",
       "model.layers.0.self_attn.o_proj.weight",
       {kHidden, kHidden},
       0},
      {"blk.0.ffn_norm.weight",
       "model.layers.0.post_attention_layernorm.weight",
       {kHidden},
       0},
      {"blk.0.ffn_gate.weight",
       "model.layers.0.mlp.gate_proj.weight",
       {kFFN, kHidden},
       0},
      {"blk.0.ffn_up.weight",
       "model.layers.0.mlp.up_proj.weight",
       {kFFN, kHidden},
       0},
      {"blk.0.ffn_down.weight",
       "model.layers.0.mlp.down_proj.weight",
       {kHidden, kFFN},
       0},
      {"output_norm.weight", "model.norm.weight", {kHidden}, 0},
      {"output.weight", "lm_head.weight", {kVocab, kHidden}, 0},
      {"rope_freqs.weight", "rope_freqs.weight", {4}, 0},
  };
  uint32_t seed = 100;
  for (const Spec &s : specs) {
    int64_t n = 1;
    for (int64_t d : s.shape)
      n *= d;
    std::vector<float> values = pseudoRandom(n, seed++);
    model.hf[s.hf] = {s.shape, values};
    std::vector<float> stored =
        s.permuteHeads
            ? pythonPermute(values, s.shape[0], s.shape[1], s.permuteHeads)
            : values;
    EXPECT_EQ(
        errorOf(w.addTensor(s.gguf, s.shape,
                            s.permuteHeads ? qkType : DType::F32, stored)),
        "<success>");
  }
  return w;
}

TEST_F(GGUFTest, LlamaNamesConfigAndUnpermute) {
  LlamaModel model;
  ASSERT_EQ(errorOf(makeLlama(model).write(path("m.gguf"))), "<success>");
  auto weights = GGUFLlamaWeights::open(path("m.gguf"));
  ASSERT_TRUE(bool(weights)) << errorOf(std::move(weights));
  GGUFLlamaWeights &w = **weights;

  const LlamaGGUFConfig &c = w.config();
  EXPECT_EQ(c.hiddenSize, 32u);
  EXPECT_EQ(c.numLayers, 1u);
  EXPECT_EQ(c.numHeads, 4u);
  EXPECT_EQ(c.numKVHeads, 2u);
  EXPECT_EQ(c.intermediateSize, 64u);
  EXPECT_EQ(c.contextLength, 128u);
  EXPECT_EQ(c.vocabSize, 10u);
  EXPECT_EQ(c.ropeDim, 8u);
  EXPECT_EQ(c.headDim(), 8u);
  EXPECT_EQ(c.ropeTheta, 500000.0);
  EXPECT_EQ(c.rmsNormEps, double(1e-5f));

  std::vector<std::string> names = w.names();
  std::vector<std::string> want;
  for (const auto &entry : model.hf)
    want.push_back(entry.first);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, want);
  EXPECT_EQ(w.ggufName("model.layers.0.mlp.down_proj.weight"),
            StringRef("blk.0.ffn_down.weight"));
  EXPECT_EQ(w.description(), path("m.gguf"));

  // Every tensor, q_proj and k_proj included, reads back as the original.
  for (const auto &[name, entry] : model.hf) {
    const TensorInfo *info = w.lookup(name);
    ASSERT_TRUE(info) << name;
    EXPECT_EQ(info->name, name);
    EXPECT_EQ(std::vector<int64_t>(info->shape.begin(), info->shape.end()),
              entry.first)
        << name;
    EXPECT_EQ(*w.loadF32(name), entry.second) << name;
  }
  // Sanity: the stored q rows really are permuted.
  EXPECT_NE(*w.file().loadF32("blk.0.attn_q.weight"),
            model.hf["model.layers.0.self_attn.q_proj.weight"].second);

  auto view = w.viewF32("model.layers.0.self_attn.v_proj.weight");
  ASSERT_TRUE(bool(view));
  EXPECT_EQ(view->vec(),
            model.hf["model.layers.0.self_attn.v_proj.weight"].second);
  EXPECT_EQ(errorOf(w.viewF32("model.layers.0.self_attn.q_proj.weight")),
            msg("tensor 'model.layers.0.self_attn.q_proj.weight': cannot "
                "view as f32 without a copy: rows are stored permuted for "
                "llama.cpp's rotary layout"));
  EXPECT_EQ(errorOf(w.rawBytes("model.layers.0.self_attn.k_proj.weight")),
            msg("tensor 'model.layers.0.self_attn.k_proj.weight': stored "
                "with rows permuted for llama.cpp's rotary layout; use "
                "readStored or readF32, or "
                "file().rawBytes('blk.0.attn_k.weight')"));
  // readStored moves whole stored rows back into Hugging Face order (here
  // f32 rows, so the bytes are the original's).
  for (const char *name : {"model.layers.0.self_attn.q_proj.weight",
                           "model.layers.0.self_attn.k_proj.weight",
                           "model.layers.0.mlp.down_proj.weight"}) {
    const std::vector<float> &want = model.hf[name].second;
    std::vector<float> got(want.size());
    ASSERT_EQ(
        errorOf(w.readStored(name, llvm::MutableArrayRef<uint8_t>(
                                       reinterpret_cast<uint8_t *>(got.data()),
                                       got.size() * sizeof(float)))),
        "<success>")
        << name;
    EXPECT_EQ(got, want) << name;
  }
  std::vector<uint8_t> fewBytes(5);
  EXPECT_EQ(
      errorOf(w.readStored("model.layers.0.self_attn.k_proj.weight", fewBytes)),
      msg("tensor 'model.layers.0.self_attn.k_proj.weight': destination has "
          "5 bytes, but the tensor has 2048"));
  EXPECT_EQ(
      errorOf(w.readStored("model.layers.0.mlp.up_proj.weight", fewBytes)),
      msg("tensor 'model.layers.0.mlp.up_proj.weight': destination has "
          "5 bytes, but the tensor has 8192"));
  std::vector<float> small(3);
  EXPECT_EQ(errorOf(w.readF32("model.layers.0.self_attn.q_proj.weight", small)),
            msg("tensor 'model.layers.0.self_attn.q_proj.weight': "
                "destination has 3 elements, but the tensor has 1024 (shape "
                "[32, 32])"));
  EXPECT_EQ(errorOf(w.readF32("model.layers.0.self_attn.qkv.weight", small)),
            msg("tensor 'model.layers.0.self_attn.qkv.weight': not found"));
}

TEST_F(GGUFTest, LlamaUnpermuteQuantized) {
  LlamaModel model;
  ASSERT_EQ(errorOf(makeLlama(model, DType::Q8_0).write(path("m.gguf"))),
            "<success>");
  auto weights = GGUFLlamaWeights::open(path("m.gguf"));
  ASSERT_TRUE(bool(weights)) << errorOf(std::move(weights));
  for (auto [gguf, hf, heads] :
       {std::make_tuple("blk.0.attn_q.weight",
                        "model.layers.0.self_attn.q_proj.weight", kHeads),
        std::make_tuple("blk.0.attn_k.weight",
                        "model.layers.0.self_attn.k_proj.weight", kKVHeads)}) {
    std::vector<float> stored = *(*weights)->file().loadF32(gguf);
    std::vector<float> got = *(*weights)->loadF32(hf);
    int64_t rows = (*weights)->lookup(hf)->shape[0];
    // Where each HF row went: permute the row indices themselves.
    std::vector<float> rowIds(rows);
    std::iota(rowIds.begin(), rowIds.end(), 0.0f);
    std::vector<float> where = pythonPermute(rowIds, rows, 1, heads);
    for (int64_t p = 0; p < rows; ++p) {
      int64_t r = int64_t(where[p]);
      for (int64_t c = 0; c < kHidden; ++c)
        ASSERT_EQ(got[r * kHidden + c], stored[p * kHidden + c])
            << hf << " row " << r;
    }
    // readStored gives the q8_0 blocks of the rows in HF order: decoded,
    // they are what loadF32 gives.
    std::vector<uint8_t> blocks((*weights)->lookup(hf)->byteSize);
    ASSERT_EQ(errorOf((*weights)->readStored(hf, blocks)), "<success>");
    std::vector<float> decoded(got.size());
    ASSERT_EQ(errorOf(decodeToF32(DType::Q8_0, blocks, decoded)), "<success>");
    EXPECT_EQ(decoded, got) << hf;
    // Q8_0 keeps it close to the original.
    const std::vector<float> &orig = model.hf[hf].second;
    for (size_t i = 0; i < orig.size(); ++i)
      EXPECT_NEAR(got[i], orig[i], 0.6f / 127) << hf << " " << i;
  }
}

TEST_F(GGUFTest, LlamaStoredRowRanges) {
  // readStoredRows gives the rows readStored gives, for ranges of whole
  // heads (a tensor-parallel rank's), parts of heads, and a permuted Q/K
  // as well as a tensor stored as it is; bad ranges are refused by name.
  LlamaModel model;
  ASSERT_EQ(errorOf(makeLlama(model, DType::Q8_0).write(path("m.gguf"))),
            "<success>");
  auto weights = GGUFLlamaWeights::open(path("m.gguf"));
  ASSERT_TRUE(bool(weights)) << errorOf(std::move(weights));
  for (const char *hf : {"model.layers.0.self_attn.q_proj.weight",
                         "model.layers.0.self_attn.k_proj.weight",
                         "model.layers.0.mlp.up_proj.weight"}) {
    const TensorInfo *info = (*weights)->lookup(hf);
    ASSERT_NE(info, nullptr) << hf;
    uint64_t rows = info->shape[0], rowBytes = info->byteSize / rows;
    std::vector<uint8_t> all(info->byteSize);
    ASSERT_EQ(errorOf((*weights)->readStored(hf, all)), "<success>");
    for (auto [begin, end] :
         {std::make_pair(uint64_t(0), rows),
          std::make_pair(uint64_t(0), rows / 2), std::make_pair(rows / 2, rows),
          std::make_pair(uint64_t(3), rows - 5),
          std::make_pair(rows - 1, rows)}) {
      std::vector<uint8_t> got((end - begin) * rowBytes);
      ASSERT_EQ(errorOf((*weights)->readStoredRows(hf, begin, end, got)),
                "<success>")
          << hf;
      EXPECT_TRUE(
          std::equal(got.begin(), got.end(), all.begin() + begin * rowBytes))
          << hf << " rows [" << begin << ", " << end << ")";
    }
  }
  const char *q = "model.layers.0.self_attn.q_proj.weight";
  uint64_t rows = (*weights)->lookup(q)->shape[0];
  std::vector<uint8_t> one((*weights)->lookup(q)->byteSize / rows);
  EXPECT_EQ(errorOf((*weights)->readStoredRows(q, rows, rows + 1, one)),
            msg("tensor 'model.layers.0.self_attn.q_proj.weight': rows [32, "
                "33) are not a range of its 32"));
  EXPECT_EQ(errorOf((*weights)->readStoredRows(q, 0, 2, one)),
            msg("tensor 'model.layers.0.self_attn.q_proj.weight': destination "
                "has 34 bytes, but rows [0, 2) have 68"));
  EXPECT_EQ(errorOf((*weights)->readStoredRows("nope", 0, 1, one)),
            msg("tensor 'nope': not found"));
}

TEST_F(GGUFTest, LlamaHeadCountWrongType) {
  LlamaModel model;
  GGUFWriter w = makeLlama(model);
  w.set("llama.attention.head_count", GGUFValue::string("4"));
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  EXPECT_EQ(errorOf(GGUFLlamaWeights::open(path("m.gguf"))),
            msg("metadata 'llama.attention.head_count': expected an unsigned "
                "integer, found string \"4\""));
}

TEST_F(GGUFTest, LlamaEpsilonWrongType) {
  LlamaModel model;
  GGUFWriter w = makeLlama(model);
  w.set("llama.attention.layer_norm_rms_epsilon", GGUFValue::boolean(true));
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  EXPECT_EQ(errorOf(GGUFLlamaWeights::open(path("m.gguf"))),
            msg("metadata 'llama.attention.layer_norm_rms_epsilon': expected "
                "a number, found bool true"));
}

TEST_F(GGUFTest, LlamaMissingKey) {
  GGUFWriter w;
  w.set("general.architecture", GGUFValue::string("llama"));
  w.set("llama.embedding_length", GGUFValue::uint32(kHidden));
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  EXPECT_EQ(errorOf(GGUFLlamaWeights::open(path("m.gguf"))),
            msg("metadata 'llama.block_count': missing"));
}

TEST_F(GGUFTest, LlamaWrongArchitecture) {
  LlamaModel model;
  GGUFWriter w = makeLlama(model);
  w.set("general.architecture", GGUFValue::string("gpt2"));
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  EXPECT_EQ(errorOf(GGUFLlamaWeights::open(path("m.gguf"))),
            msg("metadata 'general.architecture': \"gpt2\" is not supported "
                "(supported: llama, qwen2, qwen3, gemma2, gemma3, phi3, "
                "bert)"));
}

TEST_F(GGUFTest, NamesPerArchitecture) {
  struct Case {
    const char *arch, *gguf, *hf;
  };
  for (const Case &c : std::initializer_list<Case>{
           {"llama", "blk.3.ffn_norm.weight",
            "model.layers.3.post_attention_layernorm.weight"},
           {"gemma2", "blk.3.ffn_norm.weight",
            "model.layers.3.pre_feedforward_layernorm.weight"},
           {"gemma3", "blk.0.post_ffw_norm.weight",
            "model.layers.0.post_feedforward_layernorm.weight"},
           {"gemma2", "blk.1.post_attention_norm.weight",
            "model.layers.1.post_attention_layernorm.weight"},
           {"phi3", "blk.2.attn_qkv.weight",
            "model.layers.2.self_attn.qkv_proj.weight"},
           {"phi3", "blk.2.ffn_up.weight",
            "model.layers.2.mlp.gate_up_proj.weight"},
           {"bert", "token_types.weight",
            "embeddings.token_type_embeddings.weight"},
           {"bert", "blk.1.attn_q.bias",
            "encoder.layer.1.attention.self.query.bias"},
           {"bert", "blk.0.layer_output_norm.weight",
            "encoder.layer.0.output.LayerNorm.weight"},
           {"qwen2", "output.weight", "lm_head.weight"}}) {
    EXPECT_EQ(GGUFLlamaWeights::hfNameFor(c.gguf, c.arch).value_or("-"), c.hf)
        << c.arch << " " << c.gguf;
    EXPECT_EQ(GGUFLlamaWeights::ggufNameFor(c.hf, c.arch).value_or("-"), c.gguf)
        << c.arch << " " << c.hf;
  }
  EXPECT_FALSE(GGUFLlamaWeights::hfNameFor("blk.0.post_ffw_norm.weight"));
  EXPECT_FALSE(GGUFLlamaWeights::hfNameFor("blk.x.attn_q.weight"));
  EXPECT_FALSE(GGUFLlamaWeights::hfNameFor("blk.0.attn_q.scale"));
}

/// A one-layer gemma2 GGUF whose attention norm is `norm` (stored as 1 + w
/// by the converter).
static GGUFWriter makeGemma(DType normType) {
  GGUFWriter w;
  w.set("general.architecture", GGUFValue::string("gemma2"));
  w.set("gemma2.embedding_length", GGUFValue::uint32(4));
  w.set("gemma2.block_count", GGUFValue::uint32(1));
  w.set("gemma2.attention.head_count", GGUFValue::uint32(2));
  w.set("gemma2.feed_forward_length", GGUFValue::uint32(8));
  w.set("gemma2.context_length", GGUFValue::uint32(16));
  w.set("gemma2.attention.layer_norm_rms_epsilon", GGUFValue::float32(1e-6f));
  cantFail(w.addTensor("token_embd.weight", {3, 4}, DType::F32,
                       std::vector<float>(12, 0.5f)));
  cantFail(w.addTensor("blk.0.attn_norm.weight", {4}, normType,
                       std::vector<float>{1.5f, 0.5f, 1.0f, 2.25f}));
  return w;
}

TEST_F(GGUFTest, GemmaNormsReadWithoutTheOne) {
  ASSERT_EQ(errorOf(makeGemma(DType::F32).write(path("g.gguf"))), "<success>");
  auto weights = GGUFLlamaWeights::open(path("g.gguf"));
  ASSERT_TRUE(bool(weights)) << errorOf(std::move(weights));
  const std::string norm = "model.layers.0.input_layernorm.weight";
  std::vector<float> values(4);
  ASSERT_EQ(errorOf((*weights)->readF32(norm, values)), "<success>");
  EXPECT_EQ(values, (std::vector<float>{0.5f, -0.5f, 0.0f, 1.25f}));
  std::vector<float> stored(4);
  ASSERT_EQ(errorOf((*weights)->readStored(
                norm, llvm::MutableArrayRef<uint8_t>(
                          reinterpret_cast<uint8_t *>(stored.data()), 16))),
            "<success>");
  EXPECT_EQ(stored, values);
  EXPECT_NE(errorOf((*weights)->rawBytes(norm)).find("stored as 1 + w"),
            std::string::npos);
  EXPECT_NE(errorOf((*weights)->viewF32(norm)).find("stored as 1 + w"),
            std::string::npos);
  // The embedding is stored as is.
  EXPECT_EQ(errorOf((*weights)->viewF32("model.embed_tokens.weight")),
            "<success>");
}

TEST_F(GGUFTest, GemmaNormNotF32Refused) {
  ASSERT_EQ(errorOf(makeGemma(DType::F16).write(path("m.gguf"))), "<success>");
  EXPECT_EQ(errorOf(GGUFLlamaWeights::open(path("m.gguf"))),
            msg("tensor 'blk.0.attn_norm.weight': a Gemma norm stored as f16 "
                "(RLX reads them as f32, as llama.cpp's converter writes "
                "them)"));
}

TEST_F(GGUFTest, LlamaHiddenNotMultipleOfHeads) {
  LlamaModel model;
  GGUFWriter w = makeLlama(model);
  w.set("llama.attention.head_count", GGUFValue::uint32(3));
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  EXPECT_EQ(errorOf(GGUFLlamaWeights::open(path("m.gguf"))),
            msg("llama.embedding_length 32 is not a multiple of "
                "llama.attention.head_count 3"));
}

TEST_F(GGUFTest, LlamaQRowsDoNotSplitIntoHeads) {
  LlamaModel model;
  ASSERT_EQ(
      errorOf(makeLlama(model, DType::F32, /*qRows=*/12).write(path("m.gguf"))),
      "<success>");
  EXPECT_EQ(errorOf(GGUFLlamaWeights::open(path("m.gguf"))),
            msg("tensor 'blk.0.attn_q.weight': shape [12, 32] does not split "
                "into 4 heads of an even number of rows"));
}

TEST_F(GGUFTest, LlamaMissingTokenEmbedding) {
  GGUFWriter w;
  w.set("general.architecture", GGUFValue::string("llama"));
  w.set("llama.embedding_length", GGUFValue::uint32(kHidden));
  w.set("llama.block_count", GGUFValue::uint32(1));
  w.set("llama.attention.head_count", GGUFValue::uint32(kHeads));
  w.set("llama.feed_forward_length", GGUFValue::uint32(kFFN));
  w.set("llama.context_length", GGUFValue::uint32(128));
  w.set("llama.attention.layer_norm_rms_epsilon", GGUFValue::float32(1e-5f));
  ASSERT_EQ(errorOf(w.write(path("m.gguf"))), "<success>");
  EXPECT_EQ(errorOf(GGUFLlamaWeights::open(path("m.gguf"))),
            msg("tensor 'token_embd.weight': not found (it gives the "
                "vocabulary size)"));
}

//===----------------------------------------------------------------------===//
// Truncation at every section boundary
//===----------------------------------------------------------------------===//

/// A small valid file with its section offsets:
///   magic, version, tensor count, kv count,
///   kv "general.name" = string "tiny", kv "test.u32" = uint32 7,
///   tensor "w" f32 dims [2] offset 0, padding, 8 data bytes.
struct Sample {
  Bytes b;
  size_t key0, type0, value0, key1, value1, tensor0, dims0, type0t, offset0,
      data;
};

Sample makeSample() {
  Sample s;
  ggufHeader(s.b, 3, 1, 2);
  s.key0 = s.b.size();
  s.b.str("general.name");
  s.type0 = s.b.size();
  s.b.u32(kString);
  s.value0 = s.b.size();
  s.b.str("tiny");
  s.key1 = s.b.size();
  s.b.str("test.u32").u32(kU32);
  s.value1 = s.b.size();
  s.b.u32(7);
  s.tensor0 = s.b.size();
  s.b.str("w").u32(1);
  s.dims0 = s.b.size();
  s.b.u64(2);
  s.type0t = s.b.size();
  s.b.u32(kGGMLF32);
  s.offset0 = s.b.size();
  s.b.u64(0);
  s.b.padTo(32);
  s.data = s.b.size();
  s.b.f32(1.0f).f32(2.0f);
  return s;
}

class GGUFTruncationTest : public GGUFTest {
protected:
  std::string cutAt(size_t n) {
    Bytes cut;
    cut.data = sample.b.prefix(n);
    return openError(cut);
  }
  std::string at(size_t offset, size_t need, size_t left) {
    return ": unexpected end of file at offset " + std::to_string(offset) +
           " (need " + std::to_string(need) + " bytes, " +
           std::to_string(left) + " left)";
  }
  Sample sample = makeSample();
};

TEST_F(GGUFTruncationTest, SampleIsValid) {
  auto file = GGUFFile::open(writeFile("m.gguf", sample.b.data));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  EXPECT_EQ((*file)->getString("general.name"), StringRef("tiny"));
  EXPECT_EQ((*file)->getUInt("test.u32"), 7u);
  EXPECT_EQ(*(*file)->loadF32("w"), (std::vector<float>{1, 2}));
}

TEST_F(GGUFTruncationTest, InsideMagic) {
  EXPECT_EQ(cutAt(2), msg("header: magic" + at(0, 4, 2)));
}

TEST_F(GGUFTruncationTest, InsideVersion) {
  EXPECT_EQ(cutAt(6), msg("header: version" + at(4, 4, 2)));
}

TEST_F(GGUFTruncationTest, InsideTensorCount) {
  EXPECT_EQ(cutAt(12), msg("header: tensor count" + at(8, 8, 4)));
}

TEST_F(GGUFTruncationTest, InsideMetadataCount) {
  EXPECT_EQ(cutAt(20), msg("header: metadata count" + at(16, 8, 4)));
}

TEST_F(GGUFTruncationTest, InsideKeyLength) {
  EXPECT_EQ(cutAt(sample.key0 + 3),
            msg("metadata #0: key: string length" + at(sample.key0, 8, 3)));
}

TEST_F(GGUFTruncationTest, InsideKey) {
  EXPECT_EQ(cutAt(sample.key0 + 8 + 5),
            msg("metadata #0: key: string length 12 exceeds the 5 bytes left "
                "in the file"));
}

TEST_F(GGUFTruncationTest, InsideValueType) {
  EXPECT_EQ(cutAt(sample.type0 + 1), msg("metadata 'general.name': value type" +
                                         at(sample.type0, 4, 1)));
}

TEST_F(GGUFTruncationTest, InsideStringValue) {
  EXPECT_EQ(cutAt(sample.value0 + 8 + 2),
            msg("metadata 'general.name': string length 4 exceeds the 2 bytes "
                "left in the file"));
}

TEST_F(GGUFTruncationTest, InsideScalarValue) {
  EXPECT_EQ(cutAt(sample.value1 + 2),
            msg("metadata 'test.u32'" + at(sample.value1, 4, 2)));
}

TEST_F(GGUFTruncationTest, InsideTensorName) {
  EXPECT_EQ(cutAt(sample.tensor0 + 6),
            msg("tensor #0: name: string length" + at(sample.tensor0, 8, 6)));
}

TEST_F(GGUFTruncationTest, InsideTensorDims) {
  EXPECT_EQ(cutAt(sample.dims0 + 3),
            msg("tensor 'w': dimensions" + at(sample.dims0, 8, 3)));
}

TEST_F(GGUFTruncationTest, InsideTensorType) {
  EXPECT_EQ(cutAt(sample.type0t + 1),
            msg("tensor 'w': type" + at(sample.type0t, 4, 1)));
}

TEST_F(GGUFTruncationTest, InsideTensorOffset) {
  EXPECT_EQ(cutAt(sample.offset0 + 7),
            msg("tensor 'w': offset" + at(sample.offset0, 8, 7)));
}

TEST_F(GGUFTruncationTest, InsidePadding) {
  size_t n = sample.offset0 + 8 + 1;
  ASSERT_LT(n, sample.data);
  EXPECT_EQ(cutAt(n), msg("tensor 'w': data at offset 0 (8 bytes) extends "
                          "past the end of the file (" +
                          std::to_string(n) + " bytes, data section at " +
                          std::to_string(sample.data) + ")"));
}

TEST_F(GGUFTruncationTest, InsideData) {
  size_t n = sample.data + 5;
  EXPECT_EQ(cutAt(n), msg("tensor 'w': data at offset 0 (8 bytes) extends "
                          "past the end of the file (" +
                          std::to_string(n) + " bytes, data section at " +
                          std::to_string(sample.data) + ")"));
}

//===----------------------------------------------------------------------===//
// Lying headers
//===----------------------------------------------------------------------===//

TEST_F(GGUFTest, MissingFile) {
  EXPECT_EQ(errorOf(GGUFFile::open(path("m.gguf"))),
            msg("cannot open: No such file or directory"));
}

TEST_F(GGUFTest, BadMagic) {
  Bytes b;
  b.raw("GGUX").u32(3).u64(0).u64(0);
  EXPECT_EQ(openError(b), msg("header: not a GGUF file (bad magic)"));
}

TEST_F(GGUFTest, UnsupportedVersion) {
  Bytes b;
  ggufHeader(b, 1, 0, 0);
  EXPECT_EQ(openError(b),
            msg("header: unsupported GGUF version 1 (supported: 2 and 3)"));
}

TEST_F(GGUFTest, BigEndianVersion) {
  Bytes b;
  ggufHeader(b, 0x03000000, 0, 0);
  EXPECT_EQ(openError(b), msg("header: unsupported GGUF version 50331648 (a "
                              "big-endian file?)"));
}

TEST_F(GGUFTest, LyingTensorCount) {
  Bytes b;
  ggufHeader(b, 3, uint64_t(1) << 60, 0);
  EXPECT_EQ(openError(b),
            msg("tensor #0: name: string length" +
                std::string(": unexpected end of file at offset 24 (need 8 "
                            "bytes, 0 left)")));
}

TEST_F(GGUFTest, LyingMetadataCount) {
  Bytes b;
  ggufHeader(b, 3, 0, 3);
  b.str("a").u32(kU8).u8(1);
  EXPECT_EQ(openError(b),
            msg("metadata #1: key: string length: unexpected end of file at "
                "offset 38 (need 8 bytes, 0 left)"));
}

TEST_F(GGUFTest, UnknownValueType) {
  Bytes b;
  ggufHeader(b, 3, 0, 1);
  b.str("k").u32(13).u32(0);
  EXPECT_EQ(openError(b), msg("metadata 'k': unknown value type 13"));
}

TEST_F(GGUFTest, StringLengthPastEnd) {
  Bytes b;
  ggufHeader(b, 3, 0, 1);
  b.str("k").u32(kString).u64(uint64_t(1) << 62).raw("abc");
  EXPECT_EQ(openError(b), msg("metadata 'k': string length "
                              "4611686018427387904 exceeds the 3 bytes left "
                              "in the file"));
}

TEST_F(GGUFTest, ArrayLengthPastEnd) {
  Bytes b;
  ggufHeader(b, 3, 0, 1);
  b.str("k").u32(kArray).u32(kU32).u64(1000).u64(0);
  EXPECT_EQ(openError(b), msg("metadata 'k': array length 1000 of uint32 "
                              "exceeds what the 8 bytes left in the file can "
                              "hold"));
}

TEST_F(GGUFTest, StringArrayElementPastEnd) {
  Bytes b;
  ggufHeader(b, 3, 0, 1);
  b.str("k").u32(kArray).u32(kString).u64(2).str("ab").u64(99).raw("xyz");
  EXPECT_EQ(openError(b), msg("metadata 'k'[1]: string length 99 exceeds the "
                              "3 bytes left in the file"));
}

TEST_F(GGUFTest, UnknownArrayElementType) {
  Bytes b;
  ggufHeader(b, 3, 0, 1);
  b.str("k").u32(kArray).u32(77).u64(0);
  EXPECT_EQ(openError(b), msg("metadata 'k': unknown array element type 77"));
}

TEST_F(GGUFTest, ExcessiveNesting) {
  Bytes b;
  ggufHeader(b, 3, 0, 1);
  b.str("k").u32(kArray);
  for (int i = 0; i < 8; ++i)
    b.u32(kArray).u64(1);
  b.u32(kU8).u64(0);
  EXPECT_EQ(openError(b), msg("metadata 'k'[0][0][0][0][0][0][0][0]: arrays "
                              "nested deeper than 8"));
}

TEST_F(GGUFTest, ArrayElementLimit) {
  Bytes b;
  ggufHeader(b, 3, 0, 1);
  uint64_t n = kGGUFMaxArrayElements + 1;
  b.str("k").u32(kArray).u32(kU8).u64(n).zeros(n);
  EXPECT_EQ(openError(b), msg("metadata 'k': array length 4194305 exceeds the "
                              "limit of 4194304 metadata array elements per "
                              "file"));
}

TEST_F(GGUFTest, BadBool) {
  Bytes b;
  ggufHeader(b, 3, 0, 1);
  b.str("k").u32(kBool).u8(2);
  EXPECT_EQ(openError(b), msg("metadata 'k': bool value 2 is not 0 or 1"));
}

TEST_F(GGUFTest, DuplicateKey) {
  Bytes b;
  ggufHeader(b, 3, 0, 2);
  b.str("k").u32(kU8).u8(1);
  b.str("k").u32(kU8).u8(2);
  EXPECT_EQ(openError(b), msg("metadata 'k': duplicate key"));
}

TEST_F(GGUFTest, AlignmentWrongType) {
  Bytes b;
  ggufHeader(b, 3, 0, 1);
  b.str("general.alignment").u32(kString).str("32");
  EXPECT_EQ(openError(b), msg("metadata 'general.alignment': expected an "
                              "unsigned integer, found string"));
}

TEST_F(GGUFTest, AlignmentNotPowerOfTwo) {
  Bytes b;
  ggufHeader(b, 3, 0, 1);
  b.str("general.alignment").u32(kU32).u32(48);
  EXPECT_EQ(openError(b),
            msg("metadata 'general.alignment': 48 is not a power of two"));
}

/// A file with one tensor info and `dataBytes` bytes of data.
Bytes oneTensor(std::vector<uint64_t> dims, uint32_t type, uint64_t offset,
                size_t dataBytes) {
  Bytes b;
  ggufHeader(b, 3, 1, 0);
  tensorInfo(b, "w", std::move(dims), type, offset);
  b.padTo(32).zeros(dataBytes);
  return b;
}

TEST_F(GGUFTest, TooManyDims) {
  EXPECT_EQ(openError(oneTensor({1, 1, 1, 1, 1}, kGGMLF32, 0, 4)),
            msg("tensor 'w': 5 dimensions, at most 4 are supported"));
}

TEST_F(GGUFTest, ZeroDim) {
  EXPECT_EQ(openError(oneTensor({4, 0}, kGGMLF32, 0, 0)),
            msg("tensor 'w': dims[1] is zero"));
}

TEST_F(GGUFTest, AbsurdDim) {
  EXPECT_EQ(openError(oneTensor({uint64_t(1) << 63}, kGGMLF32, 0, 0)),
            msg("tensor 'w': dims[0] = 9223372036854775808 is too large"));
}

TEST_F(GGUFTest, ElementCountOverflow) {
  EXPECT_EQ(openError(oneTensor({uint64_t(1) << 32, uint64_t(1) << 32},
                                kGGMLF32, 0, 0)),
            msg("tensor 'w': element count of shape [4294967296, 4294967296] "
                "overflows 64 bits"));
}

TEST_F(GGUFTest, ByteSizeOverflow) {
  EXPECT_EQ(openError(oneTensor({uint64_t(1) << 62}, kGGMLF32, 0, 0)),
            msg("tensor 'w': byte size of 4611686018427387904 f32 elements "
                "overflows 64 bits"));
}

TEST_F(GGUFTest, HugeTensorPastEnd) {
  // 2^40 f32 elements fit in 64 bits but not in the file.
  EXPECT_EQ(openError(oneTensor({uint64_t(1) << 40}, kGGMLF32, 0, 0)),
            msg("tensor 'w': data at offset 0 (4398046511104 bytes) extends "
                "past the end of the file (64 bytes, data section at 64)"));
}

TEST_F(GGUFTest, UnknownGGMLType) {
  EXPECT_EQ(openError(oneTensor({4}, 99, 0, 16)),
            msg("tensor 'w': unknown ggml type 99"));
}

TEST_F(GGUFTest, UnsupportedGGMLType) {
  EXPECT_EQ(openError(oneTensor({256}, kGGMLQ8_K, 0, 292)),
            msg("tensor 'w': unsupported ggml type 15 (q8_K)"));
}

TEST_F(GGUFTest, QuantizedRowNotWholeBlocks) {
  EXPECT_EQ(openError(oneTensor({33}, kGGMLQ8_0, 0, 68)),
            msg("tensor 'w': last dimension 33 is not a multiple of the q8_0 "
                "block size 32"));
}

TEST_F(GGUFTest, KQuantRowNotWholeBlocks) {
  // ne[0] = 128 is half a q5_K block, even though the tensor holds 256
  // elements in all.
  EXPECT_EQ(openError(oneTensor({128, 2}, kGGMLQ5_K, 0, 176)),
            msg("tensor 'w': last dimension 128 is not a multiple of the q5_K "
                "block size 256"));
  EXPECT_EQ(openError(oneTensor({48}, kGGMLQ5_1, 0, 48)),
            msg("tensor 'w': last dimension 48 is not a multiple of the q5_1 "
                "block size 32"));
}

TEST_F(GGUFTest, QuantizedDataTruncated) {
  // Two q3_K blocks need 220 bytes; the file ends 20 bytes short.
  EXPECT_EQ(openError(oneTensor({512}, kGGMLQ3_K, 0, 200)),
            msg("tensor 'w': data at offset 0 (220 bytes) extends past the end "
                "of the file (264 bytes, data section at 64)"));
}

TEST_F(GGUFTest, MisalignedOffset) {
  EXPECT_EQ(openError(oneTensor({2}, kGGMLF32, 4, 64)),
            msg("tensor 'w': offset 4 is not a multiple of the alignment 32"));
}

TEST_F(GGUFTest, OffsetPastEnd) {
  EXPECT_EQ(openError(oneTensor({2}, kGGMLF32, 64, 32)),
            msg("tensor 'w': data at offset 64 (8 bytes) extends past the end "
                "of the file (96 bytes, data section at 64)"));
}

TEST_F(GGUFTest, OverlappingTensors) {
  Bytes b;
  ggufHeader(b, 3, 2, 0);
  tensorInfo(b, "a", {16}, kGGMLF32, 0);
  tensorInfo(b, "b", {8}, kGGMLF32, 32);
  b.padTo(32).zeros(64);
  EXPECT_EQ(openError(b), msg("tensor 'b': data at offset 32 overlaps tensor "
                              "'a' at offset 0 (64 bytes)"));
}

TEST_F(GGUFTest, DuplicateTensorNames) {
  Bytes b;
  ggufHeader(b, 3, 2, 0);
  tensorInfo(b, "w", {8}, kGGMLF32, 0);
  tensorInfo(b, "w", {8}, kGGMLF32, 32);
  b.padTo(32).zeros(64);
  EXPECT_EQ(openError(b), msg("tensor 'w': duplicate name"));
}

TEST_F(GGUFTest, ReadMissingTensorAndWrongSize) {
  auto file = GGUFFile::open(writeFile("m.gguf", makeSample().b.data));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  std::vector<float> out(3);
  EXPECT_EQ(errorOf((*file)->readF32("v", out)), msg("tensor 'v': not found"));
  EXPECT_EQ(errorOf((*file)->readF32("w", out)),
            msg("tensor 'w': destination has 3 elements, but the tensor has 2 "
                "(shape [2])"));
}

TEST_F(GGUFTest, WriterRejectsBadTensors) {
  GGUFWriter w;
  std::vector<float> v(33);
  EXPECT_EQ(errorOf(w.addTensor("q", {33}, DType::Q8_0, v)),
            "GGUFWriter: tensor 'q': last dimension 33 is not a multiple of "
            "the q8_0 block size 32");
  EXPECT_EQ(errorOf(w.addTensor("q", {32}, DType::F32, v)),
            "GGUFWriter: tensor 'q': shape [32] has 32 elements, but 33 "
            "values were given");
  std::vector<uint8_t> raw(2);
  EXPECT_EQ(errorOf(w.addRawTensor("u", {2}, DType::U8, raw)),
            "GGUFWriter: tensor 'u': ggml has no type for u8");
}

} // namespace
