//===- ManifestTest.cpp - The runtime's manifest and tensors --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/CompiledModel.h"
#include "RLX/Weights/WeightSource.h"
#include "gtest/gtest.h"
#include <cstring>

using namespace rlx;

namespace {

Manifest sample() {
  Manifest m;
  m.entry = "forward";
  m.arenaSize = 128;
  m.paramSize = 128;
  ManifestEntry in;
  in.kind = IOKind::Input;
  in.name = "ids";
  in.dtype = DType::I32;
  in.shape = {1, 4};
  in.indexBound = 10;
  ManifestEntry p;
  p.kind = IOKind::Param;
  p.name = "a+b";
  p.offset = 0;
  p.shape = {3, 2};
  p.sources = {"a", "b"};
  p.sourceSizes = {1, 2};
  p.concatAxis = 0;
  ManifestEntry out;
  out.kind = IOKind::Output;
  out.name = "y";
  out.offset = 64;
  out.shape = {3, 2};
  m.entries = {in, p, out};
  return m;
}

/// Copies the derived param into the output: enough to observe what the
/// runtime assembled.
void copyParam(void *arena, void *params) {
  struct Desc {
    void *allocated, *aligned;
    int64_t offset, size, stride;
  };
  auto *a = static_cast<Desc *>(arena);
  auto *p = static_cast<Desc *>(params);
  std::memcpy(static_cast<char *>(a->aligned) + 64, p->aligned, 6 * 4);
}

TEST(Manifest, JsonRoundTrip) {
  Manifest m = sample();
  auto back = Manifest::fromJSON(m.toJSON(), "m.json");
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  ASSERT_EQ(back->entries.size(), 3u);
  EXPECT_EQ(back->entries[1].sources, m.entries[1].sources);
  EXPECT_EQ(back->entries[1].sourceSizes, m.entries[1].sourceSizes);
  EXPECT_EQ(back->entries[0].indexBound, 10);
}

TEST(Manifest, WorldSizeAndRankRoundTrip) {
  Manifest m = sample();
  EXPECT_EQ(Manifest::fromJSON(m.toJSON(), "m.json")->rank, -1);
  m.worldSize = 4;
  m.rank = 3;
  auto back = Manifest::fromJSON(m.toJSON(), "m.json");
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->worldSize, 4u);
  EXPECT_EQ(back->rank, 3);
}

TEST(Manifest, RejectsARankOutsideTheWorld) {
  Manifest m = sample();
  m.worldSize = 2;
  for (int64_t rank : {2, 7}) {
    m.rank = rank;
    auto back = Manifest::fromJSON(m.toJSON(), "m.json");
    ASSERT_FALSE(static_cast<bool>(back));
    EXPECT_EQ(llvm::toString(back.takeError()),
              "m.json: 'rank' must be an integer in [0, world_size = 2)");
  }
  std::string text = sample().toJSON();
  text.insert(text.rfind('}'), ", \"rank\": \"0\"");
  auto back = Manifest::fromJSON(text, "m.json");
  ASSERT_FALSE(static_cast<bool>(back));
  EXPECT_EQ(llvm::toString(back.takeError()),
            "m.json: 'rank' must be an integer in [0, world_size = 1)");
}

TEST(Manifest, X8LayoutIsForQuantizedMatricesInGroupsOfEight) {
  Manifest m;
  m.paramSize = 4096;
  ManifestEntry w;
  w.kind = IOKind::Param;
  w.name = "w";
  w.dtype = DType::Q4_0;
  w.shape = {16, 64};
  w.layout = ParamLayout::X8;
  m.entries = {w};
  auto back = Manifest::fromJSON(m.toJSON(), "m.json");
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->entries[0].layout, ParamLayout::X8);
  // f32 has no x8 form; 12 rows split a group of 8; so does a 4-row source.
  ManifestEntry f32 = w, rows = w, source = w;
  f32.dtype = DType::F32;
  rows.shape = {12, 64};
  source.sources = {"a", "b"};
  source.sourceSizes = {4, 12};
  source.concatAxis = 0;
  for (const ManifestEntry &bad : {f32, rows, source}) {
    m.entries = {bad};
    auto refused = Manifest::fromJSON(m.toJSON(), "m.json");
    ASSERT_FALSE(static_cast<bool>(refused));
    EXPECT_EQ(llvm::toString(refused.takeError()),
              "m.json: entry 'w': unsupported layout 'x8'");
  }
}

TEST(Manifest, RejectsEntriesPastTheStorage) {
  Manifest m = sample();
  m.entries[2].offset = 120;
  auto back = Manifest::fromJSON(m.toJSON(), "m.json");
  ASSERT_FALSE(static_cast<bool>(back));
  EXPECT_EQ(llvm::toString(back.takeError()),
            "m.json: entry 'y' lies past the end of its storage (24 bytes "
            "at offset 120, 128 bytes)");
}

TEST(Manifest, RejectsBadJson) {
  auto back = Manifest::fromJSON("{", "m.json");
  ASSERT_FALSE(static_cast<bool>(back));
  EXPECT_NE(llvm::toString(back.takeError()).find("m.json: invalid JSON"),
            std::string::npos);
}

TEST(CompiledModel, AssemblesDerivedParamsAndChecksInputs) {
  CompiledModel model(sample(), copyParam, nullptr);
  EXPECT_EQ(model.weightNames(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(model.missingParams(), (std::vector<std::string>{"a", "b"}));
  ASSERT_FALSE(static_cast<bool>(model.setParam("a", {1.0f, 2.0f})));
  TensorMap_t feeds;
  feeds.emplace("ids", Tensor::fromI32({1, 4}, {0, 1, 2, 3}));

  auto early = model.run(feeds);
  ASSERT_FALSE(static_cast<bool>(early));
  EXPECT_EQ(llvm::toString(early.takeError()), "1 param(s) never set: 'b'");

  // b is [2, 2] (two rows of the concatenation).
  llvm::Error wrong = model.setParam("b", {1.0f, 2.0f});
  EXPECT_EQ(llvm::toString(std::move(wrong)),
            "param 'b': expected 4 values (part 1 of 'a+b'), got 2");
  ASSERT_FALSE(static_cast<bool>(model.setParam("b", {3, 4, 5, 6})));
  auto out = model.run(feeds);
  ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
  auto y = out->at("y").data<float>();
  EXPECT_EQ(std::vector<float>(y.begin(), y.end()),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));

  feeds.clear();
  feeds.emplace("ids", Tensor::fromI32({1, 4}, {0, 1, 10, 3}));
  auto bad = model.run(feeds);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "input 'ids': value 10 at flat index 2 is outside [0, 10)");

  feeds.clear();
  feeds.emplace("ids", Tensor::fromI32({1, 5}, {0, 1, 2, 3, 4}));
  auto shape = model.run(feeds);
  ASSERT_FALSE(static_cast<bool>(shape));
  EXPECT_EQ(llvm::toString(shape.takeError()),
            "input 'ids': expected i32[1, 4], got i32[1, 5]");

  feeds.clear();
  auto missing = model.run(feeds);
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_EQ(llvm::toString(missing.takeError()),
            "missing input 'ids' (expects i32[1, 4])");

  feeds.emplace("ids", Tensor::fromI32({1, 4}, {0, 1, 2, 3}));
  feeds.emplace("extra", Tensor::fromF32({1}, {0}));
  auto extra = model.run(feeds);
  ASSERT_FALSE(static_cast<bool>(extra));
  EXPECT_EQ(llvm::toString(extra.takeError()),
            "unknown input 'extra' (the model takes: ids)");
}

// Borrowed inputs: read in place, even unaligned; a view whose bytes do not
// match its shape is refused.
TEST(CompiledModel, RunsFromBorrowedViews) {
  CompiledModel model(sample(), copyParam, nullptr);
  ASSERT_FALSE(static_cast<bool>(model.setParam("a", {1.0f, 2.0f})));
  ASSERT_FALSE(static_cast<bool>(model.setParam("b", {3, 4, 5, 6})));
  std::vector<uint8_t> storage(1 + 4 * sizeof(int32_t));
  int32_t ids[4] = {0, 1, 2, 3};
  std::memcpy(storage.data() + 1, ids, sizeof(ids));
  int64_t shape[2] = {1, 4};
  TensorRefMap_t feeds;
  feeds.emplace("ids",
                TensorRef(DType::I32, shape,
                          llvm::ArrayRef<uint8_t>(storage).drop_front()));
  auto out = model.runViews(feeds);
  ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
  auto y = out->at("y").data<float>();
  EXPECT_EQ(std::vector<float>(y.begin(), y.end()),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));

  int32_t bad = 10;
  std::memcpy(storage.data() + 1 + 8, &bad, sizeof(bad));
  auto range = model.runViews(feeds);
  ASSERT_FALSE(static_cast<bool>(range));
  EXPECT_EQ(llvm::toString(range.takeError()),
            "input 'ids': value 10 at flat index 2 is outside [0, 10)");

  feeds.clear();
  feeds.emplace("ids",
                TensorRef(DType::I32, shape,
                          llvm::ArrayRef<uint8_t>(storage).slice(1, 12)));
  auto lying = model.runViews(feeds);
  ASSERT_FALSE(static_cast<bool>(lying));
  EXPECT_EQ(llvm::toString(lying.takeError()),
            "input 'ids': i32[1, 4] needs 16 bytes, the view has 12");
}

TEST(CompiledModel, LoadParamsNamesTheMissingWeight) {
  CompiledModel model(sample(), copyParam, nullptr);
  TensorMap source("weights.safetensors");
  ASSERT_FALSE(static_cast<bool>(source.add("a", {1, 2}, {1, 2})));
  llvm::Error err = model.loadParams(source);
  EXPECT_EQ(llvm::toString(std::move(err)),
            "weights.safetensors: missing weight 'b' (the model needs "
            "f32[2, 2])");
  ASSERT_FALSE(static_cast<bool>(source.add("b", {2, 3}, {1, 2, 3, 4, 5, 6})));
  err = model.loadParams(source);
  EXPECT_EQ(llvm::toString(std::move(err)),
            "weights.safetensors: weight 'b' has shape [2, 3], the model "
            "needs [2, 2]");
}

} // namespace
