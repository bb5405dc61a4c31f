//===- LIROps.cpp - LIR op implementations --------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Verifiers of the LIR ops. Comments `lir_<op>_cN` cite the numbered
// constraints of docs/Dialects/LIR.md.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Support/CheckedSize.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::lir;

//===----------------------------------------------------------------------===//
// Enum keywords (`arena`, `params`, `input`, ...)
//===----------------------------------------------------------------------===//

template <typename AttrT, typename SymbolizeFn>
static ParseResult parseEnumKeyword(OpAsmParser &parser, AttrT &attr,
                                    SymbolizeFn symbolize) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  auto value = symbolize(keyword);
  if (!value)
    return parser.emitError(loc, "unknown keyword '") << keyword << "'";
  attr = AttrT::get(parser.getContext(), *value);
  return success();
}

static ParseResult parseKeyword(OpAsmParser &parser, MemorySpaceAttr &attr) {
  return parseEnumKeyword(parser, attr,
                          [](StringRef s) { return symbolizeMemorySpace(s); });
}
static void printKeyword(OpAsmPrinter &p, Operation *, MemorySpaceAttr attr) {
  p << stringifyMemorySpace(attr.getValue());
}
static ParseResult parseKeyword(OpAsmParser &parser, IOKindAttr &attr) {
  return parseEnumKeyword(parser, attr,
                          [](StringRef s) { return symbolizeIOKind(s); });
}
static void printKeyword(OpAsmPrinter &p, Operation *, IOKindAttr attr) {
  p << stringifyIOKind(attr.getValue());
}
static ParseResult parseKeyword(OpAsmParser &parser,
                                CollectivePhaseAttr &attr) {
  return parseEnumKeyword(
      parser, attr, [](StringRef s) { return symbolizeCollectivePhase(s); });
}
static void printKeyword(OpAsmPrinter &p, Operation *,
                         CollectivePhaseAttr attr) {
  p << stringifyCollectivePhase(attr.getValue());
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

LogicalResult
LoweringConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           KernelStrategy strategy, ArrayRef<int64_t> tile,
                           ArrayRef<int64_t> workgroup) {
  // lir_config_c1: GEMM tiles are [rows, column vectors, K block] and
  // optionally the column blocks a K block is shared by (absent until
  // lir-select-strategy chooses them).
  bool gemm = strategy == KernelStrategy::GemmGenerated ||
              strategy == KernelStrategy::GluGemm;
  if (gemm && !tile.empty() &&
      ((tile.size() != 3 && tile.size() != 4) || tile[0] <= 0 || tile[1] <= 0 ||
       tile[2] < 0 || (tile.size() == 4 && tile[3] < 0)))
    return emitError() << "a " << stringifyKernelStrategy(strategy)
                       << " kernel needs tile = [rows > 0, column vectors > "
                          "0, K block >= 0] or [..., column blocks per K "
                          "block >= 0]";
  // lir_config_c3: a GLU tile pairs gate and up vectors, or takes one.
  if (strategy == KernelStrategy::GluGemm && !tile.empty() && tile[1] > 1 &&
      tile[1] % 2)
    return emitError() << "a glu_gemm tile holds 1 or an even number of "
                          "column vectors (gate and up in pairs), not "
                       << tile[1];
  // lir_config_c4: a blocked attention tile is [heads > 0, positions > 0].
  bool attention = strategy == KernelStrategy::AttentionBlocked;
  if (attention && !tile.empty() &&
      (tile.size() != 2 || tile[0] <= 0 || tile[1] <= 0))
    return emitError() << "an attention_blocked kernel needs tile = [heads "
                          "> 0, query positions > 0]";
  if (!gemm && !attention && !tile.empty())
    return emitError()
           << "tile sizes are only for generated GEMMs and blocked attention";
  // lir_config_c2: a workgroup has three positive sizes.
  if (!workgroup.empty() &&
      (workgroup.size() != 3 ||
       llvm::any_of(workgroup, [](int64_t v) { return v <= 0; })))
    return emitError() << "workgroup must be three positive sizes";
  return success();
}

LogicalResult BindingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  MemorySpace space, int64_t offset,
                                  int64_t range, int64_t viewOffset,
                                  int64_t viewBytes, bool writes) {
  // lir_binding_c1: the touched bytes lie inside the bound range.
  if (offset < 0 || range <= 0 || viewBytes < 0 || viewOffset < offset ||
      viewOffset + viewBytes > offset + range)
    return emitError() << "binding [" << offset << ", " << offset + range
                       << ") must be non-empty and contain the view ["
                       << viewOffset << ", " << viewOffset + viewBytes << ")";
  if (writes && space != MemorySpace::Arena)
    return emitError() << "only arena bindings may be written";
  return success();
}

LogicalResult DispatchAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   SymbolRefAttr entryPoint,
                                   ArrayRef<int64_t> workgroups,
                                   ArrayRef<BindingAttr> bindings) {
  // lir_dispatch_c1: three positive workgroup counts.
  if (workgroups.size() != 3 ||
      llvm::any_of(workgroups, [](int64_t v) { return v <= 0; }))
    return emitError() << "workgroups must be three positive counts";
  return success();
}

LogicalResult
ConstantPoolAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t bytes, ArrayAttr values,
                         ArrayRef<int64_t> offsets) {
  // lir_constant_pool_c1: one offset per dense constant, inside the pool.
  if (values.size() != offsets.size())
    return emitError() << "needs one offset per constant";
  for (auto [value, offset] : llvm::zip(values, offsets)) {
    auto dense = dyn_cast<DenseElementsAttr>(value);
    if (!dense)
      return emitError() << "constants must be dense elements";
    std::optional<int64_t> size = mir::getCheckedStorageBytes(dense.getType());
    if (!size)
      return emitError() << "constant of type " << dense.getType()
                         << " has a byte size past 2^63 - 1";
    if (offset < 0 || offset > bytes || *size > bytes - offset)
      return emitError() << "constant at " << offset << " (" << *size
                         << " bytes) exceeds the pool of " << bytes << " bytes";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// EntryOp
//===----------------------------------------------------------------------===//

/// lir_entry_c3: every all_reduce `start` kernel has a later `wait` kernel
/// on the same buffers, and no kernel in between touches their storage.
static LogicalResult verifyAsyncCollectives(EntryOp entry) {
  SmallVector<KernelOp> pending;
  for (KernelOp kernel : entry.getBlock().getOps<KernelOp>()) {
    std::optional<CollectivePhase> phase = getAllReducePhase(kernel);
    if (phase == CollectivePhase::Wait) {
      auto *start = llvm::find_if(pending, [&](KernelOp s) {
        return s->getOperands() == kernel->getOperands();
      });
      if (start == pending.end())
        return kernel.emitOpError(
            "waits for an all_reduce that no earlier 'start' kernel on the "
            "same buffers began");
      pending.erase(start);
      continue;
    }
    for (KernelOp start : pending)
      if (touchesAny(kernel, start->getOperands()))
        return kernel.emitOpError("touches a buffer of the all_reduce that "
                                  "kernel '")
               << start.getName() << "' started, before its wait";
    if (phase == CollectivePhase::Start)
      pending.push_back(kernel);
  }
  if (!pending.empty())
    return pending.front().emitOpError(
        "starts an all_reduce that no later 'wait' kernel completes");
  return success();
}

LogicalResult EntryOp::verify() {
  // lir_entry_c1: sizes are non-negative, the alignment a power of two.
  if (getArenaSizeAttr().getInt() < 0 || getParamSizeAttr().getInt() < 0)
    return emitOpError("arena_size and param_size must be non-negative");
  if (getAlignmentAttr().getInt() <= 0 || !llvm::isPowerOf2_64(getAlignment()))
    return emitOpError("alignment must be a power of two, got ")
           << getAlignment();
  // lir_entry_c2: manifest names are unique per role.
  llvm::StringSet<> seen[3];
  for (auto io : getBlock().getOps<IOOp>()) {
    auto &names = seen[static_cast<unsigned>(io.getKind())];
    if (!names.insert(io.getName()).second)
      return io.emitOpError("duplicate ") << stringifyIOKind(io.getKind())
                                          << " name '" << io.getName() << "'";
  }
  return verifyAsyncCollectives(*this);
}

std::optional<CollectivePhase> mlir::rlx::lir::getAllReducePhase(KernelOp k) {
  if (auto reduce = dyn_cast_or_null<AllReduceOp>(k.getComputeOp()))
    return reduce.getPhase();
  return std::nullopt;
}

namespace {
/// The storage a buffer uses: its allocation (or memory space) and bytes.
struct StorageRange {
  const void *root;
  int64_t begin, end;
};
} // namespace

static std::optional<StorageRange> storageRange(Value v) {
  if (auto alloc = v.getDefiningOp<AllocOp>())
    return StorageRange{alloc.getOperation(), 0,
                        mir::getStorageBytes(alloc.getType())};
  auto view = v.getDefiningOp<ViewOp>();
  if (!view)
    return std::nullopt;
  int64_t begin = view.getByteOffset();
  StorageRange r{nullptr, begin, begin + view.getExtentBytes()};
  ViewOp root = view.getRootView();
  if (Value src = root.getSource())
    r.root = src.getDefiningOp(); // An allocation, offsets relative to it.
  else
    r.root = reinterpret_cast<const void *>(
        static_cast<uintptr_t>(root.getSpace()) + 1);
  return r;
}

bool mlir::rlx::lir::mayAlias(Value a, Value b) {
  if (a == b)
    return true;
  std::optional<StorageRange> ra = storageRange(a), rb = storageRange(b);
  if (!ra || !rb)
    return true;
  return ra->root == rb->root && ra->begin < rb->end && rb->begin < ra->end;
}

bool mlir::rlx::lir::touchesAny(KernelOp kernel, ValueRange buffers) {
  return llvm::any_of(kernel->getOperands(), [&](Value v) {
    return llvm::any_of(buffers, [&](Value b) { return mayAlias(v, b); });
  });
}

/// Bytes of an unplanned buffer (INT64_MAX when too large: its verifier
/// refuses it).
static int64_t allocBytes(AllocOp alloc) {
  return mir::getStorageBytes(alloc.getType());
}

//===----------------------------------------------------------------------===//
// AllocOp
//===----------------------------------------------------------------------===//

LogicalResult AllocOp::verify() {
  // lir_alloc_c1: a contiguous buffer.
  if (!getType().getLayout().isIdentity())
    return emitOpError("must have the identity layout, got ") << getType();
  // lir_alloc_c2: a byte size that fits in 63 bits.
  if (!mir::getCheckedStorageBytes(getType()))
    return emitOpError("buffer ")
           << getType() << " has a byte size past 2^63 - 1";
  return success();
}

//===----------------------------------------------------------------------===//
// ViewOp
//===----------------------------------------------------------------------===//

/// Bytes from the first to one past the last element a view of `ty`
/// addresses, or nullopt when that overflows 2^63 - 1.
static std::optional<int64_t> checkedExtentBytes(MemRefType ty) {
  // ggml blocks: whole contiguous rows.
  if (isa<mir::QuantType>(ty.getElementType()))
    return mir::getCheckedStorageBytes(ty);
  // The dense size first: it bounds every factor below.
  std::optional<int64_t> dense = mir::getCheckedStorageBytes(ty);
  if (!dense)
    return std::nullopt;
  if (*dense == 0)
    return 0;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(ty.getStridesAndOffset(strides, offset)))
    return dense;
  uint64_t last = 0;
  for (auto [size, stride] : llvm::zip(ty.getShape(), strides)) {
    uint64_t step;
    if (ShapedType::isDynamic(stride) || stride < 0 ||
        __builtin_mul_overflow(static_cast<uint64_t>(size - 1),
                               static_cast<uint64_t>(stride), &step) ||
        __builtin_add_overflow(last, step, &last))
      return std::nullopt;
  }
  uint64_t bytes;
  if (__builtin_mul_overflow(
          last + 1, static_cast<uint64_t>(getElementBytes(ty.getElementType())),
          &bytes) ||
      bytes > ::rlx::kMaxByteSize)
    return std::nullopt;
  return static_cast<int64_t>(bytes);
}

int64_t ViewOp::getExtentBytes() {
  return checkedExtentBytes(getType()).value_or(
      static_cast<int64_t>(::rlx::kMaxByteSize));
}

ViewOp ViewOp::getRootView() {
  ViewOp view = *this;
  while (Value src = view.getSource()) {
    auto parent = src.getDefiningOp<ViewOp>();
    if (!parent)
      break;
    view = parent;
  }
  return view;
}

LogicalResult ViewOp::verify() {
  MemRefType ty = getType();
  int64_t elem = getElementBytes(ty.getElementType());
  int64_t offset0 = getByteOffsetAttr().getInt();
  // lir_view_c1: the offset is non-negative and element aligned.
  if (offset0 < 0 || offset0 % elem != 0)
    return emitOpError("byte_offset ")
           << offset0 << " must be a non-negative multiple of the "
           << "element size (" << elem << ")";
  if (getSpace() == MemorySpace::Constants)
    return emitOpError("views live in the arena or the params");
  // lir_view_c2: identity or strided layout with a zero offset. An empty
  // view (a zero-length dim) addresses nothing: MLIR folds its identity
  // layout to a constant, which has no strides.
  SmallVector<int64_t> strides;
  int64_t offset;
  bool empty = llvm::is_contained(ty.getShape(), 0);
  if (!(empty && ty.getLayout().isIdentity()) &&
      (failed(ty.getStridesAndOffset(strides, offset)) || offset != 0 ||
       llvm::any_of(strides, [](int64_t s) {
         return ShapedType::isDynamic(s) || s < 0;
       })))
    return emitOpError("layout must be static strides with a zero offset, "
                       "got ")
           << ty;
  // lir_view_c6: the extent and the end fit in 63 bits (they are compared
  // with sizes below; a wrapped sum would pass any bound).
  std::optional<int64_t> extent = checkedExtentBytes(ty);
  if (!extent)
    return emitOpError("view ") << ty << " has a byte size past 2^63 - 1";
  std::optional<uint64_t> checkedEnd =
      ::rlx::checkedAddBytes(static_cast<uint64_t>(offset0), *extent);
  if (!checkedEnd)
    return emitOpError("byte_offset ")
           << offset0 << " + " << *extent << " bytes overflows 2^63 - 1";
  int64_t end = static_cast<int64_t>(*checkedEnd);
  // lir_view_c5: an alias of an unplanned buffer (a lir.alloc at the root
  // of its sources) lies inside that buffer, its offset relative to it.
  Value root = getSource();
  while (root && root.getDefiningOp<ViewOp>())
    root = root.getDefiningOp<ViewOp>().getSource();
  if (auto alloc = root ? root.getDefiningOp<AllocOp>() : AllocOp()) {
    int64_t capacity = allocBytes(alloc);
    if (getSpace() != MemorySpace::Arena || end > capacity)
      return emitOpError("alias [")
             << getByteOffset() << ", " << end
             << ") must lie in the arena, inside its unplanned buffer of "
             << capacity << " bytes";
  } else {
    // lir_view_c3: the view lies inside its storage.
    auto entry = (*this)->getParentOfType<EntryOp>();
    int64_t capacity = getSpace() == MemorySpace::Arena ? entry.getArenaSize()
                                                        : entry.getParamSize();
    if (end > capacity)
      return emitOpError("view [")
             << getByteOffset() << ", " << end << ") exceeds the "
             << stringifyMemorySpace(getSpace()) << " of " << capacity
             << " bytes";
  }
  // lir_view_c4: an alias of a view lies inside it, in the same space.
  if (Value src = getSource()) {
    if (src.getDefiningOp<AllocOp>())
      return success();
    auto parent = src.getDefiningOp<ViewOp>();
    if (!parent)
      return emitOpError("source must be a lir.view or a lir.alloc");
    int64_t pEnd = static_cast<int64_t>(
        ::rlx::checkedAddBytes(parent.getByteOffset(), parent.getExtentBytes())
            .value_or(::rlx::kMaxByteSize));
    if (parent.getSpace() != getSpace() ||
        getByteOffset() < parent.getByteOffset() || end > pEnd)
      return emitOpError("alias [")
             << getByteOffset() << ", " << end
             << ") must lie inside its source [" << parent.getByteOffset()
             << ", " << pEnd << ") in the same space";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// IOOp
//===----------------------------------------------------------------------===//

bool mlir::rlx::lir::hasX8Form(Type t) {
  if (t.isF16() || t.isBF16())
    return true;
  auto quant = dyn_cast<mir::QuantType>(t);
  return quant && (quant.getKind() == mir::QuantKind::Q4_0 ||
                   quant.getKind() == mir::QuantKind::Q8_0 ||
                   quant.getKind() == mir::QuantKind::Q4_K ||
                   quant.getKind() == mir::QuantKind::Q5_K ||
                   quant.getKind() == mir::QuantKind::Q6_K);
}

LogicalResult IOOp::verify() {
  // lir_io_c1: the view is a lir.view in the right space (or, for inputs
  // and outputs, an unplanned arena buffer).
  MemorySpace expected =
      getKind() == IOKind::Param ? MemorySpace::Params : MemorySpace::Arena;
  auto view = getView().getDefiningOp<ViewOp>();
  if (!view && !getView().getDefiningOp<AllocOp>())
    return emitOpError("expects a lir.view or lir.alloc operand");
  if (view ? view.getSpace() != expected : expected != MemorySpace::Arena)
    return emitOpError() << stringifyIOKind(getKind()) << " '" << getName()
                         << "' must live in the "
                         << stringifyMemorySpace(expected);
  // lir_io_c2: derivation attributes come together, on params only.
  if (static_cast<bool>(getSources()) != static_cast<bool>(getConcatAxis()))
    return emitOpError("sources and concat_axis must be given together");
  if (getSources()) {
    if (getKind() != IOKind::Param)
      return emitOpError("only params can be derived");
    // A sliced param (source_starts) may take a range of a single source.
    if (getSources()->size() < (getSourceStarts() ? 1u : 2u))
      return emitOpError("a derived param needs at least two sources");
    int64_t axis = *getConcatAxis();
    auto viewTy = cast<MemRefType>(getView().getType());
    if (axis < 0 || axis >= viewTy.getRank())
      return emitOpError("concat_axis ") << axis << " is out of range";
    // lir_io_c3: the source sizes tile the concatenated dimension.
    if (auto sizes = getSourceSizes()) {
      int64_t total = 0;
      for (int64_t s : *sizes)
        total += s;
      if (sizes->size() != getSources()->size() ||
          total != viewTy.getDimSize(axis))
        return emitOpError("source_sizes must have one entry per source and "
                           "add up to dimension ")
               << axis << " (" << viewTy.getDimSize(axis) << ")";
    }
    // lir_io_c6: source_starts gives one non-negative start per source, and
    // comes with source_sizes.
    if (auto starts = getSourceStarts())
      if (!getSourceSizes() || starts->size() != getSources()->size() ||
          llvm::any_of(*starts, [](int64_t s) { return s < 0; }))
        return emitOpError("source_starts must give one non-negative start "
                           "per source, with source_sizes");
  } else if (getSourceSizes()) {
    return emitOpError("source_sizes needs sources");
  } else if (getSourceStarts()) {
    return emitOpError("source_starts needs sources");
  }
  // lir_io_c5: a packed layout is for f32 [N, K] params with N a multiple of
  // 16 (of every source, for a param concatenated along N).
  if (getLayout() && *getLayout() == ParamLayout::NK16) {
    auto ty = cast<MemRefType>(getView().getType());
    bool ok = getKind() == IOKind::Param && ty.getRank() == 2 &&
              ty.getElementType().isF32() && ty.getDimSize(0) % 16 == 0;
    // A range of a single source (source_starts) is packed whole, along
    // either axis.
    bool oneRange = getSourceStarts() && getSources()->size() == 1;
    if (ok && getSources() && !oneRange)
      ok = *getConcatAxis() == 0 && getSourceSizes() &&
           llvm::all_of(*getSourceSizes(),
                        [](int64_t s) { return s % 16 == 0; });
    if (!ok)
      return emitOpError("layout nk16 needs an f32 [N, K] param with N (and "
                         "every concatenated source's N) a multiple of 16");
  }
  // lir_io_c7: the x8 layout is for q4_0, q8_0, q4_K, q5_K, q6_K, f16 and bf16
  // [N, K] params with N (and every concatenated source's N) a multiple of 8,
  // concatenated along N.
  if (getLayout() && *getLayout() == ParamLayout::X8) {
    auto ty = cast<MemRefType>(getView().getType());
    bool ok = getKind() == IOKind::Param && ty.getRank() == 2 &&
              hasX8Form(ty.getElementType()) && ty.getDimSize(0) % 8 == 0;
    if (ok && getSources())
      ok =
          *getConcatAxis() == 0 && getSourceSizes() &&
          llvm::all_of(*getSourceSizes(), [](int64_t s) { return s % 8 == 0; });
    if (!ok)
      return emitOpError("layout x8 needs a q4_0, q8_0, q4_K, q5_K, q6_K, f16 "
                         "or bf16 [N, K] param "
                         "with N (and every source's N, concatenated along "
                         "N) a multiple of 8");
  }
  // lir_io_c4: index bounds are for integer inputs.
  if (getIndexBound() &&
      (getKind() != IOKind::Input ||
       !isa<IntegerType>(
           cast<MemRefType>(getView().getType()).getElementType()) ||
       *getIndexBound() <= 0))
    return emitOpError("index_bound must be positive and set on an integer "
                       "input");
  return success();
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

Operation *KernelOp::getComputeOp() {
  Operation *compute = nullptr;
  for (Operation &op : getBody().front().without_terminator())
    if (!op.hasTrait<OpTrait::ConstantLike>())
      compute = &op;
  return compute;
}

static RankedTensorType tensorOf(Type memref) {
  auto ty = cast<MemRefType>(memref);
  return RankedTensorType::get(ty.getShape(), ty.getElementType());
}

LogicalResult KernelOp::verify() {
  Block &body = getBody().front();
  // lir_kernel_c1: block arguments are the tensor values of `ins`.
  if (body.getNumArguments() != getIns().size())
    return emitOpError("expects one block argument per input, got ")
           << body.getNumArguments() << " for " << getIns().size();
  for (auto [arg, in] : llvm::zip(body.getArguments(), getIns()))
    if (arg.getType() != tensorOf(in.getType()))
      return emitOpError("block argument type ")
             << arg.getType() << " does not match input " << in.getType();
  // lir_kernel_c2: the yield matches `outs`.
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != getOuts().size())
    return emitOpError("yields ") << yield.getValues().size() << " values for "
                                  << getOuts().size() << " outputs";
  for (auto [v, out] : llvm::zip(yield.getValues(), getOuts()))
    if (v.getType() != tensorOf(out.getType()))
      return emitOpError("yielded type ")
             << v.getType() << " does not match output " << out.getType();
  // lir_kernel_c3: operands are views of the plan (or unplanned buffers).
  for (Value v : getOperands())
    if (!v.getDefiningOp<ViewOp>() && !v.getDefiningOp<AllocOp>())
      return emitOpError("operands must be lir.view or lir.alloc results");
  return success();
}

#define GET_OP_CLASSES
#include "RLX/Dialect/LIR/IR/LIROps.cpp.inc"

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// lir_collective_c1: the group has at least one rank and the elements are
/// f32 (what the runtime's MPI calls move).
static LogicalResult verifyCollective(Operation *op, RankedTensorType type,
                                      int64_t groupSize) {
  if (groupSize < 1)
    return op->emitOpError("group_size must be at least 1, got ") << groupSize;
  if (!isCollectiveElementType(type.getElementType()))
    return op->emitOpError("moves f32, f16 or bf16 tensors only, got ") << type;
  return success();
}

LogicalResult AllReduceOp::verify() {
  return verifyCollective(*this, cast<RankedTensorType>(getInput().getType()),
                          getGroupSizeAttr().getInt());
}

LogicalResult AllGatherOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  int64_t groupSize = getGroupSizeAttr().getInt();
  if (failed(verifyCollective(*this, in, groupSize)))
    return failure();
  int64_t axis = getAxisAttr().getInt();
  // lir_collective_c2: the axis is in range and the result is the inputs of
  // the group concatenated along it.
  if (axis < 0 || axis >= in.getRank())
    return emitOpError("axis ") << axis << " is out of range for " << in;
  SmallVector<int64_t> expected(in.getShape());
  expected[axis] *= groupSize;
  if (out.getElementType() != in.getElementType() ||
      out.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result ")
           << out << " is not " << groupSize << " inputs " << in
           << " concatenated along axis " << axis;
  return success();
}
