//===- MessagesTest.cpp - echoed() ----------------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Support/Messages.h"
#include "gtest/gtest.h"

using namespace rlx;

TEST(MessagesTest, ShortTextIsKept) {
  EXPECT_EQ(echoed(""), "");
  EXPECT_EQ(echoed(std::string(64, 'a')), std::string(64, 'a'));
}

TEST(MessagesTest, LongTextIsCutAndSized) {
  EXPECT_EQ(echoed(std::string(10000000, 'a')),
            std::string(64, 'a') + "... (10000000 bytes)");
  EXPECT_EQ(echoed("abcdef", 3), "abc... (6 bytes)");
}

TEST(MessagesTest, CutAtACharacterBoundary) {
  // "é" is two bytes: a cut after 3 bytes would split the second one.
  EXPECT_EQ(echoed("\xC3\xA9\xC3\xA9\xC3\xA9", 3), "\xC3\xA9... (6 bytes)");
  // A four-byte character at the start: nothing fits.
  EXPECT_EQ(echoed("\xF0\x9F\x98\x80xyz", 2), "... (7 bytes)");
}
