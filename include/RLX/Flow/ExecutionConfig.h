//===- ExecutionConfig.h - What a model is and how it runs ------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The original system's split between what a compiled model *is* (a
// ModelComponent: variant, kernel dispatch, compilation mode, profile key,
// precision, layer-composition fingerprint) and how it is *run* (an
// ExecutionPreset: threads, bucket sizes, memory budget, device), paired in
// a ModelExecutionConfig. In RLX both halves live in the compile profile:
// the component in [precision], [backend.cpu] gemm and [execution] mode, the
// preset in [backend.cpu] threads and the rest of [execution]. This is the
// view tools print and key things by.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_FLOW_EXECUTIONCONFIG_H
#define RLX_FLOW_EXECUTIONCONFIG_H

#include "RLX/Flow/ModelFlow.h"
#include "RLX/Profile/CompileProfile.h"
#include "llvm/Support/JSON.h"
#include <optional>
#include <string>

namespace rlx {

/// Which graph of a model a component is.
enum class ModelVariant { Prefill, Decode, Encoder };
llvm::StringRef stringifyModelVariant(ModelVariant variant);

/// What a compiled model is.
struct ModelComponent {
  ModelVariant variant = ModelVariant::Prefill;
  /// How GEMMs run: generated kernels, BLAS, or auto ([backend.cpu] gemm).
  GemmStrategy dispatch = GemmStrategy::Auto;
  /// When its graphs compile ([execution] mode).
  ExecutionMode mode = ExecutionMode::Lazy;
  /// The first preset the profile equals (several share settings), else
  /// "custom (<nearest preset> with <section.key = value>, ...)".
  std::string profileKey;
  /// [precision] weights and kv_cache.
  WeightPrecision weights = WeightPrecision::F32;
  ComputePrecision kvCache = ComputePrecision::F32;
  /// The first 16 hex digits of the SHA-256 of the model's layer
  /// composition (its HIR: blocks, shapes, weight names, attributes).
  std::string composition;

  /// The first 16 hex digits of the SHA-256 of all of the above.
  std::string fingerprint() const;
};

/// How it is run.
struct ExecutionPreset {
  /// [backend.cpu] threads (0: all cores).
  unsigned threads = 0;
  /// [execution] decode_buckets (empty: 16, 32, 64, ...).
  llvm::SmallVector<int64_t, 8> decodeBuckets;
  /// [execution] memory_budget_mb.
  std::optional<uint64_t> memoryBudgetMB;
  /// [execution] device.
  ExecutionDevice device = ExecutionDevice::Any;
  /// [parallel] tensor: the MPI ranks the model is split over.
  int64_t tensorParallel = 1;
};

struct ModelExecutionConfig {
  ModelComponent component;
  ExecutionPreset preset;

  /// The configuration of `built` (its profile and HIR) as `variant`.
  static ModelExecutionConfig of(const BuiltModel &built, ModelVariant variant);
  /// "decode graph, mode lazy, gemm auto, weights f32, kv_cache f32, profile
  /// llama32_decode, composition 0123456789abcdef; threads all, decode
  /// buckets 16 doubling, memory budget default, device any; fingerprint
  /// ...".
  std::string describe() const;
  /// {"component": {...}, "preset": {...}, "fingerprint"}.
  llvm::json::Value toJSON() const;
};

} // namespace rlx

#endif // RLX_FLOW_EXECUTIONCONFIG_H
