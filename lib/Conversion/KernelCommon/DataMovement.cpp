//===- DataMovement.cpp - Data movement kernels, once for every target ----===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Slices, transposes and broadcasts are copies from a view with moved
// offset, permuted strides or broadcast dims; concat picks the input whose
// range along the axis holds each output position; a reshape of a strided
// view goes through the linear index; iota writes its coordinate; gather
// reads the table row an index names (clamped into the table).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

using namespace mlir;
using namespace mlir::rlx;

/// Stores `value` at `pos` of `out`.
static void storeAt(KernelBuilder &k, Value value, const KernelView &out,
                    const ElementPos &pos) {
  if (pos.linear && out.isContiguous())
    k.store(value, out.flat(), {pos.linear}, pos.width);
  else
    k.store(value, out, pos.coords, pos.width);
}

static void emitConcat(KernelBuilder &k, mir::ConcatOp op,
                       ArrayRef<KernelView> ins, const KernelView &out) {
  int64_t axis = op.getAxis();
  // Along the innermost axis a step must not straddle two inputs.
  int64_t width = axis == out.rank() - 1 ? 1 : k.mapWidth(out, ins);
  Type elt = out.elementType;
  k.forEachElement(out, width, [&](const ElementPos &pos) {
    Type t = pos.width == 1 ? elt : VectorType::get({pos.width}, elt);
    // Nested ifs pick the input whose range along `axis` holds the position.
    std::function<Value(size_t, int64_t)> pick = [&](size_t i,
                                                     int64_t start) -> Value {
      SmallVector<Value> src(pos.coords);
      src[axis] =
          arith::SubIOp::create(k.b, k.loc, pos.coords[axis], k.index(start));
      if (i + 1 == ins.size())
        return k.load(ins[i], src, pos.width);
      int64_t end = start + ins[i].shape[axis];
      Value inside =
          arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::ult,
                                pos.coords[axis], k.index(end));
      auto ifOp = scf::IfOp::create(k.b, k.loc, TypeRange{t}, inside,
                                    /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(k.b);
      k.b.setInsertionPointToStart(ifOp.thenBlock());
      scf::YieldOp::create(k.b, k.loc, k.load(ins[i], src, pos.width));
      k.b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(k.b, k.loc, pick(i + 1, end));
      return ifOp.getResult(0);
    };
    storeAt(k, pick(0, 0), out, pos);
  });
}

/// out[i] = in[delinearize(linearize(i))]: a reshape of a strided view.
static void emitReshapeCopy(KernelBuilder &k, const KernelView &in,
                            const KernelView &out) {
  KernelView flatIn = in.isContiguous() ? k.materialize(in.flat()) : in;
  k.forEachElement(out, 1, [&](const ElementPos &pos) {
    Value lin = pos.linear;
    if (!lin) {
      lin = k.index(0);
      for (auto [c, d] : llvm::zip(pos.coords, out.shape))
        lin = arith::AddIOp::create(
            k.b, k.loc, arith::MulIOp::create(k.b, k.loc, lin, k.index(d)), c);
    }
    Value v = in.isContiguous() ? k.load(in.flat(), {lin}, 1)
                                : k.load(in, k.delinearize(lin, in.shape), 1);
    storeAt(k, v, out, pos);
  });
}

static void emitIota(KernelBuilder &k, mir::IotaOp op, const KernelView &out) {
  Type elt = out.elementType;
  int64_t axis = op.getAxis();
  k.forEachElement(out, 1, [&](const ElementPos &pos) {
    Value v = arith::IndexCastOp::create(k.b, k.loc, k.b.getI32Type(),
                                         pos.coords[axis]);
    storeAt(k, k.castValue(v, elt), out, pos);
  });
}

static void emitGather(KernelBuilder &k, mir::GatherOp op,
                       const KernelView &table, const KernelView &indices,
                       const KernelView &out) {
  int64_t axis = op.getAxis();
  int64_t rows = table.shape[axis];
  int64_t irank = indices.rank();
  // Whole rows of the table move in vectors unless the gathered axis is the
  // innermost one.
  int64_t width = axis == table.rank() - 1 ? 1 : k.mapWidth(out, {table});
  k.forEachElement(out, width, [&](const ElementPos &pos) {
    ArrayRef<Value> c = pos.coords;
    SmallVector<Value> idx(c.begin() + axis, c.begin() + axis + irank);
    Value id = k.load(indices, idx, 1);
    Value row = k.tableRow(id, rows);
    SmallVector<Value> src(c.begin(), c.begin() + axis);
    src.push_back(row);
    src.append(c.begin() + axis + irank, c.end());
    storeAt(k, k.load(table, src, pos.width), out, pos);
  });
}

/// `size` positions of `axis` of `in` from `start` on, every `step`-th, as
/// an addressable view (no copy).
static KernelView axisRange(KernelBuilder &k, const KernelView &in,
                            int64_t axis, int64_t start, int64_t size,
                            int64_t step = 1) {
  SmallVector<int64_t> shape(in.shape), strides(in.strides);
  shape[axis] = size;
  strides[axis] *= step;
  return k.materialize(
      in.derive(in.offset + start * in.strides[axis], shape, strides));
}

/// A slice: a copy from the view moved to `start` with the axis's stride
/// times a forward `step`; a backward step reads position
/// `start - j * |step|` of the axis (no negative strides: the CPU's memref
/// addressing takes strides as unsigned).
static void emitSlice(KernelBuilder &k, mir::SliceOp op, const KernelView &in,
                      const KernelView &out) {
  int64_t axis = op.getAxis(), start = op.getStart(), step = op.getStep();
  if (start < 0)
    start += in.shape[axis];
  if (step > 0) {
    emitCopy(k, axisRange(k, in, axis, start, op.getSize(), step), out);
    return;
  }
  // Along the innermost axis consecutive outputs are not consecutive inputs.
  int64_t width = axis == out.rank() - 1 ? 1 : k.mapWidth(out, {in});
  k.forEachElement(out, width, [&](const ElementPos &pos) {
    SmallVector<Value> src(pos.coords);
    src[axis] = arith::SubIOp::create(
        k.b, k.loc, k.index(start),
        arith::MulIOp::create(k.b, k.loc, pos.coords[axis], k.index(-step)));
    storeAt(k, k.load(in, src, pos.width), out, pos);
  });
}

/// Each piece of a split copied from its range of the input (a split the
/// MIR-to-LIR conversion could not alias, e.g. of a constant).
static LogicalResult emitSplit(KernelBuilder &k, mir::SplitOp op,
                               const KernelView &in,
                               ArrayRef<KernelView> outs) {
  int64_t axis =
      *mir::normalizeAxis(op.getAxis(), op.getInput().getType().getRank());
  int64_t start = 0;
  for (auto [out, size] : llvm::zip(outs, op.getSizes())) {
    if (in.isScalar()) {
      emitCopy(k, in, out); // A splat: every piece is the same splat.
      continue;
    }
    emitCopy(k, axisRange(k, in, axis, start, size), out);
    start += size;
  }
  return success();
}

/// out[i...] = in[i % shape(in)...] (np.tile).
static void emitTile(KernelBuilder &k, const KernelView &in,
                     const KernelView &out) {
  k.forEachElement(out, 1, [&](const ElementPos &pos) {
    SmallVector<Value> src;
    for (auto [c, d, o] : llvm::zip(pos.coords, in.shape, out.shape))
      src.push_back(
          d == o
              ? c
              : arith::RemUIOp::create(k.b, k.loc, c, k.index(d)).getResult());
    storeAt(k, k.load(in, src, 1), out, pos);
  });
}

/// out = value outside [low, low + shape(in)), else in[i - low] (np.pad).
static void emitPad(KernelBuilder &k, mir::PadOp op, const KernelView &in,
                    const KernelView &out) {
  Type elt = out.elementType;
  // The value as mir.cast converts an f64 (toward zero for integers, nonzero
  // for i1), folded here: no f64 in the kernel.
  double value = op.getValue().convertToDouble();
  if (elt.isInteger(1))
    value = value != 0;
  else if (!isa<FloatType>(elt))
    value = std::trunc(value);
  Value fill = k.constant(value, elt);
  k.forEachElement(out, 1, [&](const ElementPos &pos) {
    SmallVector<Value> src;
    Value inside;
    for (auto [c, d, lo] : llvm::zip(pos.coords, in.shape, op.getLow())) {
      // c - lo as an unsigned compare: below `lo` wraps past `d`.
      Value i = arith::SubIOp::create(k.b, k.loc, c, k.index(lo));
      Value ok = arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::ult, i,
                                       k.index(d));
      inside = inside ? arith::AndIOp::create(k.b, k.loc, inside, ok) : ok;
      src.push_back(i);
    }
    Value v = fill;
    if (inside)
      v = k.ifThenElse(
          inside, TypeRange{elt},
          [&] { return SmallVector<Value>{k.load(in, src, 1)}; },
          [&] { return SmallVector<Value>{fill}; })[0];
    else
      v = k.load(in, src, 1);
    storeAt(k, v, out, pos);
  });
}

/// out[..., j, ...] = indices[...] == j (an index outside [0, depth) gives
/// zeros).
static void emitOneHot(KernelBuilder &k, mir::OneHotOp op,
                       const KernelView &indices, const KernelView &out) {
  int64_t axis = op.getAxis() < 0 ? op.getAxis() + out.rank() : op.getAxis();
  Type elt = out.elementType;
  k.forEachElement(out, 1, [&](const ElementPos &pos) {
    SmallVector<Value> at(pos.coords);
    Value j = at[axis];
    at.erase(at.begin() + axis);
    Value id = k.load(indices, at, 1);
    Value jv = arith::IndexCastOp::create(k.b, k.loc, id.getType(), j);
    Value hit =
        arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::eq, id, jv);
    storeAt(k, k.castValue(hit, elt), out, pos);
  });
}

LogicalResult mlir::rlx::emitDataMovementKernel(KernelBuilder &k, Operation *op,
                                                ArrayRef<KernelView> ins,
                                                const KernelView &out) {
  for (const KernelView &in : ins)
    if (in.isScalar() && !isa<mir::BroadcastOp>(op))
      return op->emitOpError("expects tensor operands on the ")
             << k.targetName() << " back end";
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](mir::GatherOp g) {
        emitGather(k, g, ins[0], ins[1], out);
        return success();
      })
      .Case([&](mir::ConcatOp c) {
        emitConcat(k, c, ins, out);
        return success();
      })
      .Case([&](mir::SliceOp s) {
        emitSlice(k, s, ins[0], out);
        return success();
      })
      .Case([&](mir::TransposeOp t) {
        // A copy from the view with permuted dims.
        const KernelView &in = ins[0];
        SmallVector<int64_t> shape, strides;
        for (int64_t p : t.getPermutation()) {
          shape.push_back(in.shape[p]);
          strides.push_back(in.strides[p]);
        }
        emitCopy(k, k.materialize(in.derive(in.offset, shape, strides)), out);
        return success();
      })
      .Case([&](mir::ReshapeOp) {
        emitReshapeCopy(k, ins[0], out);
        return success();
      })
      .Case([&](mir::BroadcastOp) {
        emitCopy(k, ins[0], out);
        return success();
      })
      .Case([&](mir::IotaOp i) {
        emitIota(k, i, out);
        return success();
      })
      .Case([&](mir::TileOp) {
        emitTile(k, ins[0], out);
        return success();
      })
      .Case([&](mir::PadOp p) {
        emitPad(k, p, ins[0], out);
        return success();
      })
      .Case([&](mir::OneHotOp o) {
        emitOneHot(k, o, ins[0], out);
        return success();
      })
      .Default([&](Operation *o) {
        return o->emitOpError("has no ") << k.targetName() << " kernel";
      });
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

LogicalResult mlir::rlx::bindKernelConstants(
    KernelBuilder &k, Block &body, DenseMap<Value, KernelView> &inputs,
    function_ref<KernelView(DenseElementsAttr)> bindDense) {
  for (Operation &op : body.without_terminator()) {
    if (!op.hasTrait<OpTrait::ConstantLike>())
      continue;
    auto value =
        dyn_cast<DenseElementsAttr>(op.getAttrOfType<ElementsAttr>("value"));
    if (!value)
      return op.emitOpError("constant kind not supported by the ")
             << k.targetName() << " back end";
    if (!bindsConstantAsScalar(&op)) {
      inputs[op.getResult(0)] = bindDense(value);
      continue;
    }
    Type elt = value.getElementType();
    KernelView scalar;
    scalar.elementType = elt;
    scalar.scalar =
        isa<FloatType>(elt)
            ? arith::ConstantOp::create(
                  k.b, k.loc,
                  k.b.getFloatAttr(elt, value.getSplatValue<APFloat>()))
                  .getResult()
            : arith::ConstantOp::create(
                  k.b, k.loc,
                  k.b.getIntegerAttr(elt, value.getSplatValue<APInt>()))
                  .getResult();
    scalar.shape.assign(value.getType().getShape().begin(),
                        value.getType().getShape().end());
    scalar.strides.assign(scalar.shape.size(), 0);
    inputs[op.getResult(0)] = scalar;
  }
  return success();
}

bool mlir::rlx::bindsConstantAsScalar(Operation *op) {
  auto value = dyn_cast_or_null<DenseElementsAttr>(
      op->getAttrOfType<ElementsAttr>("value"));
  if (!value || !value.isSplat())
    return false;
  return llvm::all_of(op->getUsers(), [](Operation *user) {
    // A yielded constant is copied out, which reads a scalar view too.
    if (user->hasTrait<OpTrait::IsTerminator>())
      return true;
    return !isTargetKernelOp(user) &&
           !isa<mir::RmsNormOp, mir::LayerNormOp, mir::FusedResidualRmsNormOp,
                mir::FusedResidualLayerNormOp, mir::SoftmaxOp,
                mir::LogSoftmaxOp, mir::ArgMaxOp, mir::ArgMinOp, mir::CumSumOp,
                mir::TileOp, mir::PadOp, mir::OneHotOp, mir::GatherOp,
                mir::ConcatOp, mir::SliceOp, mir::TransposeOp, mir::ReshapeOp,
                mir::IotaOp, mir::TopKOp, mir::GroupedMatmulOp,
                mir::SortGroupsOp, mir::GatedDeltaRuleOp>(user);
  });
}

bool mlir::rlx::isTargetKernelOp(Operation *op) {
  // Reading ggml blocks is the target's business too.
  if (auto dq = dyn_cast<mir::DequantizeOp>(op))
    return isa<mir::QuantType>(dq.getInput().getType().getElementType());
  if (auto g = dyn_cast<mir::GatherOp>(op))
    return isa<mir::QuantType>(g.getTable().getType().getElementType());
  return isa<mir::ReduceSumOp, mir::ReduceMeanOp, mir::ReduceMaxOp,
             mir::ReduceMinOp, mir::ReduceProdOp, mir::MatmulOp,
             mir::BatchMatmulOp, mir::FusedMatmulOp, mir::AttentionOp,
             mir::RopeOp>(op);
}

LogicalResult mlir::rlx::emitKernelOp(KernelBuilder &k, Operation *op,
                                      const DenseMap<Value, KernelView> &inputs,
                                      ArrayRef<KernelView> outputs) {
  SmallVector<KernelView> ins;
  for (Value v : op->getOperands()) {
    auto it = inputs.find(v);
    if (it == inputs.end())
      return op->emitOpError("has an operand the ")
             << k.targetName() << " back end cannot bind";
    ins.push_back(it->second);
  }
  if (isa<mir::RmsNormOp, mir::LayerNormOp, mir::FusedResidualRmsNormOp,
          mir::FusedResidualLayerNormOp, mir::SoftmaxOp, mir::LogSoftmaxOp>(op))
    return emitNormKernel(k, op, ins, outputs);
  if (isRoutingOp(op))
    return emitRoutingKernel(k, op, ins, outputs);
  if (isRecurrentOp(op))
    return emitRecurrentKernel(k, op, ins, outputs);
  if (auto split = dyn_cast<mir::SplitOp>(op))
    return emitSplit(k, split, ins[0], outputs);
  if (outputs.size() != 1)
    return op->emitOpError("has ") << outputs.size() << " results; the "
                                   << k.targetName() << " back end expects one";
  const KernelView &out = outputs[0];
  if (isa<lir::AllReduceOp, lir::AllGatherOp>(op))
    return k.emitCollective(op, ins, out);
  // A table the target stores in its own layout (the CPU's x8) is read by
  // the target's gather.
  if (isTargetKernelOp(op) ||
      (isa<mir::GatherOp>(op) && !ins[0].isScalar() && ins[0].packed))
    return k.emitTargetKernel(op, ins, out);
  if (isa<mir::GatherOp, mir::ConcatOp, mir::SliceOp, mir::TransposeOp,
          mir::ReshapeOp, mir::IotaOp, mir::BroadcastOp, mir::TileOp,
          mir::PadOp, mir::OneHotOp>(op))
    return emitDataMovementKernel(k, op, ins, out);
  if (isScanOp(op))
    return emitScanKernel(k, op, ins, out);
  return emitElementwiseKernel(k, op, ins, out);
}
