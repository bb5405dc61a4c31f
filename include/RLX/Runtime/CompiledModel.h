//===- CompiledModel.h - A compiled model ready to run -----------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The runtime side of RLX, free of MLIR: a compiled entry point (JIT code or
// an AOT shared object), its manifest, its arena and its parameter pool.
// Parameters are set once (by name, or in bulk from a WeightSource); every
// run copies the named inputs into the arena, calls the code and copies the
// outputs out. Every mismatch is an llvm::Error naming the tensor.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_RUNTIME_COMPILEDMODEL_H
#define RLX_RUNTIME_COMPILEDMODEL_H

#include "RLX/Runtime/Manifest.h"
#include "RLX/Runtime/Reflection.h"
#include "RLX/Runtime/Tensor.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include <map>
#include <memory>
#include <optional>

namespace rlx {

class WeightSource;

/// Named tensors, ordered by name.
using TensorMap_t = std::map<std::string, Tensor>;
/// Named borrowed tensors.
using TensorRefMap_t = std::map<std::string, TensorRef>;

/// Runs a compiled entry point on a device. The CompiledModel owns the host
/// copies of the arena and the parameter pool; an executor moves what it
/// needs to its device.
class Executor {
public:
  virtual ~Executor();
  /// Runs the entry: on entry `arena` holds the inputs at their manifest
  /// offsets; on return it must hold the outputs at theirs. `params` is the
  /// parameter pool; `paramsChanged` says it changed since the last call.
  virtual llvm::Error execute(const Manifest &manifest,
                              llvm::MutableArrayRef<uint8_t> arena,
                              llvm::ArrayRef<uint8_t> params,
                              bool paramsChanged) = 0;
  /// A short name for messages ("cpu", "vulkan: llvmpipe ...").
  virtual std::string describe() const = 0;
};

class CompiledModel {
public:
  /// `_mlir_ciface_<entry>(StridedMemRef<i8, 1> *arena, ... *params)`.
  using EntryFn = void (*)(void *arena, void *params);

  /// Host code: `fn` runs on the CPU; `owner` keeps its code alive.
  CompiledModel(Manifest manifest, EntryFn fn, std::shared_ptr<void> owner);
  /// Allocates the arena and parameter pool the manifest asks for. If that
  /// fails, every later call returns an error saying so; create() checks the
  /// memory budget first and returns that error at once.
  CompiledModel(Manifest manifest, std::unique_ptr<Executor> executor);
  /// Like the constructor, but refuses a manifest whose arena and parameters
  /// exceed the memory budget (see MemoryBudget::get) or cannot be
  /// allocated.
  static llvm::Expected<CompiledModel>
  create(Manifest manifest, std::unique_ptr<Executor> executor,
         std::optional<uint64_t> memoryBudgetMB = std::nullopt);
  CompiledModel(CompiledModel &&) noexcept;
  CompiledModel &operator=(CompiledModel &&) noexcept;
  ~CompiledModel();

  const Manifest &manifest() const { return info; }
  /// Where the model runs ("cpu", "vulkan: <device>").
  std::string deviceName() const;

  /// Sets one parameter (or a source of derived parameters) by name. The
  /// tensor's shape must match. A parameter the model keeps in f32 takes any
  /// floating-point tensor (f16, bf16 and ggml blocks are converted); one it
  /// keeps as stored (f16, bf16, ggml blocks) takes a tensor of exactly that
  /// type, whose bytes are copied.
  llvm::Error setParam(llvm::StringRef name, const Tensor &value);
  llvm::Error setParam(llvm::StringRef name, llvm::ArrayRef<float> values);
  /// Sets a parameter the model keeps as stored from its bytes (`dtype`
  /// must be the stored type the model expects).
  llvm::Error setParamBytes(llvm::StringRef name, DType dtype,
                            llvm::ArrayRef<uint8_t> bytes);
  /// Loads every parameter the model needs from `source`; fails on the
  /// first missing or mis-shaped one, naming it. Weights holding NaN or
  /// infinities load, with a warning each (see loadWarnings).
  llvm::Error loadParams(const WeightSource &source);
  /// Parameters the model reads from `synthesized` whenever loadParams'
  /// source lacks them (a flow's synthesized parameters: Session::compile
  /// of a BuiltModel sets them).
  void setSynthesizedParams(std::shared_ptr<const WeightSource> synthesized) {
    this->synthesized = std::move(synthesized);
  }
  /// What the last loadParams found wrong but loaded anyway, one message per
  /// weight: "weight '<name>' in <source> has <n> non-finite values (NaN or
  /// Inf)", the name as the source's displayName gives it (a GGUF's own
  /// tensor name). Counted from the stored bits: a ggml block with a
  /// non-finite scale counts as all of its elements.
  const std::vector<std::string> &loadWarnings() const { return warnings; }
  /// Bytes of the parameter pool the last loadParams mapped from the
  /// weights' file instead of copying: the whole pages of weights kept as
  /// stored whose pool offset and file offset agree modulo the page size
  /// (CompileOptions::paramPagePhases plans that). The pages are a private
  /// mapping: the file's page cache backs them until a parameter is set.
  uint64_t mappedParamBytes() const { return mappedBytes; }
  /// Uses `source`'s parameter pool (already loaded, or loaded later through
  /// either model) instead of this model's own: graphs of one model compiled
  /// for several shapes share their weights. The parameter layouts must be
  /// identical.
  llvm::Error shareParams(const CompiledModel &source);
  /// Names of the parameters (and derived-param sources) not yet set.
  std::vector<std::string> missingParams() const;
  /// Names the model reads from a weight source (params and the sources of
  /// derived params).
  std::vector<std::string> weightNames() const;

  /// Runs the model. Every input must be given with its exact shape and
  /// dtype; all parameters must be set.
  llvm::Expected<TensorMap_t> run(const TensorMap_t &inputs);
  /// The same from borrowed inputs, copied straight into the arena; each
  /// view's byte size must match its dtype and shape.
  llvm::Expected<TensorMap_t> runViews(const TensorRefMap_t &inputs);
  /// The same without copying the outputs: views into the model's arena,
  /// valid until the next run of this model (or of one sharing its
  /// storage). For loops such as decoding, which would otherwise allocate
  /// and fault in every output anew at each step.
  llvm::Expected<TensorRefMap_t> runInArena(const TensorRefMap_t &inputs);
  /// The arena bytes where input `name` lives (empty when the model has no
  /// such input or no storage). An input written there and passed to run*
  /// as a view of these same bytes is not copied. They keep what the last
  /// run left: an input the arena plan keeps inside an output (the past of
  /// a KV-cache step, the head of the present) holds that output's bytes,
  /// so a decoding loop appends to it instead of feeding it anew.
  llvm::MutableArrayRef<uint8_t> inputPlace(llvm::StringRef name);
  /// Gives the arena's pages back to the system (an arena of a megabyte or
  /// more: an anonymous mapping, whose pages then read as zeros until the
  /// next run writes them; a smaller one is kept as it is). What the last
  /// run left there is gone: views from runInArena and bytes written at
  /// inputPlace must not be read, and an input kept in place must be written
  /// whole again. For a process that keeps several models but runs one at a
  /// time (a prompt graph and the decode graphs of a generator), so that the
  /// idle ones do not hold their scratch memory. Returns the bytes given
  /// back.
  uint64_t releaseArena();

  /// What the model takes and gives, its weight blocks, arena, kernels and
  /// profile (RLX/Runtime/Reflection.h). Kernels, source shapes and the
  /// profile are known when the Session compiled the model, not when it was
  /// loaded from an AOT library.
  ModelReflection reflect() const;
  /// Records what the compiler knew (the Session calls it).
  void setBuildInfo(BuildInfo info) { buildInfo = std::move(info); }

  /// Loads an AOT shared object written by Session::compileToLibrary with
  /// its manifest (JSON); no MLIR involved.
  static llvm::Expected<CompiledModel>
  loadLibrary(llvm::StringRef libPath, llvm::StringRef manifestPath,
              std::optional<uint64_t> memoryBudgetMB = std::nullopt);

private:
  struct Storage;
  /// The error every call returns when the storage could not be allocated.
  llvm::Error storageError() const;
  const ManifestEntry *findWeight(llvm::StringRef name) const;
  /// Writes weight `name` (`bytes` of `dtype` and `shape`) into every place
  /// of the pool that takes a range of it, and marks them set.
  llvm::Error setRangedWeight(llvm::StringRef name, DType dtype,
                              llvm::ArrayRef<int64_t> shape,
                              llvm::ArrayRef<uint8_t> bytes);

  Manifest info;
  /// Declared before the executor, so destroyed after it: a CPU executor's
  /// pool threads, joined by its destructor, may still be leaving the last
  /// run when the model goes, and must never outlive the arena.
  std::unique_ptr<Storage> storage;
  std::unique_ptr<Executor> executor;
  /// See loadWarnings().
  std::vector<std::string> warnings;
  /// See mappedParamBytes().
  uint64_t mappedBytes = 0;
  /// See setBuildInfo().
  std::optional<BuildInfo> buildInfo;
  /// See setSynthesizedParams().
  std::shared_ptr<const WeightSource> synthesized;
};

} // namespace rlx

#endif // RLX_RUNTIME_COMPILEDMODEL_H
