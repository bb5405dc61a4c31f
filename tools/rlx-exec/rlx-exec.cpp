//===- rlx-exec.cpp - Run an AOT-compiled RLX model without MLIR ----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Loads the shared library and manifest written by `rlx-run --aot PREFIX`
// (Session::compileToLibrary) and runs it. Links only the RLX runtime and the
// weight readers: no MLIR is loaded.
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/CompiledModel.h"
#include "RLX/Support/Version.h"
#include "RLX/Weights/SafeTensors.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include <map>

using namespace rlx;
namespace cl = llvm::cl;

static cl::OptionCategory category("rlx-exec options");
static cl::opt<std::string> prefix(cl::Positional, cl::Required,
                                   cl::desc("<prefix> (reads prefix.so and "
                                            "prefix.json)"),
                                   cl::cat(category));
static cl::list<std::string>
    inputs("input", cl::desc("An input: name=file.npy"), cl::cat(category));
static cl::list<std::string>
    params("param", cl::desc("A parameter: name=file.npy"), cl::cat(category));
static cl::opt<std::string>
    weights("params", cl::desc("Load every parameter from a safetensors file"),
            cl::cat(category));
static cl::opt<std::string>
    outputDir("output-dir", cl::desc("Write each output as <name>.npy"),
              cl::cat(category));
static cl::opt<int64_t> memoryBudgetMB(
    "memory-budget-mb",
    cl::desc("Refuse a model whose arena and parameters exceed this many "
             "MiB; 0: no limit (default: $RLX_MEMORY_BUDGET_MB, else the "
             "physical memory)"),
    cl::init(-1), cl::cat(category));

static int fail(llvm::Error err) {
  llvm::WithColor::error(llvm::errs(), "rlx-exec")
      << llvm::toString(std::move(err)) << "\n";
  return 1;
}

/// "name=path" -> the named tensor read from path.
static llvm::Expected<std::pair<std::string, Tensor>>
namedTensor(llvm::StringRef arg) {
  auto [name, path] = arg.split('=');
  if (name.empty() || path.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "expected name=file.npy, got '" + arg + "'");
  auto t = readTensorNpy(path);
  if (!t)
    return t.takeError();
  return std::make_pair(name.str(), std::move(*t));
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  rlx::setRLXVersionPrinter();
  cl::ParseCommandLineOptions(argc, argv,
                              "rlx-exec: run an AOT-compiled RLX model\n");
  std::optional<uint64_t> budget;
  if (memoryBudgetMB >= 0)
    budget = memoryBudgetMB;
  auto model =
      CompiledModel::loadLibrary(prefix + ".so", prefix + ".json", budget);
  if (!model)
    return fail(model.takeError());
  if (!weights.empty()) {
    auto source = SafeTensorsFile::open(weights);
    if (!source)
      return fail(source.takeError());
    if (llvm::Error err = model->loadParams(**source))
      return fail(std::move(err));
  }
  for (const std::string &arg : params) {
    auto p = namedTensor(arg);
    if (!p)
      return fail(p.takeError());
    if (llvm::Error err = model->setParam(p->first, p->second))
      return fail(std::move(err));
  }
  TensorMap_t feeds;
  std::map<std::string, std::string> files;
  for (const std::string &arg : inputs) {
    auto in = namedTensor(arg);
    if (!in)
      return fail(in.takeError());
    files[in->first] = llvm::StringRef(arg).split('=').second.str();
    feeds.emplace(std::move(in->first), std::move(in->second));
  }
  auto outputs = model->run(feeds);
  if (!outputs) {
    // Name the file an input that the model refuses came from.
    std::string message = llvm::toString(outputs.takeError());
    for (const auto &[name, path] : files)
      if (llvm::StringRef(message).starts_with("input '" + name + "'") ||
          llvm::StringRef(message).starts_with("unknown input '" + name +
                                               "'")) {
        message = path + ": " + message;
        break;
      }
    return fail(
        llvm::createStringError(llvm::inconvertibleErrorCode(), message));
  }
  for (auto &[name, t] : *outputs) {
    llvm::outs() << name << ": " << t.summary() << "\n";
    if (outputDir.empty())
      continue;
    llvm::sys::fs::create_directories(outputDir);
    llvm::SmallString<128> path(outputDir.getValue());
    llvm::sys::path::append(path, name + ".npy");
    if (llvm::Error err = writeTensorNpy(path, t))
      return fail(std::move(err));
  }
  return 0;
}
