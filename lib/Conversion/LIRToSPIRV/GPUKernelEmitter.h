//===- GPUKernelEmitter.h - The SPIR-V target of the kernel layer -*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The SPIR-V back end writes each LIR kernel as a `gpu.func` in the gpu, scf,
// arith, math and memref dialects, through the kernel layer the CPU back end
// shares (KernelCommon/KernelBuilder.h). Every view a kernel reads or writes
// is one storage buffer argument, a flat `memref<?xT>`; its KernelView adds
// the element offset of the view inside that buffer, its shape and its
// strides, so loads and stores linearize their indices themselves.
// GPUKernelEmitter is the SPIR-V target: thread and workgroup ids,
// grid-stride loops, workgroup (shared) memory, barriers and workgroup
// reductions, and it records the launch configuration the kernel chose; it
// also holds the kernels whose strategy is SPIR-V's own (tiled GEMMs,
// attention, RoPE, axis reductions).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_CONVERSION_LIRTOSPIRV_GPUKERNELEMITTER_H
#define RLX_LIB_CONVERSION_LIRTOSPIRV_GPUKERNELEMITTER_H

#include "../KernelCommon/KernelBuilder.h"
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

/// A kernel operand of the SPIR-V target (`buffer` is the storage-buffer
/// argument).
using GPUView = KernelView;

class GPUKernelEmitter : public KernelBuilder {
public:
  GPUKernelEmitter(OpBuilder &b, Location loc, const GPUTargetInfo &target)
      : KernelBuilder(b, loc), target(target) {}

  const GPUTargetInfo &target;
  /// The launch configuration the kernel generator chose.
  std::array<int64_t, 3> workgroupSize = {1, 1, 1};
  std::array<int64_t, 3> numWorkgroups = {1, 1, 1};

  //===--------------------------------------------------------------------===//
  // Constants and index arithmetic
  //===--------------------------------------------------------------------===//

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

  /// Whether the element type is one the SPIR-V kernels decode from 32-bit
  /// words (bf16 and every ggml block type), and so binds as an array of
  /// i32.
  static bool isWordDecoded(Type elementType);

  //===--------------------------------------------------------------------===//
  // Memory
  //===--------------------------------------------------------------------===//

  /// Element index inside the buffer of `view` at `indices`.
  Value linearIndex(const GPUView &view, ValueRange indices);
  /// Loads an element. A weight stored as bf16 or ggml blocks sits in a
  /// buffer of 32-bit words and loads as f32, decoded in place (as ggml's
  /// dequantize_row_* computes it, so bit for bit).
  Value load(const GPUView &view, ValueRange indices);
  void store(Value value, const GPUView &view, ValueRange indices);
  /// A load whose indices are clamped into the view, converted to the type
  /// of `fallback`, which `inBounds` false gives instead (tile loads at
  /// ragged edges).
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

  /// Combines `value` over the `threads` threads (dimension x) of a
  /// workgroup through `scratch` (workgroup memory of `threads` elements);
  /// every thread gets the result. Starts and ends with a barrier-safe state.
  Value workgroupReduce(Value value, vector::CombiningKind kind, Value scratch,
                        Value tid, int64_t threads);
  /// maximumf (isMax) or add.
  Value workgroupReduce(Value value, bool isMax, Value scratch, Value tid,
                        int64_t threads);

  //===--------------------------------------------------------------------===//
  // Scalar math
  //===--------------------------------------------------------------------===//

  Value addF(Value a, Value c);
  Value mulF(Value a, Value c);
  using KernelMath::combine;
  /// maximumf (signed max) or add of a and c.
  Value combine(bool isMax, Value a, Value c);

  //===--------------------------------------------------------------------===//
  // The kernel layer's primitives
  //===--------------------------------------------------------------------===//

  StringRef targetName() const override { return "SPIR-V"; }
  /// One element per thread.
  int64_t mapWidth(const KernelView &, ArrayRef<KernelView>) override {
    return 1;
  }
  /// A thread per element (grid-stride beyond the launch), which knows its
  /// linear index.
  void forEachElement(const KernelView &out, int64_t width,
                      function_ref<void(const ElementPos &)> body) override;
  /// A workgroup per row; statistics meet in a tree reduction through
  /// workgroup memory.
  void forEachRow(const KernelView &like, ArrayRef<KernelView> views,
                  function_ref<void(RowScope &)> body) override;
  /// A thread per position.
  void forEachPosition(ArrayRef<int64_t> shape, int64_t costPerPosition,
                       function_ref<void(ValueRange coords)> body) override;
  /// A launch of one thread.
  void serial(function_ref<void()> body) override;
  /// A load from the storage buffer at the linearized index (width 1).
  Value load(const KernelView &view, ValueRange indices,
             int64_t width) override;
  void store(Value value, const KernelView &view, ValueRange indices,
             int64_t width) override;
  /// Views address their buffer through offset and strides: nothing to do.
  KernelView materialize(const KernelView &view) override { return view; }
  /// GEMMs tiled through workgroup memory, attention by blocks of keys,
  /// RoPE, and axis reductions with a workgroup per output.
  LogicalResult emitTargetKernel(Operation *op, ArrayRef<KernelView> ins,
                                 const KernelView &out) override;
};

/// Threads per workgroup for rows (or reductions) of `n` elements: a power
/// of two in [32, 256], within the device limit.
int64_t gpuRowThreads(GPUKernelEmitter &e, int64_t n);

// SPIR-V's own kernels (return failure() with a diagnostic on `op` for
// unsupported forms).
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
