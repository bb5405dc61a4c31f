//===- CheckedSizeTest.cpp - Checked sizes and regular-file reads ---------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Support/CheckedSize.h"
#include "RLX/Support/FileIO.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <sys/stat.h>

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

std::string errorOf(llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> b) {
  return b ? "<success>" : llvm::toString(b.takeError());
}

TEST(FileIO, RefusesWhatIsNotARegularFile) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("rlx-fileio", dir));
  llvm::SmallString<128> file(dir), fifo(dir);
  llvm::sys::path::append(file, "f.bin");
  llvm::sys::path::append(fifo, "fifo");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    ASSERT_FALSE(ec);
    os << "abc";
  }
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);

  auto ok = readRegularFile(file);
  ASSERT_TRUE(bool(ok)) << llvm::toString(ok.takeError());
  EXPECT_EQ((*ok)->getBuffer(), "abc");
  // Opening a FIFO would block for a writer; /dev/zero would never end.
  EXPECT_EQ(errorOf(readRegularFile(fifo)),
            (fifo + ": cannot open: a FIFO, not a regular file").str());
  EXPECT_EQ(errorOf(readRegularFile("/dev/zero")),
            "/dev/zero: cannot open: a character device, not a regular file");
  EXPECT_EQ(errorOf(readRegularFile(dir)),
            (dir + ": cannot open: a directory, not a regular file").str());
  EXPECT_EQ(errorOf(readRegularFile(dir + "/missing", true, "cannot read")),
            (dir + "/missing: cannot read: No such file or directory").str());
  EXPECT_EQ(errorOf(readRegularFile(fifo, true, "")),
            (fifo + ": a FIFO, not a regular file").str());

  llvm::sys::fs::remove(file);
  llvm::sys::fs::remove(fifo);
  llvm::sys::fs::remove(dir);
}

} // namespace
