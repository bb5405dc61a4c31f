//===- PlanArena.cpp - Liveness, in-place reuse and buffer offsets --------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// lir-plan-arena: the storage decisions of an entry, made on LIR after the
// MIR -> LIR conversion has bufferized it into unplanned buffers
// (`lir.alloc`). Live ranges come from the schedule, elementwise kernels may
// reuse an input that dies with them, and planArena places what is left.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/LIR/Transforms/Passes.h"
#include "RLX/Dialect/LIR/Transforms/Transforms.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include <limits>

namespace mlir::rlx::lir {
#define GEN_PASS_DEF_LIRPLANARENAPASS
#include "RLX/Dialect/LIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx::lir

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::lir;

static constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

static int64_t bufferBytes(MemRefType ty) {
  return ty.getNumElements() * getElementBytes(ty.getElementType());
}

/// Kernels that may write their result over an input they read last.
static bool isElementwiseKernel(KernelOp kernel) {
  Operation *op = kernel.getComputeOp();
  if (!op || kernel.getOuts().size() != 1)
    return false;
  if (isa<mir::ElementwiseOp>(op))
    return true;
  return op->getNumResults() == 1 && op->getNumRegions() == 0 &&
         isa<mir::AddOp, mir::SubOp, mir::MulOp, mir::DivOp, mir::MaxOp,
             mir::MinOp, mir::PowOp, mir::ExpOp, mir::LogOp, mir::SqrtOp,
             mir::RsqrtOp, mir::TanhOp, mir::ErfOp, mir::SigmoidOp, mir::SiluOp,
             mir::GeluOp, mir::ReluOp, mir::NegOp>(op);
}

namespace {
struct Buffer {
  AllocOp alloc;
  PlannedBuffer plan;
  bool isInput = false, isOutput = false, written = false;
  /// Merged into another buffer's storage (in place), or -1.
  int mergedInto = -1;
};
} // namespace

LogicalResult mlir::rlx::lir::planEntryArena(EntryOp entry,
                                             const ArenaPlanOptions &options,
                                             ArenaStats *stats) {
  Block &block = entry.getBlock();
  SmallVector<Buffer> buffers;
  DenseMap<Operation *, int> bufferOf;
  for (AllocOp alloc : block.getOps<AllocOp>()) {
    bufferOf[alloc] = buffers.size();
    Buffer b;
    b.alloc = alloc;
    b.plan.size = bufferBytes(alloc.getType());
    buffers.push_back(b);
  }
  if (buffers.empty())
    return success();

  // The buffer a value's storage belongs to (through aliases), or -1.
  auto rootOf = [&](Value v) -> int {
    while (auto view = v.getDefiningOp<ViewOp>()) {
      if (!view.getSource())
        return -1;
      v = view.getSource();
    }
    auto alloc = v.getDefiningOp<AllocOp>();
    return alloc ? bufferOf.lookup(alloc) : -1;
  };
  auto find = [&](int b) {
    while (buffers[b].mergedInto >= 0)
      b = buffers[b].mergedInto;
    return b;
  };

  // Live ranges over the schedule.
  for (IOOp io : block.getOps<IOOp>()) {
    int b = rootOf(io.getView());
    if (b < 0)
      continue;
    if (io.getKind() == IOKind::Input) {
      buffers[b].isInput = buffers[b].written = true;
      buffers[b].plan.start = buffers[b].plan.end = -1;
    } else if (io.getKind() == IOKind::Output) {
      buffers[b].isOutput = true;
    }
  }
  SmallVector<KernelOp> kernels(block.getOps<KernelOp>());
  for (auto [index, kernel] : llvm::enumerate(kernels)) {
    int64_t k = index;
    for (Value in : kernel.getIns()) {
      int b = rootOf(in);
      if (b < 0)
        continue;
      if (!buffers[b].written)
        return kernel.emitOpError("reads a buffer that no earlier kernel "
                                  "writes and that is not an input");
      buffers[b].plan.end = std::max(buffers[b].plan.end, k);
    }
    for (Value out : kernel.getOuts()) {
      int b = rootOf(out);
      if (b < 0 || buffers[b].written)
        continue;
      buffers[b].written = true;
      buffers[b].plan.start = buffers[b].plan.end = k;
    }
  }
  for (Buffer &b : buffers) {
    if (!b.written)
      return b.alloc.emitOpError("is never written: no kernel writes it and "
                                 "it is not an input");
    if (b.isOutput)
      b.plan.end = kForever;
  }

  // In place: an elementwise kernel writes over a same-sized input buffer
  // that it reads last.
  if (options.inplace) {
    for (auto [index, kernel] : llvm::enumerate(kernels)) {
      if (!isElementwiseKernel(kernel))
        continue;
      auto outAlloc = kernel.getOuts()[0].getDefiningOp<AllocOp>();
      if (!outAlloc)
        continue;
      Buffer &out = buffers[bufferOf.lookup(outAlloc)];
      if (out.mergedInto >= 0)
        continue;
      for (Value in : kernel.getIns()) {
        auto inAlloc = in.getDefiningOp<AllocOp>();
        if (!inAlloc || inAlloc == outAlloc)
          continue;
        int b = find(bufferOf.lookup(inAlloc));
        Buffer &src = buffers[b];
        if (src.isInput || src.isOutput ||
            src.plan.end != static_cast<int64_t>(index) ||
            src.plan.size != out.plan.size)
          continue;
        out.mergedInto = b;
        src.plan.end = out.plan.end;
        src.isOutput = out.isOutput;
        kernel.setInplace(true);
        break;
      }
    }
  }

  // Place the buffers that own storage.
  SmallVector<PlannedBuffer> plans;
  SmallVector<int> planOf(buffers.size(), -1);
  for (auto [i, b] : llvm::enumerate(buffers)) {
    if (b.mergedInto >= 0)
      continue;
    planOf[i] = plans.size();
    plans.push_back(b.plan);
  }
  ArenaStats s = planArena(plans, entry.getAlignment());
  if (stats)
    *stats = s;

  // Rewrite: aliases move with their buffer, buffers become views.
  SmallVector<std::pair<ViewOp, int>> aliases;
  for (ViewOp view : block.getOps<ViewOp>())
    if (int b = rootOf(view); b >= 0)
      aliases.push_back({view, b});
  for (auto [view, b] : aliases)
    view.setByteOffset(view.getByteOffset() + plans[planOf[find(b)]].offset);
  OpBuilder builder(entry.getContext());
  for (auto [i, b] : llvm::enumerate(buffers)) {
    builder.setInsertionPoint(b.alloc);
    auto view = ViewOp::create(builder, b.alloc.getLoc(), b.alloc.getType(),
                               MemorySpace::Arena,
                               plans[planOf[find(i)]].offset, Value());
    b.alloc.replaceAllUsesWith(view.getResult());
    b.alloc.erase();
  }
  entry.setArenaSize(s.arenaBytes);
  return success();
}

namespace {
struct LIRPlanArenaPass
    : public mlir::rlx::lir::impl::LIRPlanArenaPassBase<LIRPlanArenaPass> {
  using Base::Base;
  void runOnOperation() override {
    ArenaPlanOptions options;
    options.inplace = inplace;
    for (EntryOp entry :
         llvm::make_early_inc_range(getOperation().getOps<EntryOp>())) {
      bool unplanned = !entry.getBlock().getOps<AllocOp>().empty();
      ArenaStats s;
      if (failed(planEntryArena(entry, options, &s)))
        return signalPassFailure();
      if (stats && unplanned)
        entry.emitRemark() << "arena " << s.arenaBytes << " bytes (naive "
                           << s.naiveBytes << ", peak live " << s.peakLiveBytes
                           << "), params " << entry.getParamSize() << " bytes";
    }
  }
};
} // namespace
