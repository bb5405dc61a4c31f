//===- CompileCache.h - The persistent compile cache ------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Compiled models on disk, so that a second compile of the same module with
// the same options, by the same RLX build for the same CPU or Vulkan device,
// compiles nothing. An entry is one file `<key>.rlxc`: a header (magic, format
// version, section sizes, SHA-256 of the payload), then the payload: JSON
// metadata (manifest, build info, compile statistics) and the code (the
// object code the JIT produced, or a serialized Vulkan program). Entries are
// written to a temporary file and renamed into place (atomic under concurrent
// processes); eviction (least recently used first, beyond the size cap) runs
// under a file lock. A corrupt or mismatched entry is never loaded: it is
// reported and rebuilt.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_COMPILER_COMPILECACHE_H
#define RLX_LIB_COMPILER_COMPILECACHE_H

#include "RLX/Compiler/Session.h"
#include "llvm/Support/MemoryBuffer.h"
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace rlx::detail {

/// What a cache entry holds.
struct CacheEntry {
  Manifest manifest;
  BuildInfo build;
  /// The statistics of the compile that wrote the entry (phase times
  /// excluded).
  CompileStats stats;
  /// CPU object code, or a serialized Vulkan program.
  std::unique_ptr<llvm::MemoryBuffer> object;
};

class CompileCache {
public:
  /// A cache in `dir` (made when missing) holding at most `maxBytes`
  /// (0: kDefaultMaxBytes).
  CompileCache(std::string dir, uint64_t maxBytes);

  static constexpr uint64_t kDefaultMaxBytes = uint64_t(2) << 30;

  /// The key of compiling `module` with `options` for `device`: a SHA-256
  /// over the module's text, the profile, entry and input shapes, the
  /// target (host CPU and its features), the RLX and LLVM versions and the
  /// identity of the binary holding the compiler (path, size, time), so a
  /// rebuilt RLX never reads its predecessor's entries.
  /// `deviceKey`: the Vulkan device (vulkanDeviceKey); ignored on the CPU.
  static std::string key(mlir::ModuleOp module, const CompileOptions &options,
                         Device device, llvm::StringRef deviceKey = "");

  /// The entry for `key`, or none. A damaged entry (bad header, checksum,
  /// format or version) is removed and reported in `warnings`.
  std::optional<CacheEntry> lookup(llvm::StringRef key,
                                   std::vector<std::string> &warnings);

  /// A path where the compile may write the object code for `key` before
  /// store() takes it.
  std::string objectScratchPath(llvm::StringRef key) const;

  /// Writes `entry` with `code` (CPU object code, or a serialized Vulkan
  /// program) under `key`, then evicts beyond the size cap. Failures are
  /// reported in `warnings`: the compile itself succeeded.
  void store(llvm::StringRef key, const CacheEntry &entry, llvm::StringRef code,
             std::vector<std::string> &warnings);

  /// The entry file of `key`.
  std::string entryPath(llvm::StringRef key) const;

  /// Makes the directory; an error names it.
  llvm::Error prepare();

private:
  void evict(llvm::StringRef keep);

  std::string dir;
  uint64_t maxBytes;
};

} // namespace rlx::detail

#endif // RLX_LIB_COMPILER_COMPILECACHE_H
