//===- FuseGluGemm.cpp - A GEMM and the GLU that reads it, as one kernel --===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// lir-fuse-glu-gemm: the gate/up GEMM of a gated FFN writes [gate | up], and
// the mir.fused_glu kernel right after it reads only that buffer. With the
// weight packed for the generated GEMM, the GLU becomes the GEMM's
// epilogue: one kernel computing both, the [gate | up] buffer kept as its
// scratch output. The compute type's roundings (the GEMM's and the GLU's
// round_to) are applied in that epilogue.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/LIR/Transforms/Passes.h"
#include "RLX/Dialect/LIR/Transforms/Transforms.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::rlx::lir {
#define GEN_PASS_DEF_LIRFUSEGLUGEMMPASS
#include "RLX/Dialect/LIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx::lir

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::lir;

/// The param layout of the view `v` reads, when `v` is a param.
static std::optional<ParamLayout> layoutOf(EntryOp entry, Value v) {
  for (IOOp io : entry.getBlock().getOps<IOOp>())
    if (io.getView() == v && io.getKind() == IOKind::Param)
      return io.getLayout().value_or(ParamLayout::RowMajor);
  return std::nullopt;
}

/// A kernel's body yields its compute op's only result.
static bool yieldsCompute(KernelOp k, Operation *compute) {
  auto y = cast<YieldOp>(k.getBody().front().getTerminator());
  return y.getValues().size() == 1 &&
         y.getValues()[0].getDefiningOp() == compute;
}

std::optional<Type> mlir::rlx::lir::getGluGemmRounding(Operation *gemm) {
  if (isa_and_nonnull<mir::MatmulOp>(gemm))
    return Type();
  auto fused = dyn_cast_or_null<mir::FusedMatmulOp>(gemm);
  if (!fused || fused.getBias() || fused.getResidual() ||
      fused.getActivation() != Activation::None)
    return std::nullopt;
  return fused.getRoundTo().value_or(Type());
}

bool mlir::rlx::lir::isFusableGluGemm(EntryOp entry, KernelOp mm,
                                      KernelOp glu) {
  Operation *matmul = mm.getComputeOp();
  auto gluOp = dyn_cast_or_null<mir::FusedGluOp>(glu.getComputeOp());
  if (!getGluGemmRounding(matmul) || !gluOp || mm.getIns().size() != 2 ||
      mm.getOuts().size() != 1 || glu.getIns().size() != 1 ||
      glu.getOuts().size() != 1 || mm.getConfig() || glu.getConfig() ||
      layoutOf(entry, mm.getIns()[1]) != ParamLayout::NK16)
    return false;
  Value gateUp = mm.getOuts()[0];
  if (glu.getIns()[0] != gateUp ||
      gluOp.getOperand() != glu.getBody().front().getArgument(0))
    return false;
  if (!yieldsCompute(mm, matmul) || !yieldsCompute(glu, gluOp))
    return false;
  auto guTy = cast<MemRefType>(gateUp.getType());
  auto outTy = cast<MemRefType>(glu.getOuts()[0].getType());
  if (guTy.getShape().back() % 32 != 0 || !outTy.getElementType().isF32() ||
      !outTy.getLayout().isIdentity() || !guTy.getLayout().isIdentity())
    return false;
  // Nothing else reads the [gate | up] buffer.
  for (Operation &op : entry.getBlock()) {
    if (&op == mm.getOperation() || &op == glu.getOperation())
      continue;
    if (auto view = dyn_cast<ViewOp>(op)) {
      if (view.getSource() == gateUp)
        return false;
      continue;
    }
    if (llvm::is_contained(op.getOperands(), gateUp))
      return false;
  }
  return true;
}

KernelOp mlir::rlx::lir::fuseGluGemm(KernelOp mm, KernelOp glu) {
  OpBuilder b(mm);
  Location loc = mm.getLoc();
  MLIRContext *ctx = mm.getContext();
  SmallVector<Value> outs = {mm.getOuts()[0], glu.getOuts()[0]};
  auto fused = KernelOp::create(
      b, loc, b.getStringAttr("matmul_glu"), mm.getIns(), outs,
      /*library=*/nullptr, /*inplace=*/false,
      LoweringConfigAttr::get(ctx, KernelStrategy::GluGemm, {}, {}),
      /*dispatch=*/nullptr);
  Block *body = b.createBlock(&fused.getBody());
  for (Value in : mm.getBody().front().getArguments())
    body->addArgument(in.getType(), loc);
  IRMapping map;
  map.map(mm.getBody().front().getArguments(), body->getArguments());
  SmallVector<Value> results;
  for (Operation &op : mm.getBody().front().without_terminator())
    b.clone(op, map);
  Value gateUp = map.lookup(
      cast<YieldOp>(mm.getBody().front().getTerminator()).getValues()[0]);
  map.map(glu.getBody().front().getArgument(0), gateUp);
  for (Operation &op : glu.getBody().front().without_terminator())
    b.clone(op, map);
  Value out = map.lookup(
      cast<YieldOp>(glu.getBody().front().getTerminator()).getValues()[0]);
  YieldOp::create(b, loc, ValueRange{gateUp, out});
  // The planner may give the GLU's result the bytes of the matmul's left
  // operand (dead after the matmul): the fused kernel writes over an input.
  auto va = mm.getIns()[0].getDefiningOp<ViewOp>();
  auto vo = glu.getOuts()[0].getDefiningOp<ViewOp>();
  if (va && vo && va.getSpace() == vo.getSpace() &&
      va.getByteOffset() < vo.getByteOffset() + vo.getExtentBytes() &&
      vo.getByteOffset() < va.getByteOffset() + va.getExtentBytes())
    fused.setInplace(true);
  mm.erase();
  glu.erase();
  return fused;
}

namespace {
struct LIRFuseGluGemmPass
    : public mlir::rlx::lir::impl::LIRFuseGluGemmPassBase<LIRFuseGluGemmPass> {
  using Base::Base;
  void runOnOperation() override {
    for (EntryOp entry : getOperation().getOps<EntryOp>()) {
      SmallVector<KernelOp> kernels(entry.getBlock().getOps<KernelOp>());
      for (size_t i = 0; i + 1 < kernels.size(); ++i) {
        auto next = dyn_cast_or_null<KernelOp>(kernels[i]->getNextNode());
        if (next != kernels[i + 1] ||
            !isFusableGluGemm(entry, kernels[i], kernels[i + 1]))
          continue;
        fuseGluGemm(kernels[i], kernels[i + 1]);
        ++i;
      }
    }
  }
};
} // namespace
