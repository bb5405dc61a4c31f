//===- CompileProfile.h - Tier-1 compile configuration ----------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A CompileProfile is the tier-1 configuration of a compilation: which fusion
// policy HIR is lowered with, which fusion patterns run, which cleanup passes
// run, the compute precision and per-backend hints. It is a plain struct that
// can be built in C++ (usually from one of the presets) or loaded from a
// `*.rlx.toml` file. The schema is documented in docs/CompileProfile.md.
//
// This library depends only on LLVM Support; it does not link MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_PROFILE_COMPILEPROFILE_H
#define RLX_PROFILE_COMPILEPROFILE_H

#include "RLX/Support/Enums.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace rlx {

//===----------------------------------------------------------------------===//
// Enumerations
//===----------------------------------------------------------------------===//

/// The fusion pattern names accepted in `fusion.disable`: matmul-epilogue,
/// residual-norm, shared-input-matmul, swiglu, attention, attention-block,
/// elementwise-region.
llvm::ArrayRef<llvm::StringRef> knownFusionPatterns();

//===----------------------------------------------------------------------===//
// CompileProfile
//===----------------------------------------------------------------------===//

/// Tier-1 compile configuration. All fields have defaults; the default value
/// equals llama32Prefill().
struct CompileProfile {
  /// `[fusion]`: how HIR is lowered and which fusion patterns run.
  struct FusionProfile {
    /// `policy`: HIR-to-MIR lowering policy.
    FusionPolicy policy = FusionPolicy::Direct;
    /// `target`: the code generator whose fusion rules apply; `auto`
    /// follows the device compiled for.
    TargetChoice target = TargetChoice::Auto;
    /// `assert_clean`: fail compilation if fusable patterns remain unfused.
    bool assertClean = false;
    /// `skip`: run no fusion pass at all.
    bool skip = false;
    /// `disable`: fusion patterns to turn off (names from
    /// knownFusionPatterns(), no repeats), in file order.
    llvm::SmallVector<std::string, 2> disable;

    /// True when `pattern` is listed in `disable` or fusion is skipped.
    bool isDisabled(llvm::StringRef pattern) const;

    bool operator==(const FusionProfile &other) const;
    bool operator!=(const FusionProfile &other) const {
      return !(*this == other);
    }
  };

  /// `[passes]`: generic cleanup passes.
  struct PassProfile {
    /// `dce`: dead-code elimination.
    bool dce = true;
    /// `constant_folding`: fold constant subgraphs.
    bool constantFolding = true;
    /// `verbose`: print each pass and the IR after it.
    bool verbose = false;

    bool operator==(const PassProfile &other) const;
    bool operator!=(const PassProfile &other) const {
      return !(*this == other);
    }
  };

  /// `[precision]`: compute element type.
  struct PrecisionProfile {
    /// `compute`: element type of computation.
    ComputePrecision compute = ComputePrecision::F32;
    /// `mixed`: mixed-precision mode.
    MixedPrecision mixed = MixedPrecision::None;
    /// `weights`: keep weight matrices as the file stores them ("stored":
    /// f16, bf16 and ggml blocks are read by the kernels as they are), widen
    /// them to f32 when loading ("f32"), or convert them to "bf16", "f16",
    /// "q8_0" or "q4_0" when loading.
    WeightPrecision weights = WeightPrecision::F32;
    /// `kv_cache`: element type of the keys and values a decoder keeps
    /// between steps ("f32", "f16" or "bf16"); attention reads them so and
    /// computes in f32.
    ComputePrecision kvCache = ComputePrecision::F32;

    bool operator==(const PrecisionProfile &other) const;
    bool operator!=(const PrecisionProfile &other) const {
      return !(*this == other);
    }
  };

  /// `[backend.cpu]`: CPU backend hints.
  struct CpuBackendProfile {
    /// `unfuse_regions`: expand fused regions back into plain ops.
    bool unfuseRegions = false;
    /// `gemm`: GEMM implementation.
    GemmStrategy gemm = GemmStrategy::Auto;
    /// `repack_weights`: how q4_0, q8_0, q4_K, q5_K, q6_K, f16 and bf16 GEMM
    /// weights are kept.
    WeightRepack repackWeights = WeightRepack::Auto;
    /// `threads`: worker threads; 0 means all cores.
    unsigned threads = 0;
    /// `attention_rows`: query positions per register tile of the blocked
    /// attention (lir-select-strategy's attention-rows); 0: the code
    /// generator's choice.
    unsigned attentionRows = 0;

    bool operator==(const CpuBackendProfile &other) const;
    bool operator!=(const CpuBackendProfile &other) const {
      return !(*this == other);
    }
  };

  /// `[backend.spirv]`: SPIR-V / Vulkan backend hints.
  struct SpirvBackendProfile {
    /// `unfuse_regions`: expand fused regions back into plain ops.
    bool unfuseRegions = false;
    /// `device`: Vulkan device name; empty selects the first discrete GPU,
    /// else any device.
    std::string device;
    /// `workgroup_size`: default workgroup size, a power of two in [1, 1024].
    unsigned workgroupSize = 64;
    /// `cooperative_matrix`: use VK_KHR_cooperative_matrix for GEMMs.
    bool cooperativeMatrix = false;
    /// `optimize`: run spirv-opt's performance passes on every kernel
    /// (each module is validated either way).
    bool optimize = true;

    bool operator==(const SpirvBackendProfile &other) const;
    bool operator!=(const SpirvBackendProfile &other) const {
      return !(*this == other);
    }
  };

  /// `[backend]`: per-backend hints.
  struct BackendProfile {
    CpuBackendProfile cpu;
    SpirvBackendProfile spirv;

    bool operator==(const BackendProfile &other) const;
    bool operator!=(const BackendProfile &other) const {
      return !(*this == other);
    }
  };

  /// `[execution]`: how a model's graphs are compiled and run (the
  /// execution preset of a ModelExecutionConfig).
  struct ExecutionProfile {
    /// `mode`: "lazy" (compile each shape bucket on its first use),
    /// "eager" (every graph a generation uses before it starts) or "aot"
    /// (compile nothing at run time: every graph from the compile cache).
    ExecutionMode mode = ExecutionMode::Lazy;
    /// `decode_buckets`: the past lengths decode graphs are compiled for,
    /// ascending, each >= 1 (empty: 16, 32, 64, ...); a context past the
    /// last doubles it.
    llvm::SmallVector<int64_t, 8> decodeBuckets;
    /// `memory_budget_mb`: the most MiB a model's arena, parameters and KV
    /// cache may take (0: no limit; unset: $RLX_MEMORY_BUDGET_MB, else the
    /// physical memory). A tool's option or CompileOptions::memoryBudgetMB
    /// wins.
    std::optional<uint64_t> memoryBudgetMB;
    /// `device`: "cpu" or "vulkan" (a Session for another device refuses
    /// the profile), "any" (default) the session's.
    ExecutionDevice device = ExecutionDevice::Any;

    /// The past bucket holding `cached` tokens.
    int64_t pastBucket(int64_t cached) const;

    bool operator==(const ExecutionProfile &other) const;
    bool operator!=(const ExecutionProfile &other) const {
      return !(*this == other);
    }
  };

  /// `[parallel]`: how a model is split over processes (docs/Distributed.md).
  struct ParallelProfile {
    /// `tensor`: the tensor-parallel degree N. Above 1, each of N MPI ranks
    /// (mpirun -np N) compiles and runs its own share of every decoder
    /// layer, its vocabulary range of the embedding and the LM head
    /// (mir-shard-tensor-parallel); the rank is the process's MPI rank.
    int64_t tensor = 1;
    /// `overlap_chunks`: under tensor parallelism, each row-parallel
    /// projection of a prompt and its all-reduce run as this many token
    /// ranges, each range's all-reduce in flight while the next range's
    /// projection computes (mir-overlap-collectives, lir-async-collectives).
    /// 1: one blocking all-reduce per projection.
    int64_t overlapChunks = 1;

    bool operator==(const ParallelProfile &other) const {
      return tensor == other.tensor && overlapChunks == other.overlapChunks;
    }
    bool operator!=(const ParallelProfile &other) const {
      return !(*this == other);
    }
  };

  FusionProfile fusion;
  PassProfile passes;
  PrecisionProfile precision;
  BackendProfile backend;
  ExecutionProfile execution;
  ParallelProfile parallel;

  bool operator==(const CompileProfile &other) const;
  bool operator!=(const CompileProfile &other) const {
    return !(*this == other);
  }

  //===--------------------------------------------------------------------===//
  // TOML
  //===--------------------------------------------------------------------===//

  /// Parse a profile from TOML text. Missing keys keep their defaults. On
  /// failure returns an llvm::StringError holding one line per problem, in
  /// source order, each `<fileName>:<line>:<column>: <message>`.
  static llvm::Expected<CompileProfile>
  fromTomlString(llvm::StringRef text, llvm::StringRef fileName = "<string>");
  /// The same over `base`: keys the text does not set keep `base`'s values
  /// (a graph's preset, say).
  static llvm::Expected<CompileProfile>
  fromTomlString(llvm::StringRef text, llvm::StringRef fileName,
                 const CompileProfile &base);

  /// Read and parse a `*.rlx.toml` file, over `base` when given. A file that
  /// cannot be read gives `<path>: cannot read file: <reason>`.
  static llvm::Expected<CompileProfile> fromTomlFile(llvm::StringRef path);
  static llvm::Expected<CompileProfile>
  fromTomlFile(llvm::StringRef path, const CompileProfile &base);

  /// Print every key in TOML; fromTomlString() reads it back to an equal
  /// profile.
  std::string toToml() const;

  //===--------------------------------------------------------------------===//
  // Presets
  //===--------------------------------------------------------------------===//

  /// LLaMA 3.2 prefill, and the default profile. Direct lowering: prefill
  /// graphs have no KV-cache concatenation for the fusable policy to expose,
  /// and the fusion passes already match the straight-line HIR lowering.
  static CompileProfile llama32Prefill();

  /// LLaMA 3.2 decode. Fusable lowering so the KV-cache concatenation and the
  /// single-token attention that follows it keep a shape the attention
  /// fusion patterns match.
  static CompileProfile llama32Decode();

  /// Qwen3 dense LM prefill (GQA + SwiGLU): the same block structure as
  /// LLaMA, so the same settings as llama32Prefill().
  static CompileProfile qwen3Prefill();

  /// Qwen3 decode: bucketed KV-cache graphs, fusable lowering as in
  /// llama32Decode().
  static CompileProfile qwen3Decode();

  /// Qwen3.5 prefill: fusion-first defaults as in llama32Prefill().
  static CompileProfile qwen35Prefill();

  /// Qwen3.5 decode: fusable lowering (as llama32Decode()) so both the gated
  /// delta-net state updates and the full-attention KV-cache patterns fuse.
  static CompileProfile qwen35Decode();

  /// Gemma 2 / Gemma 3 causal LM prefill (GQA + RMSNorm + logit softcap):
  /// settings of llama32Prefill().
  static CompileProfile gemmaPrefill();

  /// Gemma decode: bucketed KV-cache graphs, fusable lowering as in
  /// llama32Decode().
  static CompileProfile gemmaDecode();

  /// Bidirectional encoders (BERT, NomicBERT, vision encoders). Direct
  /// lowering: there is no KV cache, the whole sequence is processed at once,
  /// and DCE and constant folding stay on.
  static CompileProfile encoder();

  /// FLUX.2 diffusion transformer plus its VAE and text-encoder graphs: all
  /// are encoder-shaped (no KV cache), so encoder() settings.
  static CompileProfile flux2();

  /// SAM / SAM2 image encoder and mask-decoder subgraphs (ConvNeXt-style
  /// stacks): encoder() settings.
  static CompileProfile samEncoder();

  /// SAM2 image, mask-decoder and memory subgraphs (the Hiera encoder uses
  /// the same tier-1 knobs): samEncoder() settings.
  static CompileProfile sam2();

  /// SAM3 detector encoder/decoder layers (ViT plus a deformable-style
  /// decoder): samEncoder() settings.
  static CompileProfile sam3();

  /// SAM2 memory-attention layers: encoder() with fusion skipped, because
  /// RoPE is applied on the host between the subgraphs, so the attention
  /// patterns never see a complete block to fuse.
  static CompileProfile sam2MemoryAttention();

  /// LLaDA2 / TIDE block-diffusion MoE (bidirectional attention + grouped
  /// MoE): encoder() with fusion skipped, so the graphs legalize on every
  /// backend without needing unfused lowerings of fused ops such as
  /// residual-norm.
  static CompileProfile llada2Diffusion();

  /// The preset called `name` in snake_case ("llama32_prefill",
  /// "sam2_memory_attention", ...), or std::nullopt if there is none.
  static std::optional<CompileProfile> preset(llvm::StringRef name);

  /// The snake_case names preset() accepts, in declaration order.
  static llvm::ArrayRef<llvm::StringRef> presetNames();

  /// preset(name), or the error "unknown preset 'name' (expected one of
  /// <presetNames()>)".
  static llvm::Expected<CompileProfile> presetOrError(llvm::StringRef name);

  /// Success when a module (whose params and tensors have the types it
  /// declares) can compile under this profile as it is; else an error,
  /// prefixed with `source`, naming the first key only a model recipe
  /// applies: [precision] weights other than "f32" or "stored" (what a
  /// recipe converts its weights to at load), kv_cache other than "f32"
  /// (the cache a recipe's graphs keep), [execution] decode_buckets (the
  /// past lengths a recipe's generator compiles decode graphs for).
  llvm::Error checkForModule(llvm::StringRef source) const;

  /// The keys whose values differ from `other`'s, each as `section.key =
  /// value` with this profile's value, in toToml() order.
  std::vector<std::string> differencesFrom(const CompileProfile &other) const;

  /// The preset this profile differs from in the fewest keys (the first in
  /// presetNames() order among ties) and those keys (none when it equals
  /// the preset).
  struct NearestPreset {
    std::string name;
    std::vector<std::string> differences;
  };
  NearestPreset nearestPreset() const;
};

} // namespace rlx

#endif // RLX_PROFILE_COMPILEPROFILE_H
