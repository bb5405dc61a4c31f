//===- Reflection.h - What a compiled model is and expects -------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// CompiledModel::reflect(): the inputs and outputs of a compiled model with
// their dtypes and shapes (and the source's symbolic shapes when the
// compiler recorded them), its parameters grouped into weight blocks by name
// prefix, its arena, its kernels and the fused ops they came from, and the
// profile it was built with. Printed for people (`rlx-run --describe`) or as
// JSON for tools (`rlx-run --describe=json`).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_RUNTIME_REFLECTION_H
#define RLX_RUNTIME_REFLECTION_H

#include "RLX/Weights/Tensor.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/JSON.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace rlx {

/// One lir.kernel of a compiled entry point.
struct KernelInfo {
  /// The kernel's name (`lir.kernel "name"`).
  std::string name;
  /// The MIR op it computes ("mir.fused_rms_norm_matmul", "mir.matmul", ...;
  /// for a two-op kernel both, joined by " + ").
  std::string op;
  /// The lowering strategy the code generator chose (empty when none).
  std::string strategy;
  /// The runtime routine that implements it (empty when generated).
  std::string library;
};

/// What the compiler knew of a model that its manifest does not say. The
/// Session records it on each CompiledModel it compiles; a model loaded from
/// an AOT library has none.
struct BuildInfo {
  /// The shape of each input and output in the source, by manifest name,
  /// -1 for a dynamic dim (absent for a module given in LIR).
  std::vector<std::pair<std::string, llvm::SmallVector<int64_t, 4>>>
      sourceShapes;
  /// The presets whose settings the compile profile equals (several
  /// presets share settings; empty for a custom profile), and the profile
  /// as TOML.
  std::vector<std::string> profilePresets;
  std::string profileToml;
  /// The preset the profile differs from in the fewest keys, and those keys
  /// as `section.key = value` (empty when it equals the preset).
  std::string profileNearest;
  std::vector<std::string> profileDifferences;
  /// Fused-op histogram of the MIR that was planned (CompileStats::fusedOps).
  std::string fusedOps;
  /// The kernels in program order.
  std::vector<KernelInfo> kernels;
};

/// A tensor the model takes or gives.
struct IOTensorInfo {
  std::string name;
  DType dtype = DType::F32;
  /// The compiled (concrete) shape.
  llvm::SmallVector<int64_t, 4> shape;
  /// The source's shape, -1 for a dynamic dim, when recorded.
  std::optional<llvm::SmallVector<int64_t, 4>> sourceShape;
  uint64_t bytes = 0;
};

/// Parameters sharing a name prefix ("model.layers.3.").
struct WeightBlock {
  std::string prefix;
  unsigned count = 0;
  /// The storage dtypes of its parameters, each once, in order of first use.
  llvm::SmallVector<DType, 2> dtypes;
  uint64_t bytes = 0;
};

struct ModelReflection {
  std::string entry, device;
  std::vector<IOTensorInfo> inputs, outputs;
  /// In natural order of their prefixes ("layers.2." before "layers.10.").
  std::vector<WeightBlock> weightBlocks;
  unsigned paramCount = 0;
  /// The sum of the parameters' byte sizes (= of the blocks'), and the size
  /// of the parameter pool (with alignment padding).
  uint64_t paramBytes = 0, paramPoolBytes = 0;
  uint64_t arenaBytes = 0, alignment = 0;
  /// Present when the Session recorded what it compiled (not for a model
  /// loaded from an AOT library).
  std::optional<BuildInfo> build;

  /// {"entry", "device", "inputs": [{"name", "dtype", "shape",
  /// "source_shape" (null for a dynamic dim), "bytes"}], "outputs": [...],
  /// "shapes": "symbolic" | "concrete", "params": {"count", "bytes",
  /// "pool_bytes", "blocks": [{"prefix", "count", "dtypes", "bytes"}]},
  /// "arena": {"bytes", "alignment"}, "kernels": {"count", "fused_ops",
  /// "list": [{"name", "op", "strategy", "library"}]} or null, "profile":
  /// {"presets": [names the profile equals], "nearest_preset", "differences":
  /// [its keys that differ], "toml"} or null}.
  llvm::json::Value toJSON() const;
  /// The same for people, one section per line group.
  void print(llvm::raw_ostream &os) const;
};

/// The weight-block prefix of a parameter name: up to and including the
/// first all-digit component ("model.layers.3.self_attn.q_proj.weight" ->
/// "model.layers.3."), else everything before the last component
/// ("model.norm.weight" -> "model.norm."), else the name itself.
std::string weightBlockPrefix(llvm::StringRef name);

} // namespace rlx

#endif // RLX_RUNTIME_REFLECTION_H
