//===- KernelEmitter.h - The CPU target of the kernel layer ----*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The CPU back end writes each LIR kernel as a function over memrefs in the
// scf, vector, memref, arith and math dialects, through the kernel layer the
// SPIR-V back end shares (KernelCommon/KernelBuilder.h). KernelEmitter is the
// CPU's target: constant-bound loop nests, chunked loops whose body works on
// vectors (main part) and scalars (tail) alike, loads and stores of either
// width, SPMD parallel loops over the runtime's threads, pointers for library
// calls; and the kernels whose strategy is the CPU's own (GEMMs, attention,
// RoPE, axis reductions).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_CONVERSION_LIRTOLLVM_KERNELEMITTER_H
#define RLX_LIB_CONVERSION_LIRTOLLVM_KERNELEMITTER_H

#include "../KernelCommon/KernelBuilder.h"
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
  /// (`[N/16][K][16]`, layout "nk16"), or for q4_0 / q8_0 / q4_K with each
  /// group of 8 rows interleaved (layout "x8"), packed when the weights were
  /// loaded.
  bool packed = false;
  /// The type the weight is kept in when `memref` holds it as stored (f16,
  /// bf16, ggml blocks as bytes); null otherwise.
  Type stored;
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
class KernelEmitter : public KernelBuilder {
public:
  KernelEmitter(OpBuilder &b, Location loc, ModuleOp module)
      : KernelBuilder(b, loc), module(module) {}

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

  //===--------------------------------------------------------------------===//
  // The kernel layer's primitives
  //===--------------------------------------------------------------------===//

  StringRef targetName() const override { return "CPU"; }
  /// 512-bit vectors when every access is unit-stride (else scalars).
  int64_t mapWidth(const KernelView &out, ArrayRef<KernelView> ins) override;
  /// The outer dims in chunks of ~16K elements that threads claim, the
  /// innermost in vectors with a scalar tail.
  void forEachElement(const KernelView &out, int64_t width,
                      function_ref<void(const ElementPos &)> body) override;
  /// Rows in chunks that threads claim; a row's statistics in vector
  /// accumulators.
  void forEachRow(const KernelView &like, ArrayRef<KernelView> views,
                  function_ref<void(RowScope &)> body) override;
  /// The positions in chunks sized by their cost (~16K operations each, at
  /// most 64 chunks) that threads claim.
  void forEachPosition(ArrayRef<int64_t> shape, int64_t costPerPosition,
                       function_ref<void(ValueRange coords)> body) override;
  /// Runs `body` on one thread; the others wait until it is done.
  void serial(function_ref<void()> body) override;
  /// memref.load / vector.load on the view's memref.
  Value load(const KernelView &view, ValueRange indices,
             int64_t width) override;
  void store(Value value, const KernelView &view, ValueRange indices,
             int64_t width) override;
  /// A memref.reinterpret_cast of the kernel argument to the view's strided
  /// layout.
  KernelView materialize(const KernelView &view) override;
  /// Generated (or BLAS) GEMMs as `config` says, flash-style attention,
  /// RoPE, and axis reductions on one thread.
  LogicalResult emitTargetKernel(Operation *op, ArrayRef<KernelView> ins,
                                 const KernelView &out) override;
  /// lir.all_reduce and lir.all_gather: the runtime's MPI routines
  /// (rlx_all_reduce_{f32,f16,bf16}, rlx_all_gather_{f32,16}) called on one
  /// thread.
  LogicalResult emitCollective(Operation *op, ArrayRef<KernelView> ins,
                               const KernelView &out) override;

  /// A view of the whole of `memref` (a kernel argument or a global).
  static KernelView viewOf(Value memref, bool packed = false);
  /// The memref a view reads (its own for a derived view).
  static Value memrefOf(const KernelView &view) {
    return view.memref ? view.memref : view.buffer;
  }

  /// Runs `body(i)` for every i in [0, n), each index claimed by one
  /// thread, then waits until every index is done.
  void parallelFor(int64_t n, function_ref<void(Value i)> body);
  /// The loop nest over `ubs` split between threads: the iteration space is
  /// cut into at most `maxChunks` contiguous chunks of the flattened nest.
  void parallelNest(ArrayRef<int64_t> ubs, int64_t maxChunks,
                    function_ref<void(ValueRange ivs)> body);
  /// A shared scratch buffer of at least `floats` f32 elements, 64-byte
  /// aligned, as memref<?xf32> (one buffer for the whole module).
  Value scratch(int64_t floats);

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

  /// Loads `width` consecutive elements along the last dim (a scalar for 1).
  Value load(Value memref, ValueRange indices, int64_t width);
  void store(Value value, Value memref, ValueRange indices, int64_t width);
  /// Stores `value` into every element of `memref`.
  void fill(Value memref, double value);

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
  /// Calls cblas_sgemv (row major, no transpose): y = A x + beta * y for
  /// A [m, k] with leading dimension lda and a dynamic m (index).
  void sgemvPtr(Value m, int64_t k, Value a, int64_t lda, Value x, float beta,
                Value y);
  /// A memref of `type` over the same storage as `memref` (offset 0).
  Value reinterpret(Value memref, MemRefType type);

  /// The symbol of a private function declaration, created once.
  func::FuncOp declareFunction(StringRef name, FunctionType type);
};

// The CPU's own kernels (return failure() with a diagnostic on `op` for
// unsupported forms).
LogicalResult emitReduceKernel(KernelEmitter &e, Operation *op,
                               ArrayRef<KernelInput> inputs, Value out);
LogicalResult emitMatmulKernel(KernelEmitter &e, Operation *op,
                               ArrayRef<KernelInput> inputs, Value out);
/// mir.dequantize of ggml blocks and row gathers of a ggml table: rows
/// dequantized by the runtime (rlx_dequantize_rows), split between threads.
LogicalResult emitDequantizeKernel(KernelEmitter &e, Operation *op,
                                   ArrayRef<KernelInput> inputs, Value out);
/// A packed GEMM into `gateUp` ([..., 2I], partial sums) whose epilogue
/// writes `out` = act(gate) * up ([..., I]): a matmul kernel and the
/// mir.fused_glu kernel that reads it, as one kernel. Gate and up are
/// rounded to `gateUpRound` (the GEMM's round_to) and the product to
/// `gluRound` (the GLU's), each when set. `packInput`: `out` may share
/// storage with `lhs`, which is then copied before any write.
LogicalResult emitGluGemmKernel(KernelEmitter &e, Value lhs, Value w,
                                Value gateUp, Value out, Activation act,
                                Type gateUpRound, Type gluRound,
                                bool packInput);
LogicalResult emitAttentionKernel(KernelEmitter &e, Operation *op,
                                  ArrayRef<KernelInput> inputs, Value out);
LogicalResult emitRopeKernel(KernelEmitter &e, Operation *op,
                             ArrayRef<KernelInput> inputs, Value out);

} // namespace mlir::rlx

#endif // RLX_LIB_CONVERSION_LIRTOLLVM_KERNELEMITTER_H
