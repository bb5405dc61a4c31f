//===- Attention.cpp - Attention and RoPE GPU kernels ---------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mir.attention is one flash-attention-style kernel: a workgroup of 64
// threads takes 64 queries of one (batch, head), one query per thread. The
// keys and values stream through workgroup memory in tiles of Bc rows
// (Bc * head_dim * 2 floats <= 16 KiB), loaded cooperatively; each thread
// keeps its query, the running maximum, the normalizer and a head_dim-wide
// accumulator (online softmax), so the [q_len, kv_len] score matrix never
// exists. A causal workgroup stops at the last key its last query may see.
//
// Decode (at most 4 queries): one workgroup per (query, head, batch) whose
// 64 threads split the keys (flash-decoding within a workgroup): each
// thread runs the online softmax over its keys, then the partial states
// are rescaled to the workgroup's maximum and summed through workgroup
// memory, head_dim / 32 columns at a time.
//
// mir.rope is one thread per output element; the angle is reduced into
// [-pi, pi] (Cody-Waite, two constants) before sin/cos, whose accuracy
// Vulkan only bounds on that interval.
//
//===----------------------------------------------------------------------===//

#include "GPUKernelEmitter.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::rlx;

namespace {
/// What both attention kernels need to know about the op.
struct AttentionInfo {
  const GPUView *q, *k, *v, *mask;
  int64_t batch, tq, tk, heads, hd, group, window;
  bool causal;
  float scale, softcap;
};
} // namespace

/// True when key `j` (< tk) is not padded out by the mask.
static Value keyKept(GPUKernelEmitter &e, const AttentionInfo &a, Value bi,
                     Value j) {
  if (!a.mask)
    return arith::ConstantIntOp::create(e.b, e.loc, 1, 1);
  Value mk = e.load(*a.mask, {bi, j});
  Type mt = mk.getType();
  if (isa<FloatType>(mt))
    return arith::CmpFOp::create(e.b, e.loc, arith::CmpFPredicate::UNE, mk,
                                 e.constant(0.0, mt));
  return arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::ne, mk,
                               e.constant(0.0, mt));
}

/// scale * (q . k), soft-capped.
static Value score(GPUKernelEmitter &e, const AttentionInfo &a, Value dot) {
  Type elt = dot.getType();
  Value s = e.mulF(dot, e.constant(a.scale, elt));
  if (a.softcap > 0) {
    Value cap = e.constant(a.softcap, elt);
    s = e.mulF(cap, math::TanhOp::create(
                        e.b, e.loc, arith::DivFOp::create(e.b, e.loc, s, cap)));
  }
  return s;
}

/// One online-softmax step: folds score `s` with value row `vAt(d)` into
/// (m, l) and `acc`; returns the new (m, l).
static SmallVector<Value> onlineStep(GPUKernelEmitter &e, int64_t hd, Value m,
                                     Value l, Value s, Value acc,
                                     function_ref<Value(Value d)> vAt) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Type elt = s.getType();
  Value negInf = e.constant(-std::numeric_limits<float>::infinity(), elt);
  Value m2 = arith::MaximumFOp::create(b, loc, m, s);
  // exp(m - m2), 0 before the first visible key.
  Value c = arith::SelectOp::create(
      b, loc,
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, negInf),
      e.constant(0.0, elt),
      math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, m2)));
  Value p = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, m2));
  e.forLoop(0, hd, 1, [&](Value d) {
    Value old = e.loadLocal(acc, {d});
    e.storeLocal(e.addF(e.mulF(old, c), e.mulF(p, vAt(d))), acc, {d});
  });
  return {m2, e.addF(e.mulF(l, c), p)};
}

/// Attention for at most a few queries: 64 threads of a workgroup split the
/// keys of one (query, head, batch) and merge their softmax states.
static void emitDecodeAttention(GPUKernelEmitter &e, const AttentionInfo &a,
                                const GPUView &out) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Type elt = a.q->elementType;
  int64_t hd = a.hd;
  constexpr int64_t kThreads = 64, kColumns = 32;
  e.workgroupSize = {kThreads, 1, 1};
  e.numWorkgroups = {a.tq, a.heads, a.batch};

  Value qs = e.sharedAlloc({hd}, elt);
  Value scratch = e.sharedAlloc({kThreads}, elt);
  Value part = e.sharedAlloc({kThreads, kColumns}, elt);
  Value acc = e.privateAlloc({hd}, elt);
  Value t = e.threadId(0);
  Value i = e.workgroupId(0), h = e.workgroupId(1), bi = e.workgroupId(2);
  Value qOff = e.mulConst(h, hd);
  Value kvOff = e.mulConst(e.divConst(h, a.group), hd);
  Value zero = e.constant(0.0, elt);
  Value negInf = e.constant(-std::numeric_limits<float>::infinity(), elt);
  Value pos = e.addConst(i, a.tk - a.tq);

  // The query row in workgroup memory; a zero accumulator per thread.
  e.forLoop(t, e.index(hd), kThreads, {},
            [&](Value d, ValueRange) -> SmallVector<Value> {
              e.storeLocal(e.load(*a.q, {bi, i, e.add(qOff, d)}), qs, {d});
              return {};
            });
  e.forLoop(0, hd, 1, [&](Value d) { e.storeLocal(zero, acc, {d}); });
  e.barrier();

  // Keys [start, end) the query sees; thread t takes t, t + 64, ...
  Value end =
      a.causal ? e.minIndex(e.addConst(pos, 1), e.index(a.tk)) : e.index(a.tk);
  Value start = e.index(0);
  if (a.window) {
    Value lo =
        arith::SubIOp::create(b, loc, e.addConst(pos, 1), e.index(a.window));
    start = arith::MaxSIOp::create(b, loc, lo, e.index(0));
  }
  SmallVector<Value> st = e.forLoop(
      e.add(start, t), end, kThreads, {negInf, zero},
      [&](Value j, ValueRange cur) -> SmallVector<Value> {
        return e.ifThenElse(
            keyKept(e, a, bi, j), {elt, elt},
            [&]() -> SmallVector<Value> {
              Value dot = e.forLoop(
                  e.index(0), e.index(hd), 1, {zero},
                  [&](Value d, ValueRange sum) -> SmallVector<Value> {
                    // Keys and values kept in f16 read widened.
                    Value kv = e.castValue(
                        e.load(*a.k, {bi, j, e.add(kvOff, d)}), elt);
                    return {e.addF(sum[0], e.mulF(e.loadLocal(qs, {d}), kv))};
                  })[0];
              return onlineStep(
                  e, hd, cur[0], cur[1], score(e, a, dot), acc, [&](Value d) {
                    return e.castValue(e.load(*a.v, {bi, j, e.add(kvOff, d)}),
                                       elt);
                  });
            },
            [&]() -> SmallVector<Value> { return {cur[0], cur[1]}; });
      });

  // Merge: rescale every thread's state to the workgroup's maximum.
  Value m = e.workgroupReduce(st[0], true, scratch, t, kThreads);
  Value f = arith::SelectOp::create(
      b, loc,
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, st[0], negInf),
      zero,
      math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, st[0], m)));
  Value l = e.workgroupReduce(e.mulF(st[1], f), false, scratch, t, kThreads);
  // Rows with no visible key produce zeros.
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
  Value inv = arith::DivFOp::create(
      b, loc, e.constant(1.0, elt),
      arith::SelectOp::create(b, loc, empty, e.constant(1.0, elt), l));
  for (int64_t d0 = 0; d0 < hd; d0 += kColumns) {
    int64_t cols = std::min(kColumns, hd - d0);
    e.forLoop(0, cols, 1, [&](Value c) {
      Value x = e.loadLocal(acc, {e.addConst(c, d0)});
      e.storeLocal(e.mulF(x, f), part, {t, c});
    });
    e.barrier();
    e.ifThen(e.cmpLTConst(t, cols), [&] {
      Value sum = e.forLoop(e.index(0), e.index(kThreads), 1, {zero},
                            [&](Value r, ValueRange it) -> SmallVector<Value> {
                              return {e.addF(it[0], e.loadLocal(part, {r, t}))};
                            })[0];
      e.store(e.mulF(sum, inv), out, {bi, i, e.add(qOff, e.addConst(t, d0))});
    });
    e.barrier();
  }
}

LogicalResult mlir::rlx::emitGPUAttentionKernel(GPUKernelEmitter &e,
                                                Operation *o,
                                                ArrayRef<GPUView> ins,
                                                const GPUView &out) {
  auto op = cast<mir::AttentionOp>(o);
  OpBuilder &b = e.b;
  Location loc = e.loc;
  const GPUView &q = ins[0], &k = ins[1], &v = ins[2];
  bool hasMask = static_cast<bool>(op.getMask());
  if (q.isScalar() || k.isScalar() || v.isScalar() ||
      (hasMask && ins[3].isScalar()))
    return op.emitOpError("expects tensor operands on the SPIR-V back end");
  Type elt = q.elementType;
  if (!elt.isF32())
    return op.emitOpError("the SPIR-V back end computes attention in f32 only");
  int64_t batch = q.shape[0], tq = q.shape[1], tk = k.shape[1];
  int64_t heads = op.getNumHeads(), hd = op.getHeadDim();
  int64_t group = heads / op.getNumKvHeads();
  MaskKind kind = op.getMaskKind();
  bool causal = kind == MaskKind::Causal || kind == MaskKind::SlidingWindow;
  bool window = kind == MaskKind::SlidingWindow;
  float scale = op.getScale(), softcap = op.getSoftcap();

  if (heads > e.target.maxWorkgroups || batch > e.target.maxWorkgroups)
    return op.emitOpError("is too large for one SPIR-V dispatch");
  if (tq <= 4) {
    AttentionInfo info;
    info.q = &q;
    info.k = &k;
    info.v = &v;
    info.mask = hasMask ? &ins[3] : nullptr;
    info.batch = batch;
    info.tq = tq;
    info.tk = tk;
    info.heads = heads;
    info.hd = hd;
    info.group = group;
    info.window = window ? op.getWindow() : 0;
    info.causal = causal;
    info.scale = scale;
    info.softcap = softcap;
    emitDecodeAttention(e, info, out);
    return success();
  }

  constexpr int64_t kRows = 64;
  int64_t tile = std::clamp<int64_t>(2048 / hd, 1, 32);
  while (2 * tile * hd * 4 > e.target.sharedMemoryBytes / 2 && tile > 1)
    tile /= 2;
  e.workgroupSize = {kRows, 1, 1};
  e.numWorkgroups = {(tq + kRows - 1) / kRows, heads, batch};

  Value ks = e.sharedAlloc({tile, hd}, elt);
  Value vs = e.sharedAlloc({tile, hd}, elt);
  Value qv = e.privateAlloc({hd}, elt);
  Value acc = e.privateAlloc({hd}, elt);
  Value t = e.threadId(0);
  Value qb = e.workgroupId(0), h = e.workgroupId(1), bi = e.workgroupId(2);
  Value first = e.mulConst(qb, kRows);
  Value i = e.add(first, t);
  Value valid = e.cmpLTConst(i, tq);
  Value qOff = e.mulConst(h, hd);
  Value kvOff = e.mulConst(e.divConst(h, group), hd);
  Value zero = e.constant(0.0, elt);
  Value negInf = e.constant(-std::numeric_limits<float>::infinity(), elt);
  // pos(i) = i + tk - tq (bottom-right aligned).
  Value pos = e.addConst(i, tk - tq);

  // The query row and a zero accumulator.
  e.ifThen(valid, [&] {
    e.forLoop(0, hd, 1, [&](Value d) {
      e.storeLocal(e.load(q, {bi, i, e.add(qOff, d)}), qv, {d});
      e.storeLocal(zero, acc, {d});
    });
  });

  // Keys [start, end) seen by this workgroup's queries (uniform).
  Value end = e.index(tk);
  if (causal) {
    Value last = e.minIndex(e.addConst(first, kRows - 1), e.index(tq - 1));
    end = e.minIndex(e.addConst(last, tk - tq + 1), e.index(tk));
  }
  Value start = e.index(0);
  if (window) {
    // max(0, pos(first) - window + 1), in signed arithmetic.
    Value lo = arith::SubIOp::create(b, loc, e.addConst(first, tk - tq + 1),
                                     e.index(op.getWindow()));
    start = arith::MaxSIOp::create(b, loc, lo, e.index(0));
  }

  SmallVector<Value> state = e.forLoop(
      start, end, tile, {negInf, zero},
      [&](Value j0, ValueRange st) -> SmallVector<Value> {
        // Stage the K and V tiles.
        e.forLoop(t, e.index(tile * hd), kRows, {},
                  [&](Value idx, ValueRange) -> SmallVector<Value> {
                    Value jj = e.divConst(idx, hd), d = e.remConst(idx, hd);
                    Value gj = e.add(j0, jj);
                    Value ok = e.cmpLTConst(gj, tk);
                    SmallVector<Value> at = {bi, gj, e.add(kvOff, d)};
                    // Keys and values kept in f16 read widened.
                    Value kz = e.constant(0.0, k.elementType);
                    e.storeLocal(e.castValue(e.loadOr(k, at, ok, kz), elt), ks,
                                 {jj, d});
                    e.storeLocal(e.castValue(e.loadOr(v, at, ok, kz), elt), vs,
                                 {jj, d});
                    return {};
                  });
        e.barrier();
        SmallVector<Value> next = e.ifThenElse(
            valid, {elt, elt},
            [&]() -> SmallVector<Value> {
              return e.forLoop(
                  e.index(0), e.index(tile), 1, st,
                  [&](Value jj, ValueRange cur) -> SmallVector<Value> {
                    Value m = cur[0], l = cur[1];
                    Value gj = e.add(j0, jj);
                    Value visible = e.cmpLTConst(gj, tk);
                    if (causal)
                      visible =
                          e.andI(visible, arith::CmpIOp::create(
                                              b, loc, arith::CmpIPredicate::ule,
                                              gj, pos));
                    if (window) {
                      Value dist = arith::SubIOp::create(b, loc, pos, gj);
                      visible =
                          e.andI(visible, e.cmpLTConst(dist, op.getWindow()));
                    }
                    if (hasMask) {
                      Value mk =
                          e.loadOr(ins[3], {bi, gj}, e.cmpLTConst(gj, tk),
                                   e.constant(0.0, ins[3].elementType));
                      Type mt = mk.getType();
                      Value keep =
                          isa<FloatType>(mt)
                              ? arith::CmpFOp::create(b, loc,
                                                      arith::CmpFPredicate::UNE,
                                                      mk, e.constant(0.0, mt))
                                    .getResult()
                              : arith::CmpIOp::create(b, loc,
                                                      arith::CmpIPredicate::ne,
                                                      mk, e.constant(0.0, mt))
                                    .getResult();
                      visible = e.andI(visible, keep);
                    }
                    return e.ifThenElse(
                        visible, {elt, elt},
                        [&]() -> SmallVector<Value> {
                          Value dot = e.forLoop(
                              e.index(0), e.index(hd), 1, {zero},
                              [&](Value d, ValueRange s) -> SmallVector<Value> {
                                return {e.addF(
                                    s[0], e.mulF(e.loadLocal(qv, {d}),
                                                 e.loadLocal(ks, {jj, d})))};
                              })[0];
                          Value s = e.mulF(dot, e.constant(scale, elt));
                          if (softcap > 0) {
                            Value cap = e.constant(softcap, elt);
                            s = e.mulF(
                                cap, math::TanhOp::create(b, loc,
                                                          arith::DivFOp::create(
                                                              b, loc, s, cap)));
                          }
                          Value m2 = arith::MaximumFOp::create(b, loc, m, s);
                          // exp(m - m2), 0 before the first visible key.
                          Value c = arith::SelectOp::create(
                              b, loc,
                              arith::CmpFOp::create(
                                  b, loc, arith::CmpFPredicate::OEQ, m, negInf),
                              zero,
                              math::ExpOp::create(
                                  b, loc,
                                  arith::SubFOp::create(b, loc, m, m2)));
                          Value p = math::ExpOp::create(
                              b, loc, arith::SubFOp::create(b, loc, s, m2));
                          e.forLoop(0, hd, 1, [&](Value d) {
                            Value a = e.loadLocal(acc, {d});
                            Value vv = e.loadLocal(vs, {jj, d});
                            e.storeLocal(e.addF(e.mulF(a, c), e.mulF(p, vv)),
                                         acc, {d});
                          });
                          return {m2, e.addF(e.mulF(l, c), p)};
                        },
                        [&]() -> SmallVector<Value> { return {m, l}; });
                  });
            },
            [&]() -> SmallVector<Value> { return {st[0], st[1]}; });
        e.barrier();
        return next;
      });

  // Rows with no visible key produce zeros.
  Value l = state[1];
  e.ifThen(valid, [&] {
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
    Value denom =
        arith::SelectOp::create(b, loc, empty, e.constant(1.0, elt), l);
    Value inv = arith::DivFOp::create(b, loc, e.constant(1.0, elt), denom);
    e.forLoop(0, hd, 1, [&](Value d) {
      e.store(e.mulF(e.loadLocal(acc, {d}), inv), out, {bi, i, e.add(qOff, d)});
    });
  });
  return success();
}

//===----------------------------------------------------------------------===//
// RoPE
//===----------------------------------------------------------------------===//

/// `x` reduced into [-pi, pi] by subtracting the nearest multiple of 2 pi.
static Value reduceAngle(GPUKernelEmitter &e, Value x) {
  Type t = x.getType();
  // 2 pi = c1 + c2, c1 with few mantissa bits so that k * c1 is exact.
  constexpr double c1 = 6.28125, c2 = 2.0 * M_PI - 6.28125;
  Value k = math::RoundEvenOp::create(
      e.b, e.loc, e.mulF(x, e.constant(1.0 / (2.0 * M_PI), t)));
  Value r = arith::SubFOp::create(e.b, e.loc, x, e.mulF(k, e.constant(c1, t)));
  return arith::SubFOp::create(e.b, e.loc, r, e.mulF(k, e.constant(c2, t)));
}

LogicalResult mlir::rlx::emitGPURopeKernel(GPUKernelEmitter &e, Operation *o,
                                           ArrayRef<GPUView> ins,
                                           const GPUView &out) {
  auto op = cast<mir::RopeOp>(o);
  OpBuilder &b = e.b;
  Location loc = e.loc;
  const GPUView &x = ins[0], &positions = ins[1];
  bool hasInvFreq = static_cast<bool>(op.getInvFreq());
  if (x.isScalar() || positions.isScalar() || (hasInvFreq && ins[2].isScalar()))
    return op.emitOpError("expects tensor operands on the SPIR-V back end");
  Type elt = x.elementType;
  if (!elt.isF32())
    return op.emitOpError("the SPIR-V back end applies RoPE to f32 only");
  int64_t hd = op.getHeadDim(), rot = op.getRotaryDim(), half = rot / 2;
  bool interleaved = op.getStyle() == RopeStyle::Interleaved;
  float theta = op.getTheta();

  e.forEachElement(out.numElements(), [&](Value lin) {
    SmallVector<Value> c = e.delinearize(lin, out.shape);
    Value bi = c[0], t = c[1], ch = c[2];
    Value cc = e.remConst(ch, hd);
    Value base = arith::SubIOp::create(b, loc, ch, cc);
    Value rotated = e.cmpLTConst(cc, rot);
    Value r = e.ifThenElse(
        rotated, {elt},
        [&]() -> SmallVector<Value> {
          // The pair (i1, i2) this channel belongs to and its frequency i.
          Value i, i1, i2, isFirst;
          if (interleaved) {
            i = e.divConst(cc, 2);
            i1 = e.add(base, e.mulConst(i, 2));
            i2 = e.addConst(i1, 1);
            isFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            e.remConst(cc, 2), e.index(0));
          } else {
            isFirst = e.cmpLTConst(cc, half);
            i = arith::SelectOp::create(
                b, loc, isFirst, cc,
                arith::SubIOp::create(b, loc, cc, e.index(half)));
            i1 = e.add(base, i);
            i2 = e.addConst(i1, half);
          }
          Value p = positions.rank() == 1 ? e.load(positions, {t})
                                          : e.load(positions, {bi, t});
          Value pos = arith::SIToFPOp::create(b, loc, elt, p);
          Value inv;
          if (hasInvFreq) {
            inv = e.load(ins[2], {i});
          } else {
            // inv_freq[i] = 1 / theta^(2i / rot).
            Value twoI = arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                                    e.mulConst(i, 2));
            Value exponent = arith::DivFOp::create(
                b, loc, arith::SIToFPOp::create(b, loc, elt, twoI),
                e.constant(rot, elt));
            Value powv =
                math::PowFOp::create(b, loc, e.constant(theta, elt), exponent);
            inv = arith::DivFOp::create(b, loc, e.constant(1.0, elt), powv);
          }
          Value ang = reduceAngle(e, e.mulF(pos, inv));
          Value cs = math::CosOp::create(b, loc, ang);
          Value sn = math::SinOp::create(b, loc, ang);
          Value x1 = e.load(x, {bi, t, i1}), x2 = e.load(x, {bi, t, i2});
          // (a, b) -> (a cos - b sin, b cos + a sin)
          Value o1 =
              arith::SubFOp::create(b, loc, e.mulF(x1, cs), e.mulF(x2, sn));
          Value o2 = e.addF(e.mulF(x2, cs), e.mulF(x1, sn));
          return {arith::SelectOp::create(b, loc, isFirst, o1, o2)};
        },
        [&]() -> SmallVector<Value> { return {e.load(x, c)}; })[0];
    e.store(r, out, c);
  });
  return success();
}
