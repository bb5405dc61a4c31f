//===- FusionReport.cpp - Explain the fusions that did not happen ---------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The mir-fusion-report pass: runs every fusion matcher without rewriting,
// reports each recognisable but unfused pattern with its reason and a fix,
// and counts the fused ops before (from a recorded baseline) and after
// fusion, as remarks and as JSON.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"
#include <map>

namespace mlir::rlx {
#define GEN_PASS_DEF_MIRFUSIONREPORTPASS
#include "RLX/Dialect/MIR/Transforms/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;
using namespace mlir::rlx;
using namespace mlir::rlx::fusion;

/// The module attribute holding the baseline histogram.
static constexpr StringLiteral kBaselineAttr = "mir.fusion_baseline";

//===----------------------------------------------------------------------===//
// Finding misses
//===----------------------------------------------------------------------===//

SmallVector<MIRMissedFusion>
mlir::rlx::findMissedMIRFusions(Operation *root,
                                ArrayRef<MIRFusionKind> kinds) {
  SmallVector<MIRMissedFusion> misses;
  auto enabled = [&](MIRFusionKind kind) {
    return llvm::is_contained(kinds, kind);
  };
  auto record = [&](MIRFusionKind kind, Operation *op,
                    const MIRMatchResult &result) {
    std::string name = op->getName().getStringRef().str();
    if (result.isMissed()) {
      misses.push_back({kind, op->getLoc(), name, result.getMiss()});
    } else if (result.isMatched()) {
      std::string hint = ("run " + getMIRFusionPassArgument(kind) +
                          " (or mir-fuse-all); was the fusion disabled or "
                          "vetoed?")
                             .str();
      misses.push_back({kind, op->getLoc(), name, {kNotFused.str(), "", hint}});
    }
  };
  auto visit = [&](Operation *op) {
    if (auto dq = dyn_cast<mir::DequantizeOp>(op)) {
      if (enabled(MIRFusionKind::Dequantize)) {
        DequantizeMatch match;
        MIRMatchResult result = matchDequantize(dq, match);
        // A dequantize nothing can absorb is still a miss: it runs.
        if (result.getStatus() == MIRMatchResult::Status::NoMatch)
          result = MIRMatchResult::missed(
              kStoredWeight, "nothing reads the dequantized weight",
              "remove the unused dequantize");
        record(MIRFusionKind::Dequantize, op, result);
      }
      return;
    }
    if (auto mm = dyn_cast<mir::MatmulOp>(op)) {
      if (enabled(MIRFusionKind::SharedInputMatmul)) {
        SharedInputMatmulsMatch match;
        record(MIRFusionKind::SharedInputMatmul, op,
               matchSharedInputMatmuls(mm, match));
      }
      if (enabled(MIRFusionKind::MatmulEpilogue)) {
        MatmulEpilogueMatch match;
        record(MIRFusionKind::MatmulEpilogue, op,
               matchMatmulEpilogue(mm, match));
      }
    } else if (auto fm = dyn_cast<mir::FusedMatmulOp>(op)) {
      if (enabled(MIRFusionKind::MatmulEpilogue))
        record(MIRFusionKind::MatmulEpilogue, op,
               diagnoseFusedMatmulEpilogue(fm));
    } else if (auto mul = dyn_cast<mir::MulOp>(op);
               mul && enabled(MIRFusionKind::Swiglu)) {
      SwigluMatch match;
      record(MIRFusionKind::Swiglu, op, matchSwiglu(mul, match));
    } else if (auto sm = dyn_cast<mir::SoftmaxOp>(op)) {
      if (enabled(MIRFusionKind::Attention)) {
        AttentionMatch match;
        record(MIRFusionKind::Attention, op, matchAttention(sm, match));
      }
    } else if (auto att = dyn_cast<mir::AttentionOp>(op)) {
      if (enabled(MIRFusionKind::AttentionBlock)) {
        AttentionBlockMatch match;
        record(MIRFusionKind::AttentionBlock, op,
               matchAttentionBlock(att, match));
      }
    } else if (isa<mir::RmsNormOp, mir::LayerNormOp>(op)) {
      if (enabled(MIRFusionKind::ResidualNorm)) {
        ResidualNormMatch match;
        record(MIRFusionKind::ResidualNorm, op, matchResidualNorm(op, match));
      }
    }
    if (enabled(MIRFusionKind::ElementwiseRegion) &&
        isFusableElementwiseOp(op)) {
      ElementwiseRegionMatch match;
      record(MIRFusionKind::ElementwiseRegion, op,
             matchElementwiseRegion(op, match));
    }
  };
  forEachMIRFunction(root, [&](Operation *f) { f->walk(visit); });
  return misses;
}

//===----------------------------------------------------------------------===//
// Misses recorded between the baseline and the report
//===----------------------------------------------------------------------===//

/// The module attribute holding the misses mir-fuse-all recorded.
static constexpr StringLiteral kMissesAttr = "mir.fusion_misses";

bool fusion::hasMIRFusionBaseline(Operation *module) {
  return module->hasAttr(kBaselineAttr);
}

void fusion::recordMIRFusionMisses(Operation *module,
                                   ArrayRef<MIRMissedFusion> misses) {
  Builder b(module->getContext());
  SmallVector<Attribute> entries;
  if (auto old = module->getAttrOfType<ArrayAttr>(kMissesAttr))
    llvm::append_range(entries, old);
  for (const MIRMissedFusion &m : misses)
    entries.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("fusion",
                        b.getStringAttr(stringifyMIRFusionKind(m.kind))),
         b.getNamedAttr("loc", m.loc),
         b.getNamedAttr("op", b.getStringAttr(m.opName)),
         b.getNamedAttr("reason", b.getStringAttr(m.miss.reason)),
         b.getNamedAttr("detail", b.getStringAttr(m.miss.detail)),
         b.getNamedAttr("hint", b.getStringAttr(m.miss.hint))}));
  module->setAttr(kMissesAttr, b.getArrayAttr(entries));
}

SmallVector<MIRMissedFusion>
fusion::takeRecordedMIRFusionMisses(Operation *module) {
  SmallVector<MIRMissedFusion> misses;
  auto entries = module->getAttrOfType<ArrayAttr>(kMissesAttr);
  if (!entries)
    return misses;
  module->removeAttr(kMissesAttr);
  for (auto entry : entries.getAsRange<DictionaryAttr>()) {
    auto str = [&](StringRef key) {
      auto s = entry.getAs<StringAttr>(key);
      return s ? s.str() : std::string();
    };
    std::optional<MIRFusionKind> kind = symbolizeMIRFusionKind(str("fusion"));
    auto loc = entry.getAs<LocationAttr>("loc");
    if (!kind || !loc)
      continue;
    misses.push_back(
        {*kind, loc, str("op"), {str("reason"), str("detail"), str("hint")}});
  }
  return misses;
}

//===----------------------------------------------------------------------===//
// Histograms and printing
//===----------------------------------------------------------------------===//

using Histogram = std::map<std::string, int64_t>;

static Histogram countMIROps(Operation *root) {
  Histogram counts;
  forEachMIRFunction(root, [&](Operation *f) {
    f->walk([&](Operation *op) {
      if (isa_and_nonnull<mir::MIRDialect>(op->getDialect()))
        ++counts[op->getName().getStringRef().str()];
    });
  });
  return counts;
}

static Histogram fusedOnly(const Histogram &all) {
  Histogram fused;
  for (StringRef name : getMIRFusedOpNames())
    if (auto it = all.find(name.str()); it != all.end())
      fused.insert(*it);
  return fused;
}

static std::string formatHistogram(const Histogram &h) {
  std::string s = "{";
  for (auto [i, entry] : llvm::enumerate(h))
    s += (i ? ", " : "") + entry.first + " = " + std::to_string(entry.second);
  return s + "}";
}

static std::string formatLocation(Location loc) {
  if (auto file = loc->findInstanceOf<FileLineColLoc>())
    return (file.getFilename().getValue() + ":" + Twine(file.getLine()) + ":" +
            Twine(file.getColumn()))
        .str();
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}

static void writeHistogram(llvm::json::OStream &json, StringRef key,
                           const std::optional<Histogram> &h) {
  json.attributeBegin(key);
  if (!h) {
    json.value(nullptr);
  } else {
    json.objectBegin();
    for (const auto &[name, count] : *h)
      json.attribute(name, count);
    json.objectEnd();
  }
  json.attributeEnd();
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
struct MIRFusionReportPass
    : public mlir::rlx::impl::MIRFusionReportPassBase<MIRFusionReportPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (recordBaseline) {
      SmallVector<NamedAttribute> entries;
      Builder b(module.getContext());
      for (const auto &[name, count] : countMIROps(module))
        entries.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(count)));
      module->setAttr(kBaselineAttr, b.getDictionaryAttr(entries));
      return markAllAnalysesPreserved();
    }

    ::rlx::Target t = target;
    std::string error;
    FailureOr<SmallVector<MIRFusionKind>> kinds =
        getMIRFusionKinds(t, disable, &error);
    if (failed(kinds)) {
      mlir::emitError(module.getLoc(), "mir-fusion-report: ") << error;
      return signalPassFailure();
    }

    // What mir-fuse-all recorded, then what is still visible, once each.
    SmallVector<MIRMissedFusion> misses = takeRecordedMIRFusionMisses(module);
    for (MIRMissedFusion &m : findMissedMIRFusions(module, *kinds)) {
      bool seen = llvm::any_of(misses, [&](const MIRMissedFusion &r) {
        return r.kind == m.kind && r.loc == m.loc &&
               r.miss.reason == m.miss.reason && r.miss.detail == m.miss.detail;
      });
      if (!seen)
        misses.push_back(std::move(m));
    }
    std::optional<Histogram> before;
    if (auto baseline = module->getAttrOfType<DictionaryAttr>(kBaselineAttr)) {
      before.emplace();
      for (NamedAttribute entry : baseline)
        if (auto count = dyn_cast<IntegerAttr>(entry.getValue()))
          (*before)[entry.getName().str()] = count.getInt();
      module->removeAttr(kBaselineAttr);
    }
    Histogram after = countMIROps(module);

    for (const MIRMissedFusion &m : misses) {
      if (!assertClean && !remarks)
        break;
      // Diagnostics at the location only: the op itself is not printed.
      InFlightDiagnostic diag =
          assertClean ? mlir::emitError(m.loc) : mlir::emitRemark(m.loc);
      diag << "missed fusion '" << stringifyMIRFusionKind(m.kind)
           << "': " << m.miss.reason;
      if (!m.miss.detail.empty())
        diag << ": " << m.miss.detail;
      diag << "; hint: " << m.miss.hint;
    }

    std::string summary =
        "fusion report (" + ::rlx::stringifyTarget(target).str() +
        "): " + std::to_string(misses.size()) + " missed; fused ops";
    if (before)
      summary += " before: " + formatHistogram(fusedOnly(*before)) + ";";
    summary += " after: " + formatHistogram(fusedOnly(after));
    if (assertClean && !misses.empty()) {
      InFlightDiagnostic diag = mlir::emitError(module.getLoc())
                                << "assert-clean: " << misses.size()
                                << " missed fusion(s)";
      for (const MIRMissedFusion &m : misses)
        diag.attachNote(m.loc)
            << "'" << stringifyMIRFusionKind(m.kind) << "': " << m.miss.reason;
      signalPassFailure();
    } else if (remarks) {
      mlir::emitRemark(module.getLoc(), summary);
    }

    if (!jsonFile.empty() &&
        failed(writeJson(t, *kinds, misses, before, after)))
      signalPassFailure();
    markAllAnalysesPreserved();
  }

  LogicalResult writeJson(::rlx::Target t, ArrayRef<MIRFusionKind> kinds,
                          ArrayRef<MIRMissedFusion> misses,
                          const std::optional<Histogram> &before,
                          const Histogram &after) {
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openOutputFile(jsonFile, &error);
    if (!file)
      return mlir::emitError(getOperation().getLoc(), "mir-fusion-report: ")
             << error;
    {
      llvm::json::OStream json(file->os(), /*IndentSize=*/2);
      json.objectBegin();
      json.attribute("target", ::rlx::stringifyTarget(t));
      json.attributeArray("fusions", [&] {
        for (MIRFusionKind kind : kinds)
          json.value(stringifyMIRFusionKind(kind));
      });
      json.attributeArray("missed", [&] {
        for (const MIRMissedFusion &m : misses)
          json.object([&] {
            json.attribute("fusion", stringifyMIRFusionKind(m.kind));
            json.attribute("op", m.opName);
            json.attribute("location", formatLocation(m.loc));
            json.attribute("reason", m.miss.reason);
            json.attribute("detail", m.miss.detail);
            json.attribute("hint", m.miss.hint);
          });
      });
      json.attributeObject("histogram", [&] {
        writeHistogram(json, "before", before);
        writeHistogram(json, "after", after);
      });
      json.attributeObject("fused", [&] {
        writeHistogram(json, "before",
                       before ? std::optional(fusedOnly(*before))
                              : std::nullopt);
        writeHistogram(json, "after", fusedOnly(after));
      });
      json.objectEnd();
    }
    file->os() << "\n";
    file->keep();
    return success();
  }
};
} // namespace
