//===- GPUKernelEmitter.cpp - Building blocks of the GPU kernels ----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "GPUKernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"
#include <cmath>

using namespace mlir;
using namespace mlir::rlx;

//===----------------------------------------------------------------------===//
// Constants and index arithmetic
//===----------------------------------------------------------------------===//

Value GPUKernelEmitter::add(Value a, Value c) {
  return arith::AddIOp::create(b, loc, a, c);
}
Value GPUKernelEmitter::mul(Value a, Value c) {
  return arith::MulIOp::create(b, loc, a, c);
}
Value GPUKernelEmitter::mulConst(Value a, int64_t c) {
  if (c == 1)
    return a;
  return mul(a, index(c));
}
Value GPUKernelEmitter::addConst(Value a, int64_t c) {
  if (c == 0)
    return a;
  return add(a, index(c));
}
Value GPUKernelEmitter::divConst(Value a, int64_t c) {
  if (c == 1)
    return a;
  return arith::DivUIOp::create(b, loc, a, index(c));
}
Value GPUKernelEmitter::remConst(Value a, int64_t c) {
  if (c == 1)
    return index(0);
  return arith::RemUIOp::create(b, loc, a, index(c));
}
Value GPUKernelEmitter::minIndex(Value a, Value c) {
  return arith::MinUIOp::create(b, loc, a, c);
}
Value GPUKernelEmitter::cmpLT(Value a, Value c) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, a, c);
}
Value GPUKernelEmitter::cmpLTConst(Value a, int64_t c) {
  return cmpLT(a, index(c));
}
Value GPUKernelEmitter::andI(Value a, Value c) {
  return arith::AndIOp::create(b, loc, a, c);
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

Value GPUKernelEmitter::linearIndex(const GPUView &view, ValueRange indices) {
  Value lin;
  for (auto [i, idx] : llvm::enumerate(indices)) {
    if (view.shape[i] == 1)
      continue; // The only valid index is 0.
    Value term = mulConst(idx, view.strides[i]);
    lin = lin ? add(lin, term) : term;
  }
  if (!lin)
    return index(view.offset);
  return addConst(lin, view.offset);
}

bool GPUKernelEmitter::isWordDecoded(Type t) {
  if (t.isBF16())
    return true;
  auto q = dyn_cast<mir::QuantType>(t);
  return q && (q.getKind() == mir::QuantKind::Q8_0 ||
               q.getKind() == mir::QuantKind::Q4_0);
}

Value GPUKernelEmitter::wordAtByte(Value buffer, Value byte) {
  Type i32 = b.getI32Type();
  Value word =
      memref::LoadOp::create(b, loc, buffer, ValueRange{divConst(byte, 4)});
  Value shift =
      arith::IndexCastOp::create(b, loc, i32, mulConst(remConst(byte, 4), 8));
  return arith::ShRUIOp::create(b, loc, word, shift);
}

Value GPUKernelEmitter::halfBitsToF32(Value bits) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto c = [&](int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  };
  Value h = arith::AndIOp::create(b, loc, bits, c(0xffff));
  Value sign = arith::ShLIOp::create(
      b, loc, arith::AndIOp::create(b, loc, h, c(0x8000)), c(16));
  Value exp = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, h, c(10)), c(0x1f));
  Value mant = arith::AndIOp::create(b, loc, h, c(0x3ff));
  // Normal numbers: rebias the exponent (15 -> 127); infinities and NaNs
  // keep an all-ones exponent.
  Value isMax =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, exp, c(31));
  Value fexp = arith::SelectOp::create(
      b, loc, isMax, c(0xff), arith::AddIOp::create(b, loc, exp, c(112)));
  Value normal = arith::OrIOp::create(
      b, loc,
      arith::OrIOp::create(b, loc, sign,
                           arith::ShLIOp::create(b, loc, fexp, c(23))),
      arith::ShLIOp::create(b, loc, mant, c(13)));
  Value normalF = arith::BitcastOp::create(b, loc, f32, normal);
  // Zeros and subnormals: mant * 2^-24, signed.
  Value sub = arith::MulFOp::create(
      b, loc, arith::UIToFPOp::create(b, loc, f32, mant),
      arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0x1p-24f)));
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, sign, c(0));
  sub = arith::SelectOp::create(b, loc, negative,
                                arith::NegFOp::create(b, loc, sub), sub);
  Value isSub =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, exp, c(0));
  (void)i32;
  return arith::SelectOp::create(b, loc, isSub, sub, normalF);
}

Value GPUKernelEmitter::loadStored(const GPUView &view, ValueRange indices) {
  Type f32 = b.getF32Type();
  auto c = [&](int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  };
  if (view.elementType.isBF16()) {
    // Two bytes an element: the bits of the upper half of an f32.
    Value byte = mulConst(linearIndex(view, indices), 2);
    Value bits = arith::ShLIOp::create(
        b, loc,
        arith::AndIOp::create(b, loc, wordAtByte(view.buffer, byte), c(0xffff)),
        c(16));
    return arith::BitcastOp::create(b, loc, f32, bits);
  }
  // ggml blocks of 32 along the rows of an [N, K] weight: an f16 scale d,
  // then the codes; x = d * q. `offset` counts bytes here.
  auto q = cast<mir::QuantType>(view.elementType);
  int64_t blockBytes = q.getBlockBytes(), cols = view.shape.back();
  int64_t rowBytes = cols / 32 * blockBytes;
  Value row = indices[0], col = indices[1];
  Value block = addConst(
      add(mulConst(row, rowBytes), mulConst(divConst(col, 32), blockBytes)),
      view.offset);
  Value d = halfBitsToF32(wordAtByte(view.buffer, block));
  Value j = remConst(col, 32);
  Value code;
  if (q.getKind() == mir::QuantKind::Q8_0) {
    // 32 signed bytes.
    Value byte = wordAtByte(view.buffer, addConst(add(block, j), 2));
    Value s = arith::ShRSIOp::create(
        b, loc, arith::ShLIOp::create(b, loc, byte, c(24)), c(24));
    code = arith::SIToFPOp::create(b, loc, f32, s);
  } else {
    // 16 bytes: element j < 16 is the low nibble of byte j, element j >= 16
    // the high nibble of byte j - 16; the code is nibble - 8.
    Value low = cmpLTConst(j, 16);
    Value at = arith::SelectOp::create(b, loc, low, j, addConst(j, -16));
    Value byte = wordAtByte(view.buffer, addConst(add(block, at), 2));
    Value shift = arith::SelectOp::create(b, loc, low, c(0), c(4));
    Value nib = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, byte, shift), c(0xf));
    code = arith::SIToFPOp::create(b, loc, f32,
                                   arith::SubIOp::create(b, loc, nib, c(8)));
  }
  return arith::MulFOp::create(b, loc, d, code);
}

Value GPUKernelEmitter::load(const GPUView &view, ValueRange indices) {
  if (view.isScalar())
    return view.scalar;
  if (isWordDecoded(view.elementType))
    return loadStored(view, indices);
  return memref::LoadOp::create(b, loc, view.buffer,
                                ValueRange{linearIndex(view, indices)});
}

void GPUKernelEmitter::store(Value value, const GPUView &view,
                             ValueRange indices) {
  memref::StoreOp::create(b, loc, value, view.buffer,
                          ValueRange{linearIndex(view, indices)});
}

Value GPUKernelEmitter::loadOr(const GPUView &view, ValueRange indices,
                               Value inBounds, Value fallback) {
  SmallVector<Value> clamped;
  for (auto [i, idx] : llvm::enumerate(indices))
    clamped.push_back(minIndex(idx, index(view.shape[i] - 1)));
  Value v = castValue(load(view, clamped), fallback.getType());
  return arith::SelectOp::create(b, loc, inBounds, v, fallback);
}

static MemRefType localType(ArrayRef<int64_t> shape, Type elt,
                            spirv::StorageClass sc) {
  return MemRefType::get(shape, elt, MemRefLayoutAttrInterface(),
                         spirv::StorageClassAttr::get(elt.getContext(), sc));
}

Value GPUKernelEmitter::sharedAlloc(ArrayRef<int64_t> shape, Type elt) {
  return memref::AllocOp::create(
      b, loc, localType(shape, elt, spirv::StorageClass::Workgroup));
}

Value GPUKernelEmitter::privateAlloc(ArrayRef<int64_t> shape, Type elt) {
  return memref::AllocaOp::create(
      b, loc, localType(shape, elt, spirv::StorageClass::Function));
}

Value GPUKernelEmitter::loadLocal(Value memref, ValueRange indices) {
  return memref::LoadOp::create(b, loc, memref, indices);
}

void GPUKernelEmitter::storeLocal(Value value, Value memref,
                                  ValueRange indices) {
  memref::StoreOp::create(b, loc, value, memref, indices);
}

void GPUKernelEmitter::barrier() { gpu::BarrierOp::create(b, loc); }

//===----------------------------------------------------------------------===//
// Threads and loops
//===----------------------------------------------------------------------===//

static gpu::Dimension dimension(unsigned dim) {
  return dim == 0 ? gpu::Dimension::x
                  : (dim == 1 ? gpu::Dimension::y : gpu::Dimension::z);
}

Value GPUKernelEmitter::threadId(unsigned dim) {
  return gpu::ThreadIdOp::create(b, loc, dimension(dim));
}

Value GPUKernelEmitter::workgroupId(unsigned dim) {
  return gpu::BlockIdOp::create(b, loc, dimension(dim));
}

void GPUKernelEmitter::launch1D(int64_t threads, int64_t units) {
  workgroupSize = {threads, 1, 1};
  numWorkgroups = {std::clamp<int64_t>(units, 1, target.maxWorkgroups), 1, 1};
}

void GPUKernelEmitter::forEachElement(int64_t n,
                                      function_ref<void(Value i)> body) {
  int64_t wg = target.workgroupSize;
  launch1D(wg, (n + wg - 1) / wg);
  Value gid = add(mulConst(workgroupId(0), wg), threadId(0));
  int64_t total = numWorkgroups[0] * wg;
  if (total >= n) {
    if (total == n) {
      body(gid);
      return;
    }
    ifThen(cmpLTConst(gid, n), [&] { body(gid); });
    return;
  }
  forLoop(gid, index(n), total, {}, [&](Value i, ValueRange) {
    body(i);
    return SmallVector<Value>{};
  });
}

void GPUKernelEmitter::forEachWorkgroupItem(
    int64_t n, int64_t threads,
    function_ref<void(Value item, Value tid)> body) {
  launch1D(threads, n);
  Value tid = threadId(0);
  Value group = workgroupId(0);
  if (numWorkgroups[0] == n) {
    body(group, tid);
    return;
  }
  forLoop(group, index(n), numWorkgroups[0], {}, [&](Value item, ValueRange) {
    body(item, tid);
    return SmallVector<Value>{};
  });
}

SmallVector<Value> GPUKernelEmitter::forLoop(
    Value lb, Value ub, int64_t step, ValueRange init,
    function_ref<SmallVector<Value>(Value iv, ValueRange iter)> body) {
  auto emitLoop = [&]() -> SmallVector<Value> {
    auto loop = scf::ForOp::create(
        b, loc, lb, ub, index(step), init,
        [&](OpBuilder &nested, Location, Value iv, ValueRange iter) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          SmallVector<Value> next = body(iv, iter);
          scf::YieldOp::create(b, loc, next);
        });
    return SmallVector<Value>(loop.getResults());
  };
  std::optional<int64_t> l = getConstantIntValue(lb),
                         u = getConstantIntValue(ub);
  if (init.empty() || (l && u && *u > *l))
    return emitLoop();
  // SCFToSPIRV keeps loop results in variables written by the body only, so
  // a loop that may run zero times must not be asked for its results: the
  // guard gives `init` instead.
  Value runs = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lb, ub);
  SmallVector<Value> initValues(init.begin(), init.end());
  return ifThenElse(runs, TypeRange(init), emitLoop,
                    [&]() -> SmallVector<Value> { return initValues; });
}

void GPUKernelEmitter::forLoop(int64_t lb, int64_t ub, int64_t step,
                               function_ref<void(Value iv)> body) {
  forLoop(index(lb), index(ub), step, {}, [&](Value iv, ValueRange) {
    body(iv);
    return SmallVector<Value>{};
  });
}

Value GPUKernelEmitter::workgroupReduce(Value value, bool isMax, Value scratch,
                                        Value tid, int64_t threads) {
  assert(llvm::isPowerOf2_64(threads) && "tree reduction needs 2^k threads");
  storeLocal(value, scratch, tid);
  barrier();
  for (int64_t s = threads / 2; s >= 1; s /= 2) {
    ifThen(cmpLTConst(tid, s), [&] {
      Value other = loadLocal(scratch, addConst(tid, s));
      Value mine = loadLocal(scratch, tid);
      storeLocal(combine(isMax, mine, other), scratch, tid);
    });
    barrier();
  }
  Value result = loadLocal(scratch, index(0));
  // Nobody may overwrite the scratch before everyone has read the result.
  barrier();
  return result;
}

//===----------------------------------------------------------------------===//
// Scalar math
//===----------------------------------------------------------------------===//

Value GPUKernelEmitter::addF(Value a, Value c) {
  return arith::AddFOp::create(b, loc, a, c);
}
Value GPUKernelEmitter::mulF(Value a, Value c) {
  return arith::MulFOp::create(b, loc, a, c);
}

Value GPUKernelEmitter::combine(bool isMax, Value a, Value c) {
  return combine(isMax ? vector::CombiningKind::MAXIMUMF
                       : vector::CombiningKind::ADD,
                 a, c);
}

//===----------------------------------------------------------------------===//
// The kernel layer's primitives
//===----------------------------------------------------------------------===//

void GPUKernelEmitter::forEachElement(
    const KernelView &out, int64_t width,
    function_ref<void(const ElementPos &)> body) {
  assert(width == 1 && "SPIR-V kernels handle one element per thread");
  forEachElement(out.numElements(), [&](Value i) {
    ElementPos pos;
    pos.linear = i;
    // Coordinates nobody reads fold away.
    pos.coords = delinearize(i, out.shape);
    body(pos);
  });
}

namespace {
/// One row of a row-wise kernel, processed by the threads of a workgroup.
class GPURow : public RowScope {
public:
  GPURow(GPUKernelEmitter &e, Value tid, int64_t threads, Value scratch)
      : e(e), tid(tid), threads(threads), scratch(scratch) {}
  Value reduce(Value init, vector::CombiningKind kind,
               function_ref<Value(Value j, int64_t width)> body) override {
    // This thread's elements, then a tree over the workgroup.
    Value partial =
        e.forLoop(tid, e.index(n), threads, {init},
                  [&](Value j, ValueRange it) -> SmallVector<Value> {
                    return {e.combine(kind, it[0], body(j, 1))};
                  })[0];
    bool isMax = kind == vector::CombiningKind::MAXIMUMF;
    return e.workgroupReduce(partial, isMax, scratch, tid, threads);
  }
  void forEach(function_ref<void(Value j, int64_t width)> body) override {
    e.forLoop(tid, e.index(n), threads, {},
              [&](Value j, ValueRange) -> SmallVector<Value> {
                body(j, 1);
                return {};
              });
  }

private:
  GPUKernelEmitter &e;
  Value tid;
  int64_t threads;
  Value scratch;
};
} // namespace

int64_t mlir::rlx::gpuRowThreads(GPUKernelEmitter &e, int64_t n) {
  int64_t limit = std::min<int64_t>(256, e.target.maxInvocations);
  int64_t t =
      std::max<int64_t>(32, llvm::PowerOf2Ceil(std::max<int64_t>(n, 1)));
  return std::min<int64_t>(
      t, static_cast<int64_t>(llvm::bit_floor(static_cast<uint64_t>(limit))));
}

void GPUKernelEmitter::forEachRow(const KernelView &like,
                                  ArrayRef<KernelView> views,
                                  function_ref<void(RowScope &)> body) {
  int64_t n = like.shape.empty() ? 1 : like.shape.back();
  ArrayRef<int64_t> outerShape = ArrayRef<int64_t>(like.shape).drop_back();
  int64_t rows = 1;
  for (int64_t d : outerShape)
    rows *= d;
  int64_t threads = gpuRowThreads(*this, n);
  Value scratch = sharedAlloc({threads}, like.elementType);
  forEachWorkgroupItem(rows, threads, [&](Value row, Value tid) {
    GPURow r(*this, tid, threads, scratch);
    r.outer = delinearize(row, outerShape);
    r.n = n;
    body(r);
  });
}

void GPUKernelEmitter::serial(function_ref<void()> body) {
  launch1D(1, 1);
  body();
}

Value GPUKernelEmitter::load(const KernelView &view, ValueRange indices,
                             int64_t width) {
  assert(width == 1 && "SPIR-V kernels load one element at a time");
  return load(view, indices);
}

void GPUKernelEmitter::store(Value value, const KernelView &view,
                             ValueRange indices, int64_t width) {
  assert(width == 1 && "SPIR-V kernels store one element at a time");
  store(value, view, indices);
}

LogicalResult GPUKernelEmitter::emitTargetKernel(Operation *op,
                                                 ArrayRef<KernelView> ins,
                                                 const KernelView &out) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<mir::DequantizeOp, mir::GatherOp>(
          [&](Operation *) -> LogicalResult {
            Type stored = op->getOperand(0).getType();
            stored = cast<ShapedType>(stored).getElementType();
            if (!isWordDecoded(stored))
              return op->emitOpError("reads ")
                     << stored
                     << ", which the SPIR-V back end does not decode (it reads "
                        "q8_0, q4_0, bf16 and f16 weights; keep others in f32: "
                        "[precision] weights = \"f32\")";
            // The loads decode the blocks: a gather is a gather, a dequantize
            // a copy over the [N, K] weight.
            if (isa<mir::GatherOp>(op))
              return emitDataMovementKernel(*this, op, ins, out);
            const KernelView &in = ins[0];
            if (in.rank() != 2 || out.rank() != 2)
              return op->emitOpError("dequantizes [N, K] weights only");
            int64_t cols = in.shape[1];
            forEachElement(in.shape[0] * cols, [&](Value i) {
              SmallVector<Value> at = {divConst(i, cols), remConst(i, cols)};
              store(load(in, at), out, at);
            });
            return success();
          })
      .Case<mir::MatmulOp, mir::BatchMatmulOp, mir::FusedMatmulOp>(
          [&](Operation *) { return emitGPUMatmulKernel(*this, op, ins, out); })
      .Case<mir::AttentionOp>([&](Operation *) {
        return emitGPUAttentionKernel(*this, op, ins, out);
      })
      .Case<mir::RopeOp>(
          [&](Operation *) { return emitGPURopeKernel(*this, op, ins, out); })
      .Default([&](Operation *) {
        return emitGPUReduceKernel(*this, op, ins, out);
      });
}
