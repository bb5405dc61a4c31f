//===- Blocks.cpp - The blocks of a ModelFlow -----------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each block is a stage that emits HIR on the flow's active tensor, with
// weights looked up (and checked) by their Hugging Face names.
//
//===----------------------------------------------------------------------===//

#include "FlowContext.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"
#include "RLX/Flow/Stages.h"
#include <cmath>

using namespace rlx;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using mlir::NamedAttribute;
using mlir::Value;
using Impl = FlowContext::Impl;

namespace {
/// Shorthand for attributes.
struct Attrs {
  mlir::OpBuilder &b;
  NamedAttribute i64(StringRef n, int64_t v) {
    return b.getNamedAttr(n, b.getI64IntegerAttr(v));
  }
  NamedAttribute f32(StringRef n, double v) {
    return b.getNamedAttr(n, b.getF32FloatAttr(v));
  }
  NamedAttribute unit(StringRef n) {
    return b.getNamedAttr(n, b.getUnitAttr());
  }
};
} // namespace

static int64_t lastDim(Value v) { return Impl::shapeOf(v).back(); }

static llvm::SmallVector<int64_t> withLast(Value v, int64_t last) {
  llvm::SmallVector<int64_t> s(Impl::shapeOf(v));
  s.back() = last;
  return s;
}

/// `x · Wᵀ (+ b)` for weight `prefix.weight` (and `prefix.bias`).
static Expected<Value> emitLinear(Impl &impl, Value x, StringRef prefix,
                                  bool bias) {
  auto w = impl.paramAnyShape((prefix + ".weight").str(), 2);
  if (!w)
    return w.takeError();
  int64_t out = Impl::shapeOf(*w)[0], in = Impl::shapeOf(*w)[1];
  if (in != lastDim(x))
    return impl.fail("weight '" + prefix + ".weight' takes " + llvm::Twine(in) +
                     " features, the input has " + llvm::Twine(lastDim(x)));
  llvm::SmallVector<Value> operands = {x, *w};
  if (bias) {
    auto bv = impl.param((prefix + ".bias").str(), {out});
    if (!bv)
      return bv.takeError();
    operands.push_back(*bv);
  }
  auto ty = mlir::RankedTensorType::get(withLast(x, out), impl.b.getF32Type());
  return impl.create("hir.linear", ty, operands)->getResult(0);
}

/// A stage applying `fn` to the active tensor, named `block` in errors.
static Stage onActive(StringRef block,
                      std::function<Expected<Value>(Impl &, Value)> fn) {
  std::string label = block.str();
  return [label, fn = std::move(fn)](FlowContext &ctx) -> Error {
    Impl &impl = ctx.impl;
    auto x = impl.active(label);
    if (!x)
      return x.takeError();
    auto y = fn(impl, *x);
    if (!y)
      return y.takeError();
    impl.current = *y;
    return Error::success();
  };
}

static Expected<Value> emitRmsNorm(Impl &impl, Value x, StringRef key,
                                   float eps, bool gemma) {
  auto w = impl.param(key, {lastDim(x)});
  if (!w)
    return w.takeError();
  return impl
      .create(gemma ? "hir.gemma_rms_norm" : "hir.rms_norm", x.getType(),
              {x, *w}, {Attrs{impl.b}.f32("epsilon", eps)})
      ->getResult(0);
}

static Expected<Value> emitLayerNorm(Impl &impl, Value x, StringRef prefix,
                                     float eps) {
  auto g = impl.param((prefix + ".weight").str(), {lastDim(x)});
  if (!g)
    return g.takeError();
  auto bt = impl.param((prefix + ".bias").str(), {lastDim(x)});
  if (!bt)
    return bt.takeError();
  return impl
      .create("hir.layer_norm", x.getType(), {x, *g, *bt},
              {Attrs{impl.b}.f32("epsilon", eps)})
      ->getResult(0);
}

static Expected<Value> emitEmbed(Impl &impl, Value ids, StringRef key) {
  auto table = impl.paramAnyShape(key, 2);
  if (!table)
    return table.takeError();
  auto idsShape = Impl::shapeOf(ids);
  if (idsShape.size() != 2)
    return impl.fail("token ids must be [batch, seq]");
  auto ty = mlir::RankedTensorType::get(
      {idsShape[0], idsShape[1], Impl::shapeOf(*table)[1]},
      impl.b.getF32Type());
  return impl.create("hir.embed", ty, {ids, *table})->getResult(0);
}

//===----------------------------------------------------------------------===//
// Small blocks
//===----------------------------------------------------------------------===//

ModelFlow &ModelFlow::tokenEmbed(StringRef key) {
  std::string k = key.str();
  return stage(onActive("tokenEmbed", [k](Impl &impl, Value ids) {
    return emitEmbed(impl, ids, k);
  }));
}

ModelFlow &ModelFlow::gatherAdd(StringRef idsInput, StringRef tableKey) {
  std::string in = idsInput.str(), k = tableKey.str();
  return stage(
      onActive("gatherAdd", [in, k](Impl &impl, Value x) -> Expected<Value> {
        auto ids = impl.need("gatherAdd", in);
        if (!ids)
          return ids.takeError();
        auto e = emitEmbed(impl, *ids, k);
        if (!e)
          return e.takeError();
        if (e->getType() != x.getType())
          return impl.fail("gatherAdd: '" + k + "' gives " +
                           formatShape(Impl::shapeOf(*e)) + " for an active " +
                           formatShape(Impl::shapeOf(x)));
        return impl.create("hir.add", x.getType(), {x, *e})->getResult(0);
      }));
}

ModelFlow &ModelFlow::embedScale(float scale) {
  return stage(onActive("embedScale", [scale](Impl &impl, Value x) {
    return impl
        .create("hir.embed_scale", x.getType(), {x},
                {Attrs{impl.b}.f32("scale", scale)})
        ->getResult(0);
  }));
}

ModelFlow &ModelFlow::rmsNorm(StringRef key, float eps) {
  std::string k = key.str();
  return stage(onActive("rmsNorm", [k, eps](Impl &impl, Value x) {
    return emitRmsNorm(impl, x, k, eps, false);
  }));
}

ModelFlow &ModelFlow::gemmaRmsNorm(StringRef key, float eps) {
  std::string k = key.str();
  return stage(onActive("gemmaRmsNorm", [k, eps](Impl &impl, Value x) {
    return emitRmsNorm(impl, x, k, eps, true);
  }));
}

ModelFlow &ModelFlow::layerNorm(StringRef prefix, float eps) {
  std::string p = prefix.str();
  return stage(onActive("layerNorm", [p, eps](Impl &impl, Value x) {
    return emitLayerNorm(impl, x, p, eps);
  }));
}

ModelFlow &ModelFlow::linear(StringRef prefix, bool bias) {
  std::string p = prefix.str();
  return stage(onActive("linear", [p, bias](Impl &impl, Value x) {
    return emitLinear(impl, x, p, bias);
  }));
}

ModelFlow &ModelFlow::residualSave(StringRef slot) {
  std::string s = slot.str();
  return stage([s](FlowContext &ctx) -> Error {
    auto x = ctx.impl.active("residualSave");
    if (!x)
      return x.takeError();
    ctx.impl.named[s] = *x;
    return Error::success();
  });
}

ModelFlow &ModelFlow::residualAdd(StringRef slot) {
  std::string s = slot.str();
  return stage(
      onActive("residualAdd", [s](Impl &impl, Value x) -> Expected<Value> {
        auto r = impl.need("residualAdd", s);
        if (!r)
          return r.takeError();
        return impl.create("hir.add", x.getType(), {*r, x})->getResult(0);
      }));
}

ModelFlow &ModelFlow::layerScale(StringRef key) {
  std::string k = key.str();
  return stage(
      onActive("layerScale", [k](Impl &impl, Value x) -> Expected<Value> {
        auto g = impl.param(k, {lastDim(x)});
        if (!g)
          return g.takeError();
        return impl.create("hir.layer_scale", x.getType(), {x, *g})
            ->getResult(0);
      }));
}

/// RoPE on a [B, T, n*hd] projection.
static Expected<Value> emitRope(Impl &impl, Value x, const AttentionSpec &a,
                                StringRef invFreqKey) {
  auto pos = impl.need("RoPE", "positions");
  if (!pos)
    return pos.takeError();
  int64_t rot = a.rotaryDim ? a.rotaryDim : a.headDim;
  llvm::SmallVector<Value> operands = {x, *pos};
  if (!invFreqKey.empty()) {
    auto f = impl.param(invFreqKey, {rot / 2});
    if (!f)
      return f.takeError();
    operands.push_back(*f);
  }
  Attrs at{impl.b};
  return impl
      .create("hir.rope", x.getType(), operands,
              {at.i64("head_dim", a.headDim), at.i64("rotary_dim", rot),
               at.f32("theta", a.ropeTheta),
               impl.b.getNamedAttr(
                   "style",
                   mlir::rlx::hir::RopeStyleAttr::get(
                       &impl.context, a.interleavedRope
                                          ? mlir::rlx::RopeStyle::Interleaved
                                          : mlir::rlx::RopeStyle::Half))})
      ->getResult(0);
}

static llvm::SmallVector<NamedAttribute>
attentionAttrs(Impl &impl, const AttentionSpec &a) {
  Attrs at{impl.b};
  mlir::rlx::MaskKind kind = !a.causal      ? mlir::rlx::MaskKind::None
                             : a.window > 0 ? mlir::rlx::MaskKind::SlidingWindow
                                            : mlir::rlx::MaskKind::Causal;
  return {at.i64("num_heads", a.numHeads),
          at.i64("num_kv_heads", a.numKvHeads),
          at.i64("head_dim", a.headDim),
          impl.b.getNamedAttr("mask_kind", mlir::rlx::hir::MaskKindAttr::get(
                                               &impl.context, kind)),
          at.i64("window", a.window),
          at.f32("scale", a.scale),
          at.f32("softcap", a.softcap)};
}

ModelFlow &ModelFlow::selfAttnPrefill(StringRef prefix,
                                      const AttentionSpec &spec) {
  std::string p = prefix.str();
  return stage(onActive(
      "selfAttnPrefill", [p, spec](Impl &impl, Value x) -> Expected<Value> {
        auto q = emitLinear(impl, x, p + "q_proj", false);
        if (!q)
          return q.takeError();
        auto k = emitLinear(impl, x, p + "k_proj", false);
        if (!k)
          return k.takeError();
        auto v = emitLinear(impl, x, p + "v_proj", false);
        if (!v)
          return v.takeError();
        auto qr = emitRope(impl, *q, spec, "");
        if (!qr)
          return qr.takeError();
        auto kr = emitRope(impl, *k, spec, "");
        if (!kr)
          return kr.takeError();
        Value attn = impl.create("hir.attention", qr->getType(), {*qr, *kr, *v},
                                 attentionAttrs(impl, spec))
                         ->getResult(0);
        return emitLinear(impl, attn, p + "o_proj", false);
      }));
}

/// The weights of a mixture of experts under `base` (the layer's
/// "block_sparse_moe." or "mlp."): the router, the experts' stacks and the
/// shared expert's four weights (null when it has none).
struct MoeWeights {
  Value router, gate, up, down;
  std::array<Value, 4> shared = {};
};

static Expected<MoeWeights> emitMoeWeights(Impl &impl, const MoeSpec &moe,
                                           const std::string &base, int64_t h) {
  if (moe.numExperts < 1 || moe.expertsPerToken < 1 ||
      moe.expertsPerToken > moe.numExperts || moe.intermediate < 1 ||
      moe.sharedIntermediate < 0)
    return impl.fail("a mixture of experts under '" + base + "' needs " +
                     "1 <= experts_per_token (" +
                     llvm::Twine(moe.expertsPerToken) + ") <= experts (" +
                     llvm::Twine(moe.numExperts) +
                     ") and a positive intermediate size (" +
                     llvm::Twine(moe.intermediate) + ")");
  MoeWeights w;
  int64_t ei = moe.intermediate;
  auto expertKey = [&](int64_t e, StringRef which) {
    static const llvm::StringMap<StringRef> mixtral = {
        {"gate_proj", "w1"}, {"up_proj", "w3"}, {"down_proj", "w2"}};
    return base + "experts." + std::to_string(e) + "." +
           (moe.mixtralNames ? mixtral.lookup(which) : which).str() + ".weight";
  };
  for (auto [which, shape, out] :
       {std::tuple<StringRef, llvm::SmallVector<int64_t>, Value *>{
            "gate_proj", {ei, h}, &w.gate},
        {"up_proj", {ei, h}, &w.up},
        {"down_proj", {h, ei}, &w.down}}) {
    llvm::SmallVector<Value> experts;
    for (int64_t e = 0; e < moe.numExperts; ++e) {
      auto v = impl.param(expertKey(e, which), shape);
      if (!v)
        return v.takeError();
      experts.push_back(*v);
    }
    llvm::SmallVector<int64_t> stacked = {moe.numExperts};
    stacked.append(shape.begin(), shape.end());
    auto type = mlir::RankedTensorType::get(
        stacked, mlir::cast<mlir::RankedTensorType>(experts[0].getType())
                     .getElementType());
    *out = impl.create("hir.stack", type, experts)->getResult(0);
  }
  auto router = impl.param(base + "gate.weight", {moe.numExperts, h});
  if (!router)
    return router.takeError();
  w.router = *router;
  if (moe.sharedIntermediate == 0)
    return w;
  int64_t si = moe.sharedIntermediate;
  std::string s = base + "shared_expert.";
  std::pair<std::string, llvm::SmallVector<int64_t>> keys[] = {
      {s + "gate_proj.weight", {si, h}},
      {s + "up_proj.weight", {si, h}},
      {s + "down_proj.weight", {h, si}},
      {base + "shared_expert_gate.weight", {1, h}}};
  for (auto [i, key] : llvm::enumerate(keys)) {
    auto v = impl.param(key.first, key.second);
    if (!v)
      return v.takeError();
    w.shared[i] = *v;
  }
  return w;
}

static Stage gatedFfn(StringRef block, StringRef opName, StringRef prefix) {
  std::string p = prefix.str(), op = opName.str();
  return onActive(block, [p, op](Impl &impl, Value x) -> Expected<Value> {
    auto g = impl.paramAnyShape(p + "gate_proj.weight", 2);
    if (!g)
      return g.takeError();
    int64_t inter = Impl::shapeOf(*g)[0], hidden = lastDim(x);
    auto gw = impl.param(p + "gate_proj.weight", {inter, hidden});
    if (!gw)
      return gw.takeError();
    auto u = impl.param(p + "up_proj.weight", {inter, hidden});
    if (!u)
      return u.takeError();
    auto d = impl.param(p + "down_proj.weight", {hidden, inter});
    if (!d)
      return d.takeError();
    return impl.create(op, x.getType(), {x, *gw, *u, *d})->getResult(0);
  });
}

ModelFlow &ModelFlow::swigluHfMlp(StringRef prefix) {
  return stage(gatedFfn("swigluHfMlp", "hir.swiglu", prefix));
}

ModelFlow &ModelFlow::moeMlp(StringRef prefix, const MoeSpec &spec) {
  std::string p = prefix.str();
  return stage(
      onActive("moeMlp", [p, spec](Impl &impl, Value x) -> Expected<Value> {
        if (Impl::shapeOf(x).size() != 3)
          return impl.fail("moeMlp: expects a [batch, seq, hidden] input");
        auto w = emitMoeWeights(impl, spec, p, lastDim(x));
        if (!w)
          return w.takeError();
        llvm::SmallVector<Value> operands = {x, w->router, w->gate, w->up,
                                             w->down};
        bool shared = w->shared[0] != nullptr;
        if (shared)
          operands.append(w->shared.begin(), w->shared.end());
        Attrs at{impl.b};
        llvm::SmallVector<NamedAttribute> attrs = {
            at.i64("experts_per_token", spec.expertsPerToken),
            impl.b.getNamedAttr(
                "operandSegmentSizes",
                impl.b.getDenseI32ArrayAttr(
                    {1, 1, 1, 1, 1, shared, shared, shared, shared}))};
        if (spec.normTopKProb)
          attrs.push_back(
              impl.b.getNamedAttr("norm_topk_prob", impl.b.getUnitAttr()));
        return impl.create("hir.moe_mlp", x.getType(), operands, attrs)
            ->getResult(0);
      }));
}

ModelFlow &ModelFlow::geglu(StringRef prefix) {
  return stage(gatedFfn("geglu", "hir.geglu", prefix));
}

ModelFlow &ModelFlow::geluFfn(StringRef in, StringRef out, bool tanh) {
  std::string i = in.str(), o = out.str();
  return stage(
      onActive("geluFfn", [i, o, tanh](Impl &impl, Value x) -> Expected<Value> {
        int64_t hidden = lastDim(x);
        auto wi = impl.paramAnyShape(i + ".weight", 2);
        if (!wi)
          return wi.takeError();
        int64_t inter = Impl::shapeOf(*wi)[0];
        auto wic = impl.param(i + ".weight", {inter, hidden});
        auto bi = impl.param(i + ".bias", {inter});
        auto wo = impl.param(o + ".weight", {hidden, inter});
        auto bo = impl.param(o + ".bias", {hidden});
        for (auto *e : {&wic, &bi, &wo, &bo})
          if (!*e)
            return e->takeError();
        llvm::SmallVector<NamedAttribute> attrs;
        if (tanh)
          attrs.push_back(Attrs{impl.b}.unit("tanh_approx"));
        return impl
            .create("hir.gelu_ffn", x.getType(), {x, *wic, *bi, *wo, *bo},
                    attrs)
            ->getResult(0);
      }));
}

ModelFlow &ModelFlow::denseMlp(StringRef in, StringRef out,
                               StringRef activation) {
  std::string i = in.str(), o = out.str(), a = activation.str();
  return stage(
      onActive("denseMlp", [i, o, a](Impl &impl, Value x) -> Expected<Value> {
        std::optional<mlir::rlx::Activation> act =
            mlir::rlx::symbolizeActivation(a);
        if (!act)
          return impl.fail("denseMlp: unknown activation '" + a + "'");
        auto h = emitLinear(impl, x, i, true);
        if (!h)
          return h.takeError();
        h->getDefiningOp()->setAttr(
            "activation",
            mlir::rlx::hir::ActivationAttr::get(&impl.context, *act));
        auto y = emitLinear(impl, *h, o, true);
        if (!y)
          return y.takeError();
        if (lastDim(*y) != lastDim(x))
          return impl.fail(
              "denseMlp: '" + o + ".weight' gives " + llvm::Twine(lastDim(*y)) +
              " features for an input of " + llvm::Twine(lastDim(x)));
        return *y;
      }));
}

//===----------------------------------------------------------------------===//
// Vision encoders
//===----------------------------------------------------------------------===//

ModelFlow &ModelFlow::patchEmbed(StringRef prefix, int64_t patchSize) {
  std::string p = prefix.str();
  return stage(onActive(
      "patchEmbed", [p, patchSize](Impl &impl, Value px) -> Expected<Value> {
        auto s = Impl::shapeOf(px);
        if (s.size() != 4)
          return impl.fail("patchEmbed: the pixels must be [batch, channels, "
                           "height, width], got " +
                           formatShape(s));
        auto w = impl.paramAnyShape(p + ".weight", 4);
        if (!w)
          return w.takeError();
        auto ws = Impl::shapeOf(*w);
        if (ws[1] != s[1] || ws[2] != patchSize || ws[3] != patchSize)
          return impl.fail("patchEmbed: weight '" + p + ".weight' has shape " +
                           formatShape(ws) + "; expected [hidden, " +
                           llvm::Twine(s[1]) + ", " + llvm::Twine(patchSize) +
                           ", " + llvm::Twine(patchSize) + "] for " +
                           llvm::Twine(s[1]) + "-channel images in " +
                           llvm::Twine(patchSize) + "x" +
                           llvm::Twine(patchSize) + " patches");
        for (int64_t d : {s[2], s[3]})
          if (d != kDynamic && d < patchSize)
            return impl.fail("patchEmbed: an image of " + llvm::Twine(s[2]) +
                             "x" + llvm::Twine(s[3]) +
                             " holds no whole patch of " +
                             llvm::Twine(patchSize));
        auto b = impl.param(p + ".bias", {ws[0]});
        if (!b)
          return b.takeError();
        int64_t n = s[2] == kDynamic || s[3] == kDynamic
                        ? kDynamic
                        : (s[2] / patchSize) * (s[3] / patchSize);
        return impl
            .create("hir.patch_embed", impl.tensor({s[0], n, ws[0]}),
                    {px, *w, *b}, {Attrs{impl.b}.i64("patch_size", patchSize)})
            ->getResult(0);
      }));
}

ModelFlow &ModelFlow::insertTokens(StringRef key, int64_t position) {
  std::string k = key.str();
  return stage(onActive(
      "insertTokens", [k, position](Impl &impl, Value x) -> Expected<Value> {
        auto s = Impl::shapeOf(x);
        auto t = impl.paramAnyShape(k, 3);
        if (!t)
          return t.takeError();
        auto ts = Impl::shapeOf(*t);
        if (s.size() != 3 || ts[0] != 1 || ts[2] != s[2])
          return impl.fail("insertTokens: '" + k + "' has shape " +
                           formatShape(ts) + " for tokens " + formatShape(s) +
                           " (expected [1, n, " + llvm::Twine(s.back()) + "])");
        if (s[1] != kDynamic && position > s[1])
          return impl.fail("insertTokens: position " + llvm::Twine(position) +
                           " is past the " + llvm::Twine(s[1]) + " tokens");
        int64_t n = s[1] == kDynamic ? kDynamic : s[1] + ts[1];
        return impl
            .create("hir.insert_tokens", impl.tensor({s[0], n, s[2]}), {x, *t},
                    {Attrs{impl.b}.i64("position", position)})
            ->getResult(0);
      }));
}

ModelFlow &ModelFlow::positionEmbed(StringRef key, int64_t gridH, int64_t gridW,
                                    int64_t leading, bool antialias) {
  std::string k = key.str();
  return stage(
      onActive("positionEmbed", [=](Impl &impl, Value x) -> Expected<Value> {
        auto s = Impl::shapeOf(x);
        auto t = impl.paramAnyShape(k, 3);
        if (!t)
          return t.takeError();
        auto ts = Impl::shapeOf(*t);
        int64_t side = static_cast<int64_t>(
            std::llround(std::sqrt(static_cast<double>(ts[1] - leading))));
        if (ts[0] != 1 || ts[2] != s.back() || ts[1] <= leading ||
            side * side != ts[1] - leading)
          return impl.fail("positionEmbed: '" + k + "' has shape " +
                           formatShape(ts) + "; expected [1, " +
                           llvm::Twine(leading) + " + s*s, " +
                           llvm::Twine(s.back()) + "] for a square grid");
        if (s.size() != 3 ||
            (s[1] != kDynamic && s[1] != leading + gridH * gridW))
          return impl.fail("positionEmbed: tokens " + formatShape(s) +
                           " are not " + llvm::Twine(leading) + " + " +
                           llvm::Twine(gridH) + "x" + llvm::Twine(gridW));
        Attrs at{impl.b};
        llvm::SmallVector<NamedAttribute> attrs = {
            impl.b.getNamedAttr("grid",
                                impl.b.getDenseI64ArrayAttr({gridH, gridW})),
            at.i64("leading", leading)};
        if (antialias)
          attrs.push_back(at.unit("antialias"));
        return impl.create("hir.position_embed", x.getType(), {x, *t}, attrs)
            ->getResult(0);
      }));
}

ModelFlow &ModelFlow::vitSelfAttn(StringRef prefix, const AttentionSpec &spec,
                                  bool qkvBias) {
  std::string p = prefix.str();
  AttentionSpec a = spec;
  a.causal = false;
  return stage(onActive(
      "vitSelfAttn", [p, a, qkvBias](Impl &impl, Value x) -> Expected<Value> {
        llvm::SmallVector<Value, 3> qkv;
        for (const char *name : {"query", "key", "value"}) {
          auto v = emitLinear(impl, x, p + "attention." + name, qkvBias);
          if (!v)
            return v.takeError();
          qkv.push_back(*v);
        }
        Value attn = impl.create("hir.attention", qkv[0].getType(), qkv,
                                 attentionAttrs(impl, a))
                         ->getResult(0);
        return emitLinear(impl, attn, p + "output.dense", true);
      }));
}

ModelFlow &ModelFlow::visionSwiGluFfn(StringRef prefix) {
  std::string p = prefix.str();
  return stage(
      onActive("visionSwiGluFfn", [p](Impl &impl, Value x) -> Expected<Value> {
        int64_t hidden = lastDim(x);
        auto wi = impl.paramAnyShape(p + "weights_in.weight", 2);
        if (!wi)
          return wi.takeError();
        int64_t rows = Impl::shapeOf(*wi)[0];
        if (rows % 2 != 0 || Impl::shapeOf(*wi)[1] != hidden)
          return impl.fail("visionSwiGluFfn: '" + p +
                           "weights_in.weight' has shape " +
                           formatShape(Impl::shapeOf(*wi)) +
                           "; expected [2*inter, " + llvm::Twine(hidden) + "]");
        auto bi = impl.param(p + "weights_in.bias", {rows});
        auto wo = impl.param(p + "weights_out.weight", {hidden, rows / 2});
        auto bo = impl.param(p + "weights_out.bias", {hidden});
        for (auto *e : {&bi, &wo, &bo})
          if (!*e)
            return e->takeError();
        return impl
            .create("hir.packed_swiglu", x.getType(), {x, *wi, *bi, *wo, *bo},
                    {impl.b.getNamedAttr(
                        "operandSegmentSizes",
                        impl.b.getDenseI32ArrayAttr({1, 1, 1, 1, 1}))})
            ->getResult(0);
      }));
}

//===----------------------------------------------------------------------===//
// Heads
//===----------------------------------------------------------------------===//

ModelFlow &ModelFlow::finalNorm(float eps, StringRef key) {
  return rmsNorm(key, eps);
}

ModelFlow &ModelFlow::gatherLastToken() {
  return stage(onActive("gatherLastToken", [](Impl &impl, Value x) {
    auto s = Impl::shapeOf(x);
    auto ty = mlir::RankedTensorType::get({s[0], 1, s[2]}, impl.b.getF32Type());
    return impl.create("hir.gather_last_token", ty, {x})->getResult(0);
  }));
}

ModelFlow &ModelFlow::lmHead(bool tied, StringRef key, StringRef embedKey) {
  std::string k = (tied ? embedKey : key).str();
  return stage(
      onActive("lmHead", [k, tied](Impl &impl, Value x) -> Expected<Value> {
        auto w = impl.paramAnyShape(k, 2);
        if (!w)
          return w.takeError();
        if (Impl::shapeOf(*w)[1] != lastDim(x))
          return impl.fail("lmHead: '" + k + "' has shape " +
                           formatShape(Impl::shapeOf(*w)) +
                           " for hidden size " + llvm::Twine(lastDim(x)));
        auto ty = mlir::RankedTensorType::get(withLast(x, Impl::shapeOf(*w)[0]),
                                              impl.b.getF32Type());
        llvm::SmallVector<NamedAttribute> attrs;
        if (tied)
          attrs.push_back(Attrs{impl.b}.unit("tied"));
        return impl.create("hir.lm_head", ty, {x, *w}, attrs)->getResult(0);
      }));
}

ModelFlow &ModelFlow::logitSoftcap(float cap) {
  return stage(onActive("logitSoftcap", [cap](Impl &impl, Value x) {
    return impl
        .create("hir.logit_softcap", x.getType(), {x},
                {Attrs{impl.b}.f32("cap", cap)})
        ->getResult(0);
  }));
}

ModelFlow &ModelFlow::clsPool() {
  return stage(onActive("clsPool", [](Impl &impl, Value x) {
    auto s = Impl::shapeOf(x);
    auto ty = mlir::RankedTensorType::get({s[0], s[2]}, impl.b.getF32Type());
    return impl.create("hir.cls_pool", ty, {x})->getResult(0);
  }));
}

ModelFlow &ModelFlow::meanPool(StringRef maskInput) {
  std::string m = maskInput.str();
  return stage(
      onActive("meanPool", [m](Impl &impl, Value x) -> Expected<Value> {
        auto s = Impl::shapeOf(x);
        auto ty =
            mlir::RankedTensorType::get({s[0], s[2]}, impl.b.getF32Type());
        llvm::SmallVector<Value> operands = {x};
        if (!m.empty()) {
          auto mask = impl.need("meanPool", m);
          if (!mask)
            return mask.takeError();
          operands.push_back(*mask);
        }
        return impl.create("hir.mean_pool", ty, operands)->getResult(0);
      }));
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

/// Emits one decoder layer composite; with `decode`, the KV-cache form.
static Error emitDecoderLayer(Impl &impl, unsigned index,
                              const DecoderLayerSpec &spec, bool decode) {
  auto x = impl.active("decoder layer");
  if (!x)
    return x.takeError();
  auto pos = impl.need("decoder layer", "positions");
  if (!pos)
    return pos.takeError();
  const AttentionSpec &a = spec.attention;
  int64_t h = spec.hidden, hd = a.headDim;
  int64_t q = a.numHeads * hd, kv = a.numKvHeads * hd;
  const std::string &p = spec.prefix;
  llvm::SmallVector<Value> operands = {*x, *pos};
  llvm::SmallVector<int32_t> segments = {1, 1};
  Value pastK, pastV;
  if (decode) {
    auto pk = impl.need("decode layer", "past_k." + std::to_string(index));
    if (!pk)
      return pk.takeError();
    auto pv = impl.need("decode layer", "past_v." + std::to_string(index));
    if (!pv)
      return pv.takeError();
    pastK = *pk;
    pastV = *pv;
    operands.append({pastK, pastV});
    segments.append({1, 1});
    Value mask = impl.named.lookup("kv_mask");
    if (mask)
      operands.push_back(mask);
    segments.push_back(mask ? 1 : 0);
  }
  // The weights in operand order; an optional one (a bias) the spec does
  // not ask for is an empty segment.
  struct W {
    std::string key;
    llvm::SmallVector<int64_t> shape;
    bool present = true;
    /// Set for a weight built here (an expert stack) rather than loaded.
    Value value = {};
  };
  int64_t inter = spec.intermediate;
  std::vector<W> weights = {{p + "input_layernorm.weight", {h}},
                            {p + "self_attn.q_proj.weight", {q, h}},
                            {p + "self_attn.k_proj.weight", {kv, h}},
                            {p + "self_attn.v_proj.weight", {kv, h}},
                            {p + "self_attn.o_proj.weight", {h, q}},
                            {p + "self_attn.q_proj.bias", {q}, spec.qkvBias},
                            {p + "self_attn.k_proj.bias", {kv}, spec.qkvBias},
                            {p + "self_attn.v_proj.bias", {kv}, spec.qkvBias},
                            {p + "self_attn.o_proj.bias", {h}, spec.outBias}};
  if (spec.gemma) {
    weights.push_back({p + "post_attention_layernorm.weight", {h}});
    weights.push_back({p + "pre_feedforward_layernorm.weight", {h}});
    weights.push_back({p + "post_feedforward_layernorm.weight", {h}});
  } else {
    weights.push_back({p + "post_attention_layernorm.weight", {h}});
  }
  // Qwen3 always has QK norms; Gemma has them optionally (Gemma 3).
  if (spec.qkNorm || spec.gemma) {
    weights.push_back({p + "self_attn.q_norm.weight", {hd}, spec.qkNorm});
    weights.push_back({p + "self_attn.k_norm.weight", {hd}, spec.qkNorm});
  }
  const MoeSpec &moe = spec.moe;
  MoeWeights experts;
  if (moe.numExperts > 0) {
    if (spec.mlpBias)
      return impl.fail("decoder layer " + llvm::Twine(index) +
                       ": a mixture of experts takes no MLP biases");
    auto e = emitMoeWeights(
        impl, moe, p + (moe.mixtralNames ? "block_sparse_moe." : "mlp."), h);
    if (!e)
      return e.takeError();
    experts = *e;
    weights.push_back({"", {}, true, experts.gate});
    weights.push_back({"", {}, true, experts.up});
    weights.push_back({"", {}, true, experts.down});
  } else {
    weights.push_back({p + "mlp.gate_proj.weight", {inter, h}});
    weights.push_back({p + "mlp.up_proj.weight", {inter, h}});
    weights.push_back({p + "mlp.down_proj.weight", {h, inter}});
  }
  weights.push_back({p + "mlp.gate_proj.bias", {inter}, spec.mlpBias});
  weights.push_back({p + "mlp.up_proj.bias", {inter}, spec.mlpBias});
  weights.push_back({p + "mlp.down_proj.bias", {h}, spec.mlpBias});
  auto addWeights = [&](llvm::ArrayRef<W> ws) -> Error {
    for (const W &w : ws) {
      segments.push_back(w.present ? 1 : 0);
      if (!w.present)
        continue;
      if (w.value) {
        operands.push_back(w.value);
        continue;
      }
      auto v = impl.param(w.key, w.shape);
      if (!v)
        return v.takeError();
      operands.push_back(*v);
    }
    return Error::success();
  };
  if (Error err = addWeights(weights))
    return err;
  int64_t rot = a.rotaryDim ? a.rotaryDim : hd;
  if (!spec.invFreqKey.empty()) {
    auto f = impl.param(spec.invFreqKey, {rot / 2});
    if (!f)
      return f.takeError();
    operands.push_back(*f);
  }
  segments.push_back(spec.invFreqKey.empty() ? 0 : 1);
  // The router and the shared expert of a mixture of experts.
  std::vector<W> moeWeights = {
      {"", {}, experts.router != nullptr, experts.router}};
  for (Value v : experts.shared)
    moeWeights.push_back({"", {}, v != nullptr, v});
  if (Error err = addWeights(moeWeights))
    return err;

  Attrs at{impl.b};
  llvm::SmallVector<NamedAttribute> attrs = {
      at.i64("num_heads", a.numHeads),
      at.i64("num_kv_heads", a.numKvHeads),
      at.i64("head_dim", hd),
      at.f32("rope_theta", a.ropeTheta),
      at.i64("rotary_dim", rot),
      at.f32("rms_epsilon", spec.rmsEpsilon),
      at.i64("window", a.window),
      impl.b.getNamedAttr(
          "rope_style",
          mlir::rlx::hir::RopeStyleAttr::get(
              &impl.context, a.interleavedRope
                                 ? mlir::rlx::RopeStyle::Interleaved
                                 : mlir::rlx::RopeStyle::Half))};
  if (a.scale)
    attrs.push_back(at.f32("scale", a.scale));
  if (spec.gemma)
    attrs.push_back(at.f32("attn_softcap", a.softcap));
  if (!spec.mlpActivation.empty()) {
    std::optional<mlir::rlx::Activation> act =
        mlir::rlx::symbolizeActivation(spec.mlpActivation);
    if (!act)
      return impl.fail("decoder layer " + llvm::Twine(index) +
                       ": unknown MLP activation '" + spec.mlpActivation + "'");
    attrs.push_back(impl.b.getNamedAttr(
        "mlp_activation",
        mlir::rlx::hir::ActivationAttr::get(&impl.context, *act)));
  }
  if (moe.numExperts > 0) {
    attrs.push_back(at.i64("experts_per_token", moe.expertsPerToken));
    if (moe.normTopKProb)
      attrs.push_back(
          impl.b.getNamedAttr("norm_topk_prob", impl.b.getUnitAttr()));
  }
  attrs.push_back(impl.b.getNamedAttr("operandSegmentSizes",
                                      impl.b.getDenseI32ArrayAttr(segments)));
  std::string family = spec.gemma ? "gemma" : spec.qkNorm ? "qwen3" : "llama";
  std::string opName =
      "hir." + family + (decode ? "_cached_decoder_layer" : "_decoder_layer");
  llvm::SmallVector<mlir::Type> results = {x->getType()};
  if (decode) {
    auto pk = Impl::shapeOf(pastK), xs = Impl::shapeOf(*x);
    int64_t total =
        mlir::ShapedType::isDynamic(pk[1]) || mlir::ShapedType::isDynamic(xs[1])
            ? mlir::ShapedType::kDynamic
            : pk[1] + xs[1];
    // The present keys and values keep the past's element type.
    auto ty = mlir::RankedTensorType::get(
        {pk[0], total, kv},
        mlir::cast<mlir::RankedTensorType>(pastK.getType()).getElementType());
    results.append({ty, ty});
  }
  mlir::Operation *op = impl.create(opName, results, operands, attrs);
  impl.current = op->getResult(0);
  if (decode) {
    impl.outputs.push_back(
        {"present_k." + std::to_string(index), op->getResult(1)});
    impl.outputs.push_back(
        {"present_v." + std::to_string(index), op->getResult(2)});
  }
  return Error::success();
}

Stage rlx::llamaPrefillLayerFused(unsigned index,
                                  const DecoderLayerSpec &spec) {
  return [index, spec](FlowContext &ctx) {
    return emitDecoderLayer(ctx.impl, index, spec, /*decode=*/false);
  };
}

Stage rlx::decodeLayer(unsigned index, const DecoderLayerSpec &spec) {
  return [index, spec](FlowContext &ctx) {
    return emitDecoderLayer(ctx.impl, index, spec, /*decode=*/true);
  };
}

Stage rlx::llamaPrefillLayerComposed(unsigned index,
                                     const DecoderLayerSpec &spec) {
  ModelFlow f("layer");
  const std::string &p = spec.prefix;
  f.residualSave("layer.residual")
      .rmsNorm(p + "input_layernorm.weight", spec.rmsEpsilon)
      .selfAttnPrefill(p + "self_attn.", spec.attention)
      .residualAdd("layer.residual")
      .residualSave("layer.residual")
      .rmsNorm(p + "post_attention_layernorm.weight", spec.rmsEpsilon)
      .swigluHfMlp(p + "mlp.")
      .residualAdd("layer.residual");
  bool unsupported = spec.qkNorm || spec.gemma || !spec.invFreqKey.empty() ||
                     spec.moe.numExperts > 0;
  std::vector<Stage> stages = f.takeStages();
  return [stages, unsupported, index](FlowContext &ctx) -> Error {
    if (unsupported)
      return ctx.impl.fail(
          "the composed layer covers plain LLaMA layers (no QK-norm, Gemma "
          "norms, scaled RoPE or experts); use llamaPrefillLayerFused for "
          "layer " +
          std::to_string(index));
    for (const Stage &s : stages)
      if (Error err = s(ctx))
        return err;
    return Error::success();
  };
}

ModelFlow &ModelFlow::llamaLayer(const DecoderLayerSpec &spec) {
  return stage(llamaPrefillLayerFused(0, spec));
}

ModelFlow &ModelFlow::bertEncoderLayer(const BertLayerSpec &spec) {
  return stage(onActive(
      "bertEncoderLayer", [spec](Impl &impl, Value x) -> Expected<Value> {
        const std::string &p = spec.prefix;
        int64_t h = spec.hidden, i = spec.intermediate;
        struct W {
          std::string key;
          llvm::SmallVector<int64_t> shape;
        };
        std::vector<W> ws = {{p + "attention.self.query.weight", {h, h}},
                             {p + "attention.self.query.bias", {h}},
                             {p + "attention.self.key.weight", {h, h}},
                             {p + "attention.self.key.bias", {h}},
                             {p + "attention.self.value.weight", {h, h}},
                             {p + "attention.self.value.bias", {h}},
                             {p + "attention.output.dense.weight", {h, h}},
                             {p + "attention.output.dense.bias", {h}},
                             {p + "attention.output.LayerNorm.weight", {h}},
                             {p + "attention.output.LayerNorm.bias", {h}},
                             {p + "intermediate.dense.weight", {i, h}},
                             {p + "intermediate.dense.bias", {i}},
                             {p + "output.dense.weight", {h, i}},
                             {p + "output.dense.bias", {h}},
                             {p + "output.LayerNorm.weight", {h}},
                             {p + "output.LayerNorm.bias", {h}}};
        llvm::SmallVector<Value> operands = {x};
        Value mask = impl.named.lookup("attention_mask");
        if (mask)
          operands.push_back(mask);
        for (const W &w : ws) {
          auto v = impl.param(w.key, w.shape);
          if (!v)
            return v.takeError();
          operands.push_back(*v);
        }
        Attrs at{impl.b};
        llvm::SmallVector<NamedAttribute> attrs = {
            at.i64("num_heads", spec.numHeads),
            at.i64("head_dim", spec.headDim),
            at.f32("ln_epsilon", spec.layerNormEpsilon)};
        std::optional<mlir::rlx::Activation> act =
            mlir::rlx::symbolizeActivation(spec.activation);
        if (!act)
          return impl.fail("bertEncoderLayer: unknown activation '" +
                           spec.activation + "'");
        attrs.push_back(impl.b.getNamedAttr(
            "activation",
            mlir::rlx::hir::ActivationAttr::get(&impl.context, *act)));
        return impl
            .create("hir.bert_encoder_layer", x.getType(), operands, attrs)
            ->getResult(0);
      }));
}

/// A NomicBERT encoder layer as an hir.custom over MIR (tier 2): the fused
/// QKV projection is split by views, which HIR blocks cannot express.
static Error emitNomicLayer(Impl &impl, const DecoderLayerSpec &spec) {
  auto x = impl.active("nomicEncoderLayer");
  if (!x)
    return x.takeError();
  auto pos = impl.need("nomicEncoderLayer", "positions");
  if (!pos)
    return pos.takeError();
  Value mask = impl.named.lookup("attention_mask");
  const AttentionSpec &a = spec.attention;
  int64_t h = spec.hidden, i = spec.intermediate, hd = a.headDim;
  if (a.numHeads * hd != h)
    return impl.fail("nomicEncoderLayer: num_heads * head_dim must equal the "
                     "hidden size");
  const std::string &p = spec.prefix;
  struct W {
    std::string key;
    llvm::SmallVector<int64_t> shape;
  };
  std::vector<W> ws = {{p + "attn.Wqkv.weight", {3 * h, h}},
                       {p + "attn.out_proj.weight", {h, h}},
                       {p + "norm1.weight", {h}},
                       {p + "norm1.bias", {h}},
                       {p + "mlp.fc11.weight", {i, h}},
                       {p + "mlp.fc12.weight", {i, h}},
                       {p + "mlp.fc2.weight", {h, i}},
                       {p + "norm2.weight", {h}},
                       {p + "norm2.bias", {h}}};
  // Check the weights against the source (the custom body declares them).
  for (const W &w : ws) {
    const TensorInfo *info = impl.weights.lookup(w.key);
    if (!info)
      return impl.fail("missing weight '" + w.key + "' (expected " +
                       formatShape(w.shape) + ") in " +
                       impl.weights.description());
    if (llvm::ArrayRef<int64_t>(info->shape) !=
        llvm::ArrayRef<int64_t>(w.shape))
      return impl.fail("weight '" + w.key + "' in " +
                       impl.weights.description() + " has shape " +
                       formatShape(info->shape) + ", expected " +
                       formatShape(w.shape));
  }
  llvm::SmallVector<Value> inputs = {*x, *pos};
  if (mask)
    inputs.push_back(mask);
  mlir::OpBuilder &b = impl.b;
  auto custom = mlir::rlx::hir::CustomOp::create(b, impl.loc, x->getType(),
                                                 "nomic_encoder_layer", inputs);
  mlir::Block *body = new mlir::Block();
  custom.getBody().push_back(body);
  for (Value in : inputs)
    body->addArgument(in.getType(), impl.loc);
  {
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(body);
    mlir::rlx::MIRBuilder mb(b, impl.loc);
    llvm::SmallVector<Value> w;
    for (const W &wt : ws)
      w.push_back(mlir::rlx::mir::ParamOp::create(
          b, impl.loc, mlir::RankedTensorType::get(wt.shape, b.getF32Type()),
          wt.key));
    Value xv = body->getArgument(0), pv = body->getArgument(1);
    Value mv = mask ? body->getArgument(2) : Value();
    Value qkv = mb.matmul(xv, w[0]);
    Value q = mb.slice(qkv, 2, 0, h), k = mb.slice(qkv, 2, h, h),
          v = mb.slice(qkv, 2, 2 * h, h);
    int64_t rot = a.rotaryDim ? a.rotaryDim : hd;
    auto style = a.interleavedRope ? mlir::rlx::RopeStyle::Interleaved
                                   : mlir::rlx::RopeStyle::Half;
    q = mb.rope(q, pv, nullptr, hd, rot, a.ropeTheta, style);
    k = mb.rope(k, pv, nullptr, hd, rot, a.ropeTheta, style);
    llvm::SmallVector<Value> operands = {q, k, v};
    if (mv)
      operands.push_back(mv);
    float scale = a.scale > 0 ? a.scale : 1.0f / std::sqrt(float(hd));
    Value attn =
        mb.create("mir.attention", q.getType(), operands,
                  {mb.i64("num_heads", a.numHeads),
                   mb.i64("num_kv_heads", a.numHeads), mb.i64("head_dim", hd),
                   mb.f32("scale", scale),
                   mb.attr("mask_kind",
                           mlir::rlx::mir::MaskKindAttr::get(
                               &impl.context, mv ? mlir::rlx::MaskKind::Padding
                                                 : mlir::rlx::MaskKind::None))})
            ->getResult(0);
    Value o = mb.matmul(attn, w[1]);
    Value hidden =
        mb.fusedResidualLayerNorm(o, xv, w[2], w[3], spec.rmsEpsilon).second;
    Value up = mb.matmul(hidden, w[4]);
    Value gate =
        mb.activation(mb.matmul(hidden, w[5]), mlir::rlx::Activation::Silu);
    Value y = mb.matmul(mb.mul(up, gate), w[6]);
    Value out =
        mb.fusedResidualLayerNorm(y, hidden, w[7], w[8], spec.rmsEpsilon)
            .second;
    mlir::rlx::hir::YieldOp::create(b, impl.loc, out);
  }
  impl.current = custom->getResult(0);
  return Error::success();
}

ModelFlow &ModelFlow::nomicEncoderLayer(const DecoderLayerSpec &spec) {
  return stage(
      [spec](FlowContext &ctx) { return emitNomicLayer(ctx.impl, spec); });
}

//===----------------------------------------------------------------------===//
// LayerStack
//===----------------------------------------------------------------------===//

LayerStack &LayerStack::stage(Stage s) {
  stages.push_back(std::move(s));
  return *this;
}

static void append(std::vector<Stage> &to, ModelFlow &from) {
  for (Stage &s : from.takeStages())
    to.push_back(std::move(s));
}

LayerStack &LayerStack::rmsNorm(StringRef key, float eps) {
  ModelFlow f("");
  append(stages, f.rmsNorm(prefix + key.str(), eps));
  return *this;
}
LayerStack &LayerStack::layerNorm(StringRef key, float eps) {
  ModelFlow f("");
  append(stages, f.layerNorm(prefix + key.str(), eps));
  return *this;
}
LayerStack &LayerStack::linear(StringRef key, bool bias) {
  ModelFlow f("");
  append(stages, f.linear(prefix + key.str(), bias));
  return *this;
}
LayerStack &LayerStack::residualSave(StringRef slot) {
  ModelFlow f("");
  append(stages, f.residualSave(slot));
  return *this;
}
LayerStack &LayerStack::residualAdd(StringRef slot) {
  ModelFlow f("");
  append(stages, f.residualAdd(slot));
  return *this;
}
LayerStack &LayerStack::selfAttnPrefill(const AttentionSpec &spec) {
  ModelFlow f("");
  append(stages, f.selfAttnPrefill(prefix + "self_attn.", spec));
  return *this;
}
LayerStack &LayerStack::swigluHfMlp() {
  ModelFlow f("");
  append(stages, f.swigluHfMlp(prefix + "mlp."));
  return *this;
}
LayerStack &LayerStack::geluFfn(StringRef in, StringRef out) {
  ModelFlow f("");
  append(stages, f.geluFfn(prefix + in.str(), prefix + out.str()));
  return *this;
}

//===----------------------------------------------------------------------===//
// Built-in stage interfaces (Stages.h)
//===----------------------------------------------------------------------===//

SelfAttention::SelfAttention(std::string prefix, AttentionSpec spec,
                             bool qkvBias, bool outBias, std::string invFreqKey,
                             bool qkNorm)
    : pre(std::move(prefix)), attn(spec), qkvBias(qkvBias), outBias(outBias),
      invFreqKey(std::move(invFreqKey)), qkNorm(qkNorm) {}

std::shared_ptr<const SelfAttention>
SelfAttention::forLayer(const DecoderLayerSpec &spec) {
  return std::make_shared<SelfAttention>(
      spec.prefix + "self_attn.", spec.attention, spec.qkvBias, spec.outBias,
      spec.invFreqKey, spec.qkNorm);
}

Error SelfAttention::emit(FlowContext &ctx) const {
  Impl &impl = ctx.impl;
  if (qkNorm)
    return impl.fail("the composed attention '" + pre +
                     "' has per-head QK norms, which HIR blocks do not "
                     "express; keep the fused layer or replace the attention");
  auto x = impl.active("SelfAttention");
  if (!x)
    return x.takeError();
  const AttentionSpec &a = attn;
  Expected<Value> q = emitLinear(impl, *x, pre + "q_proj", qkvBias);
  if (!q)
    return q.takeError();
  Expected<Value> k = emitLinear(impl, *x, pre + "k_proj", qkvBias);
  if (!k)
    return k.takeError();
  Expected<Value> v = emitLinear(impl, *x, pre + "v_proj", qkvBias);
  if (!v)
    return v.takeError();
  if (lastDim(*q) != a.numHeads * a.headDim ||
      lastDim(*k) != a.numKvHeads * a.headDim || lastDim(*v) != lastDim(*k))
    return impl.fail("attention '" + pre + "': the projections give " +
                     llvm::Twine(lastDim(*q)) + "/" + llvm::Twine(lastDim(*k)) +
                     "/" + llvm::Twine(lastDim(*v)) + " features for " +
                     llvm::Twine(a.numHeads) + "/" + llvm::Twine(a.numKvHeads) +
                     " heads of " + llvm::Twine(a.headDim));
  Expected<Value> qr = emitRope(impl, *q, a, invFreqKey);
  if (!qr)
    return qr.takeError();
  Expected<Value> kr = emitRope(impl, *k, a, invFreqKey);
  if (!kr)
    return kr.takeError();
  Value out = impl.create("hir.attention", qr->getType(), {*qr, *kr, *v},
                          attentionAttrs(impl, a))
                  ->getResult(0);
  Expected<Value> o = emitLinear(impl, out, pre + "o_proj", outBias);
  if (!o)
    return o.takeError();
  impl.current = *o;
  return Error::success();
}

GatedMlp::GatedMlp(std::string prefix, std::string activation, bool bias)
    : pre(std::move(prefix)), act(std::move(activation)), bias(bias) {}

std::shared_ptr<const GatedMlp>
GatedMlp::forLayer(const DecoderLayerSpec &spec) {
  std::string act = spec.mlpActivation;
  if (act.empty())
    act = spec.gemma ? "gelu_tanh" : "silu";
  return std::make_shared<GatedMlp>(spec.prefix + "mlp.", act, spec.mlpBias);
}

Error GatedMlp::emit(FlowContext &ctx) const {
  if (bias || (act != "silu" && act != "gelu_tanh"))
    return ctx.impl.fail(
        "the composed MLP '" + pre +
        "' covers silu (SwiGLU) and gelu_tanh (GeGLU) without biases, not " +
        (bias ? "biases" : "'" + act + "'") +
        "; keep the fused layer or replace the MLP");
  Stage s = act == "silu" ? gatedFfn("GatedMlp", "hir.swiglu", pre)
                          : gatedFfn("GatedMlp", "hir.geglu", pre);
  return s(ctx);
}

RmsNormStage::RmsNormStage(std::string key, float epsilon, bool gemma)
    : key(std::move(key)), epsilon(epsilon), gemma(gemma) {}

Error RmsNormStage::emit(FlowContext &ctx) const {
  Impl &impl = ctx.impl;
  auto x = impl.active("RmsNorm");
  if (!x)
    return x.takeError();
  auto y = emitRmsNorm(impl, *x, key, epsilon, gemma);
  if (!y)
    return y.takeError();
  impl.current = *y;
  return Error::success();
}
