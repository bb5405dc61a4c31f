//===- Reduce.cpp - Axis reductions on the CPU ----------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reductions over arbitrary axes accumulate into the output, vectorized when
// the last axis is kept (one thread: the kernel layer's row kernels cover
// the last-axis statistics of norms and softmax).
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include <limits>

using namespace mlir;
using namespace mlir::rlx;

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult mlir::rlx::emitReduceKernel(KernelEmitter &e, Operation *op,
                                          ArrayRef<KernelInput> ins,
                                          Value out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value in = ins[0].memref;
  if (!in)
    return op->emitOpError("expects a tensor operand on the CPU back end");
  auto inTy = cast<MemRefType>(in.getType());
  auto outTy = cast<MemRefType>(out.getType());
  Type elt = outTy.getElementType();
  ArrayRef<int64_t> axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
  bool keep = op->hasAttr("keep_dims");
  vector::CombiningKind kind = reductionKind(op);
  int64_t rank = inTy.getRank();
  auto reduced = [&](int64_t d) {
    return llvm::is_contained(axes, d) || llvm::is_contained(axes, d - rank);
  };
  bool lastKept = !reduced(rank - 1);

  // out = identity.
  Value identity = e.reductionIdentity(kind, elt);
  if (outTy.getRank() == 0)
    e.store(identity, out, {}, 1);
  else
    e.loopNest(outTy.getShape(),
               [&](ValueRange ivs) { e.store(identity, out, ivs, 1); });

  // out[proj(i)] = combine(out[proj(i)], in[i]).
  int64_t vl =
      lastKept ? std::min<int64_t>(KernelEmitter::vectorWidth(elt), 16) : 1;
  if (lastKept && (KernelEmitter::innerStride(in) != 1 ||
                   KernelEmitter::innerStride(out) != 1))
    vl = 1;
  ArrayRef<int64_t> shape = inTy.getShape();
  auto project = [&](ValueRange ivs) {
    SmallVector<Value> o;
    for (int64_t d = 0; d < rank; ++d) {
      if (!reduced(d))
        o.push_back(ivs[d]);
      else if (keep)
        o.push_back(e.index(0));
    }
    return o;
  };
  if (lastKept) {
    e.loopNest(shape.drop_back(), [&](ValueRange outer) {
      e.forChunks(shape.back(), vl, [&](Value j, int64_t width) {
        SmallVector<Value> ivs(outer);
        ivs.push_back(j);
        SmallVector<Value> o = project(ivs);
        Value acc =
            e.combine(kind, e.load(out, o, width), e.load(in, ivs, width));
        e.store(acc, out, o, width);
      });
    });
  } else {
    e.loopNest(shape, [&](ValueRange ivs) {
      SmallVector<Value> o = project(ivs);
      Value acc = e.combine(kind, e.load(out, o, 1), e.load(in, ivs, 1));
      e.store(acc, out, o, 1);
    });
  }
  if (isa<mir::ReduceMeanOp>(op)) {
    int64_t count = 1;
    for (int64_t d = 0; d < rank; ++d)
      if (reduced(d))
        count *= shape[d];
    Value inv = e.constant(1.0 / count, elt);
    e.loopNest(outTy.getShape(), [&](ValueRange ivs) {
      Value v = e.load(out, ivs, 1);
      e.store(arith::MulFOp::create(b, loc, v, inv), out, ivs, 1);
    });
  }
  return success();
}
