//===- SpecializeShapes.cpp - The rlx-specialize-shapes pass --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/Common/RLXDialect.h"
#include "RLX/Transforms/Passes.h"
#include "RLX/Transforms/Specialize.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_RLXSPECIALIZESHAPESPASS
#include "RLX/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;

FailureOr<func::FuncOp> mlir::rlx::findEntryFunction(ModuleOp module,
                                                     StringRef name) {
  func::FuncOp found;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f.isDeclaration() || (!name.empty() && f.getSymName() != name) ||
        (name.empty() && f.isPrivate()))
      continue;
    if (found)
      return module.emitError("the module has several public functions ('")
             << found.getSymName() << "', '" << f.getSymName()
             << "'); name the entry to compile";
    found = f;
  }
  if (!found) {
    if (name.empty())
      return module.emitError("the module has no function to compile");
    return module.emitError("no function named '") << name << "'";
  }
  return found;
}

std::string mlir::rlx::inputName(func::FuncOp func, unsigned index) {
  if (auto a = func.getArgAttrOfType<StringAttr>(index, kNameAttr))
    return a.str();
  return "input" + std::to_string(index);
}

/// Parses `name:d0xd1x...` (a scalar is `name:`).
static std::optional<std::pair<std::string, SmallVector<int64_t, 4>>>
parseShape(StringRef text) {
  auto [name, dims] = text.rsplit(':');
  if (name.empty() || name.size() == text.size())
    return std::nullopt;
  SmallVector<int64_t, 4> shape;
  if (!dims.empty()) {
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    for (StringRef p : parts) {
      int64_t d;
      if (p.getAsInteger(10, d) || d < 0)
        return std::nullopt;
      shape.push_back(d);
    }
  }
  return std::make_pair(name.str(), shape);
}

namespace {
struct RLXSpecializeShapesPass
    : public mlir::rlx::impl::RLXSpecializeShapesPassBase<
          RLXSpecializeShapesPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<SmallVector<int64_t, 4>> given;
    for (const std::string &text : shapes) {
      auto parsed = parseShape(text);
      if (!parsed) {
        module.emitError("rlx-specialize-shapes: '")
            << text << "' is not name:d0xd1x... (non-negative dims)";
        return signalPassFailure();
      }
      if (!given.try_emplace(parsed->first, parsed->second).second) {
        module.emitError("rlx-specialize-shapes: input '")
            << parsed->first << "' is given twice";
        return signalPassFailure();
      }
    }
    // Nothing to bind and nothing named: a module whose functions are all
    // static (or that holds no function, e.g. LIR) is left as it is.
    if (given.empty() && entry.empty()) {
      for (auto f : module.getOps<func::FuncOp>())
        for (auto [i, t] : llvm::enumerate(f.getArgumentTypes()))
          if (auto ty = dyn_cast<RankedTensorType>(t);
              !f.isDeclaration() && ty && !ty.hasStaticShape()) {
            f.emitOpError("input '")
                << inputName(f, i) << "' has the dynamic type " << ty
                << "; give its shape (shapes=" << inputName(f, i) << ":...)";
            return signalPassFailure();
          }
      return;
    }
    FailureOr<func::FuncOp> fn = findEntryFunction(module, entry);
    if (failed(fn))
      return signalPassFailure();
    llvm::StringSet<> inputs;
    for (unsigned i = 0; i < fn->getNumArguments(); ++i)
      inputs.insert(inputName(*fn, i));
    for (auto &kv : given)
      if (!inputs.contains(kv.getKey())) {
        fn->emitOpError("has no input named '") << kv.getKey() << "'";
        return signalPassFailure();
      }
    SmallVector<SmallVector<int64_t, 4>> argShapes;
    bool change = false;
    for (auto [i, t] : llvm::enumerate(fn->getArgumentTypes())) {
      std::string name = inputName(*fn, i);
      auto ty = dyn_cast<RankedTensorType>(t);
      if (!ty) {
        fn->emitOpError("input '")
            << name << "' has the type " << t
            << "; only ranked tensors can be specialized";
        return signalPassFailure();
      }
      auto it = given.find(name);
      if (it != given.end()) {
        change = true;
        argShapes.push_back(it->second);
        continue;
      }
      if (!ty.hasStaticShape()) {
        fn->emitOpError("input '")
            << name << "' has the dynamic type " << ty
            << "; give its shape (shapes=" << name << ":...)";
        return signalPassFailure();
      }
      argShapes.push_back(SmallVector<int64_t, 4>(ty.getShape()));
    }
    if (change && failed(specializeFunction(*fn, argShapes)))
      return signalPassFailure();
  }
};
} // namespace
