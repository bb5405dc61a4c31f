//===- ReflectionTest.cpp - CompiledModel::reflect() ----------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/Reflection.h"
#include "RLX/Runtime/CompiledModel.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace rlx;

namespace {

ManifestEntry entry(IOKind kind, std::string name, DType dtype,
                    llvm::SmallVector<int64_t, 4> shape, uint64_t offset) {
  ManifestEntry e;
  e.kind = kind;
  e.name = std::move(name);
  e.dtype = dtype;
  e.shape = std::move(shape);
  e.offset = offset;
  return e;
}

Manifest sample() {
  Manifest m;
  m.entry = "forward";
  m.arenaSize = 256;
  m.paramSize = 1024;
  m.entries.push_back(entry(IOKind::Input, "ids", DType::I32, {1, 4}, 0));
  m.entries.push_back(
      entry(IOKind::Param, "model.layers.10.w", DType::F16, {8, 8}, 0));
  m.entries.push_back(
      entry(IOKind::Param, "model.layers.2.w", DType::F32, {8, 8}, 128));
  m.entries.push_back(
      entry(IOKind::Param, "model.layers.2.b", DType::F16, {8}, 384));
  ManifestEntry qkv = entry(IOKind::Param, "qkv", DType::F32, {2, 8}, 448);
  qkv.sources = {"model.layers.10.q", "model.layers.10.k"};
  qkv.sourceSizes = {1, 1};
  qkv.concatAxis = 0;
  m.entries.push_back(qkv);
  m.entries.push_back(entry(IOKind::Param, "lm_head", DType::F32, {4}, 576));
  m.entries.push_back(entry(IOKind::Output, "y", DType::F32, {1, 4, 8}, 64));
  return m;
}

CompiledModel model() {
  return CompiledModel(sample(), nullptr, std::shared_ptr<void>());
}

TEST(Reflection, WeightBlockPrefix) {
  EXPECT_EQ(weightBlockPrefix("model.layers.3.self_attn.q_proj.weight"),
            "model.layers.3.");
  EXPECT_EQ(weightBlockPrefix("blk.0.attn_q.weight"), "blk.0.");
  EXPECT_EQ(weightBlockPrefix("model.norm.weight"), "model.norm.");
  EXPECT_EQ(weightBlockPrefix("lm_head"), "lm_head");
  // A digit inside a component is not a layer index.
  EXPECT_EQ(weightBlockPrefix("conv1.weight"), "conv1.");
}

TEST(Reflection, GroupsParamsIntoBlocks) {
  ModelReflection r = model().reflect();
  EXPECT_EQ(r.entry, "forward");
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].name, "ids");
  EXPECT_EQ(r.inputs[0].bytes, 16u);
  EXPECT_FALSE(r.inputs[0].sourceShape);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].bytes, 128u);
  EXPECT_EQ(r.arenaBytes, 256u);
  EXPECT_EQ(r.paramPoolBytes, 1024u);
  EXPECT_EQ(r.paramCount, 5u);
  // Natural order; the concatenation goes with its first source.
  ASSERT_EQ(r.weightBlocks.size(), 3u);
  EXPECT_EQ(r.weightBlocks[0].prefix, "lm_head");
  EXPECT_EQ(r.weightBlocks[1].prefix, "model.layers.2.");
  EXPECT_EQ(r.weightBlocks[1].count, 2u);
  EXPECT_EQ(r.weightBlocks[1].bytes, 256u + 16u);
  EXPECT_EQ(r.weightBlocks[1].dtypes.size(), 2u);
  EXPECT_EQ(r.weightBlocks[2].prefix, "model.layers.10.");
  EXPECT_EQ(r.weightBlocks[2].bytes, 128u + 64u);
  uint64_t sum = 0;
  for (const WeightBlock &b : r.weightBlocks)
    sum += b.bytes;
  EXPECT_EQ(sum, r.paramBytes);
  // Not compiled by a Session: no kernels, no profile.
  EXPECT_FALSE(r.build);
  llvm::json::Value v = r.toJSON();
  const llvm::json::Object *o = v.getAsObject();
  ASSERT_TRUE(o);
  EXPECT_EQ(o->getString("shapes"), "concrete");
  EXPECT_TRUE(o->get("kernels")->getAsNull());
}

TEST(Reflection, BuildInfo) {
  CompiledModel m = model();
  BuildInfo info;
  info.sourceShapes = {{"ids", {1, -1}}, {"y", {1, -1, 8}}};
  info.profilePresets = {"encoder"};
  info.fusedOps = "none";
  info.kernels = {{"matmul", "mir.matmul", "gemm_blas", ""},
                  {"silu", "mir.silu", "", ""}};
  m.setBuildInfo(info);
  ModelReflection r = m.reflect();
  ASSERT_TRUE(r.inputs[0].sourceShape);
  EXPECT_EQ((*r.inputs[0].sourceShape)[1], -1);
  llvm::json::Value v = r.toJSON();
  const llvm::json::Object *o = v.getAsObject();
  EXPECT_EQ(o->getString("shapes"), "symbolic");
  const llvm::json::Array *in = o->getArray("inputs");
  const llvm::json::Array *src =
      (*in)[0].getAsObject()->getArray("source_shape");
  EXPECT_TRUE((*src)[1].getAsNull());
  EXPECT_EQ(o->getObject("kernels")->getInteger("count"), 2);
  std::string text;
  llvm::raw_string_ostream os(text);
  r.print(os);
  EXPECT_NE(text.find("ids: i32 [1x4] (source [1x?])"), std::string::npos)
      << text;
  EXPECT_NE(text.find("model.layers.2.: 2, f32+f16, 272 bytes"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("profile: preset encoder"), std::string::npos) << text;
}

} // namespace
