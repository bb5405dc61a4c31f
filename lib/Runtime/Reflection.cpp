//===- Reflection.cpp - What a compiled model is and expects --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/Reflection.h"
#include "RLX/Runtime/CompiledModel.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace rlx;
namespace json = llvm::json;

std::string rlx::weightBlockPrefix(llvm::StringRef name) {
  size_t pos = 0;
  while (pos < name.size()) {
    size_t dot = name.find('.', pos);
    llvm::StringRef part =
        name.slice(pos, dot == llvm::StringRef::npos ? name.size() : dot);
    if (dot == llvm::StringRef::npos)
      break;
    if (!part.empty() && llvm::all_of(part, llvm::isDigit))
      return name.take_front(dot + 1).str();
    pos = dot + 1;
  }
  size_t last = name.rfind('.');
  if (last == llvm::StringRef::npos || last == 0)
    return name.str();
  return name.take_front(last + 1).str();
}

/// `a < b` with runs of digits compared as numbers ("layers.2." before
/// "layers.10.").
static bool naturalLess(llvm::StringRef a, llvm::StringRef b) {
  while (!a.empty() && !b.empty()) {
    if (llvm::isDigit(a.front()) && llvm::isDigit(b.front())) {
      llvm::StringRef da = a.take_while(llvm::isDigit);
      llvm::StringRef db = b.take_while(llvm::isDigit);
      llvm::StringRef ta = da.ltrim('0'), tb = db.ltrim('0');
      if (ta.size() != tb.size())
        return ta.size() < tb.size();
      if (ta != tb)
        return ta < tb;
      a = a.drop_front(da.size());
      b = b.drop_front(db.size());
      continue;
    }
    if (a.front() != b.front())
      return a.front() < b.front();
    a = a.drop_front();
    b = b.drop_front();
  }
  return a.size() < b.size();
}

ModelReflection CompiledModel::reflect() const {
  ModelReflection r;
  r.entry = info.entry;
  r.device = deviceName();
  r.arenaBytes = info.arenaSize;
  r.paramPoolBytes = info.paramSize;
  r.alignment = info.alignment;
  r.build = buildInfo;
  auto sourceShape = [&](llvm::StringRef name)
      -> std::optional<llvm::SmallVector<int64_t, 4>> {
    if (!buildInfo)
      return std::nullopt;
    for (const auto &[n, shape] : buildInfo->sourceShapes)
      if (n == name)
        return shape;
    return std::nullopt;
  };
  llvm::StringMap<size_t> blockIndex;
  for (const ManifestEntry &e : info.entries) {
    uint64_t bytes = e.byteSize();
    if (e.kind != IOKind::Param) {
      IOTensorInfo t{e.name, e.dtype, e.shape, sourceShape(e.name), bytes};
      (e.kind == IOKind::Input ? r.inputs : r.outputs).push_back(std::move(t));
      continue;
    }
    // A derived parameter (a concatenation) belongs where its first source
    // does.
    std::string prefix =
        weightBlockPrefix(e.sources.empty() ? e.name : e.sources.front());
    auto [it, inserted] = blockIndex.try_emplace(prefix, r.weightBlocks.size());
    if (inserted)
      r.weightBlocks.push_back(WeightBlock{prefix, 0, {}, 0});
    WeightBlock &b = r.weightBlocks[it->second];
    ++b.count;
    b.bytes += bytes;
    if (!llvm::is_contained(b.dtypes, e.dtype))
      b.dtypes.push_back(e.dtype);
    ++r.paramCount;
    r.paramBytes += bytes;
  }
  llvm::stable_sort(r.weightBlocks,
                    [](const WeightBlock &a, const WeightBlock &b) {
                      return naturalLess(a.prefix, b.prefix);
                    });
  return r;
}

static json::Value shapeJSON(llvm::ArrayRef<int64_t> shape) {
  json::Array a;
  for (int64_t d : shape)
    a.push_back(d < 0 ? json::Value(nullptr) : json::Value(d));
  return a;
}

static std::string shapeText(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? "x" : "") + (d < 0 ? std::string("?") : std::to_string(d));
  return s + "]";
}

static bool isSymbolic(const IOTensorInfo &t) {
  return t.sourceShape && llvm::is_contained(*t.sourceShape, -1);
}

json::Value ModelReflection::toJSON() const {
  bool symbolic = false;
  auto tensors = [&](const std::vector<IOTensorInfo> &list) {
    json::Array a;
    for (const IOTensorInfo &t : list) {
      json::Object o{{"name", t.name},
                     {"dtype", dtypeName(t.dtype)},
                     {"shape", shapeJSON(t.shape)},
                     {"bytes", static_cast<int64_t>(t.bytes)}};
      o["source_shape"] =
          t.sourceShape ? shapeJSON(*t.sourceShape) : json::Value(nullptr);
      symbolic |= isSymbolic(t);
      a.push_back(std::move(o));
    }
    return a;
  };
  json::Array blocks;
  for (const WeightBlock &b : weightBlocks) {
    json::Array dtypes;
    for (DType d : b.dtypes)
      dtypes.push_back(dtypeName(d));
    blocks.push_back(json::Object{{"prefix", b.prefix},
                                  {"count", static_cast<int64_t>(b.count)},
                                  {"dtypes", std::move(dtypes)},
                                  {"bytes", static_cast<int64_t>(b.bytes)}});
  }
  json::Object root{{"entry", entry}, {"device", device}};
  root["inputs"] = tensors(inputs);
  root["outputs"] = tensors(outputs);
  // "symbolic": some source dims were dynamic (source_shape has nulls);
  // "concrete": the source was static or not recorded.
  root["shapes"] = symbolic ? "symbolic" : "concrete";
  root["params"] =
      json::Object{{"count", static_cast<int64_t>(paramCount)},
                   {"bytes", static_cast<int64_t>(paramBytes)},
                   {"pool_bytes", static_cast<int64_t>(paramPoolBytes)},
                   {"blocks", std::move(blocks)}};
  root["arena"] = json::Object{{"bytes", static_cast<int64_t>(arenaBytes)},
                               {"alignment", static_cast<int64_t>(alignment)}};
  if (!build) {
    root["kernels"] = nullptr;
    root["profile"] = nullptr;
    return root;
  }
  json::Array kernels;
  for (const KernelInfo &k : build->kernels) {
    json::Object o{{"name", k.name}, {"op", k.op}};
    if (!k.strategy.empty())
      o["strategy"] = k.strategy;
    if (!k.library.empty())
      o["library"] = k.library;
    kernels.push_back(std::move(o));
  }
  root["kernels"] =
      json::Object{{"count", static_cast<int64_t>(build->kernels.size())},
                   {"fused_ops", build->fusedOps},
                   {"list", std::move(kernels)}};
  root["profile"] =
      json::Object{{"presets", json::Array(build->profilePresets)},
                   {"nearest_preset", build->profileNearest},
                   {"differences", json::Array(build->profileDifferences)},
                   {"toml", build->profileToml}};
  return root;
}

void ModelReflection::print(llvm::raw_ostream &os) const {
  os << "entry: " << entry << "\n";
  os << "device: " << device << "\n";
  bool recorded = build && !build->sourceShapes.empty();
  auto tensors = [&](llvm::StringRef title,
                     const std::vector<IOTensorInfo> &list) {
    os << title << ": " << list.size() << "\n";
    for (const IOTensorInfo &t : list) {
      os << "  " << t.name << ": " << dtypeName(t.dtype) << " "
         << shapeText(t.shape);
      if (isSymbolic(t))
        os << " (source " << shapeText(*t.sourceShape) << ")";
      os << ", " << t.bytes << " bytes\n";
    }
  };
  tensors("inputs", inputs);
  tensors("outputs", outputs);
  bool symbolic =
      llvm::any_of(inputs, isSymbolic) || llvm::any_of(outputs, isSymbolic);
  if (!recorded)
    os << "shapes: concrete (the source's shapes were not recorded)\n";
  else if (symbolic)
    os << "shapes: symbolic (? marks a dynamic dim of the source; the "
          "compiled shape specializes it)\n";
  else
    os << "shapes: concrete (the source's dims are all static)\n";
  os << "params: " << paramCount << " in " << weightBlocks.size() << " blocks, "
     << paramBytes << " bytes (pool " << paramPoolBytes << ")\n";
  for (const WeightBlock &b : weightBlocks) {
    os << "  " << b.prefix << ": " << b.count << ", ";
    llvm::interleave(b.dtypes, os, [&](DType d) { os << dtypeName(d); }, "+");
    os << ", " << b.bytes << " bytes\n";
  }
  os << "arena: " << arenaBytes << " bytes (alignment " << alignment << ")\n";
  if (!build) {
    os << "kernels: unknown (not recorded: loaded from an AOT library)\n";
    os << "profile: unknown\n";
    return;
  }
  // Kernels by the op they compute, most frequent first.
  llvm::StringMap<unsigned> byOp;
  std::vector<std::string> order;
  for (const KernelInfo &k : build->kernels)
    if (byOp[k.op]++ == 0)
      order.push_back(k.op);
  llvm::stable_sort(order, [&](const std::string &a, const std::string &b) {
    return byOp[a] > byOp[b];
  });
  os << "kernels: " << build->kernels.size()
     << " (fused ops: " << build->fusedOps << ")\n";
  for (const std::string &op : order)
    os << "  " << op << ": " << byOp[op] << "\n";
  if (build->profilePresets.empty()) {
    os << "profile: custom";
    if (!build->profileNearest.empty()) {
      os << ": preset " << build->profileNearest << " with ";
      llvm::interleave(build->profileDifferences, os, ", ");
    }
    os << "\n";
    return;
  }
  os << "profile: preset ";
  llvm::interleave(build->profilePresets, os, " = ");
  os << "\n";
}
