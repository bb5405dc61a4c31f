//===- KernelABI.h - The contract between CPU code and runtime --*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the CPU code generator emits and the runtime calls, in one place:
//
//   _mlir_ciface_<entry>_spmd(arena, params, ctx, tid, nthreads)
//
// is called by every thread of the runtime's pool (`arena` and `params` are
// 1-d memref descriptors of bytes, `tid` in [0, nthreads)); kernel functions
// take their views, then (ctx, tid, nthreads). `ctx` is the execution
// context the kernels synchronize through (contextBytes(nthreads) bytes,
// 64-byte aligned, zeroed by the runtime before each run):
//
//   byte 0                        the shared claim counter (i64)
//   byte 64                       the shared finish counter (i64)
//   byte 128 + 64 * tid           the cursor of thread `tid` (i64)
//
// each on its own cache line. `_mlir_ciface_<entry>` runs the entry on the
// calling thread alone (it allocates its own context). Nothing here depends
// on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_SUPPORT_KERNELABI_H
#define RLX_SUPPORT_KERNELABI_H

#include <cstdint>

namespace rlx::spmd {

/// Byte offset of the shared claim counter in the execution context.
inline constexpr int64_t kClaimedOffset = 0;
/// Byte offset of the shared finish counter.
inline constexpr int64_t kFinishedOffset = 64;
/// Byte offset of thread 0's cursor; thread t's is at
/// kCursorsOffset + kCursorStride * t.
inline constexpr int64_t kCursorsOffset = 128;
inline constexpr int64_t kCursorStride = 64;
/// Alignment of the context.
inline constexpr int64_t kContextAlignment = 64;

/// Bytes of the execution context of a run on `threads` threads.
constexpr int64_t contextBytes(int64_t threads) {
  return kCursorsOffset + kCursorStride * threads;
}

/// Suffix of the SPMD entry's symbol (`<entry>_spmd`).
inline constexpr const char *kSpmdSuffix = "_spmd";
/// Prefix of the C-interface wrappers MLIR emits.
inline constexpr const char *kCInterfacePrefix = "_mlir_ciface_";

/// The SPMD entry as the runtime calls it.
using SpmdFn = void (*)(void *arena, void *params, void *ctx, int64_t tid,
                        int64_t nthreads);

} // namespace rlx::spmd

#endif // RLX_SUPPORT_KERNELABI_H
