//===- Session.cpp - Compile RLX modules into runnable models -------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"
#include "Backend.h"
#include "CompileCache.h"
#include "RLX/Conversion/LIRToLLVM/LIRToLLVM.h"
#include "RLX/Conversion/MIRToLIR/MIRToLIR.h"
#include "RLX/Conversion/Passes.h"
#include "RLX/Dialect/Common/RLXDialect.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/LIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/InitAllDialects.h"
#include "RLX/Runtime/Collectives.h"
#include "RLX/Runtime/MemoryBudget.h"
#include "RLX/Support/FileIO.h"
#include "RLX/Transforms/Pipelines.h"
#include "RLX/Transforms/Specialize.h"
#include "RLX/Weights/GGUF.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include <chrono>
#include <cstdlib>
#include <optional>

using namespace rlx;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

struct Session::Impl {
  explicit Impl(Device device) : device(device) {
    mlir::DialectRegistry registry;
    mlir::rlx::registerAllRLXDialects(registry);
    mlir::registerBuiltinDialectTranslation(registry);
    mlir::registerLLVMDialectTranslation(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  using Lowered = detail::LIRModule;
  /// HIR/MIR/LIR -> planned LIR with its manifest.
  Expected<Lowered> lower(mlir::ModuleOp input, const CompileOptions &options);

  Device device;
  mlir::MLIRContext context;
  CompileStats stats;
  /// What the last lower() compiled, for CompiledModel::reflect().
  BuildInfo build;
};

Session::Session(Device device) : impl(std::make_unique<Impl>(device)) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
}
Session::~Session() = default;

mlir::MLIRContext &Session::context() { return impl->context; }
const CompileStats &Session::lastStats() const { return impl->stats; }
Device Session::device() const { return impl->device; }

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {
/// Collects the diagnostics of a compile into one message.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext &ctx)
      : handler(&ctx, [this](mlir::Diagnostic &d) {
          if (d.getSeverity() == mlir::DiagnosticSeverity::Remark) {
            remarks += (remarks.empty() ? "" : "\n") + d.str();
            return mlir::success();
          }
          llvm::raw_string_ostream os(text);
          if (!text.empty())
            os << "\n";
          os << d.getLocation() << ": " << d;
          for (mlir::Diagnostic &note : d.getNotes())
            os << "\n  note: " << note;
          return mlir::success();
        }) {}
  Error error(const llvm::Twine &stage) {
    return fail(stage + " failed" + (text.empty() ? "" : ":\n" + text));
  }
  std::string takeRemarks() { return std::exchange(remarks, ""); }

private:
  std::string text, remarks;
  mlir::ScopedDiagnosticHandler handler;
};
} // namespace

void detail::dumpIR(StringRef dir, StringRef name, mlir::Operation *op) {
  if (dir.empty())
    return;
  llvm::sys::fs::create_directories(dir);
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, name);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return;
  // As rlx-opt prints it, so the two can be compared.
  op->print(os);
  os << "\n";
}

static Expected<DType> dtypeOf(mlir::Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  if (t.isF64())
    return DType::F64;
  if (t.isInteger(32))
    return DType::I32;
  if (t.isInteger(64))
    return DType::I64;
  if (t.isInteger(16))
    return DType::I16;
  if (t.isInteger(8))
    return DType::I8;
  if (t.isInteger(1))
    return DType::Bool;
  if (auto q = mlir::dyn_cast<mlir::rlx::mir::QuantType>(t))
    if (std::optional<DType> d =
            dtypeOfGGMLType(static_cast<uint32_t>(q.getKind())))
      return *d;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return fail("element type " + s + " has no runtime dtype");
}

Expected<Manifest> detail::readManifest(mlir::rlx::lir::EntryOp entry) {
  Manifest m;
  m.entry = entry.getSymName().str();
  m.arenaSize = entry.getArenaSize();
  m.paramSize = entry.getParamSize();
  m.alignment = entry.getAlignment();
  for (auto io : entry.getBlock().getOps<mlir::rlx::lir::IOOp>()) {
    ManifestEntry e;
    e.kind = static_cast<IOKind>(io.getKind());
    e.name = io.getName().str();
    auto view = io.getView().getDefiningOp<mlir::rlx::lir::ViewOp>();
    e.offset = view.getByteOffset();
    auto ty = view.getType();
    e.shape.assign(ty.getShape().begin(), ty.getShape().end());
    Expected<DType> dt = dtypeOf(ty.getElementType());
    if (!dt)
      return fail(e.name + ": " + llvm::toString(dt.takeError()));
    e.dtype = *dt;
    if (auto sources = io.getSources()) {
      for (mlir::Attribute s : *sources)
        e.sources.push_back(mlir::cast<mlir::StringAttr>(s).str());
      e.concatAxis = *io.getConcatAxis();
      if (auto sizes = io.getSourceSizes())
        e.sourceSizes.assign(sizes->begin(), sizes->end());
      if (auto starts = io.getSourceStarts())
        e.sourceStarts.assign(starts->begin(), starts->end());
    }
    if (auto bound = io.getIndexBound())
      e.indexBound = *bound;
    if (auto layout = io.getLayout())
      e.layout = static_cast<ParamLayout>(*layout);
    m.entries.push_back(std::move(e));
  }
  // The ranks the collectives span: the MPI world the entry must run in.
  for (auto kernel : entry.getBlock().getOps<mlir::rlx::lir::KernelOp>()) {
    mlir::Operation *compute = kernel.getComputeOp();
    int64_t group = 0;
    if (auto r = llvm::dyn_cast_or_null<mlir::rlx::lir::AllReduceOp>(compute))
      group = r.getGroupSizeAttr().getInt();
    else if (auto g =
                 llvm::dyn_cast_or_null<mlir::rlx::lir::AllGatherOp>(compute))
      group = g.getGroupSizeAttr().getInt();
    if (group <= 1)
      continue;
    if (m.worldSize > 1 && m.worldSize != static_cast<uint64_t>(group))
      return fail("entry '" + m.entry + "' has collectives over " +
                  llvm::Twine(m.worldSize) + " and over " + llvm::Twine(group) +
                  " ranks");
    m.worldSize = group;
  }
  // Whose program of a tensor-parallel split this is.
  if (auto module = entry->getParentOfType<mlir::ModuleOp>()) {
    mlir::FailureOr<mlir::rlx::ProgramRank> rank =
        mlir::rlx::getProgramRank(module);
    if (mlir::failed(rank))
      return fail("the module's rlx.rank is malformed");
    if (rank->rank >= 0) {
      if (m.worldSize > 1 && m.worldSize != static_cast<uint64_t>(rank->ranks))
        return fail("the module is rank " + llvm::Twine(rank->rank) +
                    "'s program of " + llvm::Twine(rank->ranks) +
                    " ranks (rlx.rank), but its collectives span " +
                    llvm::Twine(m.worldSize));
      if (m.worldSize > 1)
        m.rank = rank->rank;
    }
  }
  // The JIT allocates from this manifest: refuse sizes that wrap.
  if (Error err = m.verify())
    return std::move(err);
  return m;
}

static std::string fusedHistogram(mlir::ModuleOp module) {
  llvm::StringMap<unsigned> counts;
  module.walk([&](mlir::Operation *op) {
    if (!llvm::isa<mlir::rlx::mir::MIRDialect>(op->getDialect()))
      return;
    StringRef name = op->getName().stripDialect();
    if (name.starts_with("fused_") || name.starts_with("attention") ||
        name == "elementwise")
      ++counts[name];
  });
  std::vector<std::string> parts;
  for (auto &kv : counts)
    parts.push_back((kv.getKey() + ": " + llvm::Twine(kv.getValue())).str());
  llvm::sort(parts);
  std::string s;
  for (auto &p : parts)
    s += (s.empty() ? "" : ", ") + p;
  return s.empty() ? "none" : s;
}

/// The function to compile, with the diagnostics as the error.
static Expected<mlir::func::FuncOp> entryFunction(mlir::ModuleOp module,
                                                  StringRef name) {
  std::string text;
  mlir::ScopedDiagnosticHandler handler(module.getContext(),
                                        [&](mlir::Diagnostic &d) {
                                          text = d.str();
                                          return mlir::success();
                                        });
  mlir::FailureOr<mlir::func::FuncOp> f =
      mlir::rlx::findEntryFunction(module, name);
  if (failed(f))
    return fail(text);
  return *f;
}

/// The entry point of a module already in LIR (no function with a body, one
/// or more lir.entry ops, e.g. from `rlx-opt --convert-mir-to-lir`), or none
/// when the module has functions to compile.
static Expected<std::optional<mlir::rlx::lir::EntryOp>>
lirEntryPoint(mlir::ModuleOp module, StringRef name) {
  for (auto f : module.getOps<mlir::func::FuncOp>())
    if (!f.isDeclaration())
      return std::nullopt;
  auto entries = module.getOps<mlir::rlx::lir::EntryOp>();
  if (entries.empty())
    return std::nullopt;
  std::string names;
  for (mlir::rlx::lir::EntryOp e : entries)
    names += (names.empty() ? "'" : ", '") + e.getSymName().str() + "'";
  if (!name.empty()) {
    for (mlir::rlx::lir::EntryOp e : entries)
      if (e.getSymName() == name)
        return e;
    return fail("no LIR entry point named '" + name + "' (the module has " +
                names + ")");
  }
  if (std::next(entries.begin()) != entries.end())
    return fail("the module has several LIR entry points (" + names +
                "); name the entry to compile");
  return *entries.begin();
}

/// The inputs of a LIR entry point are static: a shape given for one must be
/// its own.
static Error checkLIRInputShapes(mlir::rlx::lir::EntryOp entry,
                                 const CompileOptions &options) {
  llvm::StringMap<mlir::MemRefType> inputs;
  std::string known;
  for (auto io : entry.getBlock().getOps<mlir::rlx::lir::IOOp>()) {
    if (io.getKind() != mlir::rlx::lir::IOKind::Input)
      continue;
    inputs[io.getName()] = mlir::cast<mlir::MemRefType>(io.getView().getType());
    known += (known.empty() ? "" : ", ") + io.getName().str();
  }
  std::string unknown;
  for (const auto &[name, shape] : options.inputShapes) {
    auto it = inputs.find(name);
    if (it == inputs.end()) {
      unknown += (unknown.empty() ? "'" : ", '") + name + "'";
      continue;
    }
    if (it->second.getShape() == llvm::ArrayRef<int64_t>(shape))
      continue;
    std::string s;
    llvm::raw_string_ostream os(s);
    os << it->second;
    return fail("input '" + name + "' of type " + s +
                " cannot take the shape " + formatShape(shape));
  }
  if (options.rejectUnknownInputShapes && !unknown.empty())
    return fail("input_shapes names no input of '" + entry.getSymName() +
                "': " + unknown +
                " (the inputs are: " + (known.empty() ? "none" : known) + ")");
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Reflection
//===----------------------------------------------------------------------===//

static llvm::SmallVector<int64_t, 4> sourceShape(mlir::Type t) {
  llvm::SmallVector<int64_t, 4> shape;
  if (auto ty = mlir::dyn_cast<mlir::ShapedType>(t); ty && ty.hasRank())
    for (int64_t d : ty.getShape())
      shape.push_back(mlir::ShapedType::isDynamic(d) ? -1 : d);
  return shape;
}

/// The shapes of the entry function's inputs and results as the source
/// declares them, by manifest name.
static void recordSourceShapes(mlir::func::FuncOp fn, BuildInfo &build) {
  for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes()))
    build.sourceShapes.emplace_back(mlir::rlx::inputName(fn, i),
                                    sourceShape(t));
  for (auto [i, t] : llvm::enumerate(fn.getResultTypes())) {
    auto attr =
        fn.getResultAttrOfType<mlir::StringAttr>(i, mlir::rlx::kNameAttr);
    build.sourceShapes.emplace_back(
        attr ? attr.str() : "output" + std::to_string(i), sourceShape(t));
  }
}

/// The presets whose settings `profile` equals.
static std::vector<std::string> profilePresets(const CompileProfile &profile) {
  std::vector<std::string> names;
  for (StringRef name : CompileProfile::presetNames())
    if (std::optional<CompileProfile> p = CompileProfile::preset(name);
        p && *p == profile)
      names.push_back(name.str());
  return names;
}

/// Each kernel of `entry` with the ops of its body (constants left out).
static std::vector<KernelInfo> kernelInfos(mlir::rlx::lir::EntryOp entry) {
  std::vector<KernelInfo> out;
  for (auto k : entry.getBlock().getOps<mlir::rlx::lir::KernelOp>()) {
    KernelInfo info;
    info.name = k.getName().str();
    for (mlir::Operation &op : k.getBody().front()) {
      if (op.hasTrait<mlir::OpTrait::IsTerminator>() ||
          op.hasTrait<mlir::OpTrait::ConstantLike>())
        continue;
      info.op +=
          (info.op.empty() ? "" : " + ") + op.getName().getStringRef().str();
    }
    if (auto config = k.getConfig())
      info.strategy =
          mlir::rlx::lir::stringifyKernelStrategy(config->getStrategy()).str();
    if (auto library = k.getLibrary())
      info.library = library->str();
    out.push_back(std::move(info));
  }
  return out;
}

//===----------------------------------------------------------------------===//
// The pipeline
//===----------------------------------------------------------------------===//

namespace {
/// Watches the front-end pipeline: writes the IR of each stage to the dump
/// directory, closes a compile phase at each stage boundary, and takes the
/// fused-op histogram of the MIR that is lowered. Stages are recognised by
/// the pass that ends them, so Session and `rlx-opt` run the same pipeline.
class StageInstrumentation : public mlir::PassInstrumentation {
public:
  StageInstrumentation(std::string dir, detail::PhaseTimer &phase,
                       CompileStats &stats)
      : dir(std::move(dir)), phase(phase), stats(stats) {}

  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override {
    if (pass->getArgument() != "convert-mir-to-lir")
      return;
    // The MIR as it is lowered (fused, or unfused by the profile).
    if (!unfused)
      detail::dumpIR(dir, "03-mir-fused.mlir", op);
    stats.fusedOps = fusedHistogram(mlir::cast<mlir::ModuleOp>(op));
    phase.done("fusion");
  }

  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    StringRef arg = pass->getArgument();
    if (arg == "rlx-specialize-shapes") {
      detail::dumpIR(dir, "01-specialized.mlir", op);
      phase.done("specialize");
    } else if (arg == "convert-hir-to-mir") {
      detail::dumpIR(dir, "02-mir.mlir", op);
      phase.done("hir-to-mir");
    } else if (arg == "mir-unfuse") {
      unfused = true;
      detail::dumpIR(dir, "03-mir-fused.mlir", op);
      detail::dumpIR(dir, "03-mir-unfused.mlir", op);
    } else if (arg == "lir-plan-arena") {
      detail::dumpIR(dir, "04-lir.mlir", op);
      phase.done("mir-to-lir");
    } else if (arg == "lir-select-strategy") {
      detail::dumpIR(dir, "05-lir-decided.mlir", op);
    }
  }

private:
  std::string dir;
  detail::PhaseTimer &phase;
  CompileStats &stats;
  bool unfused = false;
};
} // namespace

/// `name:d0xd1x...` for rlx-specialize-shapes.
static std::string shapeOption(StringRef name, llvm::ArrayRef<int64_t> shape) {
  std::string s = (name + ":").str();
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

/// Checks the shapes given for the entry function's inputs and adds those
/// that specialize a dynamic dim to `frontend.shapes`, so that the messages
/// name the input and the shape as the caller gave them.
static Error checkEntryInputShapes(mlir::ModuleOp module,
                                   const CompileOptions &options,
                                   mlir::rlx::FrontendOptions &frontend) {
  Expected<mlir::func::FuncOp> fn = entryFunction(module, options.entry);
  if (!fn)
    return fn.takeError();
  frontend.entry = options.entry;
  // A shape for an input the entry does not take is a typo (callers that
  // pass shapes for every graph of a model leave the check off).
  if (options.rejectUnknownInputShapes) {
    llvm::StringSet<> names;
    std::string known;
    for (unsigned i = 0, e = fn->getNumArguments(); i < e; ++i) {
      std::string name = mlir::rlx::inputName(*fn, i);
      known += (known.empty() ? "" : ", ") + name;
      names.insert(name);
    }
    std::string unknown;
    for (const auto &entry : options.inputShapes)
      if (!names.contains(entry.first))
        unknown += (unknown.empty() ? "'" : ", '") + entry.first + "'";
    if (!unknown.empty())
      return fail("input_shapes names no input of '" + fn->getSymName().str() +
                  "': " + unknown + " (the inputs are: " +
                  (known.empty() ? "none" : known) + ")");
  }
  for (auto [i, t] : llvm::enumerate(fn->getArgumentTypes())) {
    std::string name = mlir::rlx::inputName(*fn, i);
    auto ty = mlir::dyn_cast<mlir::RankedTensorType>(t);
    if (!ty) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << t;
      return fail("input '" + name + "' has the type " + s +
                  "; only ranked tensors can be specialized");
    }
    auto it = options.inputShapes.find(name);
    if (it == options.inputShapes.end()) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << ty;
      if (!ty.hasStaticShape())
        return fail("input '" + name + "' has the dynamic type " + s +
                    "; give its concrete shape to specialize the template");
      continue;
    }
    llvm::ArrayRef<int64_t> shape = it->second;
    bool fits = shape.size() == static_cast<size_t>(ty.getRank());
    for (auto [d, s] : llvm::zip(ty.getShape(), shape))
      fits = fits && s >= 0 && (mlir::ShapedType::isDynamic(d) || d == s);
    if (!fits) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << ty;
      return fail("input '" + name + "' of type " + s +
                  " cannot take the shape " + formatShape(shape));
    }
    // A size that wraps would give the input a small arena.
    if (!mlir::rlx::mir::getCheckedStorageBytes(
            mlir::RankedTensorType::get(shape, ty.getElementType())))
      return fail("input '" + name + "' of shape " + formatShape(shape) +
                  " has a byte size past 2^63 - 1");
    if (!ty.hasStaticShape())
      frontend.shapes.push_back(shapeOption(name, shape));
  }
  return Error::success();
}

/// Refuses a model whose arena and parameters exceed the budget (the
/// options', else the profile's [execution] one, else the default), naming
/// where the budget came from.
/// Puts options.paramPagePhases on `module` as convert-mir-to-lir's
/// `rlx.param_pages`.
static void setParamPages(mlir::ModuleOp module,
                          const CompileOptions &options) {
  mlir::Builder b(module.getContext());
  llvm::SmallVector<mlir::NamedAttribute> phases;
  for (const auto &[name, phase] : options.paramPagePhases)
    phases.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(phase)));
  module->setAttr(mlir::rlx::kParamPagesAttr,
                  b.getDictionaryAttr(
                      {b.getNamedAttr("page_size", b.getI64IntegerAttr(
                                                       options.paramPageSize)),
                       b.getNamedAttr("phases", b.getDictionaryAttr(phases))}));
}

static Error checkBudget(const Manifest &m, const CompileOptions &options) {
  Expected<MemoryBudget> budget = MemoryBudget::get(
      options.memoryBudgetMB, options.profile.execution.memoryBudgetMB);
  if (!budget)
    return budget.takeError();
  return budget->check(addBytes(m.arenaSize, m.paramSize).value_or(UINT64_MAX),
                       "the compiled model's arena (" +
                           llvm::Twine(m.arenaSize) + " bytes) + parameters (" +
                           llvm::Twine(m.paramSize) + " bytes)");
}

Expected<Session::Impl::Lowered>
Session::Impl::lower(mlir::ModuleOp input, const CompileOptions &options) {
  auto start = std::chrono::steady_clock::now();
  stats = CompileStats();
  stats.onPhase = options.onPhase;
  build = BuildInfo();
  // Profile settings no back end implements yet are refused, not dropped.
  const CompileProfile::PrecisionProfile &precision = options.profile.precision;
  // compute = bf16 / f16 holds the activations between ops in that type
  // (mir-compute-precision); the kernels compute in f32.
  // The SPIR-V back end holds f16 values but no bf16 ones (docs/GPU.md).
  if (precision.compute == ComputePrecision::BF16 && device != Device::Cpu)
    return fail("[precision] compute = \"bf16\" is implemented on the CPU "
                "only: the SPIR-V back end holds no bf16 values (use compute "
                "= \"f16\" or \"f32\" on Vulkan)");
  if (precision.mixed != MixedPrecision::None)
    return fail("[precision] mixed = \"" +
                stringifyMixedPrecision(precision.mixed) +
                "\" is not implemented: the kernels compute in f32 and "
                "[precision] compute sets the type of the activations between "
                "them");
  // The SPIR-V back end holds f16 values but no bf16 ones (docs/GPU.md).
  if (precision.kvCache == ComputePrecision::BF16 && device != Device::Cpu)
    return fail("[precision] kv_cache = \"bf16\" is implemented on the CPU "
                "only: the SPIR-V back end holds no bf16 values (use "
                "kv_cache = \"f16\" or \"f32\" on Vulkan)");
  detail::PhaseTimer phase(stats);
  std::string dir = options.dumpDir;
  // The dump directory is made (or found) before anything is written to it.
  if (!dir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(dir))
      return fail("cannot create the IR dump directory '" + dir +
                  "': " + ec.message());
    if (!llvm::sys::fs::is_directory(dir))
      return fail("the IR dump directory '" + dir +
                  "' exists and is not a directory");
  }
  DiagnosticCollector diags(context);
  mlir::OwningOpRef<mlir::ModuleOp> module(input.clone());
  if (!options.paramPagePhases.empty() && device == Device::Cpu)
    setParamPages(*module, options);
  detail::dumpIR(dir, "00-input.mlir", *module);

  mlir::rlx::FrontendOptions frontend;
  frontend.fusionRemarks = true;
  frontend.tensorParallelRank = options.tensorParallelRank.value_or(0);
  frontend.tensorParallelLocalLogits = options.tensorParallelLocalLogits;
  // A module already in LIR runs its entry point as it is: its inputs are
  // static, and the back end's LIR decisions follow.
  Expected<std::optional<mlir::rlx::lir::EntryOp>> lirEntry =
      lirEntryPoint(*module, options.entry);
  if (!lirEntry)
    return lirEntry.takeError();
  if (*lirEntry) {
    if (Error err = checkLIRInputShapes(**lirEntry, options))
      return std::move(err);
  } else if (Error err = checkEntryInputShapes(*module, options, frontend)) {
    return std::move(err);
  } else if (Expected<mlir::func::FuncOp> fn =
                 entryFunction(*module, options.entry)) {
    recordSourceShapes(*fn, build);
  } else {
    llvm::consumeError(fn.takeError());
  }

  // Profile hints no back end implements yet: said, not silently dropped.
  const CompileProfile &profile = options.profile;
  bool cpu = device == Device::Cpu;
  if (!cpu && profile.backend.spirv.cooperativeMatrix)
    stats.warnings.push_back(
        "[backend.spirv] cooperative_matrix = true is not implemented: GEMMs "
        "use the tiled workgroup-memory kernel");

  // The front end and the target's decisions on LIR: one pipeline, the same
  // passes rlx-cpu-pipeline / rlx-gpu-pipeline run.
  if (!dir.empty())
    frontend.reportJsonFile = (llvm::Twine(dir) + "/fusion-report.json").str();
  {
    mlir::PassManager pm(&context);
    std::string error;
    if (failed(mlir::rlx::buildFrontendPipeline(
            pm, profile, cpu ? Target::Cpu : Target::Spirv, frontend, &error)))
      return fail("compile profile: " + error);
    if (cpu)
      mlir::rlx::buildCPULIRPipeline(pm,
                                     mlir::rlx::getCPUCodegenOptions(profile));
    mlir::rlx::configureCompilePassManager(pm, profile);
    pm.addInstrumentation(
        std::make_unique<StageInstrumentation>(dir, phase, stats));
    if (failed(pm.run(*module)))
      return diags.error("compilation");
  }
  stats.fusionReport = diags.takeRemarks();
  if (cpu)
    phase.done("lir-decisions");

  auto entries = module->getOps<mlir::rlx::lir::EntryOp>();
  if (entries.empty())
    return fail("no LIR entry point was produced");
  // The one named, when a module holds several (functions and LIR side by
  // side, as examples/three-levels.mlir).
  mlir::rlx::lir::EntryOp entry = *entries.begin();
  for (mlir::rlx::lir::EntryOp e : entries)
    if (!options.entry.empty() && e.getSymName() == options.entry)
      entry = e;
  Expected<Manifest> manifest = detail::readManifest(entry);
  if (!manifest)
    return manifest.takeError();
  stats.arenaBytes = manifest->arenaSize;
  stats.paramBytes = manifest->paramSize;
  // Refuse a model that cannot fit before generating its code.
  if (Error err = checkBudget(*manifest, options))
    return std::move(err);
  stats.kernels =
      llvm::range_size(entry.getBlock().getOps<mlir::rlx::lir::KernelOp>());
  // A module given in LIR declares static shapes: the manifest's.
  if (build.sourceShapes.empty())
    for (const ManifestEntry &e : manifest->entries)
      if (e.kind != IOKind::Param)
        build.sourceShapes.emplace_back(e.name, e.shape);
  build.profilePresets = profilePresets(options.profile);
  build.profileToml = options.profile.toToml();
  CompileProfile::NearestPreset nearest = options.profile.nearestPreset();
  build.profileNearest = nearest.name;
  build.profileDifferences = nearest.differences;
  build.fusedOps = stats.fusedOps;
  build.kernels = kernelInfos(entry);
  int64_t naive = 0;
  for (auto view : entry.getBlock().getOps<mlir::rlx::lir::ViewOp>())
    if (view.getSpace() == mlir::rlx::lir::MemorySpace::Arena &&
        !view.getSource())
      naive += (view.getExtentBytes() + 63) / 64 * 64;
  stats.naiveBytes = naive;

  stats.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return Lowered{std::move(module), std::move(*manifest), dir};
}

std::string CompileStats::phaseSummary() const {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::interleaveComma(phaseSeconds, os, [&](const auto &p) {
    os << p.first << " " << llvm::format("%.3f", p.second) << " s";
  });
  return out;
}

//===----------------------------------------------------------------------===//
// JIT and AOT
//===----------------------------------------------------------------------===//

std::string rlx::defaultCompileCacheDir() {
  if (const char *off = std::getenv("RLX_NO_CACHE")) {
    StringRef v(off);
    if (!(v.empty() || v == "0" || v.equals_insensitive("false") ||
          v.equals_insensitive("off") || v.equals_insensitive("no")))
      return "";
  }
  if (const char *dir = std::getenv("RLX_CACHE_DIR"); dir && *dir)
    return dir;
  llvm::SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    path = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(path, home, ".cache");
  else
    return "";
  llvm::sys::path::append(path, "rlx");
  return std::string(path);
}

/// CompileOptions::cacheMaxBytes, else $RLX_CACHE_MAX_MB (0: the default).
static uint64_t cacheCap(const CompileOptions &options) {
  if (options.cacheMaxBytes)
    return options.cacheMaxBytes;
  uint64_t mb = 0;
  if (const char *env = std::getenv("RLX_CACHE_MAX_MB"))
    if (StringRef(env).getAsInteger(10, mb))
      mb = 0;
  return mb << 20;
}

//===----------------------------------------------------------------------===//
// The three steps: template, specialized, compiled
//===----------------------------------------------------------------------===//

struct Specialized::State {
  Session::Impl *impl = nullptr;
  CompileOptions options;
  std::chrono::steady_clock::time_point start;
  std::optional<detail::CompileCache> cache;
  std::string key;
  std::vector<std::string> cacheWarnings;
  /// Exactly one of the two: the stored code, or the planned LIR.
  std::optional<detail::CacheEntry> hit;
  std::optional<detail::LIRModule> lowered;
  /// With a hit: the module, compiled when the stored code does not load.
  mlir::OwningOpRef<mlir::ModuleOp> source;
  CompileStats stats;
  BuildInfo build;
  bool compiled = false;

  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  }
};

Specialized::Specialized(std::unique_ptr<State> state)
    : state(std::move(state)) {}
Specialized::Specialized(Specialized &&) noexcept = default;
Specialized &Specialized::operator=(Specialized &&) noexcept = default;
Specialized::~Specialized() = default;

const Manifest &Specialized::manifest() const {
  return state->hit ? state->hit->manifest : state->lowered->manifest;
}
const CompileStats &Specialized::stats() const { return state->stats; }
bool Specialized::cached() const { return state->hit.has_value(); }

/// Plans `module` (HIR, MIR or LIR) into `s`: the front end and the LIR
/// decisions.
static Error lowerInto(Specialized::State &s, mlir::ModuleOp module) {
  Expected<detail::LIRModule> lowered = s.impl->lower(module, s.options);
  if (!lowered)
    return lowered.takeError();
  s.lowered = std::move(*lowered);
  s.stats = s.impl->stats;
  s.build = s.impl->build;
  return Error::success();
}

Expected<Specialized> Session::specialize(mlir::ModuleOp module,
                                          const CompileOptions &options) {
  // The profile's [execution] section: its device, budget and mode.
  const CompileProfile::ExecutionProfile &exec = options.profile.execution;
  bool cpu = impl->device == Device::Cpu;
  if (exec.device != ExecutionDevice::Any &&
      exec.device != (cpu ? ExecutionDevice::Cpu : ExecutionDevice::Vulkan))
    return fail(
        "[execution] device = \"" + stringifyExecutionDevice(exec.device) +
        "\", but this session compiles for " + (cpu ? "the CPU" : "Vulkan") +
        " (make the Session for that device; rlx-run --device)");
  auto s = std::make_unique<Specialized::State>();
  s->impl = impl.get();
  s->options = options;
  // A tensor-parallel compile is this process's rank's share.
  if (options.profile.parallel.tensor > 1 && !options.tensorParallelRank)
    s->options.tensorParallelRank = collectiveRank();
  s->start = std::chrono::steady_clock::now();
  // IR dumps need the compile to run.
  std::string deviceKey;
  if (!options.cacheDir.empty() && options.dumpDir.empty()) {
    s->cache.emplace(options.cacheDir, cacheCap(options));
    if (Error err = s->cache->prepare()) {
      s->cacheWarnings.push_back(llvm::toString(std::move(err)) +
                                 "; compiling without the cache");
      s->cache.reset();
    }
  }
  // On Vulkan the entry is for the device the profile selects.
  if (s->cache && !cpu) {
    Expected<std::string> key = detail::vulkanDeviceKey(options.profile);
    if (!key)
      return key.takeError();
    deviceKey = std::move(*key);
  }
  if (s->cache) {
    s->key =
        detail::CompileCache::key(module, s->options, impl->device, deviceKey);
    s->hit = s->cache->lookup(s->key, s->cacheWarnings);
  }
  if (exec.mode == ExecutionMode::Aot && !s->hit && !options.precompile) {
    if (!s->cache)
      return fail("[execution] mode = \"aot\" compiles nothing at run time, "
                  "and the compile cache is off (CompileOptions::cacheDir; "
                  "rlx-run --cache-dir)" +
                  (s->cacheWarnings.empty() ? std::string()
                                            : ": " + s->cacheWarnings[0]));
    return fail("[execution] mode = \"aot\" compiles nothing at run time, "
                "and the compile cache '" +
                options.cacheDir + "' holds no code for this graph (entry " +
                s->key +
                "); fill it first with rlx-run --precompile and the same "
                "model, profile and options");
  }
  if (s->hit) {
    s->stats = s->hit->stats;
    s->stats.cached = true;
    s->stats.cacheEntry = s->cache->entryPath(s->key);
    s->build = s->hit->build;
    s->source = module.clone();
  } else if (Error err = lowerInto(*s, module)) {
    return std::move(err);
  }
  impl->stats = s->stats;
  return Specialized(std::move(s));
}

Expected<CompiledModel> Specialized::compile() {
  State &s = *state;
  if (s.compiled)
    return fail("this specialized model was compiled already");
  s.compiled = true;
  Session::Impl &impl = *s.impl;
  auto finish = [&](Expected<CompiledModel> model) {
    llvm::append_range(s.stats.warnings, s.cacheWarnings);
    s.stats.notes = s.options.notes;
    s.stats.compileSeconds = s.seconds();
    if (model)
      model->setBuildInfo(s.build);
    impl.stats = s.stats;
    impl.build = s.build;
    return model;
  };
  if (s.hit) {
    // The budget, checked as a compile checks it (naming its origin); a
    // budget refusal is the model's answer, cached or not.
    if (Error err = checkBudget(s.hit->manifest, s.options))
      return std::move(err);
    std::optional<uint64_t> budgetMB =
        s.options.memoryBudgetMB ? s.options.memoryBudgetMB
                                 : s.options.profile.execution.memoryBudgetMB;
    Expected<CompiledModel> model =
        impl.device == Device::Cpu
            ? detail::loadCpuObject(std::move(s.hit->object), s.hit->manifest,
                                    s.options.profile, budgetMB)
            : detail::loadVulkanProgram(s.hit->object->getBuffer(),
                                        s.hit->manifest, s.options.profile,
                                        budgetMB);
    if (model) {
      double seconds = s.seconds();
      s.stats.phaseSeconds = {{"cached", seconds}};
      if (s.options.onPhase)
        s.options.onPhase("cached", seconds);
      return finish(std::move(model));
    }
    std::string message = llvm::toString(model.takeError());
    s.cacheWarnings.push_back("compile cache: entry '" +
                              s.cache->entryPath(s.key) + "' does not load (" +
                              message + "); it was compiled again");
    s.hit.reset();
    if (Error err = lowerInto(s, *s.source))
      return std::move(err);
  }
  CompileStats &stats = s.stats;
  stats.onPhase = s.options.onPhase;
  bool cpu = impl.device == Device::Cpu;
  std::string objectPath =
      s.cache && cpu ? s.cache->objectScratchPath(s.key) : "";
  // Kept before code generation moves the manifest into the model.
  Manifest manifest = s.cache ? s.lowered->manifest : Manifest();
  std::string program;
  Expected<CompiledModel> model =
      cpu ? detail::compileLIRForCpu(*s.lowered, s.options.profile, stats,
                                     objectPath)
          : detail::compileLIRForVulkan(*s.lowered, s.options.profile, stats,
                                        s.cache ? &program : nullptr);
  // The CPU's object code, as the JIT wrote it.
  std::unique_ptr<llvm::MemoryBuffer> object;
  if (!objectPath.empty()) {
    Expected<std::unique_ptr<llvm::MemoryBuffer>> read =
        readRegularFile(objectPath, /*requiresNullTerminator=*/false, "");
    if (read)
      object = std::move(*read);
    else
      llvm::consumeError(read.takeError());
    llvm::sys::fs::remove(objectPath);
  }
  if (model && s.cache) {
    detail::CacheEntry entry;
    entry.manifest = std::move(manifest);
    entry.build = s.build;
    // Warnings about the profile are the compile's, and come back with it.
    entry.stats = stats;
    s.cache->store(s.key, entry,
                   cpu ? (object ? object->getBuffer() : StringRef())
                       : StringRef(program),
                   s.cacheWarnings);
    stats.cacheEntry = s.cache->entryPath(s.key);
  }
  return finish(std::move(model));
}

Expected<CompiledModel> Session::compile(mlir::ModuleOp module,
                                         const CompileOptions &options) {
  Expected<Specialized> specialized = specialize(module, options);
  if (!specialized)
    return specialized.takeError();
  return specialized->compile();
}

struct Template::State {
  Session *session = nullptr;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  CompileOptions options;
  std::vector<TemplateInput> inputs;
  std::string fusionReport;
};

Template::Template(std::unique_ptr<State> state) : state(std::move(state)) {}
Template::Template(Template &&) noexcept = default;
Template &Template::operator=(Template &&) noexcept = default;
Template::~Template() = default;

const std::vector<TemplateInput> &Template::inputs() const {
  return state->inputs;
}
const std::string &Template::fusionReport() const {
  return state->fusionReport;
}

std::string Template::ir() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  state->module->print(os);
  return text;
}

Error Template::save(StringRef path) const {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return fail(path + ": " + ec.message());
  os << ir();
  os.close();
  if (os.has_error()) {
    std::string message = os.error().message();
    os.clear_error();
    return fail(path + ": " + message);
  }
  return Error::success();
}

Expected<Specialized> Template::specialize(
    const std::map<std::string, llvm::SmallVector<int64_t, 4>> &shapes) const {
  CompileOptions options = state->options;
  options.inputShapes = shapes;
  options.rejectUnknownInputShapes = true;
  return state->session->specialize(*state->module, options);
}

Expected<Template> Session::buildTemplate(mlir::ModuleOp module,
                                          const CompileOptions &options) {
  DiagnosticCollector diags(impl->context);
  Expected<std::optional<mlir::rlx::lir::EntryOp>> lir =
      lirEntryPoint(module, options.entry);
  if (!lir)
    return lir.takeError();
  if (*lir)
    return fail("a template is HIR or MIR with dynamic dims; this module "
                "is LIR already (compile it, or build the template from the "
                "source it was lowered from)");
  auto state = std::make_unique<Template::State>();
  state->session = this;
  state->options = options;
  state->options.inputShapes.clear();
  state->module = module.clone();
  Expected<mlir::func::FuncOp> fn =
      entryFunction(*state->module, options.entry);
  if (!fn)
    return fn.takeError();
  for (auto [i, t] : llvm::enumerate(fn->getArgumentTypes())) {
    auto ranked = llvm::dyn_cast<mlir::RankedTensorType>(t);
    std::string name = mlir::rlx::inputName(*fn, i);
    if (!ranked)
      return fail("input '" + name + "' is not a ranked tensor");
    Expected<DType> dtype = dtypeOf(ranked.getElementType());
    if (!dtype)
      return fail("input '" + name + "': " + llvm::toString(dtype.takeError()));
    TemplateInput in{name, *dtype, {}};
    for (int64_t d : ranked.getShape())
      in.shape.push_back(mlir::ShapedType::isDynamic(d) ? -1 : d);
    state->inputs.push_back(std::move(in));
  }
  // HIR -> fused MIR with the dims left symbolic, as `rlx-opt
  // --rlx-compile-pipeline` does.
  mlir::PassManager pm(&impl->context);
  std::string error;
  Target target = impl->device == Device::Cpu ? Target::Cpu : Target::Spirv;
  if (failed(mlir::rlx::buildCompilePipeline(pm, options.profile, target,
                                             &error, "",
                                             /*fusionRemarks=*/true)))
    return fail("compile profile: " + error);
  if (failed(pm.run(*state->module)))
    return diags.error("building the template");
  state->fusionReport = diags.takeRemarks();
  return Template(std::move(state));
}

/// Parses MLIR text into `ctx`, with its diagnostics as the error.
static Expected<mlir::OwningOpRef<mlir::ModuleOp>>
parseString(StringRef text, mlir::MLIRContext &ctx) {
  DiagnosticCollector diags(ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  if (!module)
    return diags.error("parsing");
  return std::move(module);
}

Expected<Template>
Session::buildTemplateFromString(StringRef text,
                                 const CompileOptions &options) {
  auto module = parseString(text, impl->context);
  if (!module)
    return module.takeError();
  return buildTemplate(**module, options);
}

Expected<CompiledModel> Session::compileString(StringRef text,
                                               const CompileOptions &options) {
  auto module = parseString(text, impl->context);
  if (!module)
    return module.takeError();
  return compile(**module, options);
}

/// Parses an `.mlir` file into `ctx`, with its diagnostics as the error.
static Expected<mlir::OwningOpRef<mlir::ModuleOp>>
parseFile(StringRef path, mlir::MLIRContext &ctx) {
  DiagnosticCollector diags(ctx);
  llvm::SourceMgr sm;
  // A FIFO or /dev/zero would be read forever: regular files only.
  Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readRegularFile(path, /*requiresNullTerminator=*/true, "");
  if (!buffer)
    return buffer.takeError();
  sm.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sm, &ctx);
  if (!module)
    return diags.error(path + ": parsing");
  return std::move(module);
}

Expected<Template> Session::loadTemplate(StringRef path,
                                         const CompileOptions &options) {
  auto module = parseFile(path, impl->context);
  if (!module)
    return module.takeError();
  return buildTemplate(**module, options);
}

Expected<CompiledModel> Session::compileFile(StringRef path,
                                             const CompileOptions &options) {
  auto module = parseFile(path, impl->context);
  if (!module)
    return module.takeError();
  return compile(**module, options);
}

Error Session::compileFileToLibrary(StringRef path, StringRef prefix,
                                    const CompileOptions &options) {
  auto module = parseFile(path, impl->context);
  if (!module)
    return module.takeError();
  return compileToLibrary(**module, prefix, options);
}

Error Session::compileToLibrary(mlir::ModuleOp module, StringRef prefix,
                                const CompileOptions &options) {
  if (impl->device != Device::Cpu)
    return fail("AOT libraries are CPU code; compile with Device::Cpu");
  Expected<Impl::Lowered> lowered = impl->lower(module, options);
  if (!lowered)
    return lowered.takeError();
  return detail::compileLIRToLibrary(*lowered, prefix, options.profile,
                                     impl->stats);
}
