//===- TestUtil.h - Helpers for the weight reader tests ---------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_UNITTESTS_WEIGHTS_TESTUTIL_H
#define RLX_UNITTESTS_WEIGHTS_TESTUTIL_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace rlx::test {

/// A fixture giving each test its own temporary directory.
class TempDirTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::error_code ec =
        llvm::sys::fs::createUniqueDirectory("rlx-weights-test", dir);
    ASSERT_FALSE(ec) << ec.message();
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  /// `dir/name`.
  std::string path(llvm::StringRef name) const {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }

  /// Writes `bytes` to `dir/name` and returns the path.
  std::string writeFile(llvm::StringRef name,
                        const std::vector<uint8_t> &bytes) const {
    std::string p = path(name);
    std::error_code ec;
    llvm::raw_fd_ostream os(p, ec);
    EXPECT_FALSE(ec) << ec.message();
    os.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    return p;
  }

  std::string writeFile(llvm::StringRef name, llvm::StringRef text) const {
    return writeFile(name, std::vector<uint8_t>(text.begin(), text.end()));
  }

  /// The contents of `dir/name`.
  std::vector<uint8_t> readFile(llvm::StringRef name) const {
    auto buf = llvm::MemoryBuffer::getFile(path(name), /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    EXPECT_TRUE(bool(buf));
    if (!buf)
      return {};
    llvm::StringRef s = (*buf)->getBuffer();
    return std::vector<uint8_t>(s.begin(), s.end());
  }

  llvm::SmallString<256> dir;
};

/// The message of a failed Expected (consumed), or "<success>".
template <typename T> std::string errorOf(llvm::Expected<T> &&value) {
  if (value)
    return "<success>";
  return llvm::toString(value.takeError());
}

inline std::string errorOf(llvm::Error err) {
  if (!err)
    return "<success>";
  return llvm::toString(std::move(err));
}

/// Little-endian byte building for hand-made files.
struct Bytes {
  std::vector<uint8_t> data;

  size_t size() const { return data.size(); }
  template <typename T> Bytes &le(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T)); // The tests run on little-endian hosts.
    data.insert(data.end(), b, b + sizeof(T));
    return *this;
  }
  Bytes &u8(uint8_t v) { return le(v); }
  Bytes &u16(uint16_t v) { return le(v); }
  Bytes &u32(uint32_t v) { return le(v); }
  Bytes &u64(uint64_t v) { return le(v); }
  Bytes &i32(int32_t v) { return le(v); }
  Bytes &f32(float v) { return le(v); }
  Bytes &raw(llvm::StringRef s) {
    data.insert(data.end(), s.begin(), s.end());
    return *this;
  }
  Bytes &raw(const std::vector<uint8_t> &v) {
    data.insert(data.end(), v.begin(), v.end());
    return *this;
  }
  /// A GGUF string: u64 length + bytes.
  Bytes &str(llvm::StringRef s) { return u64(s.size()).raw(s); }
  Bytes &zeros(size_t n) {
    data.insert(data.end(), n, 0);
    return *this;
  }
  Bytes &padTo(size_t align) { return zeros((align - size() % align) % align); }
  /// The first `n` bytes.
  std::vector<uint8_t> prefix(size_t n) const {
    return std::vector<uint8_t>(data.begin(), data.begin() + n);
  }
};

/// A deterministic pseudo-random sequence in [-1, 1).
inline std::vector<float> pseudoRandom(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (float &x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

} // namespace rlx::test

#endif // RLX_UNITTESTS_WEIGHTS_TESTUTIL_H
