//===- Quant.h - ggml block quantization and dequantization -----*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Row kernels for the ggml block formats RLX reads, written from the layouts
// in ggml-common.h and the reference routines in ggml-quants.c:
//
//   Q8_0 (34 bytes / 32 elements):  f16 d; int8 qs[32];      y = qs * d
//   Q4_0 (18 bytes / 32 elements):  f16 d; uint8 qs[16];     y = (q - 8) * d,
//                                   low nibbles are elements 0..15, high
//                                   nibbles 16..31
//   Q4_K (144 bytes / 256 elements): f16 d; f16 dmin; uint8 scales[12];
//                                   uint8 qs[128]
//   Q6_K (210 bytes / 256 elements): uint8 ql[128]; uint8 qh[64];
//                                   int8 scales[16]; f16 d
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
/// dequantize_row_q4_K: `src` holds `dst.size() / 256` blocks.
void dequantizeQ4_K(const uint8_t *src, llvm::MutableArrayRef<float> dst);
/// dequantize_row_q6_K: `src` holds `dst.size() / 256` blocks.
void dequantizeQ6_K(const uint8_t *src, llvm::MutableArrayRef<float> dst);

/// quantize_row_q8_0_ref: `src.size()` is a multiple of 32; appends the
/// blocks to `dst`.
void quantizeQ8_0(llvm::ArrayRef<float> src, std::vector<uint8_t> &dst);
/// quantize_row_q4_0_ref: `src.size()` is a multiple of 32; appends the
/// blocks to `dst`.
void quantizeQ4_0(llvm::ArrayRef<float> src, std::vector<uint8_t> &dst);

/// Encodes f32 values as `dtype` storage (little-endian). Supports F32, F16,
/// BF16 (round-to-nearest-even), Q8_0 and Q4_0 (ggml's reference
/// quantizers); errors on other types or a count that is not a whole number
/// of blocks.
llvm::Expected<std::vector<uint8_t>> encodeFromF32(DType dtype,
                                                   llvm::ArrayRef<float> src);

} // namespace rlx

#endif // RLX_WEIGHTS_QUANT_H
