//===- AVX2.cpp - AVX2 + FMA + F16C micro-kernels
//---------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The fallback for x86 CPUs without AVX-512 VNNI. One 256-bit vector holds
// one 32-element block (or a 32-element chunk of a K-quant block). Products of
// unsigned codes with the signed prepared activations use vpmaddubsw (pairs to
// int16, exact here: |q| <= 63, |x| <= 128) and vpmaddwd (to int32, by ones
// or by the K-quant scales). q8_0's signed weights go through the usual sign
// trick (|w| times x with w's sign). A register tile of MR activation rows x
// NR weight rows reuses each decoded weight block MR times; with M = 1 each
// weight byte is read once.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#if defined(__x86_64__) || defined(__i386__)

#include "X86.h"

#include <algorithm>

using namespace rlx::uk;
using namespace rlx::uk::x86;

#define RLX_UK_AVX2_FN __attribute__((target("avx2,fma,f16c")))

namespace {

/// Runs Tile::run<MR, NR> over the output, with smaller tiles at the edges,
/// one panel of activation rows (that stays in L2) at a time.
template <class Tile, int MR, int NR>
RLX_UK_AVX2_FN void drive(const MatmulArgs &a) {
  const int64_t panel = panelRows(a.xRowBytes, MR);
  for (int64_t m0 = 0; m0 < a.M; m0 += panel) {
    const int64_t m1 = std::min(a.M, m0 + panel);
    for (int64_t n = 0; n < a.N; n += NR) {
      const int nr = int(std::min<int64_t>(NR, a.N - n));
      for (int64_t m = m0; m < m1; m += MR) {
        const int mr = int(std::min<int64_t>(MR, m1 - m));
        if (mr == MR && nr == NR)
          Tile::template run<MR, NR>(a, m, n);
        else {
          RLX_UK_EDGE_SWITCH(mr, nr)
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// 32-element formats
//===----------------------------------------------------------------------===//

/// The 32 nibbles of `qs` in element order (low nibbles first).
RLX_UK_AVX2 inline __m256i nibbles(const uint8_t *qs) {
  __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i *>(qs));
  const __m128i mask = _mm_set1_epi8(0xf);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(t, 4), mask),
                          _mm_and_si128(t, mask));
}

/// 0x10 in byte j where bit j of `qh` is set.
RLX_UK_AVX2 inline __m256i fifthBits(uint32_t qh) {
  const __m256i spread =
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                       2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
  __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(int(qh)), spread);
  v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
  return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/// Policies: kOffset is subtracted from the unsigned codes (0 for none),
/// kSigned marks q8_0's signed codes, kMin the formats with an f16 minimum
/// at byte 2.
struct Q4_0 {
  static constexpr int64_t kBytes = 18;
  static constexpr int kOffset = 8;
  static constexpr bool kSigned = false, kMin = false;
  RLX_UK_AVX2 static __m256i codes(const uint8_t *b) { return nibbles(b + 2); }
};
struct Q4_1 {
  static constexpr int64_t kBytes = 20;
  static constexpr int kOffset = 0;
  static constexpr bool kSigned = false, kMin = true;
  RLX_UK_AVX2 static __m256i codes(const uint8_t *b) { return nibbles(b + 4); }
};
struct Q5_0 {
  static constexpr int64_t kBytes = 22;
  static constexpr int kOffset = 16;
  static constexpr bool kSigned = false, kMin = false;
  RLX_UK_AVX2 static __m256i codes(const uint8_t *b) {
    return _mm256_or_si256(nibbles(b + 6), fifthBits(loadU32(b + 2)));
  }
};
struct Q5_1 {
  static constexpr int64_t kBytes = 24;
  static constexpr int kOffset = 0;
  static constexpr bool kSigned = false, kMin = true;
  RLX_UK_AVX2 static __m256i codes(const uint8_t *b) {
    return _mm256_or_si256(nibbles(b + 8), fifthBits(loadU32(b + 4)));
  }
};
struct Q8_0 {
  static constexpr int64_t kBytes = 34;
  static constexpr int kOffset = 0;
  static constexpr bool kSigned = true, kMin = false;
  RLX_UK_AVX2 static __m256i codes(const uint8_t *b) { return load256(b + 2); }
};

/// Per block and output: int32 lanes of sum (q - offset) * x, converted and
/// scaled by d_w * d_x into f32 lanes; the minimum adds m * d_x * sum x.
template <class P> struct Q32Tile {
  template <int MR, int NR>
  RLX_UK_AVX2_FN static void run(const MatmulArgs &a, int64_t m, int64_t n) {
    const int64_t nb = a.K / 32;
    const uint8_t *xr[MR], *wr[NR];
    for (int i = 0; i != MR; ++i)
      xr[i] = a.x + (m + i) * a.xRowBytes;
    for (int j = 0; j != NR; ++j)
      wr[j] = a.w + (n + j) * a.wRowBytes;
    const __m256i ones16 = _mm256_set1_epi16(1);
    __m256 acc[MR][NR];
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      acc[i][j] = _mm256_setzero_ps();

    // Decoding (one row tile) streams the weights once: fetch the next
    // column tile's rows ahead.
    const size_t prefetch = a.M <= MR ? NR * a.wRowBytes : 0;
    for (int64_t b = 0; b != nb; ++b) {
      __m256i wq[NR], wabs[NR];
      float wd[NR], wm[NR];
      RLX_UK_UNROLL
      for (int j = 0; j != NR; ++j) {
        const uint8_t *blk = wr[j] + b * P::kBytes;
        if (prefetch)
          _mm_prefetch(reinterpret_cast<const char *>(blk + prefetch),
                       _MM_HINT_T0);
        wq[j] = P::codes(blk);
        wd[j] = half(blk);
        wm[j] = P::kMin ? half(blk + 2) : 0.0f;
        wabs[j] = P::kSigned ? _mm256_abs_epi8(wq[j]) : wq[j];
      }
      RLX_UK_UNROLL
      for (int i = 0; i != MR; ++i) {
        const __m256i xv = _mm256_loadu2_m128i(
            reinterpret_cast<const __m128i *>(xr[i] + q8x32Offset(32 * b + 16)),
            reinterpret_cast<const __m128i *>(xr[i] + q8x32Offset(32 * b)));
        const float dx = loadF32(xr[i] + a.xdOffset + 4 * b);
        __m256i corr = _mm256_setzero_si256();
        __m256 sx = _mm256_setzero_ps();
        if constexpr (P::kOffset != 0)
          corr = _mm256_maddubs_epi16(_mm256_set1_epi8(P::kOffset), xv);
        if constexpr (P::kMin)
          sx = _mm256_mul_ps(
              _mm256_cvtepi32_ps(_mm256_madd_epi16(
                  _mm256_maddubs_epi16(_mm256_set1_epi8(1), xv), ones16)),
              _mm256_set1_ps(dx));
        RLX_UK_UNROLL
        for (int j = 0; j != NR; ++j) {
          __m256i p;
          if constexpr (P::kSigned)
            p = _mm256_maddubs_epi16(wabs[j], _mm256_sign_epi8(xv, wq[j]));
          else
            p = _mm256_maddubs_epi16(wq[j], xv);
          if constexpr (P::kOffset != 0)
            p = _mm256_sub_epi16(p, corr);
          const __m256 f = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones16));
          acc[i][j] = _mm256_fmadd_ps(f, _mm256_set1_ps(wd[j] * dx), acc[i][j]);
          if constexpr (P::kMin)
            acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(wm[j]), sx, acc[i][j]);
        }
      }
    }
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      a.y[(m + i) * a.ldy + n + j] = hsum(acc[i][j]);
  }
};

//===----------------------------------------------------------------------===//
// K-quants
//===----------------------------------------------------------------------===//

/// Per 256-element block: int32 accumulators of the scaled chunk dots (S1)
/// for the whole MR x NR tile, then per output one f32 update with d * dx
/// and the minimum's 16-long dot product with the prepared sums.
template <class P> struct KQuantTile {
  template <int MR, int NR>
  RLX_UK_AVX2_FN static void run(const MatmulArgs &a, int64_t m, int64_t n) {
    const int64_t nb = a.K / 256;
    const uint8_t *xr[MR], *wr[NR];
    for (int i = 0; i != MR; ++i)
      xr[i] = a.x + (m + i) * a.xRowBytes;
    for (int j = 0; j != NR; ++j)
      wr[j] = a.w + (n + j) * a.wRowBytes;
    __m256 acc[MR][NR];
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      acc[i][j] = _mm256_setzero_ps();

    // Decoding (one row tile) streams the weights once: fetch the next
    // column tile's rows ahead.
    const size_t prefetch = a.M <= MR ? NR * a.wRowBytes : 0;
    for (int64_t b = 0; b != nb; ++b) {
      const uint8_t *blk[NR];
      __m256i scale[NR];
      __m256 mins[NR][2];
      float d[NR];
      RLX_UK_UNROLL
      for (int j = 0; j != NR; ++j) {
        blk[j] = wr[j] + b * P::kBytes;
        if (prefetch)
          for (int l = 0; l < P::kBytes; l += 64)
            _mm_prefetch(reinterpret_cast<const char *>(blk[j] + prefetch + l),
                         _MM_HINT_T0);
        __m256i coef;
        P::scaleVectors(blk[j], scale[j], coef);
        d[j] = half(blk[j] + P::kD);
        // dmin * coef as f32, groups 0..7 and 8..15.
        const __m256 dmin = _mm256_set1_ps(half(blk[j] + P::kDmin));
        mins[j][0] =
            _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(
                                    _mm256_castsi256_si128(coef))));
        mins[j][1] =
            _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(
                                    _mm256_extracti128_si256(coef, 1))));
      }
      __m256i s[MR][NR];
      RLX_UK_UNROLL
      for (int i = 0; i != MR; ++i)
        RLX_UK_UNROLL
      for (int j = 0; j != NR; ++j)
        s[i][j] = _mm256_setzero_si256();
      RLX_UK_UNROLL
      for (int c = 0; c != 8; ++c) {
        RLX_UK_UNROLL
        for (int j = 0; j != NR; ++j) {
          const __m256i q = P::chunk(blk[j], c);
          const __m256i sc = chunkScales(scale[j], c);
          RLX_UK_UNROLL
          for (int i = 0; i != MR; ++i) {
            const __m256i x = load256(xr[i] + 256 * b + 32 * c);
            s[i][j] = _mm256_add_epi32(
                s[i][j], _mm256_madd_epi16(_mm256_maddubs_epi16(q, x), sc));
          }
        }
      }
      RLX_UK_UNROLL
      for (int i = 0; i != MR; ++i) {
        const float dx = loadF32(xr[i] + a.xdOffset + 4 * b);
        const float *xsum =
            reinterpret_cast<const float *>(xr[i] + a.xsOffset + 64 * b);
        const __m256 xs0 = _mm256_loadu_ps(xsum);
        const __m256 xs1 = _mm256_loadu_ps(xsum + 8);
        RLX_UK_UNROLL
        for (int j = 0; j != NR; ++j) {
          acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[i][j]),
                                      _mm256_set1_ps(d[j] * dx), acc[i][j]);
          acc[i][j] = _mm256_fnmadd_ps(mins[j][0], xs0, acc[i][j]);
          acc[i][j] = _mm256_fnmadd_ps(mins[j][1], xs1, acc[i][j]);
        }
      }
    }
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      a.y[(m + i) * a.ldy + n + j] = hsum(acc[i][j]);
  }
};

//===----------------------------------------------------------------------===//
// f16 and bf16
//===----------------------------------------------------------------------===//

/// bf16 to f32: the bits in the upper half.
RLX_UK_AVX2 inline __m256 widenBF16(const uint8_t *p) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/// `Half`: f16 weights against f32 activations; otherwise bf16 against
/// bf16. Eight f32 lanes per output; the K % 8 tail in scalar.
template <bool Half> struct FloatTile {
  template <int MR, int NR>
  RLX_UK_AVX2_FN static void run(const MatmulArgs &a, int64_t m, int64_t n) {
    const uint8_t *xr[MR], *wr[NR];
    for (int i = 0; i != MR; ++i)
      xr[i] = a.x + (m + i) * a.xRowBytes;
    for (int j = 0; j != NR; ++j)
      wr[j] = a.w + (n + j) * a.wRowBytes;
    __m256 acc[MR][NR];
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      acc[i][j] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= a.K; k += 8) {
      __m256 wv[NR];
      RLX_UK_UNROLL
      for (int j = 0; j != NR; ++j)
        wv[j] = Half ? _mm256_cvtph_ps(_mm_loadu_si128(
                           reinterpret_cast<const __m128i *>(wr[j] + 2 * k)))
                     : widenBF16(wr[j] + 2 * k);
      RLX_UK_UNROLL
      for (int i = 0; i != MR; ++i) {
        const __m256 xv =
            Half ? _mm256_loadu_ps(reinterpret_cast<const float *>(xr[i]) + k)
                 : widenBF16(xr[i] + 2 * k);
        RLX_UK_UNROLL
        for (int j = 0; j != NR; ++j)
          acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
      }
    }
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j) {
      float sum = hsum(acc[i][j]);
      for (int64_t t = k; t != a.K; ++t) {
        uint16_t wh = loadU16(wr[j] + 2 * t);
        float wv = Half ? _cvtsh_ss(wh) : bf16ToFloat(wh);
        float xv =
            Half ? loadF32(xr[i] + 4 * t) : bf16ToFloat(loadU16(xr[i] + 2 * t));
        sum += wv * xv;
      }
      a.y[(m + i) * a.ldy + n + j] = sum;
    }
  }
};

} // namespace

MatmulFn rlx::uk::avx2Kernel(int wtype) {
  switch (wtype) {
  case RLX_UK_Q4_0:
    return drive<Q32Tile<Q4_0>, 2, 4>;
  case RLX_UK_Q4_1:
    return drive<Q32Tile<Q4_1>, 2, 4>;
  case RLX_UK_Q5_0:
    return drive<Q32Tile<Q5_0>, 2, 4>;
  case RLX_UK_Q5_1:
    return drive<Q32Tile<Q5_1>, 2, 4>;
  case RLX_UK_Q8_0:
    return drive<Q32Tile<Q8_0>, 2, 4>;
  case RLX_UK_Q2_K:
    return drive<KQuantTile<Q2KChunks>, 2, 2>;
  case RLX_UK_Q3_K:
    return drive<KQuantTile<Q3KChunks>, 2, 2>;
  case RLX_UK_Q4_K:
    return drive<KQuantTile<Q4KChunks>, 2, 2>;
  case RLX_UK_Q5_K:
    return drive<KQuantTile<Q5KChunks>, 2, 2>;
  case RLX_UK_Q6_K:
    return drive<KQuantTile<Q6KChunks>, 2, 2>;
  case RLX_UK_F16:
    return drive<FloatTile<true>, 2, 4>;
  case RLX_UK_BF16:
    return drive<FloatTile<false>, 2, 4>;
  default:
    return nullptr;
  }
}

#else

rlx::uk::MatmulFn rlx::uk::avx2Kernel(int) { return nullptr; }

#endif
