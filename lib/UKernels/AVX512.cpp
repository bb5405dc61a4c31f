//===- AVX512.cpp - AVX-512 (VNNI, BF16) micro-kernels
//----------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Kernels for AVX-512 F/BW/VL/DQ with VNNI (and vdpbf16ps where AVX512_BF16
// is present). One 512-bit vector holds two 32-element blocks or a 64-element
// chunk of a K-quant block.
//
// 32-element formats: vpdpbusd multiplies unsigned by signed bytes, so the
// unsigned codes q (q4_0, q5_0, q4_1, q5_1) multiply the signed activations
// and the offset enters as -offset * sum(x), computed once per activation row
// and block pair and used as the accumulator's starting value; q8_0's signed
// codes multiply x + 128 (x ^ 0x80) and the start value is -128 * sum(w),
// computed once per weight block. Each int32 lane then holds four products;
// lanes 0..7 belong to the first block, 8..15 to the second, and one convert
// and FMA per vector applies d_w * d_x.
//
// K-quants: vpmaddubsw (codes times activations, pairs to int16) and
// vpdpwssd (times the per-16 scales, to int32) accumulate S1 over a whole
// 256-element block; S2 comes from the prepared 16-element sums.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#if defined(__x86_64__) || defined(__i386__)

// GCC 12's AVX-512 headers pass _mm512_undefined_*() as the merge source of
// unmasked intrinsics and then warn about it (GCC PR 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "X86.h"

#include <algorithm>

using namespace rlx::uk;
using namespace rlx::uk::x86;

#define RLX_UK_AVX512_TARGET                                                   \
  "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c"
#define RLX_UK_AVX512_FN __attribute__((target(RLX_UK_AVX512_TARGET)))
#define RLX_UK_AVX512                                                          \
  __attribute__((target(RLX_UK_AVX512_TARGET), always_inline))
#define RLX_UK_AVX512BF16_FN                                                   \
  __attribute__((target(RLX_UK_AVX512_TARGET ",avx512bf16")))

namespace {

/// Runs Tile::run<MR, NR> over the output, with smaller tiles at the edges.
template <class Tile, int MR, int NR>
RLX_UK_AVX512_FN void drive(const MatmulArgs &a) {
  for (int64_t n = 0; n < a.N; n += NR) {
    const int nr = int(std::min<int64_t>(NR, a.N - n));
    for (int64_t m = 0; m < a.M; m += MR) {
      const int mr = int(std::min<int64_t>(MR, a.M - m));
      if (mr == MR && nr == NR)
        Tile::template run<MR, NR>(a, m, n);
      else {
        RLX_UK_EDGE_SWITCH(mr, nr)
      }
    }
  }
}

RLX_UK_AVX512 inline __m512i load512(const void *p) {
  return _mm512_loadu_si512(p);
}

/// A 256-bit load, zero-extended.
RLX_UK_AVX512 inline __m512i load256z(const void *p) {
  return _mm512_zextsi256_si512(load256(p));
}

//===----------------------------------------------------------------------===//
// 32-element formats
//===----------------------------------------------------------------------===//

/// Lanes 0..7 hold `a`'s value, lanes 8..15 `b`'s.
RLX_UK_AVX512 inline __m512 spreadPair(__m128 ab) {
  const __m512i idx =
      _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(ab));
}

/// The f16 values at `a` and (if Two) `b`, spread over the two halves.
template <bool Two>
RLX_UK_AVX512 inline __m512 halfPair(const uint8_t *a, const uint8_t *b) {
  uint32_t bits = loadU16(a);
  if (Two)
    bits |= uint32_t(loadU16(b)) << 16;
  return spreadPair(_mm_cvtph_ps(_mm_cvtsi32_si128(int(bits))));
}

/// The f32 values at p[0] and (if Two) p[1], spread over the two halves.
template <bool Two> RLX_UK_AVX512 inline __m512 floatPair(const uint8_t *p) {
  __m128 v =
      Two ? _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double *>(p)))
          : _mm_load_ss(reinterpret_cast<const float *>(p));
  return spreadPair(v);
}

/// The nibbles of blocks a and (if Two) b: elements 0..31 of a, then of b.
template <bool Two>
RLX_UK_AVX512 inline __m512i nibblePair(const uint8_t *qa, const uint8_t *qb) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(qa));
  const __m128i b = Two ? _mm_loadu_si128(reinterpret_cast<const __m128i *>(qb))
                        : _mm_setzero_si128();
  __m512i t = _mm512_castsi256_si512(_mm256_set_m128i(b, a));
  t = _mm512_shuffle_i64x2(t, t, 0x50); // a, a, b, b
  const long long s = 0x0004000400040004;
  t = _mm512_srlv_epi16(t, _mm512_set_epi64(s, s, 0, 0, s, s, 0, 0));
  return _mm512_and_si512(t, _mm512_set1_epi8(0xf));
}

/// 0x10 in byte j where bit j of the two blocks' qh words is set.
template <bool Two>
RLX_UK_AVX512 inline __m512i fifthPair(const uint8_t *ha, const uint8_t *hb) {
  uint64_t bits = loadU32(ha);
  if (Two)
    bits |= uint64_t(loadU32(hb)) << 32;
  return _mm512_maskz_mov_epi8(_cvtu64_mask64(bits), _mm512_set1_epi8(0x10));
}

/// Policies: codes<Two>(block) gives the codes of this block and (if Two)
/// the next one; see the Q32 policies in AVX2.cpp for the flags.
struct Q4_0 {
  static constexpr int64_t kBytes = 18;
  static constexpr int kOffset = 8;
  static constexpr bool kSigned = false, kMin = false;
  template <bool Two> RLX_UK_AVX512 static __m512i codes(const uint8_t *b) {
    return nibblePair<Two>(b + 2, b + kBytes + 2);
  }
};
struct Q4_1 {
  static constexpr int64_t kBytes = 20;
  static constexpr int kOffset = 0;
  static constexpr bool kSigned = false, kMin = true;
  template <bool Two> RLX_UK_AVX512 static __m512i codes(const uint8_t *b) {
    return nibblePair<Two>(b + 4, b + kBytes + 4);
  }
};
struct Q5_0 {
  static constexpr int64_t kBytes = 22;
  static constexpr int kOffset = 16;
  static constexpr bool kSigned = false, kMin = false;
  template <bool Two> RLX_UK_AVX512 static __m512i codes(const uint8_t *b) {
    return _mm512_or_si512(nibblePair<Two>(b + 6, b + kBytes + 6),
                           fifthPair<Two>(b + 2, b + kBytes + 2));
  }
};
struct Q5_1 {
  static constexpr int64_t kBytes = 24;
  static constexpr int kOffset = 0;
  static constexpr bool kSigned = false, kMin = true;
  template <bool Two> RLX_UK_AVX512 static __m512i codes(const uint8_t *b) {
    return _mm512_or_si512(nibblePair<Two>(b + 8, b + kBytes + 8),
                           fifthPair<Two>(b + 4, b + kBytes + 4));
  }
};
struct Q8_0 {
  static constexpr int64_t kBytes = 34;
  static constexpr int kOffset = 0;
  static constexpr bool kSigned = true, kMin = false;
  template <bool Two> RLX_UK_AVX512 static __m512i codes(const uint8_t *b) {
    return _mm512_inserti64x4(
        _mm512_castsi256_si512(load256(b + 2)),
        Two ? load256(b + kBytes + 2) : _mm256_setzero_si256(), 1);
  }
};

/// One step over blocks b and (if Two) b + 1 for the whole tile.
template <class P, int MR, int NR, bool Two>
RLX_UK_AVX512 inline void q32Step(const MatmulArgs &a,
                                  const uint8_t *const (&xr)[MR],
                                  const uint8_t *const (&wr)[NR], int64_t b,
                                  size_t prefetch, __m512 (&acc)[MR][NR]) {
  const __m512i zero = _mm512_setzero_si512();
  __m512i wq[NR], winit[NR];
  __m512 wd[NR], wm[NR];
  RLX_UK_UNROLL
  for (int j = 0; j != NR; ++j) {
    const uint8_t *blk = wr[j] + b * P::kBytes;
    if (prefetch) {
      _mm_prefetch(reinterpret_cast<const char *>(blk + prefetch), _MM_HINT_T0);
      if (2 * P::kBytes > 64)
        _mm_prefetch(reinterpret_cast<const char *>(blk + prefetch + 64),
                     _MM_HINT_T0);
    }
    wq[j] = P::template codes<Two>(blk);
    wd[j] = halfPair<Two>(blk, blk + P::kBytes);
    wm[j] = P::kMin ? halfPair<Two>(blk + 2, blk + P::kBytes + 2)
                    : _mm512_setzero_ps();
    winit[j] =
        P::kSigned
            ? _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(
                                         zero, _mm512_set1_epi8(-128), wq[j]))
            : zero;
  }
  RLX_UK_UNROLL
  for (int i = 0; i != MR; ++i) {
    const uint8_t *xq = xr[i] + 32 * b;
    const __m512i xv = Two ? load512(xq) : load256z(xq);
    const __m512 dx = floatPair<Two>(xr[i] + a.xdOffset + 4 * b);
    __m512i xinit = zero;
    __m512 sx = _mm512_setzero_ps();
    if constexpr (P::kOffset != 0)
      xinit = _mm512_sub_epi32(
          zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(P::kOffset), xv));
    if constexpr (P::kMin)
      sx = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(
                             zero, _mm512_set1_epi8(1), xv)),
                         dx);
    const __m512i xu =
        P::kSigned ? _mm512_xor_si512(xv, _mm512_set1_epi8(-128)) : xv;
    RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j) {
      const __m512i s = P::kSigned ? _mm512_dpbusd_epi32(winit[j], xu, wq[j])
                                   : _mm512_dpbusd_epi32(xinit, wq[j], xv);
      acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
                                  _mm512_mul_ps(wd[j], dx), acc[i][j]);
      if constexpr (P::kMin)
        acc[i][j] = _mm512_fmadd_ps(wm[j], sx, acc[i][j]);
    }
  }
}

template <class P> struct Q32Tile {
  template <int MR, int NR>
  RLX_UK_AVX512_FN static void run(const MatmulArgs &a, int64_t m, int64_t n) {
    const int64_t nb = a.K / 32;
    const uint8_t *xr[MR], *wr[NR];
    for (int i = 0; i != MR; ++i)
      xr[i] = a.x + (m + i) * a.xRowBytes;
    for (int j = 0; j != NR; ++j)
      wr[j] = a.w + (n + j) * a.wRowBytes;
    __m512 acc[MR][NR];
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      acc[i][j] = _mm512_setzero_ps();
    // Decoding (one row tile) streams the weights once: fetch the next
    // column tile's rows ahead.
    const size_t prefetch = a.M <= MR ? NR * a.wRowBytes : 0;
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2)
      q32Step<P, MR, NR, true>(a, xr, wr, b, prefetch, acc);
    if (b != nb)
      q32Step<P, MR, NR, false>(a, xr, wr, b, prefetch, acc);
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      a.y[(m + i) * a.ldy + n + j] = _mm512_reduce_add_ps(acc[i][j]);
  }
};

//===----------------------------------------------------------------------===//
// K-quants
//===----------------------------------------------------------------------===//

/// The K-quant policies with 64-element chunks: chunk64(b, C) gives the
/// codes of elements [64 C, 64 C + 64), read with 256-bit broadcasts and
/// per-half variable shifts (the chunks' two 32-element halves come from
/// the same bytes at different bit positions).
RLX_UK_AVX512 inline __m512i broadcast256(const uint8_t *p) {
  return _mm512_broadcast_i64x4(load256(p));
}
/// Shift counts: `lo` for the low 256 bits, `hi` for the high ones.
RLX_UK_AVX512 inline __m512i halves(long long lo, long long hi) {
  return _mm512_set_epi64(hi, hi, hi, hi, lo, lo, lo, lo);
}
/// Bit k of each byte (k = lo in the low half, hi in the high half) moved to
/// bit `to` (0x01 << to).
RLX_UK_AVX512 inline __m512i bitOf(const uint8_t *p, int lo, int hi, int to) {
  __m512i v = _mm512_srlv_epi64(broadcast256(p), halves(lo, hi));
  return _mm512_and_si512(_mm512_slli_epi16(v, to),
                          _mm512_set1_epi8(char(1 << to)));
}

struct Q2K512 : Q2KChunks {
  RLX_UK_AVX512 static __m512i chunk64(const uint8_t *b, int C) {
    const int u = C % 2;
    __m512i v = _mm512_srlv_epi64(broadcast256(b + kQs + 32 * (C / 2)),
                                  halves(4 * u, 4 * u + 2));
    return _mm512_and_si512(v, _mm512_set1_epi8(3));
  }
};
struct Q3K512 : Q3KChunks {
  RLX_UK_AVX512 static __m512i chunk64(const uint8_t *b, int C) {
    return _mm512_or_si512(Q2K512::chunk64(b + kQs - Q2KLayout::kQs, C),
                           bitOf(b + kHmask, 2 * C, 2 * C + 1, 2));
  }
};
struct Q4K512 : Q4KChunks {
  RLX_UK_AVX512 static __m512i chunk64(const uint8_t *b, int C) {
    __m512i v = _mm512_srlv_epi64(broadcast256(b + kQs + 32 * C), halves(0, 4));
    return _mm512_and_si512(v, _mm512_set1_epi8(0xf));
  }
};
struct Q5K512 : Q5KChunks {
  RLX_UK_AVX512 static __m512i chunk64(const uint8_t *b, int C) {
    __m512i v = _mm512_srlv_epi64(broadcast256(b + kQs + 32 * C), halves(0, 4));
    return _mm512_or_si512(_mm512_and_si512(v, _mm512_set1_epi8(0xf)),
                           bitOf(b + kQh, 2 * C, 2 * C + 1, 4));
  }
};
struct Q6K512 : Q6KChunks {
  RLX_UK_AVX512 static __m512i chunk64(const uint8_t *b, int C) {
    const int h = C / 2, u = C % 2;
    __m512i ql = load512(b + kQl + 64 * h);
    if (u)
      ql = _mm512_srli_epi16(ql, 4);
    __m512i hi = _mm512_srlv_epi64(broadcast256(b + kQh + 32 * h),
                                   halves(4 * u, 4 * u + 2));
    return _mm512_or_si512(
        _mm512_and_si512(ql, _mm512_set1_epi8(0xf)),
        _mm512_and_si512(_mm512_slli_epi16(hi, 4), _mm512_set1_epi8(0x30)));
  }
};

/// Per weight row of the tile and 256-element block: decode the four
/// 64-element code vectors and their scale vectors once, then for each
/// activation row S1 (vpmaddubsw + vpdpwssd), S2 and one f32 update.
template <class P> struct KQuantTile {
  template <int MR, int NR>
  RLX_UK_AVX512_FN static void run(const MatmulArgs &a, int64_t m, int64_t n) {
    const int64_t nb = a.K / 256;
    const uint8_t *xr[MR], *wr[NR];
    for (int i = 0; i != MR; ++i)
      xr[i] = a.x + (m + i) * a.xRowBytes;
    for (int j = 0; j != NR; ++j)
      wr[j] = a.w + (n + j) * a.wRowBytes;
    __m512 acc[MR][NR];
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      acc[i][j] = _mm512_setzero_ps();
    // Lane l of the scale vector of chunk C reads group 4C + l / 8.
    __m512i group[4];
    for (int c = 0; c != 4; ++c)
      group[c] = _mm512_set_epi64(0x0003000300030003 + c * 0x0004000400040004,
                                  0x0003000300030003 + c * 0x0004000400040004,
                                  0x0002000200020002 + c * 0x0004000400040004,
                                  0x0002000200020002 + c * 0x0004000400040004,
                                  0x0001000100010001 + c * 0x0004000400040004,
                                  0x0001000100010001 + c * 0x0004000400040004,
                                  0x0000000000000000 + c * 0x0004000400040004,
                                  0x0000000000000000 + c * 0x0004000400040004);

    // Decoding (one row tile) streams the weights once: fetch the next
    // column tile's rows ahead.
    const size_t prefetch = a.M <= MR ? NR * a.wRowBytes : 0;
    for (int64_t b = 0; b != nb; ++b) {
      float dx[MR];
      for (int i = 0; i != MR; ++i)
        dx[i] = loadF32(xr[i] + a.xdOffset + 4 * b);
      RLX_UK_UNROLL
      for (int j = 0; j != NR; ++j) {
        const uint8_t *blk = wr[j] + b * P::kBytes;
        if (prefetch)
          for (int l = 0; l < P::kBytes; l += 64)
            _mm_prefetch(reinterpret_cast<const char *>(blk + prefetch + l),
                         _MM_HINT_T0);
        __m256i scale, coef;
        P::scaleVectors(blk, scale, coef);
        const __m512i scales = _mm512_castsi256_si512(scale);
        __m512i q[4], sc[4];
        RLX_UK_UNROLL
        for (int c = 0; c != 4; ++c) {
          q[c] = P::chunk64(blk, c);
          sc[c] = _mm512_permutexvar_epi16(group[c], scales);
        }
        const __m512 d = _mm512_set1_ps(half(blk + P::kD));
        // dmin * coef as f32, one lane per 16-element group.
        const __m512 mins =
            _mm512_mul_ps(_mm512_set1_ps(half(blk + P::kDmin)),
                          _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(coef)));
        // The MR dot chains interleaved, so that they overlap.
        __m512i s[MR];
        RLX_UK_UNROLL
        for (int i = 0; i != MR; ++i)
          s[i] = _mm512_setzero_si512();
        RLX_UK_UNROLL
        for (int c = 0; c != 4; ++c)
          RLX_UK_UNROLL
        for (int i = 0; i != MR; ++i)
          s[i] = _mm512_dpwssd_epi32(
              s[i],
              _mm512_maddubs_epi16(q[c], load512(xr[i] + 256 * b + 64 * c)),
              sc[c]);
        RLX_UK_UNROLL
        for (int i = 0; i != MR; ++i) {
          const float *xsum =
              reinterpret_cast<const float *>(xr[i] + a.xsOffset + 64 * b);
          acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[i]),
                                      _mm512_mul_ps(d, _mm512_set1_ps(dx[i])),
                                      acc[i][j]);
          acc[i][j] = _mm512_fnmadd_ps(mins, _mm512_loadu_ps(xsum), acc[i][j]);
        }
      }
    }
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      a.y[(m + i) * a.ldy + n + j] = _mm512_reduce_add_ps(acc[i][j]);
  }
};

//===----------------------------------------------------------------------===//
// f16 and bf16
//===----------------------------------------------------------------------===//

/// bf16 to f32: the bits in the upper half.
RLX_UK_AVX512 inline __m512 widenBF16(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/// Sixteen elements at element offset k of a weight row (f16 or bf16) or an
/// activation row (f32 or bf16), the first `mask` lanes only.
template <bool Half>
RLX_UK_AVX512 inline __m512 weights16(const uint8_t *row, int64_t k,
                                      __mmask16 mask) {
  const __m256i h = _mm256_maskz_loadu_epi16(mask, row + 2 * k);
  return Half ? _mm512_cvtph_ps(h) : widenBF16(h);
}
template <bool Half>
RLX_UK_AVX512 inline __m512 acts16(const uint8_t *row, int64_t k,
                                   __mmask16 mask) {
  if (Half)
    return _mm512_maskz_loadu_ps(mask, row + 4 * k);
  return widenBF16(_mm256_maskz_loadu_epi16(mask, row + 2 * k));
}

/// `Half`: f16 weights against f32 activations; otherwise bf16 against bf16
/// without AVX512_BF16. Sixteen f32 lanes per output; the tail through
/// masked loads in the same loop (so the accumulators stay in registers).
template <bool Half> struct FloatTile {
  template <int MR, int NR>
  RLX_UK_AVX512_FN static void run(const MatmulArgs &a, int64_t m, int64_t n) {
    const uint8_t *xr[MR], *wr[NR];
    for (int i = 0; i != MR; ++i)
      xr[i] = a.x + (m + i) * a.xRowBytes;
    for (int j = 0; j != NR; ++j)
      wr[j] = a.w + (n + j) * a.wRowBytes;
    __m512 acc[MR][NR];
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      acc[i][j] = _mm512_setzero_ps();
    for (int64_t k = 0; k < a.K; k += 16) {
      const __mmask16 mask =
          a.K - k >= 16 ? __mmask16(0xffff) : __mmask16((1u << (a.K - k)) - 1);
      __m512 wv[NR];
      RLX_UK_UNROLL
      for (int j = 0; j != NR; ++j)
        wv[j] = weights16<Half>(wr[j], k, mask);
      RLX_UK_UNROLL
      for (int i = 0; i != MR; ++i) {
        const __m512 xv = acts16<Half>(xr[i], k, mask);
        RLX_UK_UNROLL
        for (int j = 0; j != NR; ++j)
          acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
      }
    }
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      a.y[(m + i) * a.ldy + n + j] = _mm512_reduce_add_ps(acc[i][j]);
  }
};

/// bf16 against bf16 with vdpbf16ps: 32 products per instruction, pairs
/// summed into sixteen f32 lanes; masked tail.
struct BF16DotTile {
  template <int MR, int NR>
  RLX_UK_AVX512BF16_FN static void run(const MatmulArgs &a, int64_t m,
                                       int64_t n) {
    const uint8_t *xr[MR], *wr[NR];
    for (int i = 0; i != MR; ++i)
      xr[i] = a.x + (m + i) * a.xRowBytes;
    for (int j = 0; j != NR; ++j)
      wr[j] = a.w + (n + j) * a.wRowBytes;
    __m512 acc[MR][NR];
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      acc[i][j] = _mm512_setzero_ps();
    for (int64_t k = 0; k < a.K; k += 32) {
      const __mmask32 mask = a.K - k >= 32 ? __mmask32(0xffffffffu)
                                           : __mmask32((1u << (a.K - k)) - 1);
      __m512i wv[NR];
      RLX_UK_UNROLL
      for (int j = 0; j != NR; ++j)
        wv[j] = _mm512_maskz_loadu_epi16(mask, wr[j] + 2 * k);
      RLX_UK_UNROLL
      for (int i = 0; i != MR; ++i) {
        const __m512i xv = _mm512_maskz_loadu_epi16(mask, xr[i] + 2 * k);
        RLX_UK_UNROLL
        for (int j = 0; j != NR; ++j)
          acc[i][j] =
              _mm512_dpbf16_ps(acc[i][j], (__m512bh)xv, (__m512bh)wv[j]);
      }
    }
    RLX_UK_UNROLL
    for (int i = 0; i != MR; ++i)
      RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j)
      a.y[(m + i) * a.ldy + n + j] = _mm512_reduce_add_ps(acc[i][j]);
  }
};

} // namespace

MatmulFn rlx::uk::avx512Kernel(int wtype, bool hasBF16) {
  switch (wtype) {
  case RLX_UK_Q4_0:
    return drive<Q32Tile<Q4_0>, 6, 4>;
  case RLX_UK_Q4_1:
    return drive<Q32Tile<Q4_1>, 6, 4>;
  case RLX_UK_Q5_0:
    return drive<Q32Tile<Q5_0>, 6, 4>;
  case RLX_UK_Q5_1:
    return drive<Q32Tile<Q5_1>, 6, 4>;
  case RLX_UK_Q8_0:
    return drive<Q32Tile<Q8_0>, 6, 4>;
  case RLX_UK_Q2_K:
    return drive<KQuantTile<Q2K512>, 8, 2>;
  case RLX_UK_Q3_K:
    return drive<KQuantTile<Q3K512>, 8, 2>;
  case RLX_UK_Q4_K:
    return drive<KQuantTile<Q4K512>, 8, 2>;
  case RLX_UK_Q5_K:
    return drive<KQuantTile<Q5K512>, 8, 2>;
  case RLX_UK_Q6_K:
    return drive<KQuantTile<Q6K512>, 8, 2>;
  case RLX_UK_F16:
    return drive<FloatTile<true>, 6, 4>;
  case RLX_UK_BF16:
    if (hasBF16)
      return drive<BF16DotTile, 8, 3>;
    return drive<FloatTile<false>, 6, 4>;
  default:
    return nullptr;
  }
}

#else

rlx::uk::MatmulFn rlx::uk::avx512Kernel(int, bool) { return nullptr; }

#endif
