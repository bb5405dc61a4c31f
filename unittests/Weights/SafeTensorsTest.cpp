//===- SafeTensorsTest.cpp - safetensors reader/writer tests --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/SafeTensors.h"
#include "TestUtil.h"

#include "gtest/gtest.h"

using namespace rlx;
using namespace rlx::test;
using llvm::StringRef;

namespace {

class SafeTensorsTest : public TempDirTest {
protected:
  /// Writes a file made of the 8-byte length, `header`, and `data`.
  std::string writeRaw(StringRef header, const std::vector<uint8_t> &data,
                       StringRef name = "m.safetensors") {
    Bytes b;
    b.u64(header.size()).raw(header).raw(data);
    return writeFile(name, b.data);
  }

  /// Opens a hand-made file and returns the error message.
  std::string openError(StringRef header, const std::vector<uint8_t> &data) {
    return errorOf(SafeTensorsFile::open(writeRaw(header, data)));
  }

  /// "<path of m.safetensors>: <rest>".
  std::string msg(StringRef rest) {
    return path("m.safetensors") + ": " + rest.str();
  }

  /// A valid two-tensor file: a = f32 [2, 2] at [0, 16], b = f32 [3] at
  /// [16, 28].
  std::string writeTwoTensors() {
    std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7};
    EXPECT_EQ(errorOf(SafeTensorsFile::write(
                  path("m.safetensors"),
                  {{"a", DType::F32, {2, 2}, a}, {"b", DType::F32, {3}, b}})),
              "<success>");
    return path("m.safetensors");
  }
};

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST_F(SafeTensorsTest, RoundTripF32F16BF16) {
  std::vector<float> w = pseudoRandom(6, 1), h = pseudoRandom(5, 2),
                     bf = pseudoRandom(4, 3);
  std::map<std::string, std::string> meta = {{"format", "pt"},
                                             {"note", "x\"y"}};
  ASSERT_EQ(errorOf(SafeTensorsFile::write(path("m.safetensors"),
                                           {{"w", DType::F32, {2, 3}, w},
                                            {"h", DType::F16, {5}, h},
                                            {"bf", DType::BF16, {2, 2}, bf}},
                                           meta)),
            "<success>");
  auto file = SafeTensorsFile::open(path("m.safetensors"));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  SafeTensorsFile &f = **file;
  EXPECT_EQ(f.description(), path("m.safetensors"));
  EXPECT_EQ(f.names(), (std::vector<std::string>{"w", "h", "bf"}));
  EXPECT_EQ(f.metadata(), meta);
  EXPECT_EQ(f.dataOffset() % 8, 0u);

  const TensorInfo *wi = f.lookup("w");
  ASSERT_TRUE(wi);
  EXPECT_EQ(wi->dtype, DType::F32);
  EXPECT_EQ(wi->shape, (llvm::SmallVector<int64_t>{2, 3}));
  EXPECT_EQ(wi->offset, f.dataOffset());
  EXPECT_EQ(wi->byteSize, 24u);
  EXPECT_EQ(*f.loadF32("w"), w);

  // f16 and bf16 hold the round-to-nearest-even encodings.
  std::vector<float> hWant, bfWant;
  for (float x : h)
    hWant.push_back(f16ToF32(f32ToF16(x)));
  for (float x : bf)
    bfWant.push_back(bf16ToF32(f32ToBF16(x)));
  EXPECT_EQ(*f.loadF32("h"), hWant);
  EXPECT_EQ(*f.loadF32("bf"), bfWant);
  EXPECT_EQ(f.lookup("h")->dtype, DType::F16);
  EXPECT_EQ(f.lookup("bf")->dtype, DType::BF16);
  EXPECT_EQ(f.lookup("bf")->shape, (llvm::SmallVector<int64_t>{2, 2}));
  auto raw = f.rawBytes("h");
  ASSERT_TRUE(bool(raw));
  ASSERT_EQ(raw->size(), 10u);
  EXPECT_EQ((*raw)[2] | (*raw)[3] << 8, f32ToF16(h[1]));

  // viewF32 is zero-copy for the aligned f32 tensor.
  auto view = f.viewF32("w");
  ASSERT_TRUE(bool(view)) << errorOf(std::move(view));
  EXPECT_EQ(reinterpret_cast<const void *>(view->data()),
            reinterpret_cast<const void *>(f.rawBytes("w")->data()));
  EXPECT_EQ(view->vec(), w);
}

TEST_F(SafeTensorsTest, ZeroSizedTensorIsValid) {
  std::string p =
      writeRaw(R"({"e":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]},)"
               R"("w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
               {0, 0, 0x80, 0x3f});
  auto file = SafeTensorsFile::open(p);
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  std::vector<float> empty;
  EXPECT_EQ(errorOf((*file)->readF32("e", empty)), "<success>");
  EXPECT_EQ(*(*file)->loadF32("w"), std::vector<float>{1.0f});
}

TEST_F(SafeTensorsTest, IntegerBoolF64DTypes) {
  Bytes data;
  data.i32(-2).i32(40000);                     // I32 [2] at [0, 8]
  data.le<int64_t>(-5).le<int64_t>(1ll << 40); // I64 [2] at [8, 24]
  data.le<double>(0.1);                        // F64 [1] at [24, 32]
  data.u8(200).u8(7);                          // U8 [2] at [32, 34]
  data.u8(0).u8(1);                            // BOOL [2] at [34, 36]
  data.u8(0xff);                               // I8 [1] at [36, 37]
  std::string p =
      writeRaw(R"({"i32":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},)"
               R"("i64":{"dtype":"I64","shape":[2],"data_offsets":[8,24]},)"
               R"("f64":{"dtype":"F64","shape":[],"data_offsets":[24,32]},)"
               R"("u8":{"dtype":"U8","shape":[2],"data_offsets":[32,34]},)"
               R"("b":{"dtype":"BOOL","shape":[2],"data_offsets":[34,36]},)"
               R"("i8":{"dtype":"I8","shape":[1],"data_offsets":[36,37]}})",
               data.data);
  auto file = SafeTensorsFile::open(p);
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  SafeTensorsFile &f = **file;
  EXPECT_EQ(f.names(),
            (std::vector<std::string>{"i32", "i64", "f64", "u8", "b", "i8"}));
  EXPECT_EQ(*f.loadF32("i32"), (std::vector<float>{-2, 40000}));
  EXPECT_EQ(*f.loadF32("i64"), (std::vector<float>{-5, 1099511627776.0f}));
  EXPECT_EQ(*f.loadF32("f64"), std::vector<float>{0.1f});
  EXPECT_EQ(*f.loadF32("u8"), (std::vector<float>{200, 7}));
  EXPECT_EQ(*f.loadF32("b"), (std::vector<float>{0, 1}));
  EXPECT_EQ(*f.loadF32("i8"), std::vector<float>{-1});
  EXPECT_EQ(f.lookup("b")->dtype, DType::Bool);
  EXPECT_EQ(f.lookup("f64")->shape.size(), 0u);
}

//===----------------------------------------------------------------------===//
// Model directories
//===----------------------------------------------------------------------===//

TEST_F(SafeTensorsTest, ModelDirSingleFile) {
  std::vector<float> w = {1, 2};
  ASSERT_EQ(errorOf(SafeTensorsFile::write(path("model.safetensors"),
                                           {{"w", DType::F32, {2}, w}})),
            "<success>");
  auto src = SafeTensorsFile::openModelDir(dir);
  ASSERT_TRUE(bool(src)) << errorOf(std::move(src));
  EXPECT_EQ(*(*src)->loadF32("w"), w);
}

TEST_F(SafeTensorsTest, ModelDirSharded) {
  std::vector<float> a = {1, 2, 3}, b = {4, 5}, c = {6};
  ASSERT_EQ(errorOf(SafeTensorsFile::write(
                path("model-00001-of-00002.safetensors"),
                {{"a", DType::F32, {3}, a}, {"b", DType::F16, {2}, b}})),
            "<success>");
  ASSERT_EQ(
      errorOf(SafeTensorsFile::write(path("model-00002-of-00002.safetensors"),
                                     {{"c", DType::F32, {1}, c}})),
      "<success>");
  writeFile("model.safetensors.index.json",
            R"({"metadata": {"total_size": 18}, "weight_map": {)"
            R"("c": "model-00002-of-00002.safetensors",)"
            R"("a": "model-00001-of-00002.safetensors",)"
            R"("b": "model-00001-of-00002.safetensors"}})");
  auto src = SafeTensorsFile::openModelDir(dir);
  ASSERT_TRUE(bool(src)) << errorOf(std::move(src));
  WeightSource &s = **src;
  EXPECT_EQ(s.description(), StringRef(dir));
  EXPECT_EQ(s.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(*s.loadF32("a"), a);
  EXPECT_EQ(*s.loadF32("b"), b);
  EXPECT_EQ(*s.loadF32("c"), c);
  EXPECT_EQ(s.lookup("b")->dtype, DType::F16);
  EXPECT_EQ(errorOf(s.loadF32("d")),
            dir.str().str() + ": tensor 'd': not found");
}

TEST_F(SafeTensorsTest, ModelDirShardMissing) {
  writeFile("model.safetensors.index.json",
            R"({"weight_map": {"a": "model-00001-of-00001.safetensors"}})");
  EXPECT_EQ(errorOf(SafeTensorsFile::openModelDir(dir)),
            path("model-00001-of-00001.safetensors") +
                ": cannot open: No such file or directory");
}

TEST_F(SafeTensorsTest, ModelDirTensorNotInShard) {
  std::vector<float> a = {1};
  ASSERT_EQ(errorOf(SafeTensorsFile::write(path("s1.safetensors"),
                                           {{"a", DType::F32, {1}, a}})),
            "<success>");
  writeFile(
      "model.safetensors.index.json",
      R"({"weight_map": {"a": "s1.safetensors", "z": "s1.safetensors"}})");
  EXPECT_EQ(errorOf(SafeTensorsFile::openModelDir(dir)),
            path("model.safetensors.index.json") +
                ": weight_map: tensor 'z': not found in shard "
                "'s1.safetensors'");
}

TEST_F(SafeTensorsTest, ModelDirTensorNotListed) {
  std::vector<float> a = {1};
  ASSERT_EQ(errorOf(SafeTensorsFile::write(
                path("s1.safetensors"),
                {{"a", DType::F32, {1}, a}, {"extra", DType::F32, {1}, a}})),
            "<success>");
  writeFile("model.safetensors.index.json",
            R"({"weight_map": {"a": "s1.safetensors"}})");
  EXPECT_EQ(errorOf(SafeTensorsFile::openModelDir(dir)),
            path("model.safetensors.index.json") +
                ": tensor 'extra' in shard 's1.safetensors' is not listed in "
                "weight_map");
}

TEST_F(SafeTensorsTest, ModelDirShardNameWithPath) {
  writeFile("model.safetensors.index.json",
            R"({"weight_map": {"a": "../elsewhere.safetensors"}})");
  EXPECT_EQ(errorOf(SafeTensorsFile::openModelDir(dir)),
            path("model.safetensors.index.json") +
                ": weight_map: tensor 'a': shard '../elsewhere.safetensors' "
                "is not a plain file name");
}

TEST_F(SafeTensorsTest, ModelDirMissingWeightMap) {
  writeFile("model.safetensors.index.json", R"({"metadata": {}})");
  EXPECT_EQ(errorOf(SafeTensorsFile::openModelDir(dir)),
            path("model.safetensors.index.json") + ": missing 'weight_map'");
}

TEST_F(SafeTensorsTest, ModelDirEmpty) {
  EXPECT_EQ(errorOf(SafeTensorsFile::openModelDir(dir)),
            dir.str().str() + ": neither model.safetensors nor "
                              "model.safetensors.index.json found");
}

//===----------------------------------------------------------------------===//
// Bad inputs
//===----------------------------------------------------------------------===//

TEST_F(SafeTensorsTest, MissingFile) {
  EXPECT_EQ(errorOf(SafeTensorsFile::open(path("m.safetensors"))),
            msg("cannot open: No such file or directory"));
}

TEST_F(SafeTensorsTest, TruncatedInsideLength) {
  writeTwoTensors();
  std::vector<uint8_t> bytes = readFile("m.safetensors");
  bytes.resize(5);
  EXPECT_EQ(errorOf(SafeTensorsFile::open(writeFile("m.safetensors", bytes))),
            msg("header: file has 5 bytes, too few for the 8-byte header "
                "length"));
}

TEST_F(SafeTensorsTest, TruncatedInsideHeader) {
  writeTwoTensors();
  std::vector<uint8_t> bytes = readFile("m.safetensors");
  uint64_t headerLen;
  std::memcpy(&headerLen, bytes.data(), 8);
  bytes.resize(8 + headerLen / 2);
  EXPECT_EQ(errorOf(SafeTensorsFile::open(writeFile("m.safetensors", bytes))),
            msg("header: header length " + std::to_string(headerLen) +
                " exceeds the " + std::to_string(headerLen / 2) +
                " bytes after the length field"));
}

TEST_F(SafeTensorsTest, TruncatedInsideData) {
  writeTwoTensors();
  std::vector<uint8_t> bytes = readFile("m.safetensors");
  bytes.resize(bytes.size() - 4);
  EXPECT_EQ(errorOf(SafeTensorsFile::open(writeFile("m.safetensors", bytes))),
            msg("tensor 'b': data_offsets [16, 28] extend past the end of the "
                "data section (24 bytes)"));
}

TEST_F(SafeTensorsTest, HeaderLengthLargerThanFile) {
  Bytes b;
  b.u64(uint64_t(1) << 40).raw("{}");
  EXPECT_EQ(errorOf(SafeTensorsFile::open(writeFile("m.safetensors", b.data))),
            msg("header: header length 1099511627776 exceeds the 2 bytes "
                "after the length field"));
}

TEST_F(SafeTensorsTest, HeaderNotJSON) {
  EXPECT_EQ(openError(R"({"w": {"dtype": )", {}),
            msg("header: invalid JSON: [1:16, byte=16]: Unexpected EOF"));
}

TEST_F(SafeTensorsTest, HeaderNotObject) {
  EXPECT_EQ(openError("[1, 2]", {}),
            msg("header: expected a JSON object, found an array"));
}

TEST_F(SafeTensorsTest, EntryNotObject) {
  EXPECT_EQ(openError(R"({"w": 3})", {}),
            msg("tensor 'w': entry is a number, expected an object"));
}

TEST_F(SafeTensorsTest, MissingDType) {
  EXPECT_EQ(openError(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})",
                      {0, 0, 0, 0}),
            msg("tensor 'w': missing 'dtype'"));
}

TEST_F(SafeTensorsTest, DTypeNotString) {
  EXPECT_EQ(
      openError(R"({"w": {"dtype": 5, "shape": [1], "data_offsets": [0, 4]}})",
                {0, 0, 0, 0}),
      msg("tensor 'w': 'dtype' is a number, expected a string"));
}

TEST_F(SafeTensorsTest, UnknownDType) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F17", "shape": [1], )"
                      R"("data_offsets": [0, 4]}})",
                      {0, 0, 0, 0}),
            msg("tensor 'w': unknown dtype 'F17'"));
}

TEST_F(SafeTensorsTest, UnsupportedDType) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "I16", "shape": [2], )"
                      R"("data_offsets": [0, 4]}})",
                      {0, 0, 0, 0}),
            msg("tensor 'w': unsupported dtype 'I16'"));
}

TEST_F(SafeTensorsTest, MissingShape) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})",
                      {0, 0, 0, 0}),
            msg("tensor 'w': missing 'shape'"));
}

TEST_F(SafeTensorsTest, ShapeNotArray) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", "shape": "2x2", )"
                      R"("data_offsets": [0, 16]}})",
                      {}),
            msg("tensor 'w': 'shape' is a string, expected an array"));
}

TEST_F(SafeTensorsTest, ShapeElementNotInteger) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", "shape": [2, 1.5], )"
                      R"("data_offsets": [0, 12]}})",
                      {}),
            msg("tensor 'w': shape[1] is not an integer"));
}

TEST_F(SafeTensorsTest, NegativeDimension) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", "shape": [2, -1], )"
                      R"("data_offsets": [0, 0]}})",
                      {}),
            msg("tensor 'w': shape[1] is negative (-1)"));
}

TEST_F(SafeTensorsTest, AbsurdDimension) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", )"
                      R"("shape": [18446744073709551615], )"
                      R"("data_offsets": [0, 0]}})",
                      {}),
            msg("tensor 'w': shape[0] = 18446744073709551615 is too large"));
}

TEST_F(SafeTensorsTest, ElementCountOverflow) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", )"
                      R"("shape": [4294967296, 4294967296], )"
                      R"("data_offsets": [0, 0]}})",
                      {}),
            msg("tensor 'w': element count of shape [4294967296, 4294967296] "
                "overflows 64 bits"));
}

TEST_F(SafeTensorsTest, ByteSizeOverflow) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", )"
                      R"("shape": [4611686018427387904], )"
                      R"("data_offsets": [0, 0]}})",
                      {}),
            msg("tensor 'w': byte size of 4611686018427387904 f32 elements "
                "overflows 64 bits"));
}

TEST_F(SafeTensorsTest, MissingDataOffsets) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", "shape": [1]}})", {}),
            msg("tensor 'w': missing 'data_offsets'"));
}

TEST_F(SafeTensorsTest, DataOffsetsWrongLength) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", "shape": [1], )"
                      R"("data_offsets": [0]}})",
                      {0, 0, 0, 0}),
            msg("tensor 'w': 'data_offsets' has 1 elements, expected 2"));
}

TEST_F(SafeTensorsTest, DataOffsetsEndBeforeBegin) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", "shape": [1], )"
                      R"("data_offsets": [8, 4]}})",
                      std::vector<uint8_t>(8)),
            msg("tensor 'w': data_offsets [8, 4]: end is before begin"));
}

TEST_F(SafeTensorsTest, DataOffsetsPastEnd) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", "shape": [4], )"
                      R"("data_offsets": [0, 16]}})",
                      std::vector<uint8_t>(8)),
            msg("tensor 'w': data_offsets [0, 16] extend past the end of the "
                "data section (8 bytes)"));
}

TEST_F(SafeTensorsTest, ByteSizeMismatch) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", "shape": [3], )"
                      R"("data_offsets": [0, 8]}})",
                      std::vector<uint8_t>(8)),
            msg("tensor 'w': data_offsets [0, 8] hold 8 bytes, but f32 shape "
                "[3] needs 12"));
}

TEST_F(SafeTensorsTest, OverlappingTensors) {
  EXPECT_EQ(openError(R"({"a": {"dtype": "F32", "shape": [2], )"
                      R"("data_offsets": [0, 8]}, )"
                      R"("b": {"dtype": "F32", "shape": [2], )"
                      R"("data_offsets": [4, 12]}})",
                      std::vector<uint8_t>(12)),
            msg("tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]"));
}

TEST_F(SafeTensorsTest, DuplicateNames) {
  EXPECT_EQ(openError(R"({"w": {"dtype": "F32", "shape": [1], )"
                      R"("data_offsets": [0, 4]}, )"
                      R"("w": {"dtype": "F32", "shape": [1], )"
                      R"("data_offsets": [4, 8]}})",
                      std::vector<uint8_t>(8)),
            msg("tensor 'w': duplicate name"));
}

TEST_F(SafeTensorsTest, MetadataNotObject) {
  EXPECT_EQ(openError(R"({"__metadata__": ["pt"]})", {}),
            msg("header: '__metadata__' is an array, expected an object"));
}

TEST_F(SafeTensorsTest, MetadataValueNotString) {
  EXPECT_EQ(openError(R"({"__metadata__": {"format": 1}})", {}),
            msg("header: '__metadata__' value of 'format' is a number, "
                "expected a string"));
}

TEST_F(SafeTensorsTest, ReadMissingTensor) {
  auto file = SafeTensorsFile::open(writeTwoTensors());
  ASSERT_TRUE(bool(file));
  std::vector<float> out(4);
  EXPECT_EQ(errorOf((*file)->readF32("model.nope", out)),
            msg("tensor 'model.nope': not found"));
}

TEST_F(SafeTensorsTest, ReadDestinationSizeMismatch) {
  auto file = SafeTensorsFile::open(writeTwoTensors());
  ASSERT_TRUE(bool(file));
  std::vector<float> out(3);
  EXPECT_EQ(errorOf((*file)->readF32("a", out)),
            msg("tensor 'a': destination has 3 elements, but the tensor has 4 "
                "(shape [2, 2])"));
}

TEST_F(SafeTensorsTest, ViewNeedsF32) {
  std::vector<float> h = {1, 2};
  ASSERT_EQ(errorOf(SafeTensorsFile::write(path("m.safetensors"),
                                           {{"h", DType::F16, {2}, h}})),
            "<success>");
  auto file = SafeTensorsFile::open(path("m.safetensors"));
  ASSERT_TRUE(bool(file));
  EXPECT_EQ(errorOf((*file)->viewF32("h")),
            msg("tensor 'h': cannot view as f32 without a copy: stored as "
                "f16"));
}

TEST_F(SafeTensorsTest, ViewNeedsAlignment) {
  // Pad the header so the data section starts 8-byte aligned; 'f' then
  // sits one byte past that.
  std::string header =
      R"({"u":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
      R"("f":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  size_t fOffset = 8 + header.size() + 1;
  std::vector<uint8_t> data = {9, 0, 0, 0x80, 0x3f};
  auto file = SafeTensorsFile::open(writeRaw(header, data));
  ASSERT_TRUE(bool(file)) << errorOf(std::move(file));
  EXPECT_EQ(errorOf((*file)->viewF32("f")),
            msg("tensor 'f': cannot view as f32 without a copy: data at file "
                "offset " +
                std::to_string(fOffset) + " is not 4-byte aligned"));
  EXPECT_EQ(*(*file)->loadF32("f"), std::vector<float>{1.0f});
}

TEST_F(SafeTensorsTest, WriteRejectsUnsupportedDType) {
  std::vector<float> v(32);
  EXPECT_EQ(errorOf(SafeTensorsFile::write(path("m.safetensors"),
                                           {{"q", DType::Q8_0, {32}, v}})),
            msg("tensor 'q': cannot write dtype q8_0 (only f32, f16 and "
                "bf16)"));
}

} // namespace
