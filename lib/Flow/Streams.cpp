//===- Streams.cpp - Streams, named scopes and plugins of a flow ----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Multi-stream models (FLUX's image and text tokens) keep each stream as a
// named value of the flow: inputs are bound to streams, the active tensor is
// stored into and loaded from them, and a dual-stream stage transforms two
// at once. Named scopes label the errors of what they run; plugins are
// stages registered by name from outside RLX.
//
//===----------------------------------------------------------------------===//

#include "FlowContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include <mutex>

using namespace rlx;
using llvm::Error;
using llvm::StringRef;
using mlir::Value;

/// The stream ids a flow has, for messages.
static std::string streamList(const FlowContext::Impl &impl) {
  std::vector<std::string> ids;
  for (const auto &s : impl.streams)
    ids.push_back(s.getKey().str());
  llvm::sort(ids);
  return ids.empty() ? "none" : llvm::join(ids, ", ");
}

/// Stream `id`, or an error naming `block`, the id and the streams there are.
static llvm::Expected<Value> needStream(FlowContext::Impl &impl,
                                        StringRef block, StringRef id) {
  if (Value v = impl.streams.lookup(id))
    return v;
  return impl.fail(block + ": no stream '" + id +
                   "' (streams: " + streamList(impl) + ")");
}

/// An error of a user function run in the current scope: Emitter::fail and
/// the flow's own errors name the scope already, others get it.
static Error scoped(FlowContext::Impl &impl, Error err) {
  if (!err)
    return Error::success();
  std::string msg = llvm::toString(std::move(err));
  if (!impl.scope.empty() && StringRef(msg).starts_with(impl.scope + ": "))
    return llvm::createStringError(msg);
  return impl.fail(msg);
}

/// Runs `body` with `name` added to the flow's scope (messages name it).
static Error inScope(FlowContext::Impl &impl, StringRef name,
                     llvm::function_ref<Error()> body) {
  std::string saved = impl.scope;
  impl.scope = saved.empty() ? name.str() : saved + ": " + name.str();
  Error err = body();
  impl.scope = saved;
  return err;
}

Value Emitter::stream(StringRef id) { return ctx.impl.streams.lookup(id); }
void Emitter::setStream(StringRef id, Value v) { ctx.impl.streams[id] = v; }

ModelFlow &ModelFlow::bindInputsToStreams(
    std::vector<std::pair<std::string, std::string>> map) {
  return stage([map = std::move(map)](FlowContext &ctx) -> Error {
    for (const auto &[input, id] : map) {
      auto v = ctx.impl.need("bindInputsToStreams", input);
      if (!v)
        return v.takeError();
      ctx.impl.streams[id] = *v;
    }
    return Error::success();
  });
}

ModelFlow &ModelFlow::storeStream(StringRef id) {
  std::string s = id.str();
  return stage([s](FlowContext &ctx) -> Error {
    auto x = ctx.impl.active("storeStream");
    if (!x)
      return x.takeError();
    ctx.impl.streams[s] = *x;
    return Error::success();
  });
}

ModelFlow &ModelFlow::loadStream(StringRef id) {
  std::string s = id.str();
  return stage([s](FlowContext &ctx) -> Error {
    auto v = needStream(ctx.impl, "loadStream", s);
    if (!v)
      return v.takeError();
    ctx.impl.current = *v;
    return Error::success();
  });
}

ModelFlow &
ModelFlow::dualStream(StringRef stageName, StringRef a, StringRef b,
                      std::function<Error(Emitter &, Value &, Value &)> fn) {
  std::string label = stageName.str(), sa = a.str(), sb = b.str();
  return stage([=](FlowContext &ctx) -> Error {
    return inScope(ctx.impl, "dual stream '" + label + "'", [&]() -> Error {
      if (sa == sb)
        return ctx.impl.fail("streams a and b are both '" + sa + "'");
      auto va = needStream(ctx.impl, "dualStream", sa);
      if (!va)
        return va.takeError();
      auto vb = needStream(ctx.impl, "dualStream", sb);
      if (!vb)
        return vb.takeError();
      Value x = *va, y = *vb;
      Emitter e(ctx);
      if (Error err = fn(e, x, y))
        return scoped(ctx.impl, std::move(err));
      if (!x || !y)
        return ctx.impl.fail("left stream '" + (x ? sb : sa) +
                             "' without a "
                             "value");
      ctx.impl.streams[sa] = x;
      ctx.impl.streams[sb] = y;
      return Error::success();
    });
  });
}

ModelFlow &ModelFlow::named(StringRef scopeName, Stage s) {
  std::string label = scopeName.str();
  return stage([label, s = std::move(s)](FlowContext &ctx) -> Error {
    return inScope(ctx.impl, label, [&] { return scoped(ctx.impl, s(ctx)); });
  });
}

//===----------------------------------------------------------------------===//
// Plugins
//===----------------------------------------------------------------------===//

struct PluginRegistry::Impl {
  mutable std::mutex mutex;
  std::map<std::string, PluginFn> plugins;
};

PluginRegistry::PluginRegistry() : impl(std::make_shared<Impl>()) {}

PluginRegistry &PluginRegistry::global() {
  static PluginRegistry registry;
  return registry;
}

Error PluginRegistry::add(StringRef name, PluginFn fn) {
  if (name.empty() || !fn)
    return llvm::createStringError(
        "registerPlugin: a plugin needs a name and a function");
  std::lock_guard<std::mutex> lock(impl->mutex);
  if (!impl->plugins.emplace(name.str(), std::move(fn)).second)
    return llvm::createStringError("registerPlugin: a plugin named '" + name +
                                   "' is registered already");
  return Error::success();
}

bool PluginRegistry::remove(StringRef name) {
  std::lock_guard<std::mutex> lock(impl->mutex);
  return impl->plugins.erase(name.str()) > 0;
}

PluginFn PluginRegistry::lookup(StringRef name) const {
  std::lock_guard<std::mutex> lock(impl->mutex);
  auto it = impl->plugins.find(name.str());
  return it == impl->plugins.end() ? PluginFn() : it->second;
}

std::vector<std::string> PluginRegistry::names() const {
  std::lock_guard<std::mutex> lock(impl->mutex);
  std::vector<std::string> out;
  for (const auto &p : impl->plugins)
    out.push_back(p.first);
  return out;
}

ModelFlow &ModelFlow::plugin(StringRef pluginName, llvm::json::Object args) {
  std::string label = pluginName.str();
  auto shared = std::make_shared<llvm::json::Object>(std::move(args));
  return stage([label, shared](FlowContext &ctx) -> Error {
    return inScope(ctx.impl, "plugin '" + label + "'", [&]() -> Error {
      PluginFn fn = PluginRegistry::global().lookup(label);
      if (!fn) {
        std::vector<std::string> names = PluginRegistry::global().names();
        return ctx.impl.fail(
            "no plugin is registered under this name (registered: " +
            (names.empty() ? std::string("none") : llvm::join(names, ", ")) +
            ")");
      }
      Emitter e(ctx);
      if (Error err = fn(e, *shared))
        return scoped(ctx.impl, std::move(err));
      return Error::success();
    });
  });
}
