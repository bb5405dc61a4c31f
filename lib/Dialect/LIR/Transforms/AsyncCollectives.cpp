//===- AsyncCollectives.cpp - All-reduces beside independent kernels ------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// lir-async-collectives: an all-reduce kernel followed by kernels that do
// not touch its buffers is split into a `start` kernel and a `wait` kernel
// placed before the first kernel that does, so MPI moves the partial sums
// while those kernels compute.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/LIR/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::rlx::lir {
#define GEN_PASS_DEF_LIRASYNCCOLLECTIVESPASS
#include "RLX/Dialect/LIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx::lir

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::lir;

/// Splits `kernel` (a whole all-reduce) when the kernel after it does not
/// touch its buffers.
static void splitAllReduce(KernelOp kernel) {
  Block *block = kernel->getBlock();
  SmallVector<Value> buffers(kernel->getOperands());
  KernelOp next, firstUser;
  for (Operation *op = kernel->getNextNode(); op; op = op->getNextNode()) {
    auto k = dyn_cast<KernelOp>(op);
    if (!k)
      continue;
    if (!next)
      next = k;
    if (touchesAny(k, buffers)) {
      firstUser = k;
      break;
    }
  }
  // Nothing runs in between: the blocking call costs least.
  if (!next || next == firstUser)
    return;
  auto start = cast<AllReduceOp>(kernel.getComputeOp());
  start.setPhase(CollectivePhase::Start);
  OpBuilder b(kernel->getContext());
  if (firstUser)
    b.setInsertionPoint(firstUser);
  else
    b.setInsertionPointToEnd(block);
  auto wait = cast<KernelOp>(b.clone(*kernel));
  wait.setName((kernel.getName() + "_wait").str());
  cast<AllReduceOp>(wait.getComputeOp()).setPhase(CollectivePhase::Wait);
}

namespace {
struct LIRAsyncCollectivesPass
    : public lir::impl::LIRAsyncCollectivesPassBase<LIRAsyncCollectivesPass> {
  void runOnOperation() override {
    for (EntryOp entry : getOperation().getOps<EntryOp>()) {
      SmallVector<KernelOp> reduces;
      for (KernelOp k : entry.getBlock().getOps<KernelOp>())
        if (getAllReducePhase(k) == CollectivePhase::Whole)
          reduces.push_back(k);
      for (KernelOp k : reduces)
        splitAllReduce(k);
    }
  }
};
} // namespace
