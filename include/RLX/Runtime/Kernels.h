//===- Kernels.h - Runtime routines generated code calls --------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Plain-C routines the CPU code generator calls from the kernels it emits
// (besides cblas_sgemm and the micro-kernels of RLX/UKernels/UKernels.h).
// The JIT resolves them in-process; they depend on nothing but the weight
// readers' dequantizers.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_RUNTIME_KERNELS_H
#define RLX_RUNTIME_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Dequantizes `rows` rows of `k` elements of ggml type `ggmlType` (f16 = 1,
/// bf16 = 30 and the block types by their ggml code; rows one after the
/// other, `k` a whole number of blocks) from `src` to f32 at `dst` (rows of
/// `ldDst` floats). Returns 0, or -1 (nothing written) for an unknown type
/// or a row that is not a whole number of blocks.
int rlx_dequantize_rows(int ggmlType, const void *src, int64_t rows, int64_t k,
                        float *dst, int64_t ldDst);

/// rlx_dequantize_rows for rows [row, row + rows) of a table whose groups of 8
/// rows are interleaved (rlx_uk_repack; ggml types with a repacked form):
/// `table` is its first row's group, the rows are found in theirs. Returns 0,
/// or -1 (nothing written) for a type without a repacked form or a bad row.
int rlx_dequantize_x8_rows(int ggmlType, const void *table, int64_t row,
                           int64_t rows, int64_t k, float *dst, int64_t ldDst);

/// The JIT symbols of this header and of RLX/UKernels/UKernels.h, for a
/// symbol map: calls `add(name, address)` for each; on x86-64 also
/// `__truncsfbf2` (compiler-rt's f32 to bf16 rounding, which LLVM calls on
/// CPUs without AVX512_BF16 and the process may not have).
void rlx_for_each_kernel_symbol(void (*add)(const char *name, void *address,
                                            void *user),
                                void *user);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // RLX_RUNTIME_KERNELS_H
