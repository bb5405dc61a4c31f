//===- KernelEmitter.h - Building blocks of the CPU kernels ------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The CPU back end writes each LIR kernel as a function over memrefs in the
// scf, vector, memref, arith and math dialects. KernelEmitter holds the
// pieces every kernel is made of: constant-bound loop nests, chunked loops
// whose body works on vectors (main part) and scalars (tail) alike, loads and
// stores of either width, reductions, pointers for library calls, and
// activations.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_CONVERSION_LIRTOLLVM_KERNELEMITTER_H
#define RLX_LIB_CONVERSION_LIRTOLLVM_KERNELEMITTER_H

#include "RLX/Dialect/Common/RLXEnums.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::rlx {

/// An input of a kernel: a memref, or a scalar (a splat constant).
struct KernelInput {
  Value memref;
  Value scalar;
  /// The memref is a weight `[N, K]` stored as panels of 16 rows
  /// (`[N/16][K][16]`, layout "nk16"), packed when the weights were loaded.
  bool packed = false;
  Type elementType() const;
  ArrayRef<int64_t> shape() const;
};

/// Module-wide state of the kernel generator: the shared scratch buffer.
struct KernelModuleState {
  /// Floats of scratch the kernels need (the largest request).
  int64_t scratchFloats = 0;
};

/// Kernels run SPMD: every thread of the runtime's pool calls the entry with
/// its id; a kernel splits its work into chunks that threads claim from a
/// shared counter (`parallelFor`) and waits until every chunk is done. The
/// execution context `ctx` holds the claim and finish counters (bytes 0 and
/// 64) and a cursor per thread (byte 128 + 64 * tid); see KernelEmitter.cpp.
class KernelEmitter {
public:
  KernelEmitter(OpBuilder &b, Location loc, ModuleOp module)
      : b(b), loc(loc), module(module) {}

  OpBuilder &b;
  Location loc;
  ModuleOp module;
  /// The execution context (!llvm.ptr), this thread's id and the number of
  /// threads (index), arguments of every kernel function.
  Value ctx, tid, nthreads;
  KernelModuleState *state = nullptr;
  /// The lowering the kernel follows (lir-select-strategy), if any.
  lir::LoweringConfigAttr config;
  /// Inside the body of a parallel loop: nested parallel loops run on the
  /// calling thread, without claiming chunks.
  bool inParallel = false;

  /// Runs `body(i)` for every i in [0, n), each index claimed by one
  /// thread, then waits until every index is done.
  void parallelFor(int64_t n, function_ref<void(Value i)> body);
  /// The loop nest over `ubs` split between threads: the iteration space is
  /// cut into at most `maxChunks` contiguous chunks of the flattened nest.
  void parallelNest(ArrayRef<int64_t> ubs, int64_t maxChunks,
                    function_ref<void(ValueRange ivs)> body);
  /// scf.if with results: `thenFn` and `elseFn` return the yielded values.
  SmallVector<Value> ifElse(Value cond, TypeRange types,
                            function_ref<SmallVector<Value>()> thenFn,
                            function_ref<SmallVector<Value>()> elseFn);
  /// Runs `body` on one thread; the others wait until it is done.
  void serial(function_ref<void()> body);
  /// A shared scratch buffer of at least `floats` f32 elements, 64-byte
  /// aligned, as memref<?xf32> (one buffer for the whole module).
  Value scratch(int64_t floats);

  // Constants.
  Value index(int64_t v);
  Value constant(double v, Type type);

  /// Vector width for `type` (512-bit vectors; 1 for i1, whose vectors do not
  /// share the byte-per-element memory layout).
  static int64_t vectorWidth(Type type);
  /// Innermost stride of a memref (in elements); 0 when not static.
  static int64_t innerStride(Value memref);
  static SmallVector<int64_t> strides(Value memref);

  /// Nested scf.for loops over [0, ub) for each bound; `body` gets the ivs.
  void loopNest(ArrayRef<int64_t> ubs, function_ref<void(ValueRange ivs)> body);
  /// A loop over [0, n): chunks of `vl` (body gets width vl) then a scalar
  /// tail (width 1).
  void forChunks(int64_t n, int64_t vl,
                 function_ref<void(Value j, int64_t width)> body);
  /// As forChunks, folding `kind` over the values `body` returns; `init` is
  /// the scalar identity. Returns the scalar result.
  Value reduceChunks(int64_t n, int64_t vl, vector::CombiningKind kind,
                     Value init,
                     function_ref<Value(Value j, int64_t width)> body);
  /// Combines two values (scalars or vectors) with `kind`.
  Value combine(vector::CombiningKind kind, Value a, Value c);

  /// Loads `width` consecutive elements along the last dim (a scalar for 1).
  Value load(Value memref, ValueRange indices, int64_t width);
  void store(Value value, Value memref, ValueRange indices, int64_t width);
  /// Stores `value` into every element of `memref`.
  void fill(Value memref, double value);
  /// A scalar broadcast to `width` lanes (itself for 1).
  Value splat(Value scalar, int64_t width);

  /// Element address of `memref`'s first element, as !llvm.ptr.
  Value pointer(Value memref);
  /// `ptr` advanced by `elements` elements of `type`.
  Value offsetPointer(Value ptr, Value elements, Type type);
  /// Calls cblas_sgemm (row major): C = alpha * op(A) * op(B) + beta * C.
  void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, Value a,
             int64_t lda, Value bm, int64_t ldb, float beta, Value c,
             int64_t ldc);
  /// As above on raw pointers, with a dynamic N (index).
  void sgemmPtr(bool transA, bool transB, int64_t m, Value n, int64_t k,
                Value a, int64_t lda, Value bm, int64_t ldb, float beta,
                Value c, int64_t ldc);
  /// A memref of `type` over the same storage as `memref` (offset 0).
  Value reinterpret(Value memref, MemRefType type);

  /// `act(x)` on a scalar or vector.
  Value activation(Activation act, Value x);
  Value gelu(Value x, bool tanhApprox);
  Value sigmoid(Value x);

  /// The symbol of a private function declaration, created once.
  func::FuncOp declareFunction(StringRef name, FunctionType type);
};

/// Emits the body of one kernel into the current function: `op` is the MIR
/// op of the kernel body, `inputs` maps each of its tensor operands to a
/// memref or a scalar, `outputs` are the memrefs of its results.
LogicalResult emitKernel(KernelEmitter &e, Operation *op,
                         const DenseMap<Value, KernelInput> &inputs,
                         ArrayRef<Value> outputs);

/// Copies `in` (broadcast by numpy rules) into `out`.
void emitCopy(KernelEmitter &e, KernelInput in, Value out);

// Per-category emitters (return failure() with a diagnostic on `op` for
// unsupported forms).
LogicalResult emitElementwiseKernel(KernelEmitter &e, Operation *op,
                                    ArrayRef<KernelInput> inputs, Value out);
LogicalResult emitNormKernel(KernelEmitter &e, Operation *op,
                             ArrayRef<KernelInput> inputs,
                             ArrayRef<Value> outputs);
LogicalResult emitReduceKernel(KernelEmitter &e, Operation *op,
                               ArrayRef<KernelInput> inputs, Value out);
LogicalResult emitMatmulKernel(KernelEmitter &e, Operation *op,
                               ArrayRef<KernelInput> inputs, Value out);
/// A packed GEMM into `gateUp` ([..., 2I], partial sums) whose epilogue
/// writes `out` = act(gate) * up ([..., I]): a matmul kernel and the
/// mir.fused_glu kernel that reads it, as one kernel. `packInput`: `out` may
/// share storage with `lhs`, which is then copied before any write.
LogicalResult emitGluGemmKernel(KernelEmitter &e, Value lhs, Value w,
                                Value gateUp, Value out, Activation act,
                                bool packInput);
LogicalResult emitAttentionKernel(KernelEmitter &e, Operation *op,
                                  ArrayRef<KernelInput> inputs, Value out);
LogicalResult emitRopeKernel(KernelEmitter &e, Operation *op,
                             ArrayRef<KernelInput> inputs, Value out);
LogicalResult emitDataMovementKernel(KernelEmitter &e, Operation *op,
                                     ArrayRef<KernelInput> inputs, Value out);

} // namespace mlir::rlx

#endif // RLX_LIB_CONVERSION_LIRTOLLVM_KERNELEMITTER_H
