//===- KernelBuilder.h - The kernel layer both code generators share -*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The CPU and the SPIR-V code generators write every LIR kernel through this
// layer, as IREE's Codegen/Common serves its LLVMCPU and SPIRV back ends:
//
// - KernelView: an operand as any target sees it (a window of a buffer with
//   an element offset, a shape and strides, or a splat scalar);
// - KernelMath: the scalar and vector math of MIR (activations, binary,
//   unary and compare ops, casts, the body of mir.elementwise), written once
//   on values that are scalars or vectors alike;
// - KernelBuilder: the target's loop, memory and parallelism primitives
//   (map over the elements of an output, loads and stores of a width, row
//   loops with reductions), and the kernels whose strategy is the target's
//   own (GEMMs, attention, RoPE, axis reductions);
// - emitKernelOp: the op-category dispatcher, and the kernels written once on
//   top of the primitives: every elementwise op, copies and the fused GLU,
//   RMSNorm / LayerNorm (fused residual forms too), softmax, the data
//   movement ops, the scans (argmax / argmin, cumsum), the routing ops
//   of mixtures of experts (top_k, grouped_matmul) and the recurrence of
//   linear attention (gated_delta_rule);
// - KernelCache: one generated function per distinct kernel.
//
// Adding an elementwise op is one case in KernelMath; a new weight type is a
// load in each target's primitives.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_CONVERSION_KERNELCOMMON_KERNELBUILDER_H
#define RLX_LIB_CONVERSION_KERNELCOMMON_KERNELBUILDER_H

#include "RLX/Dialect/Common/RLXEnums.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringMap.h"
#include <deque>

namespace mlir::rlx {

namespace mir {
class ElementwiseOp;
} // namespace mir

//===----------------------------------------------------------------------===//
// Operands
//===----------------------------------------------------------------------===//

/// The identity (row-major) strides of `shape`.
SmallVector<int64_t> contiguousStrides(ArrayRef<int64_t> shape);

/// A kernel operand: a typed window of a buffer, or a scalar (a splat
/// constant). Element (i0, ..., in) lives at `offset + sum(ik * strides[k])`
/// elements into `buffer`.
struct KernelView {
  /// The target's handle on the storage: the CPU's memref of the view, the
  /// SPIR-V kernel's flat storage-buffer argument. Null for a scalar.
  Value buffer;
  /// A splat constant's value when `buffer` is null.
  Value scalar;
  Type elementType;
  /// Element offset of element [0, ..., 0] inside `buffer` (a view derived
  /// from another, e.g. a slice, keeps the buffer and moves the offset).
  int64_t offset = 0;
  SmallVector<int64_t> shape, strides;
  /// CPU: the buffer is a weight stored nk16 (f32) or x8 (q4_0, q8_0, q4_K,
  /// q6_K, f16, bf16) (lir-pack-params).
  bool packed = false;
  /// CPU: the view as a memref of its own (strided layout), when derived.
  Value memref;

  bool isScalar() const { return !buffer; }
  int64_t rank() const { return shape.size(); }
  int64_t numElements() const;
  /// Row-major with unit inner stride and no gaps.
  bool isContiguous() const;
  /// The innermost stride (1 for rank 0).
  int64_t innerStride() const { return strides.empty() ? 1 : strides.back(); }
  /// The same window with `shape` / `strides` / `offset` changed.
  KernelView derive(int64_t newOffset, ArrayRef<int64_t> newShape,
                    ArrayRef<int64_t> newStrides) const;
  /// All of the window's elements as a flat, contiguous vector (only for a
  /// contiguous view).
  KernelView flat() const;
};

/// Where a map body is: the output coordinates (the innermost one is the
/// first of `width` consecutive elements) and, on targets that number their
/// elements, the linear index of the element.
struct ElementPos {
  SmallVector<Value> coords;
  Value linear;
  int64_t width = 1;
};

/// One row (the last dimension) of a row-wise kernel.
class RowScope {
public:
  virtual ~RowScope() = default;
  /// Indices of the row's element `j`.
  SmallVector<Value> at(Value j) const;
  /// Folds `body(j, width)` over the row with `kind` (add or maximumf),
  /// starting from `init`; every thread of the row gets the scalar result.
  virtual Value reduce(Value init, vector::CombiningKind kind,
                       function_ref<Value(Value j, int64_t width)> body) = 0;
  /// Runs `body(j, width)` over the row; the element that reduce() read at j
  /// is handled by the same thread, so no barrier guards the row.
  virtual void forEach(function_ref<void(Value j, int64_t width)> body) = 0;

  SmallVector<Value> outer;
  int64_t n = 0;
};

//===----------------------------------------------------------------------===//
// Math
//===----------------------------------------------------------------------===//

/// The math of MIR on scalars and vectors (every helper accepts both).
class KernelMath {
public:
  KernelMath(OpBuilder &b, Location loc) : b(b), loc(loc) {}
  virtual ~KernelMath() = default;

  OpBuilder &b;
  Location loc;

  Value index(int64_t v);
  Value constant(double v, Type type);
  /// A constant of `like`'s type (scalar or vector).
  Value constantLike(double v, Value like);

  Value activation(Activation act, Value x);
  Value gelu(Value x, bool tanhApprox);
  Value sigmoid(Value x);
  /// log(1 + e^x), without overflow or cancellation at large |x|.
  Value softplus(Value x);
  /// np.sign: 1, -1, or x itself for zeros and NaN.
  Value sign(Value x);
  /// `a op c` for a binary MIR op (add, sub, mul, div, max, min, pow).
  Value binary(Operation *op, Value a, Value c);
  /// `op(x)` for a unary MIR op; null when `op` is not one.
  Value unary(Operation *op, Value x);
  Value compare(CmpPredicate pred, Value a, Value c);
  /// `x` converted to `to` with the mir.cast rules (to i1: x != 0).
  Value castValue(Value x, Type to);
  /// `x` rounded to the float type `type` and widened back to its own
  /// element type (the compute type's rounding, `round_to`); `x` itself when
  /// `type` is null.
  Value roundTo(Value x, Type type);
  /// A GEMM's epilogue on its sum `x`: round(act(x + bias) + residual), each
  /// step where given (`bias` and `residual` loaded like `x`, or null;
  /// `roundTo` the compute type's rounding, or null).
  Value gemmEpilogue(Value x, Value bias, Activation act, Value residual,
                     Type roundTo);
  /// A GLU's product act(gate) * up, rounded to `roundTo` when set.
  Value gluProduct(Activation act, Value gate, Value up, Type roundTo);
  /// `kind` of a and c: add, mul, maximumf or minimumf (on integers the
  /// integer add, mul, signed max or signed min).
  Value combine(vector::CombiningKind kind, Value a, Value c);
  /// The identity of `kind` (as combine() reads it) in `type`: 0, 1, -inf
  /// or +inf (the signed minimum or maximum for integers).
  Value reductionIdentity(vector::CombiningKind kind, Type type);
  /// The scalar body of a mir.elementwise on `values` (`width` lanes).
  Value cloneElementwiseBody(mir::ElementwiseOp op, ValueRange values,
                             int64_t width);
  /// A scalar broadcast to `width` lanes (itself for 1).
  Value splat(Value scalar, int64_t width);
  /// scf.if without results.
  void ifThen(Value cond, function_ref<void()> body);
  /// scf.for from `lb` to `ub` by `step` carrying `init` (at least one
  /// iteration when `init` is not empty); `body` returns the next values.
  SmallVector<Value>
  forLoop(int64_t lb, int64_t ub, int64_t step, ValueRange init,
          function_ref<SmallVector<Value>(Value iv, ValueRange iter)> body);
  /// The sum of a vector's lanes (a scalar is itself).
  Value sumLanes(Value v);
  /// scf.if with results of `types`: the bodies return the yielded values.
  SmallVector<Value> ifThenElse(Value cond, TypeRange types,
                                function_ref<SmallVector<Value>()> thenBody,
                                function_ref<SmallVector<Value>()> elseBody);
  /// The row a gather index `id` (an integer) names in a table of `rows`
  /// rows: a negative one counts from the end (np.take), and one out of range
  /// either way is clamped into the table (never a read outside it).
  Value tableRow(Value id, int64_t rows);
  /// Row-major coordinates of the index `linear` in `shape`.
  SmallVector<Value> delinearize(Value linear, ArrayRef<int64_t> shape);
};

/// `coords` with the coordinate of `axis` replaced by `j` (a position on
/// the line through `coords` along `axis`).
SmallVector<Value> withAxis(ArrayRef<Value> coords, int64_t axis, Value j);

/// True for the ops every target implements with its own strategy (see
/// KernelBuilder::emitTargetKernel).
bool isTargetKernelOp(Operation *op);

/// How an axis reduction (mir.reduce_*) combines: add (sum and mean), mul,
/// maximumf or minimumf.
vector::CombiningKind reductionKind(Operation *op);

/// True for the MIR ops KernelMath::unary implements.
bool isUnaryMathOp(Operation *op);
/// True for the MIR ops KernelMath::binary implements.
bool isBinaryMathOp(Operation *op);

//===----------------------------------------------------------------------===//
// Targets
//===----------------------------------------------------------------------===//

/// A code generator's primitives. Kernels written on them run on every
/// target; `emit*` hooks are the kernels whose strategy is the target's own.
class KernelBuilder : public KernelMath {
public:
  using KernelMath::KernelMath;

  /// The target's name in diagnostics ("CPU", "SPIR-V").
  virtual StringRef targetName() const = 0;

  /// The number of consecutive elements a map over `out` reading `ins`
  /// handles at once (1: scalar code).
  virtual int64_t mapWidth(const KernelView &out, ArrayRef<KernelView> ins) = 0;
  /// Runs `body` at every position of `out`'s shape, `width` elements at a
  /// time along the innermost dimension (a scalar tail where it does not
  /// divide), spread over the target's threads.
  virtual void forEachElement(const KernelView &out, int64_t width,
                              function_ref<void(const ElementPos &)> body) = 0;
  /// Runs `body` once per row (all dims but the last) of `like`; `views`
  /// are every view the body accesses along the row.
  virtual void forEachRow(const KernelView &like, ArrayRef<KernelView> views,
                          function_ref<void(RowScope &)> body) = 0;
  /// Runs `body` at every position of `shape`, each a heavy item of about
  /// `costPerPosition` element operations (a dot product, a line walk), so
  /// the target spreads few positions over its threads.
  virtual void forEachPosition(ArrayRef<int64_t> shape, int64_t costPerPosition,
                               function_ref<void(ValueRange coords)> body) = 0;
  /// Runs `body` once, on one thread, for kernels without a parallel form.
  virtual void serial(function_ref<void()> body) = 0;

  /// `width` consecutive elements along the last dim (a scalar for 1).
  virtual Value load(const KernelView &view, ValueRange indices,
                     int64_t width) = 0;
  virtual void store(Value value, const KernelView &view, ValueRange indices,
                     int64_t width) = 0;
  /// A view derived from `view` made addressable by the target (the CPU
  /// casts its memref; SPIR-V addresses it through the offset and strides).
  virtual KernelView materialize(const KernelView &view) = 0;

  /// The kernels whose strategy is the target's own (isTargetKernelOp):
  /// GEMMs, attention, RoPE and axis reductions.
  virtual LogicalResult emitTargetKernel(Operation *op,
                                         ArrayRef<KernelView> ins,
                                         const KernelView &out) = 0;
  /// A collective between the ranks of a tensor-parallel program
  /// (lir.all_reduce, lir.all_gather). A target without a transport refuses
  /// it by name.
  virtual LogicalResult emitCollective(Operation *op, ArrayRef<KernelView> ins,
                                       const KernelView &out) {
    return op->emitOpError("is a collective between the ranks of a "
                           "tensor-parallel program, which the ")
           << targetName()
           << " back end does not run (collectives run on the CPU, over MPI)";
  }
};

//===----------------------------------------------------------------------===//
// Kernels written once
//===----------------------------------------------------------------------===//

/// out[i] = body(ins[i]...) with numpy broadcasting of the inputs.
void emitMap(KernelBuilder &k, ArrayRef<KernelView> ins, const KernelView &out,
             function_ref<Value(ValueRange values, int64_t width)> body);
/// Copies `in` (broadcast by numpy rules) into `out`.
void emitCopy(KernelBuilder &k, const KernelView &in, const KernelView &out);

LogicalResult emitElementwiseKernel(KernelBuilder &k, Operation *op,
                                    ArrayRef<KernelView> ins,
                                    const KernelView &out);
LogicalResult emitNormKernel(KernelBuilder &k, Operation *op,
                             ArrayRef<KernelView> ins,
                             ArrayRef<KernelView> outs);
LogicalResult emitDataMovementKernel(KernelBuilder &k, Operation *op,
                                     ArrayRef<KernelView> ins,
                                     const KernelView &out);
/// True for the ops that walk one axis in order (argmax, argmin, cumsum).
bool isScanOp(Operation *op);
LogicalResult emitScanKernel(KernelBuilder &k, Operation *op,
                             ArrayRef<KernelView> ins, const KernelView &out);

/// Fails with a diagnostic naming the target when an operand of `op` is
/// bound as a scalar (a splat constant) where its kernel reads memory.
LogicalResult requireTensorOperands(KernelBuilder &k, Operation *op,
                                    ArrayRef<KernelView> ins);

/// True for the routing ops (top_k, grouped_matmul).
bool isRoutingOp(Operation *op);
/// mir.top_k (two outputs: values, indices) and mir.grouped_matmul.
LogicalResult emitRoutingKernel(KernelBuilder &k, Operation *op,
                                ArrayRef<KernelView> ins,
                                ArrayRef<KernelView> outs);

/// True for the recurrences of linear attention (gated_delta_rule).
bool isRecurrentOp(Operation *op);
/// mir.gated_delta_rule (two outputs: result, final_state).
LogicalResult emitRecurrentKernel(KernelBuilder &k, Operation *op,
                                  ArrayRef<KernelView> ins,
                                  ArrayRef<KernelView> outs);

/// Whether the constant `op` of a kernel body is bound as a scalar (a splat
/// every user of which reads scalars: elementwise kernels and copies);
/// otherwise it is bound as memory (bindDense, and on SPIR-V a binding of
/// the constant pool), as the matmul, norm, reduction and data-movement
/// kernels read it.
bool bindsConstantAsScalar(Operation *op);

/// Binds the constants of a kernel body (`body`) in `inputs`: a splat read
/// as scalars (bindsConstantAsScalar) becomes a scalar view, any other the
/// view `bindDense` gives.
/// Fails with a diagnostic naming the target on other constant kinds.
LogicalResult
bindKernelConstants(KernelBuilder &k, Block &body,
                    DenseMap<Value, KernelView> &inputs,
                    function_ref<KernelView(DenseElementsAttr)> bindDense);

/// Emits the body of one kernel: `op` is the MIR op of the kernel body,
/// `inputs` maps each of its operands to a view or a scalar, `outputs` are
/// the views of its results. Fails with a diagnostic on `op` for forms the
/// target does not implement.
LogicalResult emitKernelOp(KernelBuilder &k, Operation *op,
                           const DenseMap<Value, KernelView> &inputs,
                           ArrayRef<KernelView> outputs);

//===----------------------------------------------------------------------===//
// One function per distinct kernel
//===----------------------------------------------------------------------===//

/// Generated kernels by what they compute: a bucket per key (the caller's
/// summary of operand types and layouts), compared within a bucket by the
/// equivalence of the kernel bodies.
template <typename Generated> class KernelCache {
public:
  /// The kernel generated for a kernel equivalent to `kernel` under `key`.
  Generated *lookup(StringRef key, lir::KernelOp kernel) {
    for (auto &[other, gen] : buckets[key])
      if (OperationEquivalence::isRegionEquivalentTo(
              &other.getBody(), &kernel.getBody(),
              OperationEquivalence::IgnoreLocations))
        return &gen;
    return nullptr;
  }
  Generated &insert(StringRef key, lir::KernelOp kernel, Generated gen) {
    auto &bucket = buckets[key];
    bucket.push_back({kernel, std::move(gen)});
    return bucket.back().second;
  }

private:
  /// Stable references: callers keep what insert() returned.
  llvm::StringMap<std::deque<std::pair<lir::KernelOp, Generated>>> buckets;
};

/// The bucket key of a kernel: its operand types, the config it follows and
/// the names of its body's ops; `extra` adds what else tells kernels apart
/// (packed weights, element offsets).
std::string kernelKey(lir::KernelOp kernel, StringRef extra = "");

/// Float arithmetic at `k`'s insertion point, on scalars or vectors: what
/// the kernels written as formulas (the norms, the gated delta rule) are
/// made of.
struct FloatOps {
  KernelBuilder &k;
  Value add(Value a, Value c);
  Value sub(Value a, Value c);
  Value mul(Value a, Value c);
  Value div(Value a, Value c);
  Value rsqrt(Value a);
  /// a * c + d, rounded once.
  Value fma(Value a, Value c, Value d);
};

} // namespace mlir::rlx

#endif // RLX_LIB_CONVERSION_KERNELCOMMON_KERNELBUILDER_H
