//===- AVX512.cpp - AVX-512 (VNNI, BF16) micro-kernels --------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Kernels for AVX-512 F/BW/VL/DQ with VNNI (and vdpbf16ps where AVX512_BF16
// is present). This Zen 5 issues about two 512-bit vector operations per
// cycle whatever their kind (FMA, vpdpbusd, vpmaddubsw, converts; shuffles
// count about double), so the kernels minimize operations per product.
//
// 32-element formats, on groups of four blocks (the prepared layout,
// q8x32Offset): a vector holds elements 0..15 of four blocks, another their
// elements 16..31, so two vpdpbusd complete four blocks with four int32
// lanes each; one convert and one FMA then apply d_w * d_x per output and
// group. vpdpbusd multiplies unsigned by signed bytes: the unsigned codes
// (q4_0, q5_0, q4_1, q5_1) multiply the signed activations and the offset
// enters as the start value -offset * (lane sums of x, prepared); q8_0's
// signed codes multiply x + 128 (x ^ 0x80) from the start value
// -128 * (lane sums of w). q4_1 and q5_1 add m * d_x * (lane sums) with one
// more FMA.
//
// K-quants: vpmaddubsw (codes times activations, pairs to int16) and
// vpdpwssd (times the per-16 scales, to int32) accumulate S1 over a whole
// 256-element block; the minimum is one FMA of dmin * coef against the
// prepared f32 16-element sums.
//
// f16 / bf16: widened to f32 for FMAs, or vdpbf16ps on bf16 pairs.
//
// Every kernel is an MR x NR register tile (MR activation rows, NR weight
// rows) over the whole of K; drive() covers the output with such tiles,
// panel by panel of activation rows. With one row tile (decoding) each
// weight byte is read once, and the next tile's rows are prefetched.
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

/// Runs Tile::run<MR, NR> over the output, with smaller tiles at the edges,
/// one panel of activation rows (that stays in L2) at a time.
template <class Tile, int MR, int NR>
RLX_UK_AVX512_FN void drive(const MatmulArgs &a) {
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

RLX_UK_AVX512 inline __m512i load512(const void *p) {
  return _mm512_loadu_si512(p);
}

//===----------------------------------------------------------------------===//
// 32-element formats
//===----------------------------------------------------------------------===//

/// Four 16-byte pieces at p + stride * j (j < n; zero for j >= n) as one
/// vector, piece j in bits 128 j.
RLX_UK_AVX512 inline __m512i gather4x16(const uint8_t *p, int64_t stride,
                                        int n) {
  const __m128i zero = _mm_setzero_si128();
  __m512i v = _mm512_castsi128_si512(
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  v = _mm512_inserti32x4(
      v,
      n > 1 ? _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + stride))
            : zero,
      1);
  v = _mm512_inserti32x4(
      v,
      n > 2 ? _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 2 * stride))
            : zero,
      2);
  v = _mm512_inserti32x4(
      v,
      n > 3 ? _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 3 * stride))
            : zero,
      3);
  return v;
}

/// The f16 values at p + stride * j (j < n; zero beyond), each in four
/// consecutive lanes.
RLX_UK_AVX512 inline __m512 halves4(const uint8_t *p, int64_t stride, int n) {
  uint64_t bits = loadU16(p);
  for (int j = 1; j < n; ++j)
    bits |= uint64_t(loadU16(p + stride * j)) << (16 * j);
  const __m128 v = _mm_cvtph_ps(_mm_cvtsi64_si128(int64_t(bits)));
  const __m512i idx =
      _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v));
}

/// 0x10 in the bytes of lo (elements 0..15 of each block) and hi (16..31)
/// whose element has its fifth bit set in the block's qh word at
/// p + stride * j.
RLX_UK_AVX512 inline void fifthBits4(const uint8_t *p, int64_t stride, int n,
                                     __m512i &lo, __m512i &hi) {
  uint64_t klo = 0, khi = 0;
  for (int j = 0; j < n; ++j) {
    const uint64_t qh = loadU32(p + stride * j);
    klo |= (qh & 0xffff) << (16 * j);
    khi |= (qh >> 16) << (16 * j);
  }
  const __m512i bit = _mm512_set1_epi8(0x10);
  lo = _mm512_maskz_mov_epi8(_cvtu64_mask64(klo), bit);
  hi = _mm512_maskz_mov_epi8(_cvtu64_mask64(khi), bit);
}

/// Low and high nibbles of four blocks' 16 code bytes at p + stride * j.
RLX_UK_AVX512 inline void nibbles4(const uint8_t *p, int64_t stride, int n,
                                   __m512i &lo, __m512i &hi) {
  const __m512i v = gather4x16(p, stride, n);
  const __m512i mask = _mm512_set1_epi8(0xf);
  lo = _mm512_and_si512(v, mask);
  hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
}

/// Policies: codes(p, n, lo, hi) gives the codes of blocks p, p + kBytes,
/// ... (n of them, at most four), elements 0..15 of each in `lo` and 16..31
/// in `hi` (the prepared activations' order); kOffsetShift, kSigned and kMin
/// as in AVX2.cpp.
struct Q4_0 {
  static constexpr int64_t kBytes = 18;
  static constexpr int kOffsetShift = 3; // offset 8
  static constexpr bool kSigned = false, kMin = false;
  RLX_UK_AVX512 static void codes(const uint8_t *p, int n, __m512i &lo,
                                  __m512i &hi) {
    nibbles4(p + 2, kBytes, n, lo, hi);
  }
};
struct Q4_1 {
  static constexpr int64_t kBytes = 20;
  static constexpr int kOffsetShift = -1;
  static constexpr bool kSigned = false, kMin = true;
  RLX_UK_AVX512 static void codes(const uint8_t *p, int n, __m512i &lo,
                                  __m512i &hi) {
    nibbles4(p + 4, kBytes, n, lo, hi);
  }
};
struct Q5_0 {
  static constexpr int64_t kBytes = 22;
  static constexpr int kOffsetShift = 4; // offset 16
  static constexpr bool kSigned = false, kMin = false;
  RLX_UK_AVX512 static void codes(const uint8_t *p, int n, __m512i &lo,
                                  __m512i &hi) {
    __m512i flo, fhi;
    nibbles4(p + 6, kBytes, n, lo, hi);
    fifthBits4(p + 2, kBytes, n, flo, fhi);
    lo = _mm512_or_si512(lo, flo);
    hi = _mm512_or_si512(hi, fhi);
  }
};
struct Q5_1 {
  static constexpr int64_t kBytes = 24;
  static constexpr int kOffsetShift = -1;
  static constexpr bool kSigned = false, kMin = true;
  RLX_UK_AVX512 static void codes(const uint8_t *p, int n, __m512i &lo,
                                  __m512i &hi) {
    __m512i flo, fhi;
    nibbles4(p + 8, kBytes, n, lo, hi);
    fifthBits4(p + 4, kBytes, n, flo, fhi);
    lo = _mm512_or_si512(lo, flo);
    hi = _mm512_or_si512(hi, fhi);
  }
};
struct Q8_0 {
  static constexpr int64_t kBytes = 34;
  static constexpr int kOffsetShift = -1;
  static constexpr bool kSigned = true, kMin = false;
  RLX_UK_AVX512 static void codes(const uint8_t *p, int n, __m512i &lo,
                                  __m512i &hi) {
    lo = gather4x16(p + 2, kBytes, n);
    hi = gather4x16(p + 18, kBytes, n);
  }
};

/// One group of four blocks (`cnt` of them present) for the whole tile: for
/// each weight row the codes (two vectors, elements 0..15 and 16..31 of the
/// four blocks), the scales spread to four lanes each, and q8_0's start
/// value; for each activation row the two code vectors, its scales and its
/// start value (-offset * lane sums); then per output two vpdpbusd, one
/// convert and one FMA with d_w * d_x.
template <class P, int MR, int NR>
RLX_UK_AVX512 inline void
q32Group(const MatmulArgs &a, const uint8_t *const (&xr)[MR],
         const uint8_t *const (&wr)[NR], int64_t g, int cnt, size_t prefetch,
         __m512 (&acc)[MR][NR]) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i spread4 =
      _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  __m512i wlo[NR], whi[NR], winit[NR];
  __m512 wd[NR], wm[NR];
  RLX_UK_UNROLL
  for (int j = 0; j != NR; ++j) {
    const uint8_t *p = wr[j] + 4 * g * P::kBytes;
    if (prefetch)
      for (int l = 0; l < 4 * P::kBytes; l += 64)
        _mm_prefetch(reinterpret_cast<const char *>(p + prefetch + l),
                     _MM_HINT_T0);
    P::codes(p, cnt, wlo[j], whi[j]);
    wd[j] = halves4(p, P::kBytes, cnt);
    wm[j] = P::kMin ? halves4(p + 2, P::kBytes, cnt) : _mm512_setzero_ps();
    // q8_0: x is biased by 128, so start from -128 * (sum of w).
    winit[j] = zero;
    if constexpr (P::kSigned) {
      const __m512i bias = _mm512_set1_epi8(-128);
      winit[j] = _mm512_sub_epi32(
          zero, _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, bias, wlo[j]),
                                    bias, whi[j]));
    }
  }
  RLX_UK_UNROLL
  for (int i = 0; i != MR; ++i) {
    const uint8_t *xq = xr[i] + 128 * g;
    __m512i xlo = load512(xq), xhi = load512(xq + 64);
    const __m512 dx = _mm512_permutexvar_ps(
        spread4,
        _mm512_castps128_ps512(_mm_loadu_ps(
            reinterpret_cast<const float *>(xr[i] + a.xdOffset) + 4 * g)));
    const __m512i sums = load512(xr[i] + a.xsOffset + 64 * g);
    __m512i xinit = zero;
    __m512 sx = _mm512_setzero_ps();
    if constexpr (P::kOffsetShift >= 0)
      xinit = _mm512_sub_epi32(zero, _mm512_slli_epi32(sums, P::kOffsetShift));
    if constexpr (P::kMin)
      sx = _mm512_mul_ps(_mm512_cvtepi32_ps(sums), dx);
    if constexpr (P::kSigned) {
      const __m512i bias = _mm512_set1_epi8(-128);
      xlo = _mm512_xor_si512(xlo, bias);
      xhi = _mm512_xor_si512(xhi, bias);
    }
    RLX_UK_UNROLL
    for (int j = 0; j != NR; ++j) {
      __m512i s;
      if constexpr (P::kSigned)
        s = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(winit[j], xlo, wlo[j]), xhi,
                                whi[j]);
      else
        s = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(xinit, wlo[j], xlo), whi[j],
                                xhi);
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
    int64_t g = 0;
    for (; 4 * g + 4 <= nb; ++g)
      q32Group<P, MR, NR>(a, xr, wr, g, 4, prefetch, acc);
    if (4 * g != nb)
      q32Group<P, MR, NR>(a, xr, wr, g, int(nb - 4 * g), prefetch, acc);
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
/// activation row S1 (vpmaddubsw + vpdpwssd) and two FMAs: d * dx * S1 and
/// the minimum's dot product with the prepared sums.
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
    return drive<Q32Tile<Q8_0>, 8, 3>;
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
