//===- UKernelsTest.cpp - Micro-kernels against a double reference --------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every weight type on every instruction set this CPU has, over shapes that
// exercise the register tiles' edges (M = 1, 3, 17, 64; N odd; column ranges
// split unevenly; K from one block to 4096). Each output is checked twice:
//
//   1. against sum_k w_k * xh_k in double, with w dequantized by
//      rlx::decodeToF32 and xh the prepared (rounded) activations read back
//      with rlx_uk_prepared_to_f32: the kernels only add f32 rounding, so
//      |y - ref| <= 1e-5 * sum_k |w_k * xh_k|;
//   2. against sum_k w_k * x_k with the exact activations, within the error
//      the activation rounding can make, |sum_k w_k (x_k - xh_k)| <=
//      sum_k |w_k| |x_k - xh_k|, plus the same f32 allowance. The test also
//      checks that this bound is small against the outputs themselves (it is
//      a worst case, growing like sqrt(K) relative to them), so that a kernel
//      off by the size of its outputs cannot pass it.
//
//===----------------------------------------------------------------------===//

#include "RLX/UKernels/UKernels.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/Quant.h"
#include "RLX/Weights/Tensor.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace rlx;

namespace {

struct TypeCase {
  int code;
  const char *name;
};

// gtest prints parameters through this (found by ADL).
[[maybe_unused]] void PrintTo(const TypeCase &t, std::ostream *os) {
  *os << t.name;
}

const TypeCase kTypes[] = {
    {RLX_UK_Q4_0, "q4_0"}, {RLX_UK_Q4_1, "q4_1"}, {RLX_UK_Q5_0, "q5_0"},
    {RLX_UK_Q5_1, "q5_1"}, {RLX_UK_Q8_0, "q8_0"}, {RLX_UK_Q2_K, "q2_K"},
    {RLX_UK_Q3_K, "q3_K"}, {RLX_UK_Q4_K, "q4_K"}, {RLX_UK_Q5_K, "q5_K"},
    {RLX_UK_Q6_K, "q6_K"}, {RLX_UK_F16, "f16"},   {RLX_UK_BF16, "bf16"},
};

const char *const kIsas[] = {"scalar", "avx2", "avx512", "avx512-nobf16"};

/// Relative f32 allowance of the kernels (of sum |w x|).
constexpr double kF32Tolerance = 1e-5;

DType dtypeOf(int code) {
  std::optional<DType> d = dtypeOfGGMLType(uint32_t(code));
  EXPECT_TRUE(d.has_value()) << code;
  return *d;
}

void putF16(uint8_t *p, float v) {
  uint16_t h = f32ToF16(v);
  std::memcpy(p, &h, 2);
}

/// Random weights W[N, K] of type `code`, valid blocks with finite f16
/// scales of moderate size. Types with a reference quantizer are encoded from
/// random floats (q8_0 also gets some -128 codes, which files may hold);
/// K-quant blocks are random bytes with their scales overwritten.
std::vector<uint8_t> randomWeights(int code, int64_t N, int64_t K,
                                   std::mt19937 &rng) {
  const size_t rowBytes = rlx_uk_weight_row_bytes(code, K);
  std::vector<uint8_t> w(rowBytes * N);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.5f, 2.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  const int64_t blockElements = rlx_uk_block_elements(code);
  if (blockElements != 256) {
    for (int64_t n = 0; n != N; ++n) {
      // Rows of different magnitude, with an outlier now and then.
      const float scale = 0.05f * float(1 + n % 3);
      std::vector<float> row(K);
      for (float &v : row)
        v = scale * normal(rng);
      if (K > 3)
        row[n % K] = 8 * scale;
      llvm::Expected<std::vector<uint8_t>> bytes =
          encodeFromF32(dtypeOf(code), row);
      if (!bytes) {
        ADD_FAILURE() << llvm::toString(bytes.takeError());
        return w;
      }
      EXPECT_EQ(bytes->size(), rowBytes);
      std::memcpy(w.data() + n * rowBytes, bytes->data(), rowBytes);
    }
    if (code == RLX_UK_Q8_0)
      for (size_t blk = 0; blk < w.size() / 34; blk += 3)
        w[blk * 34 + 2 + blk % 32] = 0x80;
    return w;
  }
  for (uint8_t &b : w)
    b = uint8_t(byte(rng));
  // Offsets of d (and dmin) in each K-quant block.
  int dOff = 0, dminOff = -1;
  switch (code) {
  case RLX_UK_Q2_K:
    dOff = 80, dminOff = 82;
    break;
  case RLX_UK_Q3_K:
    dOff = 108;
    break;
  case RLX_UK_Q4_K:
  case RLX_UK_Q5_K:
    dOff = 0, dminOff = 2;
    break;
  case RLX_UK_Q6_K:
    dOff = 208;
    break;
  default:
    ADD_FAILURE() << "no K-quant " << code;
  }
  const int64_t blockBytes = int64_t(rowBytes) / (K / 256);
  for (size_t blk = 0; blk != w.size() / blockBytes; ++blk) {
    uint8_t *p = w.data() + blk * blockBytes;
    const float sign = (blk % 3 == 2) ? -1.0f : 1.0f;
    putF16(p + dOff, sign * 1e-3f * unit(rng));
    if (dminOff >= 0)
      putF16(p + dminOff, 1e-3f * unit(rng));
  }
  return w;
}

/// Random activations x[M, ldx]: rows of different magnitude (1e-2 .. 1e2),
/// one zero row when M > 2, an outlier per row.
std::vector<float> randomActivations(int64_t M, int64_t K, int64_t ldx,
                                     std::mt19937 &rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(M * ldx, -1e30f); // Padding must not be read.
  for (int64_t m = 0; m != M; ++m) {
    const float scale = std::pow(10.0f, float(m % 5) - 2.0f);
    for (int64_t k = 0; k != K; ++k)
      x[m * ldx + k] = (M > 2 && m == 1) ? 0.0f : scale * normal(rng);
    if (K > 5 && !(M > 2 && m == 1))
      x[m * ldx + (7 * m) % K] = 6 * scale;
  }
  return x;
}

struct Shape {
  int64_t M, N, K;
};

/// The shapes for one type: M = 1, 3, 17, 64 (and 160, several panels of
/// activation rows); N odd and not a multiple of any tile; K = 256 and 4096
/// for all, plus short rows for the 32-element types and odd lengths for
/// f16/bf16.
std::vector<Shape> shapesFor(int code) {
  std::vector<int64_t> ks = {256, 4096};
  const int64_t blockElements = rlx_uk_block_elements(code);
  if (blockElements == 32)
    ks.insert(ks.end(), {32, 96, 480});
  if (blockElements == 1)
    ks.insert(ks.end(), {1, 7, 33, 1000});
  std::vector<Shape> shapes;
  for (int64_t K : ks)
    for (int64_t M : {1, 3, 17, 64}) {
      if (K == 4096 && M == 17)
        continue;
      shapes.push_back({M, M == 64 ? 9 : 13, K});
    }
  shapes.push_back({5, 1, 256});
  // More activation rows than one L2 panel of the vector drivers (512 KiB).
  shapes.push_back({160, 7, 4096});
  return shapes;
}

class UKernelsTest
    : public ::testing::TestWithParam<std::tuple<TypeCase, const char *>> {
protected:
  void SetUp() override {
    isa = std::get<1>(GetParam());
    if (rlx_uk_select_isa(isa) != 0)
      GTEST_SKIP() << isa << " is not available on this CPU";
    // Without AVX512_BF16, "avx512-nobf16" is plain "avx512".
    if (std::string(isa) != "avx512-nobf16")
      ASSERT_STREQ(rlx_uk_isa(), isa);
  }
  const char *isa = nullptr;
};

/// Relative difference allowed (of sum |w x|) between a repacked and a plain
/// product on the same instruction set: they add the same exact block dot
/// products in f32, in a different order.
constexpr double kRepackTolerance = 2e-6;

/// Repacks all N rows (N a multiple of 8) in three ranges at multiples of 8.
std::vector<uint8_t> repackInThirds(int code, int64_t N, int64_t K,
                                    const std::vector<uint8_t> &w) {
  std::vector<uint8_t> out(w.size(), 0xcd);
  const int64_t g = N / 8;
  const int64_t cuts[] = {0, 8 * (g / 3), 8 * (2 * g / 3), N};
  for (int c = 0; c != 3; ++c)
    EXPECT_EQ(
        rlx_uk_repack(code, K, w.data(), cuts[c], cuts[c + 1], out.data()), 0);
  return out;
}

/// Runs one shape: prepares, multiplies in three uneven column ranges and
/// checks every output against both references. With `repacked` (N a
/// multiple of 8) the weights are repacked and multiplied as
/// code | RLX_UK_REPACKED_X8 in ranges split at multiples of 8, and the
/// outputs are also checked against the plain product.
void checkShape(int code, const Shape &s, std::mt19937 &rng,
                bool repacked = false) {
  const int64_t M = s.M, N = s.N, K = s.K;
  SCOPED_TRACE("M=" + std::to_string(M) + " N=" + std::to_string(N) +
               " K=" + std::to_string(K) + (repacked ? " repacked" : ""));
  const int64_t ldx = K + 3, ldy = N + 2;
  std::vector<uint8_t> w = randomWeights(code, N, K, rng);
  std::vector<float> x = randomActivations(M, K, ldx, rng);

  std::vector<float> wf(N * K);
  ASSERT_FALSE(bool(decodeToF32(dtypeOf(code), w, wf)));

  std::vector<uint8_t> prepared(rlx_uk_prepared_bytes(code, M, K) + 1);
  // Misalign on purpose: the kernels accept any alignment.
  uint8_t *prep = prepared.data() + 1;
  // Prepare in two uneven row ranges.
  const int64_t mSplit = M / 3;
  ASSERT_EQ(rlx_uk_prepare(code, x.data(), ldx, 0, mSplit, K, prep), 0);
  ASSERT_EQ(rlx_uk_prepare(code, x.data(), ldx, mSplit, M, K, prep), 0);
  std::vector<float> xh(M * K);
  for (int64_t m = 0; m != M; ++m)
    ASSERT_EQ(rlx_uk_prepared_to_f32(code, prep, m, K, xh.data() + m * K), 0);

  std::vector<float> y(M * ldy, std::nanf(""));
  std::vector<float> yPlain;
  if (repacked) {
    ASSERT_EQ(N % 8, 0);
    const int rcode = code | RLX_UK_REPACKED_X8;
    // The prepared rows do not depend on the flag (repacked bf16: the same
    // values, held as f32).
    std::vector<uint8_t> prepR(rlx_uk_prepared_bytes(rcode, M, K));
    ASSERT_EQ(rlx_uk_prepare(rcode, x.data(), ldx, 0, M, K, prepR.data()), 0);
    if (code == RLX_UK_BF16) {
      ASSERT_EQ(prepR.size(), size_t(M) * rlx_uk_prepared_row_bytes(rcode, K));
      std::vector<float> back(K);
      for (int64_t m = 0; m != M; ++m) {
        ASSERT_EQ(
            rlx_uk_prepared_to_f32(rcode, prepR.data(), m, K, back.data()), 0);
        ASSERT_EQ(std::memcmp(back.data(), xh.data() + m * K, 4 * K), 0);
      }
    } else {
      ASSERT_EQ(prepR.size(), prepared.size() - 1);
      ASSERT_EQ(std::memcmp(prepR.data(), prep, prepR.size()), 0);
    }
    yPlain.assign(M * ldy, std::nanf(""));
    ASSERT_EQ(
        rlx_uk_matmul(code, prep, M, K, w.data(), 0, N, yPlain.data(), ldy), 0);
    const std::vector<uint8_t> wr = repackInThirds(code, N, K, w);
    const int64_t g = N / 8;
    const int64_t cuts[] = {0, 8 * (g / 3), 8 * (2 * g / 3), N};
    for (int c = 0; c != 3; ++c)
      ASSERT_EQ(rlx_uk_matmul(rcode, prepR.data(), M, K, wr.data(), cuts[c],
                              cuts[c + 1], y.data(), ldy),
                0);
  } else {
    const int64_t cuts[] = {0, std::min<int64_t>(N, 5), std::min<int64_t>(N, 6),
                            N};
    for (int c = 0; c != 3; ++c)
      ASSERT_EQ(rlx_uk_matmul(code, prep, M, K, w.data(), cuts[c], cuts[c + 1],
                              y.data(), ldy),
                0);
  }

  const bool scalarIsa = std::string(rlx_uk_isa()) == "scalar";
  int64_t failures = 0;
  double sumBound = 0, sumExact = 0;
  for (int64_t m = 0; m != M; ++m)
    for (int64_t n = 0; n != N; ++n) {
      double ref = 0, mag = 0, exact = 0, magExact = 0, bound = 0;
      for (int64_t k = 0; k != K; ++k) {
        const double wk = wf[n * K + k], xk = x[m * ldx + k],
                     xhk = xh[m * K + k];
        ref += wk * xhk;
        mag += std::fabs(wk * xhk);
        exact += wk * xk;
        magExact += std::fabs(wk * xk);
        bound += std::fabs(wk) * std::fabs(xk - xhk);
      }
      const double got = y[m * ldy + n];
      const double tol = kF32Tolerance * mag + 1e-30;
      const double tolExact = bound + kF32Tolerance * magExact + 1e-30;
      if (!(std::fabs(got - ref) <= tol) ||
          !(std::fabs(got - exact) <= tolExact)) {
        if (++failures <= 5)
          ADD_FAILURE() << "y[" << m << ", " << n << "] = " << got
                        << ", reference " << ref << " (tolerance " << tol
                        << "), exact " << exact << " (bound " << tolExact
                        << ")";
      }
      if (repacked) {
        // The scalar references add in the plain kernels' order: the same
        // result, bit for bit.
        const double plain = yPlain[m * ldy + n];
        // f16 / bf16 add f32 products in another order (no exact block
        // sums): the kernels' f32 allowance.
        const bool floats = rlx_uk_block_elements(code) == 1;
        const double tolPlain =
            scalarIsa
                ? 0.0
                : (floats ? kF32Tolerance : kRepackTolerance) * mag + 1e-30;
        if (!(std::fabs(got - plain) <= tolPlain) && ++failures <= 5)
          ADD_FAILURE() << "y[" << m << ", " << n << "] = " << got << ", plain "
                        << plain << " (magnitude " << mag << ")";
      }
      sumBound += tolExact;
      sumExact += std::fabs(exact);
    }
  EXPECT_EQ(failures, 0);
  // The exact-activation bound must be small against the outputs, so that an
  // error of the size of an output does not pass it. It grows like sqrt(K)
  // against the outputs: 0.02..0.1 of them at K = 256, 0.3..0.6 at K = 4096
  // (where check 1 is the sharp one; beyond, it is the only sharp one).
  if (K <= 4096)
    EXPECT_LE(sumBound, 0.75 * sumExact)
        << "the activation-rounding bound does not discriminate";
  // The padding between rows of y is untouched.
  for (int64_t m = 0; m != M; ++m)
    for (int64_t n = N; n != ldy; ++n)
      EXPECT_TRUE(std::isnan(y[m * ldy + n]));
}

TEST_P(UKernelsTest, MatchesReference) {
  const TypeCase t = std::get<0>(GetParam());
  std::mt19937 rng(1234 + t.code);
  for (const Shape &s : shapesFor(t.code)) {
    checkShape(t.code, s, rng);
    if (HasFatalFailure())
      return;
  }
}

/// Two threads, each preparing half of the rows and then computing half of
/// the columns (after a join), give the single-threaded result exactly.
TEST_P(UKernelsTest, ThreadsSplitRowsAndColumns) {
  const TypeCase t = std::get<0>(GetParam());
  std::mt19937 rng(99 + t.code);
  const int64_t M = 7, N = 11, K = 512;
  std::vector<uint8_t> w = randomWeights(t.code, N, K, rng);
  std::vector<float> x = randomActivations(M, K, K, rng);
  std::vector<uint8_t> p1(rlx_uk_prepared_bytes(t.code, M, K));
  std::vector<uint8_t> p2(p1.size());
  ASSERT_EQ(rlx_uk_prepare(t.code, x.data(), K, 0, M, K, p1.data()), 0);
  std::vector<float> y1(M * N), y2(M * N);
  ASSERT_EQ(
      rlx_uk_matmul(t.code, p1.data(), M, K, w.data(), 0, N, y1.data(), N), 0);
  std::thread a(
      [&] { rlx_uk_prepare(t.code, x.data(), K, 0, 3, K, p2.data()); });
  std::thread b(
      [&] { rlx_uk_prepare(t.code, x.data(), K, 3, M, K, p2.data()); });
  a.join();
  b.join();
  EXPECT_EQ(p1, p2);
  std::thread c([&] {
    rlx_uk_matmul(t.code, p2.data(), M, K, w.data(), 0, 4, y2.data(), N);
  });
  std::thread d([&] {
    rlx_uk_matmul(t.code, p2.data(), M, K, w.data(), 4, N, y2.data(), N);
  });
  c.join();
  d.join();
  EXPECT_EQ(y1, y2);
}

//===----------------------------------------------------------------------===//
// Repacked weights
//===----------------------------------------------------------------------===//

const TypeCase kRepackedTypes[] = {{RLX_UK_Q4_0, "q4_0"}, {RLX_UK_Q8_0, "q8_0"},
                                   {RLX_UK_Q4_K, "q4_K"}, {RLX_UK_Q5_K, "q5_K"},
                                   {RLX_UK_Q6_K, "q6_K"}, {RLX_UK_F16, "f16"},
                                   {RLX_UK_BF16, "bf16"}};

using UKernelsRepackedTest = UKernelsTest;

/// Repacked weights give the plain type's products: M = 1, 3, 17, 64, 160;
/// K = 32, 96, 4096 (K-quants: 256, 512, 4096; f16 / bf16: 1, 7, 96, 4096,
/// odd lengths ending in a lone element); N = 8, 16, 40 (and 56: a decode
/// sweep of 4 groups ending in 3); plus, for the 32-element types, rows of
/// more than 2048 blocks (split along K by the AVX2 driver).
TEST_P(UKernelsRepackedTest, MatchesPlain) {
  const TypeCase t = std::get<0>(GetParam());
  std::mt19937 rng(4321 + t.code);
  const int64_t blockElements = rlx_uk_block_elements(t.code);
  std::vector<int64_t> ks = {32, 96, 4096};
  if (blockElements == 256)
    ks = {256, 512, 4096};
  if (blockElements == 1)
    ks = {1, 7, 96, 4096};
  std::vector<Shape> shapes;
  for (int64_t K : ks)
    for (int64_t M : {1, 3, 17, 64, 160})
      for (int64_t N : {8, 16, 40, 56})
        if (N != 56 || blockElements == 1)
          shapes.push_back({M, N, K});
  if (blockElements == 32)
    shapes.push_back({5, 16, 32 * 2051});
  for (const Shape &s : shapes) {
    checkShape(t.code, s, rng, /*repacked=*/true);
    if (HasFatalFailure())
      return;
  }
}

/// Two threads computing halves of the columns give the one-thread result
/// exactly.
TEST_P(UKernelsRepackedTest, ThreadsSplitColumns) {
  const TypeCase t = std::get<0>(GetParam());
  const int rcode = t.code | RLX_UK_REPACKED_X8;
  std::mt19937 rng(77 + t.code);
  const int64_t M = 7, N = 32, K = 512;
  std::vector<uint8_t> w = randomWeights(t.code, N, K, rng);
  std::vector<float> x = randomActivations(M, K, K, rng);
  std::vector<uint8_t> wr(w.size());
  ASSERT_EQ(rlx_uk_repack(t.code, K, w.data(), 0, N, wr.data()), 0);
  std::vector<uint8_t> p(rlx_uk_prepared_bytes(rcode, M, K));
  ASSERT_EQ(rlx_uk_prepare(rcode, x.data(), K, 0, M, K, p.data()), 0);
  std::vector<float> y1(M * N), y2(M * N);
  ASSERT_EQ(rlx_uk_matmul(rcode, p.data(), M, K, wr.data(), 0, N, y1.data(), N),
            0);
  std::thread c([&] {
    rlx_uk_matmul(rcode, p.data(), M, K, wr.data(), 0, 8, y2.data(), N);
  });
  std::thread d([&] {
    rlx_uk_matmul(rcode, p.data(), M, K, wr.data(), 8, N, y2.data(), N);
  });
  c.join();
  d.join();
  EXPECT_EQ(y1, y2);
}

/// The largest sums the K-quant tiles hold in int16: every code at its
/// maximum (all code, qh and scale bytes 0xff), activations at +-127 after
/// rounding. The repacked product must equal the scalar plain kernel's
/// (exact integer block sums), so an int16 run too long to be exact fails.
TEST_P(UKernelsRepackedTest, SaturatedCodes) {
  const TypeCase t = std::get<0>(GetParam());
  if (rlx_uk_block_elements(t.code) != 256)
    GTEST_SKIP() << "the int16 sums are the K-quant tiles'";
  const int rcode = t.code | RLX_UK_REPACKED_X8;
  const int64_t M = 3, N = 16, K = 512;
  const size_t rowBytes = rlx_uk_weight_row_bytes(t.code, K);
  const size_t blockBytes = rowBytes / (K / 256);
  std::vector<uint8_t> w(N * rowBytes, 0xff);
  for (size_t blk = 0; blk != w.size() / blockBytes; ++blk) {
    uint8_t *p = w.data() + blk * blockBytes;
    if (t.code == RLX_UK_Q6_K) {
      putF16(p + 208, 1e-3f);
    } else {
      putF16(p, 1e-3f);
      putF16(p + 2, 0.0f);
    }
  }
  std::vector<float> x(M * K);
  for (int64_t m = 0; m != M; ++m)
    for (int64_t k = 0; k != K; ++k)
      x[m * K + k] = m == 1 ? -1.0f : 1.0f + float(m) * float(k % 2);
  std::vector<uint8_t> p(rlx_uk_prepared_bytes(rcode, M, K));
  ASSERT_EQ(rlx_uk_prepare(rcode, x.data(), K, 0, M, K, p.data()), 0);
  std::vector<uint8_t> wr(w.size());
  ASSERT_EQ(rlx_uk_repack(t.code, K, w.data(), 0, N, wr.data()), 0);
  std::vector<float> got(M * N), want(M * N);
  ASSERT_EQ(
      rlx_uk_matmul(rcode, p.data(), M, K, wr.data(), 0, N, got.data(), N), 0);
  ASSERT_EQ(rlx_uk_select_isa("scalar"), 0);
  ASSERT_EQ(
      rlx_uk_matmul(t.code, p.data(), M, K, w.data(), 0, N, want.data(), N), 0);
  for (int64_t i = 0; i != M * N; ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * std::fabs(want[i]))
        << t.name << " " << isa << " output " << i;
}

std::string caseName(
    const ::testing::TestParamInfo<std::tuple<TypeCase, const char *>> &info) {
  std::string name =
      std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, UKernelsTest,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::ValuesIn(kIsas)),
                         caseName);

INSTANTIATE_TEST_SUITE_P(Repacked, UKernelsRepackedTest,
                         ::testing::Combine(::testing::ValuesIn(kRepackedTypes),
                                            ::testing::ValuesIn(kIsas)),
                         caseName);

/// The repacked layout is the documented permutation of each group of 8
/// rows: per block b, a superblock of 8 * blockBytes bytes at
/// 8 * blockBytes * b of the group, with row r's f16 scale field f at
/// 16 f + 2 r and, after the H bytes of scale fields (q4_K, q5_K: 4, else
/// 2), its
/// byte H + j at 8 H + 32 (j / 4) + 4 r + j % 4; q6_K's d (its last 2
/// bytes) at 2 r and its byte j < 208 at 16 + 32 (j / 4) + 4 r + j % 4.
/// Repacking two ranges equals one call, and rows outside the range are not
/// written.
TEST(UKernelsRepack, LayoutAndRanges) {
  std::mt19937 rng(11);
  for (const TypeCase &t : kRepackedTypes) {
    const bool kquant = rlx_uk_block_elements(t.code) == 256;
    if (rlx_uk_block_elements(t.code) == 1)
      continue; // UKernelsRepack.FloatLayout
    const int64_t N = 24, K = kquant ? 512 : 96;
    const int64_t bb = t.code == RLX_UK_Q4_0   ? 18
                       : t.code == RLX_UK_Q8_0 ? 34
                       : t.code == RLX_UK_Q4_K ? 144
                       : t.code == RLX_UK_Q5_K ? 176
                                               : 210;
    const int64_t nb = K / rlx_uk_block_elements(t.code);
    const int64_t h = t.code == RLX_UK_Q4_K || t.code == RLX_UK_Q5_K ? 4 : 2;
    const size_t rowBytes = rlx_uk_weight_row_bytes(t.code, K);
    ASSERT_EQ(rlx_uk_weight_row_bytes(t.code | RLX_UK_REPACKED_X8, K),
              rowBytes);
    std::vector<uint8_t> w = randomWeights(t.code, N, K, rng);
    std::vector<uint8_t> one(w.size(), 0xcd), two(w.size(), 0xcd);
    ASSERT_EQ(rlx_uk_repack(t.code, K, w.data(), 0, N, one.data()), 0);
    ASSERT_EQ(rlx_uk_repack(t.code | RLX_UK_REPACKED_X8, K, w.data(), 8, N,
                            two.data()),
              0);
    // Rows 0..7 untouched so far.
    for (size_t i = 0; i != 8 * rowBytes; ++i)
      ASSERT_EQ(two[i], 0xcd) << t.name << " byte " << i;
    ASSERT_EQ(rlx_uk_repack(t.code, K, w.data(), 0, 8, two.data()), 0);
    EXPECT_EQ(one, two) << t.name;
    // rlx_uk_unpack puts any rows back: all of them, and rows [3, 13)
    // (across a group boundary), written from `out` on.
    std::vector<uint8_t> back(w.size(), 0xcd);
    ASSERT_EQ(rlx_uk_unpack(t.code | RLX_UK_REPACKED_X8, K, one.data(), 0, N,
                            back.data()),
              0);
    EXPECT_EQ(back, w) << t.name;
    std::fill(back.begin(), back.end(), 0xcd);
    ASSERT_EQ(rlx_uk_unpack(t.code, K, one.data(), 3, 13, back.data()), 0);
    EXPECT_TRUE(std::equal(back.begin(), back.begin() + 10 * rowBytes,
                           w.begin() + 3 * rowBytes))
        << t.name;
    EXPECT_EQ(back[10 * rowBytes], 0xcd) << t.name;
    for (int64_t n = 0; n != N; ++n)
      for (int64_t b = 0; b != nb; ++b)
        for (int64_t i = 0; i != bb; ++i) {
          const uint8_t *sb = one.data() + (n / 8) * 8 * rowBytes + b * 8 * bb;
          const int64_t r = n % 8;
          int64_t at = i < h ? 16 * (i / 2) + 2 * r + i % 2
                             : 8 * h + 32 * ((i - h) / 4) + 4 * r + (i - h) % 4;
          if (t.code == RLX_UK_Q6_K)
            at = i >= 208 ? 2 * r + (i - 208)
                          : 16 + 32 * (i / 4) + 4 * r + i % 4;
          ASSERT_EQ(sb[at], w[n * rowBytes + b * bb + i])
              << t.name << " row " << n << " block " << b << " byte " << i;
        }
  }
}

/// f16 / bf16 groups pair elements along K: element k of row r at
/// 32 (k / 2) + 4 r + 2 (k % 2) of its group, an odd K's last element at
/// 16 (K - 1) + 2 r. Ranges repack and unpack as for the block types.
TEST(UKernelsRepack, FloatLayout) {
  std::mt19937 rng(12);
  for (int code : {RLX_UK_F16, RLX_UK_BF16})
    for (int64_t K : {1, 6, 33}) {
      SCOPED_TRACE("type " + std::to_string(code) + " K=" + std::to_string(K));
      const int64_t N = 24;
      const size_t rowBytes = rlx_uk_weight_row_bytes(code, K);
      ASSERT_EQ(rowBytes, size_t(2 * K));
      std::vector<uint8_t> w = randomWeights(code, N, K, rng);
      std::vector<uint8_t> one(w.size(), 0xcd), two(w.size(), 0xcd);
      ASSERT_EQ(rlx_uk_repack(code, K, w.data(), 0, N, one.data()), 0);
      ASSERT_EQ(rlx_uk_repack(code, K, w.data(), 16, N, two.data()), 0);
      for (size_t i = 0; i != 16 * rowBytes; ++i)
        ASSERT_EQ(two[i], 0xcd) << "byte " << i;
      ASSERT_EQ(rlx_uk_repack(code, K, w.data(), 0, 16, two.data()), 0);
      EXPECT_EQ(one, two);
      for (int64_t n = 0; n != N; ++n)
        for (int64_t k = 0; k != K; ++k) {
          const int64_t r = n % 8;
          const int64_t at = k < K - K % 2 ? 32 * (k / 2) + 4 * r + 2 * (k % 2)
                                           : 16 * (K - 1) + 2 * r;
          const uint8_t *group = one.data() + (n / 8) * 8 * rowBytes;
          ASSERT_EQ(group[at], w[n * rowBytes + 2 * k]) << n << ", " << k;
          ASSERT_EQ(group[at + 1], w[n * rowBytes + 2 * k + 1])
              << n << ", " << k;
        }
      std::vector<uint8_t> back(w.size(), 0xcd);
      ASSERT_EQ(rlx_uk_unpack(code | RLX_UK_REPACKED_X8, K, one.data(), 0, N,
                              back.data()),
                0);
      EXPECT_EQ(back, w);
      std::fill(back.begin(), back.end(), 0xcd);
      ASSERT_EQ(rlx_uk_unpack(code, K, one.data(), 5, 11, back.data()), 0);
      EXPECT_TRUE(std::equal(back.begin(), back.begin() + 6 * rowBytes,
                             w.begin() + 5 * rowBytes));
      EXPECT_EQ(back[6 * rowBytes], 0xcd);
    }
}

TEST(UKernelsRepack, RejectsInvalidArguments) {
  const int64_t K = 64;
  std::vector<uint8_t> w(16 * rlx_uk_weight_row_bytes(RLX_UK_Q8_0, K));
  std::vector<uint8_t> out(w.size(), 0xcd);
  float y[16 * 4];
  uint8_t prep[4096] = {};
  const int q4r = RLX_UK_Q4_0 | RLX_UK_REPACKED_X8;
  EXPECT_EQ(rlx_uk_supports(q4r), 1);
  EXPECT_EQ(rlx_uk_supports(RLX_UK_Q8_0 | RLX_UK_REPACKED_X8), 1);
  EXPECT_EQ(rlx_uk_supports(RLX_UK_F16 | RLX_UK_REPACKED_X8), 1);
  EXPECT_EQ(rlx_uk_supports(RLX_UK_BF16 | RLX_UK_REPACKED_X8), 1);
  EXPECT_EQ(rlx_uk_supports(RLX_UK_Q4_1 | RLX_UK_REPACKED_X8), 0);
  EXPECT_EQ(rlx_uk_supports(RLX_UK_Q4_K | RLX_UK_REPACKED_X8), 1);
  EXPECT_EQ(rlx_uk_supports(RLX_UK_Q6_K | RLX_UK_REPACKED_X8), 1);
  EXPECT_EQ(rlx_uk_supports(RLX_UK_Q5_K | RLX_UK_REPACKED_X8), 1);
  EXPECT_EQ(rlx_uk_supports(RLX_UK_Q3_K | RLX_UK_REPACKED_X8), 0);
  EXPECT_EQ(rlx_uk_supports(RLX_UK_REPACKED_X8), 0);
  EXPECT_EQ(rlx_uk_block_elements(q4r), 32);
  EXPECT_EQ(rlx_uk_prepared_row_bytes(q4r, K),
            rlx_uk_prepared_row_bytes(RLX_UK_Q4_0, K));
  EXPECT_EQ(rlx_uk_prepared_bytes(q4r, 3, K),
            rlx_uk_prepared_bytes(RLX_UK_Q4_0, 3, K));
  // Bad types, K, ranges.
  EXPECT_EQ(rlx_uk_repack(RLX_UK_Q4_1, K, w.data(), 0, 8, out.data()), -1);
  EXPECT_EQ(rlx_uk_repack(RLX_UK_Q5_0 | RLX_UK_REPACKED_X8, K, w.data(), 0, 8,
                          out.data()),
            -1);
  EXPECT_EQ(rlx_uk_repack(RLX_UK_BF16, K, w.data(), 0, 12, out.data()), -1);
  EXPECT_EQ(rlx_uk_repack(RLX_UK_Q3_K, 256, w.data(), 0, 8, out.data()), -1);
  EXPECT_EQ(rlx_uk_repack(RLX_UK_Q5_K, 64, w.data(), 0, 8, out.data()), -1);
  EXPECT_EQ(rlx_uk_repack(RLX_UK_Q6_K, 64, w.data(), 0, 8, out.data()), -1);
  EXPECT_EQ(rlx_uk_repack(RLX_UK_Q4_K, 64, w.data(), 0, 8, out.data()), -1);
  EXPECT_EQ(rlx_uk_repack(RLX_UK_Q4_0, 48, w.data(), 0, 8, out.data()), -1);
  EXPECT_EQ(rlx_uk_repack(RLX_UK_Q4_0, K, w.data(), 4, 8, out.data()), -1);
  EXPECT_EQ(rlx_uk_repack(RLX_UK_Q4_0, K, w.data(), 0, 12, out.data()), -1);
  EXPECT_EQ(rlx_uk_repack(RLX_UK_Q4_0, K, w.data(), 8, 0, out.data()), -1);
  EXPECT_EQ(rlx_uk_repack(RLX_UK_Q4_0, K, w.data(), -8, 8, out.data()), -1);
  EXPECT_EQ(rlx_uk_unpack(RLX_UK_Q5_1, K, w.data(), 0, 1, out.data()), -1);
  EXPECT_EQ(rlx_uk_unpack(RLX_UK_Q3_K, 256, w.data(), 0, 1, out.data()), -1);
  EXPECT_EQ(rlx_uk_unpack(RLX_UK_Q4_0, 48, w.data(), 0, 1, out.data()), -1);
  EXPECT_EQ(rlx_uk_unpack(RLX_UK_Q4_0, K, w.data(), 3, 2, out.data()), -1);
  EXPECT_EQ(rlx_uk_unpack(RLX_UK_Q4_0, K, w.data(), -1, 2, out.data()), -1);
  for (uint8_t b : out)
    ASSERT_EQ(b, 0xcd);
  // Repacked products need whole groups of 8 columns; nothing is written.
  std::fill(std::begin(y), std::end(y), 5.0f);
  EXPECT_EQ(rlx_uk_matmul(q4r, prep, 1, K, out.data(), 4, 16, y, 16), -1);
  EXPECT_EQ(rlx_uk_matmul(q4r, prep, 1, K, out.data(), 0, 12, y, 16), -1);
  EXPECT_EQ(rlx_uk_matmul(RLX_UK_Q6_K | RLX_UK_REPACKED_X8, prep, 1, 256,
                          out.data(), 4, 8, y, 16),
            -1);
  EXPECT_EQ(rlx_uk_matmul(RLX_UK_F16 | RLX_UK_REPACKED_X8, prep, 1, K,
                          out.data(), 0, 12, y, 16),
            -1);
  EXPECT_EQ(rlx_uk_matmul(RLX_UK_Q5_0 | RLX_UK_REPACKED_X8, prep, 1, K,
                          out.data(), 0, 8, y, 16),
            -1);
  for (float v : y)
    EXPECT_EQ(v, 5.0f);
  // The plain type still takes any range.
  EXPECT_EQ(rlx_uk_matmul(RLX_UK_Q4_0, prep, 1, K, w.data(), 4, 12, y, 16), 0);
}

//===----------------------------------------------------------------------===//
// Preparation and the C interface
//===----------------------------------------------------------------------===//

/// The prepared values are the activations rounded to the documented grid:
/// |x - xh| <= d / 2 with d = max|x| / 127 (blocks of 32) or max|x| / 128
/// (blocks of 256), and bf16's half ulp.
TEST(UKernelsPrepare, RoundingError) {
  std::mt19937 rng(7);
  const int64_t K = 512;
  std::vector<float> x = randomActivations(1, K, K, rng);
  for (int code : {int(RLX_UK_Q4_0), int(RLX_UK_Q4_K), int(RLX_UK_BF16),
                   int(RLX_UK_F16)}) {
    std::vector<uint8_t> p(rlx_uk_prepared_bytes(code, 1, K));
    ASSERT_EQ(rlx_uk_prepare(code, x.data(), K, 0, 1, K, p.data()), 0);
    std::vector<float> xh(K);
    ASSERT_EQ(rlx_uk_prepared_to_f32(code, p.data(), 0, K, xh.data()), 0);
    const int64_t block = code == RLX_UK_Q4_0 ? 32 : 256;
    for (int64_t k0 = 0; k0 < K; k0 += block) {
      float amax = 0;
      for (int64_t k = k0; k != k0 + block; ++k)
        amax = std::max(amax, std::fabs(x[k]));
      for (int64_t k = k0; k != k0 + block; ++k) {
        double err = std::fabs(double(x[k]) - xh[k]);
        if (code == RLX_UK_F16)
          EXPECT_EQ(err, 0.0);
        else if (code == RLX_UK_BF16)
          EXPECT_LE(err, std::fabs(x[k]) * std::ldexp(1.0, -8));
        else
          EXPECT_LE(err, amax / (block == 32 ? 127.0 : 128.0) * 0.5 * 1.0001)
              << code << " k=" << k;
      }
    }
  }
}

/// Blocks of denormal or huge (finite) activations prepare to finite values
/// and finite products.
TEST(UKernelsPrepare, ExtremeMagnitudes) {
  const int64_t K = 512;
  std::vector<float> x(2 * K);
  for (int64_t k = 0; k != K; ++k) {
    x[k] = (k % 2 ? -1.0f : 1.0f) * 1e-39f * float(k % 7);
    x[K + k] = (k % 3 ? -1.0f : 1.0f) * 3e38f / float(1 + k % 5);
  }
  std::mt19937 rng(5);
  for (const TypeCase &t : kTypes) {
    std::vector<uint8_t> p(rlx_uk_prepared_bytes(t.code, 2, K));
    ASSERT_EQ(rlx_uk_prepare(t.code, x.data(), K, 0, 2, K, p.data()), 0);
    std::vector<float> xh(K);
    for (int64_t m = 0; m != 2; ++m) {
      ASSERT_EQ(rlx_uk_prepared_to_f32(t.code, p.data(), m, K, xh.data()), 0);
      for (int64_t k = 0; k != K; ++k) {
        ASSERT_TRUE(std::isfinite(xh[k])) << t.name << " row " << m;
        // Zeros stay zeros and nothing changes sign.
        ASSERT_GE(double(xh[k]) * x[m * K + k], 0.0) << t.name << " " << k;
        if (x[m * K + k] == 0)
          ASSERT_EQ(xh[k], 0.0f) << t.name << " " << k;
      }
    }
    // The tiny row against small weights: finite, near zero.
    std::vector<uint8_t> w = randomWeights(t.code, 3, K, rng);
    float y[3] = {};
    ASSERT_EQ(rlx_uk_matmul(t.code, p.data(), 1, K, w.data(), 0, 3, y, 3), 0);
    for (float v : y)
      EXPECT_TRUE(std::isfinite(v) && std::fabs(v) < 1e-30f) << t.name;
  }
}

TEST(UKernelsApi, SupportsAndSizes) {
  for (const TypeCase &t : kTypes)
    EXPECT_EQ(rlx_uk_supports(t.code), 1) << t.name;
  EXPECT_EQ(rlx_uk_supports(0), 0);  // f32
  EXPECT_EQ(rlx_uk_supports(15), 0); // q8_K
  EXPECT_EQ(rlx_uk_block_elements(RLX_UK_Q4_0), 32);
  EXPECT_EQ(rlx_uk_block_elements(RLX_UK_Q6_K), 256);
  EXPECT_EQ(rlx_uk_block_elements(RLX_UK_BF16), 1);
  EXPECT_EQ(rlx_uk_weight_row_bytes(RLX_UK_Q4_0, 64), 36u);
  EXPECT_EQ(rlx_uk_weight_row_bytes(RLX_UK_Q4_K, 512), 288u);
  EXPECT_EQ(rlx_uk_weight_row_bytes(RLX_UK_F16, 3), 6u);
  EXPECT_EQ(rlx_uk_weight_row_bytes(RLX_UK_Q4_K, 100), 0u);
  for (const TypeCase &t : kTypes) {
    const int64_t K = 4096;
    llvm::Expected<uint64_t> bytes = storageBytes(dtypeOf(t.code), {1, K});
    ASSERT_TRUE(bool(bytes)) << llvm::toString(bytes.takeError());
    EXPECT_EQ(rlx_uk_weight_row_bytes(t.code, K), *bytes) << t.name;
    size_t row = rlx_uk_prepared_row_bytes(t.code, K);
    EXPECT_EQ(row % 64, 0u) << t.name;
    EXPECT_EQ(rlx_uk_prepared_bytes(t.code, 3, K), 3 * row) << t.name;
  }
}

TEST(UKernelsApi, RejectsInvalidArguments) {
  float x[64] = {}, y[4] = {};
  uint8_t buf[4096] = {}, w[4096] = {};
  EXPECT_EQ(rlx_uk_prepare(0, x, 64, 0, 1, 64, buf), -1);
  EXPECT_EQ(rlx_uk_prepare(RLX_UK_Q4_0, x, 64, 0, 1, 48, buf), -1);
  EXPECT_EQ(rlx_uk_prepare(RLX_UK_Q4_0, x, 64, 1, 0, 64, buf), -1);
  EXPECT_EQ(rlx_uk_matmul(RLX_UK_Q4_K, buf, 1, 64, w, 0, 1, y, 1), -1);
  EXPECT_EQ(rlx_uk_matmul(RLX_UK_Q4_0, buf, 1, 64, w, 2, 1, y, 1), -1);
  EXPECT_EQ(rlx_uk_matmul(RLX_UK_Q4_0, buf, -1, 64, w, 0, 1, y, 1), -1);
  // Empty ranges are fine and write nothing.
  y[0] = 5;
  EXPECT_EQ(rlx_uk_matmul(RLX_UK_Q4_0, buf, 1, 64, w, 1, 1, y, 1), 0);
  EXPECT_EQ(y[0], 5);
  // K = 0 gives zeros.
  EXPECT_EQ(rlx_uk_matmul(RLX_UK_BF16, buf, 1, 0, w, 0, 1, y, 1), 0);
  EXPECT_EQ(y[0], 0);
}

TEST(UKernelsApi, SelectsInstructionSets) {
  std::string before = rlx_uk_isa();
  EXPECT_EQ(rlx_uk_select_isa("sse9"), -1);
  EXPECT_EQ(rlx_uk_select_isa(nullptr), -1);
  EXPECT_EQ(before, rlx_uk_isa());
  ASSERT_EQ(rlx_uk_select_isa("scalar"), 0);
  EXPECT_STREQ(rlx_uk_isa(), "scalar");
  ASSERT_EQ(rlx_uk_select_isa(before.c_str()), 0);
}

} // namespace
