//===- Transforms.h - MIR fusion patterns and matchers ----------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The public entry points of MIR fusion. Every fusion is layered the same way
// (see docs/Fusion.md):
//   1. a matcher, `match<Fusion>(root, match&)`, that recognises the pattern
//      at one root op and says whether it can be fused or why not;
//   2. a transform, `fuse<Fusion>(RewriterBase&, const match&)`;
//   3. a thin rewrite pattern calling the two;
//   4. `populateMIRFuse<Fusion>Patterns(patterns, control)`, where the control
//      function may veto a fusion at its root.
// The fusion report runs the same matchers without rewriting.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_TRANSFORMS_TRANSFORMS_H
#define RLX_DIALECT_MIR_TRANSFORMS_TRANSFORMS_H

#include "RLX/Dialect/Common/RLXEnums.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Support/Enums.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>
#include <optional>
#include <string>

namespace mlir::rlx {

/// Decides whether a fusion rooted at `root` may happen: return false to
/// veto it. An empty function allows every fusion.
using MIRFusionControlFn = std::function<bool(Operation *root)>;

//===----------------------------------------------------------------------===//
// Fusion kinds and targets
//===----------------------------------------------------------------------===//

/// The MIR fusions, in the order mir-fuse-all runs them. The names are those
/// of `[fusion].disable` in a compile profile.
enum class MIRFusionKind {
  Dequantize,        // "dequantize": matmuls and gathers of stored weights
  SharedInputMatmul, // "shared-input-matmul": derived mir.param + matmul
  Swiglu,            // "swiglu": mir.fused_glu
  Attention,         // "attention": mir.attention
  AttentionBlock,    // "attention-block": mir.attention_block
  ResidualNorm,      // "residual-norm": mir.fused_residual_{rms,layer}_norm
  MatmulEpilogue,    // "matmul-epilogue": mir.fused_matmul
  ElementwiseRegion, // "elementwise-region": mir.elementwise
};

/// Every fusion, in run order.
ArrayRef<MIRFusionKind> getMIRFusionOrder();

/// The kebab-case name of `kind` ("shared-input-matmul", ...).
StringRef stringifyMIRFusionKind(MIRFusionKind kind);

/// The fusion called `name`, or std::nullopt.
std::optional<MIRFusionKind> symbolizeMIRFusionKind(StringRef name);

/// The flag of the pass that runs `kind` alone ("mir-fuse-swiglu", ...).
StringRef getMIRFusionPassArgument(MIRFusionKind kind);

/// The fused ops `kind` produces ("mir.fused_glu", ...). Shared-input matmul
/// produces no fused op, only a derived `mir.param`.
ArrayRef<StringRef> getMIRFusionResultOps(MIRFusionKind kind);

/// Every fused MIR op name, sorted.
ArrayRef<StringRef> getMIRFusedOpNames();

/// True if `target` claims the fused ops of `kind`, i.e. its back end
/// implements them and wants them formed. `cpu` claims every fusion;
/// `spirv` all but attention-block (see docs/Fusion.md).
bool doesMIRFusionTargetClaim(::rlx::Target target, MIRFusionKind kind);

/// Calls `fn` on every function `root` is or holds (func.func ops): the MIR
/// passes act on function bodies only, so a module that already holds LIR
/// (MIR ops inside lir.kernel bodies) passes through them unchanged.
void forEachMIRFunction(Operation *root, function_ref<void(Operation *)> fn);

/// The fusions to run for `target`, in run order, without those named in
/// `disabled`. Fails, with a message in `error`, on an unknown name.
FailureOr<SmallVector<MIRFusionKind>>
getMIRFusionKinds(::rlx::Target target, ArrayRef<std::string> disabled,
                  std::string *error = nullptr);

//===----------------------------------------------------------------------===//
// Match results
//===----------------------------------------------------------------------===//

/// Why a recognisable pattern cannot be fused, and how to fix it.
struct MIRFusionMiss {
  /// A short, stable reason ("multi-consumer intermediate", ...).
  std::string reason;
  /// Specifics (which op, which value); may be empty.
  std::string detail;
  /// What to change so the pattern fuses.
  std::string hint;
};

/// The outcome of a matcher at one root op: not the pattern at all, the
/// pattern but not fusable (with a MIRFusionMiss), or fusable.
class MIRMatchResult {
public:
  enum class Status { NoMatch, Missed, Matched };

  static MIRMatchResult noMatch() { return MIRMatchResult(Status::NoMatch); }
  static MIRMatchResult matched() { return MIRMatchResult(Status::Matched); }
  static MIRMatchResult missed(StringRef reason, const Twine &detail,
                               StringRef hint) {
    MIRMatchResult r(Status::Missed);
    r.miss = {reason.str(), detail.str(), hint.str()};
    return r;
  }

  Status getStatus() const { return status; }
  bool isMatched() const { return status == Status::Matched; }
  bool isMissed() const { return status == Status::Missed; }
  /// The miss; only meaningful when isMissed().
  const MIRFusionMiss &getMiss() const { return miss; }
  /// "reason: detail" (or the reason alone), for match-failure notes.
  std::string describe() const;

private:
  explicit MIRMatchResult(Status status) : status(status) {}
  Status status;
  MIRFusionMiss miss;
};

//===----------------------------------------------------------------------===//
// Shared-input matmuls
//===----------------------------------------------------------------------===//

/// Matmuls on one input, to be merged (in block order).
struct SharedInputMatmulsMatch {
  Value input;
  SmallVector<mir::MatmulOp> matmuls;
  /// The add of a parameter bias after each matmul, or empty.
  SmallVector<mir::AddOp> biasAdds;
  SmallVector<Value> biases;
  bool transposeRhs = true;
};

/// Matches at the first (in block order) of two or more `mir.matmul`s that
/// share `op`'s input and weight layout. Misses: weights that are not plain
/// `mir.param`s; projections of equal inputs computed twice.
MIRMatchResult matchSharedInputMatmuls(mir::MatmulOp op,
                                       SharedInputMatmulsMatch &match);

/// One matmul over the concatenated weights (a derived `mir.param`), plus
/// the concatenated bias when there is one, then one `mir.slice` per
/// original result. Returns the fused matmul.
FailureOr<mir::MatmulOp>
fuseSharedInputMatmuls(RewriterBase &rewriter,
                       const SharedInputMatmulsMatch &match);

void populateMIRFuseSharedInputMatmulsPatterns(
    RewritePatternSet &patterns, const MIRFusionControlFn &control = {});

//===----------------------------------------------------------------------===//
// Dequantize
//===----------------------------------------------------------------------===//

struct DequantizeMatch {
  mir::DequantizeOp dequantize;
  /// The operands reading the dequantized weight, each able to read it as
  /// stored.
  SmallVector<OpOperand *> uses;
};

/// Matches a `mir.dequantize` to f32 whose every user can read the stored
/// weight instead: the rhs of a transposed matmul or the weight of a
/// transposed fused matmul (with an f32 input), or the table of a row
/// gather. Misses: a user that needs the f32 tensor, a non-f32 result.
MIRMatchResult matchDequantize(mir::DequantizeOp op, DequantizeMatch &match);

/// Rewires every matched use to the stored weight (a gather of an f16/bf16
/// table becomes a gather then a cast of the gathered rows) and erases the
/// dequantize.
FailureOr<mir::DequantizeOp> fuseDequantize(RewriterBase &rewriter,
                                            const DequantizeMatch &match);

void populateMIRFuseDequantizePatterns(RewritePatternSet &patterns,
                                       const MIRFusionControlFn &control = {});

//===----------------------------------------------------------------------===//
// SwiGLU / GeGLU
//===----------------------------------------------------------------------===//

struct SwigluMatch {
  mir::MulOp mul;
  Value gateUp;
  Operation *activationOp = nullptr;
  mir::SliceOp gate, up;
  Activation activation = Activation::Silu;
};

/// Matches `mul(act(slice(gu, last, 0, I)), slice(gu, last, I, I))` (either
/// operand order) at the `mir.mul`. Misses: gate/up in the wrong order,
/// multi-consumer intermediates, dynamic shapes, gate and up projections not
/// concatenated.
MIRMatchResult matchSwiglu(mir::MulOp op, SwigluMatch &match);

FailureOr<mir::FusedGluOp> fuseSwiglu(RewriterBase &rewriter,
                                      const SwigluMatch &match);

void populateMIRFuseSwigluPatterns(RewritePatternSet &patterns,
                                   const MIRFusionControlFn &control = {});

//===----------------------------------------------------------------------===//
// Matmul epilogue
//===----------------------------------------------------------------------===//

struct MatmulEpilogueMatch {
  mir::MatmulOp matmul;
  mir::AddOp biasAdd;
  Value bias;
  Operation *activationOp = nullptr;
  Activation activation = Activation::None;
  mir::AddOp residualAdd;
  Value residual;
  /// The last op of the chain, replaced by the fused matmul.
  Operation *last = nullptr;
};

/// Matches `matmul → [add bias] → [activation] → [add residual]` at the
/// `mir.matmul`. Misses: multi-consumer intermediates, unsupported epilogue
/// activations, a transposed lhs.
MIRMatchResult matchMatmulEpilogue(mir::MatmulOp op,
                                   MatmulEpilogueMatch &match);

FailureOr<mir::FusedMatmulOp>
fuseMatmulEpilogue(RewriterBase &rewriter, const MatmulEpilogueMatch &match);

void populateMIRFuseMatmulEpiloguePatterns(
    RewritePatternSet &patterns, const MIRFusionControlFn &control = {});

//===----------------------------------------------------------------------===//
// Residual add + norm
//===----------------------------------------------------------------------===//

struct ResidualNormMatch {
  mir::AddOp add;
  /// A mir.rms_norm or mir.layer_norm of the sum.
  Operation *norm = nullptr;
  /// The branch (new value) and the residual stream.
  Value input, residual;
};

/// Matches `norm(add(a, b))` at the `mir.rms_norm` / `mir.layer_norm`.
/// Misses: a residual add that mixes static and dynamic shapes.
MIRMatchResult matchResidualNorm(Operation *norm, ResidualNormMatch &match);

/// Returns the fused op; its `sum` replaces the add, `normed` the norm.
FailureOr<Operation *> fuseResidualNorm(RewriterBase &rewriter,
                                        const ResidualNormMatch &match);

void populateMIRFuseResidualNormPatterns(
    RewritePatternSet &patterns, const MIRFusionControlFn &control = {});

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttentionMatch {
  mir::SoftmaxOp softmax;
  /// The final reshape back to [B, Tq, num_heads*head_dim].
  Operation *output = nullptr;
  Value query, key, value, mask;
  int64_t numHeads = 0, numKvHeads = 0, headDim = 0;
  float scale = 1.0f, softcap = 0.0f;
  MaskKind maskKind = MaskKind::None;
  int64_t window = 0;
  /// Every op of the primitive form except the shared mask-building ones.
  SmallVector<Operation *> ops;
};

/// Matches the primitive attention at its `mir.softmax`. Misses:
/// multi-consumer intermediates, unrecognised masks or score modifiers,
/// unsupported head layouts, dynamic shapes.
MIRMatchResult matchAttention(mir::SoftmaxOp op, AttentionMatch &match);

FailureOr<mir::AttentionOp> fuseAttention(RewriterBase &rewriter,
                                          const AttentionMatch &match);

void populateMIRFuseAttentionPatterns(RewritePatternSet &patterns,
                                      const MIRFusionControlFn &control = {});

//===----------------------------------------------------------------------===//
// Attention block
//===----------------------------------------------------------------------===//

struct AttentionBlockMatch {
  mir::AttentionOp attention;
  /// The output projection (or its bias add), replaced by the block.
  Operation *output = nullptr;
  Value input, wQkv, wO;
  Value positions, invFreq, qNorm, kNorm, qkvBias, outBias;
  int64_t rotaryDim = 0;
  float ropeTheta = 10000.0f;
  RopeStyle ropeStyle = RopeStyle::Half;
  float normEpsilon = 1e-6f;
  bool normUnitOffset = false;
  SmallVector<Operation *> ops;
};

/// Matches QKV projection → slices → [QK-norm] → [RoPE] → attention → output
/// projection at the `mir.attention`. K/V read from a KV cache are not a
/// block, nor is cross attention. Misses: projections not concatenated,
/// multi-consumer intermediates, mismatched RoPE or QK-norm on Q and K, slices
/// out of order, weights not in HF layout.
MIRMatchResult matchAttentionBlock(mir::AttentionOp op,
                                   AttentionBlockMatch &match);

FailureOr<mir::AttentionBlockOp>
fuseAttentionBlock(RewriterBase &rewriter, const AttentionBlockMatch &match);

void populateMIRFuseAttentionBlockPatterns(
    RewritePatternSet &patterns, const MIRFusionControlFn &control = {});

//===----------------------------------------------------------------------===//
// Elementwise region
//===----------------------------------------------------------------------===//

struct ElementwiseRegionMatch {
  /// The region's ops in program order; the last one is the root.
  SmallVector<Operation *> ops;
  /// The region's tensor inputs, in first-use order.
  SmallVector<Value> inputs;
};

/// True for the float elementwise MIR ops an elementwise region can hold.
bool isFusableElementwiseOp(Operation *op);

/// Matches the maximal single-use tree of elementwise ops ending at `root`
/// (which must not itself feed a single-use elementwise consumer), with at
/// least two ops.
MIRMatchResult matchElementwiseRegion(Operation *root,
                                      ElementwiseRegionMatch &match);

FailureOr<mir::ElementwiseOp>
fuseElementwiseRegion(RewriterBase &rewriter,
                      const ElementwiseRegionMatch &match);

void populateMIRFuseElementwisePatterns(RewritePatternSet &patterns,
                                        const MIRFusionControlFn &control = {});

//===----------------------------------------------------------------------===//
// All fusions
//===----------------------------------------------------------------------===//

/// The patterns of one fusion.
void populateMIRFusionPatterns(RewritePatternSet &patterns, MIRFusionKind kind,
                               const MIRFusionControlFn &control = {});

struct MIRMissedFusion;

/// Runs `kinds` on `root` one after the other, each to a fixed point with
/// its own greedy driver (no folding), in the given order. With `misses`,
/// appends what each fusion left unfused right after it ran (later fusions
/// may absorb the evidence, e.g. the epilogue takes a gate projection whose
/// weights could not be concatenated). Fails if a driver does not converge.
LogicalResult
applyMIRFusions(Operation *root, ArrayRef<MIRFusionKind> kinds,
                const MIRFusionControlFn &control = {},
                SmallVectorImpl<MIRMissedFusion> *misses = nullptr);

//===----------------------------------------------------------------------===//
// Unfusion
//===----------------------------------------------------------------------===//

/// The patterns of mir-unfuse: each fused MIR op expanded into the primitive
/// ops it stands for (see the pass description in Passes.td).
void populateMIRUnfusePatterns(RewritePatternSet &patterns);

//===----------------------------------------------------------------------===//
// Fusion report
//===----------------------------------------------------------------------===//

/// One recognisable but unfused pattern, at its root op.
struct MIRMissedFusion {
  MIRFusionKind kind;
  /// The root op's location and name (the op may be gone by report time).
  LocationAttr loc;
  std::string opName;
  MIRFusionMiss miss;
};

/// Runs the matchers of `kinds` over `root` and collects every miss, in
/// program order. A pattern that still matches in full (fusion not run, or
/// vetoed) is a miss "not fused".
SmallVector<MIRMissedFusion>
findMissedMIRFusions(Operation *root, ArrayRef<MIRFusionKind> kinds);

//===----------------------------------------------------------------------===//
// Tensor parallelism
//===----------------------------------------------------------------------===//

/// How mir-shard-tensor-parallel partitions a function.
struct MIRTensorParallelOptions {
  /// Ranks of the 1-D grid (>= 1).
  int64_t ranks = 2;
  /// The rank whose program is produced, in [0, ranks); unused with emulate.
  int64_t rank = 0;
  /// Symbol of the `shard.grid` the all-reduces run on.
  std::string grid = "tp";
  /// Compute every rank's share and sum the partials with mir.add instead of
  /// emitting shard.all_reduce.
  bool emulate = false;
  /// Leave the LM head's logits as the rank's slice of the vocabulary (the
  /// function returns `[..., V / ranks]`, rows `[rank * V / ranks, ...)`)
  /// instead of all-gathering them: for a caller that reduces them itself
  /// (a greedy argmax or a top-k per rank).
  bool localLogits = false;
};

/// Rewrites the decoder layers of `func` (fused MIR form) into rank
/// `options.rank`'s program: attention blocks and MLPs split Megatron-style,
/// their partial results summed by `shard.all_reduce` on `options.grid`
/// (which must exist as a 1-D `shard.grid` of `options.ranks` unless
/// emulating); embedding lookups split over the vocabulary (masked partial
/// rows, one `shard.all_reduce`) and the LM head likewise (the rank's logits,
/// one `shard.all_gather`). Emits an error and fails, leaving `func`
/// unchanged, when the function is not a recognizable decoder layer or a size
/// does not split.
LogicalResult shardMIRTensorParallel(Operation *func,
                                     const MIRTensorParallelOptions &options);

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

/// The patterns of mir-fold-param-slices: a static `mir.slice` of a
/// `mir.param` becomes a sliced `mir.param` (`source_starts`), and a
/// `mir.concat` of parameters along their concat axis one derived
/// `mir.param` with a range per source.
void populateMIRFoldParamSlicesPatterns(RewritePatternSet &patterns);

/// Runs those patterns over `func` (any op holding MIR), so that the loader
/// reads only the parts of the weights that `func` uses. Run after
/// shardMIRTensorParallel. Leaves what it cannot fold as it was; fails only
/// if the rewrite driver does.
LogicalResult foldMIRParamSlices(Operation *func);

} // namespace mlir::rlx

#endif // RLX_DIALECT_MIR_TRANSFORMS_TRANSFORMS_H
