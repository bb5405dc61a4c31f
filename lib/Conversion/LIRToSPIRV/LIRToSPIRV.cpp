//===- LIRToSPIRV.cpp - LIR kernels to SPIR-V modules ---------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// convert-lir-to-spirv writes each lir.kernel as a gpu.func in a gpu.module
// of its own (GPUKernelEmitter), shared by every kernel that computes the
// same thing on the same views, and annotates the kernel with its dispatch:
// the entry point, the workgroup count and one storage-buffer binding per
// view (or non-splat constant). Then each gpu.module becomes a spirv.module
// through the upstream GPU, SCF, arith, math and memref conversions.
//
// Binding scheme. A binding is a byte range [offset, offset + range) of the
// arena, the parameter pool or the constant pool. `offset` is the view's
// byte offset rounded down to the storage-buffer alignment; the remainder
// (an aliasing slice may start anywhere) becomes an element offset compiled
// into the kernel, so every descriptor offset is legal on the device.
//
//===----------------------------------------------------------------------===//

#include "RLX/Conversion/LIRToSPIRV/LIRToSPIRV.h"
#include "GPUKernelEmitter.h"
#include "RLX/Conversion/LIRToSPIRV/SPIRVTools.h"
#include "RLX/Conversion/Passes.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "mlir/Conversion/ArithToSPIRV/ArithToSPIRV.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRV.h"
#include "mlir/Conversion/MathToSPIRV/MathToSPIRV.h"
#include "mlir/Conversion/MemRefToSPIRV/MemRefToSPIRV.h"
#include "mlir/Conversion/SCFToSPIRV/SCFToSPIRV.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_CONVERTLIRTOSPIRVPASS
#define GEN_PASS_DEF_RLXSERIALIZESPIRVPASS
#include "RLX/Conversion/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;

namespace {

/// One storage buffer of a dispatch.
struct Binding {
  lir::MemorySpace space = lir::MemorySpace::Arena;
  /// Descriptor offset and range, in bytes.
  int64_t offset = 0, range = 0;
  /// The exact bytes the kernel may touch (for the runtime's hazards).
  int64_t viewOffset = 0, viewBytes = 0;
  bool writes = false;
  /// The view as the kernel sees it.
  Type elementType;
  int64_t elementOffset = 0;
  SmallVector<int64_t> shape, strides;
};

/// A generated kernel.
struct GeneratedKernel {
  std::string symbol;
  std::array<int64_t, 3> workgroups;
};

class EntryLowering {
public:
  EntryLowering(ModuleOp module, const GPUTargetInfo &target, int64_t alignment)
      : module(module), target(target), alignment(alignment) {}

  LogicalResult lower(lir::EntryOp entry);

private:
  FailureOr<Binding> viewBinding(Value view, bool writes);
  Binding constantBinding(DenseElementsAttr value);
  FailureOr<GeneratedKernel *> kernelFunction(lir::KernelOp kernel,
                                              ArrayRef<Binding> bindings,
                                              StringRef entryName);

  ModuleOp module;
  const GPUTargetInfo &target;
  int64_t alignment;
  KernelCache<GeneratedKernel> cache;
  unsigned kernelCount = 0;
  // The constant pool of the entry being lowered.
  SmallVector<Attribute> constants;
  SmallVector<int64_t> constantOffsets;
  int64_t constantBytes = 0;
  DenseMap<Attribute, int64_t> constantOffsetOf;
};

} // namespace

FailureOr<Binding> EntryLowering::viewBinding(Value value, bool writes) {
  auto view = value.getDefiningOp<lir::ViewOp>();
  if (!view)
    return failure();
  MemRefType ty = view.getType();
  Binding bd;
  bd.space = view.getSpace();
  bd.writes = writes;
  bd.elementType = ty.getElementType();
  int64_t eb = lir::getElementBytes(bd.elementType);
  bd.viewOffset = view.getByteOffset();
  bd.viewBytes = view.getExtentBytes();
  bd.offset = bd.viewOffset / alignment * alignment;
  bd.elementOffset = (bd.viewOffset - bd.offset) / eb;
  bd.range = llvm::alignTo(bd.viewOffset - bd.offset + bd.viewBytes, 4);
  bd.shape.assign(ty.getShape().begin(), ty.getShape().end());
  // An identity layout is row-major; said directly, since MLIR gives an
  // empty tensor's identity layout (a zero-length dim) no static strides.
  if (ty.getLayout().isIdentity()) {
    bd.strides = contiguousStrides(bd.shape);
    return bd;
  }
  int64_t layoutOffset;
  if (failed(ty.getStridesAndOffset(bd.strides, layoutOffset)))
    return failure();
  return bd;
}

Binding EntryLowering::constantBinding(DenseElementsAttr value) {
  auto ty = cast<RankedTensorType>(value.getType());
  Binding bd;
  bd.space = lir::MemorySpace::Constants;
  bd.elementType = ty.getElementType();
  int64_t bytes = mir::getStorageBytes(ty);
  auto [it, inserted] = constantOffsetOf.try_emplace(value, constantBytes);
  if (inserted) {
    constants.push_back(value);
    constantOffsets.push_back(constantBytes);
    constantBytes = llvm::alignTo(constantBytes + bytes, alignment);
  }
  bd.offset = bd.viewOffset = it->second;
  bd.viewBytes = bytes;
  bd.range = llvm::alignTo(bytes, 4);
  bd.shape.assign(ty.getShape().begin(), ty.getShape().end());
  bd.strides = contiguousStrides(bd.shape);
  return bd;
}

/// The cache key of a kernel bound as `bindings`: the element offsets
/// compiled into it, beyond what kernelKey() says.
static std::string cacheKey(lir::KernelOp kernel, ArrayRef<Binding> bindings) {
  std::string offsets;
  for (const Binding &bd : bindings)
    offsets += std::to_string(bd.elementOffset) + ",";
  return kernelKey(kernel, offsets);
}

static std::string sanitize(StringRef name) {
  std::string s;
  for (char c : name)
    s.push_back(llvm::isAlnum(c) ? c : '_');
  return s;
}

FailureOr<GeneratedKernel *>
EntryLowering::kernelFunction(lir::KernelOp kernel, ArrayRef<Binding> bindings,
                              StringRef entryName) {
  std::string key = cacheKey(kernel, bindings);
  if (GeneratedKernel *gen = cache.lookup(key, kernel))
    return gen;

  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Location loc = kernel.getLoc();
  std::string name = (sanitize(entryName) + "_k" + Twine(kernelCount++) + "_" +
                      sanitize(kernel.getName()))
                         .str();
  b.setInsertionPointToEnd(module.getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, loc, name);
  b.setInsertionPointToStart(gpuModule.getBody());
  auto storage =
      spirv::StorageClassAttr::get(ctx, spirv::StorageClass::StorageBuffer);
  SmallVector<Type> argTypes;
  // Weights stored as bf16 or ggml blocks bind as 32-bit words, which the
  // loads decode.
  for (const Binding &bd : bindings)
    argTypes.push_back(MemRefType::get(
        {ShapedType::kDynamic},
        GPUKernelEmitter::isWordDecoded(bd.elementType) ? b.getI32Type()
                                                        : bd.elementType,
        MemRefLayoutAttrInterface(), storage));
  auto fn =
      gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  Block *entry = &fn.getBody().front();
  b.setInsertionPointToStart(entry);
  GPUKernelEmitter e(b, loc, target);

  auto viewOf = [&](unsigned i) {
    const Binding &bd = bindings[i];
    return GPUView{entry->getArgument(i), {},       bd.elementType,
                   bd.elementOffset,      bd.shape, bd.strides};
  };
  Block &body = kernel.getBody().front();
  unsigned numIns = kernel.getIns().size(), numOuts = kernel.getOuts().size();
  DenseMap<Value, GPUView> inputs;
  for (auto [i, arg] : llvm::enumerate(body.getArguments()))
    inputs[arg] = viewOf(i);
  unsigned nextConstant = numIns + numOuts;
  if (failed(bindKernelConstants(e, body, inputs, [&](DenseElementsAttr) {
        return viewOf(nextConstant++);
      })))
    return failure();

  SmallVector<GPUView> outs;
  for (unsigned i = 0; i < numOuts; ++i)
    outs.push_back(viewOf(numIns + i));
  Operation *compute = kernel.getComputeOp();
  auto yield = cast<lir::YieldOp>(body.getTerminator());
  if (compute) {
    for (auto [i, value] : llvm::enumerate(yield.getValues()))
      if (value.getDefiningOp() != compute ||
          cast<OpResult>(value).getResultNumber() != i)
        return kernel.emitOpError("the SPIR-V back end expects a kernel to "
                                  "yield its compute op's results in order");
    if (failed(emitKernelOp(e, compute, inputs, outs)))
      return failure();
  } else {
    if (numOuts != 1)
      return kernel.emitOpError("a copy kernel must have one output");
    emitCopy(e, inputs.lookup(yield.getValues()[0]), outs[0]);
  }
  gpu::ReturnOp::create(b, loc);

  SmallVector<int32_t> wg(e.workgroupSize.begin(), e.workgroupSize.end());
  fn->setAttr(spirv::getEntryPointABIAttrName(),
              spirv::getEntryPointABIAttr(ctx, wg));
  GeneratedKernel gen;
  gen.symbol = name;
  gen.workgroups = e.numWorkgroups;
  return &cache.insert(key, kernel, std::move(gen));
}

LogicalResult EntryLowering::lower(lir::EntryOp entry) {
  MLIRContext *ctx = module.getContext();
  Builder b(ctx);
  constants.clear();
  constantOffsets.clear();
  constantOffsetOf.clear();
  constantBytes = 0;
  for (auto kernel : entry.getBlock().getOps<lir::KernelOp>()) {
    SmallVector<Binding> bindings;
    for (Value v : kernel.getIns()) {
      FailureOr<Binding> bd = viewBinding(v, /*writes=*/false);
      if (failed(bd))
        return kernel.emitOpError("has an operand that is not a lir.view");
      bindings.push_back(*bd);
    }
    for (Value v : kernel.getOuts()) {
      FailureOr<Binding> bd = viewBinding(v, /*writes=*/true);
      if (failed(bd))
        return kernel.emitOpError("has an operand that is not a lir.view");
      bindings.push_back(*bd);
    }
    for (Operation &op : kernel.getBody().front().without_terminator()) {
      if (!op.hasTrait<OpTrait::ConstantLike>())
        continue;
      auto value =
          dyn_cast<DenseElementsAttr>(op.getAttrOfType<ElementsAttr>("value"));
      if (value && !bindsConstantAsScalar(&op))
        bindings.push_back(constantBinding(value));
    }
    for (const Binding &bd : bindings) {
      Type t = bd.elementType;
      // bf16 and ggml blocks only as weights, which the loads decode.
      bool decodedWeight = GPUKernelEmitter::isWordDecoded(t) &&
                           bd.space == lir::MemorySpace::Params;
      if (t.isBF16() && !decodedWeight)
        return kernel.emitOpError("bf16 tensors are not supported by the "
                                  "SPIR-V back end (use f32 or f16; bf16 "
                                  "weights are read as stored)");
      if (isa<mir::QuantType>(t) && !decodedWeight)
        return kernel.emitOpError("reads ")
               << t << " outside the parameters (the SPIR-V back end decodes "
               << "ggml blocks in weights only)";
      if (t.isInteger(16) || t.isF64())
        return kernel.emitOpError("unsupported element type ")
               << t << " (the SPIR-V back end stores i1, i8, i32, i64, f16 "
               << "and f32)";
      if (!t.isIntOrFloat() && !decodedWeight)
        return kernel.emitOpError("unsupported element type ")
               << t << " (the SPIR-V back end reads f32, f16, integers, and "
               << "weights in bf16 or any ggml block type)";
    }
    FailureOr<GeneratedKernel *> gen =
        kernelFunction(kernel, bindings, entry.getSymName());
    if (failed(gen))
      return failure();
    SmallVector<lir::BindingAttr> bindingAttrs;
    for (const Binding &bd : bindings)
      bindingAttrs.push_back(lir::BindingAttr::get(ctx, bd.space, bd.offset,
                                                   bd.range, bd.viewOffset,
                                                   bd.viewBytes, bd.writes));
    kernel.setDispatchAttr(lir::DispatchAttr::get(
        ctx,
        SymbolRefAttr::get(ctx, (*gen)->symbol,
                           {FlatSymbolRefAttr::get(ctx, (*gen)->symbol)}),
        (*gen)->workgroups, bindingAttrs));
  }
  entry.setConstantPoolAttr(lir::ConstantPoolAttr::get(
      ctx, constantBytes, b.getArrayAttr(constants), constantOffsets));
  return success();
}

//===----------------------------------------------------------------------===//
// SPIR-V conversion
//===----------------------------------------------------------------------===//

static spirv::TargetEnvAttr targetEnv(MLIRContext *ctx, bool int64, bool int8,
                                      bool float16) {
  using spirv::Capability;
  using spirv::Extension;
  SmallVector<Capability> caps = {Capability::Shader,
                                  Capability::GroupNonUniform};
  SmallVector<Extension> exts = {
      Extension::SPV_KHR_storage_buffer_storage_class};
  if (int64)
    caps.push_back(Capability::Int64);
  if (int8) {
    caps.append({Capability::Int8, Capability::StorageBuffer8BitAccess});
    exts.push_back(Extension::SPV_KHR_8bit_storage);
  }
  if (float16) {
    caps.append({Capability::Float16, Capability::StorageBuffer16BitAccess});
    exts.push_back(Extension::SPV_KHR_16bit_storage);
  }
  auto triple =
      spirv::VerCapExtAttr::get(spirv::Version::V_1_3, caps, exts, ctx);
  return spirv::TargetEnvAttr::get(triple, spirv::getDefaultResourceLimits(ctx),
                                   spirv::ClientAPI::Vulkan);
}

/// Replaces math ops that SPIR-V lacks (erf) or implements loosely (tanh)
/// by the upstream polynomial approximations.
static LogicalResult approximateMath(Operation *root) {
  RewritePatternSet patterns(root->getContext());
  populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
    name.consume_front("math.");
    return name == "erf" || name == "tanh";
  });
  return applyPatternsGreedily(root, std::move(patterns));
}

static LogicalResult convertToSPIRV(gpu::GPUModuleOp gpuModule,
                                    spirv::TargetEnvAttr env) {
  MLIRContext *ctx = gpuModule.getContext();
  gpuModule->setAttr(spirv::getTargetEnvAttrName(), env);
  std::unique_ptr<ConversionTarget> target = SPIRVConversionTarget::get(env);
  SPIRVConversionOptions options;
  SPIRVTypeConverter typeConverter(env, options);
  RewritePatternSet patterns(ctx);
  populateGPUToSPIRVPatterns(typeConverter, patterns);
  ScfToSPIRVContext scfContext;
  populateSCFToSPIRVPatterns(typeConverter, scfContext, patterns);
  arith::populateArithToSPIRVPatterns(typeConverter, patterns);
  populateMathToSPIRVPatterns(typeConverter, patterns);
  populateMemRefToSPIRVPatterns(typeConverter, patterns);
  return applyFullConversion(gpuModule.getOperation(), *target,
                             std::move(patterns));
}

namespace {

struct ConvertLIRToSPIRVPass
    : public mlir::rlx::impl::ConvertLIRToSPIRVPassBase<ConvertLIRToSPIRVPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ModuleOp module = getOperation();
    if (storageBufferAlignment < 4 ||
        !llvm::isPowerOf2_64(storageBufferAlignment) ||
        !llvm::isPowerOf2_64(workgroupSize) || workgroupSize < 1) {
      module.emitError("convert-lir-to-spirv: storage-buffer-alignment must "
                       "be a power of two >= 4 and workgroup-size a power of "
                       "two");
      return signalPassFailure();
    }
    GPUTargetInfo target;
    target.workgroupSize =
        std::min<int64_t>(workgroupSize, maxWorkgroupInvocations);
    target.maxInvocations = maxWorkgroupInvocations;
    target.sharedMemoryBytes = maxSharedMemory;
    EntryLowering lowering(module, target, storageBufferAlignment);
    SmallVector<lir::EntryOp> entries(module.getOps<lir::EntryOp>());
    for (lir::EntryOp entry : entries)
      if (failed(lowering.lower(entry)))
        return signalPassFailure();

    SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
    // Fold the index arithmetic the emitter spells out, then share it.
    RewritePatternSet patterns(ctx);
    for (Dialect *d : ctx->getLoadedDialects())
      d->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : ctx->getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, ctx);
    FrozenRewritePatternSet canonicalize(std::move(patterns));
    IRRewriter rewriter(ctx);
    for (gpu::GPUModuleOp m : gpuModules) {
      if (failed(approximateMath(m)) ||
          failed(applyPatternsGreedily(m, canonicalize)))
        return signalPassFailure();
      DominanceInfo dominance(m);
      eliminateCommonSubExpressions(rewriter, dominance, m);
    }
    if (gpuOnly)
      return;

    spirv::TargetEnvAttr env = targetEnv(ctx, int64, int8, float16);
    for (gpu::GPUModuleOp m : gpuModules)
      if (failed(convertToSPIRV(m, env)))
        return signalPassFailure();
    // The schedule names the SPIR-V modules (`__spv__<gpu module>`).
    for (lir::EntryOp entry : entries)
      for (auto kernel : entry.getBlock().getOps<lir::KernelOp>()) {
        lir::DispatchAttr d = kernel.getDispatchAttr();
        SymbolRefAttr ref = d.getEntryPoint();
        kernel.setDispatchAttr(lir::DispatchAttr::get(
            ctx,
            SymbolRefAttr::get(ctx, ("__spv__" + ref.getRootReference().str()),
                               ref.getNestedReferences()),
            d.getWorkgroups(), d.getBindings()));
      }
  }
};

struct RLXSerializeSPIRVPass
    : public mlir::rlx::impl::RLXSerializeSPIRVPassBase<RLXSerializeSPIRVPass> {
  using Base::Base;
  void runOnOperation() override {
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
      getOperation().emitError("cannot create ")
          << outputDir << ": " << ec.message();
      return signalPassFailure();
    }
    for (auto m : getOperation().getOps<spirv::ModuleOp>()) {
      SmallVector<uint32_t> words;
      if (failed(spirv::serialize(m, words)))
        return signalPassFailure();
      if (validate) {
        StringRef name = m.getName().value_or("module");
        name.consume_front("__spv__");
        if (llvm::Error err = validateSpirv(words, name)) {
          m.emitError(llvm::toString(std::move(err)));
          return signalPassFailure();
        }
      }
      llvm::SmallString<128> path(outputDir);
      llvm::sys::path::append(path, m.getName().value_or("module") + ".spv");
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
      if (ec) {
        m.emitError("cannot write ") << path << ": " << ec.message();
        return signalPassFailure();
      }
      os.write(reinterpret_cast<const char *>(words.data()),
               words.size() * sizeof(uint32_t));
    }
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// Pipeline
//===----------------------------------------------------------------------===//

void mlir::rlx::buildLIRToSPIRVPipeline(
    OpPassManager &pm, const ConvertLIRToSPIRVPassOptions &options) {
  pm.addPass(createConvertLIRToSPIRVPass(options));
  if (options.gpuOnly)
    return;
  OpPassManager &spv = pm.nest<spirv::ModuleOp>();
  spv.addPass(spirv::createSPIRVLowerABIAttributesPass());
  spv.addPass(spirv::createSPIRVUpdateVCEPass());
  spv.addPass(createCanonicalizerPass());
  spv.addPass(createCSEPass());
}
