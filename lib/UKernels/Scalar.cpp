//===- Scalar.cpp - Portable micro-kernels --------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The scalar kernels: plain C++ for any host, and the numerical reference of
// the vector kernels. Quantized products sum codes times prepared int8
// activations exactly in integers per block, then scale once per block in
// f32, as the vector kernels do; the f16/bf16 products accumulate in sixteen
// interleaved f32 partial sums (the vector kernels' lanes).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <cstring>

using namespace rlx::uk;

namespace {

/// Rows of activations handled per pass over a weight row.
constexpr int64_t kRowChunk = 16;

//===----------------------------------------------------------------------===//
// 32-element formats
//===----------------------------------------------------------------------===//

/// One decoded 32-element block: w = d * v + m.
struct Q32Block {
  int v[32];
  float d;
  float m;
};

/// Low nibbles are elements 0..15, high nibbles 16..31; `fifth` adds bit j
/// of `qh` as bit 4 of element j.
void nibbles(const uint8_t *qs, uint32_t qh, bool fifth, int offset,
             int v[32]) {
  for (int j = 0; j != 16; ++j) {
    int lo = qs[j] & 0xf, hi = qs[j] >> 4;
    if (fifth) {
      lo |= int((qh >> j) & 1) << 4;
      hi |= int((qh >> (j + 16)) & 1) << 4;
    }
    v[j] = lo - offset;
    v[j + 16] = hi - offset;
  }
}

struct Q4_0 {
  static constexpr int kCode = RLX_UK_Q4_0;
  static constexpr int64_t kBytes = 18;
  static void decode(const uint8_t *b, Q32Block &q) {
    q.d = halfToFloat(loadU16(b));
    q.m = 0;
    nibbles(b + 2, 0, false, 8, q.v);
  }
};
struct Q4_1 {
  static constexpr int64_t kBytes = 20;
  static void decode(const uint8_t *b, Q32Block &q) {
    q.d = halfToFloat(loadU16(b));
    q.m = halfToFloat(loadU16(b + 2));
    nibbles(b + 4, 0, false, 0, q.v);
  }
};
struct Q5_0 {
  static constexpr int64_t kBytes = 22;
  static void decode(const uint8_t *b, Q32Block &q) {
    q.d = halfToFloat(loadU16(b));
    q.m = 0;
    nibbles(b + 6, loadU32(b + 2), true, 16, q.v);
  }
};
struct Q5_1 {
  static constexpr int64_t kBytes = 24;
  static void decode(const uint8_t *b, Q32Block &q) {
    q.d = halfToFloat(loadU16(b));
    q.m = halfToFloat(loadU16(b + 2));
    nibbles(b + 8, loadU32(b + 4), true, 0, q.v);
  }
};
struct Q8_0 {
  static constexpr int kCode = RLX_UK_Q8_0;
  static constexpr int64_t kBytes = 34;
  static void decode(const uint8_t *b, Q32Block &q) {
    q.d = halfToFloat(loadU16(b));
    q.m = 0;
    for (int j = 0; j != 32; ++j)
      q.v[j] = int8_t(b[2 + j]);
  }
};

template <class F> void q32Kernel(const MatmulArgs &a) {
  const int64_t nb = a.K / 32;
  for (int64_t n = 0; n != a.N; ++n) {
    const uint8_t *wr = a.w + n * a.wRowBytes;
    for (int64_t m0 = 0; m0 < a.M; m0 += kRowChunk) {
      const int64_t mr = std::min(kRowChunk, a.M - m0);
      float acc[kRowChunk] = {};
      for (int64_t b = 0; b != nb; ++b) {
        Q32Block q;
        F::decode(wr + b * F::kBytes, q);
        for (int64_t r = 0; r != mr; ++r) {
          const uint8_t *row = a.x + (m0 + r) * a.xRowBytes;
          int8_t xq[32];
          std::memcpy(xq, row + q8x32Offset(32 * b), 16);
          std::memcpy(xq + 16, row + q8x32Offset(32 * b + 16), 16);
          const float dx = loadF32(row + a.xdOffset + 4 * b);
          int dot = 0, sum = 0;
          for (int j = 0; j != 32; ++j) {
            dot += q.v[j] * xq[j];
            sum += xq[j];
          }
          acc[r] += (q.d * dx) * float(dot);
          if (q.m != 0)
            acc[r] += (q.m * dx) * float(sum);
        }
      }
      for (int64_t r = 0; r != mr; ++r)
        a.y[(m0 + r) * a.ldy + n] = acc[r];
    }
  }
}

/// Repacked weights (see Internal.h): per group of 8 columns, each block of
/// each row is gathered back from its superblock and multiplied as
/// q32Kernel does, so that the result is q32Kernel's, bit for bit.
template <class F> void q32x8Kernel(const MatmulArgs &a) {
  const int64_t nb = a.K / 32;
  for (int64_t n0 = 0; n0 < a.N; n0 += 8) {
    const uint8_t *group = a.w + n0 * a.wRowBytes;
    for (int64_t m0 = 0; m0 < a.M; m0 += kRowChunk) {
      const int64_t mr = std::min(kRowChunk, a.M - m0);
      float acc[kRowChunk][8] = {};
      for (int64_t b = 0; b != nb; ++b) {
        const uint8_t *sb = group + b * 8 * F::kBytes;
        for (int r = 0; r != 8; ++r) {
          uint8_t blk[F::kBytes];
          for (int i = 0; i != int(F::kBytes); ++i)
            blk[i] = sb[repackedOffset(F::kCode, int(F::kBytes), r, i)];
          Q32Block q;
          F::decode(blk, q);
          for (int64_t i = 0; i != mr; ++i) {
            const uint8_t *row = a.x + (m0 + i) * a.xRowBytes;
            int8_t xq[32];
            std::memcpy(xq, row + q8x32Offset(32 * b), 16);
            std::memcpy(xq + 16, row + q8x32Offset(32 * b + 16), 16);
            const float dx = loadF32(row + a.xdOffset + 4 * b);
            int dot = 0;
            for (int j = 0; j != 32; ++j)
              dot += q.v[j] * xq[j];
            acc[i][r] += (q.d * dx) * float(dot);
          }
        }
      }
      for (int64_t i = 0; i != mr; ++i)
        for (int r = 0; r != 8; ++r)
          a.y[(m0 + i) * a.ldy + n0 + r] = acc[i][r];
    }
  }
}

//===----------------------------------------------------------------------===//
// K-quants
//===----------------------------------------------------------------------===//

/// One 256-element block's contribution to an output: the decoded codes `q`
/// with scales `ks` against prepared row `row`'s block `b`.
float kquantBlockDot(const MatmulArgs &a, const KScales &ks, const uint8_t *q,
                     const uint8_t *row, int64_t b) {
  const float d = halfToFloat(ks.d), dmin = halfToFloat(ks.dmin);
  const int8_t *xq = reinterpret_cast<const int8_t *>(row) + 256 * b;
  const float dx = loadF32(row + a.xdOffset + 4 * b);
  const uint8_t *xsum = row + a.xsOffset + 64 * b;
  int s1 = 0;
  float s2 = 0;
  for (int g = 0; g != 16; ++g) {
    int dot = 0;
    for (int i = 16 * g; i != 16 * g + 16; ++i)
      dot += q[i] * xq[i];
    s1 += ks.scale[g] * dot;
    s2 += float(ks.coef[g]) * loadF32(xsum + 4 * g);
  }
  return (d * dx) * float(s1) - dmin * s2;
}

template <class L, void (*Unpack)(const uint8_t *, int, uint8_t *)>
void kquantKernel(const MatmulArgs &a) {
  const int64_t nb = a.K / 256;
  for (int64_t n = 0; n != a.N; ++n) {
    const uint8_t *wr = a.w + n * a.wRowBytes;
    for (int64_t m0 = 0; m0 < a.M; m0 += kRowChunk) {
      const int64_t mr = std::min(kRowChunk, a.M - m0);
      float acc[kRowChunk] = {};
      for (int64_t b = 0; b != nb; ++b) {
        const uint8_t *blk = wr + b * L::kBytes;
        KScales ks;
        L::scales(blk, ks);
        uint8_t q[256];
        for (int c = 0; c != 8; ++c)
          Unpack(blk, c, q + 32 * c);
        for (int64_t r = 0; r != mr; ++r)
          acc[r] += kquantBlockDot(a, ks, q, a.x + (m0 + r) * a.xRowBytes, b);
      }
      for (int64_t r = 0; r != mr; ++r)
        a.y[(m0 + r) * a.ldy + n] = acc[r];
    }
  }
}

/// Repacked K-quants (q4_K, q5_K and q6_K, code `Code`, see Internal.h): per
/// group of 8 columns, each block of each row is gathered back from its
/// superblock and multiplied as kquantKernel does (bit for bit the same
/// result).
template <class L, void (*Unpack)(const uint8_t *, int, uint8_t *), int Code>
void kquantx8Kernel(const MatmulArgs &a) {
  const int64_t nb = a.K / 256;
  for (int64_t n0 = 0; n0 < a.N; n0 += 8) {
    const uint8_t *group = a.w + n0 * a.wRowBytes;
    for (int64_t m0 = 0; m0 < a.M; m0 += kRowChunk) {
      const int64_t mr = std::min(kRowChunk, a.M - m0);
      float acc[kRowChunk][8] = {};
      for (int64_t b = 0; b != nb; ++b) {
        const uint8_t *sb = group + b * 8 * L::kBytes;
        for (int r = 0; r != 8; ++r) {
          uint8_t blk[L::kBytes];
          for (int i = 0; i != L::kBytes; ++i)
            blk[i] = sb[repackedOffset(Code, L::kBytes, r, i)];
          KScales ks;
          L::scales(blk, ks);
          uint8_t q[256];
          for (int c = 0; c != 8; ++c)
            Unpack(blk, c, q + 32 * c);
          for (int64_t i = 0; i != mr; ++i)
            acc[i][r] +=
                kquantBlockDot(a, ks, q, a.x + (m0 + i) * a.xRowBytes, b);
        }
      }
      for (int64_t i = 0; i != mr; ++i)
        for (int r = 0; r != 8; ++r)
          a.y[(m0 + i) * a.ldy + n0 + r] = acc[i][r];
    }
  }
}

//===----------------------------------------------------------------------===//
// f16 and bf16
//===----------------------------------------------------------------------===//

/// `Half` selects f16 weights against f32 activations; otherwise bf16
/// weights against bf16 activations.
template <bool Half> void floatKernel(const MatmulArgs &a) {
  constexpr int kLanes = 16;
  for (int64_t n = 0; n != a.N; ++n) {
    const uint8_t *wr = a.w + n * a.wRowBytes;
    for (int64_t m = 0; m != a.M; ++m) {
      const uint8_t *xr = a.x + m * a.xRowBytes;
      float lanes[kLanes] = {};
      for (int64_t k = 0; k != a.K; ++k) {
        float wv, xv;
        if (Half) {
          wv = halfToFloat(loadU16(wr + 2 * k));
          xv = loadF32(xr + 4 * k);
        } else {
          wv = bf16ToFloat(loadU16(wr + 2 * k));
          xv = bf16ToFloat(loadU16(xr + 2 * k));
        }
        lanes[k % kLanes] += wv * xv;
      }
      float sum = 0;
      for (float l : lanes)
        sum += l;
      a.y[m * a.ldy + n] = sum;
    }
  }
}

/// Repacked f16 / bf16 (see Internal.h): floatKernel's sums, in its order,
/// with each weight read from its place in the group (and bf16 activations
/// as the f32 they were prepared as): its result bit for bit.
template <bool Half> void floatx8Kernel(const MatmulArgs &a) {
  constexpr int kLanes = 16;
  for (int64_t n = 0; n != a.N; ++n) {
    const uint8_t *group = a.w + (n / 8) * 8 * a.wRowBytes;
    const int r = int(n % 8);
    for (int64_t m = 0; m != a.M; ++m) {
      const uint8_t *xr = a.x + m * a.xRowBytes;
      float lanes[kLanes] = {};
      for (int64_t k = 0; k != a.K; ++k) {
        const uint16_t wh = loadU16(group + repackedFloatOffset(a.K, r, k));
        const float wv = Half ? halfToFloat(wh) : bf16ToFloat(wh);
        lanes[k % kLanes] += wv * loadF32(xr + 4 * k);
      }
      float sum = 0;
      for (float l : lanes)
        sum += l;
      a.y[m * a.ldy + n] = sum;
    }
  }
}

} // namespace

MatmulFn rlx::uk::scalarKernel(int wtype) {
  switch (wtype) {
  case RLX_UK_Q4_0:
    return q32Kernel<Q4_0>;
  case RLX_UK_Q4_1:
    return q32Kernel<Q4_1>;
  case RLX_UK_Q5_0:
    return q32Kernel<Q5_0>;
  case RLX_UK_Q5_1:
    return q32Kernel<Q5_1>;
  case RLX_UK_Q8_0:
    return q32Kernel<Q8_0>;
  case RLX_UK_Q4_0 | RLX_UK_REPACKED_X8:
    return q32x8Kernel<Q4_0>;
  case RLX_UK_Q8_0 | RLX_UK_REPACKED_X8:
    return q32x8Kernel<Q8_0>;
  case RLX_UK_Q4_K | RLX_UK_REPACKED_X8:
    return kquantx8Kernel<Q4KLayout, unpackQ4K, RLX_UK_Q4_K>;
  case RLX_UK_Q5_K | RLX_UK_REPACKED_X8:
    return kquantx8Kernel<Q5KLayout, unpackQ5K, RLX_UK_Q5_K>;
  case RLX_UK_Q6_K | RLX_UK_REPACKED_X8:
    return kquantx8Kernel<Q6KLayout, unpackQ6K, RLX_UK_Q6_K>;
  case RLX_UK_F16 | RLX_UK_REPACKED_X8:
    return floatx8Kernel<true>;
  case RLX_UK_BF16 | RLX_UK_REPACKED_X8:
    return floatx8Kernel<false>;
  case RLX_UK_Q2_K:
    return kquantKernel<Q2KLayout, unpackQ2K>;
  case RLX_UK_Q3_K:
    return kquantKernel<Q3KLayout, unpackQ3K>;
  case RLX_UK_Q4_K:
    return kquantKernel<Q4KLayout, unpackQ4K>;
  case RLX_UK_Q5_K:
    return kquantKernel<Q5KLayout, unpackQ5K>;
  case RLX_UK_Q6_K:
    return kquantKernel<Q6KLayout, unpackQ6K>;
  case RLX_UK_F16:
    return floatKernel<true>;
  case RLX_UK_BF16:
    return floatKernel<false>;
  default:
    return nullptr;
  }
}
