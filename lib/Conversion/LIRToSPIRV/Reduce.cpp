//===- Reduce.cpp - Axis reductions on SPIR-V -----------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reductions over arbitrary axes: one workgroup per output element, the
// threads striding over the reduced elements, then a tree reduction in
// workgroup memory.
//
//===----------------------------------------------------------------------===//

#include "GPUKernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include <limits>

using namespace mlir;
using namespace mlir::rlx;

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult mlir::rlx::emitGPUReduceKernel(GPUKernelEmitter &e, Operation *op,
                                             ArrayRef<GPUView> ins,
                                             const GPUView &out) {
  const GPUView &in = ins[0];
  if (in.isScalar())
    return op->emitOpError("expects a tensor operand on the SPIR-V back end");
  Type elt = out.elementType;
  ArrayRef<int64_t> axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
  bool keep = op->hasAttr("keep_dims");
  vector::CombiningKind kind = reductionKind(op);
  int64_t rank = in.rank();
  auto reduced = [&](int64_t d) {
    return llvm::is_contained(axes, d) || llvm::is_contained(axes, d - rank);
  };
  SmallVector<int64_t> keptShape, reducedShape;
  for (int64_t d = 0; d < rank; ++d)
    (reduced(d) ? reducedShape : keptShape).push_back(in.shape[d]);
  int64_t outputs = 1, count = 1;
  for (int64_t d : keptShape)
    outputs *= d;
  for (int64_t d : reducedShape)
    count *= d;

  Value init = e.reductionIdentity(kind, elt);
  int64_t threads = gpuRowThreads(e, count);
  Value scratch = e.sharedAlloc({threads}, elt);
  e.forEachWorkgroupItem(outputs, threads, [&](Value o, Value tid) {
    SmallVector<Value> kept = e.delinearize(o, keptShape);
    Value acc =
        e.forLoop(tid, e.index(count), threads, {init},
                  [&](Value r, ValueRange it) -> SmallVector<Value> {
                    SmallVector<Value> red = e.delinearize(r, reducedShape);
                    SmallVector<Value> idx;
                    unsigned ki = 0, ri = 0;
                    for (int64_t d = 0; d < rank; ++d)
                      idx.push_back(reduced(d) ? red[ri++] : kept[ki++]);
                    return {e.combine(kind, it[0], e.load(in, idx))};
                  })[0];
    acc = e.workgroupReduce(acc, kind, scratch, tid, threads);
    if (isa<mir::ReduceMeanOp>(op))
      acc = e.mulF(acc, e.constant(1.0 / count, elt));
    e.ifThen(arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::eq, tid,
                                   e.index(0)),
             [&] {
               SmallVector<Value> oidx;
               unsigned ki = 0;
               for (int64_t d = 0; d < rank; ++d) {
                 if (!reduced(d))
                   oidx.push_back(kept[ki++]);
                 else if (keep)
                   oidx.push_back(e.index(0));
               }
               e.store(acc, out, oidx);
             });
  });
  return success();
}
