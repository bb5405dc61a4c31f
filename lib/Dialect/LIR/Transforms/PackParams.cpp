//===- PackParams.cpp - Choose the storage layout of GEMM weights ---------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// lir-pack-params: a weight that only the right-hand side of transposed f32
// matmuls reads is stored as nk16 panels (the generated GEMM's operand); with
// `x8`, a q4_0, q8_0, q4_K, q5_K, q6_K, f16 or bf16 weight that only such
// matmuls and embedding gathers read (a tied LM head) has each group of 8 rows
// interleaved (the micro-kernels' repacked form). The runtime writes these
// layouts when it loads the parameter.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/LIR/Transforms/Passes.h"
#include "RLX/Dialect/LIR/Transforms/Transforms.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::rlx::lir {
#define GEN_PASS_DEF_LIRPACKPARAMSPASS
#include "RLX/Dialect/LIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx::lir

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::lir;

/// Whether operand `operand` of `kernel` is only the right-hand side of a
/// transposed matmul (or fused matmul) with one output, read by nothing else
/// in the kernel.
static bool isTransposedRhsOnly(KernelOp kernel, unsigned operand) {
  if (operand != 1)
    return false;
  Operation *compute = kernel.getComputeOp();
  if (!isa_and_nonnull<mir::MatmulOp, mir::FusedMatmulOp>(compute))
    return false;
  if (!compute->hasAttr("transpose_rhs") || compute->hasAttr("transpose_lhs"))
    return false;
  // The kernel's operands are the compute op's, in order (constants aside).
  Block &body = kernel.getBody().front();
  if (body.getNumArguments() < 2 ||
      compute->getOperand(0) != body.getArgument(0) ||
      compute->getOperand(1) != body.getArgument(1))
    return false;
  for (unsigned i = 2; i < compute->getNumOperands(); ++i)
    if (compute->getOperand(i) == body.getArgument(1) ||
        compute->getOperand(i) == body.getArgument(0))
      return false;
  return kernel.getOuts().size() == 1;
}

/// Whether operand `operand` of `kernel` is only the table of an embedding
/// gather (rows along axis 0, dequantized one by one: the runtime finds a row
/// of an x8 table in its group).
static bool isGatheredTableOnly(KernelOp kernel, unsigned operand) {
  if (operand != 0)
    return false;
  auto gather = dyn_cast_or_null<mir::GatherOp>(kernel.getComputeOp());
  if (!gather || gather.getAxis() != 0)
    return false;
  // ggml blocks are dequantized row by row (rlx_dequantize_x8_rows); f16 /
  // bf16 rows are put back as stored (rlx_uk_unpack), by a kernel that is
  // the gather alone.
  Type table = gather.getTable().getType().getElementType();
  if (!isa<mir::QuantType>(table) &&
      (gather.getType().getElementType() != table ||
       !llvm::hasSingleElement(kernel.getBody().front().without_terminator())))
    return false;
  Block &body = kernel.getBody().front();
  return body.getNumArguments() >= 1 &&
         gather.getTable() == body.getArgument(0) &&
         gather.getIndices() != body.getArgument(0) &&
         kernel.getOuts().size() == 1;
}

bool mlir::rlx::lir::isInterleavableWeight(KernelOp kernel, unsigned operand) {
  if (!isTransposedRhsOnly(kernel, operand) &&
      !isGatheredTableOnly(kernel, operand))
    return false;
  auto wTy = cast<MemRefType>(kernel.getIns()[operand].getType());
  return hasX8Form(wTy.getElementType()) && wTy.getRank() == 2 &&
         wTy.getLayout().isIdentity() && wTy.getDimSize(0) % 8 == 0;
}

bool mlir::rlx::lir::isPackableGemmWeight(KernelOp kernel, unsigned operand) {
  if (!isTransposedRhsOnly(kernel, operand))
    return false;
  auto lTy = cast<MemRefType>(kernel.getIns()[0].getType());
  auto wTy = cast<MemRefType>(kernel.getIns()[1].getType());
  auto oTy = cast<MemRefType>(kernel.getOuts()[0].getType());
  if (!lTy.getElementType().isF32() || !wTy.getElementType().isF32() ||
      !oTy.getElementType().isF32() || wTy.getRank() != 2 ||
      !wTy.getLayout().isIdentity())
    return false;
  // Only properties of the weight and of the op decide: graphs of one model
  // that share a parameter pool must agree on its layout, whatever the
  // layouts of their activations (the generated kernel reads any of them).
  if (wTy.getDimSize(0) % 16 != 0 || !oTy.getLayout().isIdentity())
    return false;
  if (auto fused = dyn_cast<mir::FusedMatmulOp>(kernel.getComputeOp())) {
    if (Value res = fused.getResidual()) {
      auto arg = dyn_cast<BlockArgument>(res);
      if (!arg ||
          cast<MemRefType>(kernel.getIns()[arg.getArgNumber()].getType())
                  .getShape() != oTy.getShape())
        return false;
    }
    if (Value bias = fused.getBias()) {
      auto arg = dyn_cast<BlockArgument>(bias);
      if (!arg)
        return false;
      auto bTy =
          cast<MemRefType>(kernel.getIns()[arg.getArgNumber()].getType());
      if (bTy.getRank() != 1 || !bTy.getLayout().isIdentity())
        return false;
    }
  }
  return true;
}

void mlir::rlx::lir::packGemmParams(EntryOp entry, bool nk16, bool x8) {
  Block &block = entry.getBlock();
  // The layout each candidate would take.
  llvm::DenseMap<Value, ParamLayout> layoutOf;
  llvm::DenseMap<Value, bool> candidates;
  for (IOOp io : block.getOps<IOOp>()) {
    if (io.getKind() != IOKind::Param)
      continue;
    auto ty = cast<MemRefType>(io.getView().getType());
    bool interleaved = hasX8Form(ty.getElementType());
    if (interleaved ? !x8 : !nk16)
      continue;
    ParamLayout layout = interleaved ? ParamLayout::X8 : ParamLayout::NK16;
    int64_t group = interleaved ? 8 : 16;
    bool ok = true;
    if (io.getSources()) {
      // Derived params concatenated along N pack source by source; so do
      // sliced ones (source_starts): the loader packs each source's row
      // range at its place. A range of one source packs whole (any axis;
      // x8 params are repacked after their rows are written).
      auto sizes = io.getSourceSizes();
      ok = io.getConcatAxis() && *io.getConcatAxis() == 0 && sizes &&
           llvm::all_of(*sizes, [&](int64_t s) { return s % group == 0; });
      ok |=
          !interleaved && io.getSourceStarts() && io.getSources()->size() == 1;
    }
    candidates[io.getView()] = ok;
    layoutOf[io.getView()] = layout;
  }
  // Every reader must accept the packed layout; aliases never do.
  llvm::DenseSet<Value> used;
  for (Operation &op : block) {
    if (auto view = dyn_cast<ViewOp>(op)) {
      if (Value src = view.getSource())
        if (candidates.count(src))
          candidates[src] = false;
      continue;
    }
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel)
      continue;
    for (auto [i, v] : llvm::enumerate(kernel->getOperands())) {
      auto it = candidates.find(v);
      if (it == candidates.end())
        continue;
      used.insert(v);
      bool accepts =
          i < kernel.getIns().size() && (layoutOf.lookup(v) == ParamLayout::X8
                                             ? isInterleavableWeight(kernel, i)
                                             : isPackableGemmWeight(kernel, i));
      if (!accepts)
        it->second = false;
    }
  }
  // A param no kernel reads stays as it is.
  for (IOOp io : block.getOps<IOOp>()) {
    auto it = candidates.find(io.getView());
    if (io.getKind() != IOKind::Param || it == candidates.end() ||
        !it->second || !used.contains(io.getView()))
      continue;
    io.setLayoutAttr(ParamLayoutAttr::get(entry.getContext(),
                                          layoutOf.lookup(io.getView())));
  }
}

namespace {
struct LIRPackParamsPass
    : public mlir::rlx::lir::impl::LIRPackParamsPassBase<LIRPackParamsPass> {
  using Base::Base;
  void runOnOperation() override {
    for (EntryOp entry : getOperation().getOps<EntryOp>())
      packGemmParams(entry, nk16, x8);
  }
};
} // namespace
