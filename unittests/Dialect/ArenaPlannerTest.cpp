//===- ArenaPlannerTest.cpp - Liveness-based arena placement --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/LIR/Transforms/Transforms.h"
#include "gtest/gtest.h"
#include <random>

using namespace mlir::rlx::lir;

namespace {

/// No two buffers that are live together share a byte; offsets aligned.
void expectValid(llvm::ArrayRef<PlannedBuffer> bufs, int64_t alignment,
                 int64_t arena) {
  for (size_t i = 0; i < bufs.size(); ++i) {
    EXPECT_EQ(bufs[i].offset % alignment, 0) << i;
    EXPECT_LE(bufs[i].offset + bufs[i].size, arena) << i;
    for (size_t j = i + 1; j < bufs.size(); ++j) {
      bool time = bufs[i].start <= bufs[j].end && bufs[j].start <= bufs[i].end;
      bool bytes = bufs[i].offset < bufs[j].offset + bufs[j].size &&
                   bufs[j].offset < bufs[i].offset + bufs[i].size;
      EXPECT_FALSE(time && bytes && bufs[i].size && bufs[j].size)
          << "buffers " << i << " and " << j << " overlap while live";
    }
  }
}

TEST(ArenaPlanner, ReusesDeadBuffers) {
  // A chain a -> b -> c: c can take a's place.
  llvm::SmallVector<PlannedBuffer> bufs = {
      {100, 0, 1}, {100, 1, 2}, {100, 2, 3}};
  ArenaStats s = planArena(bufs, 64);
  expectValid(bufs, 64, s.arenaBytes);
  EXPECT_EQ(s.arenaBytes, 256);
  EXPECT_EQ(s.naiveBytes, 384);
  EXPECT_EQ(s.peakLiveBytes, 256);
  EXPECT_EQ(bufs[0].offset, bufs[2].offset);
}

TEST(ArenaPlanner, BestFitPicksTheSmallestGap) {
  // Long-lived buffers with two dead ones between them leave a 320-byte
  // and a 128-byte hole; a 100-byte buffer born later takes the 128-byte
  // hole (first fit would take the larger one).
  llvm::SmallVector<PlannedBuffer> bufs = {
      {1000, 0, 10}, // long-lived, at 0
      {300, 0, 1},   // dies: 320-byte hole at 1024
      {200, 0, 10},  // long-lived, at 1344
      {120, 0, 1},   // dies: 128-byte hole at 1600
      {100, 0, 10},  // long-lived, at 1728
      {100, 5, 6},   // born after the deaths
  };
  ArenaStats s = planArena(bufs, 64);
  expectValid(bufs, 64, s.arenaBytes);
  EXPECT_EQ(bufs[5].offset, bufs[3].offset);
  EXPECT_NE(bufs[5].offset, bufs[1].offset);
}

TEST(ArenaPlanner, ZeroSizedBuffersTakeNoSpace) {
  llvm::SmallVector<PlannedBuffer> bufs = {{0, 0, 5}, {64, 0, 5}};
  ArenaStats s = planArena(bufs, 64);
  EXPECT_EQ(s.arenaBytes, 64);
}

TEST(ArenaPlanner, RandomSchedulesNeverOverlap) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    llvm::SmallVector<PlannedBuffer> bufs;
    int n = 1 + rng() % 40;
    for (int i = 0; i < n; ++i) {
      int64_t start = rng() % 30;
      bufs.push_back(
          {int64_t(rng() % 5000), start, start + int64_t(rng() % 10)});
    }
    ArenaStats s = planArena(bufs, 64);
    expectValid(bufs, 64, s.arenaBytes);
    EXPECT_LE(s.arenaBytes, s.naiveBytes);
    EXPECT_GE(s.arenaBytes, s.peakLiveBytes);
  }
}

} // namespace
