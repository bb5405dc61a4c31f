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
#include "RLX/Support/CheckedSize.h"
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

/// Bytes of a buffer whose size the LIR verifier checked (lir_alloc_c2).
static int64_t bufferBytes(MemRefType ty) { return mir::getStorageBytes(ty); }

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
             mir::RsqrtOp, mir::TanhOp, mir::ErfOp, mir::SinOp, mir::CosOp,
             mir::SigmoidOp, mir::SiluOp, mir::GeluOp, mir::ReluOp, mir::NegOp,
             mir::ActivationOp, mir::AbsOp, mir::FloorOp, mir::CeilOp,
             mir::RoundOp, mir::SignOp, mir::ClipOp>(op);
}

/// Whether `alloc`'s only uses are entry inputs, reads, and writes by
/// kernels before `before`: its bytes, once written, stay as they are.
static bool writtenOnlyBefore(AllocOp alloc, KernelOp before) {
  for (OpOperand &use : alloc->getUses()) {
    Operation *user = use.getOwner();
    if (auto io = dyn_cast<IOOp>(user)) {
      if (io.getKind() != IOKind::Input)
        return false;
      continue;
    }
    auto kernel = dyn_cast<KernelOp>(user);
    if (!kernel)
      return false; // A view aliasing it.
    bool writes = use.getOperandNumber() >= kernel.getIns().size();
    if (writes && (kernel == before || !kernel->isBeforeInBlock(before)))
      return false;
  }
  return true;
}

/// A concat whose first operand is a whole buffer that lies contiguously at
/// the start of its result (every dim before the axis is 1) and is written
/// only before the concat: that buffer becomes the head of the result's
/// storage, and the kernel copies only the other operands, into the tail.
/// A KV-cache step appends the new keys to the past ones without copying
/// the past.
static void placeConcatHeadsInPlace(Block &block) {
  for (KernelOp kernel : llvm::make_early_inc_range(block.getOps<KernelOp>())) {
    auto concat = dyn_cast_or_null<mir::ConcatOp>(kernel.getComputeOp());
    Block &body = kernel.getBody().front();
    if (!concat || kernel.getOuts().size() != 1 || kernel.getIns().size() < 2 ||
        concat.getInputs().size() != kernel.getIns().size() ||
        !llvm::equal(concat.getInputs(), body.getArguments()))
      continue;
    auto out = kernel.getOuts()[0].getDefiningOp<AllocOp>();
    auto head = kernel.getIns()[0].getDefiningOp<AllocOp>();
    if (!out || !head || head == out ||
        llvm::is_contained(kernel.getIns().drop_front(), head.getResult()))
      continue;
    int64_t axis = concat.getAxis();
    MemRefType outTy = out.getType(), headTy = head.getType();
    if (!llvm::all_of(outTy.getShape().take_front(axis),
                      [](int64_t d) { return d == 1; }) ||
        !writtenOnlyBefore(head, kernel))
      continue;

    // The head becomes a view of the result's first bytes.
    if (head->isBeforeInBlock(out))
      out->moveBefore(head);
    OpBuilder b(head);
    auto headView = ViewOp::create(b, head.getLoc(), headTy, MemorySpace::Arena,
                                   0, out.getResult());
    head.replaceAllUsesWith(headView.getResult());
    head.erase();

    // The kernel writes the other operands into the tail.
    SmallVector<int64_t> tailShape(outTy.getShape());
    tailShape[axis] -= headTy.getDimSize(axis);
    auto tailTy = MemRefType::get(tailShape, outTy.getElementType());
    b.setInsertionPointAfter(headView);
    auto tail = ViewOp::create(b, kernel.getLoc(), tailTy, MemorySpace::Arena,
                               bufferBytes(headTy), out.getResult());
    kernel.getInsMutable().erase(0);
    kernel.getOutsMutable().assign(tail.getResult());
    concat->eraseOperand(0);
    body.eraseArgument(0);
    concat.getResult().setType(
        RankedTensorType::get(tailShape, outTy.getElementType()));
  }
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
  if (options.inplace)
    placeConcatHeadsInPlace(block);
  SmallVector<Buffer> buffers;
  DenseMap<Operation *, int> bufferOf;
  for (AllocOp alloc : block.getOps<AllocOp>()) {
    bufferOf[alloc] = buffers.size();
    Buffer b;
    b.alloc = alloc;
    // A size that wraps would place a huge buffer in a small arena.
    std::optional<int64_t> size = mir::getCheckedStorageBytes(alloc.getType());
    if (!size)
      return alloc.emitOpError("buffer ")
             << alloc.getType() << " has a byte size past 2^63 - 1";
    b.plan.size = *size;
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
  // planArena saturates its sums at 2^63 - 1.
  if (static_cast<uint64_t>(s.arenaBytes) >= ::rlx::kMaxByteSize)
    return entry.emitOpError("the arena of ")
           << plans.size() << " buffers does not fit in 2^63 - 1 bytes";

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
