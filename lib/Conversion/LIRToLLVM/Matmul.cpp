//===- Matmul.cpp - GEMM CPU kernels --------------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mir.matmul, mir.batch_matmul and mir.fused_matmul call OpenBLAS
// cblas_sgemm on the views (leading dims collapsed into M when the layout
// allows, one call per batch otherwise); the fused epilogue (bias,
// activation, residual) is a vectorized pass over the output rows. A
// residual without an activation is folded into the GEMM (C = residual,
// beta = 1).
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::rlx;

/// A 2-D view of `m` at the leading indices `lead` (rank-reduced subview).
static Value matrixAt(KernelEmitter &e, Value m, ValueRange lead) {
  auto ty = cast<MemRefType>(m.getType());
  int64_t rank = ty.getRank();
  if (lead.empty() && rank == 2)
    return m;
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (int64_t d = 0; d < rank; ++d) {
    strides.push_back(e.b.getIndexAttr(1));
    if (d < rank - 2) {
      offsets.push_back(lead[d]);
      sizes.push_back(e.b.getIndexAttr(1));
    } else {
      offsets.push_back(e.b.getIndexAttr(0));
      sizes.push_back(e.b.getIndexAttr(ty.getDimSize(d)));
    }
  }
  auto resultTy = memref::SubViewOp::inferRankReducedResultType(
      {ty.getDimSize(rank - 2), ty.getDimSize(rank - 1)}, ty, offsets, sizes,
      strides);
  return memref::SubViewOp::create(e.b, e.loc, cast<MemRefType>(resultTy), m,
                                   offsets, sizes, strides);
}

/// True when the leading dims of `m` can be folded into its row dimension
/// (each leading stride equals the next stride times the next size).
static bool rowsCollapse(Value m) {
  auto ty = cast<MemRefType>(m.getType());
  SmallVector<int64_t> s = KernelEmitter::strides(m);
  for (int64_t d = 0; d + 2 < ty.getRank(); ++d)
    if (s[d] != s[d + 1] * ty.getDimSize(d + 1))
      return false;
  return true;
}

/// The leading dimension (row stride) of a matrix view, 0 if unsupported.
static int64_t leadingDim(Value m) {
  SmallVector<int64_t> s = KernelEmitter::strides(m);
  if (s.size() < 2 || s.back() != 1 || ShapedType::isDynamic(s[s.size() - 2]))
    return 0;
  return s[s.size() - 2];
}

LogicalResult mlir::rlx::emitMatmulKernel(KernelEmitter &e, Operation *op,
                                          ArrayRef<KernelInput> ins,
                                          Value out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value lhs = ins[0].memref, rhs = ins[1].memref;
  if (!lhs || !rhs)
    return op->emitOpError("expects tensor operands on the CPU back end");
  auto outTy = cast<MemRefType>(out.getType());
  if (!outTy.getElementType().isF32() ||
      !cast<MemRefType>(lhs.getType()).getElementType().isF32() ||
      !cast<MemRefType>(rhs.getType()).getElementType().isF32())
    return op->emitOpError("the CPU back end multiplies f32 matrices only "
                           "(f16/bf16 GEMM is not implemented yet)");
  bool transA = op->hasAttr("transpose_lhs");
  bool transB = op->hasAttr("transpose_rhs");
  bool batched = isa<mir::BatchMatmulOp>(op);
  auto lTy = cast<MemRefType>(lhs.getType());
  int64_t rank = outTy.getRank();
  int64_t m = outTy.getDimSize(rank - 2), n = outTy.getDimSize(rank - 1);
  int64_t k = lTy.getDimSize(lTy.getRank() - (transA ? 2 : 1));
  int64_t lda = leadingDim(lhs), ldb = leadingDim(rhs), ldc = leadingDim(out);
  if (!lda || !ldb || !ldc)
    return op->emitOpError("needs unit-stride rows for its GEMM operands");

  auto fused = dyn_cast<mir::FusedMatmulOp>(op);
  Value bias, residual;
  Activation act = Activation::None;
  if (fused) {
    unsigned next = 2;
    if (fused.getBias())
      bias = ins[next++].memref;
    if (fused.getResidual())
      residual = ins[next++].memref;
    act = fused.getActivation();
  }
  // C = residual; C += A*B (beta = 1) when nothing comes between them.
  float beta = 0.0f;
  if (residual && act == Activation::None && !bias) {
    emitCopy(e, KernelInput{residual, {}}, out);
    residual = nullptr;
    beta = 1.0f;
  }

  ArrayRef<int64_t> lead = outTy.getShape().drop_back(2);
  if (!batched && !transA && rowsCollapse(lhs) && rank >= 2) {
    int64_t rows = m;
    for (int64_t d : lead)
      rows *= d;
    SmallVector<Value> zeros(lead.size(), e.index(0));
    e.sgemm(false, transB, rows, n, k, matrixAt(e, lhs, zeros), lda, rhs, ldb,
            beta, matrixAt(e, out, zeros), ldc);
  } else {
    e.loopNest(lead, [&](ValueRange ivs) {
      Value a = matrixAt(e, lhs, ivs);
      Value bm = batched ? matrixAt(e, rhs, ivs) : rhs;
      e.sgemm(transA, transB, m, n, k, a, lda, bm, ldb, beta,
              matrixAt(e, out, ivs), ldc);
    });
  }

  // Epilogue: out = act(out + bias) + residual, row by row.
  if (!bias && act == Activation::None && !residual)
    return success();
  int64_t vl = KernelEmitter::vectorWidth(outTy.getElementType());
  if (residual && KernelEmitter::innerStride(residual) != 1)
    vl = 1;
  e.loopNest(outTy.getShape().drop_back(), [&](ValueRange outer) {
    e.forChunks(n, vl, [&](Value j, int64_t width) {
      SmallVector<Value> idx(outer);
      idx.push_back(j);
      Value v = e.load(out, idx, width);
      if (bias)
        v = arith::AddFOp::create(b, loc, v, e.load(bias, {j}, width));
      v = e.activation(act, v);
      if (residual)
        v = arith::AddFOp::create(b, loc, v, e.load(residual, idx, width));
      e.store(v, out, idx, width);
    });
  });
  return success();
}
