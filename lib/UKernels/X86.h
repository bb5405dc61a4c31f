//===- X86.h - Pieces shared by the AVX2 and AVX-512 kernels ----*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every function here carries the AVX2 target attribute (never a global
// -m flag), so that it inlines into both the AVX2 and the AVX-512 kernels and
// nothing compiled for a vector ISA can leak into code the scalar path runs.
// Include only from files whose code runs after the dispatcher checked the
// CPU.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_UKERNELS_X86_H
#define RLX_LIB_UKERNELS_X86_H

#include "Internal.h"

#include <immintrin.h>

#define RLX_UK_AVX2 __attribute__((target("avx2,fma,f16c"), always_inline))
#define RLX_UK_UNROLL _Pragma("GCC unroll 16")

namespace rlx::uk::x86 {

/// Sum of the eight lanes.
RLX_UK_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/// Half to single through F16C.
RLX_UK_AVX2 inline float half(const uint8_t *p) {
  return _cvtsh_ss(loadU16(p));
}

RLX_UK_AVX2 inline __m256i load256(const void *p) {
  return _mm256_loadu_si256(static_cast<const __m256i *>(p));
}

/// The scale vector of 32-element chunk `c` for vpmaddwd from the 16 group
/// scales: lanes 0..7 hold group 2c's, lanes 8..15 group 2c + 1's.
RLX_UK_AVX2 inline __m256i chunkScales(__m256i scale, int c) {
  const __m256i pair = _mm256_permutevar8x32_epi32(scale, _mm256_set1_epi32(c));
  const __m256i spread =
      _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2,
                       3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  return _mm256_shuffle_epi8(pair, spread);
}

/// The K-quant policies for the vector kernels: chunk(b, c) gives the
/// unsigned codes of elements [32 c, 32 c + 32) (the vector forms of
/// unpackQ*K in Internal.h) and scaleVectors(b, scale, coef) the per-16 integer
/// scales and correction coefficients as 16 int16 lanes (the vector forms of
/// the *Layout::scales decoders). Loads stay inside the block.
struct Q2KChunks : Q2KLayout {
  RLX_UK_AVX2 static __m256i chunk(const uint8_t *b, int c) {
    __m256i qs = load256(b + kQs + 32 * (c / 4));
    return _mm256_and_si256(_mm256_srli_epi16(qs, 2 * (c % 4)),
                            _mm256_set1_epi8(3));
  }
  RLX_UK_AVX2 static void scaleVectors(const uint8_t *b, __m256i &scale,
                                       __m256i &coef) {
    const __m128i s =
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + kScales));
    const __m128i low4 = _mm_set1_epi8(0xf);
    scale = _mm256_cvtepu8_epi16(_mm_and_si128(s, low4));
    coef = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), low4));
  }
};

struct Q3KChunks : Q3KLayout {
  RLX_UK_AVX2 static __m256i chunk(const uint8_t *b, int c) {
    __m256i qs = load256(b + kQs + 32 * (c / 4));
    __m256i lo = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * (c % 4)),
                                  _mm256_set1_epi8(3));
    // Bit c of each hmask byte, moved to bit 2.
    __m256i hm = load256(b + kHmask);
    __m256i hi =
        c >= 2 ? _mm256_srli_epi16(hm, c - 2) : _mm256_slli_epi16(hm, 2 - c);
    return _mm256_or_si256(lo, _mm256_and_si256(hi, _mm256_set1_epi8(4)));
  }
  RLX_UK_AVX2 static void scaleVectors(const uint8_t *b, __m256i &scale,
                                       __m256i &coef) {
    const uint8_t *s = b + kScales;
    const __m128i low4 = _mm_set1_epi8(0xf);
    // Low nibbles: groups 0..7 from bytes 0..7, groups 8..15 from their high
    // nibbles.
    const __m128i l = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(s));
    const __m128i lo = _mm_unpacklo_epi64(
        _mm_and_si128(l, low4), _mm_and_si128(_mm_srli_epi16(l, 4), low4));
    // Top bits: group g from byte 8 + g % 4 at bit 2 * (g / 4).
    const __m128i h = _mm_set1_epi32(int(loadU32(s + 8)));
    const __m128i hi = _mm_and_si128(
        _mm_srlv_epi32(h, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
    const __m128i sc = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)),
                                    _mm_set1_epi8(32));
    scale = _mm256_cvtepi8_epi16(sc);
    coef = _mm256_slli_epi16(scale, 2);
  }
};

/// q4_K and q5_K's 6-bit scales and minimums (see decodeScaleMin6), with the
/// 12 bytes as u32 words u0, u1, u2: scales 0..3 = u0 & 63, mins 0..3 =
/// u1 & 63, scales 4..7 = (u2 & 15) | ((u0 >> 2) & 0x30), mins 4..7 =
/// ((u2 >> 4) & 15) | ((u1 >> 2) & 0x30), bytewise.
RLX_UK_AVX2 inline void scaleMin6(const uint8_t *s, __m256i &scale,
                                  __m256i &coef) {
  __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(s));
  v = _mm_insert_epi32(v, int(loadU32(s + 8)), 2); // u0 u1 u2 -
  const __m128i a =
      _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0)); // u0 u2 u1 u2
  const __m128i b =
      _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0)); // u0 u0 u1 u1
  const __m128i lo = _mm_and_si128(a, _mm_set1_epi8(0x3f));
  const __m128i hi =
      _mm_or_si128(_mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)),
                                 _mm_set1_epi8(0xf)),
                   _mm_and_si128(_mm_srli_epi32(b, 2), _mm_set1_epi8(0x30)));
  // Bytes: scales 0..7, mins 0..7; each doubled (one per 16 elements).
  const __m128i r = _mm_blend_epi32(lo, hi, 0xa);
  scale = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(r, r));
  coef = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(r, r));
}

struct Q4KChunks : Q4KLayout {
  RLX_UK_AVX2 static __m256i chunk(const uint8_t *b, int c) {
    __m256i qs = load256(b + kQs + 32 * (c / 2));
    if (c & 1)
      qs = _mm256_srli_epi16(qs, 4);
    return _mm256_and_si256(qs, _mm256_set1_epi8(0xf));
  }
  RLX_UK_AVX2 static void scaleVectors(const uint8_t *b, __m256i &scale,
                                       __m256i &coef) {
    scaleMin6(b + kScales, scale, coef);
  }
};

struct Q5KChunks : Q5KLayout {
  RLX_UK_AVX2 static __m256i chunk(const uint8_t *b, int c) {
    __m256i qs = load256(b + kQs + 32 * (c / 2));
    if (c & 1)
      qs = _mm256_srli_epi16(qs, 4);
    __m256i lo = _mm256_and_si256(qs, _mm256_set1_epi8(0xf));
    // Bit c of each qh byte, moved to bit 4.
    __m256i qh = load256(b + kQh);
    __m256i hi =
        c >= 4 ? _mm256_srli_epi16(qh, c - 4) : _mm256_slli_epi16(qh, 4 - c);
    return _mm256_or_si256(lo, _mm256_and_si256(hi, _mm256_set1_epi8(0x10)));
  }
  RLX_UK_AVX2 static void scaleVectors(const uint8_t *b, __m256i &scale,
                                       __m256i &coef) {
    scaleMin6(b + kScales, scale, coef);
  }
};

struct Q6KChunks : Q6KLayout {
  RLX_UK_AVX2 static __m256i chunk(const uint8_t *b, int c) {
    int h = c / 4, j = c % 4;
    __m256i ql = load256(b + kQl + 64 * h + 32 * (j & 1));
    if (j >= 2)
      ql = _mm256_srli_epi16(ql, 4);
    __m256i lo = _mm256_and_si256(ql, _mm256_set1_epi8(0xf));
    // Bits 2j, 2j + 1 of each qh byte, moved to bits 4, 5.
    __m256i qh = load256(b + kQh + 32 * h);
    __m256i hi = j >= 2 ? _mm256_srli_epi16(qh, 2 * j - 4)
                        : _mm256_slli_epi16(qh, 4 - 2 * j);
    return _mm256_or_si256(lo, _mm256_and_si256(hi, _mm256_set1_epi8(0x30)));
  }
  RLX_UK_AVX2 static void scaleVectors(const uint8_t *b, __m256i &scale,
                                       __m256i &coef) {
    scale = _mm256_cvtepi8_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + kScales)));
    coef = _mm256_slli_epi16(scale, 5);
  }
};

} // namespace rlx::uk::x86

/// Activation rows per panel: the drivers sweep all weight columns over one
/// panel of activation rows (about kPanelBytes, a multiple of `mr` rows)
/// before the next, so that the panel stays in L2 while each weight tile
/// is reused across it from L1.
constexpr size_t kPanelBytes = size_t(512) << 10;
inline int64_t panelRows(size_t rowBytes, int mr) {
  int64_t rows = int64_t(kPanelBytes / rowBytes) / mr * mr;
  return rows > mr ? rows : mr;
}

/// Instantiates Tile::run<mr, nr> for the edge tiles of a register-tiled
/// driver (mr <= MR, nr <= NR, both at most 8).
#define RLX_UK_EDGE_CASE(I, J)                                                 \
  case I * 16 + J:                                                             \
    if constexpr (I <= MR && J <= NR)                                          \
      Tile::template run<I, J>(a, m, n);                                       \
    break;
#define RLX_UK_EDGE_ROW(I)                                                     \
  RLX_UK_EDGE_CASE(I, 1)                                                       \
  RLX_UK_EDGE_CASE(I, 2)                                                       \
  RLX_UK_EDGE_CASE(I, 3)                                                       \
  RLX_UK_EDGE_CASE(I, 4)                                                       \
  RLX_UK_EDGE_CASE(I, 5)                                                       \
  RLX_UK_EDGE_CASE(I, 6)                                                       \
  RLX_UK_EDGE_CASE(I, 7)                                                       \
  RLX_UK_EDGE_CASE(I, 8)
#define RLX_UK_EDGE_SWITCH(mr, nr)                                             \
  static_assert(MR <= 8 && NR <= 8, "edge tiles up to 8 x 8");                 \
  switch ((mr) * 16 + (nr)) {                                                  \
    RLX_UK_EDGE_ROW(1)                                                         \
    RLX_UK_EDGE_ROW(2)                                                         \
    RLX_UK_EDGE_ROW(3)                                                         \
    RLX_UK_EDGE_ROW(4)                                                         \
    RLX_UK_EDGE_ROW(5)                                                         \
    RLX_UK_EDGE_ROW(6)                                                         \
    RLX_UK_EDGE_ROW(7)                                                         \
    RLX_UK_EDGE_ROW(8)                                                         \
  default:                                                                     \
    break;                                                                     \
  }

#endif // RLX_LIB_UKERNELS_X86_H
