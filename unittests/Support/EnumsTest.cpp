//===- EnumsTest.cpp - Shared enumerations and the kernel ABI -------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Support/Enums.h"
#include "RLX/Support/KernelABI.h"
#include "gtest/gtest.h"

using namespace rlx;

namespace {

/// Every spelling parses back to its enumerator, and nothing else parses.
template <typename E> void expectRoundTrip(llvm::StringRef bogus) {
  llvm::ArrayRef<llvm::StringRef> names = enumSpellings<E>();
  ASSERT_FALSE(names.empty());
  for (size_t i = 0; i < names.size(); ++i) {
    std::optional<E> parsed = symbolizeEnum<E>(names[i]);
    ASSERT_TRUE(parsed.has_value()) << names[i].str();
    EXPECT_EQ(static_cast<size_t>(*parsed), i);
  }
  EXPECT_FALSE(symbolizeEnum<E>(bogus).has_value());
  EXPECT_FALSE(symbolizeEnum<E>("").has_value());
}

TEST(Enums, SpellingsRoundTrip) {
  expectRoundTrip<FusionPolicy>("eager");
  expectRoundTrip<Target>("auto");
  expectRoundTrip<TargetChoice>("vulkan");
  expectRoundTrip<ComputePrecision>("f8");
  expectRoundTrip<MixedPrecision>("always");
  expectRoundTrip<GemmStrategy>("mkl");
  expectRoundTrip<BufferSpace>("stack");
  expectRoundTrip<ParamLayout>("nk32");
}

TEST(Enums, NamedFunctionsAgreeWithTables) {
  EXPECT_EQ(stringifyTarget(Target::Spirv), "spirv");
  EXPECT_EQ(stringifyTargetChoice(TargetChoice::Auto), "auto");
  EXPECT_EQ(stringifyGemmStrategy(GemmStrategy::Generated), "generated");
  EXPECT_EQ(stringifyBufferSpace(BufferSpace::Constants), "constants");
  EXPECT_EQ(stringifyParamLayout(ParamLayout::NK16), "nk16");
  EXPECT_EQ(symbolizeParamLayout("row_major"), ParamLayout::RowMajor);
  EXPECT_EQ(stringifyParamLayout(ParamLayout::X8), "x8");
  EXPECT_EQ(symbolizeWeightRepack("none"), WeightRepack::None);
  EXPECT_EQ(stringifyWeightRepack(WeightRepack::X8), "x8");
  EXPECT_EQ(symbolizeFusionPolicy("fusable"), FusionPolicy::Fusable);
}

TEST(Enums, AutoResolvesToTheDevice) {
  EXPECT_EQ(resolveTarget(TargetChoice::Auto, Target::Spirv), Target::Spirv);
  EXPECT_EQ(resolveTarget(TargetChoice::Auto, Target::Cpu), Target::Cpu);
  EXPECT_EQ(resolveTarget(TargetChoice::Cpu, Target::Spirv), Target::Cpu);
  EXPECT_EQ(resolveTarget(TargetChoice::Spirv, Target::Cpu), Target::Spirv);
}

TEST(KernelABI, SpmdContextLayout) {
  // The counters and each cursor own a cache line.
  EXPECT_EQ(spmd::kFinishedOffset - spmd::kClaimedOffset, 64);
  EXPECT_EQ(spmd::kCursorsOffset - spmd::kFinishedOffset, 64);
  EXPECT_EQ(spmd::contextBytes(1), 192);
  EXPECT_EQ(spmd::contextBytes(4), 128 + 4 * 64);
  EXPECT_EQ(spmd::contextBytes(8) % spmd::kContextAlignment, 0);
}

} // namespace
