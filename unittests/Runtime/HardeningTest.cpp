//===- HardeningTest.cpp - Bad manifests and the memory budget ------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Manifests that crashed the runtime (found by fuzz/FuzzManifest.cpp or by
// review) are now refused or handled; arenas past the memory budget are
// refused before anything is allocated.
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/CompiledModel.h"
#include "RLX/Runtime/MemoryBudget.h"

#include "gtest/gtest.h"

#include <cstdlib>

using namespace rlx;

namespace {

std::string errorOf(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : "<success>";
}
template <typename T> std::string errorOf(llvm::Expected<T> value) {
  return value ? "<success>" : llvm::toString(value.takeError());
}

class NullExecutor : public Executor {
public:
  llvm::Error execute(const Manifest &, llvm::MutableArrayRef<uint8_t>,
                      llvm::ArrayRef<uint8_t>, bool) override {
    return llvm::Error::success();
  }
  std::string describe() const override { return "null"; }
};

/// A manifest with one derived param "qkv" of `shape` from q, k, v.
std::string derivedManifest(llvm::StringRef shape, llvm::StringRef sizes,
                            llvm::StringRef extra = "") {
  return (R"({"entry": "f", "arena_size": 64, "param_size": 64,
    "entries": [{"kind": "param", "name": "qkv", "offset": 0, "dtype": "f32",
                 "shape": )" +
          shape + R"(, "sources": ["q", "k", "v"], "source_sizes": )" + sizes +
          R"(, "concat_axis": 0)" + extra + "}]}")
      .str();
}

// rlx-fuzz-manifest: source sizes that are all zero made setParam divide by
// the zero concat dim, and copy from the null data of an empty vector.
TEST(RuntimeHardeningTest, EmptyDerivedParamSources) {
  auto m = Manifest::fromJSON(derivedManifest("[0, 2]", "[0, 0, 0]"), "m.json");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  auto model = CompiledModel::create(std::move(*m),
                                     std::make_unique<NullExecutor>(), 64);
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  for (const char *name : {"q", "k", "v"})
    EXPECT_EQ(errorOf(model->setParam(name, llvm::ArrayRef<float>())),
              "<success>");
  EXPECT_TRUE(model->missingParams().empty());
  EXPECT_EQ(errorOf(model->run({})), "<success>");
}

// Review: a negative source size balanced by a huge one passed the sum
// check, then copied a negative byte count.
TEST(RuntimeHardeningTest, NegativeOrOverflowingSourceSizes) {
  EXPECT_EQ(errorOf(Manifest::fromJSON(
                derivedManifest("[3, 2]", "[1099511627778, -1, 1]"), "m.json")),
            "m.json: entry 'qkv': 'source_sizes' must be non-negative "
            "integers");
  EXPECT_EQ(
      errorOf(Manifest::fromJSON(
          derivedManifest("[3, 2]",
                          "[4611686018427387904, "
                          "4611686018427387904, 9223372036854775807]"),
          "m.json")),
      "m.json: entry 'qkv': source_sizes must match the sources and add up "
      "to the concat dimension");
  EXPECT_EQ(errorOf(Manifest::fromJSON(
                (R"({"entry": "f", "arena_size": 64, "param_size": 64,
    "entries": [{"kind": "param", "name": "qkv", "offset": 0, "dtype": "f32",
                 "shape": [3], "sources": ["q", 1, "v"], "source_sizes": [1,
                 1, 1], "concat_axis": 0}]})"),
                "m.json")),
            "m.json: entry 'qkv': 'sources' must be strings");
}

/// A manifest with one input `x` of `dtype`, `shape` at `offset`.
std::string inputManifest(llvm::StringRef dtype, llvm::StringRef shape,
                          llvm::StringRef offset = "0",
                          llvm::StringRef top = "") {
  return (R"({"entry": "f", "arena_size": 64, "param_size": 0)" + top +
          R"(, "entries": [{"kind": "input", "name": "x", "offset": )" +
          offset + R"(, "dtype": ")" + dtype + R"(", "shape": )" + shape +
          "}]}")
      .str();
}

// Review: offset + byte size was computed without overflow checks, so an
// entry could claim to fit while lying anywhere in memory.
TEST(RuntimeHardeningTest, EntryBoundsOverflow) {
  EXPECT_EQ(errorOf(Manifest::fromJSON(
                inputManifest("f32", "[4]", "9223372036854775800"), "m.json")),
            "m.json: entry 'x' lies past the end of its storage (16 bytes at "
            "offset 9223372036854775800, 64 bytes)");
  EXPECT_EQ(errorOf(Manifest::fromJSON(
                inputManifest("f32", "[4294967296, 4294967296, 4]"), "m.json")),
            "m.json: entry 'x': element count of shape [4294967296, "
            "4294967296, 4] overflows 64 bits");
  EXPECT_EQ(errorOf(Manifest::fromJSON(
                inputManifest("f32", "[4611686018427387904]"), "m.json")),
            "m.json: entry 'x': byte size of 4611686018427387904 f32 elements "
            "overflows 64 bits");
}

TEST(RuntimeHardeningTest, EntryTypesAndNames) {
  EXPECT_EQ(
      errorOf(Manifest::fromJSON(inputManifest("q8_0", "[32]"), "m.json")),
      "m.json: entry 'x': dtype 'q8_0' is a storage format, not a "
      "runtime type");
  // A parameter kept as stored (the compile cache's manifests) reads back.
  llvm::Expected<Manifest> stored = Manifest::fromJSON(
      R"({"entry": "f", "arena_size": 0, "param_size": 68, "entries": [)"
      R"({"kind": "param", "name": "w", "offset": 0, "dtype": "q8_0", )"
      R"("shape": [2, 32]}]})",
      "m.json");
  ASSERT_TRUE(bool(stored)) << llvm::toString(stored.takeError());
  EXPECT_EQ(stored->entries[0].dtype, DType::Q8_0);
  EXPECT_EQ(stored->entries[0].byteSize(), 68u);
  EXPECT_EQ(
      errorOf(Manifest::fromJSON(
          inputManifest("f32", "[1]", "0", R"(, "alignment": 0)"), "m.json")),
      "m.json: 'alignment' 0 is not a power of two");
  std::string twice = R"({"entry": "f", "arena_size": 64, "param_size": 0,
    "entries": [{"kind": "input", "name": "x", "offset": 0, "dtype": "f32",
                 "shape": [1]},
                {"kind": "input", "name": "x", "offset": 4, "dtype": "f32",
                 "shape": [1]}]})";
  EXPECT_EQ(errorOf(Manifest::fromJSON(twice, "m.json")),
            "m.json: duplicate input 'x'");
}

Manifest withArena(uint64_t arena, uint64_t params = 0) {
  Manifest m;
  m.entry = "big";
  m.arenaSize = arena;
  m.paramSize = params;
  return m;
}

TEST(RuntimeHardeningTest, BudgetRefusesLargeArena) {
  EXPECT_EQ(errorOf(CompiledModel::create(withArena(uint64_t(1) << 40, 1024),
                                          std::make_unique<NullExecutor>(),
                                          /*memoryBudgetMB=*/64)),
            "model 'big': arena (1099511627776 bytes) + parameters (1024 "
            "bytes) = 1099511628800 bytes (1048576 MiB), over the memory "
            "budget of 67108864 bytes (--memory-budget-mb 64)");
  // Sizes that overflow when added are over any budget.
  EXPECT_NE(errorOf(CompiledModel::create(withArena(UINT64_MAX, 1),
                                          std::make_unique<NullExecutor>(), 64))
                .find("over the memory budget"),
            std::string::npos);
  // 0 is no limit; within the budget is fine.
  EXPECT_EQ(errorOf(CompiledModel::create(withArena(4096),
                                          std::make_unique<NullExecutor>(), 0)),
            "<success>");
  EXPECT_EQ(errorOf(CompiledModel::create(withArena(4096),
                                          std::make_unique<NullExecutor>(), 1)),
            "<success>");
}

TEST(RuntimeHardeningTest, BudgetFromEnvironment) {
  const char *old = std::getenv("RLX_MEMORY_BUDGET_MB");
  std::string saved = old ? old : "";
  setenv("RLX_MEMORY_BUDGET_MB", "2", 1);
  EXPECT_EQ(errorOf(CompiledModel::create(withArena(3 << 20),
                                          std::make_unique<NullExecutor>())),
            "model 'big': arena (3145728 bytes) + parameters (0 bytes) = "
            "3145728 bytes (3 MiB), over the memory budget of 2097152 bytes "
            "(RLX_MEMORY_BUDGET_MB=2)");
  setenv("RLX_MEMORY_BUDGET_MB", "lots", 1);
  EXPECT_EQ(errorOf(MemoryBudget::get()),
            "RLX_MEMORY_BUDGET_MB='lots' is not a number of MiB (0: no limit)");
  setenv("RLX_MEMORY_BUDGET_MB", "0", 1);
  EXPECT_EQ(errorOf(CompiledModel::create(withArena(3 << 20),
                                          std::make_unique<NullExecutor>())),
            "<success>");
  if (old)
    setenv("RLX_MEMORY_BUDGET_MB", saved.c_str(), 1);
  else
    unsetenv("RLX_MEMORY_BUDGET_MB");
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RLX_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define RLX_ASAN 1
#endif

// A model constructed directly (no budget) whose arena cannot be allocated
// refuses every call instead of writing through a null pointer. (ASan aborts
// on an allocation this large unless allocator_may_return_null=1.)
TEST(RuntimeHardeningTest, UnallocatableArenaIsAnError) {
#ifdef RLX_ASAN
  GTEST_SKIP() << "ASan reports the huge allocation itself";
#else
  CompiledModel model(withArena(uint64_t(1) << 62),
                      std::make_unique<NullExecutor>());
  std::string expected = "model 'big': cannot allocate its arena "
                         "(4611686018427387904 bytes) and parameters (0 "
                         "bytes)";
  EXPECT_EQ(errorOf(model.run({})), expected);
  EXPECT_EQ(errorOf(model.setParam("w", llvm::ArrayRef<float>())), expected);
#endif
}

// The JIT builds its manifest in memory from LIR (no fromJSON): an output of
// shape [1, 2^62, 4] f32 is 2^66 bytes, 0 modulo 2^64, and used to get a
// 16-byte arena that the kernel wrote past. verify() refuses it, and so do
// create() and the constructor.
Manifest wrappingManifest() {
  Manifest m;
  m.entry = "iota";
  m.arenaSize = 64;
  ManifestEntry e;
  e.kind = IOKind::Output;
  e.name = "y";
  e.shape = {1, int64_t(1) << 62, 4};
  e.dtype = DType::F32;
  m.entries.push_back(e);
  return m;
}

TEST(RuntimeHardeningTest, InMemoryManifestSizesAreChecked) {
  Manifest m = wrappingManifest();
  EXPECT_EQ(m.entries[0].byteSize(), UINT64_MAX);
  std::string got = errorOf(m.verify());
  EXPECT_EQ(got, "model 'iota': entry 'y': element count of shape [1, "
                 "4611686018427387904, 4] overflows 64 bits");
  EXPECT_EQ(errorOf(CompiledModel::create(
                wrappingManifest(), std::make_unique<NullExecutor>(), 64)),
            got);
  CompiledModel model(wrappingManifest(), std::make_unique<NullExecutor>());
  EXPECT_EQ(errorOf(model.run({})), got);
  EXPECT_TRUE(model.inputPlace("y").empty());

  // An entry past its storage, by an offset that wraps when added.
  Manifest past;
  past.entry = "f";
  past.arenaSize = 64;
  ManifestEntry x;
  x.name = "x";
  x.offset = UINT64_MAX - 8;
  x.shape = {4};
  past.entries.push_back(x);
  EXPECT_EQ(errorOf(past.verify()),
            "model 'f': entry 'x' lies past the end of its storage (16 bytes "
            "at offset 18446744073709551607, 64 bytes)");
  past.entries[0].offset = 0;
  EXPECT_EQ(errorOf(past.verify()), "<success>");
  past.arenaSize = uint64_t(1) << 63;
  EXPECT_EQ(errorOf(past.verify()),
            "model 'f': arena (9223372036854775808 bytes) or parameters (0 "
            "bytes) exceed 2^63 - 1 bytes");
}

} // namespace
