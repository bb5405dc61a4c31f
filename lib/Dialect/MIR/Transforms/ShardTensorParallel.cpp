//===- ShardTensorParallel.cpp - Megatron-style MIR partitioning ----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// mir-shard-tensor-parallel: the program of one rank of a tensor-parallel
// decoder layer. Attention blocks keep whole query heads (and whole KV groups,
// or a replicated KV head) per rank and project out with their columns of
// w_o; MLPs keep a slice of the intermediate channels and project down with
// their columns of the down weight. Each block's partial result is summed by
// one shard.all_reduce; biases and residuals are added once, after it.
// Embedding lookups and the LM head are split over the vocabulary: each rank
// holds a contiguous range of the table's rows, looks up the ids in its range
// (zero rows for the others; one shard.all_reduce sums the ranks' rows) and
// computes the logits of its range (one shard.all_gather joins them).
//
// The function is analysed in full before anything is rewritten, so a refused
// function is left as it was. See docs/Distributed.md.
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/Common/RLXDialect.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Transforms/Transforms.h"
#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRSHARDTENSORPARALLELPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;

namespace {

//===----------------------------------------------------------------------===//
// What is partitioned
//===----------------------------------------------------------------------===//

/// How an attention's heads split over the ranks.
struct HeadSplit {
  int64_t headsPerRank = 0;
  int64_t kvHeadsPerRank = 0;
  /// Number of ranks that share one KV head (1 when KV heads are split).
  int64_t kvReplication = 1;

  /// The first KV head of rank `r`.
  int64_t firstKvHead(int64_t r) const {
    return kvReplication > 1 ? r / kvReplication : r * kvHeadsPerRank;
  }
  /// Rank `r`'s rows of a `[q | k | v]` weight of `heads` query and
  /// `kvHeads` KV heads of `headDim`: its Q rows, K rows and V rows.
  SmallVector<std::pair<int64_t, int64_t>, 3>
  qkvRows(int64_t r, int64_t heads, int64_t kvHeads, int64_t headDim) const {
    int64_t q0 = r * headsPerRank, kv0 = firstKvHead(r);
    return {{q0 * headDim, headsPerRank * headDim},
            {(heads + kv0) * headDim, kvHeadsPerRank * headDim},
            {(heads + kvHeads + kv0) * headDim, kvHeadsPerRank * headDim}};
  }
};

/// An attention block and the head ranges each rank takes.
struct AttentionPlan : HeadSplit {
  mir::AttentionBlockOp op;
};

/// An attention whose projections are explicit (a decode step's, which
/// reads a KV cache): one QKV projection `qkv` whose result is sliced into
/// q, k and v, per-channel ops (head norms, RoPE, conversions, the cache
/// concatenations) up to one `mir.attention`, then the output projection
/// `out`. `chain` holds the ops strictly between `qkv` and `op` in block
/// order; `kvSide` those whose results carry keys or values.
struct CachedAttentionPlan : HeadSplit {
  mir::AttentionOp op;
  Operation *qkv = nullptr;
  Operation *out = nullptr;
  SmallVector<Operation *> chain;
  llvm::SmallPtrSet<Operation *, 8> kvSide;
  /// The cache inputs: function arguments concatenated before the new keys
  /// and values.
  SmallVector<BlockArgument> pasts;
};

/// An MLP: `up` (gate/up or up projection, a matmul or fused_matmul), the
/// optional `mir.fused_glu` and `down` (a matmul or fused_matmul).
struct MlpPlan {
  Operation *up;
  mir::FusedGluOp glu; // null for an activation MLP
  Operation *down;
  /// The intermediate size (the glu's output or up's output channels).
  int64_t intermediate;
};

/// A vocabulary-parallel embedding lookup: `mir.gather` along axis 0 of a
/// parameter table, each rank holding `rowsPerRank` consecutive rows.
struct EmbeddingPlan {
  mir::GatherOp op;
  int64_t rowsPerRank;
};

/// A vocabulary-parallel output projection (the LM head): a transposed
/// matmul / fused_matmul of a parameter, each rank computing the outputs of
/// `rowsPerRank` consecutive weight rows.
struct HeadPlan {
  Operation *op;
  int64_t rowsPerRank;
  /// With local logits: the ops between the head and the function's return
  /// (elementwise, e.g. a final softcap), which take the rank's slice.
  SmallVector<Operation *> localUsers;
};

} // namespace

/// The weight and bias of a matmul or fused_matmul (bias null for a matmul).
static std::pair<Value, Value> weightAndBias(Operation *op) {
  if (auto mm = dyn_cast<mir::MatmulOp>(op))
    return {mm.getRhs(), Value()};
  auto fm = cast<mir::FusedMatmulOp>(op);
  return {fm.getWeight(), fm.getBias()};
}

/// True for a `mir.matmul` / `mir.fused_matmul` with `transpose_rhs` (HF
/// layout) and a static 2-D weight.
static bool isLinear(Operation *op) {
  if (!op)
    return false;
  bool transposed = false;
  if (auto mm = dyn_cast<mir::MatmulOp>(op)) {
    if (mm.getTransposeLhs())
      return false;
    transposed = mm.getTransposeRhs();
  } else if (auto fm = dyn_cast<mir::FusedMatmulOp>(op)) {
    transposed = fm.getTransposeRhs();
  } else {
    return false;
  }
  auto w = cast<RankedTensorType>(weightAndBias(op).first.getType());
  return transposed && w.hasStaticShape();
}

static Activation activationOf(Operation *op) {
  if (auto fm = dyn_cast<mir::FusedMatmulOp>(op))
    return fm.getActivation();
  return Activation::None;
}

static bool hasResidual(Operation *op) {
  auto fm = dyn_cast<mir::FusedMatmulOp>(op);
  return fm && fm.getResidual();
}

/// How `heads` query heads and `kvHeads` KV heads of `op` split over
/// `ranks`.
static FailureOr<HeadSplit> splitHeads(Operation *op, int64_t heads,
                                       int64_t kvHeads, int64_t ranks) {
  if (heads % ranks != 0)
    return op->emitError() << "tensor parallelism over " << ranks
                           << " ranks needs num_heads (" << heads
                           << ") divisible by the ranks";
  if (kvHeads % ranks == 0)
    return HeadSplit{heads / ranks, kvHeads / ranks, 1};
  // Fewer KV heads than ranks: each rank keeps the one KV head its query
  // heads read (query head h reads KV head h / (heads / kvHeads)).
  if (ranks % kvHeads == 0)
    return HeadSplit{heads / ranks, 1, ranks / kvHeads};
  return op->emitError() << "tensor parallelism over " << ranks
                         << " ranks needs num_kv_heads (" << kvHeads
                         << ") to divide or be divisible by the ranks";
}

/// Checks that the `width` columns each rank takes of the stored weight
/// `w` (a row-parallel projection's) are whole ggml blocks.
static LogicalResult checkBlockColumns(Operation *op, Value w, int64_t width,
                                       StringRef what) {
  auto quant = dyn_cast<mir::QuantType>(MIRBuilder::typeOf(w).getElementType());
  if (!quant || width % quant.getBlockElements() == 0)
    return success();
  return op->emitError() << "tensor parallelism gives each rank " << width
                         << " columns of the " << what << " weight, which is "
                         << "kept in blocks of " << quant.getBlockElements()
                         << " (" << quant << "): a rank's columns must be "
                         << "whole blocks";
}

/// Checks that `op`'s head counts split over `ranks`.
static FailureOr<AttentionPlan> planAttention(mir::AttentionBlockOp op,
                                              int64_t ranks) {
  FailureOr<HeadSplit> split =
      splitHeads(op, op.getNumHeads(), op.getNumKvHeads(), ranks);
  if (failed(split))
    return failure();
  if (!cast<RankedTensorType>(op.getWQkv().getType()).hasStaticShape() ||
      !cast<RankedTensorType>(op.getWO().getType()).hasStaticShape())
    return op.emitError("tensor parallelism needs static QKV and output "
                        "weights");
  if (failed(checkBlockColumns(op, op.getWO(),
                               split->headsPerRank * op.getHeadDim(),
                               "attention output")))
    return failure();
  AttentionPlan plan;
  static_cast<HeadSplit &>(plan) = *split;
  plan.op = op;
  return plan;
}

/// Checks the MLP whose down projection consumes `mid` (a fused_glu or an
/// activated fused_matmul).
static FailureOr<MlpPlan> planMlp(Operation *mid, int64_t ranks) {
  MlpPlan plan{};
  if (auto glu = dyn_cast<mir::FusedGluOp>(mid)) {
    plan.glu = glu;
    plan.up = glu.getGateUp().getDefiningOp();
    if (!isLinear(plan.up) || hasResidual(plan.up) ||
        activationOf(plan.up) != Activation::None ||
        !plan.up->getResult(0).hasOneUse())
      return glu.emitError("tensor parallelism expects the gate/up input of "
                           "mir.fused_glu to be one transposed matmul (no "
                           "activation, no residual) used only by it");
  } else {
    plan.up = mid;
  }
  Value out = mid->getResult(0);
  if (!out.hasOneUse() || !isLinear(*out.getUsers().begin()) ||
      activationOf(*out.getUsers().begin()) != Activation::None)
    return mid->emitError("tensor parallelism expects the MLP's intermediate "
                          "to be used only by one transposed down projection "
                          "(mir.matmul or mir.fused_matmul without "
                          "activation)");
  plan.down = *out.getUsers().begin();
  plan.intermediate = cast<RankedTensorType>(out.getType()).getShape().back();
  if (ShapedType::isDynamic(plan.intermediate) ||
      plan.intermediate % ranks != 0)
    return mid->emitError() << "tensor parallelism over " << ranks
                            << " ranks needs the MLP intermediate size ("
                            << plan.intermediate << ") divisible by the ranks";
  if (failed(checkBlockColumns(plan.down, weightAndBias(plan.down).first,
                               plan.intermediate / ranks, "down projection")))
    return failure();
  return plan;
}

/// Checks that the lookup `op` of a parameter table splits over `ranks`:
/// none when its vocabulary does not divide by them (every rank keeps the
/// whole table: a replicated lookup needs no collective).
static FailureOr<std::optional<EmbeddingPlan>> planEmbedding(mir::GatherOp op,
                                                             int64_t ranks) {
  auto table = cast<RankedTensorType>(op.getTable().getType());
  // Rows of a table kept as stored (f16, bf16, ggml blocks) are whole
  // blocks: the rank's range is a row range like any other.
  if (op.getAxis() != 0 || table.getRank() != 2 || !table.hasStaticShape() ||
      !(isa<FloatType>(table.getElementType()) ||
        mir::isLowPrecisionWeightType(table.getElementType())))
    return op.emitError("tensor parallelism splits an embedding over the "
                        "vocabulary only as a mir.gather along axis 0 of a "
                        "static 2-D float or stored-weight table");
  int64_t vocab = table.getDimSize(0);
  if (vocab % ranks != 0)
    return std::optional<EmbeddingPlan>();
  return std::optional<EmbeddingPlan>(EmbeddingPlan{op, vocab / ranks});
}

/// Checks that the projection `op` (of a parameter, outside any attention
/// block or MLP) splits over `ranks` as an LM head: none when its vocabulary
/// does not divide by them (every rank computes every logit: no
/// collective).
static FailureOr<std::optional<HeadPlan>> planHead(Operation *op,
                                                   int64_t ranks) {
  if (!isLinear(op) || hasResidual(op))
    return op->emitError(
        "tensor parallelism does not partition this projection: not part of "
        "an attention block or MLP, and not an LM head (a transposed "
        "mir.matmul or mir.fused_matmul without residual)");
  int64_t vocab =
      cast<RankedTensorType>(weightAndBias(op).first.getType()).getDimSize(0);
  if (vocab % ranks != 0)
    return std::optional<HeadPlan>();
  return std::optional<HeadPlan>(HeadPlan{op, vocab / ranks, {}});
}

/// With local logits, the ops that take the LM head `head`'s result on the
/// way to the function's return, in order: elementwise ops whose other
/// operands are scalars (a size-1 tensor of any rank), such as Gemma's final
/// softcap. Anything else needs the whole vocabulary: an error naming it.
static FailureOr<SmallVector<Operation *>> localLogitUsers(Operation *head) {
  SmallVector<Operation *> chain;
  llvm::SmallPtrSet<Value, 8> local;
  SmallVector<Value> work = {head->getResult(0)};
  local.insert(head->getResult(0));
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (isa<func::ReturnOp>(user) || llvm::is_contained(chain, user))
        continue;
      bool elementwise =
          (isa<mir::ElementwiseOp>(user) || isFusableElementwiseOp(user)) &&
          user->getNumResults() == 1;
      bool scalarsBeside = llvm::all_of(user->getOperands(), [&](Value o) {
        auto t = dyn_cast<RankedTensorType>(o.getType());
        return local.contains(o) ||
               (t && t.hasStaticShape() && t.getNumElements() == 1);
      });
      if (!elementwise || !scalarsBeside)
        return user->emitError()
               << "local-logits: the LM head's logits feed '" << user->getName()
               << "', which needs the whole vocabulary; only elementwise "
                  "ops with scalar operands may follow the head (or "
                  "compile without local-logits)";
      chain.push_back(user);
      local.insert(user->getResult(0));
      work.push_back(user->getResult(0));
    }
  }
  return chain;
}

/// Checks an attention with explicit projections (see CachedAttentionPlan).
static FailureOr<CachedAttentionPlan>
planCachedAttention(mir::AttentionOp op, const MIRTensorParallelOptions &opts) {
  int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads(),
          hd = op.getHeadDim();
  FailureOr<HeadSplit> split = splitHeads(op, heads, kvHeads, opts.ranks);
  if (failed(split))
    return failure();
  if (opts.emulate)
    return op.emitError("tensor parallelism cannot emulate an attention with "
                        "explicit projections (a decode step's): each rank "
                        "keeps its own KV cache");
  CachedAttentionPlan plan;
  static_cast<HeadSplit &>(plan) = *split;
  plan.op = op;
  auto refuse = [&](Operation *at, const Twine &why) {
    at->emitError() << "tensor parallelism cannot partition this attention: "
                    << why;
    return failure();
  };

  // Back from q, k and v to the slices of one QKV projection.
  llvm::SetVector<Operation *> chain;
  SmallVector<std::pair<Value, bool>> work = {
      {op.getQuery(), false}, {op.getKey(), true}, {op.getValue(), true}};
  SmallVector<mir::SliceOp> slices;
  while (!work.empty()) {
    auto [v, kv] = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def)
      return refuse(op, "a query, key or value is a function argument");
    auto type = MIRBuilder::typeOf(v);
    if (type.getRank() != 3 && type.getRank() != 4)
      return refuse(def, "expected [B, T, heads*head_dim] or [B, T, heads, "
                         "head_dim] values between the QKV projection and "
                         "the attention");
    if (!chain.insert(def))
      continue;
    if (kv)
      plan.kvSide.insert(def);
    if (auto slice = dyn_cast<mir::SliceOp>(def)) {
      if (slice.getAxis() != type.getRank() - 1 || slice.getStep() != 1)
        return refuse(def, "the QKV projection is not sliced along channels");
      slices.push_back(slice);
      continue;
    }
    if (auto concat = dyn_cast<mir::ConcatOp>(def)) {
      auto past = dyn_cast<BlockArgument>(concat.getOperand(0));
      if (concat.getNumOperands() != 2 || concat.getAxis() != 1 || !past ||
          !past.hasOneUse() || !kv)
        return refuse(def, "a KV cache must be a function argument "
                           "concatenated once, along the tokens, before the "
                           "new keys or values");
      plan.pasts.push_back(past);
      work.push_back({concat.getOperand(1), kv});
      continue;
    }
    if (!isa<mir::RopeOp, mir::ReshapeOp, mir::RmsNormOp, mir::CastOp>(def))
      return refuse(def, "'" + def->getName().getStringRef() +
                             "' between the QKV projection and mir.attention "
                             "is not partitioned");
    if (auto norm = dyn_cast<mir::RmsNormOp>(def))
      if (MIRBuilder::typeOf(norm.getWeight()).getNumElements() != hd)
        return refuse(def, "a norm between the QKV projection and the "
                           "attention must be per head (a [head_dim] weight)");
    work.push_back({def->getOperand(0), kv});
  }
  if (slices.size() != 3 || slices[0].getInput() != slices[1].getInput() ||
      slices[0].getInput() != slices[2].getInput())
    return refuse(op, "q, k and v must be three slices of one projection");
  Value qkv = slices[0].getInput();
  plan.qkv = qkv.getDefiningOp();
  if (!isLinear(plan.qkv) || hasResidual(plan.qkv) ||
      activationOf(plan.qkv) != Activation::None ||
      !weightAndBias(plan.qkv).first.getDefiningOp<mir::ParamOp>())
    return refuse(op, "the QKV projection must be a transposed matmul of a "
                      "parameter (no activation or residual)");
  int64_t qDim = heads * hd, kvDim = kvHeads * hd;
  for (mir::SliceOp slice : slices) {
    int64_t start = slice.getStart(), size = slice.getSize();
    bool ok = plan.kvSide.contains(slice)
                  ? size == kvDim && (start == qDim || start == qDim + kvDim)
                  : start == 0 && size == qDim;
    if (!ok)
      return refuse(slice, "the Q, K and V slices must be the projection's "
                           "column ranges [0, " +
                               Twine(qDim) + "), [" + Twine(qDim) + ", " +
                               Twine(qDim + kvDim) + ") and [" +
                               Twine(qDim + kvDim) + ", " +
                               Twine(qDim + 2 * kvDim) + ")");
  }
  for (Operation *user : qkv.getUsers())
    if (!chain.contains(user))
      return refuse(user, "the QKV projection has a use outside q, k and v");
  // Every value in between stays in the chain, but for the caches returned.
  for (Operation *inner : chain)
    for (Operation *user : inner->getUsers())
      if (!chain.contains(user) && user != op &&
          !(isa<mir::ConcatOp>(inner) && isa<func::ReturnOp>(user)))
        return refuse(user, "a value between the QKV projection and the "
                            "attention is used elsewhere");
  Value result = op.getResult();
  if (!result.hasOneUse() || !isLinear(*result.getUsers().begin()) ||
      activationOf(*result.getUsers().begin()) != Activation::None)
    return refuse(op, "the attention's result must feed one transposed "
                      "output projection");
  plan.out = *result.getUsers().begin();
  if (failed(checkBlockColumns(plan.out, weightAndBias(plan.out).first,
                               plan.headsPerRank * hd, "attention output")))
    return failure();
  plan.chain = llvm::to_vector(chain);
  llvm::sort(plan.chain,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return plan;
}

//===----------------------------------------------------------------------===//
// Per-rank weights
//===----------------------------------------------------------------------===//

/// `size` entries of `w` along `axis` from `start`. When `w` is a derived
/// parameter concatenated along `axis` and the range lies in one source, the
/// slice reads that source parameter, so that what a rank reads is named by
/// checkpoint tensor.
static Value sliceWeight(MIRBuilder &mb, Value w, int64_t axis, int64_t start,
                         int64_t size) {
  auto type = MIRBuilder::typeOf(w);
  if (start == 0 && size == type.getDimSize(axis))
    return w;
  auto param = w.getDefiningOp<mir::ParamOp>();
  if (param && param.getSources() && param.getSourceSizes() &&
      static_cast<int64_t>(*param.getConcatAxis()) == axis) {
    int64_t offset = 0;
    for (auto [name, srcSize] :
         llvm::zip(param.getSources()->getAsValueRange<StringAttr>(),
                   *param.getSourceSizes())) {
      if (start >= offset && start + size <= offset + srcSize) {
        SmallVector<int64_t> shape(type.getShape());
        shape[axis] = srcSize;
        Value src =
            mb.create("mir.param", MIRBuilder::withShape(w, shape), {},
                      {mb.attr("name", mb.builder().getStringAttr(name))})
                ->getResult(0);
        if (size == srcSize)
          return src;
        return mb.slice(src, axis, start - offset, size);
      }
      offset += srcSize;
    }
  }
  return mb.slice(w, axis, start, size);
}

/// Rows `[start, start + size)` of each `(start, size)` range, concatenated.
static Value gatherRows(MIRBuilder &mb, Value w,
                        ArrayRef<std::pair<int64_t, int64_t>> ranges) {
  SmallVector<Value> parts;
  for (auto [start, size] : ranges)
    parts.push_back(sliceWeight(mb, w, 0, start, size));
  return parts.size() == 1 ? parts.front() : mb.concat(parts, 0);
}

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

namespace {

/// Builds each rank's share of a block and sums the shares.
struct Partitioner {
  const MIRTensorParallelOptions &options;

  SmallVector<int64_t> ranksToBuild() const {
    if (!options.emulate)
      return {options.rank};
    return llvm::to_vector(llvm::seq<int64_t>(0, options.ranks));
  }

  /// The sum over ranks of `partials`: a shard.all_reduce of this rank's
  /// partial, or (emulating) the mir.add of every rank's.
  Value reduce(MIRBuilder &mb, ArrayRef<Value> partials) const {
    if (!options.emulate)
      return shard::AllReduceOp::create(
                 mb.builder(), mb.getLoc(), partials.front(), options.grid,
                 ArrayRef<shard::GridAxis>{0}, shard::ReductionKind::Sum)
          .getResult();
    Value sum = partials.front();
    for (Value p : partials.drop_front())
      sum = mb.add(sum, p);
    return sum;
  }

  /// The concatenation over ranks of `partials` along `axis` into `type`: a
  /// shard.all_gather of this rank's partial, or (emulating) the mir.concat
  /// of every rank's.
  Value gather(MIRBuilder &mb, ArrayRef<Value> partials, int64_t axis,
               Type type) const {
    if (!options.emulate)
      return shard::AllGatherOp::create(mb.builder(), mb.getLoc(), type,
                                        options.grid, ArrayRef<int16_t>{0},
                                        partials.front(), APInt(64, axis))
          .getResult();
    return partials.size() == 1 ? partials.front() : mb.concat(partials, axis);
  }

  /// Replaces the row-parallel projection `proj` (a matmul or fused_matmul
  /// whose rank shares are `partials`) by their sum over the ranks, then its
  /// bias and residual, each added once.
  void finishRowParallel(MIRBuilder &mb, Operation *proj,
                         ArrayRef<Value> partials) const {
    Value sum = reduce(mb, partials);
    if (Value bias = weightAndBias(proj).second)
      sum = mb.add(sum, bias);
    if (auto fm = dyn_cast<mir::FusedMatmulOp>(proj))
      if (Value residual = fm.getResidual())
        sum = mb.add(sum, residual);
    proj->getResult(0).replaceAllUsesWith(sum);
  }

  void rewriteEmbedding(const EmbeddingPlan &plan) const {
    mir::GatherOp op = plan.op;
    OpBuilder b(op);
    MIRBuilder mb(b, op.getLoc());
    Value ids = op.getIndices();
    // Ids given as an input keep the whole vocabulary as their bound: the
    // runtime still rejects an id outside it, which would otherwise look up
    // a zero row on every rank.
    if (auto arg = dyn_cast<BlockArgument>(ids))
      if (auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
        fn.setArgAttr(arg.getArgNumber(), kIndexBoundAttr,
                      b.getI64IntegerAttr(
                          MIRBuilder::typeOf(op.getTable()).getDimSize(0)));
    auto idsType = MIRBuilder::typeOf(ids);
    Type idType = idsType.getElementType();
    // The ids as a column [..., 1], so that the mask broadcasts over rows.
    SmallVector<int64_t> column(idsType.getShape());
    column.push_back(1);
    Type rowType = MIRBuilder::typeOf(op.getResult()).getElementType();
    Type f32 = Float32Type::get(op.getContext());
    Value zero = mb.scalar(0.0, rowType);
    int64_t rows = plan.rowsPerRank;
    Value first = mb.scalar(0, idType), last = mb.scalar(rows - 1, idType),
          bound = mb.scalar(rows, idType);
    SmallVector<Value> partials;
    for (int64_t r : ranksToBuild()) {
      int64_t start = r * rows;
      Value local = mb.sub(ids, mb.scalar(start, idType));
      // The rank looks up the clamped id and zeroes the rows of ids outside
      // its range [0, rows), so its gather never reads outside its slice.
      Value clamped =
          mb.binary("mir.min", mb.binary("mir.max", local, first), last);
      Value found =
          mb.gather(sliceWeight(mb, op.getTable(), 0, start, rows), clamped);
      Value col = mb.reshape(local, column);
      Value ge = mb.compare(col, first, CmpPredicate::GE);
      Value lt = mb.compare(col, bound, CmpPredicate::LT);
      Value inRange = mb.select(ge, lt, ge);
      Value partial = mb.select(inRange, found, zero);
      // The collectives move f32: rows of an f16 / bf16 table widen for the
      // sum (exact: one rank contributes each row) and narrow back.
      if (rowType != f32)
        partial = mb.convert(partial, f32);
      partials.push_back(partial);
    }
    Value sum = reduce(mb, partials);
    if (rowType != f32)
      sum = mb.convert(sum, rowType);
    op.getResult().replaceAllUsesWith(sum);
    op.erase();
  }

  void rewriteHead(const HeadPlan &plan) const {
    Operation *op = plan.op;
    OpBuilder b(op);
    MIRBuilder mb(b, op->getLoc());
    auto [w, bias] = weightAndBias(op);
    Value x = op->getOperand(0);
    Type type = op->getResult(0).getType();
    int64_t axis = cast<RankedTensorType>(type).getRank() - 1;
    int64_t rows = plan.rowsPerRank;
    SmallVector<Value> partials;
    for (int64_t r : ranksToBuild()) {
      int64_t start = r * rows;
      Value wr = sliceWeight(mb, w, 0, start, rows);
      if (isa<mir::MatmulOp>(op))
        partials.push_back(mb.matmul(x, wr));
      else
        partials.push_back(mb.fusedMatmul(
            x, wr, bias ? sliceWeight(mb, bias, 0, start, rows) : Value(),
            Value(), activationOf(op)));
    }
    // Local logits: the rank's slice goes on to the return, the ops on the
    // way taking its shape.
    if (options.localLogits) {
      op->getResult(0).replaceAllUsesWith(partials.front());
      op->erase();
      for (Operation *user : plan.localUsers) {
        auto t = cast<RankedTensorType>(user->getResult(0).getType());
        SmallVector<int64_t> shape(t.getShape());
        shape.back() = rows;
        user->getResult(0).setType(t.clone(shape));
      }
      return;
    }
    op->getResult(0).replaceAllUsesWith(gather(mb, partials, axis, type));
    op->erase();
  }

  void rewriteAttention(const AttentionPlan &plan) const {
    mir::AttentionBlockOp op = plan.op;
    OpBuilder b(op);
    MIRBuilder mb(b, op.getLoc());
    int64_t hd = op.getHeadDim(), heads = op.getNumHeads(),
            kvHeads = op.getNumKvHeads();
    SmallVector<Value> partials;
    for (int64_t r : ranksToBuild()) {
      int64_t q0 = r * plan.headsPerRank;
      auto rows = plan.qkvRows(r, heads, kvHeads, hd);
      auto block = cast<mir::AttentionBlockOp>(b.clone(*op));
      block.getWQkvMutable().assign(gatherRows(mb, op.getWQkv(), rows));
      if (Value bias = op.getQkvBias())
        block.getQkvBiasMutable().assign(gatherRows(mb, bias, rows));
      block.getWOMutable().assign(
          sliceWeight(mb, op.getWO(), 1, q0 * hd, plan.headsPerRank * hd));
      block.getOutBiasMutable().clear();
      block.setNumHeads(plan.headsPerRank);
      block.setNumKvHeads(plan.kvHeadsPerRank);
      // The clone was created before the slices; keep it after them.
      block->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
      partials.push_back(block.getResult());
    }
    Value sum = reduce(mb, partials);
    if (Value bias = op.getOutBias())
      sum = mb.add(sum, bias);
    op.getResult().replaceAllUsesWith(sum);
    op.erase();
  }

  /// `type` with its head dimension (the channels of `[B, T, C]`, the heads
  /// of `[B, T, heads, head_dim]`) scaled by `keep / of`.
  static RankedTensorType scaleHeads(Type type, int64_t keep, int64_t of) {
    auto t = cast<RankedTensorType>(type);
    SmallVector<int64_t> shape(t.getShape());
    int64_t axis = t.getRank() == 4 ? 2 : t.getRank() - 1;
    shape[axis] = shape[axis] / of * keep;
    return t.clone(shape);
  }

  void rewriteCachedAttention(const CachedAttentionPlan &plan) const {
    mir::AttentionOp op = plan.op;
    int64_t r = options.rank, hd = op.getHeadDim(), heads = op.getNumHeads(),
            kvHeads = op.getNumKvHeads();
    int64_t hpr = plan.headsPerRank, kvpr = plan.kvHeadsPerRank;
    int64_t q0 = r * hpr, qDim = hpr * hd, kvDim = kvpr * hd;

    // The rank's QKV projection: its Q, K and V rows.
    OpBuilder b(plan.qkv);
    MIRBuilder mb(b, plan.qkv->getLoc());
    auto rows = plan.qkvRows(r, heads, kvHeads, hd);
    auto [w, bias] = weightAndBias(plan.qkv);
    Value x = plan.qkv->getOperand(0);
    Value qkv = bias ? mb.fusedMatmul(x, gatherRows(mb, w, rows),
                                      gatherRows(mb, bias, rows), Value(),
                                      Activation::None)
                     : mb.matmul(x, gatherRows(mb, w, rows));
    IRMapping map;
    map.map(plan.qkv->getResult(0), qkv);

    // The ops in between, cloned on the rank's heads; the caches it reads
    // become [B, T, kv heads of the rank * head_dim] arguments.
    for (BlockArgument past : plan.pasts)
      past.setType(scaleHeads(past.getType(), kvpr, kvHeads));
    for (Operation *inner : plan.chain) {
      b.setInsertionPoint(inner);
      Operation *copy = b.clone(*inner, map);
      bool kv = plan.kvSide.contains(inner);
      for (OpResult res : copy->getResults())
        res.setType(kv ? scaleHeads(res.getType(), kvpr, kvHeads)
                       : scaleHeads(res.getType(), hpr, heads));
      if (auto slice = dyn_cast<mir::SliceOp>(copy)) {
        int64_t start = slice.getStart();
        slice.setStart(start == 0            ? 0
                       : start == heads * hd ? qDim
                                             : qDim + kvDim);
        slice.setSize(kv ? kvDim : qDim);
      }
    }
    b.setInsertionPoint(op);
    auto attn = cast<mir::AttentionOp>(b.clone(*op, map));
    attn.setNumHeads(hpr);
    attn.setNumKvHeads(kvpr);
    attn.getResult().setType(scaleHeads(attn.getType(), hpr, heads));

    // Row-parallel output projection, summed over the ranks.
    b.setInsertionPoint(plan.out);
    MIRBuilder ob(b, plan.out->getLoc());
    Value wo = weightAndBias(plan.out).first;
    finishRowParallel(
        ob, plan.out,
        {ob.matmul(attn.getResult(), sliceWeight(ob, wo, 1, q0 * hd, qDim))});
    // The caches returned are the rank's.
    for (Operation *inner : plan.chain)
      if (isa<mir::ConcatOp>(inner))
        inner->getResult(0).replaceAllUsesWith(map.lookup(inner->getResult(0)));
    plan.out->erase();
    op.erase();
    for (Operation *inner : llvm::reverse(plan.chain))
      inner->erase();
    plan.qkv->erase();
  }

  void rewriteMlp(const MlpPlan &plan) const {
    mir::FusedGluOp glu = plan.glu;
    OpBuilder b(plan.down);
    MIRBuilder mb(b, plan.down->getLoc());
    int64_t width = plan.intermediate / options.ranks;
    auto [upW, upBias] = weightAndBias(plan.up);
    Value downW = weightAndBias(plan.down).first;
    Value x = plan.up->getOperand(0);
    SmallVector<Value> partials;
    for (int64_t r : ranksToBuild()) {
      int64_t c0 = r * width;
      SmallVector<std::pair<int64_t, int64_t>> rows = {{c0, width}};
      if (plan.glu)
        rows.push_back({plan.intermediate + c0, width});
      Value w = gatherRows(mb, upW, rows);
      Value h;
      if (isa<mir::MatmulOp>(plan.up))
        h = mb.matmul(x, w);
      else
        h = mb.fusedMatmul(x, w,
                           upBias ? gatherRows(mb, upBias, rows) : Value(),
                           Value(), activationOf(plan.up));
      if (plan.glu)
        h = mb.fusedGlu(h, glu.getActivation());
      partials.push_back(mb.matmul(h, sliceWeight(mb, downW, 1, c0, width)));
    }
    finishRowParallel(mb, plan.down, partials);
    plan.down->erase();
    if (plan.glu)
      plan.glu->erase();
    plan.up->erase();
  }
};

} // namespace

/// Erases the ops of `func` left without uses (full weights, old slices).
static void eraseDeadMIROps(Operation *func) {
  SmallVector<Operation *> ops;
  // Top-level ops only: the bodies of fused regions (mir.elementwise and its
  // mir.yield) stay whole.
  for (Region &region : func->getRegions())
    for (Block &block : region)
      for (Operation &op : block)
        if (isa<mir::MIRDialect>(op.getDialect()))
          ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && isPure(op) && !op->hasTrait<OpTrait::IsTerminator>())
      op->erase();
}

LogicalResult
mlir::rlx::shardMIRTensorParallel(Operation *func,
                                  const MIRTensorParallelOptions &options) {
  if (options.ranks < 1)
    return func->emitError()
           << "tensor parallelism needs ranks >= 1, got " << options.ranks;
  if (!options.emulate && (options.rank < 0 || options.rank >= options.ranks))
    return func->emitError() << "rank " << options.rank << " is not in [0, "
                             << options.ranks << ")";
  if (options.emulate && options.localLogits)
    return func->emitError(
        "local-logits keeps each rank's slice of the logits, which one "
        "emulated function cannot return: use one of emulate and "
        "local-logits");

  // Analyse everything first, so that a refused function is left unchanged.
  SmallVector<AttentionPlan> attentions;
  SmallVector<CachedAttentionPlan, 2> cachedAttentions;
  SmallVector<MlpPlan> mlps;
  SmallVector<EmbeddingPlan> embeddings;
  SmallVector<HeadPlan> heads;
  WalkResult walk = func->walk([&](Operation *op) -> WalkResult {
    // The split ops are rebuilt without their compute-type rounding.
    if (op->hasAttr("round_to")) {
      op->emitError("tensor parallelism splits the model before "
                    "mir-compute-precision rounds its activations; this op "
                    "already rounds its results (round_to)");
      return WalkResult::interrupt();
    }
    if (auto block = dyn_cast<mir::AttentionBlockOp>(op)) {
      FailureOr<AttentionPlan> plan = planAttention(block, options.ranks);
      if (failed(plan))
        return WalkResult::interrupt();
      attentions.push_back(*plan);
      return WalkResult::advance();
    }
    if (auto attention = dyn_cast<mir::AttentionOp>(op)) {
      FailureOr<CachedAttentionPlan> plan =
          planCachedAttention(attention, options);
      if (failed(plan))
        return WalkResult::interrupt();
      cachedAttentions.push_back(std::move(*plan));
      return WalkResult::advance();
    }
    if (isa<mir::TopKOp>(op)) {
      op->emitError("tensor parallelism does not split mixture-of-experts "
                    "layers (a router's mir.top_k): run the model in one "
                    "process");
      return WalkResult::interrupt();
    }
    if (isa<mir::BatchMatmulOp, mir::SoftmaxOp>(op)) {
      op->emitError() << "tensor parallelism does not partition '"
                      << op->getName()
                      << "' outside a mir.attention_block or mir.attention "
                         "(primitive attention); run --mir-fuse-all first";
      return WalkResult::interrupt();
    }
    if (auto glu = dyn_cast<mir::FusedGluOp>(op)) {
      FailureOr<MlpPlan> plan = planMlp(glu, options.ranks);
      if (failed(plan))
        return WalkResult::interrupt();
      mlps.push_back(*plan);
      return WalkResult::advance();
    }
    // An activated projection feeding one down projection is an MLP; one
    // that does not (a pooler's dense + tanh) is split like an LM head.
    if (isLinear(op) && activationOf(op) != Activation::None &&
        !hasResidual(op) && op->getResult(0).hasOneUse() &&
        isLinear(*op->getResult(0).getUsers().begin())) {
      FailureOr<MlpPlan> plan = planMlp(op, options.ranks);
      if (failed(plan))
        return WalkResult::interrupt();
      mlps.push_back(*plan);
      return WalkResult::advance();
    }
    if (auto gather = dyn_cast<mir::GatherOp>(op)) {
      if (gather.getTable().getDefiningOp<mir::ParamOp>()) {
        FailureOr<std::optional<EmbeddingPlan>> plan =
            planEmbedding(gather, options.ranks);
        if (failed(plan))
          return WalkResult::interrupt();
        if (*plan)
          embeddings.push_back(**plan);
      }
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // A projection of a parameter outside the attention blocks and MLPs is an
  // LM head: split over its output rows (the vocabulary), never replicated.
  llvm::SmallPtrSet<Operation *, 16> claimed;
  for (const MlpPlan &mlp : mlps)
    claimed.insert({mlp.up, mlp.down});
  for (const CachedAttentionPlan &attention : cachedAttentions)
    claimed.insert({attention.qkv, attention.out});
  WalkResult stray = func->walk([&](Operation *op) -> WalkResult {
    if (!isa<mir::MatmulOp, mir::FusedMatmulOp>(op) || claimed.contains(op))
      return WalkResult::advance();
    if (!weightAndBias(op).first.getDefiningOp<mir::ParamOp>())
      return WalkResult::advance();
    FailureOr<std::optional<HeadPlan>> plan = planHead(op, options.ranks);
    if (failed(plan))
      return WalkResult::interrupt();
    if (!*plan)
      return WalkResult::advance();
    if (options.localLogits) {
      FailureOr<SmallVector<Operation *>> users = localLogitUsers(op);
      if (failed(users))
        return WalkResult::interrupt();
      (*plan)->localUsers = std::move(*users);
    }
    heads.push_back(**plan);
    return WalkResult::advance();
  });
  if (stray.wasInterrupted())
    return failure();
  if (attentions.empty() && cachedAttentions.empty() && mlps.empty() &&
      embeddings.empty() && heads.empty())
    return func->emitError(
        "tensor parallelism expects a decoder layer in fused MIR form: a "
        "mir.attention_block and/or an MLP (matmul -> mir.fused_glu -> "
        "matmul); lower with --convert-hir-to-mir=policy=direct or run "
        "--mir-fuse-all first");

  Partitioner partitioner{options};
  for (const AttentionPlan &plan : attentions)
    partitioner.rewriteAttention(plan);
  for (const CachedAttentionPlan &plan : cachedAttentions)
    partitioner.rewriteCachedAttention(plan);
  for (const MlpPlan &plan : mlps)
    partitioner.rewriteMlp(plan);
  for (const EmbeddingPlan &plan : embeddings)
    partitioner.rewriteEmbedding(plan);
  for (const HeadPlan &plan : heads)
    partitioner.rewriteHead(plan);
  eraseDeadMIROps(func);
  // The KV caches in and out (and local logits) are the rank's: the
  // signature follows.
  if (auto fn = dyn_cast<func::FuncOp>(func);
      fn &&
      (!cachedAttentions.empty() || (options.localLogits && !heads.empty())))
    fn.setType(
        FunctionType::get(fn.getContext(), fn.front().getArgumentTypes(),
                          fn.front().getTerminator()->getOperandTypes()));
  return success();
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {

struct MIRShardTensorParallelPass
    : mlir::rlx::impl::MIRShardTensorParallelPassBase<
          MIRShardTensorParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MIRTensorParallelOptions opts;
    opts.ranks = ranks;
    opts.rank = rank;
    opts.grid = grid;
    opts.emulate = emulate;
    opts.localLogits = localLogits;

    auto funcs = llvm::to_vector(module.getOps<func::FuncOp>());
    if (!opts.emulate && opts.ranks >= 1) {
      // The grid the all-reduces run on: an existing one must be 1-D of
      // `ranks` devices.
      auto existing = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
          module, StringAttr::get(&getContext(), opts.grid));
      if (existing) {
        if (existing.getShape() != ArrayRef<int64_t>{opts.ranks}) {
          existing.emitError() << "tensor parallelism over " << opts.ranks
                               << " ranks needs grid @" << opts.grid
                               << " of shape " << opts.ranks;
          return signalPassFailure();
        }
      } else if (!funcs.empty()) {
        OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
        shard::GridOp::create(b, module.getLoc(), opts.grid,
                              ArrayRef<int64_t>{opts.ranks});
      }
    }
    for (func::FuncOp func : funcs)
      if (failed(shardMIRTensorParallel(func, opts)))
        return signalPassFailure();
    // Whose program this is: the runtime refuses to run it as another rank.
    if (!opts.emulate && opts.ranks >= 2 && !funcs.empty()) {
      Builder b(&getContext());
      module->setAttr(
          kRankAttr,
          b.getDictionaryAttr(
              {b.getNamedAttr("rank", b.getI64IntegerAttr(opts.rank)),
               b.getNamedAttr("ranks", b.getI64IntegerAttr(opts.ranks))}));
    }
  }
};

} // namespace
