//===- FuseSharedInputMatmuls.cpp - Merge matmuls sharing an input --------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// IN:  %q = mir.matmul %x, %wq {transpose_rhs}   (%wq, %wk, %wv: mir.param)
//      %k = mir.matmul %x, %wk {transpose_rhs}
//      %v = mir.matmul %x, %wv {transpose_rhs}
// OUT: %w = mir.param "wq+wk+wv" {sources = [...], concat_axis = 0}
//      %qkv = mir.matmul %x, %w {transpose_rhs}
//      %q = mir.slice %qkv {axis = last, start = 0, size = Nq} ...
// When every matmul is followed by `mir.add` of a parameter bias, the biases
// are concatenated as well and added once before the slices.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/Utils/MIRBuilder.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRFUSESHAREDINPUTMATMULSPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::fusion;

/// True if `a` and `b` can read one concatenated weight: same layout, same
/// element type, rank-2 weights with the same contraction size.
static bool haveMergeableWeights(mir::MatmulOp a, mir::MatmulOp b) {
  if (a.getTransposeLhs() || b.getTransposeLhs() ||
      a.getTransposeRhs() != b.getTransposeRhs() ||
      a->getBlock() != b->getBlock())
    return false;
  auto wa = cast<RankedTensorType>(a.getRhs().getType());
  auto wb = cast<RankedTensorType>(b.getRhs().getType());
  int64_t kAxis = a.getTransposeRhs() ? 1 : 0;
  return wa.getElementType() == wb.getElementType() &&
         wa.getDimSize(kAxis) == wb.getDimSize(kAxis) &&
         !ShapedType::isDynamic(wa.getDimSize(kAxis));
}

/// The matmuls reading `input` that can merge with `op` (op included), in
/// block order.
static SmallVector<mir::MatmulOp> getMergeableMatmuls(mir::MatmulOp op,
                                                      Value input) {
  SmallVector<mir::MatmulOp> group;
  for (Operation *user : input.getUsers()) {
    auto mm = dyn_cast<mir::MatmulOp>(user);
    if (!mm || mm.getLhs() != input || llvm::is_contained(group, mm))
      continue;
    if (mm == op || haveMergeableWeights(op, mm))
      group.push_back(mm);
  }
  llvm::sort(group, [](mir::MatmulOp a, mir::MatmulOp b) {
    return a->isBeforeInBlock(b);
  });
  return group;
}

/// The parameter bias added to `mm`'s result, if its only use is such an add.
static mir::AddOp getBiasAdd(mir::MatmulOp mm, Value &bias) {
  auto add = dyn_cast_or_null<mir::AddOp>(getSingleUser(mm.getResult()));
  if (!add || add.getType() != mm.getType())
    return nullptr;
  Value other = add.getLhs() == mm.getResult() ? add.getRhs() : add.getLhs();
  auto type = cast<RankedTensorType>(other.getType());
  int64_t n = mm.getType().getShape().back();
  if (other == mm.getResult() || type.getRank() != 1 ||
      type.getDimSize(0) != n || !isPlainParam(other))
    return nullptr;
  bias = other;
  return add;
}

/// Detects projections whose inputs are two identical ops (e.g. a norm
/// computed twice): fusable after CSE. Reported at the earlier op.
static MIRMatchResult matchDuplicatedInput(mir::MatmulOp op) {
  Operation *def = op.getLhs().getDefiningOp();
  if (!def || def->getNumOperands() == 0 || def->getNumResults() != 1)
    return MIRMatchResult::noMatch();
  for (Operation *twin : def->getOperand(0).getUsers()) {
    if (twin == def || twin->getBlock() != def->getBlock() ||
        twin->isBeforeInBlock(def) ||
        !OperationEquivalence::isEquivalentTo(
            def, twin, OperationEquivalence::IgnoreLocations))
      continue;
    for (Operation *user : twin->getResult(0).getUsers()) {
      auto mm = dyn_cast<mir::MatmulOp>(user);
      if (mm && mm.getLhs() == twin->getResult(0) &&
          haveMergeableWeights(op, mm))
        return MIRMatchResult::missed(
            kNotShared,
            Twine("this projection and another read two identical '") +
                def->getName().getStringRef() + "' ops",
            "run -cse before fusion so the projections share one input");
    }
  }
  return MIRMatchResult::noMatch();
}

MIRMatchResult
mlir::rlx::matchSharedInputMatmuls(mir::MatmulOp op,
                                   SharedInputMatmulsMatch &match) {
  if (op.getTransposeLhs())
    return MIRMatchResult::noMatch();
  Value input = op.getLhs();
  SmallVector<mir::MatmulOp> group = getMergeableMatmuls(op, input);
  if (group.size() < 2)
    return matchDuplicatedInput(op);
  // Report and rewrite the group once, at its first matmul.
  if (group.front() != op)
    return MIRMatchResult::noMatch();
  for (auto [i, mm] : llvm::enumerate(group)) {
    Value w = mm.getRhs();
    if (!isPlainParam(w))
      return MIRMatchResult::missed(
          kNotParams,
          Twine("the weight of projection ") + Twine(i) + " of " +
              Twine(group.size()) + " is " + describeValue(w),
          "bind every projection weight with mir.param (hir.param) so the "
          "concatenation is done once at load time");
  }
  match.input = input;
  match.matmuls = group;
  match.transposeRhs = op.getTransposeRhs();
  // Biases, when every projection has one.
  SmallVector<mir::AddOp> adds;
  SmallVector<Value> biases;
  for (mir::MatmulOp mm : group) {
    Value bias;
    if (mir::AddOp add = getBiasAdd(mm, bias)) {
      adds.push_back(add);
      biases.push_back(bias);
    }
  }
  if (adds.size() == group.size()) {
    match.biasAdds = adds;
    match.biases = biases;
  }
  return MIRMatchResult::matched();
}

FailureOr<mir::MatmulOp>
mlir::rlx::fuseSharedInputMatmuls(RewriterBase &rewriter,
                                  const SharedInputMatmulsMatch &match) {
  if (match.matmuls.size() < 2)
    return failure();
  SmallVector<Location> locs;
  SmallVector<Value> weights;
  SmallVector<Operation *> dead;
  for (mir::MatmulOp mm : match.matmuls) {
    locs.push_back(mm.getLoc());
    weights.push_back(mm.getRhs());
    dead.push_back(mm.getRhs().getDefiningOp());
  }
  for (Value b : match.biases)
    dead.push_back(b.getDefiningOp());

  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(match.matmuls.front());
  MIRBuilder mb(rewriter, rewriter.getFusedLoc(locs));
  Value w = mb.concatParams(weights, match.transposeRhs ? 0 : 1);
  Value fused = mb.matmul(match.input, w, match.transposeRhs);
  Value sum = fused;
  if (!match.biases.empty())
    sum = mb.add(fused, mb.concatParams(match.biases, 0));

  int64_t axis = MIRBuilder::typeOf(sum).getRank() - 1;
  int64_t offset = 0;
  for (auto [i, op] : llvm::enumerate(match.matmuls)) {
    mir::MatmulOp mm = op;
    int64_t n = mm.getType().getShape().back();
    Value part = mb.slice(sum, axis, offset, n);
    offset += n;
    if (match.biasAdds.empty()) {
      rewriter.replaceOp(mm, part);
    } else {
      mir::AddOp add = match.biasAdds[i];
      rewriter.replaceOp(add, part);
      rewriter.eraseOp(mm);
    }
  }
  eraseDeadOps(rewriter, dead);
  return fused.getDefiningOp<mir::MatmulOp>();
}

void mlir::rlx::populateMIRFuseSharedInputMatmulsPatterns(
    RewritePatternSet &patterns, const MIRFusionControlFn &control) {
  patterns.add<FusionPattern<mir::MatmulOp, SharedInputMatmulsMatch,
                             matchSharedInputMatmuls, fuseSharedInputMatmuls>>(
      patterns.getContext(), control);
}

namespace {
struct MIRFuseSharedInputMatmulsPass
    : public mlir::rlx::impl::MIRFuseSharedInputMatmulsPassBase<
          MIRFuseSharedInputMatmulsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(applyMIRFusions(getOperation(),
                               {MIRFusionKind::SharedInputMatmul})))
      signalPassFailure();
  }
};
} // namespace
