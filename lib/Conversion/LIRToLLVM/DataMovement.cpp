//===- DataMovement.cpp - Gather, concat, slice, transpose... kernels -----===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Kernels that move data: embedding gathers (vectorized row copies; ids are
// clamped here for memory safety, and validated by the runtime before a
// run), concatenation and slices (copies into/out of subviews), transposes
// and reshapes of strided views, iota and broadcasts.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rlx;

/// A subview of `m` with `size` elements from `offset` along `axis`.
static Value sliceOf(KernelEmitter &e, Value m, int64_t axis, int64_t offset,
                     int64_t size) {
  auto ty = cast<MemRefType>(m.getType());
  SmallVector<OpFoldResult> offsets(ty.getRank(), e.b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(ty.getRank(), e.b.getIndexAttr(1));
  for (int64_t d : ty.getShape())
    sizes.push_back(e.b.getIndexAttr(d));
  offsets[axis] = e.b.getIndexAttr(offset);
  sizes[axis] = e.b.getIndexAttr(size);
  return memref::SubViewOp::create(e.b, e.loc, m, offsets, sizes, strides);
}

static LogicalResult emitGather(KernelEmitter &e, mir::GatherOp op, Value table,
                                Value indices, Value out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  if (op.getAxis() != 0)
    return op.emitOpError("the CPU back end gathers along axis 0 only");
  auto tTy = cast<MemRefType>(table.getType());
  auto iTy = cast<MemRefType>(indices.getType());
  int64_t vocab = tTy.getDimSize(0);
  ArrayRef<int64_t> rest = tTy.getShape().drop_front();
  e.loopNest(iTy.getShape(), [&](ValueRange ivs) {
    Value id = memref::LoadOp::create(b, loc, indices, ivs);
    Value row = arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
    row = arith::MaxSIOp::create(b, loc, row, e.index(0));
    row = arith::MinSIOp::create(b, loc, row, e.index(vocab - 1));
    if (rest.empty()) {
      memref::StoreOp::create(
          b, loc, memref::LoadOp::create(b, loc, table, row), out, ivs);
      return;
    }
    int64_t vl = KernelEmitter::innerStride(table) == 1 &&
                         KernelEmitter::innerStride(out) == 1
                     ? KernelEmitter::vectorWidth(tTy.getElementType())
                     : 1;
    e.loopNest(rest.drop_back(), [&](ValueRange mid) {
      e.forChunks(rest.back(), vl, [&](Value j, int64_t w) {
        SmallVector<Value> src = {row}, dst(ivs);
        src.append(mid.begin(), mid.end());
        dst.append(mid.begin(), mid.end());
        src.push_back(j);
        dst.push_back(j);
        e.store(e.load(table, src, w), out, dst, w);
      });
    });
  });
  return success();
}

/// out[i] = in[delinearize(linearize(i))]: a reshape of a strided view.
static void emitReshapeCopy(KernelEmitter &e, Value in, Value out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  auto inTy = cast<MemRefType>(in.getType());
  auto outTy = cast<MemRefType>(out.getType());
  e.loopNest(outTy.getShape(), [&](ValueRange ivs) {
    Value lin = e.index(0);
    for (auto [iv, d] : llvm::zip(ivs, outTy.getShape()))
      lin = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, lin, e.index(d)), iv);
    SmallVector<Value> src(inTy.getRank());
    for (int64_t d = inTy.getRank() - 1; d >= 0; --d) {
      Value size = e.index(inTy.getDimSize(d));
      src[d] = arith::RemUIOp::create(b, loc, lin, size);
      lin = arith::DivUIOp::create(b, loc, lin, size);
    }
    memref::StoreOp::create(b, loc, memref::LoadOp::create(b, loc, in, src),
                            out, ivs);
  });
}

LogicalResult mlir::rlx::emitDataMovementKernel(KernelEmitter &e, Operation *op,
                                                ArrayRef<KernelInput> ins,
                                                Value out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  for (const KernelInput &in : ins)
    if (!in.memref && !isa<mir::BroadcastOp>(op))
      return op->emitOpError("expects tensor operands on the CPU back end");
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](mir::GatherOp g) {
        return emitGather(e, g, ins[0].memref, ins[1].memref, out);
      })
      .Case([&](mir::ConcatOp c) {
        int64_t axis = c.getAxis();
        int64_t offset = 0;
        for (const KernelInput &in : ins) {
          int64_t size = in.shape()[axis];
          emitCopy(e, in, sliceOf(e, out, axis, offset, size));
          offset += size;
        }
        return success();
      })
      .Case([&](mir::SliceOp s) {
        int64_t axis = s.getAxis(), start = s.getStart();
        if (start < 0)
          start += ins[0].shape()[axis];
        emitCopy(e,
                 KernelInput{
                     sliceOf(e, ins[0].memref, axis, start, s.getSize()), {}},
                 out);
        return success();
      })
      .Case([&](mir::TransposeOp t) {
        ArrayRef<int64_t> perm = t.getPermutation();
        e.loopNest(
            cast<MemRefType>(out.getType()).getShape(), [&](ValueRange ivs) {
              SmallVector<Value> src(perm.size());
              for (auto [d, p] : llvm::enumerate(perm))
                src[p] = ivs[d];
              memref::StoreOp::create(
                  b, loc, memref::LoadOp::create(b, loc, ins[0].memref, src),
                  out, ivs);
            });
        return success();
      })
      .Case([&](mir::ReshapeOp) {
        emitReshapeCopy(e, ins[0].memref, out);
        return success();
      })
      .Case([&](mir::BroadcastOp) {
        emitCopy(e, ins[0], out);
        return success();
      })
      .Case([&](mir::IotaOp i) {
        Type elt = cast<MemRefType>(out.getType()).getElementType();
        int64_t axis = i.getAxis();
        e.loopNest(
            cast<MemRefType>(out.getType()).getShape(), [&](ValueRange ivs) {
              Value v =
                  arith::IndexCastOp::create(b, loc, b.getI64Type(), ivs[axis]);
              if (isa<FloatType>(elt))
                v = arith::SIToFPOp::create(b, loc, elt, v);
              else if (elt.getIntOrFloatBitWidth() != 64)
                v = arith::TruncIOp::create(b, loc, elt, v);
              memref::StoreOp::create(b, loc, v, out, ivs);
            });
        return success();
      })
      .Default(
          [](Operation *o) { return o->emitOpError("has no CPU kernel"); });
}
