//===- HardeningTest.cpp - Regression tests for fuzzer findings -----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Inputs that crashed a reader (found by the fuzz targets in fuzz/ or by
// review) now give errors. Each test names the bug it guards against.
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/JSON.h"
#include "RLX/Weights/Npy.h"
#include "RLX/Weights/SafeTensors.h"
#include "TestUtil.h"

#include "gtest/gtest.h"

using namespace rlx;
using namespace rlx::test;
using llvm::StringRef;

namespace {

std::vector<uint8_t> npyBytes(StringRef header) {
  Bytes b;
  b.raw("\x93NUMPY").u8(1).u8(0).u16(header.size()).raw(header);
  return b.data;
}

// rlx-fuzz-npy: a shape whose last element runs to the end of the header
// made parseShape drop_front(npos) (an assertion; past the text without).
TEST(HardeningTest, NpyShapeDigitsToTheEnd) {
  std::vector<uint8_t> bytes =
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 333");
  EXPECT_EQ(errorOf(parseNpy(bytes, "x.npy")),
            "x.npy: header: expected ',' or ')' in 'shape'");
  bytes = npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (");
  EXPECT_EQ(errorOf(parseNpy(bytes, "x.npy")),
            "x.npy: header: 'shape' element is not a non-negative integer at "
            "''");
}

// llvm::json::parse recursed once per level: 100000 '[' overflowed the
// stack of anything reading a safetensors header, config.json or manifest.
TEST(HardeningTest, JSONNestingIsBounded) {
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  EXPECT_EQ(jsonNestingDepth(deep), kMaxJSONDepth + 1);
  EXPECT_EQ(errorOf(parseJSON(deep)),
            "JSON nested deeper than 64 levels at byte 64");
  // Brackets inside strings do not count; 64 levels are fine.
  std::string ok = "{\"k\": \"[[[[{{{{\"}";
  EXPECT_EQ(jsonNestingDepth(ok), 1u);
  std::string sixtyFour = std::string(64, '[') + std::string(64, ']');
  EXPECT_EQ(errorOf(parseJSON(sixtyFour)), "<success>");
}

TEST(HardeningTest, SafeTensorsDeepHeader) {
  std::string header(200000, '[');
  Bytes b;
  b.u64(header.size()).raw(header);
  EXPECT_EQ(errorOf(SafeTensorsFile::fromBuffer(
                llvm::MemoryBuffer::getMemBufferCopy(StringRef(
                    reinterpret_cast<const char *>(b.data.data()), b.size())),
                "deep.safetensors")),
            "deep.safetensors: header: invalid JSON: JSON nested deeper than "
            "64 levels at byte 64");
}

} // namespace
