//===- CompileCacheTest.cpp - The persistent compile cache ----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A second compile of the same module loads the stored code and computes
// the same numbers; damaged entries are reported, removed and rebuilt; the
// key tells shapes and profiles apart; the size cap evicts.
//
//===----------------------------------------------------------------------===//

#include "NormProj.h"
#include "RLX/Compiler/Session.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace rlx;

namespace {

class CompileCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("rlx-cache-test", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  CompileOptions options(int64_t tokens) const {
    CompileOptions o;
    o.cacheDir = std::string(dir);
    o.inputShapes["x"] = {1, tokens, 64};
    return o;
  }

  /// The IR dump directory of a test, beside the cache.
  std::string dumpDir() const {
    llvm::SmallString<128> dump(dir);
    llvm::sys::path::append(dump, "ir");
    return std::string(dump);
  }

  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec))
      if (llvm::StringRef(it->path()).ends_with(".rlxc"))
        out.push_back(it->path());
    return out;
  }

  /// Compiles with `o`, runs on fixed data, checks against a naive loop and
  /// returns the output.
  std::vector<float> compileAndRun(Session &session, const CompileOptions &o,
                                   int64_t tokens) {
    llvm::Expected<CompiledModel> model =
        session.compileString(test::kNormProj, o);
    if (!model) {
      ADD_FAILURE() << llvm::toString(model.takeError());
      return {};
    }
    return test::runNormProj(*model, tokens);
  }

  llvm::SmallString<128> dir;
};

TEST_F(CompileCacheTest, SecondCompileLoadsTheSameCode) {
  Session session;
  std::vector<float> first = compileAndRun(session, options(5), 5);
  const CompileStats &stats = session.lastStats();
  EXPECT_FALSE(stats.cached);
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_EQ(stats.cacheEntry, entries()[0]);
  unsigned kernels = stats.kernels;
  std::string fused = stats.fusedOps;
  uint64_t arena = stats.arenaBytes;

  // A new session (as a new process would) finds it.
  Session again;
  std::vector<std::string> phases;
  CompileOptions o = options(5);
  o.onPhase = [&](llvm::StringRef phase, double) {
    phases.push_back(phase.str());
  };
  std::vector<float> second = compileAndRun(again, o, 5);
  const CompileStats &cached = again.lastStats();
  EXPECT_TRUE(cached.cached);
  ASSERT_EQ(cached.phaseSeconds.size(), 1u);
  EXPECT_EQ(cached.phaseSeconds[0].first, "cached");
  EXPECT_EQ(phases, std::vector<std::string>{"cached"});
  EXPECT_EQ(cached.kernels, kernels);
  EXPECT_EQ(cached.fusedOps, fused);
  EXPECT_EQ(cached.arenaBytes, arena);
  EXPECT_TRUE(cached.warnings.empty());
  EXPECT_EQ(first, second);
  EXPECT_EQ(entries().size(), 1u);
}

TEST_F(CompileCacheTest, ShapesAndProfilesAreDifferentEntries) {
  Session session;
  compileAndRun(session, options(5), 5);
  compileAndRun(session, options(7), 7);
  EXPECT_FALSE(session.lastStats().cached);
  CompileOptions single = options(7);
  single.profile.backend.cpu.threads = 1;
  compileAndRun(session, single, 7);
  EXPECT_FALSE(session.lastStats().cached);
  EXPECT_EQ(entries().size(), 3u);
  compileAndRun(session, options(7), 7);
  EXPECT_TRUE(session.lastStats().cached);
}

/// Each damage to the one entry's bytes gives a warning naming it and the
/// entry, a correct model, and a rebuilt entry.
TEST_F(CompileCacheTest, DamagedEntriesAreRebuilt) {
  struct Damage {
    const char *why;
    std::function<void(std::string &)> edit;
  };
  std::vector<Damage> damages = {
      {"checksum", [](std::string &b) { b[b.size() - 100] ^= 0x5a; }},
      {"truncated", [](std::string &b) { b.resize(b.size() - 10); }},
      {"format version", [](std::string &b) { b[8] = 99; }},
      {"bad header", [](std::string &b) { b[0] = 'X'; }},
      {"bad header", [](std::string &b) { b.resize(20); }},
  };
  Session session;
  std::vector<float> reference = compileAndRun(session, options(3), 3);
  for (const Damage &d : damages) {
    SCOPED_TRACE(d.why);
    ASSERT_EQ(entries().size(), 1u);
    std::string path = entries()[0];
    auto buffer = llvm::MemoryBuffer::getFile(path);
    ASSERT_TRUE(bool(buffer));
    std::string bytes = (*buffer)->getBuffer().str();
    d.edit(bytes);
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec);
      ASSERT_FALSE(ec);
      os << bytes;
    }
    EXPECT_EQ(compileAndRun(session, options(3), 3), reference);
    const CompileStats &stats = session.lastStats();
    EXPECT_FALSE(stats.cached);
    ASSERT_EQ(stats.warnings.size(), 1u);
    EXPECT_NE(stats.warnings[0].find(d.why), std::string::npos)
        << stats.warnings[0];
    EXPECT_NE(stats.warnings[0].find(path), std::string::npos);
    // Rebuilt: the next compile loads it.
    EXPECT_EQ(compileAndRun(session, options(3), 3), reference);
    EXPECT_TRUE(session.lastStats().cached);
  }
}

TEST_F(CompileCacheTest, SizeCapEvictsLeastRecentlyUsed) {
  Session session;
  CompileOptions o = options(2);
  o.cacheMaxBytes = 1; // Every entry is over: only the newest stays.
  compileAndRun(session, o, 2);
  ASSERT_EQ(entries().size(), 1u);
  std::string first = entries()[0];
  o.inputShapes["x"] = {1, 4, 64};
  compileAndRun(session, o, 4);
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_NE(entries()[0], first);
}

TEST_F(CompileCacheTest, UnusableDirectoryCompilesWithAWarning) {
  llvm::SmallString<128> file(dir);
  llvm::sys::path::append(file, "not-a-dir");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    ASSERT_FALSE(ec);
  }
  Session session;
  CompileOptions o = options(3);
  o.cacheDir = std::string(file);
  compileAndRun(session, o, 3);
  const CompileStats &stats = session.lastStats();
  ASSERT_EQ(stats.warnings.size(), 1u);
  EXPECT_NE(stats.warnings[0].find("not-a-dir"), std::string::npos);
  EXPECT_NE(stats.warnings[0].find("without the cache"), std::string::npos);
}

TEST_F(CompileCacheTest, IRDumpsBypassTheCache) {
  Session session;
  CompileOptions o = options(3);
  o.dumpDir = dumpDir();
  compileAndRun(session, o, 3);
  EXPECT_TRUE(entries().empty());
  EXPECT_TRUE(llvm::sys::fs::exists(o.dumpDir + "/00-input.mlir"));
}

/// The generated GEMM's register tile is the host's (the JIT compiles for
/// it): 8 rows x 2 16-lane vectors with AVX-512, 6 x 1 on AVX2 (16 ymm
/// registers). 16 rows: two whole row tiles and a remainder, checked
/// against the naive loop.
TEST_F(CompileCacheTest, GemmTileFitsTheHost) {
  Session session;
  CompileOptions o = options(16);
  o.dumpDir = dumpDir();
  compileAndRun(session, o, 16);
  auto lir = llvm::MemoryBuffer::getFile(o.dumpDir + "/05-lir-decided.mlir");
  ASSERT_TRUE(bool(lir));
  std::string want = llvm::sys::getHostCPUFeatures().lookup("avx512f")
                         ? "gemm_generated, tile = [8, 2, 64]"
                         : "gemm_generated, tile = [6, 1, 64]";
  EXPECT_NE((*lir)->getBuffer().find(want), llvm::StringRef::npos)
      << want << " in\n"
      << (*lir)->getBuffer().str();
}

TEST_F(CompileCacheTest, MemoryBudgetAppliesToCachedModels) {
  // 8192 tokens: an arena of several MiB.
  Session session;
  ASSERT_TRUE(bool(session.compileString(test::kNormProj, options(8192))));
  ASSERT_EQ(entries().size(), 1u);
  CompileOptions o = options(8192);
  o.memoryBudgetMB = 1;
  llvm::Expected<CompiledModel> refused =
      session.compileString(test::kNormProj, o);
  ASSERT_FALSE(bool(refused));
  std::string message = llvm::toString(refused.takeError());
  EXPECT_NE(message.find("memory budget"), std::string::npos) << message;
  // The entry is fine: it stays.
  EXPECT_EQ(entries().size(), 1u);
}

TEST(CompileCacheDir, DefaultFollowsTheEnvironment) {
  const char *saved[3] = {std::getenv("RLX_CACHE_DIR"),
                          std::getenv("XDG_CACHE_HOME"), std::getenv("HOME")};
  std::string copies[3];
  for (int i = 0; i < 3; ++i)
    if (saved[i])
      copies[i] = saved[i];
  setenv("RLX_CACHE_DIR", "/tmp/a", 1);
  EXPECT_EQ(defaultCompileCacheDir(), "/tmp/a");
  unsetenv("RLX_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/tmp/b", 1);
  EXPECT_EQ(defaultCompileCacheDir(), "/tmp/b/rlx");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/tmp/c", 1);
  EXPECT_EQ(defaultCompileCacheDir(), "/tmp/c/.cache/rlx");
  unsetenv("HOME");
  EXPECT_EQ(defaultCompileCacheDir(), "");
  const char *names[3] = {"RLX_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  for (int i = 0; i < 3; ++i)
    if (saved[i])
      setenv(names[i], copies[i].c_str(), 1);
}

} // namespace
