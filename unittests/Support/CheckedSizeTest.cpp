//===- CheckedSizeTest.cpp - Overflow-checked element counts and sizes ----===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Support/CheckedSize.h"
#include "gtest/gtest.h"

using namespace rlx;

namespace {

TEST(CheckedSize, NumElements) {
  EXPECT_EQ(checkedNumElements({}), 1u);
  EXPECT_EQ(checkedNumElements({2, 3, 4}), 24u);
  EXPECT_EQ(checkedNumElements({-1, 4}), std::nullopt);
  EXPECT_EQ(checkedNumElements({INT64_MIN}), std::nullopt);
  // 2^32 * 2^32 wraps to 0 in 64 bits.
  EXPECT_EQ(checkedNumElements({int64_t(1) << 32, int64_t(1) << 32}),
            std::nullopt);
  // A zero dimension wins over an overflow before it.
  EXPECT_EQ(checkedNumElements({int64_t(1) << 32, int64_t(1) << 32, 0}), 0u);
}

// The tester's case: tensor<4611686018427387904x4xf32> is 2^66 bytes, 0
// modulo 2^64.
TEST(CheckedSize, ByteSizeOverflow) {
  EXPECT_EQ(checkedByteSize({int64_t(1) << 62, 4}, 4), std::nullopt);
  EXPECT_EQ(checkedByteSize({1, int64_t(1) << 62, 4}, 4), std::nullopt);
  // 2^61 f32 is 2^63 bytes: one past the largest size.
  EXPECT_EQ(checkedByteSize({int64_t(1) << 61}, 4), std::nullopt);
  EXPECT_EQ(checkedByteSize({(int64_t(1) << 61) - 1}, 4), kMaxByteSize - 3);
  EXPECT_EQ(checkedByteSize({3, 5}, 2), 30u);
  // ggml q4_0: 32 elements in 18 bytes.
  EXPECT_EQ(checkedByteSize({4, 64}, 18, 32), 144u);
  EXPECT_EQ(checkedByteSize({4, 64}, 18, 0), std::nullopt);
}

TEST(CheckedSize, AddBytes) {
  EXPECT_EQ(checkedAddBytes(1, 2), 3u);
  EXPECT_EQ(checkedAddBytes(kMaxByteSize, 0), kMaxByteSize);
  EXPECT_EQ(checkedAddBytes(kMaxByteSize, 1), std::nullopt);
  EXPECT_EQ(checkedAddBytes(UINT64_MAX, 1), std::nullopt);
}

} // namespace
