//===- NpyTest.cpp - .npy reader/writer tests -----------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/Npy.h"
#include "TestUtil.h"

#include "gtest/gtest.h"

using namespace rlx;
using namespace rlx::test;
using llvm::StringRef;

namespace {

class NpyTest : public TempDirTest {
protected:
  /// A .npy file of the given version, header text and data.
  std::string writeNpyBytes(StringRef header, const std::vector<uint8_t> &data,
                            uint8_t major = 1) {
    Bytes b;
    b.raw("\x93NUMPY").u8(major).u8(0);
    if (major == 1)
      b.u16(header.size());
    else
      b.u32(header.size());
    b.raw(header).raw(data);
    return writeFile("a.npy", b.data);
  }
  std::string readError(StringRef header, const std::vector<uint8_t> &data) {
    return errorOf(readNpy(writeNpyBytes(header, data)));
  }
  std::string msg(StringRef rest) { return path("a.npy") + ": " + rest.str(); }
};

TEST_F(NpyTest, RoundTripF32) {
  std::vector<float> v = pseudoRandom(6, 4);
  ASSERT_EQ(errorOf(writeNpy(path("a.npy"), {2, 3}, v)), "<success>");
  // The header is what numpy writes, padded to a multiple of 64 bytes.
  std::vector<uint8_t> bytes = readFile("a.npy");
  ASSERT_EQ(bytes.size(), 128u + 24);
  StringRef text(reinterpret_cast<const char *>(bytes.data()), 128);
  EXPECT_TRUE(text.starts_with(
      StringRef("\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': "
                "False, 'shape': (2, 3), }",
                69)));
  EXPECT_EQ(text.back(), '\n');

  auto arr = readNpy(path("a.npy"));
  ASSERT_TRUE(bool(arr)) << errorOf(std::move(arr));
  EXPECT_EQ(arr->dtype, DType::F32);
  EXPECT_EQ(arr->shape, (llvm::SmallVector<int64_t>{2, 3}));
  EXPECT_EQ(arr->numElements(), 6u);
  EXPECT_EQ(*arr->toF32(), v);
}

TEST_F(NpyTest, RoundTripI32I64AndShapes) {
  std::vector<int32_t> i32 = {-1, 2, 2147483647};
  ASSERT_EQ(errorOf(writeNpy(path("a.npy"), {3}, i32)), "<success>");
  auto a = readNpy(path("a.npy"));
  ASSERT_TRUE(bool(a)) << errorOf(std::move(a));
  EXPECT_EQ(a->dtype, DType::I32);
  EXPECT_EQ(a->shape, (llvm::SmallVector<int64_t>{3}));
  ASSERT_EQ(a->data.size(), 12u);
  int32_t back[3];
  std::memcpy(back, a->data.data(), 12);
  EXPECT_EQ(std::vector<int32_t>(back, back + 3), i32);

  std::vector<int64_t> i64 = {int64_t(1) << 50};
  ASSERT_EQ(errorOf(writeNpy(path("a.npy"), {}, i64)), "<success>");
  auto b = readNpy(path("a.npy"));
  ASSERT_TRUE(bool(b)) << errorOf(std::move(b));
  EXPECT_EQ(b->dtype, DType::I64);
  EXPECT_TRUE(b->shape.empty()); // A 0-d array.
  int64_t scalar;
  std::memcpy(&scalar, b->data.data(), 8);
  EXPECT_EQ(scalar, int64_t(1) << 50);

  std::vector<float> empty;
  ASSERT_EQ(errorOf(writeNpy(path("a.npy"), {0, 4}, empty)), "<success>");
  auto c = readNpy(path("a.npy"));
  ASSERT_TRUE(bool(c)) << errorOf(std::move(c));
  EXPECT_EQ(c->shape, (llvm::SmallVector<int64_t>{0, 4}));
  EXPECT_TRUE(c->data.empty());
}

TEST_F(NpyTest, ReadsOtherDTypesAndVersions) {
  auto f16 = readNpy(writeNpyBytes(
      "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }\n",
      {0x00, 0x3c, 0x00, 0xc0}, /*major=*/2));
  ASSERT_TRUE(bool(f16)) << errorOf(std::move(f16));
  EXPECT_EQ(*f16->toF32(), (std::vector<float>{1.0f, -2.0f}));

  auto b1 = readNpy(writeNpyBytes(
      "{\"descr\": \"|b1\", \"shape\": (3,), \"fortran_order\": False}",
      {1, 0, 1}, /*major=*/3));
  ASSERT_TRUE(bool(b1)) << errorOf(std::move(b1));
  EXPECT_EQ(b1->dtype, DType::Bool);
  EXPECT_EQ(*b1->toF32(), (std::vector<float>{1, 0, 1}));

  auto u1 = readNpy(writeNpyBytes(
      "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 2), }", {255, 3}));
  ASSERT_TRUE(bool(u1)) << errorOf(std::move(u1));
  EXPECT_EQ(u1->dtype, DType::U8);
  EXPECT_EQ(*u1->toF32(), (std::vector<float>{255, 3}));
}

TEST_F(NpyTest, WrongMagic) {
  writeFile("a.npy", "\x93NUMPX\x01\x00");
  EXPECT_EQ(errorOf(readNpy(path("a.npy"))),
            msg("not a .npy file (bad magic)"));
}

TEST_F(NpyTest, UnsupportedVersion) {
  EXPECT_EQ(errorOf(readNpy(writeNpyBytes("{}", {}, /*major=*/4))),
            msg("unsupported .npy version 4.0"));
}

TEST_F(NpyTest, HeaderLengthPastEnd) {
  Bytes b;
  b.raw("\x93NUMPY").u8(1).u8(0).u16(100).raw("{'descr'");
  EXPECT_EQ(errorOf(readNpy(writeFile("a.npy", b.data))),
            msg("header length 100 exceeds the 8 bytes after the preamble"));
}

TEST_F(NpyTest, BadHeader) {
  EXPECT_EQ(readError("descr: <f4", {}), msg("header: expected '{'"));
}

TEST_F(NpyTest, BadShape) {
  EXPECT_EQ(readError("{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (2, x), }",
                      {}),
            msg("header: 'shape' element is not a non-negative integer at "
                "'x), }'"));
}

TEST_F(NpyTest, UnknownKey) {
  EXPECT_EQ(readError("{'descr': '<f4', 'order': 'C'}", {}),
            msg("header: unknown key 'order'"));
}

TEST_F(NpyTest, MissingShape) {
  EXPECT_EQ(readError("{'descr': '<f4', 'fortran_order': False}", {}),
            msg("header: missing 'shape'"));
}

TEST_F(NpyTest, FortranOrder) {
  EXPECT_EQ(readError("{'descr': '<f4', 'fortran_order': True, "
                      "'shape': (2, 2), }",
                      std::vector<uint8_t>(16)),
            msg("header: Fortran order is not supported"));
}

TEST_F(NpyTest, BigEndianDescr) {
  EXPECT_EQ(readError("{'descr': '>f4', 'fortran_order': False, "
                      "'shape': (1,), }",
                      std::vector<uint8_t>(4)),
            msg("header: unsupported descr '>f4'"));
}

TEST_F(NpyTest, DataTooShort) {
  EXPECT_EQ(readError("{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (2, 3), }",
                      std::vector<uint8_t>(20)),
            msg("data has 20 bytes, but f32 shape [2, 3] needs 24"));
}

TEST_F(NpyTest, DataTooLong) {
  EXPECT_EQ(readError("{'descr': '<i8', 'fortran_order': False, "
                      "'shape': (1,), }",
                      std::vector<uint8_t>(9)),
            msg("data has 9 bytes, but i64 shape [1] needs 8"));
}

TEST_F(NpyTest, ShapeOverflow) {
  EXPECT_EQ(readError("{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (4294967296, 4294967296), }",
                      {}),
            msg("header: element count of shape [4294967296, 4294967296] "
                "overflows 64 bits"));
}

TEST_F(NpyTest, RoundTripEveryPlainDType) {
  // Each type's storage bytes, written with its descr and read back as they
  // are, in shapes [2, 3], [] and [0, 4].
  const std::pair<DType, StringRef> cases[] = {
      {DType::Bool, "|b1"}, {DType::I8, "|i1"},   {DType::I16, "<i2"},
      {DType::I32, "<i4"},  {DType::I64, "<i8"},  {DType::U8, "|u1"},
      {DType::F16, "<f2"},  {DType::BF16, "|V2"}, {DType::F32, "<f4"},
      {DType::F64, "<f8"}};
  const llvm::SmallVector<int64_t> shapes[] = {{2, 3}, {}, {0, 4}};
  for (auto [dtype, descr] : cases) {
    EXPECT_EQ(npyDescrOf(dtype), std::optional<StringRef>(descr));
    EXPECT_EQ(dtypeOfNpyDescr(descr), std::optional<DType>(dtype));
    for (const auto &shape : shapes) {
      uint64_t size = *storageBytes(dtype, shape);
      std::vector<uint8_t> bytes(size);
      for (size_t i = 0; i < size; ++i)
        bytes[i] = dtype == DType::Bool ? i % 2 : uint8_t(i * 37 + 11);
      ASSERT_EQ(errorOf(writeNpy(path("a.npy"), dtype, shape, bytes)),
                "<success>")
          << dtypeName(dtype).str();
      std::vector<uint8_t> file = readFile("a.npy");
      StringRef text(reinterpret_cast<const char *>(file.data()), file.size());
      EXPECT_TRUE(text.contains("'descr': '" + descr.str() + "'"));
      auto arr = readNpy(path("a.npy"));
      ASSERT_TRUE(bool(arr)) << errorOf(std::move(arr));
      EXPECT_EQ(arr->dtype, dtype);
      EXPECT_EQ(arr->shape, shape);
      EXPECT_EQ(arr->data, bytes) << dtypeName(dtype).str();
    }
  }
}

TEST_F(NpyTest, ByteOrderOfSingleBytesAndVoid) {
  EXPECT_EQ(dtypeOfNpyDescr("<b1"), std::optional<DType>(DType::Bool));
  EXPECT_EQ(dtypeOfNpyDescr("<V2"), std::optional<DType>(DType::BF16));
  EXPECT_EQ(dtypeOfNpyDescr("=i1"), std::optional<DType>(DType::I8));
  EXPECT_EQ(dtypeOfNpyDescr(">i2"), std::nullopt);
  EXPECT_EQ(dtypeOfNpyDescr("<u2"), std::nullopt);
  EXPECT_EQ(dtypeOfNpyDescr("|V4"), std::nullopt);
  EXPECT_EQ(npyDescrOf(DType::Q8_0), std::nullopt);
}

TEST_F(NpyTest, WriteBytesMismatchAndQuantized) {
  std::vector<uint8_t> bytes(5);
  EXPECT_EQ(errorOf(writeNpy(path("a.npy"), DType::F16, {3}, bytes)),
            msg("f16 shape [3] needs 6 bytes, but 5 were given"));
  EXPECT_EQ(errorOf(writeNpy(path("a.npy"), DType::Q8_0, {32}, bytes)),
            msg("no .npy type for q8_0[32]"));
}

TEST_F(NpyTest, WriteShapeMismatch) {
  std::vector<float> v(5);
  EXPECT_EQ(errorOf(writeNpy(path("a.npy"), {2, 3}, v)),
            msg("shape [2, 3] has 6 elements, but 5 values were given"));
}

} // namespace
