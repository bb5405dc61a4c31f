//===- ExecutionConfig.cpp - What a model is and how it runs --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Flow/ExecutionConfig.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

using namespace rlx;
namespace json = llvm::json;

llvm::StringRef rlx::stringifyModelVariant(ModelVariant variant) {
  switch (variant) {
  case ModelVariant::Prefill:
    return "prefill";
  case ModelVariant::Decode:
    return "decode";
  case ModelVariant::Encoder:
    return "encoder";
  }
  return "?";
}

/// The first 16 hex digits of `text`'s SHA-256.
static std::string shortHash(llvm::StringRef text) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(text)),
                     /*LowerCase=*/true)
      .substr(0, 16);
}

std::string ModelComponent::fingerprint() const {
  return shortHash((stringifyModelVariant(variant) + "\n" +
                    stringifyGemmStrategy(dispatch) + "\n" +
                    stringifyExecutionMode(mode) + "\n" + profileKey + "\n" +
                    stringifyWeightPrecision(weights) + "\n" +
                    stringifyComputePrecision(kvCache) + "\n" + composition)
                       .str());
}

ModelExecutionConfig ModelExecutionConfig::of(const BuiltModel &built,
                                              ModelVariant variant) {
  const CompileProfile &p = built.profile;
  ModelExecutionConfig c;
  c.component.variant = variant;
  c.component.dispatch = p.backend.cpu.gemm;
  c.component.mode = p.execution.mode;
  // The first preset the profile equals (several share their settings),
  // else the nearest one and what differs from it.
  CompileProfile::NearestPreset nearest = p.nearestPreset();
  c.component.profileKey = nearest.name;
  if (!nearest.differences.empty())
    c.component.profileKey = "custom (" + nearest.name + " with " +
                             llvm::join(nearest.differences, ", ") + ")";
  c.component.weights = p.precision.weights;
  c.component.kvCache = p.precision.kvCache;
  c.component.composition = shortHash(built.mlir);
  c.preset.threads = p.backend.cpu.threads;
  c.preset.decodeBuckets = p.execution.decodeBuckets;
  c.preset.memoryBudgetMB = p.execution.memoryBudgetMB;
  c.preset.device = p.execution.device;
  c.preset.tensorParallel = p.parallel.tensor;
  return c;
}

std::string ModelExecutionConfig::describe() const {
  std::string out;
  llvm::raw_string_ostream os(out);
  const ModelComponent &c = component;
  os << stringifyModelVariant(c.variant) << " graph, mode "
     << stringifyExecutionMode(c.mode) << ", gemm "
     << stringifyGemmStrategy(c.dispatch) << ", weights "
     << stringifyWeightPrecision(c.weights) << ", kv_cache "
     << stringifyComputePrecision(c.kvCache) << ", profile " << c.profileKey
     << ", composition " << c.composition << "; threads ";
  if (preset.threads)
    os << preset.threads;
  else
    os << "all";
  os << ", decode buckets ";
  if (preset.decodeBuckets.empty())
    os << "16 doubling";
  else
    llvm::interleave(preset.decodeBuckets, os, ",");
  os << ", memory budget ";
  if (preset.memoryBudgetMB)
    os << *preset.memoryBudgetMB << " MiB";
  else
    os << "default";
  os << ", device " << stringifyExecutionDevice(preset.device);
  if (preset.tensorParallel > 1)
    os << ", tensor parallel " << preset.tensorParallel << " ranks (MPI)";
  os << "; fingerprint " << c.fingerprint();
  return out;
}

json::Value ModelExecutionConfig::toJSON() const {
  const ModelComponent &c = component;
  json::Array buckets;
  for (int64_t b : preset.decodeBuckets)
    buckets.push_back(b);
  return json::Object{
      {"component",
       json::Object{{"variant", stringifyModelVariant(c.variant)},
                    {"dispatch", stringifyGemmStrategy(c.dispatch)},
                    {"mode", stringifyExecutionMode(c.mode)},
                    {"profile_key", c.profileKey},
                    {"weights", stringifyWeightPrecision(c.weights)},
                    {"kv_cache", stringifyComputePrecision(c.kvCache)},
                    {"composition", c.composition}}},
      {"preset",
       json::Object{{"threads", static_cast<int64_t>(preset.threads)},
                    {"decode_buckets", std::move(buckets)},
                    {"memory_budget_mb", preset.memoryBudgetMB
                                             ? json::Value(static_cast<int64_t>(
                                                   *preset.memoryBudgetMB))
                                             : json::Value(nullptr)},
                    {"device", stringifyExecutionDevice(preset.device)},
                    {"tensor_parallel", preset.tensorParallel}}},
      {"fingerprint", c.fingerprint()}};
}
