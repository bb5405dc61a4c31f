//===- Enums.cpp - Enumerations shared by the compiler and runtime --------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Support/Enums.h"

using namespace llvm;
using namespace rlx;

static constexpr StringRef fusionPolicyNames[] = {"direct", "fusable"};
static constexpr StringRef targetNames[] = {"cpu", "spirv"};
static constexpr StringRef targetChoiceNames[] = {"auto", "cpu", "spirv"};
static constexpr StringRef computePrecisionNames[] = {"f32", "f16", "bf16"};
static constexpr StringRef mixedPrecisionNames[] = {"none", "auto"};
static constexpr StringRef weightPrecisionNames[] = {"stored", "f32",  "bf16",
                                                     "f16",    "q8_0", "q4_0"};
static constexpr StringRef gemmStrategyNames[] = {"auto", "blas", "generated"};
static constexpr StringRef executionModeNames[] = {"lazy", "eager", "aot"};
static constexpr StringRef executionDeviceNames[] = {"any", "cpu", "vulkan"};
static constexpr StringRef bufferSpaceNames[] = {"arena", "params",
                                                 "constants"};
static constexpr StringRef paramLayoutNames[] = {"row_major", "nk16", "x8"};
static constexpr StringRef weightRepackNames[] = {"auto", "none", "x8"};

template <typename E, size_t N>
static StringRef nameOf(const StringRef (&names)[N], E value) {
  auto i = static_cast<size_t>(value);
  return i < N ? names[i] : StringRef();
}

#define RLX_ENUM_SPELLINGS(E, table)                                           \
  template <> ArrayRef<StringRef> rlx::enumSpellings<E>() { return table; }
RLX_ENUM_SPELLINGS(FusionPolicy, fusionPolicyNames)
RLX_ENUM_SPELLINGS(Target, targetNames)
RLX_ENUM_SPELLINGS(TargetChoice, targetChoiceNames)
RLX_ENUM_SPELLINGS(ComputePrecision, computePrecisionNames)
RLX_ENUM_SPELLINGS(MixedPrecision, mixedPrecisionNames)
RLX_ENUM_SPELLINGS(WeightPrecision, weightPrecisionNames)
RLX_ENUM_SPELLINGS(GemmStrategy, gemmStrategyNames)
RLX_ENUM_SPELLINGS(ExecutionMode, executionModeNames)
RLX_ENUM_SPELLINGS(ExecutionDevice, executionDeviceNames)
RLX_ENUM_SPELLINGS(BufferSpace, bufferSpaceNames)
RLX_ENUM_SPELLINGS(ParamLayout, paramLayoutNames)
RLX_ENUM_SPELLINGS(WeightRepack, weightRepackNames)
#undef RLX_ENUM_SPELLINGS

StringRef rlx::stringifyFusionPolicy(FusionPolicy v) {
  return nameOf(fusionPolicyNames, v);
}
StringRef rlx::stringifyTarget(Target v) { return nameOf(targetNames, v); }
StringRef rlx::stringifyTargetChoice(TargetChoice v) {
  return nameOf(targetChoiceNames, v);
}
StringRef rlx::stringifyComputePrecision(ComputePrecision v) {
  return nameOf(computePrecisionNames, v);
}
StringRef rlx::stringifyMixedPrecision(MixedPrecision v) {
  return nameOf(mixedPrecisionNames, v);
}
StringRef rlx::stringifyWeightPrecision(WeightPrecision v) {
  return nameOf(weightPrecisionNames, v);
}
StringRef rlx::stringifyGemmStrategy(GemmStrategy v) {
  return nameOf(gemmStrategyNames, v);
}
StringRef rlx::stringifyExecutionMode(ExecutionMode v) {
  return nameOf(executionModeNames, v);
}
StringRef rlx::stringifyExecutionDevice(ExecutionDevice v) {
  return nameOf(executionDeviceNames, v);
}
StringRef rlx::stringifyBufferSpace(BufferSpace v) {
  return nameOf(bufferSpaceNames, v);
}
StringRef rlx::stringifyParamLayout(ParamLayout v) {
  return nameOf(paramLayoutNames, v);
}
StringRef rlx::stringifyWeightRepack(WeightRepack v) {
  return nameOf(weightRepackNames, v);
}

std::optional<FusionPolicy> rlx::symbolizeFusionPolicy(StringRef s) {
  return symbolizeEnum<FusionPolicy>(s);
}
std::optional<Target> rlx::symbolizeTarget(StringRef s) {
  return symbolizeEnum<Target>(s);
}
std::optional<TargetChoice> rlx::symbolizeTargetChoice(StringRef s) {
  return symbolizeEnum<TargetChoice>(s);
}
std::optional<ComputePrecision> rlx::symbolizeComputePrecision(StringRef s) {
  return symbolizeEnum<ComputePrecision>(s);
}
std::optional<MixedPrecision> rlx::symbolizeMixedPrecision(StringRef s) {
  return symbolizeEnum<MixedPrecision>(s);
}
std::optional<WeightPrecision> rlx::symbolizeWeightPrecision(StringRef s) {
  return symbolizeEnum<WeightPrecision>(s);
}
std::optional<GemmStrategy> rlx::symbolizeGemmStrategy(StringRef s) {
  return symbolizeEnum<GemmStrategy>(s);
}
std::optional<ExecutionMode> rlx::symbolizeExecutionMode(StringRef s) {
  return symbolizeEnum<ExecutionMode>(s);
}
std::optional<ExecutionDevice> rlx::symbolizeExecutionDevice(StringRef s) {
  return symbolizeEnum<ExecutionDevice>(s);
}
std::optional<BufferSpace> rlx::symbolizeBufferSpace(StringRef s) {
  return symbolizeEnum<BufferSpace>(s);
}
std::optional<ParamLayout> rlx::symbolizeParamLayout(StringRef s) {
  return symbolizeEnum<ParamLayout>(s);
}
std::optional<WeightRepack> rlx::symbolizeWeightRepack(StringRef s) {
  return symbolizeEnum<WeightRepack>(s);
}
