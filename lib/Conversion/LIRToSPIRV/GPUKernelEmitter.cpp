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
#include <cmath>

using namespace mlir;
using namespace mlir::rlx;

int64_t GPUView::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

bool GPUView::isContiguous() const {
  return !isScalar() && strides == contiguousStrides(shape);
}

SmallVector<int64_t> mlir::rlx::contiguousStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

//===----------------------------------------------------------------------===//
// Constants and index arithmetic
//===----------------------------------------------------------------------===//

Value GPUKernelEmitter::index(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value GPUKernelEmitter::constant(double v, Type type) {
  if (isa<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
  if (type.isIndex())
    return index(static_cast<int64_t>(v));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(v)));
}

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

SmallVector<Value> GPUKernelEmitter::delinearize(Value linear,
                                                 ArrayRef<int64_t> shape) {
  SmallVector<Value> coords(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      coords[d] = linear;
      break;
    }
    coords[d] = remConst(linear, shape[d]);
    linear = divConst(linear, shape[d]);
  }
  return coords;
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

Value GPUKernelEmitter::load(const GPUView &view, ValueRange indices) {
  if (view.isScalar())
    return view.scalar;
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
  Value v = load(view, clamped);
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

void GPUKernelEmitter::ifThen(Value cond, function_ref<void()> body) {
  auto op = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op.thenBlock()->getTerminator());
  body();
}

SmallVector<Value>
GPUKernelEmitter::ifThenElse(Value cond, TypeRange types,
                             function_ref<SmallVector<Value>()> thenBody,
                             function_ref<SmallVector<Value>()> elseBody) {
  auto op = scf::IfOp::create(b, loc, types, cond, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(op.thenBlock());
    scf::YieldOp::create(b, loc, thenBody());
    b.setInsertionPointToStart(op.elseBlock());
    scf::YieldOp::create(b, loc, elseBody());
  }
  return SmallVector<Value>(op.getResults());
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
  if (isa<FloatType>(a.getType()))
    return isMax ? arith::MaximumFOp::create(b, loc, a, c).getResult()
                 : addF(a, c);
  return isMax ? arith::MaxSIOp::create(b, loc, a, c).getResult()
               : arith::AddIOp::create(b, loc, a, c).getResult();
}

Value GPUKernelEmitter::sigmoid(Value x) {
  Value one = constant(1.0, x.getType());
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one, addF(one, e));
}

Value GPUKernelEmitter::gelu(Value x, bool tanhApprox) {
  Type t = x.getType();
  Value half = constant(0.5, t), one = constant(1.0, t);
  Value inner;
  if (tanhApprox) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Value x3 = mulF(x, mulF(x, x));
    Value poly = addF(x, mulF(constant(0.044715, t), x3));
    inner = math::TanhOp::create(
        b, loc, mulF(constant(std::sqrt(2.0 / M_PI), t), poly));
  } else {
    // 0.5 x (1 + erf(x / sqrt 2))
    inner = math::ErfOp::create(b, loc, mulF(x, constant(M_SQRT1_2, t)));
  }
  return mulF(mulF(half, x), addF(one, inner));
}

Value GPUKernelEmitter::activation(Activation act, Value x) {
  switch (act) {
  case Activation::None:
    return x;
  case Activation::Relu:
    return arith::MaximumFOp::create(b, loc, x, constant(0.0, x.getType()));
  case Activation::Gelu:
    return gelu(x, false);
  case Activation::GeluTanh:
    return gelu(x, true);
  case Activation::Silu:
    return mulF(x, sigmoid(x));
  case Activation::Sigmoid:
    return sigmoid(x);
  case Activation::Tanh:
    return math::TanhOp::create(b, loc, x);
  }
  llvm_unreachable("unknown activation");
}

Value GPUKernelEmitter::cast(Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  bool fFrom = isa<FloatType>(from), fTo = isa<FloatType>(to);
  if (fFrom && fTo)
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? arith::ExtFOp::create(b, loc, to, x).getResult()
               : arith::TruncFOp::create(b, loc, to, x).getResult();
  if (!fFrom && fTo)
    return from.isInteger(1)
               ? arith::UIToFPOp::create(b, loc, to, x).getResult()
               : arith::SIToFPOp::create(b, loc, to, x).getResult();
  if (fFrom && !fTo) {
    if (to.isInteger(1))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x,
                                   constant(0.0, from));
    return arith::FPToSIOp::create(b, loc, to, x);
  }
  if (to.isInteger(1))
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x,
                                 constant(0, from));
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return from.isInteger(1)
               ? arith::ExtUIOp::create(b, loc, to, x).getResult()
               : arith::ExtSIOp::create(b, loc, to, x).getResult();
  return arith::TruncIOp::create(b, loc, to, x);
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

void mlir::rlx::emitGPUCopy(GPUKernelEmitter &e, const GPUView &in,
                            const GPUView &out) {
  (void)emitGPUElementwiseKernel(e, nullptr, {in}, out);
}

LogicalResult mlir::rlx::emitGPUKernel(GPUKernelEmitter &e, Operation *op,
                                       const DenseMap<Value, GPUView> &inputs,
                                       ArrayRef<GPUView> outputs) {
  SmallVector<GPUView> ins;
  for (Value v : op->getOperands()) {
    auto it = inputs.find(v);
    if (it == inputs.end())
      return op->emitOpError("has an operand the SPIR-V back end cannot bind");
    ins.push_back(it->second);
  }
  if (isa<mir::RmsNormOp, mir::LayerNormOp, mir::FusedResidualRmsNormOp,
          mir::FusedResidualLayerNormOp, mir::SoftmaxOp>(op))
    return emitGPUNormKernel(e, op, ins, outputs);
  if (outputs.size() != 1)
    return op->emitOpError("has ")
           << outputs.size() << " results; the SPIR-V back end expects one";
  const GPUView &out = outputs[0];
  if (isa<mir::ReduceSumOp, mir::ReduceMeanOp, mir::ReduceMaxOp>(op))
    return emitGPUReduceKernel(e, op, ins, out);
  if (isa<mir::MatmulOp, mir::BatchMatmulOp, mir::FusedMatmulOp>(op))
    return emitGPUMatmulKernel(e, op, ins, out);
  if (isa<mir::AttentionOp>(op))
    return emitGPUAttentionKernel(e, op, ins, out);
  if (isa<mir::RopeOp>(op))
    return emitGPURopeKernel(e, op, ins, out);
  if (isa<mir::GatherOp, mir::ConcatOp, mir::SliceOp, mir::TransposeOp,
          mir::ReshapeOp, mir::IotaOp, mir::BroadcastOp>(op))
    return emitGPUDataMovementKernel(e, op, ins, out);
  return emitGPUElementwiseKernel(e, op, ins, out);
}
