//===- FuzzManifest.cpp - Fuzz the AOT manifest and the runtime -----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Manifest::fromJSON on arbitrary text (what rlx-exec reads next to an AOT
// library), then everything the runtime does with a manifest, around an
// executor that does nothing: create the model under a 64 MiB budget, set
// every parameter (right and wrong sizes), run with inputs of the manifest's
// shapes (in and out of index bounds) and read the outputs. A manifest that
// loads must also print (toJSON) to one that loads.
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/CompiledModel.h"

#include <cstdlib>

using namespace rlx;

namespace {
class NullExecutor : public Executor {
public:
  llvm::Error execute(const Manifest &, llvm::MutableArrayRef<uint8_t>,
                      llvm::ArrayRef<uint8_t>, bool) override {
    return llvm::Error::success();
  }
  std::string describe() const override { return "null"; }
};
} // namespace

static constexpr uint64_t kMaxElements = uint64_t(1) << 20;

/// The product of `shape`, or std::nullopt if it is larger than
/// kMaxElements.
static std::optional<uint64_t> smallCount(llvm::ArrayRef<int64_t> shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d && n > kMaxElements / uint64_t(d)))
      return std::nullopt;
    n *= uint64_t(d);
  }
  return n;
}

static void consume(llvm::Error err) { llvm::consumeError(std::move(err)); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<Manifest> manifest = Manifest::fromJSON(text, "fuzz.json");
  if (!manifest) {
    consume(manifest.takeError());
    return 0;
  }
  llvm::Expected<Manifest> again =
      Manifest::fromJSON(manifest->toJSON(), "printed.json");
  if (!again)
    abort(); // toJSON() must print a manifest that loads.

  llvm::Expected<CompiledModel> model = CompiledModel::create(
      std::move(*manifest), std::make_unique<NullExecutor>(),
      /*memoryBudgetMB=*/64);
  if (!model) {
    consume(model.takeError());
    return 0;
  }
  const Manifest &m = model->manifest();
  (void)model->weightNames();

  // Every parameter, and every source of a derived one, at its size and at
  // a wrong one.
  for (const ManifestEntry *e : m.ofKind(IOKind::Param)) {
    std::vector<std::pair<std::string, llvm::SmallVector<int64_t, 4>>> parts;
    if (e->sources.empty())
      parts.push_back({e->name, e->shape});
    for (auto [i, source] : llvm::enumerate(e->sources)) {
      llvm::SmallVector<int64_t, 4> shape(e->shape);
      shape[e->concatAxis] = e->sourceSizes[i];
      parts.push_back({source, shape});
    }
    for (auto &[name, shape] : parts) {
      std::optional<uint64_t> count = smallCount(shape);
      if (!count)
        continue;
      std::vector<float> values(*count, 1.0f);
      consume(model->setParam(name, values));
      values.push_back(0.0f);
      consume(model->setParam(name, values));
      consume(model->setParam(name, Tensor::fromF32(shape, values)));
    }
  }
  (void)model->missingParams();

  // Inputs of the manifest's shapes: zeros, then out-of-bound indices.
  TensorMap_t inputs;
  for (const ManifestEntry *e : m.ofKind(IOKind::Input)) {
    if (!smallCount(e->shape) || isQuantized(e->dtype))
      return 0;
    inputs.emplace(e->name, Tensor(e->dtype, e->shape));
  }
  for (int pass = 0; pass < 2; ++pass) {
    llvm::Expected<TensorMap_t> outputs = model->run(inputs);
    if (outputs) {
      for (auto &[name, t] : *outputs)
        (void)t.summary();
    } else {
      consume(outputs.takeError());
    }
    for (auto &[name, t] : inputs)
      for (uint8_t &b : t.mutableBytes())
        b = 0xff;
  }
  return 0;
}
