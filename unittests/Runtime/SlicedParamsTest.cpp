//===- SlicedParamsTest.cpp - Params that take ranges of their sources ----===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A sliced param (manifest `source_starts`) holds `[start, start + size)` of
// each source along its axis: the loader copies those bytes only (f32, bf16
// and ggml blocks, rows and columns), equal to slicing the whole tensor, and
// refuses a source too short for its range or with another other dimension.
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/CompiledModel.h"
#include "RLX/Weights/WeightSource.h"

#include "gtest/gtest.h"

#include <cstring>
#include <numeric>

using namespace rlx;

namespace {

std::string errorOf(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : "<success>";
}

/// Keeps a copy of the parameter pool of the last run.
class PoolExecutor : public Executor {
public:
  explicit PoolExecutor(std::vector<uint8_t> &pool) : pool(pool) {}
  llvm::Error execute(const Manifest &, llvm::MutableArrayRef<uint8_t>,
                      llvm::ArrayRef<uint8_t> params, bool) override {
    pool.assign(params.begin(), params.end());
    return llvm::Error::success();
  }
  std::string describe() const override { return "pool"; }
  std::vector<uint8_t> &pool;
};

/// A model of one param `p` (`dtype`, `shape`) taking ranges of `sources`.
struct Model {
  std::vector<uint8_t> pool;
  std::optional<CompiledModel> model;
  std::string error;
};

std::unique_ptr<Model> sliced(llvm::StringRef dtype, llvm::StringRef shape,
                              llvm::StringRef sources, llvm::StringRef sizes,
                              llvm::StringRef starts, int axis,
                              llvm::StringRef extra = "") {
  std::string json =
      (R"({"entry": "f", "arena_size": 64, "param_size": 4096,
    "entries": [{"kind": "param", "name": "p", "offset": 0, "dtype": ")" +
       dtype + R"(", "shape": )" + shape + R"(, "sources": )" + sources +
       R"(, "source_sizes": )" + sizes + R"(, "source_starts": )" + starts +
       R"(, "concat_axis": )" + llvm::Twine(axis) + extra + "}]}")
          .str();
  auto result = std::make_unique<Model>();
  auto m = Manifest::fromJSON(json, "m.json");
  if (!m) {
    result->error = llvm::toString(m.takeError());
    return result;
  }
  auto model = CompiledModel::create(
      std::move(*m), std::make_unique<PoolExecutor>(result->pool), 64);
  if (!model) {
    result->error = llvm::toString(model.takeError());
    return result;
  }
  result->model.emplace(std::move(*model));
  return result;
}

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

/// The pool's first `n` floats after a run.
std::vector<float> poolFloats(Model &m, size_t n) {
  EXPECT_EQ(errorOf(m.model->run({}).takeError()), "<success>");
  std::vector<float> out(n);
  std::memcpy(out.data(), m.pool.data(), n * sizeof(float));
  return out;
}

TEST(SlicedParamsTest, ManifestRoundTripsAndRefusesBadStarts) {
  auto m = sliced("f32", "[2, 4]", R"(["a"])", "[2]", "[3]", 0);
  ASSERT_TRUE(m->model) << m->error;
  std::string json = m->model->manifest().toJSON();
  EXPECT_NE(json.find("source_starts"), std::string::npos) << json;
  auto back = Manifest::fromJSON(json, "m.json");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->entries[0].sourceStarts, std::vector<int64_t>{3});

  EXPECT_EQ(sliced("f32", "[2, 4]", R"(["a"])", "[2]", "[-1]", 0)->error,
            "m.json: entry 'p': 'source_starts' must be non-negative "
            "integers");
  EXPECT_EQ(sliced("f32", "[4, 4]", R"(["a", "b"])", "[2, 2]", "[0]", 0)->error,
            "m.json: entry 'p': 'source_starts' has 1 entries for 2 sources");
  EXPECT_EQ(sliced("f32", "[2, 4]", R"(["a"])", "[2]", "7", 0)->error,
            "m.json: entry 'p': 'source_starts' must be an array");
  EXPECT_EQ(
      sliced("f32", "[2, 4]", R"(["a"])", "[2]", "[9223372036854775807]", 0)
          ->error,
      "m.json: entry 'p': a source range overflows");
}

TEST(SlicedParamsTest, StartsNeedSources) {
  EXPECT_EQ(errorOf(Manifest::fromJSON(
                        R"({"entry": "f", "arena_size": 64, "param_size": 64,
    "entries": [{"kind": "param", "name": "p", "offset": 0, "dtype": "f32",
                 "shape": [2], "source_starts": [0]}]})",
                        "m.json")
                        .takeError()),
            "m.json: entry 'p': 'source_starts' needs 'sources'");
}

// Pools are shared only between models that take the same ranges.
TEST(SlicedParamsTest, SharingNeedsTheSameRanges) {
  auto a = sliced("f32", "[2, 3]", R"(["a"])", "[2]", "[0]", 0);
  auto b = sliced("f32", "[2, 3]", R"(["a"])", "[2]", "[2]", 0);
  auto c = sliced("f32", "[2, 3]", R"(["a"])", "[2]", "[0]", 0);
  ASSERT_TRUE(a->model && b->model && c->model);
  EXPECT_EQ(errorOf(b->model->shareParams(*a->model)),
            "cannot share parameters between 'f' and 'f': their parameter "
            "layouts differ");
  EXPECT_EQ(errorOf(c->model->shareParams(*a->model)), "<success>");
}

// Rows [1, 3) of a [4, 3] "a" then rows [0, 1) of a [2, 3] "b".
TEST(SlicedParamsTest, F32RowRangesFromValuesAndSource) {
  std::vector<float> a = iota(12), b = iota(6);
  for (float &x : b)
    x += 100;
  std::vector<float> want = {3, 4, 5, 6, 7, 8, 100, 101, 102};
  {
    auto m = sliced("f32", "[3, 3]", R"(["a", "b"])", "[2, 1]", "[1, 0]", 0);
    ASSERT_TRUE(m->model) << m->error;
    EXPECT_EQ(m->model->weightNames(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(errorOf(m->model->setParam("a", a)), "<success>");
    EXPECT_EQ(m->model->missingParams(), std::vector<std::string>{"b"});
    EXPECT_EQ(errorOf(m->model->setParam("b", b)), "<success>");
    EXPECT_EQ(poolFloats(*m, 9), want);
  }
  {
    auto m = sliced("f32", "[3, 3]", R"(["a", "b"])", "[2, 1]", "[1, 0]", 0);
    TensorMap source;
    ASSERT_EQ(errorOf(source.add("a", {4, 3}, a)), "<success>");
    ASSERT_EQ(errorOf(source.add("b", {2, 3}, b)), "<success>");
    EXPECT_EQ(errorOf(m->model->loadParams(source)), "<success>");
    EXPECT_EQ(poolFloats(*m, 9), want);
  }
}

// Columns [2, 4) of a [3, 5] "a".
TEST(SlicedParamsTest, F32ColumnRange) {
  auto m = sliced("f32", "[3, 2]", R"(["a"])", "[2]", "[2]", 1);
  ASSERT_TRUE(m->model) << m->error;
  TensorMap source;
  ASSERT_EQ(errorOf(source.add("a", {3, 5}, iota(15))), "<success>");
  EXPECT_EQ(errorOf(m->model->loadParams(source)), "<success>");
  EXPECT_EQ(poolFloats(*m, 6), (std::vector<float>{2, 3, 7, 8, 12, 13}));
}

TEST(SlicedParamsTest, BadSourceShapesNameParamAndSource) {
  auto m = sliced("f32", "[2, 3]", R"(["a"])", "[2]", "[3]", 0);
  ASSERT_TRUE(m->model) << m->error;
  TensorMap shortSource("short.safetensors");
  ASSERT_EQ(errorOf(shortSource.add("a", {4, 3}, iota(12))), "<success>");
  EXPECT_EQ(errorOf(m->model->loadParams(shortSource)),
            "short.safetensors: param 'p' (shape [2, 3]) takes [3, 5) along "
            "axis 0 of source 'a', but 'a' has shape [4, 3] (only 4 along the "
            "axis)");
  TensorMap wide("wide.safetensors");
  ASSERT_EQ(errorOf(wide.add("a", {5, 4}, iota(20))), "<success>");
  EXPECT_EQ(
      errorOf(m->model->loadParams(wide)),
      "wide.safetensors: param 'p' (shape [2, 3]) takes [3, 5) along axis "
      "0 of source 'a', whose shape [5, 4] differs in another dimension");
  // Values that are no whole number of rows.
  EXPECT_NE(errorOf(m->model->setParam("a", iota(13)))
                .find("13 values are not a whole number of slices"),
            std::string::npos);
}

// bf16 kept as stored: columns [1, 3) of a [2, 4] tensor, bytes as given.
TEST(SlicedParamsTest, Bf16ColumnRangeKeepsStoredBytes) {
  auto m = sliced("bf16", "[2, 2]", R"(["a"])", "[2]", "[1]", 1);
  ASSERT_TRUE(m->model) << m->error;
  Tensor t(DType::BF16, {2, 4});
  auto bytes = t.mutableBytes();
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(errorOf(m->model->setParam("a", t)), "<success>");
  ASSERT_EQ(errorOf(m->model->run({}).takeError()), "<success>");
  std::vector<uint8_t> want = {2, 3, 4, 5, 10, 11, 12, 13};
  EXPECT_EQ(std::vector<uint8_t>(m->pool.begin(), m->pool.begin() + 8), want);
}

// q8_0 (34-byte blocks of 32): the second block of each of 2 rows, and a
// range that splits a block is refused.
TEST(SlicedParamsTest, Q8_0ColumnRangeCopiesWholeBlocks) {
  auto m = sliced("q8_0", "[2, 32]", R"(["a"])", "[32]", "[32]", 1);
  ASSERT_TRUE(m->model) << m->error;
  Tensor t(DType::Q8_0, {2, 64});
  auto bytes = t.mutableBytes();
  ASSERT_EQ(bytes.size(), 4u * 34);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<uint8_t>(i % 251);
  // Keep the f16 scales finite.
  for (size_t block = 0; block < 4; ++block)
    bytes[block * 34 + 1] = 0x3c;
  EXPECT_EQ(errorOf(m->model->setParam("a", t)), "<success>");
  ASSERT_EQ(errorOf(m->model->run({}).takeError()), "<success>");
  std::vector<uint8_t> want(bytes.begin() + 34, bytes.begin() + 68);
  want.insert(want.end(), bytes.begin() + 102, bytes.begin() + 136);
  EXPECT_EQ(std::vector<uint8_t>(m->pool.begin(), m->pool.begin() + 68), want);

  auto half = sliced("q8_0", "[2, 32]", R"(["a"])", "[32]", "[16]", 1);
  ASSERT_TRUE(half->model) << half->error;
  EXPECT_NE(errorOf(half->model->setParam("a", t))
                .find("must start and end on a block boundary (32 elements)"),
            std::string::npos);
}

} // namespace

namespace {

// Converted on the way: an f32 param from bf16 columns [1, 3) of [2, 4].
TEST(SlicedParamsTest, F32ParamFromBf16Range) {
  auto m = sliced("f32", "[2, 2]", R"(["a"])", "[2]", "[1]", 1);
  ASSERT_TRUE(m->model) << m->error;
  Tensor t(DType::BF16, {2, 4});
  auto bytes = t.mutableBytes();
  // bf16 of 0..7: the high half of the f32 bits.
  for (int i = 0; i < 8; ++i) {
    float f = static_cast<float>(i);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint16_t hi = static_cast<uint16_t>(bits >> 16);
    std::memcpy(bytes.data() + 2 * i, &hi, 2);
  }
  EXPECT_EQ(errorOf(m->model->setParam("a", t)), "<success>");
  EXPECT_EQ(poolFloats(*m, 4), (std::vector<float>{1, 2, 5, 6}));
}

// Packed nk16 ([16, 2], element (r, c) at (r / 16 * k + c) * 16 + r % 16):
// columns [1, 3) of a [16, 5] source, packed whole.
TEST(SlicedParamsTest, Nk16ColumnRangePacksWhole) {
  auto m = sliced("f32", "[16, 2]", R"(["a"])", "[2]", "[1]", 1,
                  R"(, "layout": "nk16")");
  ASSERT_TRUE(m->model) << m->error;
  EXPECT_EQ(errorOf(m->model->setParam("a", iota(80))), "<success>");
  std::vector<float> got = poolFloats(*m, 32), want(32);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 2; ++c)
      want[c * 16 + r] = static_cast<float>(r * 5 + 1 + c);
  EXPECT_EQ(got, want);
}

} // namespace
