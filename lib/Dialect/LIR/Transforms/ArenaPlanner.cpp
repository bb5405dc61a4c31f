//===- ArenaPlanner.cpp - Liveness-based arena placement ------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Offline placement of buffers with known live ranges into one arena: the
// greedy-by-size strategy with best-fit gap selection (as in TFLite's arena
// planner). Independent of the IR so it can be tested on its own.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/LIR/Transforms/Transforms.h"
#include "RLX/Support/CheckedSize.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"
#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::lir;

/// a + b, saturating at 2^63 - 1: an arena that large is refused by
/// planEntryArena, and the sums below must not wrap on the way there.
static int64_t addSaturating(int64_t a, int64_t b) {
  return static_cast<int64_t>(
      ::rlx::checkedAddBytes(a, b).value_or(::rlx::kMaxByteSize));
}

static bool liveTogether(const PlannedBuffer &a, const PlannedBuffer &b) {
  return a.start <= b.end && b.start <= a.end;
}

ArenaStats mlir::rlx::lir::planArena(MutableArrayRef<PlannedBuffer> buffers,
                                     int64_t alignment) {
  ArenaStats stats;
  SmallVector<unsigned> order;
  for (unsigned i = 0, e = buffers.size(); i < e; ++i)
    order.push_back(i);
  auto alignedSize = [&](const PlannedBuffer &b) {
    return static_cast<int64_t>(std::min<uint64_t>(
        llvm::alignTo(b.size, alignment), ::rlx::kMaxByteSize));
  };
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    if (buffers[a].size != buffers[b].size)
      return buffers[a].size > buffers[b].size;
    return buffers[a].start < buffers[b].start;
  });

  SmallVector<unsigned> placed;
  for (unsigned i : order) {
    PlannedBuffer &buf = buffers[i];
    int64_t size = alignedSize(buf);
    stats.naiveBytes = addSaturating(stats.naiveBytes, size);
    if (size == 0) {
      buf.offset = 0;
      continue;
    }
    // The placed buffers this one must not overlap, by offset.
    SmallVector<std::pair<int64_t, int64_t>> busy;
    for (unsigned j : placed)
      if (liveTogether(buf, buffers[j]))
        busy.push_back(std::make_pair(
            buffers[j].offset,
            addSaturating(buffers[j].offset, alignedSize(buffers[j]))));
    llvm::sort(busy);
    int64_t bestOffset = -1;
    int64_t bestGap = std::numeric_limits<int64_t>::max();
    int64_t cursor = 0;
    for (auto [begin, end] : busy) {
      int64_t gap = begin - cursor;
      if (gap >= size && gap < bestGap) {
        bestGap = gap;
        bestOffset = cursor;
      }
      cursor = std::max(cursor, end);
    }
    buf.offset = bestOffset >= 0 ? bestOffset : cursor;
    stats.arenaBytes =
        std::max(stats.arenaBytes, addSaturating(buf.offset, size));
    placed.push_back(i);
  }

  // The peak live set: the largest sum over any instant.
  for (const PlannedBuffer &probe : buffers) {
    int64_t live = 0;
    for (const PlannedBuffer &b : buffers)
      if (b.start <= probe.start && probe.start <= b.end)
        live = addSaturating(live, alignedSize(b));
    stats.peakLiveBytes = std::max(stats.peakLiveBytes, live);
  }
  return stats;
}
