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
  Type elementType() const;
  ArrayRef<int64_t> shape() const;
};

class KernelEmitter {
public:
  KernelEmitter(OpBuilder &b, Location loc, ModuleOp module)
      : b(b), loc(loc), module(module) {}

  OpBuilder &b;
  Location loc;
  ModuleOp module;

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
  /// Calls cblas_sgemm (row major): C = alpha * op(A) * op(B) + beta * C.
  void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, Value a,
             int64_t lda, Value bm, int64_t ldb, float beta, Value c,
             int64_t ldc);

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
LogicalResult emitAttentionKernel(KernelEmitter &e, Operation *op,
                                  ArrayRef<KernelInput> inputs, Value out);
LogicalResult emitRopeKernel(KernelEmitter &e, Operation *op,
                             ArrayRef<KernelInput> inputs, Value out);
LogicalResult emitDataMovementKernel(KernelEmitter &e, Operation *op,
                                     ArrayRef<KernelInput> inputs, Value out);

} // namespace mlir::rlx

#endif // RLX_LIB_CONVERSION_LIRTOLLVM_KERNELEMITTER_H
