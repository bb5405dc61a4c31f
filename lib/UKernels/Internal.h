//===- Internal.h - Definitions shared by the micro-kernels -----*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The weight formats (block sizes and field offsets, from ggml-common.h), the
// layout of a prepared activation row, the arguments every kernel receives,
// and the ISA-neutral pieces the scalar and vector kernels share: f16
// conversion, the K-quant scale decoders and the scalar code unpackers.
//
// Every quantized format is read as "unsigned codes times integer scales":
// a weight is (q - offset) * d for the 32-element formats without a minimum
// (q4_0: offset 8, q5_0: 16, q8_0: signed, no offset), q * d + m for q4_1
// and q5_1, and, for the K-quants, per 16-element group g of a 256-element
// block,
//
//   w = d * scale[g] * q - dmin * coef[g]
//
// so that for activations x = dx * qx (qx the prepared int8 values and
// xsum[g] = dx * sum_{i in g} qx_i, prepared in f32)
//
//   sum_i w_i x_i = d * dx * S1 - dmin * sum_g coef[g] * xsum[g],
//   S1 = sum_g scale[g] * sum_{i in g} q_i * qx_i
//
// with S1 an exact integer; the second term is a 16-long f32 dot product
// per block (one FMA in the AVX-512 kernels). q4_K, q5_K (scale/min per 32)
// and q2_K (per 16) have a real minimum (dmin); q6_K (codes 0..63, offset
// 32) and q3_K (codes 0..7, offset 4) set coef = offset * scale and
// dmin = d.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_UKERNELS_INTERNAL_H
#define RLX_LIB_UKERNELS_INTERNAL_H

#include "RLX/UKernels/UKernels.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rlx::uk {

//===----------------------------------------------------------------------===//
// Formats
//===----------------------------------------------------------------------===//

/// How activations are prepared for a weight type.
enum class PrepKind {
  /// int8 per block of 32 with an f32 scale (q8_0-like).
  Q8x32,
  /// int8 per block of 256 with an f32 scale and f32 sums of 16 (q8_K-like).
  Q8x256,
  /// bf16 values.
  BF16,
  /// bf16 values widened to f32 (repacked bf16: broadcast as f32 pairs).
  BF16AsF32,
  /// f32 values.
  F32,
};

/// The storage of a supported weight type.
struct TypeInfo {
  int64_t blockElements;
  int64_t blockBytes;
  PrepKind prep;
};

/// Whether `wtype` is a plain type with a repacked form.
inline bool hasRepackedForm(int wtype) {
  return wtype == RLX_UK_Q4_0 || wtype == RLX_UK_Q8_0 || wtype == RLX_UK_Q4_K ||
         wtype == RLX_UK_Q5_K || wtype == RLX_UK_Q6_K || wtype == RLX_UK_F16 ||
         wtype == RLX_UK_BF16;
}

/// The storage of `wtype`, or nullptr if the library does not handle it.
/// Repacked codes have the storage of their plain type.
inline const TypeInfo *typeInfo(int wtype) {
  if (wtype & RLX_UK_REPACKED_X8) {
    // Repacked bf16 takes the same bf16 activations as f32.
    static constexpr TypeInfo kBF16x8{1, 2, PrepKind::BF16AsF32};
    const int plain = wtype & ~RLX_UK_REPACKED_X8;
    if (plain == RLX_UK_BF16)
      return &kBF16x8;
    return hasRepackedForm(plain) ? typeInfo(plain) : nullptr;
  }
  static constexpr TypeInfo kF16{1, 2, PrepKind::F32};
  static constexpr TypeInfo kBF16{1, 2, PrepKind::BF16};
  static constexpr TypeInfo kQ4_0{32, 18, PrepKind::Q8x32};
  static constexpr TypeInfo kQ4_1{32, 20, PrepKind::Q8x32};
  static constexpr TypeInfo kQ5_0{32, 22, PrepKind::Q8x32};
  static constexpr TypeInfo kQ5_1{32, 24, PrepKind::Q8x32};
  static constexpr TypeInfo kQ8_0{32, 34, PrepKind::Q8x32};
  static constexpr TypeInfo kQ2_K{256, 84, PrepKind::Q8x256};
  static constexpr TypeInfo kQ3_K{256, 110, PrepKind::Q8x256};
  static constexpr TypeInfo kQ4_K{256, 144, PrepKind::Q8x256};
  static constexpr TypeInfo kQ5_K{256, 176, PrepKind::Q8x256};
  static constexpr TypeInfo kQ6_K{256, 210, PrepKind::Q8x256};
  switch (wtype) {
  case RLX_UK_F16:
    return &kF16;
  case RLX_UK_BF16:
    return &kBF16;
  case RLX_UK_Q4_0:
    return &kQ4_0;
  case RLX_UK_Q4_1:
    return &kQ4_1;
  case RLX_UK_Q5_0:
    return &kQ5_0;
  case RLX_UK_Q5_1:
    return &kQ5_1;
  case RLX_UK_Q8_0:
    return &kQ8_0;
  case RLX_UK_Q2_K:
    return &kQ2_K;
  case RLX_UK_Q3_K:
    return &kQ3_K;
  case RLX_UK_Q4_K:
    return &kQ4_K;
  case RLX_UK_Q5_K:
    return &kQ5_K;
  case RLX_UK_Q6_K:
    return &kQ6_K;
  default:
    return nullptr;
  }
}

//===----------------------------------------------------------------------===//
// Prepared rows
//===----------------------------------------------------------------------===//

/// Where the parts of one prepared row lie (byte offsets from the row start):
///   Q8x32:  int8 q in groups of four blocks (128 elements, see
///           q8x32Offset), float d per block at dOffset, and int32 lane sums
///           at sumOffset: for group g, sum[16 g + 4 j + h] is the sum of
///           block 4g + j's elements 4h..4h+3 and 16+4h..16+4h+3 (what one
///           int32 lane of the AVX-512 kernel holds). K is padded with zero
///           blocks to a multiple of 128;
///   Q8x256: int8 q[K] at 0, float d[K / 256] at dOffset, float
///           xsum[K / 16] at sumOffset (d times the sum of each 16 q);
///   BF16:   uint16 bf16[K] at 0;
///   BF16AsF32: float x[K] at 0, each a bf16 value;
///   F32:    float x[K] at 0.
/// Every part starts on a 64-byte boundary; rowBytes is a multiple of 64.
struct PreparedLayout {
  size_t rowBytes = 0;
  size_t dOffset = 0;
  size_t sumOffset = 0;
};

constexpr size_t alignTo64(size_t n) { return (n + 63) & ~size_t(63); }

/// Where element k of a Q8x32 row lies: each group of four blocks holds the
/// blocks' elements 0..15 (16 bytes per block, in block order), then their
/// elements 16..31. So 64 bytes hold one half of four blocks, and a 32-byte
/// block is two 16-byte pieces 64 bytes apart.
constexpr size_t q8x32Offset(int64_t k) {
  return size_t(128 * (k / 128) + 64 * ((k % 32) / 16) + 16 * ((k / 32) % 4) +
                k % 16);
}

inline PreparedLayout preparedLayout(PrepKind kind, int64_t k) {
  PreparedLayout l;
  size_t K = size_t(k);
  switch (kind) {
  case PrepKind::Q8x32: {
    const size_t padded = (K + 127) / 128 * 128;
    l.dOffset = padded;
    l.sumOffset = alignTo64(l.dOffset + 4 * (padded / 32));
    l.rowBytes = alignTo64(l.sumOffset + 4 * (padded / 8));
    break;
  }
  case PrepKind::Q8x256:
    l.dOffset = alignTo64(K);
    l.sumOffset = alignTo64(l.dOffset + 4 * (K / 256));
    l.rowBytes = alignTo64(l.sumOffset + 4 * (K / 16));
    break;
  case PrepKind::BF16:
    l.rowBytes = alignTo64(2 * K);
    break;
  case PrepKind::BF16AsF32:
  case PrepKind::F32:
    l.rowBytes = alignTo64(4 * K);
    break;
  }
  return l;
}

//===----------------------------------------------------------------------===//
// Repacked weights (RLX_UK_REPACKED_X8)
//===----------------------------------------------------------------------===//
//
// A group of 8 rows of q4_0, q8_0, q4_K, q5_K or q6_K holds, per block index
// b, one superblock of the 8 rows' blocks b at byte 8 * blockBytes * b of the
// group. A block has H bytes of f16 scales (H = 2: d; q4_K, q5_K: H = 4, d
// and dmin), at its start except in q6_K (d in its last 2 bytes), and
// blockBytes - H bytes of the rest, a multiple of 4 (q4_0's 16 code bytes,
// q8_0's 32, q4_K's 12 scale bytes and 128 code bytes, q5_K's 12 scale
// bytes, 32 qh and 128 code bytes, q6_K's 128 ql, 64 qh and 16 int8 scale
// bytes). With i the index of a byte within the rest, in the superblock:
//
//   scale field f (bytes 2 f, 2 f + 1 of the H) of row r:  16 f + 2 r (+ 1);
//   byte i of the rest of row r:  8 H + 32 (i / 4) + 4 r + i % 4.
//
// So each f16 field of the 8 rows is one vpcvtph2ps, and each 32 bytes of
// the rest hold 4 consecutive bytes of all 8 rows, row r in int32 lane r:
// one vpmaddubsw of such a code vector with 4 broadcast activation bytes
// gives partial dot products of 8 output columns, and the K-quants' scales
// decode per lane with the shifts and masks of their plain blocks. (q4_0
// code byte j holds elements j, low nibble, and j + 16, high nibble; q8_0
// byte j is element j; q4_K as in unpackQ4K.)
//
// q5_K's superblock (1408 bytes) is thus q4_K's (1152 bytes: the 8 d at 0,
// dmin at 16, scale chunks at 32, 64, 96, code chunk t at 128 + 32 t) with
// the 4-byte qh chunks k < 8 of the 8 rows at 128 + 32 k and the code chunks
// moved to 384 + 32 t: bit c of the qh chunk k is bit 4 of elements
// 32 c + 4 k + (0..3).
//
// q6_K's superblock (1680 bytes) is thus: the 8 d at 0; ql 4-byte chunk t
// (ql[4 t, 4 t + 4), t < 32) of the 8 rows at 16 + 32 t; qh chunk t (t < 16)
// at 1040 + 32 t; scales chunk t (scales[4 t, 4 t + 4), t < 4) at
// 1552 + 32 t. Elements 128 h + 32 j + 4 k + (0..3) of the 8 rows (as in
// unpackQ6K) are then the low (j < 2) or high nibbles of the ql chunk
// 16 h + 8 (j % 2) + k with bits 2 j, 2 j + 1 of the qh chunk 8 h + k on
// top, and their 16-element group's scales are byte (2 j + k / 4) % 4 of
// each lane of scales chunk 2 h + j / 2 (one vpshufb each).
//
// f16 and bf16 (blocks of one 2-byte element) pair the elements along K
// instead: the 32 bytes at 32 p of a group hold elements 2 p and 2 p + 1 of
// the 8 rows, row r in 4-byte lane r (element 2 p in its low half); for an
// odd K, the last element of the 8 rows follows as 8 halves (row r at
// 16 (K - 1) + 2 r). So one 32-byte load gives 8 output columns' pairs:
// vdpbf16ps's operand layout, a shift and a mask (bf16) or two vcvtph2ps
// (f16) away from f32.
//
// The scalar kernels are the reference; AVX-512 has no kernels of its own
// for these codes, so the dispatcher runs AVX2's.

/// Bytes of f16 scales of a block of repackable `wtype`.
constexpr int repackedHeader(int wtype) {
  return wtype == RLX_UK_Q4_K || wtype == RLX_UK_Q5_K ? 4 : 2;
}

/// Where the f16 scales of a block of repackable `wtype` (of `blockBytes`
/// bytes) start in the plain block: at its end for q6_K, else at 0.
constexpr int repackedHeaderAt(int wtype, int blockBytes) {
  return wtype == RLX_UK_Q6_K ? blockBytes - 2 : 0;
}

/// Where element `k` of row `r` of a repacked f16 or bf16 group of rows of
/// `K` elements lies in the group (see above).
constexpr size_t repackedFloatOffset(int64_t K, int r, int64_t k) {
  const int64_t even = K - K % 2;
  return k < even ? size_t(32 * (k / 2) + 4 * r + 2 * (k % 2))
                  : size_t(16 * even + 2 * r);
}

/// Where byte `i` of row `r`'s plain block of repackable `wtype` (of
/// `blockBytes` bytes) lies in its superblock (see above).
constexpr size_t repackedOffset(int wtype, int blockBytes, int r, int i) {
  const int header = repackedHeader(wtype);
  const int at = repackedHeaderAt(wtype, blockBytes);
  if (i >= at && i < at + header)
    return size_t(16 * ((i - at) / 2) + 2 * r + (i - at) % 2);
  // Index in the rest of the block (the bytes before or after the scales).
  const int rest = i < at ? i : i - header;
  return size_t(8 * header + 32 * (rest / 4) + 4 * r + rest % 4);
}

//===----------------------------------------------------------------------===//
// Kernel interface
//===----------------------------------------------------------------------===//

/// What a matmul kernel computes: y[m * ldy + n] for m in [0, M), n in
/// [0, N), from prepared rows x + m * xRowBytes and weight rows
/// w + n * wRowBytes (already offset to the first column of the range).
struct MatmulArgs {
  const uint8_t *x;
  size_t xRowBytes;
  size_t xdOffset;
  size_t xsOffset;
  int64_t M;
  int64_t K;
  const uint8_t *w;
  size_t wRowBytes;
  int64_t N;
  float *y;
  int64_t ldy;
};

using MatmulFn = void (*)(const MatmulArgs &);

/// The kernels of each instruction set, or nullptr where a set has none for
/// `wtype` (the dispatcher then uses the next lower set's).
MatmulFn scalarKernel(int wtype);
MatmulFn avx2Kernel(int wtype);
MatmulFn avx512Kernel(int wtype, bool hasBF16);

//===----------------------------------------------------------------------===//
// Scalar helpers
//===----------------------------------------------------------------------===//

/// Little-endian loads from unaligned storage (the library assumes a
/// little-endian host, as ggml does).
inline uint16_t loadU16(const uint8_t *p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t loadU32(const uint8_t *p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline float loadF32(const uint8_t *p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

inline float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint32_t floatToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

/// Exact IEEE half to single conversion (subnormals, infinities, NaN).
inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f)
    return bitsToFloat(sign | 0x7f800000 | (mant << 13));
  if (exp != 0)
    return bitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
  // Zero or subnormal: mant * 2^-24, exact in single precision.
  float v = float(mant) * (1.0f / 16777216.0f);
  return sign ? -v : v;
}

inline float bf16ToFloat(uint16_t h) { return bitsToFloat(uint32_t(h) << 16); }

/// Round-to-nearest-even single to bfloat16 (NaN stays a quiet NaN).
inline uint16_t floatToBF16(float f) {
  uint32_t bits = floatToBits(f);
  if ((bits & 0x7fffffff) > 0x7f800000)
    return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

//===----------------------------------------------------------------------===//
// K-quant blocks
//===----------------------------------------------------------------------===//

/// The per-16-element integer scales and correction coefficients of one
/// K-quant block (see the file comment), and its f16 scales.
struct KScales {
  int16_t scale[16];
  int16_t coef[16];
  uint16_t d;
  uint16_t dmin;
};

/// q4_K and q5_K pack eight 6-bit scales and eight 6-bit minimums in 12
/// bytes: for j < 4, scale j is the low 6 bits of byte j and min j those of
/// byte j + 4; for j >= 4, the low 4 bits come from the low (scale) or high
/// (min) nibble of byte j + 4 and the top 2 bits from the top bits of byte
/// j - 4 (scale) or byte j (min).
inline void decodeScaleMin6(const uint8_t *s, int16_t scale[16],
                            int16_t coef[16]) {
  for (int j = 0; j != 8; ++j) {
    int sc, mn;
    if (j < 4) {
      sc = s[j] & 63;
      mn = s[j + 4] & 63;
    } else {
      sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
      mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
    scale[2 * j] = scale[2 * j + 1] = int16_t(sc);
    coef[2 * j] = coef[2 * j + 1] = int16_t(mn);
  }
}

/// Field offsets of the K-quant blocks (ggml-common.h) and their scale
/// decoders.
struct Q2KLayout {
  static constexpr int kBytes = 84, kScales = 0, kQs = 16, kD = 80, kDmin = 82;
  static constexpr bool kSingleScale = false;
  static void scales(const uint8_t *b, KScales &ks) {
    for (int g = 0; g != 16; ++g) {
      ks.scale[g] = int16_t(b[kScales + g] & 0xf);
      ks.coef[g] = int16_t(b[kScales + g] >> 4);
    }
    ks.d = loadU16(b + kD);
    ks.dmin = loadU16(b + kDmin);
  }
};

struct Q3KLayout {
  static constexpr int kBytes = 110, kHmask = 0, kQs = 32, kScales = 96,
                       kD = 108, kDmin = kD;
  static constexpr bool kSingleScale = true;
  /// Sixteen 6-bit scales (stored + 32): low nibbles in bytes 0..7 (groups
  /// 0..7 low, 8..15 high nibble), top 2 bits in bytes 8..11 (group g in
  /// byte 8 + g % 4 at bit 2 * (g / 4)).
  static void scales(const uint8_t *b, KScales &ks) {
    const uint8_t *s = b + kScales;
    for (int g = 0; g != 16; ++g) {
      int lo = g < 8 ? (s[g] & 0xf) : (s[g - 8] >> 4);
      int hi = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
      int sc = (lo | (hi << 4)) - 32;
      ks.scale[g] = int16_t(sc);
      ks.coef[g] = int16_t(4 * sc);
    }
    ks.d = ks.dmin = loadU16(b + kD);
  }
};

struct Q4KLayout {
  static constexpr int kBytes = 144, kD = 0, kDmin = 2, kScales = 4, kQs = 16;
  static constexpr bool kSingleScale = false;
  static void scales(const uint8_t *b, KScales &ks) {
    decodeScaleMin6(b + kScales, ks.scale, ks.coef);
    ks.d = loadU16(b + kD);
    ks.dmin = loadU16(b + kDmin);
  }
};

struct Q5KLayout {
  static constexpr int kBytes = 176, kD = 0, kDmin = 2, kScales = 4, kQh = 16,
                       kQs = 48;
  static constexpr bool kSingleScale = false;
  static void scales(const uint8_t *b, KScales &ks) {
    decodeScaleMin6(b + kScales, ks.scale, ks.coef);
    ks.d = loadU16(b + kD);
    ks.dmin = loadU16(b + kDmin);
  }
};

struct Q6KLayout {
  static constexpr int kBytes = 210, kQl = 0, kQh = 128, kScales = 192,
                       kD = 208, kDmin = kD;
  static constexpr bool kSingleScale = true;
  static void scales(const uint8_t *b, KScales &ks) {
    for (int g = 0; g != 16; ++g) {
      int sc = int8_t(b[kScales + g]);
      ks.scale[g] = int16_t(sc);
      ks.coef[g] = int16_t(32 * sc);
    }
    ks.d = ks.dmin = loadU16(b + kD);
  }
};

/// The unsigned codes of the 32 elements [32 c, 32 c + 32) of a K-quant
/// block, scalar reference of the vector unpackers (`c` in [0, 8)).
inline void unpackQ2K(const uint8_t *b, int c, uint8_t q[32]) {
  int h = c / 4, j = c % 4;
  for (int l = 0; l != 32; ++l)
    q[l] = (b[Q2KLayout::kQs + 32 * h + l] >> (2 * j)) & 3;
}
inline void unpackQ3K(const uint8_t *b, int c, uint8_t q[32]) {
  int h = c / 4, j = c % 4;
  for (int l = 0; l != 32; ++l)
    q[l] = uint8_t(((b[Q3KLayout::kQs + 32 * h + l] >> (2 * j)) & 3) |
                   (((b[Q3KLayout::kHmask + l] >> c) & 1) << 2));
}
inline void unpackQ4K(const uint8_t *b, int c, uint8_t q[32]) {
  const uint8_t *qs = b + Q4KLayout::kQs + 32 * (c / 2);
  for (int l = 0; l != 32; ++l)
    q[l] = (c & 1) ? (qs[l] >> 4) : (qs[l] & 0xf);
}
inline void unpackQ5K(const uint8_t *b, int c, uint8_t q[32]) {
  const uint8_t *qs = b + Q5KLayout::kQs + 32 * (c / 2);
  for (int l = 0; l != 32; ++l)
    q[l] = uint8_t(((c & 1) ? (qs[l] >> 4) : (qs[l] & 0xf)) |
                   (((b[Q5KLayout::kQh + l] >> c) & 1) << 4));
}
inline void unpackQ6K(const uint8_t *b, int c, uint8_t q[32]) {
  int h = c / 4, j = c % 4;
  const uint8_t *ql = b + Q6KLayout::kQl + 64 * h + 32 * (j & 1);
  const uint8_t *qh = b + Q6KLayout::kQh + 32 * h;
  for (int l = 0; l != 32; ++l)
    q[l] = uint8_t(((j < 2) ? (ql[l] & 0xf) : (ql[l] >> 4)) |
                   (((qh[l] >> (2 * j)) & 3) << 4));
}

} // namespace rlx::uk

#endif // RLX_LIB_UKERNELS_INTERNAL_H
