//===- GPUKernelEmitter.h - Building blocks of the GPU kernels ---*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The SPIR-V back end writes each LIR kernel as a `gpu.func` in the gpu, scf,
// arith, math and memref dialects. Every view a kernel reads or writes is one
// storage buffer argument, a flat `memref<?xT>`; a GPUView adds the element
// offset of the view inside that buffer, its shape and its strides, so loads
// and stores linearize their indices themselves. GPUKernelEmitter holds the
// pieces every kernel is made of: thread and workgroup ids, grid-stride
// loops, workgroup (shared) memory, barriers, workgroup reductions and
// activations, and records the launch configuration the kernel chose.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_CONVERSION_LIRTOSPIRV_GPUKERNELEMITTER_H
#define RLX_LIB_CONVERSION_LIRTOSPIRV_GPUKERNELEMITTER_H

#include "RLX/Dialect/Common/RLXEnums.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include <array>

namespace mlir::rlx {

/// What the target offers kernels (from the device, or defaults).
struct GPUTargetInfo {
  /// Threads of a one-dimensional workgroup (elementwise kernels).
  int64_t workgroupSize = 64;
  /// The device's maxComputeWorkGroupInvocations.
  int64_t maxInvocations = 1024;
  /// The device's maxComputeSharedMemorySize, in bytes.
  int64_t sharedMemoryBytes = 32768;
  /// Largest workgroup count per dimension the kernels ask for.
  int64_t maxWorkgroups = 65535;
};

/// A kernel operand: a typed window of a storage buffer (or a scalar for a
/// splat constant).
struct GPUView {
  /// The kernel argument: memref<?xT, StorageBuffer>. Null for a scalar.
  Value buffer;
  /// A splat constant's value when `buffer` is null.
  Value scalar;
  Type elementType;
  /// Element offset of element [0, ..., 0] inside `buffer`.
  int64_t offset = 0;
  SmallVector<int64_t> shape, strides;

  bool isScalar() const { return !buffer; }
  int64_t rank() const { return shape.size(); }
  int64_t numElements() const;
  /// Row-major with unit inner stride and no gaps.
  bool isContiguous() const;
  /// The innermost stride (1 for rank 0).
  int64_t innerStride() const { return strides.empty() ? 1 : strides.back(); }
};

/// The identity (row-major) strides of `shape`.
SmallVector<int64_t> contiguousStrides(ArrayRef<int64_t> shape);

class GPUKernelEmitter {
public:
  GPUKernelEmitter(OpBuilder &b, Location loc, const GPUTargetInfo &target)
      : b(b), loc(loc), target(target) {}

  OpBuilder &b;
  Location loc;
  const GPUTargetInfo &target;
  /// The launch configuration the kernel generator chose.
  std::array<int64_t, 3> workgroupSize = {1, 1, 1};
  std::array<int64_t, 3> numWorkgroups = {1, 1, 1};

  //===--------------------------------------------------------------------===//
  // Constants and index arithmetic
  //===--------------------------------------------------------------------===//

  Value index(int64_t v);
  Value constant(double v, Type type);
  Value add(Value a, Value c);
  Value mul(Value a, Value c);
  Value mulConst(Value a, int64_t c);
  Value addConst(Value a, int64_t c);
  Value divConst(Value a, int64_t c);
  Value remConst(Value a, int64_t c);
  Value minIndex(Value a, Value c);
  Value cmpLT(Value a, Value c);
  Value cmpLTConst(Value a, int64_t c);
  Value andI(Value a, Value c);
  /// Row-major coordinates of `linear` in `shape`.
  SmallVector<Value> delinearize(Value linear, ArrayRef<int64_t> shape);

  //===--------------------------------------------------------------------===//
  // Memory
  //===--------------------------------------------------------------------===//

  /// Element index inside the buffer of `view` at `indices`.
  Value linearIndex(const GPUView &view, ValueRange indices);
  Value load(const GPUView &view, ValueRange indices);
  void store(Value value, const GPUView &view, ValueRange indices);
  /// A load whose indices are clamped into the view; `inBounds` false gives
  /// `fallback` instead (tile loads at ragged edges).
  Value loadOr(const GPUView &view, ValueRange indices, Value inBounds,
               Value fallback);
  /// Workgroup memory, shared by the threads of a workgroup.
  Value sharedAlloc(ArrayRef<int64_t> shape, Type elementType);
  /// Per-thread scratch memory.
  Value privateAlloc(ArrayRef<int64_t> shape, Type elementType);
  Value loadLocal(Value memref, ValueRange indices);
  void storeLocal(Value value, Value memref, ValueRange indices);
  /// A barrier over the workgroup's threads and workgroup memory.
  void barrier();

  //===--------------------------------------------------------------------===//
  // Threads and loops
  //===--------------------------------------------------------------------===//

  Value threadId(unsigned dim);
  Value workgroupId(unsigned dim);
  /// Sets a one-dimensional launch of `threads` threads per workgroup over
  /// `units` work items (capped at maxWorkgroups workgroups).
  void launch1D(int64_t threads, int64_t units);
  /// One thread per item of [0, n): a grid-stride loop over the launch of
  /// launch1D(workgroupSize, ceil(n / workgroupSize)).
  void forEachElement(int64_t n, function_ref<void(Value i)> body);
  /// One workgroup per item of [0, n) (grid-stride over workgroups); the
  /// launch has `threads` threads per workgroup.
  void forEachWorkgroupItem(int64_t n, int64_t threads,
                            function_ref<void(Value item, Value tid)> body);
  /// scf.for over [lb, ub) by `step` with loop-carried values.
  SmallVector<Value>
  forLoop(Value lb, Value ub, int64_t step, ValueRange init,
          function_ref<SmallVector<Value>(Value iv, ValueRange iter)> body);
  void forLoop(int64_t lb, int64_t ub, int64_t step,
               function_ref<void(Value iv)> body);
  /// scf.if without results.
  void ifThen(Value cond, function_ref<void()> body);
  /// scf.if with results of `types`.
  SmallVector<Value> ifThenElse(Value cond, TypeRange types,
                                function_ref<SmallVector<Value>()> thenBody,
                                function_ref<SmallVector<Value>()> elseBody);

  /// Combines `value` over the `threads` threads (dimension x) of a
  /// workgroup through `scratch` (workgroup memory of `threads` elements);
  /// every thread gets the result. Starts and ends with a barrier-safe state.
  Value workgroupReduce(Value value, bool isMax, Value scratch, Value tid,
                        int64_t threads);

  //===--------------------------------------------------------------------===//
  // Scalar math
  //===--------------------------------------------------------------------===//

  Value addF(Value a, Value c);
  Value mulF(Value a, Value c);
  Value combine(bool isMax, Value a, Value c);
  Value activation(Activation act, Value x);
  Value gelu(Value x, bool tanhApprox);
  Value sigmoid(Value x);
  /// `value` converted to `to` with the mir.cast rules.
  Value cast(Value value, Type to);
};

/// Emits the body of one kernel into the current gpu.func: `op` is the MIR
/// op of the kernel body (null for a copy of the only input), `inputs` maps
/// each of its operands to a view or a scalar, `outputs` are the views of its
/// results. Sets the launch configuration on `e`.
LogicalResult emitGPUKernel(GPUKernelEmitter &e, Operation *op,
                            const DenseMap<Value, GPUView> &inputs,
                            ArrayRef<GPUView> outputs);

/// Copies `in` (broadcast by numpy rules) into `out`.
void emitGPUCopy(GPUKernelEmitter &e, const GPUView &in, const GPUView &out);

// Per-category emitters (return failure() with a diagnostic on `op` for
// unsupported forms).
LogicalResult emitGPUElementwiseKernel(GPUKernelEmitter &e, Operation *op,
                                       ArrayRef<GPUView> inputs,
                                       const GPUView &out);
LogicalResult emitGPUDataMovementKernel(GPUKernelEmitter &e, Operation *op,
                                        ArrayRef<GPUView> inputs,
                                        const GPUView &out);
LogicalResult emitGPUNormKernel(GPUKernelEmitter &e, Operation *op,
                                ArrayRef<GPUView> inputs,
                                ArrayRef<GPUView> outputs);
LogicalResult emitGPUReduceKernel(GPUKernelEmitter &e, Operation *op,
                                  ArrayRef<GPUView> inputs, const GPUView &out);
LogicalResult emitGPUMatmulKernel(GPUKernelEmitter &e, Operation *op,
                                  ArrayRef<GPUView> inputs, const GPUView &out);
LogicalResult emitGPUAttentionKernel(GPUKernelEmitter &e, Operation *op,
                                     ArrayRef<GPUView> inputs,
                                     const GPUView &out);
LogicalResult emitGPURopeKernel(GPUKernelEmitter &e, Operation *op,
                                ArrayRef<GPUView> inputs, const GPUView &out);

} // namespace mlir::rlx

#endif // RLX_LIB_CONVERSION_LIRTOSPIRV_GPUKERNELEMITTER_H
