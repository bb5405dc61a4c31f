//===- TinyModel.h - The example's model, weights and reference -*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A pre-norm SwiGLU block, the feed-forward half of a LLaMA layer:
//
//   n = x / sqrt(mean(x^2) + eps) * norm
//   y = x + down(silu(gate(n)) * up(n))
//
// with deterministic pseudo-random weights (Hugging Face names), an input,
// and the same block as naive loops to check RLX's result against. Only the
// runtime's headers are used, so tiny-exec (RLX::Runtime) shares it.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_EXAMPLES_STANDALONE_CPP_TINYMODEL_H
#define RLX_EXAMPLES_STANDALONE_CPP_TINYMODEL_H

#include "RLX/Weights/WeightSource.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace tiny {

constexpr int64_t kTokens = 5, kHidden = 32, kInter = 48;
constexpr float kEps = 1e-5f;

/// `n` values in [offset - scale, offset + scale) from a fixed LCG, so that
/// both executables make the same weights without sharing a file.
inline std::vector<float> values(size_t n, uint32_t seed, float scale,
                                 float offset = 0.0f) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (float &x : v) {
    s = s * 1664525u + 1013904223u;
    x = offset + scale * (float(s >> 8) / float(1u << 23) - 1.0f);
  }
  return v;
}

struct Weights {
  std::vector<float> norm = values(kHidden, 1, 0.1f, 1.0f);
  std::vector<float> gate = values(kInter * kHidden, 2, 0.3f);
  std::vector<float> up = values(kInter * kHidden, 3, 0.3f);
  std::vector<float> down = values(kHidden * kInter, 4, 0.3f);
};

inline std::vector<float> input() { return values(kTokens * kHidden, 5, 1.0f); }

/// The weights under the names the flow reads.
inline llvm::Error addWeights(const Weights &w, rlx::TensorMap &map) {
  if (llvm::Error err = map.add("norm.weight", {kHidden}, w.norm))
    return err;
  if (llvm::Error err =
          map.add("mlp.gate_proj.weight", {kInter, kHidden}, w.gate))
    return err;
  if (llvm::Error err = map.add("mlp.up_proj.weight", {kInter, kHidden}, w.up))
    return err;
  return map.add("mlp.down_proj.weight", {kHidden, kInter}, w.down);
}

/// The block as naive loops, in double precision.
inline std::vector<float> reference(const Weights &w, llvm::ArrayRef<float> x) {
  std::vector<float> y(x.size());
  std::vector<double> n(kHidden), h(kInter);
  for (int64_t t = 0; t < kTokens; ++t) {
    const float *xt = x.data() + t * kHidden;
    double ss = 0;
    for (int64_t i = 0; i < kHidden; ++i)
      ss += double(xt[i]) * xt[i];
    double inv = 1.0 / std::sqrt(ss / kHidden + kEps);
    for (int64_t i = 0; i < kHidden; ++i)
      n[i] = xt[i] * inv * w.norm[i];
    for (int64_t j = 0; j < kInter; ++j) {
      double g = 0, u = 0;
      for (int64_t i = 0; i < kHidden; ++i) {
        g += n[i] * w.gate[j * kHidden + i];
        u += n[i] * w.up[j * kHidden + i];
      }
      h[j] = g / (1.0 + std::exp(-g)) * u;
    }
    for (int64_t i = 0; i < kHidden; ++i) {
      double d = 0;
      for (int64_t j = 0; j < kInter; ++j)
        d += h[j] * w.down[i * kInter + j];
      y[t * kHidden + i] = float(xt[i] + d);
    }
  }
  return y;
}

/// Compares `got` with `want` (relative to the largest reference value) and
/// reports the largest difference; false on a mismatch.
inline bool check(llvm::StringRef what, llvm::ArrayRef<float> got,
                  llvm::ArrayRef<float> want, float tol = 1e-4f) {
  if (got.size() != want.size()) {
    llvm::errs() << what << ": " << got.size() << " values, expected "
                 << want.size() << "\n";
    return false;
  }
  float scale = 1.0f, worst = 0.0f;
  for (float v : want)
    scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i) {
    float diff = std::fabs(got[i] - want[i]);
    if (std::isnan(diff) || diff > worst)
      worst = diff; // a NaN stays
  }
  bool ok = worst <= tol * scale;
  (ok ? llvm::outs() : llvm::errs())
      << what << ": " << got.size() << " values, y[0] = " << got[0]
      << " (reference " << want[0] << "), max |diff| = " << worst
      << (ok ? ": OK" : ": MISMATCH") << "\n";
  return ok;
}

} // namespace tiny

#endif // RLX_EXAMPLES_STANDALONE_CPP_TINYMODEL_H
