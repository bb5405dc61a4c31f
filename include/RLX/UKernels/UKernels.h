//===- UKernels.h - Matrix micro-kernels for stored weights -------*- C -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Micro-kernels ("ukernels") for y = x * W^T with f32 activations x[M, K] and
// weights W[N, K] kept in their stored form: bf16, f16, or one of ggml's
// block-quantized formats (rows of W are stored one after the other, each as
// ggml blocks along K). Generated code calls them as it calls cblas_sgemm.
//
// A product runs in two steps:
//
//   1. rlx_uk_prepare converts x into the form the dot products read: for the
//      quantized types, x rounded to 8 bits per block (q8_0-style blocks of
//      32 for the 32-element formats, q8_K-style blocks of 256 with 16-element
//      sums for the K-quants), as llama.cpp does; for bf16 weights, x rounded
//      to bf16; for f16 weights, x itself (f32).
//   2. rlx_uk_matmul computes a range of output columns from the prepared
//      activations and the stored weights, accumulating in f32.
//
// Both steps are thread-safe and keep no state: threads may prepare disjoint
// row ranges into the same buffer, then compute disjoint column ranges. The
// only global is the instruction set, chosen once on first use (the best the
// CPU has) and changeable with rlx_uk_select_isa (the RLX tools pass
// $RLX_UK_ISA to it, refusing a name it rejects). The prepared form does
// not depend on the instruction set.
//
// Weight types are identified by their ggml type codes (RLX_UK_*). The
// library is plain C at its interface and depends on nothing but the C and
// C++ runtime libraries.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_UKERNELS_UKERNELS_H
#define RLX_UKERNELS_UKERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Weight types, by their ggml type code.
enum {
  RLX_UK_F16 = 1,
  RLX_UK_Q4_0 = 2,
  RLX_UK_Q4_1 = 3,
  RLX_UK_Q5_0 = 6,
  RLX_UK_Q5_1 = 7,
  RLX_UK_Q8_0 = 8,
  RLX_UK_Q2_K = 10,
  RLX_UK_Q3_K = 11,
  RLX_UK_Q4_K = 12,
  RLX_UK_Q5_K = 13,
  RLX_UK_Q6_K = 14,
  RLX_UK_BF16 = 30,
};

/// Flag OR'd into a weight type code (RLX_UK_Q4_0, RLX_UK_Q8_0, RLX_UK_Q4_K,
/// RLX_UK_Q5_K, RLX_UK_Q6_K, RLX_UK_F16 or RLX_UK_BF16) for weights repacked
/// by rlx_uk_repack: in each group of 8 rows (rows 8 i to 8 i + 7, the group at
/// the byte offset of its first row) the blocks of the 8 rows (for f16 and
/// bf16, pairs of elements) are interleaved so that vector lanes run along
/// output columns (llama.cpp's block_q4_0x8 idea). The same bytes, permuted
/// within each group: the row stride, weight_row_bytes and the prepared
/// activations are those of the plain type (repacked bf16: the same bf16
/// values, held as f32), and every function here accepts the flagged code.
/// The byte layout is private to the library.
enum { RLX_UK_REPACKED_X8 = 0x100 };

/// 1 if rlx_uk_matmul handles weights of type `wtype` (on every instruction
/// set), 0 otherwise.
int rlx_uk_supports(int wtype);

/// Elements per storage block of `wtype` (1 for f16 and bf16, 32 or 256 for
/// the quantized types); K must be a multiple of it. 0 if unsupported.
int64_t rlx_uk_block_elements(int wtype);

/// Bytes of one stored weight row of `K` elements of type `wtype` (the row
/// stride of W); 0 if unsupported or `K` is not a whole number of blocks.
size_t rlx_uk_weight_row_bytes(int wtype, int64_t K);

/// Bytes of one prepared activation row of length `K` for weights of type
/// `wtype`: a multiple of 64 (so rows keep the buffer's 64-byte alignment).
/// 0 if unsupported or `K` is not a whole number of blocks.
size_t rlx_uk_prepared_row_bytes(int wtype, int64_t K);

/// Bytes of the prepared-activation buffer for x[M, K] against weights of
/// type `wtype`: M * rlx_uk_prepared_row_bytes(wtype, K). The kernels accept
/// any alignment; 64 bytes is fastest.
size_t rlx_uk_prepared_bytes(int wtype, int64_t M, int64_t K);

/// Prepares rows [m0, m1) of the f32 activations `x` (row m at x + m * ldx;
/// values finite) for products with weights of type `wtype`, writing them to
/// rows [m0, m1) of `prepared` (a buffer of rlx_uk_prepared_bytes(wtype, M,
/// K) bytes). Threads may prepare disjoint row ranges concurrently. The
/// rounding, per type:
///   - 32-element quantized types: per block of 32, d = max|x| / 127 and
///     q = round-to-even(x * (1 / d)) in [-127, 127] (llama.cpp's q8_0, with
///     d kept in f32);
///   - K-quants: per block of 256, with v the first element of largest
///     magnitude, s = -128 / v, q = min(127, round-to-even(x * s)) and
///     d = 1 / s (llama.cpp's q8_K), plus d times the sum of q over each 16
///     elements;
///   - bf16: x rounded to nearest-even bf16;
///   - f16: x unchanged (f32).
/// Blocks whose largest magnitude is below ~1e-36 (where 1 / d overflows)
/// become zeros. The byte layout is private to the library (read the values
/// back with rlx_uk_prepared_to_f32). Returns 0, or -1 (nothing written) if
/// `wtype` is unsupported, K is not a whole number of blocks, or the range
/// is invalid.
int rlx_uk_prepare(int wtype, const float *x, int64_t ldx, int64_t m0,
                   int64_t m1, int64_t K, void *prepared);

/// Writes to `out[0, K)` the values the kernels multiply for prepared row
/// `m` (d * q for the quantized types, the bf16 or f32 values otherwise).
/// For tests and debugging. Returns 0, or -1 on an invalid argument.
int rlx_uk_prepared_to_f32(int wtype, const void *prepared, int64_t m,
                           int64_t K, float *out);

/// y[m * ldy + n] = sum_k x[m, k] * W[n, k] for every m in [0, M) and n in
/// [n0, n1), with x the M rows of `prepared` (from rlx_uk_prepare with the
/// same `wtype` and K) and W the weights of type `wtype` starting at `w` (row
/// 0; row n at w + n * rlx_uk_weight_row_bytes(wtype, K)). Overwrites y; f32
/// accumulation. Threads may compute disjoint column ranges concurrently.
/// For repacked weights (`wtype` with RLX_UK_REPACKED_X8) `w` holds the
/// output of rlx_uk_repack for the rows in [n0, n1), and n0 and n1 must be
/// multiples of 8. Returns 0, or -1 (nothing written) if `wtype` is
/// unsupported, K is not a whole number of blocks, or the ranges are
/// invalid.
int rlx_uk_matmul(int wtype, const void *prepared, int64_t M, int64_t K,
                  const void *w, int64_t n0, int64_t n1, float *y, int64_t ldy);

/// Repacks rows [n0, n1) of the plain weights `w` of type `wtype` (row n at
/// w + n * rlx_uk_weight_row_bytes(wtype, K)) into the form of
/// `wtype | RLX_UK_REPACKED_X8`, written at the same byte offsets of `out`
/// (which must not overlap `w`). `wtype` may carry the flag or not. n0 and
/// n1 must be multiples of 8; threads may repack disjoint ranges
/// concurrently. Returns 0, or -1 (nothing written) if the type has no
/// repacked form, K is not a whole number of blocks, or the range is
/// invalid.
int rlx_uk_repack(int wtype, int64_t K, const void *w, int64_t n0, int64_t n1,
                  void *out);

/// The inverse of rlx_uk_repack for rows [n0, n1) (any rows): writes them in
/// their plain form one after the other at `out` (row n0 at out), from the
/// repacked weights `w` (the whole table: row n in the group at
/// w + (n / 8) * 8 * rlx_uk_weight_row_bytes(wtype, K)). For a gather of
/// rows from a table the matmuls read repacked (a tied embedding). Returns
/// 0, or -1 (nothing written) as rlx_uk_repack.
int rlx_uk_unpack(int wtype, int64_t K, const void *w, int64_t n0, int64_t n1,
                  void *out);

/// Selects the instruction set the kernels use:
///   - "avx512": AVX-512 F, BW, VL, DQ and VNNI, with vdpbf16ps for bf16
///     weights where AVX512_BF16 is present (the default where present);
///   - "avx512-nobf16": the same without AVX512_BF16 (bf16 weights widened
///     to f32 for FMAs), as on CPUs that lack it;
///   - "avx2": AVX2, FMA and F16C;
///   - "scalar": portable C++.
/// Returns 0 on success, -1 if the name is unknown or the CPU (or OS) lacks
/// the instruction set, leaving the choice unchanged. Not meant to race with
/// running kernels: call it before starting threads (tests and benchmarks
/// do).
int rlx_uk_select_isa(const char *name);

/// The instruction set in use (one of rlx_uk_select_isa's names), choosing
/// the default on first use.
const char *rlx_uk_isa(void);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // RLX_UKERNELS_UKERNELS_H
