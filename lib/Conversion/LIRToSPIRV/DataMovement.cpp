//===- DataMovement.cpp - Gather, concat, slice, transpose... GPU kernels -===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Kernels that move data, one thread per output element: gathers (ids
// clamped for memory safety; the runtime validates them before a run),
// concatenation (the thread picks its input), slices and transposes (copies
// from a re-strided view of the input), reshapes of strided views, iota and
// broadcasts.
//
//===----------------------------------------------------------------------===//

#include "GPUKernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rlx;

/// Stores `value` at the output's linear position `i` (coordinates `coords`).
static void storeAt(GPUKernelEmitter &e, Value value, const GPUView &out,
                    Value i, ArrayRef<Value> coords) {
  if (out.isContiguous())
    e.store(value,
            GPUView{out.buffer,
                    {},
                    out.elementType,
                    out.offset,
                    {out.numElements()},
                    {1}},
            {i});
  else
    e.store(value, out, coords);
}

static LogicalResult emitGather(GPUKernelEmitter &e, mir::GatherOp op,
                                const GPUView &table, const GPUView &indices,
                                const GPUView &out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  int64_t axis = op.getAxis();
  int64_t rows = table.shape[axis];
  int64_t irank = indices.rank();
  e.forEachElement(out.numElements(), [&](Value i) {
    SmallVector<Value> c = e.delinearize(i, out.shape);
    SmallVector<Value> idx(c.begin() + axis, c.begin() + axis + irank);
    Value id = e.load(indices, idx);
    Value row = arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
    row = arith::MaxSIOp::create(b, loc, row, e.index(0));
    row = arith::MinSIOp::create(b, loc, row, e.index(rows - 1));
    SmallVector<Value> src(c.begin(), c.begin() + axis);
    src.push_back(row);
    src.append(c.begin() + axis + irank, c.end());
    storeAt(e, e.load(table, src), out, i, c);
  });
  return success();
}

static void emitConcat(GPUKernelEmitter &e, mir::ConcatOp op,
                       ArrayRef<GPUView> ins, const GPUView &out) {
  int64_t axis = op.getAxis();
  Type elt = out.elementType;
  e.forEachElement(out.numElements(), [&](Value i) {
    SmallVector<Value> c = e.delinearize(i, out.shape);
    // Nested ifs pick the input whose range along `axis` holds c[axis].
    std::function<Value(size_t, int64_t)> pick = [&](size_t k,
                                                     int64_t start) -> Value {
      SmallVector<Value> src(c);
      src[axis] = arith::SubIOp::create(e.b, e.loc, c[axis], e.index(start));
      if (k + 1 == ins.size())
        return e.load(ins[k], src);
      int64_t end = start + ins[k].shape[axis];
      return e.ifThenElse(
          e.cmpLTConst(c[axis], end), {elt},
          [&]() -> SmallVector<Value> { return {e.load(ins[k], src)}; },
          [&]() -> SmallVector<Value> { return {pick(k + 1, end)}; })[0];
    };
    storeAt(e, pick(0, 0), out, i, c);
  });
}

/// out[i] = in[delinearize(linearize(i))]: a reshape of a strided view.
static void emitReshapeCopy(GPUKernelEmitter &e, const GPUView &in,
                            const GPUView &out) {
  e.forEachElement(out.numElements(), [&](Value i) {
    Value v = in.isContiguous() ? e.load(GPUView{in.buffer,
                                                 {},
                                                 in.elementType,
                                                 in.offset,
                                                 {in.numElements()},
                                                 {1}},
                                         {i})
                                : e.load(in, e.delinearize(i, in.shape));
    SmallVector<Value> oc;
    if (!out.isContiguous())
      oc = e.delinearize(i, out.shape);
    storeAt(e, v, out, i, oc);
  });
}

LogicalResult mlir::rlx::emitGPUDataMovementKernel(GPUKernelEmitter &e,
                                                   Operation *op,
                                                   ArrayRef<GPUView> ins,
                                                   const GPUView &out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  for (const GPUView &in : ins)
    if (in.isScalar() && !isa<mir::BroadcastOp>(op))
      return op->emitOpError("expects tensor operands on the SPIR-V back end");
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](mir::GatherOp g) {
        return emitGather(e, g, ins[0], ins[1], out);
      })
      .Case([&](mir::ConcatOp c) {
        emitConcat(e, c, ins, out);
        return success();
      })
      .Case([&](mir::SliceOp s) {
        int64_t axis = s.getAxis(), start = s.getStart();
        if (start < 0)
          start += ins[0].shape[axis];
        GPUView slice = ins[0];
        slice.offset += start * slice.strides[axis];
        slice.shape[axis] = s.getSize();
        emitGPUCopy(e, slice, out);
        return success();
      })
      .Case([&](mir::TransposeOp t) {
        // The transpose is a copy from a view with permuted dims.
        GPUView permuted = ins[0];
        for (auto [d, p] : llvm::enumerate(t.getPermutation())) {
          permuted.shape[d] = ins[0].shape[p];
          permuted.strides[d] = ins[0].strides[p];
        }
        emitGPUCopy(e, permuted, out);
        return success();
      })
      .Case([&](mir::ReshapeOp) {
        emitReshapeCopy(e, ins[0], out);
        return success();
      })
      .Case([&](mir::BroadcastOp) {
        emitGPUCopy(e, ins[0], out);
        return success();
      })
      .Case([&](mir::IotaOp i) {
        Type elt = out.elementType;
        int64_t axis = i.getAxis();
        e.forEachElement(out.numElements(), [&](Value lin) {
          SmallVector<Value> c = e.delinearize(lin, out.shape);
          Value v = arith::IndexCastOp::create(b, loc, b.getI32Type(), c[axis]);
          if (isa<FloatType>(elt))
            v = arith::SIToFPOp::create(b, loc, elt, v);
          else
            v = e.cast(v, elt);
          storeAt(e, v, out, lin, c);
        });
        return success();
      })
      .Default(
          [](Operation *o) { return o->emitOpError("has no SPIR-V kernel"); });
}
