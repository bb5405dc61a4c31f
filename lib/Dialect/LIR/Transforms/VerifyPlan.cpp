//===- VerifyPlan.cpp - Check an arena plan for live overlaps -------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/LIR/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include <limits>

namespace mlir::rlx::lir {
#define GEN_PASS_DEF_LIRVERIFYPLANPASS
#include "RLX/Dialect/LIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx::lir

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::lir;

namespace {
struct Live {
  ViewOp view;
  int64_t begin, end;                                  // bytes
  int64_t first = std::numeric_limits<int64_t>::max(); // first write
  int64_t last = -1;                                   // last read
};
} // namespace

LogicalResult mlir::rlx::lir::verifyPlan(EntryOp entry) {
  constexpr int64_t kStart = -1, kEnd = std::numeric_limits<int64_t>::max();
  llvm::DenseMap<Operation *, unsigned> index;
  SmallVector<Live> roots;
  for (ViewOp view : entry.getBlock().getOps<ViewOp>()) {
    if (view.getSpace() != MemorySpace::Arena || view.getSource())
      continue;
    index[view] = roots.size();
    roots.push_back(
        {view, static_cast<int64_t>(view.getByteOffset()),
         static_cast<int64_t>(view.getByteOffset()) + view.getExtentBytes()});
  }
  auto rootOf = [&](Value v) -> Live * {
    auto view = v.getDefiningOp<ViewOp>();
    if (!view)
      return nullptr;
    auto it = index.find(view.getRootView());
    return it == index.end() ? nullptr : &roots[it->second];
  };
  for (IOOp io : entry.getBlock().getOps<IOOp>()) {
    Live *l = rootOf(io.getView());
    if (!l)
      continue;
    if (io.getKind() == IOKind::Input)
      l->first = kStart;
    if (io.getKind() == IOKind::Output)
      l->last = kEnd;
  }
  SmallVector<KernelOp> kernels(entry.getBlock().getOps<KernelOp>());
  for (auto [k, kernel] : llvm::enumerate(kernels)) {
    for (Value in : kernel.getIns()) {
      Live *l = rootOf(in);
      if (!l)
        continue;
      if (l->first > static_cast<int64_t>(k))
        return kernel.emitOpError("reads arena bytes [")
               << l->begin << ", " << l->end << ") before anything wrote them";
      l->last = std::max<int64_t>(l->last, k);
    }
    for (Value out : kernel.getOuts())
      if (Live *l = rootOf(out))
        l->first = std::min<int64_t>(l->first, k);
  }
  for (Live &l : roots)
    if (l.last < l.first)
      l.last = l.first; // Written and never read: live at its kernel only.

  for (size_t i = 0; i < roots.size(); ++i) {
    for (size_t j = i + 1; j < roots.size(); ++j) {
      Live &a = roots[i], &b = roots[j];
      bool bytes = a.begin < b.end && b.begin < a.end;
      bool time = a.first <= b.last && b.first <= a.last;
      if (!bytes || !time)
        continue;
      // In place: one dies at kernel k, the other is born there, k allows
      // it and they are the same bytes.
      auto inplace = [&](Live &dying, Live &born) {
        if (dying.last != born.first || born.first < 0 ||
            born.first >= static_cast<int64_t>(kernels.size()))
          return false;
        KernelOp k = kernels[born.first];
        return k.getInplace() && dying.begin == born.begin &&
               dying.end == born.end;
      };
      if (inplace(a, b) || inplace(b, a))
        continue;
      auto when = [](int64_t v) {
        return v == kStart ? std::string("start")
               : v == kEnd ? std::string("end")
                           : "kernel " + std::to_string(v);
      };
      return b.view.emitOpError("overlaps the view at arena [")
             << a.begin << ", " << a.end << ") live from " << when(a.first)
             << " to " << when(a.last) << " while this one, at [" << b.begin
             << ", " << b.end << "), is live from " << when(b.first) << " to "
             << when(b.last);
    }
  }
  return success();
}

namespace {
struct LIRVerifyPlanPass
    : public mlir::rlx::lir::impl::LIRVerifyPlanPassBase<LIRVerifyPlanPass> {
  using Base::Base;
  void runOnOperation() override {
    for (EntryOp entry : getOperation().getOps<EntryOp>())
      if (failed(verifyPlan(entry)))
        return signalPassFailure();
  }
};
} // namespace
