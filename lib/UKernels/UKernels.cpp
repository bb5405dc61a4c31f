//===- UKernels.cpp - The C interface, activation preparation, dispatch ---===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Argument checks, the one-time choice of instruction set (cpuid through
// __builtin_cpu_supports, or the one rlx_uk_select_isa names), the
// activation rounding (ISA-independent, so a prepared buffer means the same
// under every instruction set) and the dispatch to the kernels.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>

using namespace rlx::uk;

namespace {

//===----------------------------------------------------------------------===//
// Instruction sets
//===----------------------------------------------------------------------===//

/// The instruction-set levels, in increasing order.
enum Level : int {
  kScalar = 0,
  kAVX2 = 1,
  /// AVX-512 (with VNNI), bf16 weights widened to f32 for FMAs.
  kAVX512 = 2,
  /// The same with vdpbf16ps for bf16 weights.
  kAVX512BF16 = 3,
};

/// The chosen level, or -1 before the first use.
std::atomic<int> chosenLevel{-1};

#if defined(__x86_64__) || defined(__i386__)
bool cpuHasAVX2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
}
bool cpuHasAVX512() {
  return cpuHasAVX2() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vnni");
}
bool cpuHasBF16() {
  return cpuHasAVX512() && __builtin_cpu_supports("avx512bf16");
}
#else
bool cpuHasAVX2() { return false; }
bool cpuHasAVX512() { return false; }
bool cpuHasBF16() { return false; }
#endif

/// The level named `name` as this CPU runs it, or -1 if the name is unknown
/// or the CPU lacks the instruction set.
int levelNamed(const char *name) {
  if (!name)
    return -1;
  if (!std::strcmp(name, "scalar"))
    return kScalar;
  if (!std::strcmp(name, "avx2"))
    return cpuHasAVX2() ? kAVX2 : -1;
  if (!std::strcmp(name, "avx512"))
    return cpuHasAVX512() ? (cpuHasBF16() ? kAVX512BF16 : kAVX512) : -1;
  if (!std::strcmp(name, "avx512-nobf16"))
    return cpuHasAVX512() ? kAVX512 : -1;
  return -1;
}

int bestLevel() {
  if (cpuHasAVX512())
    return cpuHasBF16() ? kAVX512BF16 : kAVX512;
  return cpuHasAVX2() ? kAVX2 : kScalar;
}

int currentLevel() {
  int level = chosenLevel.load(std::memory_order_acquire);
  if (level >= 0)
    return level;
  int choice = bestLevel();
  int expected = -1;
  if (chosenLevel.compare_exchange_strong(expected, choice,
                                          std::memory_order_acq_rel))
    return choice;
  return expected;
}

MatmulFn kernelFor(int wtype, int level) {
  MatmulFn fn = nullptr;
  if (level >= kAVX512)
    fn = avx512Kernel(wtype, level == kAVX512BF16);
  if (!fn && level >= kAVX2)
    fn = avx2Kernel(wtype);
  if (!fn)
    fn = scalarKernel(wtype);
  return fn;
}

//===----------------------------------------------------------------------===//
// Preparation
//===----------------------------------------------------------------------===//

/// Round to nearest, ties to even, for |v| < 2^22 (the default rounding mode
/// does the work; the library is built without FP contraction).
inline float roundEven(float v) {
  constexpr float kMagic = 12582912.0f; // 1.5 * 2^23
  return (v + kMagic) - kMagic;
}

/// max |x[i]| by the bit patterns (exact for finite values, vectorizable).
float maxAbs(const float *x, int64_t n) {
  uint32_t best = 0;
  for (int64_t i = 0; i != n; ++i)
    best = std::max(best, floatToBits(x[i]) & 0x7fffffffu);
  return bitsToFloat(best);
}

void prepareQ8x32(const float *x, int64_t K, uint8_t *row,
                  const PreparedLayout &l) {
  // Zero the padding blocks of the last group.
  std::memset(row, 0, l.rowBytes);
  int8_t *q = reinterpret_cast<int8_t *>(row);
  for (int64_t b = 0; b != K / 32; ++b) {
    const float *xb = x + 32 * b;
    float d = maxAbs(xb, 32) / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    // Blocks too small for 1 / d (below ~1.5e-36) round to zero.
    if (!(id <= std::numeric_limits<float>::max()))
      d = id = 0.0f;
    int8_t qb[32];
    for (int j = 0; j != 32; ++j) {
      float v = roundEven(xb[j] * id);
      v = std::min(127.0f, std::max(-127.0f, v));
      qb[j] = int8_t(v);
    }
    std::memcpy(q + q8x32Offset(32 * b), qb, 16);
    std::memcpy(q + q8x32Offset(32 * b + 16), qb + 16, 16);
    std::memcpy(row + l.dOffset + 4 * b, &d, 4);
    for (int h = 0; h != 4; ++h) {
      int32_t sum = 0;
      for (int e = 4 * h; e != 4 * h + 4; ++e)
        sum += qb[e] + qb[16 + e];
      std::memcpy(row + l.sumOffset + 4 * (4 * b + h), &sum, 4);
    }
  }
}

void prepareQ8x256(const float *x, int64_t K, uint8_t *row,
                   const PreparedLayout &l) {
  int8_t *q = reinterpret_cast<int8_t *>(row);
  for (int64_t b = 0; b != K / 256; ++b) {
    const float *xb = x + 256 * b;
    int8_t *qb = q + 256 * b;
    const float amax = maxAbs(xb, 256);
    float d = 0.0f;
    // Blocks too small for 128 / amax (below ~3e-37) round to zero.
    if (!(128.0f / amax <= std::numeric_limits<float>::max())) {
      std::memset(qb, 0, 256);
    } else {
      // The first element of largest magnitude maps to -128 (llama.cpp's
      // quantize_row_q8_K).
      float vmax = amax;
      for (int j = 0; j != 256; ++j)
        if (xb[j] == amax || xb[j] == -amax) {
          vmax = xb[j];
          break;
        }
      const float iscale = -128.0f / vmax;
      for (int j = 0; j != 256; ++j) {
        float v = roundEven(xb[j] * iscale);
        qb[j] = int8_t(std::min(127.0f, std::max(-128.0f, v)));
      }
      d = 1.0f / iscale;
    }
    std::memcpy(row + l.dOffset + 4 * b, &d, 4);
    for (int g = 0; g != 16; ++g) {
      int s = 0;
      for (int j = 0; j != 16; ++j)
        s += qb[16 * g + j];
      const float xsum = d * float(s);
      std::memcpy(row + l.sumOffset + 64 * b + 4 * g, &xsum, 4);
    }
  }
}

void prepareBF16(const float *x, int64_t K, uint8_t *row) {
  for (int64_t k = 0; k != K; ++k) {
    uint16_t h = floatToBF16(x[k]);
    std::memcpy(row + 2 * k, &h, 2);
  }
}

bool validK(const TypeInfo *t, int64_t K) {
  return t && K >= 0 && K % t->blockElements == 0;
}

/// Moves row `r`'s plain block `blk` of repackable type `plain` (`bb` bytes)
/// into its superblock `sb` (Repack) or back: whole f16 scale fields and
/// 4-byte chunks of the rest (repackedOffset moves none apart; the rest,
/// before and after the scales, is a multiple of 4 bytes).
template <bool Repack, typename Super, typename Block>
void moveBlock(int plain, int bb, int r, Super *sb, Block *blk) {
  auto move = [](Super *repacked, Block *block, size_t n) {
    if constexpr (Repack)
      std::memcpy(repacked, block, n);
    else
      std::memcpy(block, repacked, n);
  };
  const int header = repackedHeader(plain), at = repackedHeaderAt(plain, bb);
  for (int i = at; i < at + header; i += 2)
    move(sb + 16 * ((i - at) / 2) + 2 * r, blk + i, 2);
  Super *rest = sb + 8 * header + 4 * r;
  for (int i = 0; i < at; i += 4)
    move(rest + 8 * i, blk + i, 4);
  for (int i = at + header; i < bb; i += 4)
    move(rest + 8 * (i - header), blk + i, 4);
}

/// Moves row `r` (of `K` 2-byte elements, at `row`) of an f16 or bf16 group
/// into the group (Repack) or back: 4-byte pairs, then an odd K's last
/// element (see repackedFloatOffset).
template <bool Repack, typename Group, typename Row>
void moveFloatRow(int64_t K, int r, Group *group, Row *row) {
  auto move = [](Group *repacked, Row *plain, size_t n) {
    if constexpr (Repack)
      std::memcpy(repacked, plain, n);
    else
      std::memcpy(plain, repacked, n);
  };
  const int64_t even = K - K % 2;
  for (int64_t k = 0; k != even; k += 2)
    move(group + repackedFloatOffset(K, r, k), row + 2 * k, 4);
  if (even != K)
    move(group + repackedFloatOffset(K, r, even), row + 2 * even, 2);
}

/// Moves row `r` (at `row`) of a group of 8 rows of repackable type `plain`
/// (`bb`-byte blocks, `nb` per row of `K` elements) into the group (Repack)
/// or back: pair by pair for f16 / bf16, block by block otherwise.
template <bool Repack, typename Group, typename Row>
void moveRow(int plain, int bb, int64_t nb, int64_t K, int r, Group *group,
             Row *row) {
  if (bb == 2) {
    moveFloatRow<Repack>(K, r, group, row);
    return;
  }
  for (int64_t b = 0; b != nb; ++b)
    moveBlock<Repack>(plain, bb, r, group + size_t(b) * 8 * size_t(bb),
                      row + size_t(b) * bb);
}

} // namespace

//===----------------------------------------------------------------------===//
// C interface
//===----------------------------------------------------------------------===//

extern "C" {

int rlx_uk_supports(int wtype) { return typeInfo(wtype) != nullptr; }

int64_t rlx_uk_block_elements(int wtype) {
  const TypeInfo *t = typeInfo(wtype);
  return t ? t->blockElements : 0;
}

size_t rlx_uk_weight_row_bytes(int wtype, int64_t K) {
  const TypeInfo *t = typeInfo(wtype);
  if (!validK(t, K))
    return 0;
  return size_t(K / t->blockElements * t->blockBytes);
}

size_t rlx_uk_prepared_row_bytes(int wtype, int64_t K) {
  const TypeInfo *t = typeInfo(wtype);
  if (!validK(t, K))
    return 0;
  return preparedLayout(t->prep, K).rowBytes;
}

size_t rlx_uk_prepared_bytes(int wtype, int64_t M, int64_t K) {
  if (M < 0)
    return 0;
  return size_t(M) * rlx_uk_prepared_row_bytes(wtype, K);
}

int rlx_uk_prepare(int wtype, const float *x, int64_t ldx, int64_t m0,
                   int64_t m1, int64_t K, void *prepared) {
  const TypeInfo *t = typeInfo(wtype);
  if (!validK(t, K) || m0 < 0 || m1 < m0)
    return -1;
  if (m1 == m0 || K == 0)
    return 0;
  if (!x || !prepared)
    return -1;
  const PreparedLayout l = preparedLayout(t->prep, K);
  for (int64_t m = m0; m != m1; ++m) {
    const float *xr = x + m * ldx;
    uint8_t *row = static_cast<uint8_t *>(prepared) + size_t(m) * l.rowBytes;
    switch (t->prep) {
    case PrepKind::Q8x32:
      prepareQ8x32(xr, K, row, l);
      break;
    case PrepKind::Q8x256:
      prepareQ8x256(xr, K, row, l);
      break;
    case PrepKind::BF16:
      prepareBF16(xr, K, row);
      break;
    case PrepKind::BF16AsF32:
      for (int64_t k = 0; k != K; ++k) {
        const float v = bf16ToFloat(floatToBF16(xr[k]));
        std::memcpy(row + 4 * k, &v, 4);
      }
      break;
    case PrepKind::F32:
      std::memcpy(row, xr, size_t(K) * 4);
      break;
    }
  }
  return 0;
}

int rlx_uk_prepared_to_f32(int wtype, const void *prepared, int64_t m,
                           int64_t K, float *out) {
  const TypeInfo *t = typeInfo(wtype);
  if (!validK(t, K) || m < 0 || !prepared || !out)
    return -1;
  const PreparedLayout l = preparedLayout(t->prep, K);
  const uint8_t *row =
      static_cast<const uint8_t *>(prepared) + size_t(m) * l.rowBytes;
  const int8_t *q = reinterpret_cast<const int8_t *>(row);
  switch (t->prep) {
  case PrepKind::Q8x32:
    for (int64_t k = 0; k != K; ++k)
      out[k] =
          loadF32(row + l.dOffset + 4 * (k / 32)) * float(q[q8x32Offset(k)]);
    break;
  case PrepKind::Q8x256:
    for (int64_t k = 0; k != K; ++k)
      out[k] = loadF32(row + l.dOffset + 4 * (k / 256)) * float(q[k]);
    break;
  case PrepKind::BF16:
    for (int64_t k = 0; k != K; ++k)
      out[k] = bf16ToFloat(loadU16(row + 2 * k));
    break;
  case PrepKind::BF16AsF32:
  case PrepKind::F32:
    std::memcpy(out, row, size_t(K) * 4);
    break;
  }
  return 0;
}

int rlx_uk_matmul(int wtype, const void *prepared, int64_t M, int64_t K,
                  const void *w, int64_t n0, int64_t n1, float *y,
                  int64_t ldy) {
  const TypeInfo *t = typeInfo(wtype);
  if (!validK(t, K) || M < 0 || n0 < 0 || n1 < n0)
    return -1;
  // Repacked weights come in whole groups of 8 rows.
  if ((wtype & RLX_UK_REPACKED_X8) && (n0 % 8 != 0 || n1 % 8 != 0))
    return -1;
  if (M == 0 || n1 == n0)
    return 0;
  if (!y || (K != 0 && (!prepared || !w)))
    return -1;
  if (K == 0) {
    for (int64_t m = 0; m != M; ++m)
      for (int64_t n = n0; n != n1; ++n)
        y[m * ldy + n] = 0.0f;
    return 0;
  }
  const PreparedLayout l = preparedLayout(t->prep, K);
  const size_t wRowBytes = size_t(K / t->blockElements * t->blockBytes);
  MatmulArgs a;
  a.x = static_cast<const uint8_t *>(prepared);
  a.xRowBytes = l.rowBytes;
  a.xdOffset = l.dOffset;
  a.xsOffset = l.sumOffset;
  a.M = M;
  a.K = K;
  a.w = static_cast<const uint8_t *>(w) + size_t(n0) * wRowBytes;
  a.wRowBytes = wRowBytes;
  a.N = n1 - n0;
  a.y = y + n0;
  a.ldy = ldy;
  kernelFor(wtype, currentLevel())(a);
  return 0;
}

namespace {
/// The rows rlx_uk_repack and rlx_uk_unpack move, once their arguments are
/// checked.
struct RowMove {
  int plain = 0;       ///< The type without RLX_UK_REPACKED_X8.
  int blockBytes = 0;  ///< Bytes of one storage block.
  int64_t blocks = 0;  ///< Blocks per row.
  size_t rowBytes = 0; ///< Bytes of one stored row.
};
} // namespace

/// Checks the arguments both directions share (a type with an x8 form, a
/// valid K, 0 <= n0 <= n1, and with `groups`, n0 and n1 on groups of 8):
/// -1 for bad ones, 0 when there is nothing to move, 1 with `m` filled.
static int checkRowMove(int wtype, int64_t K, const void *w, int64_t n0,
                        int64_t n1, const void *out, bool groups, RowMove &m) {
  m.plain = wtype & ~RLX_UK_REPACKED_X8;
  const TypeInfo *t = typeInfo(m.plain);
  if (!hasRepackedForm(m.plain) || !validK(t, K) || n0 < 0 || n1 < n0 ||
      (groups && (n0 % 8 != 0 || n1 % 8 != 0)))
    return -1;
  if (n1 == n0 || K == 0)
    return 0;
  if (!w || !out)
    return -1;
  m.blockBytes = int(t->blockBytes);
  m.blocks = K / t->blockElements;
  m.rowBytes = size_t(m.blocks) * size_t(m.blockBytes);
  return 1;
}

int rlx_uk_repack(int wtype, int64_t K, const void *w, int64_t n0, int64_t n1,
                  void *out) {
  RowMove m;
  if (int c = checkRowMove(wtype, K, w, n0, n1, out, /*groups=*/true, m);
      c != 1)
    return c;
  for (int64_t g = n0; g != n1; g += 8) {
    const uint8_t *src =
        static_cast<const uint8_t *>(w) + size_t(g) * m.rowBytes;
    uint8_t *dst = static_cast<uint8_t *>(out) + size_t(g) * m.rowBytes;
    for (int r = 0; r != 8; ++r)
      moveRow<true>(m.plain, m.blockBytes, m.blocks, K, r, dst,
                    src + size_t(r) * m.rowBytes);
  }
  return 0;
}

int rlx_uk_unpack(int wtype, int64_t K, const void *w, int64_t n0, int64_t n1,
                  void *out) {
  RowMove m;
  if (int c = checkRowMove(wtype, K, w, n0, n1, out, /*groups=*/false, m);
      c != 1)
    return c;
  for (int64_t n = n0; n != n1; ++n) {
    const uint8_t *group =
        static_cast<const uint8_t *>(w) + size_t(n / 8) * 8 * m.rowBytes;
    uint8_t *row = static_cast<uint8_t *>(out) + size_t(n - n0) * m.rowBytes;
    moveRow<false>(m.plain, m.blockBytes, m.blocks, K, int(n % 8), group, row);
  }
  return 0;
}

int rlx_uk_select_isa(const char *name) {
  int level = levelNamed(name);
  if (level < 0)
    return -1;
  chosenLevel.store(level, std::memory_order_release);
  return 0;
}

const char *rlx_uk_isa(void) {
  switch (currentLevel()) {
  case kAVX512:
    return cpuHasBF16() ? "avx512-nobf16" : "avx512";
  case kAVX512BF16:
    return "avx512";
  case kAVX2:
    return "avx2";
  default:
    return "scalar";
  }
}

} // extern "C"
