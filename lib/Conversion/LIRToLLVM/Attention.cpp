//===- Attention.cpp - Attention and RoPE CPU kernels ---------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mir.attention is one kernel with an online softmax (flash-attention
// style): for each (batch, head, query) it streams the keys the mask allows,
// keeping the running maximum, the normalizer and a head_dim-wide
// accumulator in registers; no [q_len, kv_len] score matrix is stored.
// mir.rope computes cos/sin once per token (libm accuracy) and rotates every
// head with vector ops.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include <limits>

using namespace mlir;
using namespace mlir::rlx;

LogicalResult mlir::rlx::emitAttentionKernel(KernelEmitter &e, Operation *o,
                                             ArrayRef<KernelInput> ins,
                                             Value out) {
  auto op = cast<mir::AttentionOp>(o);
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value q = ins[0].memref, k = ins[1].memref, v = ins[2].memref;
  Value mask = op.getMask() ? ins[3].memref : Value();
  if (!q || !k || !v || (op.getMask() && !mask))
    return op.emitOpError("expects tensor operands on the CPU back end");
  for (Value m : {q, k, v, out})
    if (KernelEmitter::innerStride(m) != 1)
      return op.emitOpError("needs unit-stride head vectors");
  auto qTy = cast<MemRefType>(q.getType());
  Type elt = qTy.getElementType();
  if (!elt.isF32())
    return op.emitOpError("the CPU back end computes attention in f32 only");
  int64_t batch = qTy.getDimSize(0), tq = qTy.getDimSize(1);
  int64_t tk = cast<MemRefType>(k.getType()).getDimSize(1);
  int64_t heads = op.getNumHeads(), hd = op.getHeadDim();
  int64_t group = heads / op.getNumKvHeads();
  MaskKind kind = op.getMaskKind();
  bool causal = kind == MaskKind::Causal || kind == MaskKind::SlidingWindow;
  float scale = op.getScale(), softcap = op.getSoftcap();
  auto vecTy = VectorType::get({hd}, elt);

  e.loopNest({batch, heads, tq}, [&](ValueRange ivs) {
    Value bi = ivs[0], h = ivs[1], i = ivs[2];
    Value kvh = arith::DivUIOp::create(b, loc, h, e.index(group));
    Value qOff = arith::MulIOp::create(b, loc, h, e.index(hd));
    Value kvOff = arith::MulIOp::create(b, loc, kvh, e.index(hd));
    Value qv =
        vector::LoadOp::create(b, loc, vecTy, q, ValueRange{bi, i, qOff});
    Value pos = arith::AddIOp::create(b, loc, i, e.index(tk - tq));
    Value end = causal
                    ? arith::AddIOp::create(b, loc, pos, e.index(1)).getResult()
                    : e.index(tk);
    Value start = e.index(0);
    if (kind == MaskKind::SlidingWindow) {
      // max(0, pos - window + 1), in signed arithmetic.
      Value lo = arith::SubIOp::create(
          b, loc, arith::AddIOp::create(b, loc, pos, e.index(1)),
          e.index(op.getWindow()));
      start = arith::MaxSIOp::create(b, loc, lo, e.index(0));
    }
    Value negInf = e.constant(-std::numeric_limits<float>::infinity(), elt);
    Value zero = e.constant(0.0, elt);
    Value zeros = e.splat(zero, hd);
    auto loop = scf::ForOp::create(
        b, loc, start, end, e.index(1), ValueRange{negInf, zero, zeros},
        [&](OpBuilder &, Location, Value j, ValueRange it) {
          Value m = it[0], l = it[1], acc = it[2];
          Value kv = vector::LoadOp::create(b, loc, vecTy, k,
                                            ValueRange{bi, j, kvOff});
          Value dot = vector::ReductionOp::create(
              b, loc, vector::CombiningKind::ADD,
              arith::MulFOp::create(b, loc, qv, kv));
          Value s = arith::MulFOp::create(b, loc, dot, e.constant(scale, elt));
          if (softcap > 0) {
            Value cap = e.constant(softcap, elt);
            s = arith::MulFOp::create(
                b, loc, cap,
                math::TanhOp::create(b, loc,
                                     arith::DivFOp::create(b, loc, s, cap)));
          }
          Value m2 = arith::MaximumFOp::create(b, loc, m, s);
          Value c =
              math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, m2));
          Value p =
              math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, m2));
          Value l2 = arith::AddFOp::create(
              b, loc, arith::MulFOp::create(b, loc, l, c), p);
          Value vv = vector::LoadOp::create(b, loc, vecTy, v,
                                            ValueRange{bi, j, kvOff});
          Value acc2 = arith::AddFOp::create(
              b, loc, arith::MulFOp::create(b, loc, acc, e.splat(c, hd)),
              arith::MulFOp::create(b, loc, vv, e.splat(p, hd)));
          if (mask) {
            // A padded key leaves the state unchanged.
            Value mk = memref::LoadOp::create(b, loc, mask, ValueRange{bi, j});
            Type mt = mk.getType();
            Value keep =
                isa<FloatType>(mt)
                    ? arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE,
                                            mk, e.constant(0.0, mt))
                          .getResult()
                    : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                            mk, e.constant(0.0, mt))
                          .getResult();
            m2 = arith::SelectOp::create(b, loc, keep, m2, m);
            l2 = arith::SelectOp::create(b, loc, keep, l2, l);
            acc2 = arith::SelectOp::create(b, loc, keep, acc2, acc);
          }
          scf::YieldOp::create(b, loc, ValueRange{m2, l2, acc2});
        });
    Value l = loop.getResult(1), acc = loop.getResult(2);
    // Rows with no visible key produce zeros.
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
    Value denom =
        arith::SelectOp::create(b, loc, empty, e.constant(1.0, elt), l);
    Value res = arith::DivFOp::create(b, loc, acc, e.splat(denom, hd));
    vector::StoreOp::create(b, loc, res, out, ValueRange{bi, i, qOff});
  });
  return success();
}

LogicalResult mlir::rlx::emitRopeKernel(KernelEmitter &e, Operation *o,
                                        ArrayRef<KernelInput> ins, Value out) {
  auto op = cast<mir::RopeOp>(o);
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value x = ins[0].memref, positions = ins[1].memref;
  Value invFreq = op.getInvFreq() ? ins[2].memref : Value();
  if (!x || !positions || (op.getInvFreq() && !invFreq))
    return op.emitOpError("expects tensor operands on the CPU back end");
  auto xTy = cast<MemRefType>(x.getType());
  Type elt = xTy.getElementType();
  if (!elt.isF32())
    return op.emitOpError("the CPU back end applies RoPE to f32 only");
  int64_t batch = xTy.getDimSize(0), seq = xTy.getDimSize(1);
  int64_t width = xTy.getDimSize(2), hd = op.getHeadDim();
  int64_t rot = op.getRotaryDim(), half = rot / 2;
  bool interleaved = op.getStyle() == RopeStyle::Interleaved;
  int64_t vl = (KernelEmitter::innerStride(x) == 1 &&
                KernelEmitter::innerStride(out) == 1 && !interleaved)
                   ? 16
                   : 1;
  int64_t passVl = (KernelEmitter::innerStride(x) == 1 &&
                    KernelEmitter::innerStride(out) == 1)
                       ? 16
                       : 1;
  auto tableTy = MemRefType::get({half}, elt);
  Value cosT = memref::AllocaOp::create(b, loc, tableTy);
  Value sinT = memref::AllocaOp::create(b, loc, tableTy);
  bool posRank1 = cast<MemRefType>(positions.getType()).getRank() == 1;
  float theta = op.getTheta();

  e.loopNest({batch, seq}, [&](ValueRange ivs) {
    Value bi = ivs[0], t = ivs[1];
    Value p =
        posRank1 ? memref::LoadOp::create(b, loc, positions, t)
                 : memref::LoadOp::create(b, loc, positions, ValueRange{bi, t});
    Value pos = arith::SIToFPOp::create(b, loc, elt, p);
    // cos/sin of pos * inv_freq[i], inv_freq[i] = 1 / theta^(2i / rot).
    e.loopNest({half}, [&](ValueRange iv) {
      Value i = iv[0];
      Value inv;
      if (invFreq) {
        inv = memref::LoadOp::create(b, loc, invFreq, i);
      } else {
        Value twoI = arith::MulIOp::create(b, loc, i, e.index(2));
        Value exponent = arith::DivFOp::create(
            b, loc,
            arith::SIToFPOp::create(
                b, loc, elt,
                arith::IndexCastOp::create(b, loc, b.getI64Type(), twoI)),
            e.constant(rot, elt));
        Value powv =
            math::PowFOp::create(b, loc, e.constant(theta, elt), exponent);
        inv = arith::DivFOp::create(b, loc, e.constant(1.0, elt), powv);
      }
      Value ang = arith::MulFOp::create(b, loc, pos, inv);
      memref::StoreOp::create(b, loc, math::CosOp::create(b, loc, ang), cosT,
                              i);
      memref::StoreOp::create(b, loc, math::SinOp::create(b, loc, ang), sinT,
                              i);
    });
    e.loopNest({width / hd}, [&](ValueRange hv) {
      Value base = arith::MulIOp::create(b, loc, hv[0], e.index(hd));
      auto rotate = [&](Value i1, Value i2, Value ti, int64_t w) {
        Value x1 = e.load(x, {bi, t, i1}, w), x2 = e.load(x, {bi, t, i2}, w);
        Value c = e.load(cosT, {ti}, w), s = e.load(sinT, {ti}, w);
        Value o1 =
            arith::SubFOp::create(b, loc, arith::MulFOp::create(b, loc, x1, c),
                                  arith::MulFOp::create(b, loc, x2, s));
        Value o2 =
            arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, x2, c),
                                  arith::MulFOp::create(b, loc, x1, s));
        e.store(o1, out, {bi, t, i1}, w);
        e.store(o2, out, {bi, t, i2}, w);
      };
      e.forChunks(half, vl, [&](Value i, int64_t w) {
        if (interleaved) {
          Value two = arith::MulIOp::create(b, loc, i, e.index(2));
          Value i1 = arith::AddIOp::create(b, loc, base, two);
          Value i2 = arith::AddIOp::create(b, loc, i1, e.index(1));
          rotate(i1, i2, i, 1);
          return;
        }
        Value i1 = arith::AddIOp::create(b, loc, base, i);
        Value i2 = arith::AddIOp::create(b, loc, i1, e.index(half));
        rotate(i1, i2, i, w);
      });
      // Channels past rotary_dim pass through.
      if (rot < hd)
        e.forChunks(hd - rot, passVl, [&](Value j, int64_t w) {
          Value c = arith::AddIOp::create(
              b, loc, base, arith::AddIOp::create(b, loc, j, e.index(rot)));
          e.store(e.load(x, {bi, t, c}, w), out, {bi, t, c}, w);
        });
    });
  });
  return success();
}
