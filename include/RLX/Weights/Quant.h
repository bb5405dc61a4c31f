//===- Quant.h - ggml block quantization and dequantization -----*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Row kernels for the ggml block formats RLX reads, written from the layouts
// in ggml-common.h and the reference routines in ggml-quants.c (all fields
// little-endian; "f16" is an IEEE half):
//
//   Q8_0 (34 bytes / 32):   f16 d; int8 qs[32]           y = qs * d
//   Q4_0 (18 bytes / 32):   f16 d; uint8 qs[16]          y = (q - 8) * d
//   Q4_1 (20 bytes / 32):   f16 d; f16 m; uint8 qs[16]   y = q * d + m
//   Q5_0 (22 bytes / 32):   f16 d; uint8 qh[4]; uint8 qs[16]
//                                                        y = (q - 16) * d
//   Q5_1 (24 bytes / 32):   f16 d; f16 m; uint8 qh[4]; uint8 qs[16]
//                                                        y = q * d + m
//
// In the 32-element formats the low nibbles of qs are elements 0..15 and the
// high nibbles 16..31; Q5's fifth bit of element j is bit j of the
// little-endian u32 qh.
//
//   Q2_K (84 bytes / 256):  uint8 scales[16]; uint8 qs[64]; f16 d; f16 dmin
//   Q3_K (110 bytes / 256): uint8 hmask[32]; uint8 qs[64]; uint8 scales[12];
//                           f16 d
//   Q4_K (144 bytes / 256): f16 d; f16 dmin; uint8 scales[12]; uint8 qs[128]
//   Q5_K (176 bytes / 256): f16 d; f16 dmin; uint8 scales[12]; uint8 qh[32];
//                           uint8 qs[128]
//   Q6_K (210 bytes / 256): uint8 ql[128]; uint8 qh[64]; int8 scales[16];
//                           f16 d
//
// All functions take whole blocks; callers check sizes (decodeToF32 in
// Tensor.h does).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_WEIGHTS_QUANT_H
#define RLX_WEIGHTS_QUANT_H

#include "RLX/Weights/Tensor.h"

#include <vector>

namespace rlx {

/// dequantize_row_q8_0: `src` holds `dst.size() / 32` blocks.
void dequantizeQ8_0(const uint8_t *src, llvm::MutableArrayRef<float> dst);
/// dequantize_row_q4_0: `src` holds `dst.size() / 32` blocks.
void dequantizeQ4_0(const uint8_t *src, llvm::MutableArrayRef<float> dst);
/// dequantize_row_q4_1: `src` holds `dst.size() / 32` blocks.
void dequantizeQ4_1(const uint8_t *src, llvm::MutableArrayRef<float> dst);
/// dequantize_row_q5_0: `src` holds `dst.size() / 32` blocks.
void dequantizeQ5_0(const uint8_t *src, llvm::MutableArrayRef<float> dst);
/// dequantize_row_q5_1: `src` holds `dst.size() / 32` blocks.
void dequantizeQ5_1(const uint8_t *src, llvm::MutableArrayRef<float> dst);
/// dequantize_row_q2_K: `src` holds `dst.size() / 256` blocks.
void dequantizeQ2_K(const uint8_t *src, llvm::MutableArrayRef<float> dst);
/// dequantize_row_q3_K: `src` holds `dst.size() / 256` blocks.
void dequantizeQ3_K(const uint8_t *src, llvm::MutableArrayRef<float> dst);
/// dequantize_row_q4_K: `src` holds `dst.size() / 256` blocks.
void dequantizeQ4_K(const uint8_t *src, llvm::MutableArrayRef<float> dst);
/// dequantize_row_q5_K: `src` holds `dst.size() / 256` blocks.
void dequantizeQ5_K(const uint8_t *src, llvm::MutableArrayRef<float> dst);
/// dequantize_row_q6_K: `src` holds `dst.size() / 256` blocks.
void dequantizeQ6_K(const uint8_t *src, llvm::MutableArrayRef<float> dst);

/// quantize_row_q8_0_ref: `src.size()` is a multiple of 32; appends the
/// blocks to `dst`.
void quantizeQ8_0(llvm::ArrayRef<float> src, std::vector<uint8_t> &dst);
/// quantize_row_q4_0_ref: `src.size()` is a multiple of 32; appends the
/// blocks to `dst`.
void quantizeQ4_0(llvm::ArrayRef<float> src, std::vector<uint8_t> &dst);
/// quantize_row_q4_1_ref: `src.size()` is a multiple of 32; appends the
/// blocks to `dst`.
void quantizeQ4_1(llvm::ArrayRef<float> src, std::vector<uint8_t> &dst);
/// quantize_row_q5_0_ref: `src.size()` is a multiple of 32; appends the
/// blocks to `dst`.
void quantizeQ5_0(llvm::ArrayRef<float> src, std::vector<uint8_t> &dst);
/// quantize_row_q5_1_ref: `src.size()` is a multiple of 32; appends the
/// blocks to `dst`.
void quantizeQ5_1(llvm::ArrayRef<float> src, std::vector<uint8_t> &dst);

/// Encodes f32 values as `dtype` storage (little-endian). Supports F32, F16,
/// BF16 (round-to-nearest-even), Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 (ggml's
/// reference quantizers); errors on other types (the K-quants included) or a
/// count that is not a whole number of blocks.
llvm::Expected<std::vector<uint8_t>> encodeFromF32(DType dtype,
                                                   llvm::ArrayRef<float> src);

} // namespace rlx

#endif // RLX_WEIGHTS_QUANT_H
