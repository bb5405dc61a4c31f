//===- NormProj.h - The compiler tests' model ---------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// RMSNorm then a projection with a dynamic sequence length, run on fixed
// data and checked against a naive loop.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_UNITTESTS_COMPILER_NORMPROJ_H
#define RLX_UNITTESTS_COMPILER_NORMPROJ_H

#include "RLX/Runtime/CompiledModel.h"
#include "llvm/ADT/STLExtras.h"
#include "gtest/gtest.h"
#include <cmath>
#include <vector>

namespace rlx::test {

/// RMSNorm then a projection, with a dynamic sequence length.
inline constexpr const char *kNormProj = R"mlir(
func.func @norm_proj(%x: tensor<1x?x64xf32> {rlx.name = "x"})
    -> tensor<1x?x32xf32> {
  %w = hir.param "norm.weight" : tensor<64xf32>
  %y = hir.rms_norm %x, %w {epsilon = 1.0e-6 : f32}
      : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %p = hir.param "proj.weight" : tensor<32x64xf32>
  %z = hir.linear %y, %p : (tensor<1x?x64xf32>, tensor<32x64xf32>)
      -> tensor<1x?x32xf32>
  return %z : tensor<1x?x32xf32>
}
)mlir";

/// Runs `model` (compiled from kNormProj for `tokens` tokens) on fixed data,
/// checks it against a naive loop (1e-4 relative) and returns the output.
inline std::vector<float> runNormProj(CompiledModel &model, int64_t tokens) {
  std::vector<float> x(tokens * 64), w(64), p(32 * 64);
  for (auto [i, v] : llvm::enumerate(x))
    v = std::sin(0.37f * i);
  for (auto [i, v] : llvm::enumerate(w))
    v = 0.5f + 0.01f * i;
  for (auto [i, v] : llvm::enumerate(p))
    v = std::cos(0.11f * i) * 0.1f;
  EXPECT_FALSE(llvm::errorToBool(model.setParam("norm.weight", w)));
  EXPECT_FALSE(llvm::errorToBool(model.setParam("proj.weight", p)));
  TensorMap_t inputs;
  inputs.emplace("x", Tensor::fromF32({1, tokens, 64}, x));
  llvm::Expected<TensorMap_t> out = model.run(inputs);
  if (!out) {
    ADD_FAILURE() << llvm::toString(out.takeError());
    return {};
  }
  llvm::ArrayRef<float> data = out->begin()->second.data<float>();
  std::vector<float> y(data.begin(), data.end());
  EXPECT_EQ(y.size(), static_cast<size_t>(tokens * 32));
  for (int64_t t = 0; t < tokens; ++t) {
    double ss = 0;
    for (int64_t k = 0; k < 64; ++k)
      ss += double(x[t * 64 + k]) * x[t * 64 + k];
    double inv = 1.0 / std::sqrt(ss / 64 + 1e-6);
    for (int64_t n = 0; n < 32; ++n) {
      double ref = 0;
      for (int64_t k = 0; k < 64; ++k)
        ref += x[t * 64 + k] * inv * w[k] * p[n * 64 + k];
      EXPECT_NEAR(y[t * 32 + n], ref, 1e-4 * (1 + std::fabs(ref)));
    }
  }
  return y;
}

} // namespace rlx::test

#endif // RLX_UNITTESTS_COMPILER_NORMPROJ_H
