//===- CompileBuilt.cpp - Session::compile of a built flow ----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A BuiltModel carries its profile and synthesized parameters; compiling it
// keeps both. The options' profile overrides the flow's field by field: a
// field the options set away from its default wins, and the compile says
// so. Fields are compared by their TOML form, one `section.key = value` line
// each, so every field (present and future) takes part.
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"
#include "RLX/Flow/ModelFlow.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace rlx;
using llvm::Expected;
using llvm::StringRef;

namespace {
/// A profile's TOML as (section.key -> line) in file order.
struct ProfileLines {
  std::vector<std::pair<std::string, std::string>> lines;
  llvm::StringMap<size_t> index;

  explicit ProfileLines(StringRef toml) {
    StringRef section;
    for (StringRef line : llvm::split(toml, '\n')) {
      if (line.starts_with("[")) {
        section = line.trim("[]");
        lines.emplace_back("", line.str());
        continue;
      }
      auto [key, value] = line.split(" = ");
      if (value.empty() && !line.contains(" = ")) {
        lines.emplace_back("", line.str());
        continue;
      }
      std::string path = (section + "." + key).str();
      index[path] = lines.size();
      lines.emplace_back(path, line.str());
    }
  }
  const std::string *find(StringRef path) const {
    auto it = index.find(path);
    return it == index.end() ? nullptr : &lines[it->second].second;
  }
  std::string text() const {
    std::string out;
    for (const auto &l : lines)
      out += l.second + "\n";
    return out;
  }
};
} // namespace

Expected<CompiledModel> Session::compile(const BuiltModel &built,
                                         const CompileOptions &options) {
  ProfileLines flow(built.profile.toToml());
  ProfileLines given(options.profile.toToml());
  ProfileLines defaults(CompileProfile().toToml());
  CompileOptions o = options;
  bool overridden = false;
  for (const auto &[path, line] : given.lines) {
    const std::string *def = defaults.find(path);
    const std::string *mine = flow.find(path);
    if (path.empty() || !def || !mine || line == *def || line == *mine)
      continue;
    std::string from = StringRef(*mine).split(" = ").second.str();
    std::string to = StringRef(line).split(" = ").second.str();
    flow.lines[flow.index[path]].second = line;
    o.notes.push_back("the options set " + path + " = " + to +
                      " over the flow's profile (" + from + ")");
    overridden = true;
  }
  if (overridden) {
    Expected<CompileProfile> merged =
        CompileProfile::fromTomlString(flow.text(), "<flow profile>");
    if (!merged)
      return merged.takeError();
    o.profile = std::move(*merged);
  } else {
    o.profile = built.profile;
  }
  Expected<CompiledModel> model = compileString(built.mlir, o);
  if (model && built.synthesized)
    model->setSynthesizedParams(built.synthesized);
  return model;
}
