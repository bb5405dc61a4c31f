//===- ModelFlow.cpp - Build models from blocks ---------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "FlowContext.h"
#include "RLX/Dialect/Common/RLXDialect.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/InitAllDialects.h"
#include "RLX/Weights/GGUF.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

using namespace rlx;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using mlir::Value;

//===----------------------------------------------------------------------===//
// FlowContext
//===----------------------------------------------------------------------===//

static mlir::MLIRContext *initContext(mlir::MLIRContext &ctx) {
  mlir::DialectRegistry registry;
  mlir::rlx::registerAllRLXDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  return &ctx;
}

FlowContext::Impl::Impl(const WeightSource &weights)
    : b(initContext(context)), loc(b.getUnknownLoc()), weights(weights),
      synthesized(std::make_shared<TensorMap>("<synthesized by the flow>")) {}

Error FlowContext::Impl::fail(const llvm::Twine &msg) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (scope.empty() ? "" : scope + ": ") + msg);
}

mlir::RankedTensorType FlowContext::Impl::tensor(llvm::ArrayRef<int64_t> shape,
                                                 mlir::Type elt) {
  llvm::SmallVector<int64_t> dims;
  for (int64_t d : shape)
    dims.push_back(d == kDynamic ? mlir::ShapedType::kDynamic : d);
  return mlir::RankedTensorType::get(dims, elt ? elt : b.getF32Type());
}

llvm::ArrayRef<int64_t> FlowContext::Impl::shapeOf(Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getShape();
}

Expected<Value> FlowContext::Impl::param(StringRef key,
                                         llvm::ArrayRef<int64_t> shape) {
  if (Value v = params.lookup(key)) {
    if (shapeOf(v) != shape)
      return fail("weight '" + key + "' is used with shape " +
                  formatShape(shape) + " and " + formatShape(shapeOf(v)));
    return v;
  }
  const TensorInfo *info = weights.lookup(key);
  if (!info)
    info = synthesized->lookup(key);
  if (!info)
    return fail("missing weight '" + weights.displayName(key) + "' (expected " +
                formatShape(shape) + ") in " + weights.description());
  if (llvm::ArrayRef<int64_t>(info->shape) != shape)
    return fail("weight '" + weights.displayName(key) + "' in " +
                weights.description() + " has shape " +
                formatShape(info->shape) + ", expected " + formatShape(shape));
  mlir::OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&func.getBody().front());
  mlir::TypeAttr storage;
  if (mlir::Type t = weightStorage(info->dtype, shape))
    storage = mlir::TypeAttr::get(t);
  Value v = mlir::rlx::hir::ParamOp::create(b, loc, tensor(shape),
                                            b.getStringAttr(key), storage);
  params[key] = v;
  return v;
}

mlir::Type FlowContext::Impl::weightStorage(DType dtype,
                                            llvm::ArrayRef<int64_t> shape) {
  // Matrices only: vectors (norms, biases) are f32 in every case.
  if (shape.size() != 2)
    return {};
  DType target = DType::F32;
  switch (weightPrecision) {
  case WeightPrecision::F32:
    return {};
  case WeightPrecision::Stored:
    // f16, bf16 or ggml blocks stay so down to the kernels.
    return storageType(dtype);
  case WeightPrecision::BF16:
    target = DType::BF16;
    break;
  case WeightPrecision::F16:
    target = DType::F16;
    break;
  case WeightPrecision::Q8_0:
    target = DType::Q8_0;
    break;
  case WeightPrecision::Q4_0:
    target = DType::Q4_0;
    break;
  }
  // Converted at load; rows that are not whole blocks stay f32.
  if (shape.back() % dtypeBlockElements(target) != 0)
    return {};
  return storageType(target);
}

mlir::Type FlowContext::Impl::storageType(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  default:
    break;
  }
  if (!isQuantized(dtype))
    return {};
  std::optional<uint32_t> code = ggmlTypeOf(dtype);
  std::optional<mlir::rlx::mir::QuantKind> kind =
      code ? mlir::rlx::mir::symbolizeQuantKind(*code) : std::nullopt;
  if (!kind)
    return {};
  return mlir::rlx::mir::QuantType::get(&context, *kind);
}

Expected<Value> FlowContext::Impl::paramAnyShape(StringRef key, int64_t rank) {
  const TensorInfo *info = weights.lookup(key);
  if (!info)
    info = synthesized->lookup(key);
  if (!info)
    return fail("missing weight '" + weights.displayName(key) + "' in " +
                weights.description());
  if (static_cast<int64_t>(info->shape.size()) != rank)
    return fail("weight '" + key + "' has shape " + formatShape(info->shape) +
                ", expected rank " + llvm::Twine(rank));
  return param(key, info->shape);
}

Error FlowContext::Impl::synthesize(StringRef key,
                                    llvm::ArrayRef<int64_t> shape,
                                    std::vector<float> data) {
  if (synthesized->lookup(key))
    return Error::success();
  return synthesized->add(key, shape, std::move(data));
}

Expected<Value> FlowContext::Impl::active(StringRef block) {
  if (!current)
    return fail(block + " needs an active tensor (declare an input or embed "
                        "tokens first)");
  return current;
}

Expected<Value> FlowContext::Impl::need(StringRef block, StringRef name) {
  if (Value v = named.lookup(name))
    return v;
  return fail(block + " needs the value '" + name +
              "' (declare it as an input or save it first)");
}

mlir::Operation *
FlowContext::Impl::create(StringRef name, mlir::TypeRange results,
                          mlir::ValueRange operands,
                          llvm::ArrayRef<mlir::NamedAttribute> attrs) {
  mlir::OperationState state(loc, name);
  state.addTypes(results);
  state.addOperands(operands);
  state.addAttributes(attrs);
  return b.create(state);
}

//===----------------------------------------------------------------------===//
// Emitter
//===----------------------------------------------------------------------===//

mlir::OpBuilder &Emitter::builder() { return ctx.impl.b; }
mlir::Location Emitter::loc() { return ctx.impl.loc; }
Value Emitter::current() { return ctx.impl.current; }
void Emitter::setCurrent(Value v) { ctx.impl.current = v; }
Value Emitter::named(StringRef name) { return ctx.impl.named.lookup(name); }
void Emitter::setNamed(StringRef name, Value v) { ctx.impl.named[name] = v; }
Expected<Value> Emitter::param(StringRef key, llvm::ArrayRef<int64_t> shape) {
  return ctx.impl.param(key, shape);
}

/// A flow shape as "[?, 4]" (kDynamic is "?").
static std::string flowShape(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    text += (i ? ", " : "") + (d == kDynamic ? "?" : std::to_string(d));
  return text + "]";
}

Expected<Value> Emitter::synthParam(StringRef key,
                                    llvm::ArrayRef<int64_t> shape,
                                    llvm::ArrayRef<float> data) {
  FlowContext::Impl &impl = ctx.impl;
  if (impl.weights.lookup(key))
    return impl.fail("synthesized parameter '" + key +
                     "' would shadow the weight of that name in " +
                     impl.weights.description());
  if (const TensorInfo *info = impl.synthesized->lookup(key)) {
    Expected<llvm::ArrayRef<float>> have = impl.synthesized->viewF32(key);
    if (!have)
      return have.takeError();
    if (llvm::ArrayRef<int64_t>(info->shape) != shape || *have != data)
      return impl.fail("parameter '" + key + "' is synthesized twice, as " +
                       formatShape(info->shape) + " and as " +
                       formatShape(shape) + " with other values");
    return impl.param(key, shape);
  }
  for (int64_t d : shape)
    if (d < 0)
      return impl.fail("synthesized parameter '" + key +
                       "' needs a static shape, got " + flowShape(shape));
  if (Error err = impl.synthesized->add(
          key, shape, std::vector<float>(data.begin(), data.end())))
    return impl.fail(llvm::toString(std::move(err)));
  return impl.param(key, shape);
}

Expected<Value> Emitter::synthZeros(StringRef key,
                                    llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return ctx.impl.fail("synthesized parameter '" + key +
                           "' needs a static shape, got " + flowShape(shape));
    n *= d;
  }
  return synthParam(key, shape, std::vector<float>(n, 0.0f));
}

Expected<mlir::Operation *> Emitter::create(
    StringRef name, mlir::TypeRange results, mlir::ValueRange operands,
    llvm::ArrayRef<mlir::NamedAttribute> attributes, unsigned regions) {
  FlowContext::Impl &impl = ctx.impl;
  std::optional<mlir::RegisteredOperationName> op =
      mlir::RegisteredOperationName::lookup(name, &impl.context);
  if (!op)
    return impl.fail("no op '" + name + "' (expected an hir or mir op)");
  for (auto [i, v] : llvm::enumerate(operands))
    if (!v)
      return impl.fail("'" + name + "': operand " + llvm::Twine(i) +
                       " is a null value");
  mlir::OperationState state(impl.loc, *op);
  state.addTypes(results);
  state.addOperands(operands);
  state.addAttributes(attributes);
  for (unsigned i = 0; i < regions; ++i)
    state.addRegion();
  mlir::Operation *created = impl.b.create(state);
  if (regions)
    return created;
  std::string diag;
  {
    mlir::ScopedDiagnosticHandler handler(
        &impl.context, [&](mlir::Diagnostic &d) {
          llvm::raw_string_ostream os(diag);
          os << (diag.empty() ? "" : "\n") << d;
          return mlir::success();
        });
    if (succeeded(mlir::verify(created)))
      return created;
  }
  created->erase();
  return impl.fail("invalid '" + name + "': " + diag);
}

Expected<mlir::Operation *> Emitter::create(StringRef name,
                                            mlir::TypeRange results,
                                            mlir::ValueRange operands) {
  return create(name, results, operands, {}, 0);
}

mlir::NamedAttribute Emitter::f32Attr(StringRef name, float value) {
  return ctx.impl.b.getNamedAttr(name, ctx.impl.b.getF32FloatAttr(value));
}

mlir::NamedAttribute Emitter::i64Attr(StringRef name, int64_t value) {
  return ctx.impl.b.getNamedAttr(name, ctx.impl.b.getI64IntegerAttr(value));
}

mlir::NamedAttribute Emitter::stringAttr(StringRef name, StringRef value) {
  return ctx.impl.b.getNamedAttr(name, ctx.impl.b.getStringAttr(value));
}

Expected<mlir::NamedAttribute> Emitter::parseAttr(StringRef name,
                                                  StringRef text) {
  std::string diag;
  mlir::Attribute attr;
  {
    mlir::ScopedDiagnosticHandler handler(&ctx.impl.context,
                                          [&](mlir::Diagnostic &d) {
                                            llvm::raw_string_ostream os(diag);
                                            os << d;
                                            return mlir::success();
                                          });
    size_t read = 0;
    attr = mlir::parseAttribute(text, &ctx.impl.context, mlir::Type(), &read);
    if (attr && read != text.size()) {
      attr = {};
      diag = "trailing characters after the attribute";
    }
  }
  if (!attr)
    return ctx.impl.fail("attribute '" + name + "' = '" + text + "': " + diag);
  return ctx.impl.b.getNamedAttr(name, attr);
}

mlir::RankedTensorType Emitter::tensorType(llvm::ArrayRef<int64_t> shape) {
  return ctx.impl.tensor(shape);
}

llvm::SmallVector<int64_t, 4> Emitter::shape(Value v) {
  llvm::SmallVector<int64_t, 4> dims;
  for (int64_t d : FlowContext::Impl::shapeOf(v))
    dims.push_back(mlir::ShapedType::isDynamic(d) ? kDynamic : d);
  return dims;
}

Error Emitter::fail(const llvm::Twine &message) {
  return ctx.impl.fail(message);
}

//===----------------------------------------------------------------------===//
// ModelFlow
//===----------------------------------------------------------------------===//

ModelFlow::ModelFlow(std::string name)
    : name(std::move(name)), prof(CompileProfile::llama32Prefill()) {}

ModelFlow &ModelFlow::profile(CompileProfile p) {
  prof = std::move(p);
  return *this;
}
ModelFlow &ModelFlow::profilePrefill() {
  return profile(CompileProfile::llama32Prefill());
}
ModelFlow &ModelFlow::profileDecode() {
  return profile(CompileProfile::llama32Decode());
}
ModelFlow &ModelFlow::profileEncoder() {
  return profile(CompileProfile::encoder());
}

ModelFlow &ModelFlow::input(StringRef inputName, llvm::ArrayRef<int64_t> shape,
                            DType dtype) {
  inputs.push_back({inputName.str(), {shape.begin(), shape.end()}, dtype});
  return *this;
}

ModelFlow &ModelFlow::stage(Stage s) {
  stages.push_back(std::move(s));
  return *this;
}

ModelFlow &ModelFlow::sequence(std::vector<Stage> seq) {
  return stage([seq = std::move(seq)](FlowContext &ctx) -> Error {
    for (const Stage &s : seq)
      if (Error err = s(ctx))
        return err;
    return Error::success();
  });
}

ModelFlow &ModelFlow::when(bool condition, Stage s) {
  if (condition)
    stage(std::move(s));
  return *this;
}

ModelFlow &ModelFlow::repeatLayers(unsigned n,
                                   std::function<Stage(unsigned)> layer) {
  for (unsigned i = 0; i < n; ++i) {
    Stage s = layer(i);
    stage([i, s = std::move(s)](FlowContext &ctx) -> Error {
      std::string saved = ctx.impl.scope;
      ctx.impl.scope = "layer " + std::to_string(i);
      Error err = s(ctx);
      ctx.impl.scope = saved;
      return err;
    });
  }
  return *this;
}

ModelFlow &ModelFlow::layer(StringRef layerName,
                            std::function<void(LayerStack &)> build) {
  LayerStack stack(layerName.str());
  build(stack);
  std::string label = layerName.str();
  return stage(
      [label, seq = std::move(stack.stages)](FlowContext &ctx) -> Error {
        std::string saved = ctx.impl.scope;
        ctx.impl.scope = label;
        for (const Stage &s : seq)
          if (Error err = s(ctx)) {
            ctx.impl.scope = saved;
            return err;
          }
        ctx.impl.scope = saved;
        return Error::success();
      });
}

ModelFlow &ModelFlow::custom(StringRef stageName,
                             std::function<Error(Emitter &)> fn) {
  std::string label = stageName.str();
  return stage([label, fn = std::move(fn)](FlowContext &ctx) -> Error {
    Emitter e(ctx);
    if (Error err = fn(e))
      return ctx.impl.fail("custom stage '" + label +
                           "': " + llvm::toString(std::move(err)));
    return Error::success();
  });
}

ModelFlow &ModelFlow::output(StringRef outName, StringRef value) {
  std::string n = outName.str(), v = value.str();
  return stage([n, v](FlowContext &ctx) -> Error {
    Value out = v.empty() ? ctx.impl.current : ctx.impl.named.lookup(v);
    if (!out)
      return ctx.impl.fail("output '" + n + "': no value '" +
                           (v.empty() ? "<active>" : v) + "'");
    ctx.impl.outputs.insert(ctx.impl.outputs.begin() + ctx.impl.marked++,
                            {n, out});
    return Error::success();
  });
}

Expected<BuiltModel> ModelFlow::build(const WeightSource &weights) const {
  FlowContext::Impl impl(weights);
  impl.weightPrecision = prof.precision.weights;
  FlowContext ctx(impl);
  mlir::OpBuilder &b = impl.b;
  impl.module = mlir::ModuleOp::create(impl.loc);
  b.setInsertionPointToEnd(impl.module->getBody());
  llvm::SmallVector<mlir::Type> argTypes;
  for (const Input &in : inputs) {
    mlir::Type elt;
    switch (in.dtype) {
    case DType::F32:
      elt = b.getF32Type();
      break;
    case DType::F16:
      elt = b.getF16Type();
      break;
    case DType::BF16:
      elt = b.getBF16Type();
      break;
    case DType::I32:
      elt = b.getI32Type();
      break;
    case DType::I64:
      elt = b.getI64Type();
      break;
    default:
      return impl.fail("input '" + in.name + "': unsupported dtype " +
                       dtypeName(in.dtype));
    }
    argTypes.push_back(impl.tensor(in.shape, elt));
  }
  impl.func = mlir::func::FuncOp::create(b, impl.loc, name,
                                         b.getFunctionType(argTypes, {}));
  mlir::Block *entry = impl.func.addEntryBlock();
  for (auto [i, in] : llvm::enumerate(inputs)) {
    impl.func.setArgAttr(i, mlir::rlx::kNameAttr, b.getStringAttr(in.name));
    impl.named[in.name] = entry->getArgument(i);
  }
  if (!inputs.empty())
    impl.current = entry->getArgument(0);
  b.setInsertionPointToEnd(entry);

  for (const Stage &s : stages)
    if (Error err = s(ctx))
      return std::move(err);

  llvm::SmallVector<Value> results;
  BuiltModel built;
  if (impl.marked == 0) {
    if (!impl.current)
      return impl.fail("the flow produces nothing");
    results.push_back(impl.current);
    built.outputs.push_back("output");
  }
  for (auto &[outName, v] : impl.outputs) {
    results.push_back(v);
    built.outputs.push_back(outName);
  }
  mlir::func::ReturnOp::create(b, impl.loc, results);
  impl.func.setType(
      b.getFunctionType(argTypes, mlir::ValueRange(results).getTypes()));
  for (auto [i, n] : llvm::enumerate(built.outputs))
    impl.func.setResultAttr(i, mlir::rlx::kNameAttr, b.getStringAttr(n));

  std::string diag;
  {
    mlir::ScopedDiagnosticHandler handler(&impl.context,
                                          [&](mlir::Diagnostic &d) {
                                            llvm::raw_string_ostream os(diag);
                                            os << d << "\n";
                                            return mlir::success();
                                          });
    if (failed(mlir::verify(*impl.module)))
      return impl.fail("the flow built invalid HIR:\n" + diag);
  }
  built.name = name;
  llvm::raw_string_ostream os(built.mlir);
  impl.module->print(os);
  built.profile = prof;
  for (const Input &in : inputs)
    built.inputs.push_back(in.name);
  built.synthesized = impl.synthesized;
  for (const auto &entry : impl.params)
    if (weights.contains(entry.getKey()))
      built.params.push_back(entry.getKey().str());
  llvm::sort(built.params);
  return built;
}
