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

/// The scale vector of 32-element chunk `c` for vpmaddwd: lanes 0..7 scale
/// group 2c, lanes 8..15 group 2c + 1.
RLX_UK_AVX2 inline __m256i chunkScales(const int16_t *scale, int c) {
  return _mm256_set_m128i(_mm_set1_epi16(scale[2 * c + 1]),
                          _mm_set1_epi16(scale[2 * c]));
}

/// The unsigned codes of elements [32 c, 32 c + 32) of one K-quant block
/// (the vector forms of unpackQ*K in Internal.h).
struct Q2KChunks : Q2KLayout {
  RLX_UK_AVX2 static __m256i chunk(const uint8_t *b, int c) {
    __m256i qs = load256(b + kQs + 32 * (c / 4));
    return _mm256_and_si256(_mm256_srli_epi16(qs, 2 * (c % 4)),
                            _mm256_set1_epi8(3));
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
};

struct Q4KChunks : Q4KLayout {
  RLX_UK_AVX2 static __m256i chunk(const uint8_t *b, int c) {
    __m256i qs = load256(b + kQs + 32 * (c / 2));
    if (c & 1)
      qs = _mm256_srli_epi16(qs, 4);
    return _mm256_and_si256(qs, _mm256_set1_epi8(0xf));
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
};

} // namespace rlx::uk::x86

/// Instantiates Tile::run<mr, nr> for the edge tiles of a register-tiled
/// driver (mr <= MR, nr <= NR, both at most 4).
#define RLX_UK_EDGE_CASE(I, J)                                                 \
  case I * 8 + J:                                                              \
    if constexpr (I <= MR && J <= NR)                                          \
      Tile::template run<I, J>(a, m, n);                                       \
    break;
#define RLX_UK_EDGE_SWITCH(mr, nr)                                             \
  switch ((mr) * 8 + (nr)) {                                                   \
    RLX_UK_EDGE_CASE(1, 1)                                                     \
    RLX_UK_EDGE_CASE(1, 2)                                                     \
    RLX_UK_EDGE_CASE(1, 3)                                                     \
    RLX_UK_EDGE_CASE(1, 4)                                                     \
    RLX_UK_EDGE_CASE(2, 1)                                                     \
    RLX_UK_EDGE_CASE(2, 2)                                                     \
    RLX_UK_EDGE_CASE(2, 3)                                                     \
    RLX_UK_EDGE_CASE(2, 4)                                                     \
    RLX_UK_EDGE_CASE(3, 1)                                                     \
    RLX_UK_EDGE_CASE(3, 2)                                                     \
    RLX_UK_EDGE_CASE(3, 3)                                                     \
    RLX_UK_EDGE_CASE(3, 4)                                                     \
    RLX_UK_EDGE_CASE(4, 1)                                                     \
    RLX_UK_EDGE_CASE(4, 2)                                                     \
    RLX_UK_EDGE_CASE(4, 3)                                                     \
    RLX_UK_EDGE_CASE(4, 4)                                                     \
  default:                                                                     \
    break;                                                                     \
  }

#endif // RLX_LIB_UKERNELS_X86_H
