//===- MemRefABI.h - The memref descriptor the CPU kernels take -*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The entry functions of a compiled CPU model take the arena and the
// parameter pool as rank-1 memrefs (StridedMemRefType<T, 1> in MLIR's C
// runtime). The runtime links no MLIR, so it spells the layout out here.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_RUNTIME_MEMREFABI_H
#define RLX_LIB_RUNTIME_MEMREFABI_H

#include <cstdint>

namespace rlx {
namespace detail {

/// The layout of a rank-1 MLIR memref descriptor.
struct MemRef1D {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
};

} // namespace detail
} // namespace rlx

#endif // RLX_LIB_RUNTIME_MEMREFABI_H
