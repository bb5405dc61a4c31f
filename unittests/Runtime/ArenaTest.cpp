//===- ArenaTest.cpp - Giving a model's arena back ------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// CompiledModel::releaseArena drops the pages of a mapped arena (a process
// keeping a prompt graph and decode graphs holds one graph's scratch memory
// at a time); the next run faults them in again. Residency is read with
// mincore(2).
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/CompiledModel.h"

#include "gtest/gtest.h"

#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

using namespace rlx;

namespace {

/// Writes `value` into every byte of the arena, as a run's kernels would
/// into their scratch buffers.
class FillExecutor : public Executor {
public:
  explicit FillExecutor(uint8_t value) : value(value) {}
  llvm::Error execute(const Manifest &, llvm::MutableArrayRef<uint8_t> arena,
                      llvm::ArrayRef<uint8_t>, bool) override {
    std::memset(arena.data(), value, arena.size());
    return llvm::Error::success();
  }
  std::string describe() const override { return "fill"; }

private:
  uint8_t value;
};

/// A model whose arena is one input "x" of `elements` f32.
CompiledModel modelWithArena(int64_t elements, uint8_t fill) {
  Manifest m;
  m.entry = "scratch";
  m.arenaSize = elements * 4;
  ManifestEntry x;
  x.kind = IOKind::Input;
  x.name = "x";
  x.shape = {elements};
  x.dtype = DType::F32;
  m.entries.push_back(x);
  return CompiledModel(std::move(m), std::make_unique<FillExecutor>(fill));
}

/// Resident pages of `bytes` (whose start is page-aligned).
size_t residentPages(llvm::MutableArrayRef<uint8_t> bytes) {
  size_t page = ::sysconf(_SC_PAGESIZE);
  size_t pages = (bytes.size() + page - 1) / page;
  std::vector<unsigned char> vec(pages);
  EXPECT_EQ(::mincore(bytes.data(), bytes.size(), vec.data()), 0);
  size_t resident = 0;
  for (unsigned char v : vec)
    resident += v & 1;
  return resident;
}

std::string runOnce(CompiledModel &model, const TensorRefMap_t &feeds) {
  llvm::Expected<TensorRefMap_t> out = model.runInArena(feeds);
  return out ? "<success>" : llvm::toString(out.takeError());
}

bool allBytesAre(llvm::ArrayRef<uint8_t> bytes, uint8_t value) {
  return llvm::all_of(bytes, [&](uint8_t b) { return b == value; });
}

TEST(RuntimeArenaTest, ReleaseGivesMappedPagesBack) {
  int64_t elements = int64_t(1) << 20; // 4 MiB: a mapped arena
  CompiledModel model = modelWithArena(elements, 0x5a);
  llvm::MutableArrayRef<uint8_t> x = model.inputPlace("x");
  ASSERT_EQ(x.size(), size_t(elements * 4));
  // Nothing touched the fresh mapping yet.
  EXPECT_EQ(residentPages(x), 0u);

  std::vector<float> zeros(elements, 0.0f);
  Tensor input = Tensor::fromF32({elements}, zeros);
  TensorRefMap_t feeds;
  feeds.emplace("x", input);
  ASSERT_EQ(runOnce(model, feeds), "<success>");
  size_t pages =
      (x.size() + ::sysconf(_SC_PAGESIZE) - 1) / ::sysconf(_SC_PAGESIZE);
  EXPECT_EQ(residentPages(x), pages);
  EXPECT_TRUE(allBytesAre(x, 0x5a));

  EXPECT_EQ(model.releaseArena(), uint64_t(elements * 4));
  EXPECT_EQ(residentPages(x), 0u);
  // Released pages read as zeros (and reading maps the shared zero page,
  // not fresh memory).
  EXPECT_TRUE(allBytesAre(x, 0));

  // The next run writes them again.
  ASSERT_EQ(runOnce(model, feeds), "<success>");
  EXPECT_EQ(residentPages(x), pages);
  EXPECT_TRUE(allBytesAre(x, 0x5a));
}

TEST(RuntimeArenaTest, SmallArenaIsKept) {
  // Under a megabyte the arena is a heap block: nothing is given back and
  // its bytes stay.
  CompiledModel model = modelWithArena(256, 0x33);
  std::vector<float> zeros(256, 0.0f);
  TensorRefMap_t feeds;
  Tensor input = Tensor::fromF32({256}, zeros);
  feeds.emplace("x", input);
  ASSERT_EQ(runOnce(model, feeds), "<success>");
  EXPECT_EQ(model.releaseArena(), 0u);
  EXPECT_TRUE(allBytesAre(model.inputPlace("x"), 0x33));
}

} // namespace
