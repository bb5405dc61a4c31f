//===- SelectStrategy.cpp - Choose how each kernel is lowered -------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// lir-select-strategy: annotates each kernel with the lowering the code
// generator follows (`#lir.config`), as IREE's lowering_config does, so the
// choice is visible in the IR and testable on its own.
//
// CPU: a matmul whose weight is kept as stored (f16, bf16, ggml blocks)
// calls the runtime's micro-kernels; one whose weight is stored nk16 runs the
// generated GEMM with a register tile chosen from its shape; any other
// matmul calls BLAS. A fused GLU GEMM gets the generated GEMM's tile with the
// gate and up vectors sharing the register tile. A blocked attention gets its
// tile of heads and query positions.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/LIR/Transforms/Passes.h"
#include "RLX/Dialect/LIR/Transforms/Transforms.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/IR/BuiltinOps.h"
#include <algorithm>

namespace mlir::rlx::lir {
#define GEN_PASS_DEF_LIRSELECTSTRATEGYPASS
#include "RLX/Dialect/LIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx::lir

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::lir;

int64_t mlir::rlx::lir::gemmRowBlockTiles(int64_t m, int64_t mr) {
  constexpr int64_t kRowBlock = 256;
  int64_t tiles = m / mr;
  int64_t blocks =
      std::max<int64_t>(1, (tiles * mr + kRowBlock / 2) / kRowBlock);
  return std::max<int64_t>(1, (tiles + blocks - 1) / blocks);
}

int64_t mlir::rlx::lir::gemmRowBlocks(int64_t m, int64_t mr) {
  int64_t tiles = gemmRowBlockTiles(m, mr);
  return std::max<int64_t>(1, (m / mr + tiles - 1) / tiles);
}

SmallVector<int64_t, 4> mlir::rlx::lir::selectGemmTile(int64_t m, int64_t k,
                                                       int64_t n, bool glu,
                                                       const GemmTile &base) {
  int64_t mr = std::max<int64_t>(1, base.mr);
  int64_t nv = std::max<int64_t>(1, base.nv);
  int64_t kc = base.kc > 0 ? std::min(base.kc, k) : k;
  if (m <= mr) {
    // Decode-like: one row tile, A read in place, each weight streamed once.
    mr = m;
    nv = std::max<int64_t>(nv, 4);
    kc = k;
  }
  // A GLU tile holds gate and up vectors in pairs, or (one vector) the gate
  // and up strips in turn.
  if (glu && nv > 1)
    nv -= nv % 2;
  SmallVector<int64_t, 4> tile = {mr, nv, kc};
  constexpr int64_t kOuterBytes = 3 << 20;
  int64_t rowBlockTiles = gemmRowBlockTiles(m, mr);
  if (kc >= k || (glu && nv == 1) || rowBlockTiles * mr * k * 4 <= kOuterBytes)
    return tile;
  int64_t blockCols = 16 * (glu ? nv / 2 : nv);
  int64_t blocks = std::max<int64_t>(1, n / blockCols);
  tile.push_back(
      std::clamp<int64_t>(blocks * gemmRowBlocks(m, mr) / 16, 1, 16));
  return tile;
}

bool mlir::rlx::lir::isBlockedAttention(mir::AttentionOp op) {
  if (op.getHeadDim() % 16 != 0)
    return false;
  if (!op.getMask())
    return true;
  auto mask = cast<ShapedType>(op.getMask().getType());
  return mask.getRank() == 2 &&
         mask.getElementType().getIntOrFloatBitWidth() >= 8;
}

SmallVector<int64_t, 2>
mlir::rlx::lir::selectAttentionTile(int64_t headDim, int64_t group,
                                    int64_t rows, int64_t accumulators) {
  // Each row keeps headDim / 16 accumulator vectors.
  if (rows <= 0)
    rows = std::clamp<int64_t>(
        accumulators / std::max<int64_t>(1, headDim / 16), 1, 4);
  int64_t heads = 1;
  for (int64_t h = std::min(group, rows); h >= 1; --h)
    if (group % h == 0) {
      heads = h;
      break;
    }
  return {heads, std::max<int64_t>(1, rows / heads)};
}

void mlir::rlx::lir::selectCPUStrategies(EntryOp entry, const GemmTile &base,
                                         int64_t attentionRows,
                                         int64_t attentionAccumulators) {
  MLIRContext *ctx = entry.getContext();
  DenseMap<Value, ParamLayout> layouts;
  for (IOOp io : entry.getBlock().getOps<IOOp>())
    if (io.getKind() == IOKind::Param)
      layouts[io.getView()] = io.getLayout().value_or(ParamLayout::RowMajor);
  auto gemmTile = [&](KernelOp kernel, bool glu) {
    auto wTy = cast<MemRefType>(kernel.getIns()[1].getType());
    int64_t n = wTy.getDimSize(0), k = wTy.getDimSize(1);
    auto outTy = cast<MemRefType>(kernel.getOuts()[0].getType());
    int64_t m = outTy.getNumElements() / n;
    return selectGemmTile(m, k, glu ? n / 2 : n, glu, base);
  };
  for (KernelOp kernel : entry.getBlock().getOps<KernelOp>()) {
    if (LoweringConfigAttr config = kernel.getConfigAttr()) {
      if (config.getStrategy() == KernelStrategy::GluGemm &&
          config.getTile().empty())
        kernel.setConfigAttr(LoweringConfigAttr::get(
            ctx, KernelStrategy::GluGemm, gemmTile(kernel, true), {}));
      continue;
    }
    Operation *compute = kernel.getComputeOp();
    if (auto attention = dyn_cast_or_null<mir::AttentionOp>(compute)) {
      if (isBlockedAttention(attention))
        kernel.setConfigAttr(LoweringConfigAttr::get(
            ctx, KernelStrategy::AttentionBlocked,
            selectAttentionTile(attention.getHeadDim(),
                                attention.getNumHeads() /
                                    attention.getNumKvHeads(),
                                attentionRows, attentionAccumulators),
            {}));
      continue;
    }
    if (!isa_and_nonnull<mir::MatmulOp, mir::FusedMatmulOp, mir::BatchMatmulOp>(
            compute))
      continue;
    // A weight kept as stored is read by the runtime's micro-kernels.
    if (kernel.getIns().size() > 1 &&
        mir::isLowPrecisionWeightType(
            cast<MemRefType>(kernel.getIns()[1].getType()).getElementType())) {
      kernel.setConfigAttr(
          LoweringConfigAttr::get(ctx, KernelStrategy::Ukernel, {}, {}));
      continue;
    }
    bool packed = kernel.getIns().size() > 1 &&
                  layouts.lookup(kernel.getIns()[1]) == ParamLayout::NK16;
    kernel.setConfigAttr(
        packed
            ? LoweringConfigAttr::get(ctx, KernelStrategy::GemmGenerated,
                                      gemmTile(kernel, false), {})
            : LoweringConfigAttr::get(ctx, KernelStrategy::GemmBlas, {}, {}));
  }
}

namespace {
struct LIRSelectStrategyPass
    : public mlir::rlx::lir::impl::LIRSelectStrategyPassBase<
          LIRSelectStrategyPass> {
  using Base::Base;
  void runOnOperation() override {
    if (attentionRows < 0) {
      getOperation().emitError()
          << "lir-select-strategy: attention-rows must be >= 0 (0: from the "
             "head dim), got "
          << static_cast<int64_t>(attentionRows);
      return signalPassFailure();
    }
    if (attentionAccumulators <= 0) {
      getOperation().emitError()
          << "lir-select-strategy: attention-accumulators must be > 0, got "
          << static_cast<int64_t>(attentionAccumulators);
      return signalPassFailure();
    }
    GemmTile base{gemmMr, gemmNv, gemmKc};
    for (EntryOp entry : getOperation().getOps<EntryOp>())
      selectCPUStrategies(entry, base, attentionRows, attentionAccumulators);
  }
};
} // namespace
