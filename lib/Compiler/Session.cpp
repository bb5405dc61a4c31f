//===- Session.cpp - Compile RLX modules into runnable models -------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"
#include "Backend.h"
#include "RLX/Compiler/Specialize.h"
#include "RLX/Conversion/MIRToLIR/MIRToLIR.h"
#include "RLX/Conversion/Passes.h"
#include "RLX/Dialect/Common/RLXDialect.h"
#include "RLX/Dialect/HIR/IR/HIROps.h"
#include "RLX/Dialect/LIR/IR/LIROps.h"
#include "RLX/Dialect/LIR/Transforms/Passes.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Dialect/MIR/Transforms/Passes.h"
#include "RLX/InitAllDialects.h"
#include "RLX/Runtime/MemoryBudget.h"
#include "RLX/Transforms/Pipelines.h"
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
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include <chrono>
#include <cstdlib>

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

static std::string dumpDirFor(const CompileOptions &options) {
  if (!options.dumpDir.empty())
    return options.dumpDir;
  if (const char *env = std::getenv("RLX_IR_DUMP"))
    return env;
  return "";
}

void detail::dumpIR(StringRef dir, StringRef name, mlir::Operation *op) {
  if (dir.empty())
    return;
  llvm::sys::fs::create_directories(dir);
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, name);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (!ec)
    op->print(os);
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
  if (t.isInteger(8))
    return DType::I8;
  if (t.isInteger(1))
    return DType::Bool;
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
    }
    if (auto bound = io.getIndexBound())
      e.indexBound = *bound;
    if (auto layout = io.getLayout())
      e.layout = *layout == mlir::rlx::lir::ParamLayout::NK16
                     ? ParamLayout::NK16
                     : ParamLayout::RowMajor;
    m.entries.push_back(std::move(e));
  }
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

/// The function to compile.
static Expected<mlir::func::FuncOp> entryFunction(mlir::ModuleOp module,
                                                  StringRef name) {
  mlir::func::FuncOp found;
  for (auto f : module.getOps<mlir::func::FuncOp>()) {
    if (f.isDeclaration() || (!name.empty() && f.getSymName() != name) ||
        (name.empty() && f.isPrivate()))
      continue;
    if (found)
      return fail("the module has several public functions ('" +
                  found.getSymName() + "', '" + f.getSymName() +
                  "'); name the entry to compile");
    found = f;
  }
  if (!found)
    return fail(name.empty() ? llvm::Twine("the module has no function to "
                                           "compile")
                             : "no function named '" + name + "'");
  return found;
}

static std::string inputName(mlir::func::FuncOp f, unsigned i) {
  if (auto a = f.getArgAttrOfType<mlir::StringAttr>(i, mlir::rlx::kNameAttr))
    return a.str();
  return "input" + std::to_string(i);
}

//===----------------------------------------------------------------------===//
// The pipeline
//===----------------------------------------------------------------------===//

Expected<Session::Impl::Lowered>
Session::Impl::lower(mlir::ModuleOp input, const CompileOptions &options) {
  auto start = std::chrono::steady_clock::now();
  stats = CompileStats();
  detail::PhaseTimer phase(stats);
  std::string dir = dumpDirFor(options);
  DiagnosticCollector diags(context);
  mlir::OwningOpRef<mlir::ModuleOp> module(input.clone());
  detail::dumpIR(dir, "00-input.mlir", *module);

  // 1. Specialize: bind the dynamic dims of the inputs.
  Expected<mlir::func::FuncOp> fn = entryFunction(*module, options.entry);
  if (!fn)
    return fn.takeError();
  bool dynamic = llvm::any_of(fn->getArgumentTypes(), [](mlir::Type t) {
    auto ty = mlir::dyn_cast<mlir::RankedTensorType>(t);
    return ty && !ty.hasStaticShape();
  });
  if (dynamic) {
    llvm::SmallVector<llvm::SmallVector<int64_t, 4>> shapes;
    for (auto [i, t] : llvm::enumerate(fn->getArgumentTypes())) {
      std::string name = inputName(*fn, i);
      auto ty = mlir::dyn_cast<mlir::RankedTensorType>(t);
      if (!ty) {
        std::string s;
        llvm::raw_string_ostream os(s);
        os << t;
        return fail("input '" + name + "' has the type " + s +
                    "; only ranked tensors can be specialized");
      }
      auto it = options.inputShapes.find(name);
      if (it != options.inputShapes.end()) {
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
        shapes.push_back(it->second);
        continue;
      }
      if (!ty.hasStaticShape()) {
        std::string s;
        llvm::raw_string_ostream os(s);
        os << ty;
        return fail("input '" + name + "' has the dynamic type " + s +
                    "; give its concrete shape to specialize the template");
      }
      shapes.push_back(llvm::SmallVector<int64_t, 4>(ty.getShape()));
    }
    if (failed(mlir::rlx::specializeFunction(*fn, shapes)))
      return diags.error("specialization");
    detail::dumpIR(dir, "01-specialized.mlir", *module);
  }
  phase.done("specialize");

  // Profile hints no back end implements yet: said, not silently dropped.
  const CompileProfile::BackendProfile &hints = options.profile.backend;
  bool cpu = device == Device::Cpu;
  if (!cpu && hints.spirv.cooperativeMatrix)
    stats.warnings.push_back(
        "[backend.spirv] cooperative_matrix = true is not implemented: GEMMs "
        "use the tiled workgroup-memory kernel");

  // 2. HIR -> MIR, then fusion, cleanup and the fusion report, as the
  // profile says. (The compile pipeline starts with the same lowering,
  // a no-op by then; running it first lets the unfused MIR be dumped.)
  // Fusion target `auto` follows the device.
  CompileProfile profile = options.profile;
  if (profile.fusion.target == TargetChoice::Auto && device == Device::Vulkan)
    profile.fusion.target = TargetChoice::Spirv;
  {
    mlir::PassManager pm(&context);
    mlir::rlx::ConvertHIRToMIRPassOptions lowering;
    lowering.policy = profile.fusion.policy;
    pm.addPass(mlir::rlx::createConvertHIRToMIRPass(lowering));
    if (failed(pm.run(*module)))
      return diags.error("HIR to MIR lowering");
    detail::dumpIR(dir, "02-mir.mlir", *module);
  }
  phase.done("hir-to-mir");
  {
    mlir::PassManager pm(&context);
    std::string error;
    std::string json;
    if (!dir.empty()) {
      llvm::sys::fs::create_directories(dir);
      json = (llvm::Twine(dir) + "/fusion-report.json").str();
    }
    if (failed(mlir::rlx::buildCompilePipeline(pm, profile, &error, json)))
      return fail("compile profile: " + error);
    mlir::rlx::configureCompilePassManager(pm, profile);
    if (failed(pm.run(*module)))
      return diags.error("fusion");
    detail::dumpIR(dir, "03-mir-fused.mlir", *module);
  }
  // [backend.*] unfuse_regions: the fused graph run as plain ops.
  if (cpu ? hints.cpu.unfuseRegions : hints.spirv.unfuseRegions) {
    mlir::PassManager pm(&context);
    pm.addPass(mlir::rlx::createMIRUnfusePass());
    if (failed(pm.run(*module)))
      return diags.error("unfuse");
    detail::dumpIR(dir, "03-mir-unfused.mlir", *module);
  }
  phase.done("fusion");
  stats.fusionReport = diags.takeRemarks();
  stats.fusedOps = fusedHistogram(*module);

  // 3. MIR -> LIR: kernels over one planned arena.
  {
    mlir::PassManager pm(&context);
    mlir::rlx::ConvertMIRToLIRPassOptions o;
    pm.addPass(mlir::rlx::createConvertMIRToLIRPass(o));
    pm.addPass(mlir::rlx::lir::createLIRPlanArenaPass());
    if (failed(pm.run(*module)))
      return diags.error("MIR to LIR conversion");
    detail::dumpIR(dir, "04-lir.mlir", *module);
  }
  phase.done("mir-to-lir");
  auto entries = module->getOps<mlir::rlx::lir::EntryOp>();
  if (entries.empty())
    return fail("no LIR entry point was produced");
  mlir::rlx::lir::EntryOp entry = *entries.begin();
  Expected<Manifest> manifest = detail::readManifest(entry);
  if (!manifest)
    return manifest.takeError();
  stats.arenaBytes = manifest->arenaSize;
  stats.paramBytes = manifest->paramSize;
  // Refuse a model that cannot fit before generating its code.
  Expected<MemoryBudget> budget = MemoryBudget::get(options.memoryBudgetMB);
  if (!budget)
    return budget.takeError();
  if (Error err = budget->check(
          addBytes(manifest->arenaSize, manifest->paramSize)
              .value_or(UINT64_MAX),
          "the compiled model's arena (" + llvm::Twine(manifest->arenaSize) +
              " bytes) + parameters (" + llvm::Twine(manifest->paramSize) +
              " bytes)"))
    return std::move(err);
  stats.kernels =
      llvm::range_size(entry.getBlock().getOps<mlir::rlx::lir::KernelOp>());
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

Expected<CompiledModel> Session::compile(mlir::ModuleOp module,
                                         const CompileOptions &options) {
  auto start = std::chrono::steady_clock::now();
  Expected<Impl::Lowered> lowered = impl->lower(module, options);
  if (!lowered)
    return lowered.takeError();
  Expected<CompiledModel> model =
      impl->device == Device::Cpu
          ? detail::compileLIRForCpu(*lowered, options.profile, impl->stats)
          : detail::compileLIRForVulkan(*lowered, options.profile, impl->stats);
  impl->stats.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return model;
}

Expected<CompiledModel> Session::compileString(StringRef text,
                                               const CompileOptions &options) {
  DiagnosticCollector diags(impl->context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &impl->context);
  if (!module)
    return diags.error("parsing");
  return compile(*module, options);
}

/// Parses an `.mlir` file into `ctx`, with its diagnostics as the error.
static Expected<mlir::OwningOpRef<mlir::ModuleOp>>
parseFile(StringRef path, mlir::MLIRContext &ctx) {
  DiagnosticCollector diags(ctx);
  llvm::SourceMgr sm;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fail(path + ": " + buffer.getError().message());
  sm.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sm, &ctx);
  if (!module)
    return diags.error(path + ": parsing");
  return std::move(module);
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
