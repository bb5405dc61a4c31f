//===- AVX2.cpp - AVX2 + FMA + F16C micro-kernels -------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The fallback for x86 CPUs without AVX-512 VNNI. Products of unsigned codes
// with the signed prepared activations use vpmaddubsw (pairs to int16, exact
// here: codes at most 63, |x| at most 128) and vpmaddwd (to int32, by ones or
// by the K-quant scales). q8_0's signed weights go through the sign trick
// (|w| times x with w's sign).
//
// 32-element formats: one 256-bit vector holds half of two blocks of the
// grouped activations, so that four int32 lanes complete a block and one
// convert and FMA serve two blocks. K-quants: one vector per 32-element
// chunk, int32 accumulators per output over the 256-element block. f16 /
// bf16: widened to f32 for FMAs.
//
// Repacked q4_0 / q8_0 / q4_K / q6_K (RLX_UK_REPACKED_X8): lanes are 8
// output columns, so there are no horizontal sums: 4 x 8 tiles, one convert
// and FMA per block, row and 8 columns (x8Tile, qkx8Tile, q6kx8Tile).
// Repacked f16 / bf16: pairs of elements of 8 columns per 32-byte load,
// widened to f32 pairs, activation pairs broadcast (PairX8Tile).
//
// Kernels are MR x NR register tiles over the whole of K, driven panel by
// panel of activation rows as in AVX512.cpp; with M = 1 each weight byte is
// read once and the next tile's rows are prefetched.
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

/// Two 16-byte pieces, at `a` and (if two) `b`, as one vector.
RLX_UK_AVX2 inline __m256i pair16(const uint8_t *a, const uint8_t *b,
                                  bool two) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i *>(a));
  const __m128i hi = two ? _mm_loadu_si128(reinterpret_cast<const __m128i *>(b))
                         : _mm_setzero_si128();
  return _mm256_set_m128i(hi, lo);
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

/// Low and high nibbles of two blocks' 16 code bytes (at qs and qs + stride).
RLX_UK_AVX2 inline void nibbles2(const uint8_t *qs, int64_t stride, bool two,
                                 __m256i &lo, __m256i &hi) {
  const __m256i v = pair16(qs, qs + stride, two);
  const __m256i mask = _mm256_set1_epi8(0xf);
  lo = _mm256_and_si256(v, mask);
  hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
}

/// The fifth bits of two blocks (qh words at qh and qh + stride), for
/// elements 0..15 (lo) and 16..31 (hi).
RLX_UK_AVX2 inline void fifth2(const uint8_t *qh, int64_t stride, bool two,
                               __m256i &lo, __m256i &hi) {
  const uint32_t a = loadU32(qh), b = two ? loadU32(qh + stride) : 0;
  lo = fifthBits((a & 0xffff) | (b << 16));
  hi = fifthBits((a >> 16) | (b & 0xffff0000));
}

/// Policies: codes(p, two, lo, hi) gives the codes of the block at p and (if
/// two) the next one, elements 0..15 of each in `lo` and 16..31 in `hi` (the
/// prepared activations' order). kOffsetShift: the codes' offset is
/// 1 << kOffsetShift (none if negative); kSigned marks q8_0's signed codes,
/// kMin the formats with an f16 minimum at byte 2.
struct Q4_0 {
  static constexpr int64_t kBytes = 18;
  static constexpr int kOffsetShift = 3;
  static constexpr bool kSigned = false, kMin = false;
  RLX_UK_AVX2 static void codes(const uint8_t *p, bool two, __m256i &lo,
                                __m256i &hi) {
    nibbles2(p + 2, kBytes, two, lo, hi);
  }
};
struct Q4_1 {
  static constexpr int64_t kBytes = 20;
  static constexpr int kOffsetShift = -1;
  static constexpr bool kSigned = false, kMin = true;
  RLX_UK_AVX2 static void codes(const uint8_t *p, bool two, __m256i &lo,
                                __m256i &hi) {
    nibbles2(p + 4, kBytes, two, lo, hi);
  }
};
struct Q5_0 {
  static constexpr int64_t kBytes = 22;
  static constexpr int kOffsetShift = 4;
  static constexpr bool kSigned = false, kMin = false;
  RLX_UK_AVX2 static void codes(const uint8_t *p, bool two, __m256i &lo,
                                __m256i &hi) {
    __m256i flo, fhi;
    nibbles2(p + 6, kBytes, two, lo, hi);
    fifth2(p + 2, kBytes, two, flo, fhi);
    lo = _mm256_or_si256(lo, flo);
    hi = _mm256_or_si256(hi, fhi);
  }
};
struct Q5_1 {
  static constexpr int64_t kBytes = 24;
  static constexpr int kOffsetShift = -1;
  static constexpr bool kSigned = false, kMin = true;
  RLX_UK_AVX2 static void codes(const uint8_t *p, bool two, __m256i &lo,
                                __m256i &hi) {
    __m256i flo, fhi;
    nibbles2(p + 8, kBytes, two, lo, hi);
    fifth2(p + 4, kBytes, two, flo, fhi);
    lo = _mm256_or_si256(lo, flo);
    hi = _mm256_or_si256(hi, fhi);
  }
};
struct Q8_0 {
  static constexpr int64_t kBytes = 34;
  static constexpr int kOffsetShift = -1;
  static constexpr bool kSigned = true, kMin = false;
  RLX_UK_AVX2 static void codes(const uint8_t *p, bool two, __m256i &lo,
                                __m256i &hi) {
    lo = pair16(p + 2, p + kBytes + 2, two);
    hi = pair16(p + 18, p + kBytes + 18, two);
  }
};

/// The f16 values at p and (if two) p + stride, each in four lanes.
RLX_UK_AVX2 inline __m256 halfPair4(const uint8_t *p, int64_t stride,
                                    bool two) {
  uint32_t bits = loadU16(p);
  if (two)
    bits |= uint32_t(loadU16(p + stride)) << 16;
  const __m128 v = _mm_cvtph_ps(_mm_cvtsi32_si128(int(bits)));
  return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(v),
                                  _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
}

/// Blocks 4g + 2h and (if two) 4g + 2h + 1 for the whole tile: per weight
/// row the codes (elements 0..15 and 16..31 of both blocks) and scales; per
/// activation row the matching halves of the prepared group, scales and lane
/// sums; per output vpmaddubsw on both halves (exact in int16 here: codes
/// at most 31 unsigned, or q8_0's sign trick per half), vpmaddwd to int32
/// with four lanes per block, the offset's start value, one convert and one
/// FMA with d_w * d_x.
template <class P, int MR, int NR>
RLX_UK_AVX2 void q32Half(const MatmulArgs &a, const uint8_t *const (&xr)[MR],
                         const uint8_t *const (&wr)[NR], int64_t g, int h,
                         bool two, size_t prefetch, __m256 (&acc)[MR][NR]) {
  const __m256i ones16 = _mm256_set1_epi16(1);
  const int64_t blk = 4 * g + 2 * h;
  __m256i wlo[NR], whi[NR];
  __m256 wd[NR], wm[NR];
  RLX_UK_UNROLL
  for (int j = 0; j != NR; ++j) {
    const uint8_t *p = wr[j] + blk * P::kBytes;
    if (prefetch)
      for (int l = 0; l < 2 * P::kBytes; l += 64)
        _mm_prefetch(reinterpret_cast<const char *>(p + prefetch + l),
                     _MM_HINT_T0);
    P::codes(p, two, wlo[j], whi[j]);
    wd[j] = halfPair4(p, P::kBytes, two);
    wm[j] = P::kMin ? halfPair4(p + 2, P::kBytes, two) : _mm256_setzero_ps();
  }
  RLX_UK_UNROLL
  for (int i = 0; i != MR; ++i) {
    const uint8_t *xq = xr[i] + 128 * g + 32 * h;
    const __m256i xlo = load256(xq), xhi = load256(xq + 64);
    const __m256 dx = _mm256_permutevar8x32_ps(
        _mm256_castps128_ps256(_mm_castpd_ps(_mm_load_sd(
            reinterpret_cast<const double *>(xr[i] + a.xdOffset + 4 * blk)))),
        _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
    const __m256i sums = load256(xr[i] + a.xsOffset + 4 * (16 * g + 8 * h));
    __m256i xinit = _mm256_setzero_si256();
    __m256 sx = _mm256_setzero_ps();
    if constexpr (P::kOffsetShift >= 0)
      xinit = _mm256_sub_epi32(_mm256_setzero_si256(),
                               _mm256_slli_epi32(sums, P::kOffsetShift));
    if constexpr (P::kMin)
      sx = _mm256_mul_ps(_mm256_cvtepi32_ps(sums), dx);
    RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j) {
      __m256i s;
      if constexpr (P::kSigned) {
        // |w| * (x with w's sign); each half to int32 on its own (two
        // halves could reach 2 * 32512 in int16).
        const __m256i plo = _mm256_maddubs_epi16(_mm256_abs_epi8(wlo[j]),
                                                 _mm256_sign_epi8(xlo, wlo[j]));
        const __m256i phi = _mm256_maddubs_epi16(_mm256_abs_epi8(whi[j]),
                                                 _mm256_sign_epi8(xhi, whi[j]));
        s = _mm256_add_epi32(_mm256_madd_epi16(plo, ones16),
                             _mm256_madd_epi16(phi, ones16));
      } else {
        const __m256i p16 = _mm256_add_epi16(_mm256_maddubs_epi16(wlo[j], xlo),
                                             _mm256_maddubs_epi16(whi[j], xhi));
        s = _mm256_add_epi32(_mm256_madd_epi16(p16, ones16), xinit);
      }
      acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s),
                                  _mm256_mul_ps(wd[j], dx), acc[i][j]);
      if constexpr (P::kMin)
        acc[i][j] = _mm256_fmadd_ps(wm[j], sx, acc[i][j]);
    }
  }
}

template <class P> struct Q32Tile {
  template <int MR, int NR>
  RLX_UK_AVX2_FN static void run(const MatmulArgs &a, int64_t m, int64_t n) {
    const int64_t nb = a.K / 32;
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
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2)
      q32Half<P, MR, NR>(a, xr, wr, b / 4, int(b / 2 % 2), true, prefetch, acc);
    if (b != nb)
      q32Half<P, MR, NR>(a, xr, wr, b / 4, int(b / 2 % 2), false, prefetch,
                         acc);
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      a.y[(m + i) * a.ldy + n + j] = hsum(acc[i][j]);
  }
};

//===----------------------------------------------------------------------===//
// Repacked 32-element formats (RLX_UK_REPACKED_X8)
//===----------------------------------------------------------------------===//

/// Keeps `v` in a register at this point: an accumulation chain stays a
/// chain (GCC's reassociation would otherwise rebalance it into a tree that
/// keeps every product of a block live at once, spilling the tile).
RLX_UK_AVX2 inline void pin(__m256i &v) { asm("" : "+x"(v)); }

/// One MR x 8 tile over blocks [b0, b1) of a repacked group (see Internal.h):
/// the lanes are the 8 output columns. Per superblock and 4-byte chunk of
/// codes, one 32-byte vector of weights and, per activation row, a broadcast
/// of the 4 matching activation bytes: vpmaddubsw gives the 8 columns'
/// partial dots. q4_0 sums its 8 products per block in int16 (exact: at most
/// 8 * 2 * 15 * 127 = 30480), one vpmaddwd to int32, plus the offset's
/// -8 * sum(x) from `corr` (row i's block b at corr[i * corrStride + b -
/// b0]); q8_0 uses the sign trick and vpmaddwd per chunk. Then one convert
/// and one FMA with d_w * d_x per block and row. `accumulate` continues the
/// sums already in y (from earlier blocks: the lanes add block by block, so
/// a split along K gives the same result).
template <bool Q8, int MR>
RLX_UK_AVX2_FN void x8Tile(const MatmulArgs &a, int64_t m, int64_t n,
                           int64_t b0, int64_t b1, const int32_t *corr,
                           int64_t corrStride, bool accumulate) {
  constexpr int64_t kSuper = Q8 ? 8 * 34 : 8 * 18;
  constexpr int kChunks = Q8 ? 8 : 4;
  const uint8_t *xr[MR];
  for (int i = 0; i != MR; ++i)
    xr[i] = a.x + (m + i) * a.xRowBytes;
  const uint8_t *group = a.w + n * a.wRowBytes;
  __m256 acc[MR];
  RLX_UK_UNROLL
  for (int i = 0; i != MR; ++i)
    acc[i] = accumulate ? _mm256_loadu_ps(a.y + (m + i) * a.ldy + n)
                        : _mm256_setzero_ps();
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m256i low4 = _mm256_set1_epi8(0xf);
  // Decoding (one row tile) streams the weights once: fetch ahead.
  const bool prefetch = a.M <= MR;
  for (int64_t b = b0; b != b1; ++b) {
    const uint8_t *sb = group + b * kSuper;
    if (prefetch)
      for (int l = 0; l < kSuper; l += 64)
        _mm_prefetch(reinterpret_cast<const char *>(sb + 8 * kSuper + l),
                     _MM_HINT_T0);
    const __m256 wd =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(sb)));
    // Block b's elements 0..15 in the prepared row; 16..31 are 64 further.
    const size_t xo = size_t(128 * (b >> 2) + 16 * (b & 3));
    __m256i s[MR];
    RLX_UK_UNROLL
    for (int c = 0; c != kChunks; ++c) {
      const __m256i v = load256(sb + 16 + 32 * c);
      if constexpr (Q8) {
        const __m256i av = _mm256_abs_epi8(v);
        const size_t co = xo + (c < 4 ? 4 * c : 64 + 4 * (c - 4));
        RLX_UK_UNROLL
        for (int i = 0; i != MR; ++i) {
          const __m256i bx = _mm256_set1_epi32(int(loadU32(xr[i] + co)));
          const __m256i p = _mm256_madd_epi16(
              _mm256_maddubs_epi16(av, _mm256_sign_epi8(bx, v)), ones16);
          s[i] = c == 0 ? p : _mm256_add_epi32(s[i], p);
          pin(s[i]);
        }
      } else {
        const __m256i lo = _mm256_and_si256(v, low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        RLX_UK_UNROLL
        for (int i = 0; i != MR; ++i) {
          const __m256i bl =
              _mm256_set1_epi32(int(loadU32(xr[i] + xo + 4 * c)));
          const __m256i bh =
              _mm256_set1_epi32(int(loadU32(xr[i] + xo + 64 + 4 * c)));
          const __m256i pl = _mm256_maddubs_epi16(lo, bl);
          s[i] = c == 0 ? pl : _mm256_add_epi16(s[i], pl);
          pin(s[i]);
          s[i] = _mm256_add_epi16(s[i], _mm256_maddubs_epi16(hi, bh));
          pin(s[i]);
        }
      }
    }
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i) {
      __m256i si = s[i];
      if constexpr (!Q8)
        si = _mm256_add_epi32(
            _mm256_madd_epi16(si, ones16),
            _mm256_set1_epi32(corr[i * corrStride + (b - b0)]));
      const __m256 dx = _mm256_set1_ps(loadF32(xr[i] + a.xdOffset + 4 * b));
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si), _mm256_mul_ps(wd, dx),
                               acc[i]);
    }
  }
  RLX_UK_UNROLL
  for (int i = 0; i != MR; ++i)
    _mm256_storeu_ps(a.y + (m + i) * a.ldy + n, acc[i]);
}

/// x8Tile<Q8, mr> for mr in [1, R].
template <bool Q8, int R>
RLX_UK_AVX2_FN void x8Rows(int mr, const MatmulArgs &a, int64_t m, int64_t n,
                           int64_t b0, int64_t b1, const int32_t *corr,
                           int64_t corrStride, bool accumulate) {
  if (mr == R)
    x8Tile<Q8, R>(a, m, n, b0, b1, corr, corrStride, accumulate);
  else if constexpr (R > 1)
    x8Rows<Q8, R - 1>(mr, a, m, n, b0, b1, corr, corrStride, accumulate);
}

/// Drives x8Tile<Q8, MR> panel by panel of activation rows, and (for very
/// long rows only) range by range of blocks, so that q4_0's offset terms
/// -8 * sum(x) of a panel fit a buffer on the stack. a.N is a multiple of 8.
template <bool Q8, int MR> RLX_UK_AVX2_FN void driveX8(const MatmulArgs &a) {
  constexpr int64_t kCap = 8192;
  int32_t corr[Q8 ? 1 : kCap];
  const int64_t nb = a.K / 32;
  const int64_t cb = std::min<int64_t>(nb, kCap / MR);
  const int64_t panel =
      std::min<int64_t>(panelRows(a.xRowBytes, MR), kCap / cb / MR * MR);
  for (int64_t m0 = 0; m0 < a.M; m0 += panel) {
    const int64_t m1 = std::min(a.M, m0 + panel);
    for (int64_t b0 = 0; b0 < nb; b0 += cb) {
      const int64_t b1 = std::min(nb, b0 + cb), stride = b1 - b0;
      if constexpr (!Q8) {
        for (int64_t m = m0; m != m1; ++m) {
          const uint8_t *sums = a.x + m * a.xRowBytes + a.xsOffset;
          for (int64_t b = b0; b != b1; ++b) {
            int32_t t = 0;
            for (int h = 0; h != 4; ++h)
              t += int32_t(loadU32(sums + 16 * b + 4 * h));
            corr[(m - m0) * stride + (b - b0)] = -8 * t;
          }
        }
      }
      for (int64_t n = 0; n < a.N; n += 8) {
        for (int64_t m = m0; m < m1; m += MR) {
          const int32_t *c = corr + (Q8 ? 0 : (m - m0) * stride);
          x8Rows<Q8, MR>(int(std::min<int64_t>(MR, m1 - m)), a, m, n, b0, b1, c,
                         stride, b0 != 0);
        }
      }
    }
  }
}

/// `v`'s 16-bit lanes shifted left by `s` bits (right by -s): moves a bit
/// field of each byte to other bits of it (the caller masks off what crosses
/// into the neighbouring byte).
RLX_UK_AVX2 inline __m256i shift16(__m256i v, int s) {
  return s > 0 ? _mm256_slli_epi16(v, s) : s < 0 ? _mm256_srli_epi16(v, -s) : v;
}

/// Offsets in a repacked superblock (row 0's bytes) of the parts of the plain
/// block, from Internal.h's repackedOffset: the q4_K / q5_K scale words
/// (plain bytes 4, 8 and 12: the same in both), q4_K's codes (16), q5_K's qh
/// (16) and codes (48); q6_K's ql (0), qh (128) and scales (192).
constexpr int kKScaleWords[3] = {int(repackedOffset(RLX_UK_Q4_K, 144, 0, 4)),
                                 int(repackedOffset(RLX_UK_Q4_K, 144, 0, 8)),
                                 int(repackedOffset(RLX_UK_Q4_K, 144, 0, 12))};
static_assert(repackedOffset(RLX_UK_Q5_K, 176, 0, 4) == kKScaleWords[0],
              "q4_K and q5_K keep their scale words in the same place");
constexpr int kQ4KCodes = int(repackedOffset(RLX_UK_Q4_K, 144, 0, 16));
constexpr int kQ5KQh = int(repackedOffset(RLX_UK_Q5_K, 176, 0, 16));
constexpr int kQ5KCodes = int(repackedOffset(RLX_UK_Q5_K, 176, 0, 48));
constexpr int kQ6KQl = int(repackedOffset(RLX_UK_Q6_K, 210, 0, 0));
constexpr int kQ6KQh = int(repackedOffset(RLX_UK_Q6_K, 210, 0, 128));
constexpr int kQ6KScales = int(repackedOffset(RLX_UK_Q6_K, 210, 0, 192));

/// The 8 lanes' 6-bit scale (`mins` false) or minimum (true) of 32-element
/// chunk c of a repacked q4_K superblock, as int32 lanes: decodeScaleMin6
/// per lane on the scale words u0, u1, u2 (rows in lanes, see Internal.h).
RLX_UK_AVX2 inline __m256i q4kScale(const uint8_t *sb, int c, bool mins) {
  const __m256i u01 = load256(sb + kKScaleWords[mins ? 1 : 0]);
  if (c < 4)
    return _mm256_and_si256(_mm256_srli_epi32(u01, 8 * c),
                            _mm256_set1_epi32(0x3f));
  const __m256i u2 = load256(sb + kKScaleWords[2]);
  const int sh = 8 * (c - 4);
  return _mm256_or_si256(
      _mm256_and_si256(_mm256_srli_epi32(u2, sh + (mins ? 4 : 0)),
                       _mm256_set1_epi32(0x0f)),
      _mm256_and_si256(_mm256_srli_epi32(u01, sh + 2),
                       _mm256_set1_epi32(0x30)));
}

/// One MR x 8 tile of repacked q4_K (Q5 false) or q5_K (true) over all of
/// K: per 32-element chunk c, 8 code vectors (one nibble of 4 code bytes of
/// the 8 rows; q5_K: with bit c of the matching 4 qh bytes on top, as bit
/// 4) times broadcast activation bytes summed in int16 (exact: at most
/// 8 * 2 * 15 * 128 = 30720 for q4_K; q5_K sums 4 vectors at a time,
/// 4 * 2 * 31 * 128 = 31744), vpmaddwd by the lanes' chunk scales into
/// int32 S1; per block and row one convert and FMA with d * dx, and the
/// minimums' sum over chunks of mn_j * (xsum[2j] + xsum[2j+1]) times dmin.
/// (The superblock, see Internal.h: kKScaleWords, kQ4KCodes, kQ5KQh,
/// kQ5KCodes.)
template <int MR, bool Q5>
RLX_UK_AVX2_FN void qkx8Tile(const MatmulArgs &a, int64_t m, int64_t n) {
  constexpr int64_t kSuper = 8 * (Q5 ? 176 : 144);
  constexpr int kQs = Q5 ? kQ5KCodes : kQ4KCodes, kQh = kQ5KQh;
  constexpr int kRun = Q5 ? 4 : 8; // Code vectors summed in int16.
  const int64_t nb = a.K / 256;
  const uint8_t *xr[MR];
  for (int i = 0; i != MR; ++i)
    xr[i] = a.x + (m + i) * a.xRowBytes;
  const uint8_t *group = a.w + n * a.wRowBytes;
  __m256 acc[MR];
  RLX_UK_UNROLL
  for (int i = 0; i != MR; ++i)
    acc[i] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0xf);
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  const bool prefetch = a.M <= MR;
  for (int64_t b = 0; b != nb; ++b) {
    const uint8_t *sb = group + b * kSuper;
    if (prefetch)
      for (int l = 0; l < kSuper; l += 64)
        _mm_prefetch(reinterpret_cast<const char *>(sb + 2 * kSuper + l),
                     _MM_HINT_T0);
    __m256i s1[MR];
    RLX_UK_UNROLL
    for (int c = 0; c != 8; ++c) {
      const __m256i sc32 = q4kScale(sb, c, false);
      const __m256i sc = _mm256_or_si256(sc32, _mm256_slli_epi32(sc32, 16));
      RLX_UK_UNROLL
      for (int k0 = 0; k0 != 8; k0 += kRun) {
        __m256i s[MR];
        RLX_UK_UNROLL
        for (int k = k0; k != k0 + kRun; ++k) {
          __m256i q = load256(sb + kQs + 32 * (8 * (c / 2) + k));
          if (c & 1)
            q = _mm256_srli_epi16(q, 4);
          q = _mm256_and_si256(q, low4);
          if constexpr (Q5) {
            // Bit c of each qh byte to bit 4 (16-bit shifts by at most 4
            // move no other byte's bit there).
            const __m256i qh = load256(sb + kQh + 32 * k);
            q = _mm256_or_si256(q, _mm256_and_si256(shift16(qh, 4 - c), bit4));
          }
          RLX_UK_UNROLL
          for (int i = 0; i != MR; ++i) {
            const __m256i bx = _mm256_set1_epi32(
                int(loadU32(xr[i] + 256 * b + 32 * c + 4 * k)));
            const __m256i p = _mm256_maddubs_epi16(q, bx);
            s[i] = k == k0 ? p : _mm256_add_epi16(s[i], p);
            pin(s[i]);
          }
        }
        RLX_UK_UNROLL
        for (int i = 0; i != MR; ++i) {
          const __m256i p = _mm256_madd_epi16(s[i], sc);
          s1[i] = c == 0 && k0 == 0 ? p : _mm256_add_epi32(s1[i], p);
          pin(s1[i]);
        }
      }
    }
    const __m256 wd =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(sb)));
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i) {
      const __m256 dx = _mm256_set1_ps(loadF32(xr[i] + a.xdOffset + 4 * b));
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1[i]), _mm256_mul_ps(wd, dx),
                               acc[i]);
    }
    __m256 t[MR];
    RLX_UK_UNROLL
    for (int c = 0; c != 8; ++c) {
      const __m256 mn = _mm256_cvtepi32_ps(q4kScale(sb, c, true));
      RLX_UK_UNROLL
      for (int i = 0; i != MR; ++i) {
        const float *xs =
            reinterpret_cast<const float *>(xr[i] + a.xsOffset + 64 * b);
        const __m256 p = _mm256_mul_ps(mn, _mm256_set1_ps(xs[2 * c]));
        t[i] = c == 0 ? p : _mm256_add_ps(t[i], p);
        t[i] = _mm256_fmadd_ps(mn, _mm256_set1_ps(xs[2 * c + 1]), t[i]);
      }
    }
    const __m256 wdmin = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(sb + 16)));
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      acc[i] = _mm256_fnmadd_ps(wdmin, t[i], acc[i]);
  }
  RLX_UK_UNROLL
  for (int i = 0; i != MR; ++i)
    _mm256_storeu_ps(a.y + (m + i) * a.ldy + n, acc[i]);
}

/// The 8 lanes' int8 scales of 16-element group g of a repacked q6_K
/// superblock (see Internal.h), each sign-extended to both int16 halves of
/// its lane (the vpmaddwd factor of the lane's two int16 sums).
RLX_UK_AVX2 inline __m256i q6kScalePairs(const uint8_t *sb, int g) {
  const __m256i v = load256(sb + kQ6KScales + 32 * (g / 4));
  const char z = char(0x80), o = char(g % 4);
  const __m256i pick = _mm256_setr_epi8(
      z, o, z, o, z, char(4 + o), z, char(4 + o), z, char(8 + o), z,
      char(8 + o), z, char(12 + o), z, char(12 + o), z, o, z, o, z, char(4 + o),
      z, char(4 + o), z, char(8 + o), z, char(8 + o), z, char(12 + o), z,
      char(12 + o));
  return _mm256_srai_epi16(_mm256_shuffle_epi8(v, pick), 8);
}

/// One MR x 8 tile of repacked q6_K over all of K. Per 4 elements of the
/// 8 rows, one code vector (ql nibbles with the qh bit pairs on top, codes
/// 0..63) times broadcast activation bytes; two such products summed in
/// int16 (exact: at most 4 * 63 * 128 = 32256; four could overflow), then
/// vpmaddwd by the lanes' group scales into int32 S1 (at most
/// 16 * 16 * 63 * 128 * 128 < 2^31). Per block and row one convert and FMA
/// with d * dx, and one for the codes' offset 32: 32 d times the 16-long sum
/// of scale[g] * xsum[g] (f32, as the plain kernels do). Several rows sum
/// it as each pair of group scales is decoded (measured faster for GEMM);
/// one row (decoding) in a pass of its own after the codes (as fast or
/// slightly faster there, within the noise of the measurements).
template <int MR>
RLX_UK_AVX2_FN void q6kx8Tile(const MatmulArgs &a, int64_t m, int64_t n) {
  constexpr bool kFused = MR > 1;
  constexpr int64_t kSuper = 8 * 210;
  constexpr int kQl = kQ6KQl, kQh = kQ6KQh;
  const int64_t nb = a.K / 256;
  const uint8_t *xr[MR];
  for (int i = 0; i != MR; ++i)
    xr[i] = a.x + (m + i) * a.xRowBytes;
  const uint8_t *group = a.w + n * a.wRowBytes;
  __m256 acc[MR];
  RLX_UK_UNROLL
  for (int i = 0; i != MR; ++i)
    acc[i] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0xf);
  const __m256i high2 = _mm256_set1_epi8(0x30);
  const bool prefetch = a.M <= MR;
  for (int64_t b = 0; b != nb; ++b) {
    const uint8_t *sb = group + b * kSuper;
    if (prefetch)
      for (int l = 0; l < kSuper; l += 64)
        _mm_prefetch(reinterpret_cast<const char *>(sb + 2 * kSuper + l),
                     _MM_HINT_T0);
    __m256i s1[MR];
    __m256 t[MR];
    RLX_UK_UNROLL
    for (int h = 0; h != 2; ++h) {
      RLX_UK_UNROLL
      for (int j = 0; j != 4; ++j) {
        // Elements 128 h + 32 j + [0, 32): groups g and g + 1.
        const int g = 8 * h + 2 * j;
        const __m256i sc0 = q6kScalePairs(sb, g);
        const __m256i sc1 = q6kScalePairs(sb, g + 1);
        RLX_UK_UNROLL
        for (int kp = 0; kp != 4; ++kp) {
          __m256i q[2];
          RLX_UK_UNROLL
          for (int u = 0; u != 2; ++u) {
            const int k = 2 * kp + u;
            __m256i ql = load256(sb + kQl + 32 * (16 * h + 8 * (j & 1) + k));
            if (j >= 2)
              ql = _mm256_srli_epi16(ql, 4);
            // Bits 2 j, 2 j + 1 of the qh bytes, moved to bits 4, 5.
            const __m256i qh = load256(sb + kQh + 32 * (8 * h + k));
            q[u] = _mm256_or_si256(
                _mm256_and_si256(ql, low4),
                _mm256_and_si256(shift16(qh, 4 - 2 * j), high2));
          }
          const __m256i sc = kp < 2 ? sc0 : sc1;
          const int xo = 128 * h + 32 * j + 8 * kp;
          RLX_UK_UNROLL
          for (int i = 0; i != MR; ++i) {
            const uint8_t *xq = xr[i] + 256 * b + xo;
            const __m256i p0 =
                _mm256_maddubs_epi16(q[0], _mm256_set1_epi32(int(loadU32(xq))));
            const __m256i p1 = _mm256_maddubs_epi16(
                q[1], _mm256_set1_epi32(int(loadU32(xq + 4))));
            const __m256i p = _mm256_madd_epi16(_mm256_add_epi16(p0, p1), sc);
            s1[i] =
                h == 0 && j == 0 && kp == 0 ? p : _mm256_add_epi32(s1[i], p);
            pin(s1[i]);
          }
        }
        // The offset: sum_g scale[g] * xsum[g] per lane and row.
        if constexpr (kFused) {
          RLX_UK_UNROLL
          for (int u = 0; u != 2; ++u) {
            const __m256 scf =
                _mm256_cvtepi32_ps(_mm256_srai_epi32(u == 0 ? sc0 : sc1, 16));
            RLX_UK_UNROLL
            for (int i = 0; i != MR; ++i) {
              const __m256 xg = _mm256_set1_ps(
                  loadF32(xr[i] + a.xsOffset + 64 * b + 4 * (g + u)));
              t[i] = g + u == 0 ? _mm256_mul_ps(scf, xg)
                                : _mm256_fmadd_ps(scf, xg, t[i]);
            }
          }
        }
      }
    }
    if constexpr (!kFused) {
      RLX_UK_UNROLL
      for (int g = 0; g != 16; ++g) {
        const __m256 scf =
            _mm256_cvtepi32_ps(_mm256_srai_epi32(q6kScalePairs(sb, g), 16));
        RLX_UK_UNROLL
        for (int i = 0; i != MR; ++i) {
          const __m256 xg =
              _mm256_set1_ps(loadF32(xr[i] + a.xsOffset + 64 * b + 4 * g));
          t[i] =
              g == 0 ? _mm256_mul_ps(scf, xg) : _mm256_fmadd_ps(scf, xg, t[i]);
        }
      }
    }
    const __m256 wd =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(sb)));
    const __m256 wd32 = _mm256_mul_ps(wd, _mm256_set1_ps(32.0f));
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i) {
      const __m256 dx = _mm256_set1_ps(loadF32(xr[i] + a.xdOffset + 4 * b));
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1[i]), _mm256_mul_ps(wd, dx),
                               acc[i]);
      acc[i] = _mm256_fnmadd_ps(wd32, t[i], acc[i]);
    }
  }
  RLX_UK_UNROLL
  for (int i = 0; i != MR; ++i)
    _mm256_storeu_ps(a.y + (m + i) * a.ldy + n, acc[i]);
}

/// The repacked K-quant tiles as policies: Tile::run<MR>(a, m, n).
template <bool Q5> struct QKx8 {
  template <int MR>
  RLX_UK_AVX2_FN static void run(const MatmulArgs &a, int64_t m, int64_t n) {
    qkx8Tile<MR, Q5>(a, m, n);
  }
};
struct Q6Kx8 {
  template <int MR>
  RLX_UK_AVX2_FN static void run(const MatmulArgs &a, int64_t m, int64_t n) {
    q6kx8Tile<MR>(a, m, n);
  }
};

/// Tile::run<mr> for mr in [1, R].
template <class Tile, int R>
RLX_UK_AVX2_FN void kx8Rows(int mr, const MatmulArgs &a, int64_t m, int64_t n) {
  if (mr == R)
    Tile::template run<R>(a, m, n);
  else if constexpr (R > 1)
    kx8Rows<Tile, R - 1>(mr, a, m, n);
}

/// Drives Tile::run<MR> (a repacked K-quant tile) panel by panel of
/// activation rows (a.N is a multiple of 8).
template <class Tile, int MR>
RLX_UK_AVX2_FN void driveKx8(const MatmulArgs &a) {
  const int64_t panel = panelRows(a.xRowBytes, MR);
  for (int64_t m0 = 0; m0 < a.M; m0 += panel) {
    const int64_t m1 = std::min(a.M, m0 + panel);
    for (int64_t n = 0; n < a.N; n += 8)
      for (int64_t m = m0; m < m1; m += MR)
        kx8Rows<Tile, MR>(int(std::min<int64_t>(MR, m1 - m)), a, m, n);
  }
}

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

//===----------------------------------------------------------------------===//
// Repacked f16 and bf16 (RLX_UK_REPACKED_X8)
//===----------------------------------------------------------------------===//

/// Eight f32 lanes from 8 f16 (`Half`) or bf16 values at `p`.
template <bool Half> RLX_UK_AVX2 inline __m256 widen8(const uint8_t *p) {
  if constexpr (Half)
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  else
    return widenBF16(p);
}

/// One MR x (8 NG) tile of repacked f16 (`Half`) or bf16 over all of K: per
/// pair of elements and group, two widenings give columns 0..3 and 4..7 as
/// (even, odd) f32 pairs, multiplied by the row's broadcast activation pair
/// (f32: f16's activations, or bf16 values held as f32) into pair
/// accumulators, summed pairwise at the end (vhaddps).
template <bool Half> struct PairX8Tile {
  template <int MR, int NG>
  RLX_UK_AVX2_FN static void run(const MatmulArgs &a, int64_t m, int64_t n) {
    const int64_t even = a.K - a.K % 2;
    const uint8_t *g[NG], *xr[MR];
    for (int j = 0; j != NG; ++j)
      g[j] = a.w + (n + 8 * j) * a.wRowBytes;
    for (int i = 0; i != MR; ++i)
      xr[i] = a.x + (m + i) * a.xRowBytes;
    __m256 lo[MR][NG], hi[MR][NG];
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NG; ++j)
      lo[i][j] = hi[i][j] = _mm256_setzero_ps();
    // Decoding (one row tile) streams the weights once: fetch the next
    // column tile's groups ahead.
    const size_t prefetch = a.M <= MR ? 8 * NG * a.wRowBytes : 0;
    for (int64_t k = 0; k != even; k += 2) {
      __m256 wl[NG], wh[NG];
      RLX_UK_UNROLL
      for (int j = 0; j != NG; ++j) {
        const uint8_t *p = g[j] + 16 * k;
        if (prefetch && k % 4 == 0)
          _mm_prefetch(reinterpret_cast<const char *>(p + prefetch),
                       _MM_HINT_T0);
        wl[j] = widen8<Half>(p);
        wh[j] = widen8<Half>(p + 16);
      }
      RLX_UK_UNROLL
      for (int i = 0; i != MR; ++i) {
        const __m256 xx = _mm256_castpd_ps(_mm256_broadcast_sd(
            reinterpret_cast<const double *>(xr[i] + 4 * k)));
        RLX_UK_UNROLL
        for (int j = 0; j != NG; ++j) {
          lo[i][j] = _mm256_fmadd_ps(xx, wl[j], lo[i][j]);
          hi[i][j] = _mm256_fmadd_ps(xx, wh[j], hi[i][j]);
        }
      }
    }
    RLX_UK_UNROLL
    for (int j = 0; j != NG; ++j) {
      // An odd K's last element of the 8 rows: 8 halves.
      const __m256 last =
          even != a.K ? widen8<Half>(g[j] + 16 * even) : _mm256_setzero_ps();
      RLX_UK_UNROLL
      for (int i = 0; i != MR; ++i) {
        // Lanes c0 c1 c4 c5 | c2 c3 c6 c7, then in column order.
        __m256 sum = _mm256_castpd_ps(_mm256_permute4x64_pd(
            _mm256_castps_pd(_mm256_hadd_ps(lo[i][j], hi[i][j])), 0xd8));
        if (even != a.K)
          sum = _mm256_fmadd_ps(_mm256_set1_ps(loadF32(xr[i] + 4 * even)), last,
                                sum);
        _mm256_storeu_ps(a.y + (m + i) * a.ldy + n + 8 * j, sum);
      }
    }
  }
};

/// Tile::run<mr, ng> for mr in [1, MR] and ng in [1, NG].
template <class Tile, int MR, int NG>
RLX_UK_AVX2_FN void floatX8Tile(int mr, int ng, const MatmulArgs &a, int64_t m,
                                int64_t n) {
  if (mr != MR) {
    if constexpr (MR > 1)
      floatX8Tile<Tile, MR - 1, NG>(mr, ng, a, m, n);
  } else if (ng != NG) {
    if constexpr (NG > 1)
      floatX8Tile<Tile, MR, NG - 1>(mr, ng, a, m, n);
  } else {
    Tile::template run<MR, NG>(a, m, n);
  }
}

/// Drives a repacked f16 / bf16 tile: one row and 4 groups (32 columns) at
/// a time to decode, MR rows and NG groups per panel of activation rows
/// otherwise. a.N is a multiple of 8.
template <class Tile, int MR, int NG>
RLX_UK_AVX2_FN void driveFloatX8(const MatmulArgs &a) {
  const int64_t groups = a.N / 8;
  if (a.M == 1) {
    for (int64_t j = 0; j < groups; j += 4)
      floatX8Tile<Tile, 1, 4>(1, int(std::min<int64_t>(4, groups - j)), a, 0,
                              8 * j);
    return;
  }
  const int64_t panel = panelRows(a.xRowBytes, MR);
  for (int64_t m0 = 0; m0 < a.M; m0 += panel) {
    const int64_t m1 = std::min(a.M, m0 + panel);
    for (int64_t j = 0; j < groups; j += NG)
      for (int64_t m = m0; m < m1; m += MR)
        floatX8Tile<Tile, MR, NG>(int(std::min<int64_t>(MR, m1 - m)),
                                  int(std::min<int64_t>(NG, groups - j)), a, m,
                                  8 * j);
  }
}

} // namespace

MatmulFn rlx::uk::avx2Kernel(int wtype) {
  switch (wtype) {
  case RLX_UK_Q4_0:
    return drive<Q32Tile<Q4_0>, 4, 2>;
  case RLX_UK_Q4_1:
    return drive<Q32Tile<Q4_1>, 4, 2>;
  case RLX_UK_Q5_0:
    return drive<Q32Tile<Q5_0>, 4, 2>;
  case RLX_UK_Q5_1:
    return drive<Q32Tile<Q5_1>, 4, 2>;
  case RLX_UK_Q8_0:
    return drive<Q32Tile<Q8_0>, 4, 2>;
  case RLX_UK_Q4_0 | RLX_UK_REPACKED_X8:
    return driveX8<false, 4>;
  case RLX_UK_Q8_0 | RLX_UK_REPACKED_X8:
    return driveX8<true, 4>;
  case RLX_UK_Q4_K | RLX_UK_REPACKED_X8:
    return driveKx8<QKx8<false>, 4>;
  case RLX_UK_Q5_K | RLX_UK_REPACKED_X8:
    return driveKx8<QKx8<true>, 4>;
  case RLX_UK_Q6_K | RLX_UK_REPACKED_X8:
    return driveKx8<Q6Kx8, 4>;
  case RLX_UK_F16 | RLX_UK_REPACKED_X8:
    return driveFloatX8<PairX8Tile<true>, 6, 1>;
  case RLX_UK_BF16 | RLX_UK_REPACKED_X8:
    return driveFloatX8<PairX8Tile<false>, 6, 1>;
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
