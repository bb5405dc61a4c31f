//===- KernelEmitter.cpp - Building blocks of the CPU kernels -------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Support/KernelABI.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::rlx;

Type KernelInput::elementType() const {
  if (memref)
    return cast<MemRefType>(memref.getType()).getElementType();
  return scalar.getType();
}

ArrayRef<int64_t> KernelInput::shape() const {
  if (memref)
    return cast<MemRefType>(memref.getType()).getShape();
  return {};
}

//===----------------------------------------------------------------------===//
// Constants, strides, loops
//===----------------------------------------------------------------------===//

int64_t KernelEmitter::vectorWidth(Type type) {
  unsigned bits = type.getIntOrFloatBitWidth();
  if (bits < 8)
    return 1;
  return 512 / bits;
}

SmallVector<int64_t> KernelEmitter::strides(Value memref) {
  auto ty = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> s;
  int64_t offset;
  if (failed(ty.getStridesAndOffset(s, offset)))
    return SmallVector<int64_t>(ty.getRank(), ShapedType::kDynamic);
  return s;
}

int64_t KernelEmitter::innerStride(Value memref) {
  auto ty = cast<MemRefType>(memref.getType());
  if (ty.getRank() == 0)
    return 1;
  int64_t s = strides(memref).back();
  return ShapedType::isDynamic(s) ? 0 : s;
}

void KernelEmitter::loopNest(ArrayRef<int64_t> ubs,
                             function_ref<void(ValueRange ivs)> body) {
  SmallVector<Value> ivs;
  OpBuilder::InsertionGuard guard(b);
  for (int64_t ub : ubs) {
    auto loop = scf::ForOp::create(b, loc, index(0), index(ub), index(1));
    ivs.push_back(loop.getInductionVar());
    b.setInsertionPointToStart(loop.getBody());
  }
  body(ivs);
}

void KernelEmitter::forChunks(int64_t n, int64_t vl,
                              function_ref<void(Value j, int64_t width)> body) {
  int64_t main = vl > 1 ? n - n % vl : 0;
  OpBuilder::InsertionGuard guard(b);
  if (main > 0) {
    auto loop = scf::ForOp::create(b, loc, index(0), index(main), index(vl));
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar(), vl);
    b.setInsertionPointAfter(loop);
  }
  if (main < n) {
    auto tail = scf::ForOp::create(b, loc, index(main), index(n), index(1));
    b.setInsertionPointToStart(tail.getBody());
    body(tail.getInductionVar(), 1);
  }
}

Value KernelEmitter::reduceChunks(
    int64_t n, int64_t vl, vector::CombiningKind kind, Value init,
    function_ref<Value(Value j, int64_t width)> body) {
  int64_t main = vl > 1 ? n - n % vl : 0;
  Value acc = init;
  if (main > 0) {
    Value vinit = splat(init, vl);
    auto loop = scf::ForOp::create(
        b, loc, index(0), index(main), index(vl), ValueRange{vinit},
        [&](OpBuilder &, Location, Value j, ValueRange iter) {
          Value next = combine(kind, iter[0], body(j, vl));
          scf::YieldOp::create(b, loc, next);
        });
    acc = vector::ReductionOp::create(b, loc, kind, loop.getResult(0), acc);
  }
  if (main < n) {
    auto tail = scf::ForOp::create(
        b, loc, index(main), index(n), index(1), ValueRange{acc},
        [&](OpBuilder &, Location, Value j, ValueRange iter) {
          Value next = combine(kind, iter[0], body(j, 1));
          scf::YieldOp::create(b, loc, next);
        });
    acc = tail.getResult(0);
  }
  return acc;
}

//===----------------------------------------------------------------------===//
// Threads: chunked parallel loops over the execution context
//===----------------------------------------------------------------------===//
//
// Every thread runs the same sequence of parallel loops. Their chunks are
// numbered consecutively over the whole run: loop r owns [B_r, B_r + n_r),
// and each thread keeps its own cursor B in the context. A thread claims
// chunks by compare-and-swap on the shared claim counter while it is below
// B + n, runs them and counts them in the shared finish counter; it leaves
// the loop once the finish counter reaches B + n. A thread that falls behind
// (descheduled on a busy machine) holds nobody up unless it holds a claimed
// chunk: when it comes back the loops it missed are finished and it passes
// through them. The runtime zeroes both counters before a run, once every
// thread has returned from the previous one.

/// Polls of a waiting thread (~20 us) before it yields its core on every
/// further poll: chunks usually finish within microseconds, but on a busy
/// machine the thread it waits for may be queued on the same core.
static constexpr int64_t kSpinsBeforeYield = 20000;

static Value slotPointer(OpBuilder &b, Location loc, Value ctx,
                         int64_t byteOffset) {
  if (byteOffset == 0)
    return ctx;
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  return LLVM::GEPOp::create(
      b, loc, ptr, b.getI8Type(), ctx,
      ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(byteOffset)});
}

static Value i64Constant(OpBuilder &b, Location loc, int64_t v) {
  return LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                  b.getI64IntegerAttr(v));
}

/// Spins (then yields the core) until `*counter >= target`.
static void waitFor(KernelEmitter &e, Value counter, Value target) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Type i64 = b.getI64Type();
  auto yieldFn =
      e.declareFunction("sched_yield", b.getFunctionType({}, {b.getI32Type()}));
  Value zero = i64Constant(b, loc, 0), one = i64Constant(b, loc, 1);
  scf::WhileOp::create(
      b, loc, TypeRange{i64}, ValueRange{zero},
      [&](OpBuilder &, Location, ValueRange it) {
        Value cur =
            LLVM::LoadOp::create(b, loc, i64, counter, 8, false, false, false,
                                 false, LLVM::AtomicOrdering::acquire);
        Value wait = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                           cur, target);
        scf::ConditionOp::create(b, loc, wait, it);
      },
      [&](OpBuilder &, Location, ValueRange it) {
        Value next = arith::AddIOp::create(b, loc, it[0], one);
        Value tired =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, next,
                                  i64Constant(b, loc, kSpinsBeforeYield));
        scf::IfOp::create(b, loc, tired, [&](OpBuilder &, Location) {
          func::CallOp::create(b, loc, yieldFn, ValueRange{});
          scf::YieldOp::create(b, loc);
        });
        scf::YieldOp::create(b, loc, next);
      });
}

void KernelEmitter::parallelFor(int64_t n, function_ref<void(Value i)> body) {
  if (inParallel) {
    // Nested in another parallel loop: this thread runs it all.
    auto loop = scf::ForOp::create(b, loc, index(0), index(n), index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
    return;
  }
  Type i64 = b.getI64Type(), ptr = LLVM::LLVMPointerType::get(b.getContext());
  Value claimed = slotPointer(b, loc, ctx, ::rlx::spmd::kClaimedOffset);
  Value finished = slotPointer(b, loc, ctx, ::rlx::spmd::kFinishedOffset);
  Value tid64 = arith::IndexCastOp::create(b, loc, i64, tid);
  Value cursorOff = arith::AddIOp::create(
      b, loc, i64Constant(b, loc, ::rlx::spmd::kCursorsOffset),
      arith::MulIOp::create(b, loc, tid64,
                            i64Constant(b, loc, ::rlx::spmd::kCursorStride)));
  Value cursor = LLVM::GEPOp::create(b, loc, ptr, b.getI8Type(), ctx,
                                     ArrayRef<LLVM::GEPArg>{cursorOff});
  Value base = LLVM::LoadOp::create(b, loc, i64, cursor, 8);
  Value end = arith::AddIOp::create(b, loc, base, i64Constant(b, loc, n));
  scf::WhileOp::create(
      b, loc, TypeRange{i64}, ValueRange{},
      [&](OpBuilder &, Location, ValueRange) {
        Value g =
            LLVM::LoadOp::create(b, loc, i64, claimed, 8, false, false, false,
                                 false, LLVM::AtomicOrdering::monotonic);
        Value more =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, g, end);
        scf::ConditionOp::create(b, loc, more, ValueRange{g});
      },
      [&](OpBuilder &, Location, ValueRange args) {
        Value g = args[0];
        Value next = arith::AddIOp::create(b, loc, g, i64Constant(b, loc, 1));
        Value pair = LLVM::AtomicCmpXchgOp::create(
            b, loc, claimed, g, next, LLVM::AtomicOrdering::acq_rel,
            LLVM::AtomicOrdering::monotonic);
        Value won =
            LLVM::ExtractValueOp::create(b, loc, pair, ArrayRef<int64_t>{1});
        scf::IfOp::create(b, loc, won, [&](OpBuilder &, Location) {
          Value chunk = arith::IndexCastOp::create(
              b, loc, b.getIndexType(), arith::SubIOp::create(b, loc, g, base));
          inParallel = true;
          body(chunk);
          inParallel = false;
          LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add, finished,
                                    i64Constant(b, loc, 1),
                                    LLVM::AtomicOrdering::release);
          scf::YieldOp::create(b, loc);
        });
        scf::YieldOp::create(b, loc);
      });
  waitFor(*this, finished, end);
  LLVM::StoreOp::create(b, loc, end, cursor, 8);
}

void KernelEmitter::parallelNest(ArrayRef<int64_t> ubs, int64_t maxChunks,
                                 function_ref<void(ValueRange ivs)> body) {
  int64_t total = 1;
  for (int64_t u : ubs)
    total *= u;
  if (total <= 1 || maxChunks <= 1) {
    serial([&] { loopNest(ubs, body); });
    return;
  }
  int64_t chunks = std::min(total, maxChunks);
  int64_t per = (total + chunks - 1) / chunks;
  chunks = (total + per - 1) / per;
  parallelFor(chunks, [&](Value c) {
    Value lo = arith::MulIOp::create(b, loc, c, index(per));
    Value hi = arith::MinSIOp::create(
        b, loc, arith::AddIOp::create(b, loc, lo, index(per)), index(total));
    auto loop = scf::ForOp::create(b, loc, lo, hi, index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> ivs(ubs.size());
    Value rest = loop.getInductionVar();
    for (int64_t d = ubs.size() - 1; d >= 0; --d) {
      if (d == 0) {
        ivs[d] = rest;
        break;
      }
      ivs[d] = arith::RemUIOp::create(b, loc, rest, index(ubs[d]));
      rest = arith::DivUIOp::create(b, loc, rest, index(ubs[d]));
    }
    body(ivs);
  });
}

void KernelEmitter::serial(function_ref<void()> body) {
  parallelFor(1, [&](Value) { body(); });
}

Value KernelEmitter::scratch(int64_t floats) {
  StringRef name = "__rlx_scratch";
  state->scratchFloats = std::max(state->scratchFloats, floats);
  auto placeholder = MemRefType::get({1}, b.getF32Type());
  if (!module.lookupSymbol(name)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"),
                             placeholder, b.getUnitAttr(), /*constant=*/false,
                             /*alignment=*/b.getI64IntegerAttr(64));
  }
  Value g = memref::GetGlobalOp::create(b, loc, placeholder, name);
  return memref::CastOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()), g);
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

Value KernelEmitter::load(Value memref, ValueRange indices, int64_t width) {
  if (width == 1)
    return memref::LoadOp::create(b, loc, memref, indices);
  auto ty = VectorType::get(
      {width}, cast<MemRefType>(memref.getType()).getElementType());
  return vector::LoadOp::create(b, loc, ty, memref, indices);
}

void KernelEmitter::store(Value value, Value memref, ValueRange indices,
                          int64_t width) {
  if (width == 1)
    memref::StoreOp::create(b, loc, value, memref, indices);
  else
    vector::StoreOp::create(b, loc, value, memref, indices);
}

void KernelEmitter::fill(Value memref, double value) {
  auto ty = cast<MemRefType>(memref.getType());
  Value c = constant(value, ty.getElementType());
  if (ty.getRank() == 0) {
    store(c, memref, {}, 1);
    return;
  }
  int64_t vl = innerStride(memref) == 1 ? vectorWidth(ty.getElementType()) : 1;
  loopNest(ty.getShape().drop_back(), [&](ValueRange outer) {
    forChunks(ty.getShape().back(), vl, [&](Value j, int64_t width) {
      SmallVector<Value> idx(outer);
      idx.push_back(j);
      store(splat(c, width), memref, idx, width);
    });
  });
}

Value KernelEmitter::pointer(Value memref) {
  auto ty = cast<MemRefType>(memref.getType());
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  int64_t bytes = ty.getElementTypeBitWidth() / 8;
  Value off = arith::MulIOp::create(b, loc, meta.getOffset(), index(bytes));
  Value addr = arith::AddIOp::create(b, loc, base, off);
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), addr);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
}

func::FuncOp KernelEmitter::declareFunction(StringRef name, FunctionType type) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto f = func::FuncOp::create(b, loc, name, type);
  f.setPrivate();
  return f;
}

Value KernelEmitter::offsetPointer(Value ptr, Value elements, Type type) {
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), elements);
  return LLVM::GEPOp::create(b, loc, ptr.getType(), type, ptr,
                             ArrayRef<LLVM::GEPArg>{i64});
}

Value KernelEmitter::reinterpret(Value memref, MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  (void)type.getStridesAndOffset(strides, offset);
  return memref::ReinterpretCastOp::create(b, loc, type, memref, 0,
                                           type.getShape(), strides);
}

void KernelEmitter::sgemm(bool transA, bool transB, int64_t m, int64_t n,
                          int64_t k, Value a, int64_t lda, Value bm,
                          int64_t ldb, float beta, Value c, int64_t ldc) {
  sgemmPtr(transA, transB, m, index(n), k, pointer(a), lda, pointer(bm), ldb,
           beta, pointer(c), ldc);
}

void KernelEmitter::sgemmPtr(bool transA, bool transB, int64_t m, Value n,
                             int64_t k, Value a, int64_t lda, Value bm,
                             int64_t ldb, float beta, Value c, int64_t ldc) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto type = b.getFunctionType(
      {i32, i32, i32, i32, i32, i32, f32, ptr, i32, ptr, i32, f32, ptr, i32},
      {});
  func::FuncOp f = declareFunction("cblas_sgemm", type);
  auto i = [&](int64_t v) { return constant(v, i32); };
  // CBLAS enums: RowMajor = 101, NoTrans = 111, Trans = 112.
  func::CallOp::create(b, loc, f,
                       ValueRange{i(101), i(transA ? 112 : 111),
                                  i(transB ? 112 : 111), i(m),
                                  arith::IndexCastOp::create(b, loc, i32, n),
                                  i(k), constant(1.0, f32), a, i(lda), bm,
                                  i(ldb), constant(beta, f32), c, i(ldc)});
}

void KernelEmitter::sgemvPtr(Value m, int64_t k, Value a, int64_t lda, Value x,
                             float beta, Value y) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto type = b.getFunctionType(
      {i32, i32, i32, i32, f32, ptr, i32, ptr, i32, f32, ptr, i32}, {});
  func::FuncOp f = declareFunction("cblas_sgemv", type);
  auto i = [&](int64_t v) { return constant(v, i32); };
  // CBLAS enums: RowMajor = 101, NoTrans = 111.
  func::CallOp::create(b, loc, f,
                       ValueRange{i(101), i(111),
                                  arith::IndexCastOp::create(b, loc, i32, m),
                                  i(k), constant(1.0, f32), a, i(lda), x, i(1),
                                  constant(beta, f32), y, i(1)});
}

//===----------------------------------------------------------------------===//
// The kernel layer's primitives
//===----------------------------------------------------------------------===//

KernelView KernelEmitter::viewOf(Value memref, bool packed) {
  auto ty = cast<MemRefType>(memref.getType());
  KernelView v;
  v.buffer = memref;
  v.elementType = ty.getElementType();
  v.shape.assign(ty.getShape().begin(), ty.getShape().end());
  v.strides = strides(memref);
  v.packed = packed;
  return v;
}

KernelView KernelEmitter::materialize(const KernelView &view) {
  if (view.isScalar() || view.memref)
    return view;
  auto ty = cast<MemRefType>(view.buffer.getType());
  if (view.offset == 0 && ArrayRef<int64_t>(view.shape) == ty.getShape() &&
      view.strides == strides(view.buffer))
    return view;
  KernelView v = view;
  auto layout =
      StridedLayoutAttr::get(b.getContext(), view.offset, view.strides);
  auto castTy = MemRefType::get(view.shape, view.elementType, layout);
  v.memref = memref::ReinterpretCastOp::create(
      b, loc, castTy, view.buffer, view.offset, view.shape, view.strides);
  return v;
}

Value KernelEmitter::load(const KernelView &view, ValueRange indices,
                          int64_t width) {
  if (view.isScalar())
    return splat(view.scalar, width);
  return load(memrefOf(view), indices, width);
}

void KernelEmitter::store(Value value, const KernelView &view,
                          ValueRange indices, int64_t width) {
  store(value, memrefOf(view), indices, width);
}

/// Chunks for a memory-bound kernel over `elements` values: about 16K
/// values each, at most 64.
static int64_t parallelChunks(int64_t elements) {
  return std::clamp<int64_t>(elements / 16384, 1, 64);
}

int64_t KernelEmitter::mapWidth(const KernelView &out,
                                ArrayRef<KernelView> ins) {
  // One vector width for every value of the body; scalar code when some
  // access is not unit-stride or involves i1.
  int64_t n = out.rank() ? out.shape.back() : 1;
  int64_t vl = vectorWidth(out.elementType);
  if (out.rank() == 0 || out.innerStride() != 1)
    vl = 1;
  for (const KernelView &in : ins) {
    vl = std::min(vl, vectorWidth(in.elementType));
    if (in.isScalar() || in.shape.empty())
      continue;
    bool broadcastInner = in.shape.back() == 1 && n != 1;
    if (!broadcastInner && in.innerStride() != 1)
      vl = 1;
  }
  return std::max<int64_t>(vl, 1);
}

void KernelEmitter::forEachElement(
    const KernelView &out, int64_t width,
    function_ref<void(const ElementPos &)> body) {
  if (out.rank() == 0) {
    serial([&] { body(ElementPos{{}, Value(), 1}); });
    return;
  }
  ArrayRef<int64_t> shape = out.shape;
  parallelNest(shape.drop_back(), parallelChunks(out.numElements()),
               [&](ValueRange outer) {
                 forChunks(shape.back(), width, [&](Value j, int64_t w) {
                   ElementPos pos;
                   pos.coords.assign(outer.begin(), outer.end());
                   pos.coords.push_back(j);
                   pos.width = w;
                   body(pos);
                 });
               });
}

void KernelEmitter::forEachPosition(
    ArrayRef<int64_t> shape, int64_t costPerPosition,
    function_ref<void(ValueRange coords)> body) {
  int64_t positions = 1;
  for (int64_t d : shape)
    positions *= d;
  int64_t cost = std::max<int64_t>(costPerPosition, 1);
  int64_t work = positions > std::numeric_limits<int64_t>::max() / cost
                     ? std::numeric_limits<int64_t>::max()
                     : positions * cost;
  parallelNest(shape, parallelChunks(work), body);
}

namespace {
/// A row of a row-wise kernel, handled by one thread in vectors of `vl`.
class CPURow : public RowScope {
public:
  CPURow(KernelEmitter &e, int64_t vl) : e(e), vl(vl) {}
  Value reduce(Value init, vector::CombiningKind kind,
               function_ref<Value(Value j, int64_t width)> body) override {
    return e.reduceChunks(n, vl, kind, init, body);
  }
  void forEach(function_ref<void(Value j, int64_t width)> body) override {
    e.forChunks(n, vl, body);
  }

private:
  KernelEmitter &e;
  int64_t vl;
};
} // namespace

void KernelEmitter::forEachRow(const KernelView &like,
                               ArrayRef<KernelView> views,
                               function_ref<void(RowScope &)> body) {
  int64_t vl = 16;
  for (const KernelView &v : views) {
    vl = std::min(vl, vectorWidth(v.elementType));
    if (v.innerStride() != 1)
      vl = 1;
  }
  ArrayRef<int64_t> shape = like.shape;
  parallelNest(shape.drop_back(), parallelChunks(like.numElements()),
               [&](ValueRange ivs) {
                 CPURow row(*this, std::max<int64_t>(vl, 1));
                 row.outer.assign(ivs.begin(), ivs.end());
                 row.n = shape.back();
                 body(row);
               });
}

/// The memref inputs of the CPU's own kernels.
static SmallVector<KernelInput> kernelInputs(ArrayRef<KernelView> ins) {
  SmallVector<KernelInput> out;
  for (const KernelView &v : ins) {
    if (v.isScalar()) {
      out.push_back(KernelInput{{}, v.scalar, false, {}});
      continue;
    }
    out.push_back(KernelInput{
        KernelEmitter::memrefOf(v),
        {},
        v.packed,
        mir::isLowPrecisionWeightType(v.elementType) ? v.elementType : Type()});
  }
  return out;
}

LogicalResult KernelEmitter::emitCollective(Operation *op,
                                            ArrayRef<KernelView> views,
                                            const KernelView &outView) {
  const KernelView &in = views[0];
  if (in.isScalar() || !outView.isContiguous())
    return op->emitOpError("needs a tensor input and a contiguous result");
  Type i64 = b.getI64Type();
  auto c64 = [&](int64_t v) { return constant(v, i64); };
  auto call = [&](StringRef name, ValueRange args) {
    SmallVector<Type> types(args.getTypes());
    func::FuncOp f =
        declareFunction(name, b.getFunctionType(types, {b.getI32Type()}));
    func::CallOp::create(b, loc, f, args);
  };
  Value out = pointer(memrefOf(outView));
  if (auto reduce = dyn_cast<lir::AllReduceOp>(op)) {
    Value group = c64(reduce.getGroupSize());
    if (reduce.getPhase() == lir::CollectivePhase::Wait) {
      serial([&] { call("rlx_all_reduce_wait", {out, group}); });
      return success();
    }
    // A strided input is copied into the result, then summed in place.
    Value src = out;
    if (in.isContiguous())
      src = pointer(memrefOf(in));
    else
      emitCopy(*this, in, outView);
    Type element = outView.elementType;
    std::string name = "rlx_all_reduce_";
    if (reduce.getPhase() == lir::CollectivePhase::Start)
      name += "start_";
    name += element.isBF16() ? "bf16" : element.isF16() ? "f16" : "f32";
    serial([&] { call(name, {src, out, c64(outView.numElements()), group}); });
    return success();
  }
  auto gather = cast<lir::AllGatherOp>(op);
  if (!in.isContiguous())
    return op->emitOpError("needs a contiguous input on the CPU");
  int64_t axis = gather.getAxis();
  int64_t outer = 1;
  for (int64_t d : ArrayRef<int64_t>(in.shape).take_front(axis))
    outer *= d;
  int64_t inner = in.numElements() / std::max<int64_t>(outer, 1);
  Value src = pointer(memrefOf(in));
  serial([&] {
    call(in.elementType.isF32() ? "rlx_all_gather_f32" : "rlx_all_gather_16",
         {src, out, c64(outer), c64(inner), c64(gather.getGroupSize())});
  });
  return success();
}

LogicalResult KernelEmitter::emitTargetKernel(Operation *op,
                                              ArrayRef<KernelView> views,
                                              const KernelView &outView) {
  SmallVector<KernelInput> ins = kernelInputs(views);
  Value out = memrefOf(outView);
  if (isa<mir::MatmulOp, mir::BatchMatmulOp, mir::FusedMatmulOp>(op))
    return emitMatmulKernel(*this, op, ins, out);
  if (isa<mir::AttentionOp>(op))
    return emitAttentionKernel(*this, op, ins, out);
  if (isa<mir::RopeOp>(op))
    return emitRopeKernel(*this, op, ins, out);
  if (isa<mir::DequantizeOp, mir::GatherOp>(op))
    return emitDequantizeKernel(*this, op, ins, out);
  // An axis reduction has no parallel form here: one thread runs it.
  LogicalResult result = success();
  serial([&] { result = emitReduceKernel(*this, op, ins, out); });
  return result;
}
