//===- Recurrent.cpp - State scans of linear attention, for every target --===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mir.gated_delta_rule: the recurrence of Gated DeltaNet layers. Column j of
// a head's state S [Dk, Dv] evolves on its own (S^T k, the delta and the
// update of column j, and output element j read only column j), so a
// position is (batch, value head, tile of columns) and walks the sequence in
// order. The tile lives in the final_state output, which the position owns:
// the first step reads the initial state (or starts from zeros) and every
// step writes the tile there, two passes over its Dk rows per step (S^T k,
// then the decayed update with S^T q accumulated on the way). The l2 norms and
// the decay are scalars of the step that every position recomputes; they scale
// the dot products instead of the vectors.
//
// On the CPU a tile is a few vectors of columns (each row of the tile one
// contiguous load), chunks of positions per thread; on SPIR-V a column per
// thread. Written once on KernelBuilder's primitives.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

using namespace mlir;
using namespace mlir::rlx;

namespace {
/// The operands and results of one gated_delta_rule kernel, with the
/// column tiling of its positions.
struct DeltaRule {
  KernelBuilder &k;
  const KernelView &q, &key, &v, &g, &beta;
  const KernelView *init;
  const KernelView &out, &state;
  bool l2norm;
  float scale;
  /// Columns per vector, and vectors per position.
  int64_t width = 1, vectors = 1;
  FloatOps m{k};

  Value f32(double x) { return k.constant(x, k.b.getF32Type()); }

  /// rsqrt(sum(x * x) + 1e-6) over the Dk elements of x[b, t, head, :].
  Value inverseNorm(const KernelView &x, Value b, Value t, Value head) {
    int64_t n = x.shape[3];
    KernelView row = x.derive(x.offset, {n}, {x.innerStride()});
    int64_t w = k.mapWidth(row, {row});
    int64_t main = w > 1 ? n - n % w : 0;
    auto step = [&](int64_t lanes) {
      return [&, lanes](Value i, ValueRange acc) -> SmallVector<Value> {
        Value e = k.load(x, {b, t, head, i}, lanes);
        return {m.add(acc[0], m.mul(e, e))};
      };
    };
    Value sum = f32(0.0);
    if (main > 0)
      sum = k.sumLanes(k.forLoop(0, main, w, {k.splat(sum, w)}, step(w))[0]);
    sum = k.forLoop(main, n, 1, {sum}, step(1))[0];
    return math::RsqrtOp::create(k.b, k.loc, m.add(sum, f32(1e-6)));
  }

  /// The element [..., col] of `view` for vector `c` of the tile at `j0`.
  Value column(Value j0, int64_t c) {
    return arith::AddIOp::create(k.b, k.loc, j0, k.index(c * width));
  }

  void emitPosition(Value b, Value h, Value tile) {
    int64_t steps = v.shape[1], hv = v.shape[2], dk = key.shape[3];
    int64_t group = hv / key.shape[2];
    Value hk = arith::DivUIOp::create(k.b, k.loc, h, k.index(group));
    Value j0 =
        arith::MulIOp::create(k.b, k.loc, tile, k.index(width * vectors));
    auto stateAt = [&](Value i, int64_t c) -> SmallVector<Value> {
      return {b, h, i, column(j0, c)};
    };
    // One step of the sequence: the tile of the state is read from `from`
    // (zeros when null) and written to the state.
    SmallVector<Value> zeros(vectors, k.splat(f32(0.0), width));
    auto readState = [&](const KernelView *from, Value i, int64_t c) {
      return from ? k.load(*from, stateAt(i, c), width) : zeros[c];
    };
    auto step = [&](Value t, const KernelView *from) {
      Value decay = math::ExpOp::create(k.b, k.loc, k.load(g, {b, t, h}, 1));
      Value rate = k.load(beta, {b, t, h}, 1);
      Value rk = l2norm ? inverseNorm(key, b, t, hk) : f32(1.0);
      Value qScale = f32(scale);
      if (l2norm)
        qScale = m.mul(qScale, inverseNorm(q, b, t, hk));
      // kv = S^T k over the undecayed state; the reference's kv_mem is
      // decay * rk * kv.
      SmallVector<Value> kv = zeros;
      if (from)
        kv = k.forLoop(
            0, dk, 1, zeros,
            [&](Value i, ValueRange acc) -> SmallVector<Value> {
              Value ki = k.splat(k.load(key, {b, t, hk, i}, 1), width);
              SmallVector<Value> next;
              for (int64_t c = 0; c < vectors; ++c)
                next.push_back(m.fma(readState(from, i, c), ki, acc[c]));
              return next;
            });
      // The update S = decay * S + (rk * k) (outer) delta is
      // decay * S + k (outer) (rk * delta).
      Value memScale = k.splat(m.mul(decay, rk), width);
      Value rateV = k.splat(rate, width), rkV = k.splat(rk, width);
      SmallVector<Value> update;
      for (int64_t c = 0; c < vectors; ++c) {
        Value vt = k.load(v, {b, t, h, column(j0, c)}, width);
        Value delta = m.mul(m.sub(vt, m.mul(kv[c], memScale)), rateV);
        update.push_back(m.mul(delta, rkV));
      }
      Value decayV = k.splat(decay, width);
      SmallVector<Value> o = k.forLoop(
          0, dk, 1, zeros, [&](Value i, ValueRange acc) -> SmallVector<Value> {
            Value ki = k.splat(k.load(key, {b, t, hk, i}, 1), width);
            Value qi = k.splat(k.load(q, {b, t, hk, i}, 1), width);
            SmallVector<Value> next;
            for (int64_t c = 0; c < vectors; ++c) {
              Value s = m.mul(ki, update[c]);
              if (from)
                s = m.fma(readState(from, i, c), decayV, s);
              k.store(s, state, stateAt(i, c), width);
              next.push_back(m.fma(s, qi, acc[c]));
            }
            return next;
          });
      Value qScaleV = k.splat(qScale, width);
      for (int64_t c = 0; c < vectors; ++c)
        k.store(m.mul(o[c], qScaleV), out, {b, t, h, column(j0, c)}, width);
    };
    if (steps == 0) {
      // No step: the final state is the initial one (or zeros).
      k.forLoop(0, dk, 1, {}, [&](Value i, ValueRange) -> SmallVector<Value> {
        for (int64_t c = 0; c < vectors; ++c)
          k.store(readState(init, i, c), state, stateAt(i, c), width);
        return {};
      });
      return;
    }
    // The first step reads the initial state (no copy of it first), the
    // others the state the previous step wrote.
    step(k.index(0), init);
    k.forLoop(1, steps, 1, {}, [&](Value t, ValueRange) -> SmallVector<Value> {
      step(t, &state);
      return {};
    });
  }

  void emit() {
    int64_t batch = v.shape[0], hv = v.shape[2], dv = v.shape[3];
    if (batch * hv * dv == 0)
      return;
    // Vectors along Dv: rows of the state, the values and the output.
    auto row = [&](const KernelView &x) {
      return x.derive(x.offset, {dv}, {x.innerStride()});
    };
    SmallVector<KernelView> rows = {row(v), row(out), row(state)};
    if (init)
      rows.push_back(row(*init));
    width = k.mapWidth(row(state), rows);
    while (width > 1 && dv % width != 0)
      width /= 2;
    // Two vectors per position (each scalar of k and q serves both; more
    // measured no faster) when the columns divide evenly and there are
    // positions enough to spread.
    if (width > 1 && dv % (2 * width) == 0 && batch * hv * dv / width >= 32)
      vectors = 2;
    int64_t cols = width * vectors;
    int64_t cost = v.shape[1] * key.shape[3] * cols * 8 + 1;
    k.forEachPosition({batch, hv, dv / cols}, cost, [&](ValueRange pos) {
      emitPosition(pos[0], pos[1], pos[2]);
    });
  }
};
} // namespace

bool mlir::rlx::isRecurrentOp(Operation *op) {
  return isa<mir::GatedDeltaRuleOp>(op);
}

LogicalResult mlir::rlx::emitRecurrentKernel(KernelBuilder &k, Operation *op,
                                             ArrayRef<KernelView> ins,
                                             ArrayRef<KernelView> outs) {
  if (failed(requireTensorOperands(k, op, ins)))
    return failure();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](mir::GatedDeltaRuleOp r) {
        int64_t dk = ins[1].shape[3];
        float scale = r.getScale().value_or(
            dk > 0 ? 1.0f / std::sqrt(static_cast<float>(dk)) : 1.0f);
        DeltaRule rule{k,
                       ins[0],
                       ins[1],
                       ins[2],
                       ins[3],
                       ins[4],
                       r.getInitialState() ? &ins[5] : nullptr,
                       outs[0],
                       outs[1],
                       r.getQkL2norm(),
                       scale};
        rule.emit();
        return success();
      })
      .Default([](Operation *o) {
        return o->emitOpError("is not a recurrent kernel");
      });
}
