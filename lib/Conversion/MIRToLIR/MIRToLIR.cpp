//===- MIRToLIR.cpp - Bufferize MIR into LIR -----------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// convert-mir-to-lir: every MIR op of a static-shaped function becomes a
// lir.kernel over views; tensors get storage in the parameter pool (params)
// or an unplanned arena buffer (lir.alloc: everything else), which
// lir-plan-arena places later. Reshapes and slices become aliasing views.
//
//===----------------------------------------------------------------------===//

#include "RLX/Conversion/MIRToLIR/MIRToLIR.h"
#include "RLX/Conversion/Passes.h"
#include "RLX/Dialect/Common/RLXDialect.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Support/CheckedSize.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"
#include <limits>

namespace mlir::rlx {
#define GEN_PASS_DEF_CONVERTMIRTOLIRPASS
#include "RLX/Conversion/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;

namespace {

/// Where a tensor value lives.
struct ViewInfo {
  lir::MemorySpace space = lir::MemorySpace::Arena;
  /// Index of the arena buffer that owns the storage (-1 for params).
  int buffer = -1;
  /// The view this one aliases (-1: it owns its storage).
  int source = -1;
  /// Bytes from the start of the owning storage (filled after planning for
  /// arena views: relative to the buffer until then).
  int64_t offset = 0;
  ShapedType shape;
  SmallVector<int64_t> strides;
  Value view;
};

/// One arena buffer (a root of storage) and its users.
struct BufferInfo {
  bool isInput = false, isOutput = false;
};

class FuncConverter {
public:
  FuncConverter(RewriterBase &rewriter, func::FuncOp func,
                const MIRToLIROptions &options)
      : rewriter(rewriter), func(func), options(options) {}

  FailureOr<lir::EntryOp> run();

private:
  LogicalResult checkSupported();
  /// Where the next param goes: `alignment`-aligned, or at the param's
  /// page phase when it has one (options.pagePhases). A param concatenating
  /// whole sources along rows takes its first source's phase: when the file
  /// stores the sources one after the other, all of them land in phase.
  int64_t paramOffset(mir::ParamOp param) const {
    StringRef name = param.getName();
    if (auto sources = param.getSources(); sources && !sources->empty() &&
                                           param.getConcatAxis() == 0 &&
                                           !param.getSourceStarts())
      name = cast<StringAttr>((*sources)[0]).getValue();
    auto it = options.pagePhases.find(name);
    if (it == options.pagePhases.end() || options.pageSize <= 0)
      return llvm::alignTo(paramBytes, options.alignment);
    int64_t page = options.pageSize;
    int64_t base = paramBytes / page * page + it->second;
    return base >= paramBytes ? base : base + page;
  }
  int addView(ViewInfo info) {
    views.push_back(std::move(info));
    return views.size() - 1;
  }
  int newBuffer(Type type) {
    auto ty = cast<ShapedType>(type);
    buffers.push_back(BufferInfo());
    ViewInfo info;
    info.buffer = buffers.size() - 1;
    info.shape = ty;
    info.strides = identityStrides(ty);
    return addView(info);
  }
  static SmallVector<int64_t> identityStrides(ShapedType ty) {
    SmallVector<int64_t> strides(ty.getRank(), 1);
    for (int64_t i = ty.getRank() - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * ty.getDimSize(i + 1);
    return strides;
  }
  bool isContiguous(const ViewInfo &v) {
    return v.strides == identityStrides(v.shape);
  }
  FailureOr<int> tryAlias(Operation *op);
  LogicalResult tryAliasSplit(mir::SplitOp op);
  MemRefType memrefType(const ViewInfo &v);

  RewriterBase &rewriter;
  func::FuncOp func;
  const MIRToLIROptions &options;
  SmallVector<ViewInfo> views;
  SmallVector<BufferInfo> buffers;
  DenseMap<Value, int> viewOf;
  /// Kernels in schedule order: the MIR op (null for output copies) with the
  /// views it reads and writes.
  struct Kernel {
    Operation *op = nullptr;
    SmallVector<Value> inputs;
    SmallVector<int> inViews, outViews;
    /// For an output copy of a constant: the constant.
    Value constant;
  };
  SmallVector<Kernel> kernels;
  /// The group size of each collective (shard.all_reduce, shard.all_gather).
  DenseMap<Operation *, int64_t> groupSizes;
  llvm::StringMap<int> paramByName;
  llvm::StringMap<mir::ParamOp> paramOps;
  SmallVector<std::pair<std::string, int>> inputs, params, outputs;
  int64_t paramBytes = 0;
};

} // namespace

static std::string ioName(func::FuncOp func, bool isResult, unsigned i);

/// The number of ranks a shard collective spans, if the CPU runs it: a sum
/// (all-reduce) or a gather of f32 tensors over every axis of a static
/// shard.grid (the whole MPI world).
template <typename OpTy>
static FailureOr<int64_t> collectiveGroupSize(OpTy op) {
  SymbolTableCollection symbols;
  shard::GridOp grid = shard::getGridOrNull(op, op.getGridAttr(), symbols);
  if (!grid)
    return op.emitOpError("refers to no shard.grid @") << op.getGrid();
  ArrayRef<int64_t> shape = grid.getShape();
  int64_t world = 1;
  for (int64_t d : shape) {
    if (ShapedType::isDynamic(d))
      return op.emitOpError("needs a static shard.grid, got @") << op.getGrid();
    world *= d;
  }
  int64_t group = shard::collectiveProcessGroupSize(op.getGridAxes(), shape);
  if (group != world)
    return op.emitOpError("spans ")
           << group << " of the " << world
           << " devices of its grid: convert-mir-to-lir runs collectives over "
              "the whole grid (one MPI world) only";
  auto in = cast<RankedTensorType>(op.getInput().getType());
  Type element = in.getElementType();
  if (!lir::isCollectiveElementType(element) ||
      element != getElementTypeOrSelf(op.getResult().getType()))
    return op.emitOpError("moves f32, f16 or bf16 tensors only, got ") << in;
  return world;
}

LogicalResult FuncConverter::checkSupported() {
  auto isStatic = [](Type t) {
    auto ty = dyn_cast<RankedTensorType>(t);
    return ty && ty.hasStaticShape();
  };
  for (Type t :
       llvm::concat<const Type>(func.getArgumentTypes(), func.getResultTypes()))
    if (!isStatic(t))
      return func.emitOpError("convert-mir-to-lir needs static tensor types "
                              "(specialize the shapes first), got ")
             << t;
  // Every buffer's byte size must fit in 63 bits: a size that wraps would
  // give a small buffer to a huge tensor.
  for (auto [i, t] : llvm::enumerate(func.getArgumentTypes())) {
    if (!mir::getCheckedStorageBytes(cast<ShapedType>(t)))
      return func.emitOpError("input '")
             << ioName(func, false, i) << "' of type " << t
             << " has a byte size past 2^63 - 1";
  }
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("expects a single-block body");
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (auto reduce = dyn_cast<shard::AllReduceOp>(op)) {
      if (reduce.getReduction() != shard::ReductionKind::Sum)
        return reduce.emitOpError("reduces with ")
               << shard::stringifyReductionKind(reduce.getReduction())
               << "; convert-mir-to-lir runs sums only";
      FailureOr<int64_t> group = collectiveGroupSize(reduce);
      if (failed(group))
        return failure();
      groupSizes[&op] = *group;
    } else if (auto gather = dyn_cast<shard::AllGatherOp>(op)) {
      FailureOr<int64_t> group = collectiveGroupSize(gather);
      if (failed(group))
        return failure();
      groupSizes[&op] = *group;
    } else if (!isa<mir::MIRDialect>(op.getDialect()))
      return op.emitOpError("is not a MIR op: lower it to MIR before "
                            "convert-mir-to-lir");
    for (Type t : op.getResultTypes()) {
      if (!isStatic(t))
        return op.emitOpError("has a dynamic result type ")
               << t << "; specialize the shapes first";
      if (!mir::getCheckedStorageBytes(cast<ShapedType>(t)))
        return op.emitOpError("result of type ")
               << t << " has a byte size past 2^63 - 1";
    }
  }
  return success();
}

/// Reshapes of contiguous views and slices become aliases.
FailureOr<int> FuncConverter::tryAlias(Operation *op) {
  if (!isa<mir::ReshapeOp, mir::SliceOp>(op))
    return failure();
  auto it = viewOf.find(op->getOperand(0));
  if (it == viewOf.end())
    return failure();
  int src = it->second;
  ViewInfo info = views[src];
  info.source = src;
  info.view = nullptr;
  auto resultTy = cast<ShapedType>(op->getResult(0).getType());
  if (isa<mir::ReshapeOp>(op)) {
    const ViewInfo &from = views[src];
    info.shape = resultTy;
    if (isContiguous(from)) {
      info.strides = identityStrides(resultTy);
      return addView(info);
    }
    // A strided view (e.g. a slice of a QKV buffer) can still split its
    // last dim into heads, or merge them back, without a copy.
    ArrayRef<int64_t> in = from.shape.getShape(), out = resultTy.getShape();
    int64_t r = in.size();
    if (from.strides.back() != 1)
      return failure();
    if ((int64_t)out.size() == r + 1 && in.drop_back() == out.drop_back(2) &&
        out[r - 1] * out[r] == in[r - 1]) {
      info.strides.assign(from.strides.begin(), from.strides.end() - 1);
      info.strides.append({out[r], 1});
      return addView(info);
    }
    if ((int64_t)out.size() == r - 1 && in.drop_back(2) == out.drop_back() &&
        from.strides[r - 2] == in[r - 1]) {
      info.strides.assign(from.strides.begin(), from.strides.end() - 2);
      info.strides.push_back(1);
      return addView(info);
    }
    return failure();
  }
  auto slice = cast<mir::SliceOp>(op);
  int64_t axis = slice.getAxis();
  int64_t start = slice.getStart(), step = slice.getStep();
  // A forward step on an outer axis is a larger stride; a backward step (a
  // negative stride) or a step along the innermost axis (rows without unit
  // stride) is a copy kernel.
  if (step != 1 && (step < 0 || axis == resultTy.getRank() - 1))
    return failure();
  if (start < 0)
    start += views[src].shape.getDimSize(axis);
  info.offset += start * info.strides[axis] *
                 lir::getElementBytes(resultTy.getElementType());
  info.strides[axis] *= step;
  info.shape = resultTy;
  return addView(info);
}

/// The pieces of a split become aliases of their ranges, as slices do.
LogicalResult FuncConverter::tryAliasSplit(mir::SplitOp op) {
  auto it = viewOf.find(op.getInput());
  if (it == viewOf.end())
    return failure();
  int src = it->second;
  int64_t axis =
      *mir::normalizeAxis(op.getAxis(), op.getInput().getType().getRank());
  int64_t start = 0;
  for (auto [result, size] : llvm::zip(op.getResults(), op.getSizes())) {
    ViewInfo info = views[src];
    info.source = src;
    info.view = nullptr;
    auto resultTy = cast<ShapedType>(result.getType());
    info.offset += start * info.strides[axis] *
                   lir::getElementBytes(resultTy.getElementType());
    info.shape = resultTy;
    viewOf[result] = addView(info);
    start += size;
  }
  return success();
}

MemRefType FuncConverter::memrefType(const ViewInfo &v) {
  if (isContiguous(v))
    return MemRefType::get(v.shape.getShape(), v.shape.getElementType());
  auto layout = StridedLayoutAttr::get(func.getContext(), 0, v.strides);
  return MemRefType::get(v.shape.getShape(), v.shape.getElementType(), layout);
}

static std::string ioName(func::FuncOp func, bool isResult, unsigned i) {
  auto attr = isResult ? func.getResultAttrOfType<StringAttr>(i, kNameAttr)
                       : func.getArgAttrOfType<StringAttr>(i, kNameAttr);
  if (attr)
    return attr.str();
  return (isResult ? "output" : "input") + std::to_string(i);
}

FailureOr<lir::EntryOp> FuncConverter::run() {
  if (failed(checkSupported()))
    return failure();
  Block &body = func.getBody().front();

  // Inputs: arena buffers live from the start.
  for (BlockArgument arg : body.getArguments()) {
    int v = newBuffer(arg.getType());
    buffers[views[v].buffer].isInput = true;
    viewOf[arg] = v;
    inputs.push_back({ioName(func, false, arg.getArgNumber()), v});
  }

  // Walk the body: params, aliases, kernels.
  for (Operation &op : body.without_terminator()) {
    if (auto param = dyn_cast<mir::ParamOp>(op)) {
      auto ty = cast<ShapedType>(param.getType());
      // A param only read through derived params needs no pool space.
      if (param->use_empty())
        continue;
      auto [it, inserted] = paramByName.try_emplace(param.getName(), -1);
      if (!inserted) {
        if (views[it->second].shape != ty)
          return param.emitOpError("redeclares param '")
                 << param.getName() << "' with another type";
        viewOf[param] = it->second;
        continue;
      }
      ViewInfo info;
      info.space = lir::MemorySpace::Params;
      info.offset = paramOffset(param);
      info.shape = ty;
      info.strides = identityStrides(ty);
      // The sizes fit (checkSupported); their sum may not.
      std::optional<uint64_t> end =
          ::rlx::checkedAddBytes(info.offset, mir::getStorageBytes(ty));
      if (!end)
        return param.emitOpError("param '")
               << param.getName() << "' of type " << ty
               << " takes the parameter pool past 2^63 - 1 bytes";
      paramBytes = static_cast<int64_t>(*end);
      it->second = addView(info);
      paramOps[param.getName()] = param;
      viewOf[param] = it->second;
      params.push_back({param.getName().str(), it->second});
      continue;
    }
    if (op.hasTrait<OpTrait::ConstantLike>())
      continue; // Cloned into the kernels that read it.
    if (auto split = dyn_cast<mir::SplitOp>(op);
        split && succeeded(tryAliasSplit(split)))
      continue;
    if (FailureOr<int> alias = tryAlias(&op); succeeded(alias)) {
      viewOf[op.getResult(0)] = *alias;
      continue;
    }
    Kernel k;
    k.op = &op;
    for (Value operand : op.getOperands()) {
      if (llvm::is_contained(k.inputs, operand) ||
          (operand.getDefiningOp() &&
           operand.getDefiningOp()->hasTrait<OpTrait::ConstantLike>()))
        continue;
      k.inputs.push_back(operand);
      k.inViews.push_back(viewOf.lookup(operand));
    }
    for (Value result : op.getResults()) {
      int v = newBuffer(result.getType());
      viewOf[result] = v;
      k.outViews.push_back(v);
    }
    kernels.push_back(std::move(k));
  }

  // Outputs: fresh, contiguous arena buffers written by a kernel; anything
  // else (an input, a param, an alias, a constant, a repeat) gets a copy.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto it = viewOf.find(value);
    bool direct = it != viewOf.end() && views[it->second].source < 0 &&
                  views[it->second].space == lir::MemorySpace::Arena &&
                  !buffers[views[it->second].buffer].isInput &&
                  !buffers[views[it->second].buffer].isOutput;
    int v;
    if (direct) {
      v = it->second;
    } else {
      Kernel k;
      if (it != viewOf.end()) {
        k.inputs.push_back(value);
        k.inViews.push_back(it->second);
      } else {
        k.constant = value;
      }
      v = newBuffer(value.getType());
      k.outViews.push_back(v);
      kernels.push_back(std::move(k));
    }
    buffers[views[v].buffer].isOutput = true;
    outputs.push_back({ioName(func, true, i), v});
  }

  // Emit the entry.
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(func);
  Location loc = func.getLoc();
  // The arena is planned later (lir-plan-arena): a buffer that owns storage
  // is a lir.alloc, an alias a view at an offset relative to its buffer.
  auto entry = lir::EntryOp::create(
      rewriter, loc, func.getSymName(),
      /*arena_size=*/0,
      static_cast<int64_t>(llvm::alignTo(paramBytes, options.alignment)),
      options.alignment,
      /*constant_pool=*/nullptr);
  Block *block = rewriter.createBlock(&entry.getBody());
  rewriter.setInsertionPointToStart(block);
  for (ViewInfo &info : views) {
    if (info.space == lir::MemorySpace::Arena && info.source < 0) {
      info.view = lir::AllocOp::create(rewriter, loc, memrefType(info));
      continue;
    }
    Value source = info.source >= 0 ? views[info.source].view : Value();
    info.view = lir::ViewOp::create(rewriter, loc, memrefType(info), info.space,
                                    info.offset, source);
  }
  auto emitIO = [&](lir::IOKind kind, ArrayRef<std::pair<std::string, int>> l) {
    for (auto &[name, v] : l)
      lir::IOOp::create(rewriter, loc, kind, name, views[v].view, nullptr,
                        nullptr, nullptr, nullptr, /*layout=*/nullptr);
  };
  // Integer inputs that index a table (embedding ids) carry its row count
  // so the runtime can reject out-of-range ids.
  for (auto [index, input] : llvm::enumerate(inputs)) {
    auto &[name, v] = input;
    IntegerAttr bound;
    BlockArgument arg = body.getArgument(index);
    for (Operation *user : arg.getUsers())
      if (auto gather = dyn_cast<mir::GatherOp>(user))
        if (gather.getIndices() == arg && gather.getAxis() == 0)
          bound = rewriter.getI64IntegerAttr(
              gather.getTable().getType().getDimSize(0));
    // Ids a partition no longer feeds to a gather directly (a tensor-
    // parallel rank's vocabulary range) keep the whole table's bound.
    if (!bound)
      bound = func.getArgAttrOfType<IntegerAttr>(index, kIndexBoundAttr);
    lir::IOOp::create(rewriter, loc, lir::IOKind::Input, name, views[v].view,
                      nullptr, nullptr, nullptr, bound, /*layout=*/nullptr);
  }
  for (auto &[name, v] : params) {
    mir::ParamOp param = paramOps.lookup(name);
    DenseI64ArrayAttr sizes = param.getSourceSizesAttr();
    lir::IOOp::create(rewriter, loc, lir::IOKind::Param, name, views[v].view,
                      param.getSourcesAttr(), param.getConcatAxisAttr(), sizes,
                      nullptr, /*layout=*/nullptr, param.getSourceStartsAttr());
  }
  for (Kernel &k : kernels) {
    SmallVector<Value> ins, outs;
    for (int v : k.inViews)
      ins.push_back(views[v].view);
    for (int v : k.outViews)
      outs.push_back(views[v].view);
    StringRef name = k.op ? k.op->getName().stripDialect() : "copy";
    auto kernel = lir::KernelOp::create(rewriter, loc, name, ins, outs,
                                        /*library=*/nullptr, /*inplace=*/false,
                                        /*config=*/nullptr,
                                        /*dispatch=*/nullptr);
    SmallVector<Type> argTypes;
    for (Value v : k.inputs)
      argTypes.push_back(v.getType());
    Block *kb =
        rewriter.createBlock(&kernel.getBody(), {}, argTypes,
                             SmallVector<Location>(argTypes.size(), loc));
    IRMapping map;
    for (auto [v, arg] : llvm::zip(k.inputs, kb->getArguments()))
      map.map(v, arg);
    SmallVector<Value> results;
    // Constant operands are cloned into the body.
    if (k.op)
      for (Value operand : k.op->getOperands())
        if (!map.contains(operand))
          rewriter.clone(*operand.getDefiningOp(), map);
    if (auto reduce = dyn_cast_or_null<shard::AllReduceOp>(k.op)) {
      results.push_back(lir::AllReduceOp::create(
          rewriter, loc, reduce.getType(), map.lookup(reduce.getInput()),
          groupSizes.lookup(k.op)));
    } else if (auto gather = dyn_cast_or_null<shard::AllGatherOp>(k.op)) {
      results.push_back(lir::AllGatherOp::create(
          rewriter, loc, gather.getType(), map.lookup(gather.getInput()),
          gather.getGatherAxis().getSExtValue(), groupSizes.lookup(k.op)));
    } else if (k.op) {
      Operation *clone = rewriter.clone(*k.op, map);
      results = clone->getResults();
    } else if (k.constant) {
      results.push_back(
          rewriter.clone(*k.constant.getDefiningOp())->getResult(0));
    } else {
      results.push_back(map.lookup(k.inputs[0]));
    }
    lir::YieldOp::create(rewriter, loc, results);
    rewriter.setInsertionPointToEnd(block);
  }
  emitIO(lir::IOKind::Output, outputs);
  rewriter.eraseOp(func);
  return entry;
}

FailureOr<lir::EntryOp>
mlir::rlx::convertFuncToLIR(RewriterBase &rewriter, func::FuncOp func,
                            const MIRToLIROptions &options) {
  return FuncConverter(rewriter, func, options).run();
}

namespace {
struct ConvertMIRToLIRPass
    : public mlir::rlx::impl::ConvertMIRToLIRPassBase<ConvertMIRToLIRPass> {
  using Base::Base;

  /// Reads the module's `rlx.param_pages` into `opts`.
  LogicalResult readParamPages(MIRToLIROptions &opts) {
    FailureOr<ParamPages> pages = getParamPages(getOperation());
    if (failed(pages))
      return failure();
    if (pages->pageSize && pages->pageSize < alignment)
      return getOperation().emitError("convert-mir-to-lir: ")
             << kParamPagesAttr << " has page_size " << pages->pageSize
             << ", smaller than the alignment ("
             << static_cast<int64_t>(alignment) << ")";
    opts.pageSize = pages->pageSize;
    opts.pagePhases = std::move(pages->phases);
    return success();
  }

  void runOnOperation() override {
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      getOperation().emitError("convert-mir-to-lir: alignment must be a "
                               "power of two, got ")
          << alignment;
      return signalPassFailure();
    }
    if (expandFused) {
      RewritePatternSet patterns(&getContext());
      populateExpandFusedForCPUPatterns(patterns);
      FrozenRewritePatternSet frozen(std::move(patterns));
      for (func::FuncOp f : getOperation().getOps<func::FuncOp>())
        walkAndApplyPatterns(f, frozen);
    }
    {
      // f16 / bf16 RoPE, attention and GEMMs run in f32 on both back ends.
      RewritePatternSet patterns(&getContext());
      populateWidenHalfPrecisionPatterns(patterns);
      FrozenRewritePatternSet frozen(std::move(patterns));
      for (func::FuncOp f : getOperation().getOps<func::FuncOp>())
        walkAndApplyPatterns(f, frozen);
    }
    MIRToLIROptions opts;
    opts.alignment = alignment;
    if (failed(readParamPages(opts)))
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    SmallVector<func::FuncOp> funcs(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp f : funcs) {
      if (f.isDeclaration())
        continue;
      if (failed(convertFuncToLIR(rewriter, f, opts)))
        return signalPassFailure();
    }
    // The collectives now carry their group sizes: the grids are not needed
    // (and code generation has no lowering for them).
    for (shard::GridOp grid :
         llvm::make_early_inc_range(getOperation().getOps<shard::GridOp>()))
      if (SymbolTable::symbolKnownUseEmpty(grid, getOperation()))
        grid.erase();
  }
};
} // namespace
