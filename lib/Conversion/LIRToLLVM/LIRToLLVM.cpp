//===- LIRToLLVM.cpp - LIR entry points to loops and LLVM -----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// convert-lir-to-loops turns every lir.entry into a function
//
//   func.func @<entry>(%arena: memref<?xi8>, %params: memref<?xi8>)
//       attributes {llvm.emit_c_interface}
//
// whose body materializes each view with memref.view (plus
// memref.reinterpret_cast for strided views) and calls one kernel function
// per lir.kernel, in order. Kernel functions are generated from the MIR op
// of the kernel body (KernelEmitter) and shared between kernels that compute
// the same thing on the same types (the layers of a model share code).
//
// The convert-lir-to-llvm pipeline follows with polynomial approximations of
// exp/tanh/erf and the upstream conversions to the LLVM dialect.
//
//===----------------------------------------------------------------------===//

#include "RLX/Conversion/LIRToLLVM/LIRToLLVM.h"
#include "KernelEmitter.h"
#include "RLX/Conversion/Passes.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/LIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Support/KernelABI.h"
#include "RLX/UKernels/UKernels.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_CONVERTLIRTOLOOPSPASS
#define GEN_PASS_DEF_RLXAPPROXIMATEMATHPASS
#define GEN_PASS_DEF_RLXEXPANDBF16PASS
#include "RLX/Conversion/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;

namespace {

class EntryLowering {
public:
  explicit EntryLowering(ModuleOp module) : module(module) {}

  LogicalResult lower(lir::EntryOp entry);
  /// Gives the scratch buffer its final size.
  void finalize();

private:
  FailureOr<func::FuncOp> kernelFunction(lir::KernelOp kernel,
                                         StringRef entryName);
  /// A kernel of strategy glu_gemm: the packed GEMM with the GLU in its
  /// epilogue.
  FailureOr<func::FuncOp> gluKernelFunction(lir::KernelOp kernel,
                                            StringRef entryName);
  /// A new private kernel function `<entry>_k<N>_<suffix>` over `views`
  /// then (ctx, tid, nthreads), and its emitter, positioned in its body.
  std::pair<func::FuncOp, KernelEmitter>
  beginKernelFunction(OpBuilder &b, lir::KernelOp kernel, StringRef entryName,
                      StringRef suffix, TypeRange views);
  /// The cache key of `kernel`: which of its operands are packed, beyond
  /// what kernelKey() says.
  std::string cacheKey(lir::KernelOp kernel);
  Value globalFor(OpBuilder &b, Location loc, DenseElementsAttr value);
  /// Reads which params are stored packed (lir-pack-params).
  void collectPackedParams(lir::EntryOp entry);

  ModuleOp module;
  KernelModuleState state;
  KernelCache<func::FuncOp> kernelCache;
  /// Param views stored packed ("nk16", "x8").
  llvm::DenseSet<Value> packedViews;
  unsigned kernelCount = 0, globalCount = 0;
};

} // namespace

/// The memref a view is in the generated code: a weight of ggml blocks is
/// its bytes (memref<bytes x i8>; its KernelView keeps the block type).
static Type loweredViewType(Type type) {
  auto ty = cast<MemRefType>(type);
  if (!isa<mir::QuantType>(ty.getElementType()))
    return ty;
  return MemRefType::get({mir::getStorageBytes(ty)},
                         IntegerType::get(ty.getContext(), 8));
}

static SmallVector<Type> loweredViewTypes(TypeRange types) {
  return llvm::map_to_vector(types, loweredViewType);
}

/// The view of kernel argument `arg`, which stands for a view of `type`.
static KernelView argumentView(Value arg, Type type, bool packed) {
  KernelView v = KernelEmitter::viewOf(arg, packed);
  auto ty = cast<MemRefType>(type);
  if (isa<mir::QuantType>(ty.getElementType())) {
    v.elementType = ty.getElementType();
    v.shape.assign(ty.getShape().begin(), ty.getShape().end());
    v.strides = contiguousStrides(v.shape);
  }
  return v;
}

std::string EntryLowering::cacheKey(lir::KernelOp kernel) {
  std::string packed;
  for (Value v : kernel->getOperands())
    packed += packedViews.contains(v) ? "P" : "-";
  return kernelKey(kernel, packed);
}

std::pair<func::FuncOp, KernelEmitter>
EntryLowering::beginKernelFunction(OpBuilder &b, lir::KernelOp kernel,
                                   StringRef entryName, StringRef suffix,
                                   TypeRange views) {
  b.setInsertionPointToEnd(module.getBody());
  Location loc = kernel.getLoc();
  SmallVector<Type> argTypes(views);
  argTypes.append({LLVM::LLVMPointerType::get(b.getContext()), b.getIndexType(),
                   b.getIndexType()});
  std::string name =
      (entryName + "_k" + Twine(kernelCount++) + "_" + suffix).str();
  auto fn = func::FuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  fn.setPrivate();
  Block *block = fn.addEntryBlock();
  b.setInsertionPointToStart(block);
  KernelEmitter e(b, loc, module);
  unsigned n = views.size();
  e.ctx = block->getArgument(n);
  e.tid = block->getArgument(n + 1);
  e.nthreads = block->getArgument(n + 2);
  e.state = &state;
  e.config = kernel.getConfigAttr();
  return {fn, e};
}

void EntryLowering::collectPackedParams(lir::EntryOp entry) {
  for (auto io : entry.getBlock().getOps<lir::IOOp>())
    if (io.getKind() == lir::IOKind::Param &&
        (io.getLayout() == lir::ParamLayout::NK16 ||
         io.getLayout() == lir::ParamLayout::X8))
      packedViews.insert(io.getView());
}

void EntryLowering::finalize() {
  auto global = module.lookupSymbol<memref::GlobalOp>("__rlx_scratch");
  if (!global)
    return;
  auto ty = MemRefType::get({std::max<int64_t>(state.scratchFloats, 1)},
                            Float32Type::get(module.getContext()));
  global.setType(ty);
  module.walk([&](memref::GetGlobalOp get) {
    if (get.getName() == "__rlx_scratch")
      get.getResult().setType(ty);
  });
}

Value EntryLowering::globalFor(OpBuilder &b, Location loc,
                               DenseElementsAttr value) {
  auto tensorTy = cast<RankedTensorType>(value.getType());
  auto memrefTy =
      MemRefType::get(tensorTy.getShape(), tensorTy.getElementType());
  std::string name = "__rlx_const_" + std::to_string(globalCount++);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"), memrefTy,
                             value, /*constant=*/true,
                             /*alignment=*/b.getI64IntegerAttr(64));
  }
  return memref::GetGlobalOp::create(b, loc, memrefTy, name);
}

FailureOr<func::FuncOp> EntryLowering::kernelFunction(lir::KernelOp kernel,
                                                      StringRef entryName) {
  std::string key = cacheKey(kernel);
  if (func::FuncOp *fn = kernelCache.lookup(key, kernel))
    return *fn;

  OpBuilder b(module.getContext());
  Location loc = kernel.getLoc();
  unsigned numViews = kernel->getNumOperands();
  auto [fn, e] =
      beginKernelFunction(b, kernel, entryName, kernel.getName(),
                          loweredViewTypes(kernel->getOperandTypes()));
  Block *entry = &fn.getBody().front();

  Block &body = kernel.getBody().front();
  unsigned numIns = kernel.getIns().size();
  DenseMap<Value, KernelView> inputs;
  for (auto [i, arg, fnArg] : llvm::enumerate(
           body.getArguments(), entry->getArguments().take_front(numIns)))
    inputs[arg] = argumentView(fnArg, kernel.getIns()[i].getType(),
                               packedViews.contains(kernel.getIns()[i]));
  if (failed(bindKernelConstants(e, body, inputs, [&](DenseElementsAttr v) {
        return KernelEmitter::viewOf(globalFor(b, loc, v));
      })))
    return failure();

  // Yielded values are the compute op's results (computed in place into the
  // outputs) or inputs and constants (copied).
  Operation *compute = kernel.getComputeOp();
  auto yield = cast<lir::YieldOp>(body.getTerminator());
  ArrayRef<BlockArgument> outArgs =
      entry->getArguments().slice(numIns, numViews - numIns);
  SmallVector<Value> computeOuts(compute ? compute->getNumResults() : 0);
  for (auto [value, out] : llvm::zip(yield.getValues(), outArgs)) {
    if (compute && value.getDefiningOp() == compute) {
      computeOuts[cast<OpResult>(value).getResultNumber()] = out;
      continue;
    }
    emitCopy(e, inputs.lookup(value), KernelEmitter::viewOf(out));
  }
  if (compute) {
    SmallVector<Value> temporaries;
    for (Value &out : computeOuts)
      if (!out) {
        // A result nobody reads still needs storage (one per thread).
        auto ty = cast<RankedTensorType>(
            compute->getResult(&out - computeOuts.data()).getType());
        out = memref::AllocOp::create(
            b, loc, MemRefType::get(ty.getShape(), ty.getElementType()));
        temporaries.push_back(out);
      }
    SmallVector<KernelView> outViews;
    for (Value out : computeOuts)
      outViews.push_back(KernelEmitter::viewOf(out));
    if (failed(emitKernelOp(e, compute, inputs, outViews)))
      return failure();
    for (Value t : temporaries)
      memref::DeallocOp::create(b, loc, t);
  }
  func::ReturnOp::create(b, loc);
  return kernelCache.insert(key, kernel, fn);
}

FailureOr<func::FuncOp> EntryLowering::gluKernelFunction(lir::KernelOp kernel,
                                                         StringRef entryName) {
  Block &body = kernel.getBody().front();
  std::optional<Type> gateUpRound = lir::getGluGemmRounding(&body.front());
  auto glu = dyn_cast_or_null<mir::FusedGluOp>(kernel.getComputeOp());
  if (!gateUpRound || !glu || kernel.getIns().size() != 2 ||
      kernel.getOuts().size() != 2 || !packedViews.contains(kernel.getIns()[1]))
    return kernel.emitOpError("a glu_gemm kernel needs a mir.matmul (or a "
                              "mir.fused_matmul that only rounds) over an "
                              "nk16 weight followed by the mir.fused_glu "
                              "that reads it (lir-fuse-glu-gemm)");
  std::string key = cacheKey(kernel);
  if (func::FuncOp *fn = kernelCache.lookup(key, kernel))
    return *fn;
  OpBuilder b(module.getContext());
  auto [fn, e] =
      beginKernelFunction(b, kernel, entryName, "matmul_glu",
                          loweredViewTypes(kernel->getOperandTypes()));
  Block *block = &fn.getBody().front();
  // An in-place kernel writes the GLU's result over the GEMM's input: the
  // input is copied before any write.
  if (failed(emitGluGemmKernel(e, block->getArgument(0), block->getArgument(1),
                               block->getArgument(2), block->getArgument(3),
                               glu.getActivation(), *gateUpRound,
                               glu.getRoundTo().value_or(Type()),
                               kernel.getInplace())))
    return failure();
  func::ReturnOp::create(b, kernel.getLoc());
  return kernelCache.insert(key, kernel, fn);
}

LogicalResult EntryLowering::lower(lir::EntryOp entry) {
  collectPackedParams(entry);
  OpBuilder b(entry);
  Location loc = entry.getLoc();
  auto bytes = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  Type indexTy = b.getIndexType();

  // @<entry>(arena, params): one thread, with its own context.
  auto fn = func::FuncOp::create(b, loc, entry.getSymName(),
                                 b.getFunctionType({bytes, bytes}, {}));
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  // @<entry>_spmd(arena, params, ctx, tid, nthreads): called by every thread.
  std::string spmdName = (entry.getSymName() + ::rlx::spmd::kSpmdSuffix).str();
  auto spmd = func::FuncOp::create(
      b, loc, spmdName,
      b.getFunctionType({bytes, bytes, ptr, indexTy, indexTy}, {}));
  spmd->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  {
    OpBuilder::InsertionGuard guard(b);
    Block *block = fn.addEntryBlock();
    b.setInsertionPointToStart(block);
    Type i64 = b.getI64Type();
    int64_t ctxBytes = ::rlx::spmd::contextBytes(1);
    Value words = LLVM::ConstantOp::create(b, loc, i64,
                                           b.getI64IntegerAttr(ctxBytes / 8));
    Value ctx = LLVM::AllocaOp::create(b, loc, ptr, i64, words,
                                       ::rlx::spmd::kContextAlignment);
    LLVM::MemsetOp::create(
        b, loc, ctx,
        LLVM::ConstantOp::create(b, loc, b.getI8Type(), b.getI8IntegerAttr(0)),
        LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(ctxBytes)),
        /*isVolatile=*/false);
    func::CallOp::create(b, loc, spmd,
                         ValueRange{block->getArgument(0),
                                    block->getArgument(1), ctx,
                                    arith::ConstantIndexOp::create(b, loc, 0),
                                    arith::ConstantIndexOp::create(b, loc, 1)});
    func::ReturnOp::create(b, loc);
  }
  Block *block = spmd.addEntryBlock();
  b.setInsertionPointToStart(block);
  Value arena = block->getArgument(0), params = block->getArgument(1);
  ValueRange threadArgs = block->getArguments().drop_front(2);

  IRMapping views;
  for (Operation &op : entry.getBlock()) {
    if (isa<lir::AllocOp>(op))
      return op.emitOpError("is not planned: run lir-plan-arena first");
    if (auto view = dyn_cast<lir::ViewOp>(op)) {
      MemRefType ty = view.getType();
      Value base = view.getSpace() == lir::MemorySpace::Arena ? arena : params;
      Value offset =
          arith::ConstantIndexOp::create(b, loc, view.getByteOffset());
      Value v;
      if (isa<mir::QuantType>(ty.getElementType())) {
        v = memref::ViewOp::create(b, loc,
                                   cast<MemRefType>(loweredViewType(ty)), base,
                                   offset, ValueRange{});
      } else if (ty.getLayout().isIdentity()) {
        v = memref::ViewOp::create(b, loc, ty, base, offset, ValueRange{});
      } else {
        int64_t elemBytes = lir::getElementBytes(ty.getElementType());
        auto flatTy = MemRefType::get({view.getExtentBytes() / elemBytes},
                                      ty.getElementType());
        Value flat =
            memref::ViewOp::create(b, loc, flatTy, base, offset, ValueRange{});
        SmallVector<int64_t> strides = KernelEmitter::strides(view);
        v = memref::ReinterpretCastOp::create(b, loc, ty, flat, 0,
                                              ty.getShape(), strides);
      }
      views.map(view.getResult(), v);
      continue;
    }
    auto kernel = dyn_cast<lir::KernelOp>(op);
    if (!kernel)
      continue;
    lir::LoweringConfigAttr config = kernel.getConfigAttr();
    FailureOr<func::FuncOp> kfn =
        config && config.getStrategy() == lir::KernelStrategy::GluGemm
            ? gluKernelFunction(kernel, entry.getSymName())
            : kernelFunction(kernel, entry.getSymName());
    if (failed(kfn))
      return failure();
    SmallVector<Value> args;
    for (Value v : kernel->getOperands())
      args.push_back(views.lookup(v));
    args.append(threadArgs.begin(), threadArgs.end());
    func::CallOp::create(b, loc, *kfn, args);
  }
  func::ReturnOp::create(b, loc);
  return success();
}

namespace {

struct ConvertLIRToLoopsPass
    : public mlir::rlx::impl::ConvertLIRToLoopsPassBase<ConvertLIRToLoopsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    EntryLowering lowering(module);
    SmallVector<lir::EntryOp> entries(module.getOps<lir::EntryOp>());
    for (lir::EntryOp entry : entries)
      if (failed(lowering.lower(entry)))
        return signalPassFailure();
    // Entries go last: the kernel cache compares against their bodies.
    for (lir::EntryOp entry : entries)
      entry.erase();
    lowering.finalize();
  }
};

/// erf on bf16 (which the polynomial approximation does not take) as erf
/// on f32, rounded back.
struct WidenBF16Erf : public OpRewritePattern<math::ErfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::ErfOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isBF16())
      return failure();
    Type wide = isa<VectorType>(type)
                    ? Type(cast<VectorType>(type).clone(rewriter.getF32Type()))
                    : Type(rewriter.getF32Type());
    Value x =
        arith::ExtFOp::create(rewriter, op.getLoc(), wide, op.getOperand());
    Value erf = math::ErfOp::create(rewriter, op.getLoc(), x);
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, type, erf);
    return success();
  }
};

struct RLXApproximateMathPass
    : public mlir::rlx::impl::RLXApproximateMathPassBase<
          RLXApproximateMathPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<WidenBF16Erf>(&getContext());
    // exp, tanh and erf on vectors would otherwise become one libm call per
    // lane; cos, sin and pow stay libm calls (RoPE wants their accuracy).
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      name.consume_front("math.");
      return name == "exp" || name == "tanh" || name == "erf" ||
             name == "expm1" || name == "log";
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

/// Whether `t` is bf16 or a vector of it.
static bool isBF16Like(Type t) { return getElementTypeOrSelf(t).isBF16(); }

/// An arith or math computation on bf16 computes in f32 between an
/// extension of its bf16 operands and a truncation of its bf16 results (as
/// upstream's arith-emulate-unsupported-floats does for arith), so that only
/// conversions are left for the expansion.
struct WidenBF16Compute : RewritePattern {
  WidenBF16Compute(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    StringRef dialect =
        op->getDialect() ? op->getDialect()->getNamespace() : StringRef();
    if ((dialect != "arith" && dialect != "math") || op->getNumRegions() ||
        isa<arith::ExtFOp, arith::TruncFOp, arith::BitcastOp, arith::ConstantOp,
            arith::SelectOp>(op))
      return failure();
    if (llvm::none_of(op->getOperandTypes(), isBF16Like) &&
        llvm::none_of(op->getResultTypes(), isBF16Like))
      return failure();
    auto widen = [&](Type t) -> Type {
      if (!isBF16Like(t))
        return t;
      if (auto v = dyn_cast<VectorType>(t))
        return v.clone(rewriter.getF32Type());
      return rewriter.getF32Type();
    };
    Location loc = op->getLoc();
    SmallVector<Value> operands;
    for (Value v : op->getOperands())
      operands.push_back(
          isBF16Like(v.getType())
              ? arith::ExtFOp::create(rewriter, loc, widen(v.getType()), v)
                    .getResult()
              : v);
    SmallVector<Type> types = llvm::map_to_vector(op->getResultTypes(), widen);
    OperationState state(loc, op->getName(), operands, types, op->getAttrs());
    Operation *wide = rewriter.create(state);
    SmallVector<Value> results;
    for (auto [old, now] : llvm::zip(op->getResults(), wide->getResults()))
      results.push_back(
          isBF16Like(old.getType())
              ? arith::TruncFOp::create(rewriter, loc, old.getType(), now)
                    .getResult()
              : now);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct RLXExpandBF16Pass
    : public mlir::rlx::impl::RLXExpandBF16PassBase<RLXExpandBF16Pass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<WidenBF16Compute>(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

lir::GemmTile mlir::rlx::hostGemmTile() {
  if (llvm::sys::getHostCPUFeatures().lookup("avx512f"))
    return {8, 2, 256};
  return {6, 1, 256};
}

int64_t mlir::rlx::hostAttentionAccumulators() {
  return llvm::sys::getHostCPUFeatures().lookup("avx512f") ? 16 : 4;
}

bool mlir::rlx::resolveWeightRepack(::rlx::WeightRepack choice) {
  if (choice == ::rlx::WeightRepack::Auto)
    return llvm::StringRef(rlx_uk_isa()) == "avx2";
  return choice == ::rlx::WeightRepack::X8;
}

void mlir::rlx::buildCPULIRPipeline(OpPassManager &pm,
                                    const CPUCodegenOptions &options) {
  lir::LIRPackParamsPassOptions pack;
  pack.nk16 = options.gemm != ::rlx::GemmStrategy::Blas;
  pack.x8 = options.repackX8;
  if (pack.nk16 || pack.x8)
    pm.addPass(lir::createLIRPackParamsPass(pack));
  if (pack.nk16)
    pm.addPass(lir::createLIRFuseGluGemmPass());
  lir::LIRSelectStrategyPassOptions select;
  select.gemmMr = options.tile.mr;
  select.gemmNv = options.tile.nv;
  select.gemmKc = options.tile.kc;
  select.attentionRows = options.attentionRows;
  select.attentionAccumulators = options.attentionAccumulators;
  pm.addPass(lir::createLIRSelectStrategyPass(select));
}

void mlir::rlx::buildLIRToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(createConvertLIRToLoopsPass());
  // The function-local cleanups and lowerings run on the kernels in
  // parallel (one function each). The canonicalizer works bottom-up: on the
  // loop nests convert-lir-to-loops emits (unrolled micro-kernel bodies, a
  // 16-layer model's 560 KB of IR) the top-down worklist took 10x longer
  // (0.40 s against 0.04 s) for the same fixed point.
  GreedyRewriteConfig canonicalize;
  canonicalize.setUseTopDownTraversal(false);
  OpPassManager &cleanup = pm.nest<func::FuncOp>();
  cleanup.addPass(createCanonicalizerPass(canonicalize));
  cleanup.addPass(createCSEPass());
  pm.addPass(createRLXApproximateMathPass());
  pm.addPass(createRLXExpandBF16Pass());
  OpPassManager &lower = pm.nest<func::FuncOp>();
  lower.addPass(createSCFToControlFlowPass());
  lower.addPass(memref::createExpandStridedMetadataPass());
  lower.addPass(createLowerAffinePass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createRLXSplitLargeFunctionsPass());
}

void mlir::rlx::registerLIRToLLVMPipeline() {
  PassPipelineRegistration<>(
      "convert-lir-to-llvm",
      "Lower LIR entry points to the LLVM dialect: kernels as loops over "
      "memrefs (convert-lir-to-loops), approximated math, then the upstream "
      "conversions",
      [](OpPassManager &pm) { buildLIRToLLVMPipeline(pm); });
}
