//===- Enums.h - Enumerations shared by the compiler and runtime -*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// One definition of each concept the compile profile, the passes and the
// runtime share: the fusion policy, the code generation target, the GEMM
// strategy, the compute precision, the storage spaces of a compiled model and
// the layouts its parameters are stored in. Each enum has one spelling (the
// one the profile's TOML and the pass options use), `stringify<Enum>` and
// `symbolize<Enum>`. Nothing here depends on MLIR.
//
// Naming: the code generator for GPUs is called SPIR-V in the compiler
// (`Target::Spirv`, `rlx-gpu-pipeline`) and the runtime that runs its output
// is called Vulkan (`Device::Vulkan` in the Session).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_SUPPORT_ENUMS_H
#define RLX_SUPPORT_ENUMS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace rlx {

/// How HIR is lowered to MIR. `Direct` lowers each HIR op straight to its
/// fused MIR form; `Fusable` emits MIR primitives for the fusion patterns to
/// collapse.
enum class FusionPolicy { Direct, Fusable };

/// The code generator a compilation targets.
enum class Target { Cpu, Spirv };

/// The target a profile asks for: `Auto` follows the device compiled for
/// (resolveTarget).
enum class TargetChoice { Auto, Cpu, Spirv };

/// Element type used for computation.
enum class ComputePrecision { F32, F16, BF16 };

/// Whether mixed precision (e.g. f32 accumulation for f16 compute) is used.
enum class MixedPrecision { None, Auto };

/// The precision weight matrices are kept in. `Stored`: as the weight file
/// stores them (f16, bf16 or ggml blocks stay so down to the kernels that
/// read them); `F32`: widened to f32 when loaded; `BF16`, `F16`, `Q8_0`,
/// `Q4_0`: converted (re-quantized) to that type when loaded, for matrices
/// whose rows are a whole number of its blocks (others stay f32). Vectors
/// (norms, biases) are f32 in every case.
enum class WeightPrecision { Stored, F32, BF16, F16, Q8_0, Q4_0 };

/// How the CPU code generator implements GEMMs: `Generated` register-tiled
/// kernels over weights packed at load time, `Blas` calls to cblas_sgemm,
/// `Auto` the generated kernel wherever the weight can be packed.
enum class GemmStrategy { Auto, Blas, Generated };

/// How the CPU keeps q4_0, q8_0, q4_K, q5_K, q6_K, f16 and bf16 weights that
/// only matmuls read
/// (`[backend.cpu] repack_weights`): `None` as the file stores them (mapped
/// from it), `X8` with each group of 8 rows interleaved (ParamLayout::X8:
/// the micro-kernels' faster GEMM, copied at load), `Auto` X8 where the
/// micro-kernels use AVX2 (where the interleaved GEMM measured faster).
enum class WeightRepack { Auto, None, X8 };

/// When a model's graphs compile (`[execution] mode`): `Lazy` each shape
/// bucket on its first use, `Eager` every graph a run will use before it
/// starts, `Aot` none at run time (every graph must come from the compile
/// cache, filled ahead by `rlx-run --precompile`).
enum class ExecutionMode { Lazy, Eager, Aot };

/// Where a profile says its model runs (`[execution] device`): `Any` the
/// session's device, else the CPU or a Vulkan device.
enum class ExecutionDevice { Any, Cpu, Vulkan };

/// The storage a view of a compiled model lives in.
enum class BufferSpace : uint8_t {
  /// Activations, inputs and outputs, planned by liveness.
  Arena = 0,
  /// Parameters, loaded once.
  Params = 1,
  /// Constants the compiler materialized (SPIR-V only: the CPU code embeds
  /// its constants).
  Constants = 2,
};

/// How a parameter is stored in the parameter pool.
enum class ParamLayout : uint8_t {
  /// As the weight file has it (row-major).
  RowMajor = 0,
  /// A `[N, K]` f32 matrix as N/16 panels of `[K][16]`: element (r, c) at
  /// ((r / 16) * K + c) * 16 + r % 16 (the generated GEMM's B operand).
  NK16 = 1,
  /// A `[N, K]` q4_0, q8_0, q4_K or q6_K matrix with each group of 8 rows
  /// interleaved
  /// block by block (rlx_uk_repack: the same bytes, permuted within the
  /// group), read by the micro-kernels with RLX_UK_REPACKED_X8.
  X8 = 2,
};

/// The spellings: "direct", "fusable"; "cpu", "spirv"; "auto", "cpu",
/// "spirv"; "f32", "f16", "bf16"; "none", "auto"; "stored", "f32"; "auto",
/// "blas", "generated"; "lazy", "eager", "aot"; "any", "cpu", "vulkan";
/// "arena", "params", "constants"; "row_major", "nk16", "x8"; "auto", "none",
/// "x8".
llvm::StringRef stringifyFusionPolicy(FusionPolicy value);
llvm::StringRef stringifyTarget(Target value);
llvm::StringRef stringifyTargetChoice(TargetChoice value);
llvm::StringRef stringifyComputePrecision(ComputePrecision value);
llvm::StringRef stringifyMixedPrecision(MixedPrecision value);
llvm::StringRef stringifyWeightPrecision(WeightPrecision value);
llvm::StringRef stringifyGemmStrategy(GemmStrategy value);
llvm::StringRef stringifyExecutionMode(ExecutionMode value);
llvm::StringRef stringifyExecutionDevice(ExecutionDevice value);
llvm::StringRef stringifyBufferSpace(BufferSpace value);
llvm::StringRef stringifyParamLayout(ParamLayout value);
llvm::StringRef stringifyWeightRepack(WeightRepack value);

/// Parses a spelling; std::nullopt when it is not one.
std::optional<FusionPolicy> symbolizeFusionPolicy(llvm::StringRef str);
std::optional<Target> symbolizeTarget(llvm::StringRef str);
std::optional<TargetChoice> symbolizeTargetChoice(llvm::StringRef str);
std::optional<ComputePrecision> symbolizeComputePrecision(llvm::StringRef str);
std::optional<MixedPrecision> symbolizeMixedPrecision(llvm::StringRef str);
std::optional<WeightPrecision> symbolizeWeightPrecision(llvm::StringRef str);
std::optional<GemmStrategy> symbolizeGemmStrategy(llvm::StringRef str);
std::optional<ExecutionMode> symbolizeExecutionMode(llvm::StringRef str);
std::optional<ExecutionDevice> symbolizeExecutionDevice(llvm::StringRef str);
std::optional<BufferSpace> symbolizeBufferSpace(llvm::StringRef str);
std::optional<ParamLayout> symbolizeParamLayout(llvm::StringRef str);
std::optional<WeightRepack> symbolizeWeightRepack(llvm::StringRef str);

/// Every spelling of the enum `E`, indexed by enumerator value (for
/// messages listing the accepted values).
template <typename E> llvm::ArrayRef<llvm::StringRef> enumSpellings();

/// Parses a spelling of any of the enums above.
template <typename E> std::optional<E> symbolizeEnum(llvm::StringRef str) {
  llvm::ArrayRef<llvm::StringRef> names = enumSpellings<E>();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == str)
      return static_cast<E>(i);
  return std::nullopt;
}

/// Resolves a profile's target choice for a compilation whose device runs
/// code of `deviceTarget`: `Auto` becomes `deviceTarget`. The only place
/// `auto` is resolved.
inline Target resolveTarget(TargetChoice choice, Target deviceTarget) {
  switch (choice) {
  case TargetChoice::Cpu:
    return Target::Cpu;
  case TargetChoice::Spirv:
    return Target::Spirv;
  case TargetChoice::Auto:
    break;
  }
  return deviceTarget;
}

} // namespace rlx

#endif // RLX_SUPPORT_ENUMS_H
