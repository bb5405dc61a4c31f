//===- Stages.cpp - Stage interfaces and layer compositions ---------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The built-in stages (SelfAttention, GatedMlp, RmsNormStage) are in
// Blocks.cpp, next to the blocks they share code with.
//
//===----------------------------------------------------------------------===//

#include "RLX/Flow/Stages.h"
#include "FlowContext.h"

using namespace rlx;
using llvm::Error;

AttentionStage::~AttentionStage() = default;
FfnStage::~FfnStage() = default;
NormStage::~NormStage() = default;

namespace {
/// A stage interface `Base` over a plain stage.
template <typename Base> class StageAdaptor final : public Base {
public:
  explicit StageAdaptor(Stage s) : s(std::move(s)) {}
  Error emit(FlowContext &ctx) const override { return s(ctx); }

private:
  Stage s;
};
} // namespace

std::shared_ptr<const AttentionStage> AttentionStage::fromStage(Stage stage) {
  return std::make_shared<StageAdaptor<AttentionStage>>(std::move(stage));
}
std::shared_ptr<const FfnStage> FfnStage::fromStage(Stage stage) {
  return std::make_shared<StageAdaptor<FfnStage>>(std::move(stage));
}
std::shared_ptr<const NormStage> NormStage::fromStage(Stage stage) {
  return std::make_shared<StageAdaptor<NormStage>>(std::move(stage));
}

//===----------------------------------------------------------------------===//
// DecoderLayer
//===----------------------------------------------------------------------===//

DecoderLayer::DecoderLayer(unsigned index,
                           std::shared_ptr<const NormStage> inputNorm,
                           std::shared_ptr<const AttentionStage> attention,
                           std::shared_ptr<const NormStage> preFfnNorm,
                           std::shared_ptr<const FfnStage> ffn)
    : idx(index), inNorm(std::move(inputNorm)), preFfn(std::move(preFfnNorm)),
      attn(std::move(attention)), mlp(std::move(ffn)) {}

DecoderLayer::DecoderLayer(unsigned index, Stage stage)
    : idx(index), fused(std::move(stage)) {}

DecoderLayer &
DecoderLayer::setInputNorm(std::shared_ptr<const NormStage> norm) {
  inNorm = std::move(norm);
  fused = nullptr;
  return *this;
}
DecoderLayer &
DecoderLayer::setAttention(std::shared_ptr<const AttentionStage> attention) {
  attn = std::move(attention);
  fused = nullptr;
  return *this;
}
DecoderLayer &
DecoderLayer::setPostAttentionNorm(std::shared_ptr<const NormStage> norm) {
  postAttnNorm = std::move(norm);
  fused = nullptr;
  return *this;
}
DecoderLayer &
DecoderLayer::setPreFfnNorm(std::shared_ptr<const NormStage> norm) {
  preFfn = std::move(norm);
  fused = nullptr;
  return *this;
}
DecoderLayer &DecoderLayer::setFfn(std::shared_ptr<const FfnStage> ffn) {
  mlp = std::move(ffn);
  fused = nullptr;
  return *this;
}
DecoderLayer &
DecoderLayer::setPostFfnNorm(std::shared_ptr<const NormStage> norm) {
  postFfn = std::move(norm);
  fused = nullptr;
  return *this;
}
DecoderLayer &DecoderLayer::setFused(Stage stage) {
  fused = std::move(stage);
  return *this;
}
DecoderLayer &DecoderLayer::setKvCacheDecode(bool decode) {
  kvDecode = decode;
  return *this;
}

/// The shape of `v` for messages, "?" for a dynamic dimension.
static std::string shapeText(mlir::Value v) {
  std::string text = "[";
  for (auto [i, d] : llvm::enumerate(FlowContext::Impl::shapeOf(v)))
    text += (i ? ", " : "") +
            (mlir::ShapedType::isDynamic(d) ? "?" : std::to_string(d));
  return text + "]";
}

/// Emits `part` (if any) on the active tensor and checks that it keeps the
/// active tensor's type.
template <typename Part>
static Error emitPart(FlowContext::Impl &impl, const Part &part,
                      llvm::StringRef what) {
  if (!part)
    return Error::success();
  auto x = impl.active(what);
  if (!x)
    return x.takeError();
  mlir::Type type = x->getType();
  FlowContext ctx(impl);
  if (Error err = part->emit(ctx))
    return err;
  if (!impl.current || impl.current.getType() != type)
    return impl.fail("the " + what + " leaves " +
                     (impl.current ? shapeText(impl.current)
                                   : std::string("no active tensor")) +
                     " active, expected " + shapeText(*x) + " (its input)");
  return Error::success();
}

Stage DecoderLayer::stage() const {
  if (fused)
    return fused;
  DecoderLayer layer = *this;
  return [layer](FlowContext &ctx) -> Error {
    FlowContext::Impl &impl = ctx.impl;
    unsigned i = layer.idx;
    if (!layer.hasParts() || !layer.mlp)
      return impl.fail("decoder layer " + llvm::Twine(i) +
                       " has no attention or feed-forward part to compose");
    if (layer.kvDecode)
      return impl.fail(
          "decoder layer " + llvm::Twine(i) +
          " has replaced parts, but a KV-cache decode layer is one fused op "
          "(replace the whole layer, or build the prefill graph)");
    auto x = impl.active("decoder layer");
    if (!x)
      return x.takeError();
    mlir::Value residual = *x;
    if (Error err = emitPart(impl, layer.inNorm, "input norm"))
      return err;
    if (Error err = emitPart(impl, layer.attn, "attention"))
      return err;
    if (Error err = emitPart(impl, layer.postAttnNorm, "post-attention norm"))
      return err;
    impl.current =
        impl.create("hir.add", residual.getType(), {residual, impl.current})
            ->getResult(0);
    residual = impl.current;
    if (Error err = emitPart(impl, layer.preFfn, "pre-feed-forward norm"))
      return err;
    if (Error err = emitPart(impl, layer.mlp, "feed-forward block"))
      return err;
    if (Error err = emitPart(impl, layer.postFfn, "post-feed-forward norm"))
      return err;
    impl.current =
        impl.create("hir.add", residual.getType(), {residual, impl.current})
            ->getResult(0);
    return Error::success();
  };
}

//===----------------------------------------------------------------------===//
// LayerComposition
//===----------------------------------------------------------------------===//

LayerComposition LayerComposition::homogeneous(unsigned count, LayerFn layer) {
  return LayerComposition(count, {std::move(layer)});
}

LayerComposition LayerComposition::alternating(unsigned count, LayerFn first,
                                               LayerFn second) {
  return LayerComposition(count, {std::move(first), std::move(second)});
}

DecoderLayer LayerComposition::layer(unsigned index) const {
  return kinds[kindOf(index)](index);
}
