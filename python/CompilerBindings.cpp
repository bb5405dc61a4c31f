//===- CompilerBindings.cpp - Sessions, compiled models, generation -------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Session (compile an HIR/MIR/LIR module, from a BuiltModel, MLIR text or a
// file), CompiledModel (NumPy in, NumPy out), and Generator (KV-cache
// generation with a recipe). Compiling and running release the GIL; each
// session and model serializes its own calls.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"
#include "RLX/Compiler/Session.h"
#include "RLX/Flow/Generate.h"
#include "RLX/Flow/Qwen3Next.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <cstdlib>
#include <mutex>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

using namespace rlx;
using namespace rlx::python;
using namespace nb::literals;

namespace {

/// `rlx.Session`.
struct PySession {
  explicit PySession(Device device) : session(device) {}
  Session session;
  std::mutex mutex;
};

/// `rlx.CompiledModel`: the runtime model plus what the compile produced.
struct PyCompiledModel {
  explicit PyCompiledModel(CompiledModel model) : model(std::move(model)) {}
  CompiledModel model;
  /// Parameters synthesized by the flow the model was built from.
  std::shared_ptr<const WeightSource> synthesized;
  CompileStats stats;
  /// The IR of each stage (stage name, text), when kept.
  std::vector<std::pair<std::string, std::string>> ir;
  std::string fusionReportJSON;
  /// The session that compiled the model.
  nb::object session;
  std::mutex mutex;
};

/// `rlx.Generator`.
struct PyGenerator {
  std::unique_ptr<Generator> generator;
  std::shared_ptr<const WeightSource> weights;
  nb::object session;
};

/// `rlx.Qwen3NextGenerator`.
struct PyQwen3NextGenerator {
  std::unique_ptr<Qwen3NextGenerator> generator;
  std::shared_ptr<const WeightSource> weights;
  nb::object session;
};

/// Token ids from a Python sequence (none: empty), each checked.
static std::vector<int32_t> tokenIds(nb::handle seq, llvm::StringRef what) {
  std::vector<int32_t> ids;
  if (seq.is_none())
    return ids;
  for (nb::handle t : seq)
    ids.push_back(static_cast<int32_t>(intInRange(
        t, what + "[" + llvm::Twine(ids.size()) + "]", 0, INT32_MAX)));
  return ids;
}

/// Where a compile reads its module from.
struct CompileSource {
  std::string text, path;
  const BuiltModel *built = nullptr;
};

/// A directory for a compile's IR dumps; a temporary one is removed when
/// done.
struct DumpDir {
  std::string path;
  bool temporary = false;
  ~DumpDir() {
    if (temporary && !path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};

} // namespace

static Device parseDevice(const std::string &name) {
  if (name == "cpu")
    return Device::Cpu;
  if (name == "vulkan" || name == "gpu")
    return Device::Vulkan;
  throw nb::value_error(
      ("unknown device '" + name + "' (expected 'cpu' or 'vulkan')").c_str());
}

static bool looksLikeMLIR(llvm::StringRef s) {
  return s.contains('{') || s.contains('\n');
}

static CompileSource compileSource(nb::handle source) {
  CompileSource s;
  if (nb::isinstance<BuiltModel>(source)) {
    s.built = &nb::cast<const BuiltModel &>(source);
    s.text = s.built->mlir;
  } else if (nb::isinstance<nb::str>(source)) {
    std::string str = nb::cast<std::string>(source);
    (looksLikeMLIR(str) ? s.text : s.path) = std::move(str);
  } else if (nb::hasattr(source, "__fspath__")) {
    s.path = pathString(source);
  } else {
    throw nb::type_error("compile: expected an rlx.BuiltModel, MLIR text or "
                         "a path to an .mlir file");
  }
  return s;
}

static CompileOptions compileOptions(const CompileSource &src,
                                     nb::handle profile, nb::handle inputShapes,
                                     const std::optional<std::string> &entry) {
  CompileOptions o;
  if (!profile.is_none())
    o.profile = toProfile(profile);
  else if (src.built)
    o.profile = src.built->profile;
  if (!inputShapes.is_none()) {
    for (nb::handle key : nb::iter(inputShapes.attr("keys")())) {
      std::string name = keyString(key, "input_shapes");
      llvm::SmallVector<int64_t, 4> dims;
      for (nb::handle d : inputShapes[key])
        dims.push_back(intInRange(
            d, "input_shapes['" + name + "'][" + llvm::Twine(dims.size()) + "]",
            0, INT64_MAX));
      o.inputShapes[name] = dims;
    }
    // A name the entry does not take is a typo: the compile names it.
    o.rejectUnknownInputShapes = true;
  }
  if (entry)
    o.entry = *entry;
  return o;
}

/// Refuses the profile keys a compile of `src` would drop: a module's
/// params and tensors have the types it declares ([precision] weights and
/// kv_cache are model recipes' keys, as is [execution] decode_buckets), and
/// a BuiltModel's were decided when its flow built it.
static void checkPrecision(const CompileSource &src, const CompileOptions &o) {
  if (!src.built) {
    check(o.profile.checkForModule(src.path.empty() ? "the module" : src.path));
    return;
  }
  const CompileProfile::PrecisionProfile &given = o.profile.precision,
                                         &built = src.built->profile.precision;
  auto refuse = [](llvm::StringRef key, llvm::StringRef value,
                   llvm::StringRef builtValue) {
    throw RLXError("profile: [precision] " + key.str() + " = \"" + value.str() +
                   "\", but the flow built this model with \"" +
                   builtValue.str() +
                   "\"; build the flow with the profile to change it");
  };
  if (given.weights != built.weights)
    refuse("weights", stringifyWeightPrecision(given.weights),
           stringifyWeightPrecision(built.weights));
  if (given.kvCache != built.kvCache)
    refuse("kv_cache", stringifyComputePrecision(given.kvCache),
           stringifyComputePrecision(built.kvCache));
  // The generator sizes its decode graphs by the built model's profile.
  if (o.profile.execution.decodeBuckets !=
      src.built->profile.execution.decodeBuckets)
    throw RLXError("profile: [execution] decode_buckets differ from the ones "
                   "the flow built this model with; build the flow with the "
                   "profile to change them");
}

static std::string readFile(const llvm::Twine &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

/// The IR files of a dump directory, in stage order: "02-mir.mlir" is stage
/// "mir".
static std::vector<std::pair<std::string, std::string>>
readStages(llvm::StringRef dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".mlir")
      files.push_back(it->path());
  llvm::sort(files);
  std::vector<std::pair<std::string, std::string>> stages;
  for (const std::string &f : files) {
    llvm::StringRef stem = llvm::sys::path::stem(f);
    auto [number, name] = stem.split('-');
    if (name.empty() || number.empty() || !llvm::all_of(number, llvm::isDigit))
      name = stem;
    stages.emplace_back(name.str(), readFile(f));
  }
  return stages;
}

static nb::object compile(PySession &s, nb::handle self, nb::handle source,
                          nb::handle profile, nb::handle inputShapes,
                          const std::optional<std::string> &entry,
                          nb::handle dumpDir, bool keepIR) {
  CompileSource src = compileSource(source);
  CompileOptions o = compileOptions(src, profile, inputShapes, entry);
  checkPrecision(src, o);
  DumpDir dir;
  const char *env = std::getenv("RLX_IR_DUMP");
  if (!dumpDir.is_none()) {
    dir.path = pathString(dumpDir);
  } else if (env && *env && !keepIR) {
    dir.path = env;
  } else if (keepIR) {
    llvm::SmallString<128> tmp;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("rlx-ir", tmp))
      throw RLXError("cannot create a directory for the IR: " + ec.message());
    dir.path = tmp.str().str();
    dir.temporary = true;
  }
  o.dumpDir = dir.path;

  CompileStats stats;
  auto compileIt = [&]() -> llvm::Expected<CompiledModel> {
    nb::gil_scoped_release noGil;
    std::lock_guard<std::mutex> lock(s.mutex);
    llvm::Expected<CompiledModel> model =
        src.path.empty() ? s.session.compileString(src.text, o)
                         : s.session.compileFile(src.path, o);
    stats = s.session.lastStats();
    return model;
  };
  CompiledModel model = unwrap(compileIt());
  for (const std::string &w : stats.warnings)
    if (PyErr_WarnEx(PyExc_UserWarning, w.c_str(), 1) != 0)
      throw nb::python_error();
  auto *result = new PyCompiledModel(std::move(model));
  nb::object owned = nb::cast(result, nb::rv_policy::take_ownership);
  result->stats = stats;
  result->session = nb::borrow(self);
  if (src.built)
    result->synthesized = src.built->synthesized;
  if (!dir.path.empty()) {
    result->ir = readStages(dir.path);
    result->fusionReportJSON = readFile(dir.path + "/fusion-report.json");
  }
  return owned;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

static nb::dict manifestEntryDict(const ManifestEntry &e) {
  nb::dict d;
  d["kind"] = ioKindName(e.kind).str();
  d["name"] = e.name;
  d["offset"] = e.offset;
  nb::list shape;
  for (int64_t s : e.shape)
    shape.append(s);
  d["shape"] = nb::tuple(shape);
  d["dtype"] = dtypeName(e.dtype).str();
  d["bytes"] = e.byteSize();
  if (!e.sources.empty()) {
    d["sources"] = e.sources;
    d["source_sizes"] = e.sourceSizes;
    d["concat_axis"] = e.concatAxis;
    if (!e.sourceStarts.empty())
      d["source_starts"] = e.sourceStarts;
  }
  if (e.indexBound >= 0)
    d["index_bound"] = e.indexBound;
  return d;
}

/// {name: (shape, numpy dtype name)} of the entries of `kind`.
static nb::dict specsOf(const Manifest &m, IOKind kind) {
  nb::dict d;
  for (const ManifestEntry *e : m.ofKind(kind)) {
    nb::list shape;
    for (int64_t s : e->shape)
      shape.append(s);
    d[e->name.c_str()] =
        nb::make_tuple(nb::tuple(shape), numpyDTypeName(e->dtype));
  }
  return d;
}

static nb::dict run(PyCompiledModel &m, nb::handle inputs) {
  // Inputs are read in place (C-contiguous arrays of the right dtype are not
  // copied before the model copies them into its arena).
  // The views own the arrays (and the shapes the TensorRefs point into).
  std::vector<std::pair<std::string, ArrayView>> views;
  for (nb::handle key : nb::iter(inputs.attr("keys")())) {
    std::string name = keyString(key, "inputs");
    nb::object value = inputs[key];
    // Python scalars and lists take the input's dtype; arrays must match.
    if (PyObject_IsInstance(value.ptr(), numpy().attr("ndarray").ptr()) != 1)
      if (const ManifestEntry *e = m.model.manifest().find(IOKind::Input, name))
        value = numpy().attr("asarray")(value, numpyDTypeName(e->dtype));
    ArrayView view = viewArray(value, "input '" + name + "'");
    views.emplace_back(std::move(name), std::move(view));
  }
  TensorRefMap_t feeds;
  for (const auto &[name, v] : views)
    feeds.emplace(name, TensorRef(v.dtype, v.shape, v.bytes));
  auto execute = [&]() -> llvm::Expected<TensorMap_t> {
    nb::gil_scoped_release noGil;
    std::lock_guard<std::mutex> lock(m.mutex);
    return m.model.runViews(feeds);
  };
  TensorMap_t outputs = unwrap(execute());
  nb::dict result;
  for (auto &[name, tensor] : outputs)
    result[name.c_str()] = arrayFromTensor(std::move(tensor));
  return result;
}

static void loadParams(PyCompiledModel &m, nb::handle weights) {
  PyWeights w = toWeights(weights);
  std::vector<const WeightSource *> sources = {w.source.get()};
  if (m.synthesized)
    sources.push_back(m.synthesized.get());
  WeightSourceStack all(sources);
  auto load = [&] {
    nb::gil_scoped_release noGil;
    std::lock_guard<std::mutex> lock(m.mutex);
    return m.model.loadParams(all);
  };
  check(load());
}

//===----------------------------------------------------------------------===//
// The three-step compile
//===----------------------------------------------------------------------===//

/// `rlx.Template`: the template and the Session it lives in.
struct PyTemplate {
  explicit PyTemplate(Template t) : tmpl(std::move(t)) {}
  /// Declared first, released last: the template's IR lives in the
  /// session's MLIR context.
  nb::object session;
  Template tmpl;
  std::shared_ptr<const WeightSource> synthesized;
};

/// `rlx.Specialized`: planned, not yet code.
struct PySpecialized {
  explicit PySpecialized(Specialized s) : spec(std::move(s)) {}
  /// Declared first, released last (as PyTemplate's).
  nb::object session;
  Specialized spec;
  std::shared_ptr<const WeightSource> synthesized;
};

static nb::object buildTemplate(nb::handle self, nb::handle source,
                                nb::handle profile,
                                const std::optional<std::string> &entry,
                                nb::handle cacheDir, bool isPath) {
  PySession &s = nb::cast<PySession &>(self);
  CompileSource src = isPath ? CompileSource() : compileSource(source);
  if (isPath)
    src.path = pathString(source);
  CompileOptions o = compileOptions(src, profile, nb::none(), entry);
  if (!cacheDir.is_none())
    o.cacheDir = pathString(cacheDir);
  auto build = [&]() -> llvm::Expected<Template> {
    nb::gil_scoped_release noGil;
    std::lock_guard<std::mutex> lock(s.mutex);
    return src.path.empty() ? s.session.buildTemplateFromString(src.text, o)
                            : s.session.loadTemplate(src.path, o);
  };
  auto *result = new PyTemplate(unwrap(build()));
  nb::object owned = nb::cast(result, nb::rv_policy::take_ownership);
  result->session = nb::borrow(self);
  if (src.built)
    result->synthesized = src.built->synthesized;
  return owned;
}

static void registerTemplate(nb::module_ &m) {
  nb::class_<PySpecialized>(
      m, "Specialized",
      "Step 2 of the three-step compile: concrete shapes and the arena plan,\n"
      "not yet code. compile() generates the code (or loads it from the\n"
      "compile cache).")
      .def_prop_ro(
          "manifest",
          [](PySpecialized &p) {
            nb::list entries;
            for (const ManifestEntry &e : p.spec.manifest().entries)
              entries.append(manifestEntryDict(e));
            return entries;
          },
          "The inputs, outputs and parameters with their offsets, shapes,\n"
          "dtypes and byte sizes.")
      .def_prop_ro(
          "arena_bytes",
          [](PySpecialized &p) { return p.spec.manifest().arenaSize; },
          "Size of the planned activation arena.")
      .def_prop_ro(
          "param_bytes",
          [](PySpecialized &p) { return p.spec.manifest().paramSize; },
          "Size of the parameter pool.")
      .def_prop_ro(
          "cached", [](PySpecialized &p) { return p.spec.cached(); },
          "The compile cache holds the code: compile() loads it.")
      .def(
          "compile",
          [](PySpecialized &p) {
            PySession &s = nb::cast<PySession &>(p.session);
            CompileStats stats;
            auto compileIt = [&]() -> llvm::Expected<CompiledModel> {
              nb::gil_scoped_release noGil;
              std::lock_guard<std::mutex> lock(s.mutex);
              llvm::Expected<CompiledModel> model = p.spec.compile();
              stats = s.session.lastStats();
              return model;
            };
            CompiledModel model = unwrap(compileIt());
            for (const std::string &w : stats.warnings)
              if (PyErr_WarnEx(PyExc_UserWarning, w.c_str(), 1) != 0)
                throw nb::python_error();
            auto *result = new PyCompiledModel(std::move(model));
            nb::object owned = nb::cast(result, nb::rv_policy::take_ownership);
            result->stats = stats;
            result->session = p.session;
            result->synthesized = p.synthesized;
            return owned;
          },
          nb::sig("def compile(self) -> CompiledModel"),
          "Step 3: the code, JIT-compiled (or loaded from the compile cache).\n"
          "Once only.");

  nb::class_<PyTemplate>(
      m, "Template",
      "Step 1 of the three-step compile: the model lowered to MIR and fused\n"
      "with its inputs' dynamic dims left symbolic. specialize() it once per\n"
      "shape.")
      .def_prop_ro(
          "inputs",
          [](PyTemplate &t) {
            nb::list out;
            for (const TemplateInput &in : t.tmpl.inputs()) {
              nb::list shape;
              for (int64_t d : in.shape)
                if (d < 0)
                  shape.append(nb::none());
                else
                  shape.append(d);
              out.append(nb::make_tuple(in.name, dtypeName(in.dtype).str(),
                                        nb::tuple(shape)));
            }
            return out;
          },
          nb::sig("def inputs(self) -> list[tuple[str, str, tuple[int | None, "
                  "...]]]"),
          "[(name, dtype, shape)], None for each dynamic dim.")
      .def_prop_ro(
          "ir", [](PyTemplate &t) { return t.tmpl.ir(); },
          "The template IR (fused MIR with `?` dims).")
      .def_prop_ro(
          "fusion_report", [](PyTemplate &t) { return t.tmpl.fusionReport(); },
          "What fusion did and missed.")
      .def(
          "specialize",
          [](PyTemplate &t, nb::handle inputShapes) {
            PySession &s = nb::cast<PySession &>(t.session);
            CompileOptions o =
                compileOptions(CompileSource(), nb::none(), inputShapes, {});
            auto run = [&]() -> llvm::Expected<Specialized> {
              nb::gil_scoped_release noGil;
              std::lock_guard<std::mutex> lock(s.mutex);
              return t.tmpl.specialize(o.inputShapes);
            };
            auto *result = new PySpecialized(unwrap(run()));
            nb::object owned = nb::cast(result, nb::rv_policy::take_ownership);
            result->session = t.session;
            result->synthesized = t.synthesized;
            return owned;
          },
          "input_shapes"_a,
          nb::sig("def specialize(self, input_shapes: typing.Mapping[str, "
                  "typing.Sequence[int]]) -> Specialized"),
          "Step 2: binds the dynamic dims (every dynamic input needs a\n"
          "shape; an unknown name is an error) and plans the arena.")
      .def(
          "save",
          [](PyTemplate &t, nb::handle path) {
            check(t.tmpl.save(pathString(path)));
          },
          "path"_a,
          nb::sig("def save(self, path: str | os.PathLike[str]) -> None"),
          "Writes the template IR (Session.load_template reads it back).");
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

static constexpr const char *compileDoc =
    "Compiles `source` and JITs it: an rlx.BuiltModel (its profile and\n"
    "synthesized parameters come along), MLIR text at any level (HIR, MIR "
    "or\nLIR), or a path to an .mlir file.\n\n"
    "profile: an rlx.CompileProfile, a preset name or a .toml path (default:\n"
    "  the BuiltModel's, else 'llama32_prefill').\n"
    "input_shapes: concrete shapes for inputs with dynamic dims, by name.\n"
    "entry: the function to compile (default: the only public one).\n"
    "dump_dir: write every stage's IR and fusion-report.json there.\n"
    "keep_ir: keep every stage's IR (CompiledModel.ir) and the fusion report\n"
    "  (CompiledModel.fusion_report) without a dump_dir.\n\n"
    "Errors (parse, verify, shape, lowering) raise rlx.RLXError with the\n"
    "compiler's diagnostics.";

static constexpr const char *compileSig =
    "def compile(self, source: BuiltModel | str | os.PathLike[str], *, "
    "profile: CompileProfile | str | None = None, input_shapes: "
    "typing.Mapping[str, typing.Sequence[int]] | None = None, entry: str | "
    "None = None, dump_dir: str | os.PathLike[str] | None = None, keep_ir: "
    "bool = False) -> CompiledModel";

static void registerSession(nb::module_ &m) {
  nb::class_<CompileStats>(m, "CompileStats", "What a compile did.")
      .def_ro("compile_seconds", &CompileStats::compileSeconds)
      .def_ro("arena_bytes", &CompileStats::arenaBytes,
              "Size of the planned activation arena.")
      .def_ro("naive_bytes", &CompileStats::naiveBytes,
              "Arena size without buffer reuse.")
      .def_ro("peak_live_bytes", &CompileStats::peakLiveBytes)
      .def_ro("param_bytes", &CompileStats::paramBytes)
      .def_ro("fused_ops", &CompileStats::fusedOps,
              "Fused-op histogram of the planned MIR (\"attention: 2, ...\").")
      .def_ro("fusion_remarks", &CompileStats::fusionReport,
              "The fusion report's remarks (missed fusions, histograms).")
      .def_ro("kernels", &CompileStats::kernels)
      .def_ro("kernel_functions", &CompileStats::kernelFunctions)
      .def_ro("phase_seconds", &CompileStats::phaseSeconds,
              "[(phase, seconds)] in order: specialize, hir-to-mir, fusion, "
              "mir-to-lir, then the back end's.")
      .def_ro("warnings", &CompileStats::warnings,
              "Profile hints this back end did not honour (also raised as "
              "Python warnings by Session.compile).")
      .def("__repr__", [](const CompileStats &s) {
        return "<rlx.CompileStats " + std::to_string(s.kernels) +
               " kernels, arena " + std::to_string(s.arenaBytes) +
               " bytes, fused ops: " + s.fusedOps + ">";
      });

  nb::class_<PySession>(
      m, "Session",
      "The compiler's front door: owns an MLIR context and turns modules at\n"
      "any level (HIR, MIR, LIR) into CompiledModels for a device.")
      .def(
          "__init__",
          [](PySession *self, const std::string &device) {
            new (self) PySession(parseDevice(device));
          },
          "device"_a = "cpu", "device: 'cpu' or 'vulkan'.")
      .def_prop_ro(
          "device",
          [](PySession &s) {
            return s.session.device() == Device::Cpu ? "cpu" : "vulkan";
          },
          "'cpu' or 'vulkan'.")
      .def(
          "compile",
          [](nb::handle self, nb::handle source, nb::handle profile,
             nb::handle inputShapes, std::optional<std::string> entry,
             nb::handle dumpDir, bool keepIR) {
            return compile(nb::cast<PySession &>(self), self, source, profile,
                           inputShapes, entry, dumpDir, keepIR);
          },
          "source"_a, nb::kw_only(), "profile"_a = nb::none(),
          "input_shapes"_a = nb::none(), "entry"_a = nb::none(),
          "dump_dir"_a = nb::none(), "keep_ir"_a = false, nb::sig(compileSig),
          compileDoc)
      .def(
          "compile_file",
          [](nb::handle self, nb::handle path, nb::handle profile,
             nb::handle inputShapes, std::optional<std::string> entry,
             nb::handle dumpDir, bool keepIR) {
            nb::object p = nb::module_::import_("pathlib").attr("Path")(path);
            return compile(nb::cast<PySession &>(self), self, p, profile,
                           inputShapes, entry, dumpDir, keepIR);
          },
          "path"_a, nb::kw_only(), "profile"_a = nb::none(),
          "input_shapes"_a = nb::none(), "entry"_a = nb::none(),
          "dump_dir"_a = nb::none(), "keep_ir"_a = false,
          nb::sig("def compile_file(self, path: str | os.PathLike[str], *, "
                  "profile: CompileProfile | str | None = None, "
                  "input_shapes: typing.Mapping[str, typing.Sequence[int]] | "
                  "None = None, entry: str | None = None, dump_dir: str | "
                  "os.PathLike[str] | None = None, keep_ir: bool = False) -> "
                  "CompiledModel"),
          "Parses and compiles an .mlir file (options as compile()).")
      .def(
          "compile_string",
          [](nb::handle self, const std::string &text, nb::handle profile,
             nb::handle inputShapes, std::optional<std::string> entry,
             nb::handle dumpDir, bool keepIR) {
            PySession &s = nb::cast<PySession &>(self);
            // A one-line module without braces would read as a path.
            std::string padded = looksLikeMLIR(text) ? text : text + "\n";
            return compile(s, self, nb::str(padded.c_str()), profile,
                           inputShapes, entry, dumpDir, keepIR);
          },
          "text"_a, nb::kw_only(), "profile"_a = nb::none(),
          "input_shapes"_a = nb::none(), "entry"_a = nb::none(),
          "dump_dir"_a = nb::none(), "keep_ir"_a = false,
          nb::sig("def compile_string(self, text: str, *, profile: "
                  "CompileProfile | str | None = None, input_shapes: "
                  "typing.Mapping[str, typing.Sequence[int]] | None = None, "
                  "entry: str | None = None, dump_dir: str | "
                  "os.PathLike[str] | None = None, keep_ir: bool = False) -> "
                  "CompiledModel"),
          "Parses and compiles MLIR text (options as compile()).")
      .def(
          "compile_to_library",
          [](PySession &s, nb::handle source, nb::handle prefix,
             nb::handle profile, nb::handle inputShapes,
             std::optional<std::string> entry) {
            CompileSource src = compileSource(source);
            CompileOptions o = compileOptions(src, profile, inputShapes, entry);
            checkPrecision(src, o);
            std::string out = pathString(prefix);
            DumpDir tmp;
            if (src.path.empty()) {
              llvm::SmallString<128> dir;
              if (std::error_code ec =
                      llvm::sys::fs::createUniqueDirectory("rlx-aot", dir))
                throw RLXError("cannot create a temporary directory: " +
                               ec.message());
              tmp.path = dir.str().str();
              tmp.temporary = true;
              src.path = tmp.path + "/module.mlir";
              std::error_code ec;
              llvm::raw_fd_ostream os(src.path, ec);
              if (ec)
                throw RLXError(src.path + ": " + ec.message());
              os << src.text;
            }
            auto build = [&] {
              nb::gil_scoped_release noGil;
              std::lock_guard<std::mutex> lock(s.mutex);
              return s.session.compileFileToLibrary(src.path, out, o);
            };
            check(build());
          },
          "source"_a, "prefix"_a, nb::kw_only(), "profile"_a = nb::none(),
          "input_shapes"_a = nb::none(), "entry"_a = nb::none(),
          nb::sig("def compile_to_library(self, source: BuiltModel | str | "
                  "os.PathLike[str], prefix: str | os.PathLike[str], *, "
                  "profile: CompileProfile | str | None = None, "
                  "input_shapes: typing.Mapping[str, typing.Sequence[int]] | "
                  "None = None, entry: str | None = None) -> None"),
          "AOT: compiles `source` to `<prefix>.so` and `<prefix>.json` (its\n"
          "manifest), for CompiledModel.load_library.")
      .def(
          "build_template",
          [](nb::handle self, nb::handle source, nb::handle profile,
             std::optional<std::string> entry, nb::handle cacheDir) {
            return buildTemplate(self, source, profile, entry, cacheDir,
                                 /*isPath=*/false);
          },
          "source"_a, nb::kw_only(), "profile"_a = nb::none(),
          "entry"_a = nb::none(), "cache_dir"_a = nb::none(),
          nb::sig("def build_template(self, source: BuiltModel | str | "
                  "os.PathLike[str], *, profile: CompileProfile | str | None "
                  "= None, entry: str | None = None, cache_dir: str | "
                  "os.PathLike[str] | None = None) -> Template"),
          "Step 1 of the three-step compile: `source` (as compile() takes\n"
          "it) lowered to fused MIR with its dynamic dims kept. cache_dir:\n"
          "the compile cache its specializations use (default: none).")
      .def(
          "load_template",
          [](nb::handle self, nb::handle path, nb::handle profile,
             std::optional<std::string> entry, nb::handle cacheDir) {
            return buildTemplate(self, path, profile, entry, cacheDir,
                                 /*isPath=*/true);
          },
          "path"_a, nb::kw_only(), "profile"_a = nb::none(),
          "entry"_a = nb::none(), "cache_dir"_a = nb::none(),
          nb::sig("def load_template(self, path: str | os.PathLike[str], *, "
                  "profile: CompileProfile | str | None = None, entry: str | "
                  "None = None, cache_dir: str | os.PathLike[str] | None = "
                  "None) -> Template"),
          "Reads a template written by Template.save (options as\n"
          "build_template()).")
      .def_prop_ro(
          "last_stats", [](PySession &s) { return s.session.lastStats(); },
          "What the last compile did.")
      .def("__repr__", [](PySession &s) {
        return std::string("<rlx.Session ") +
               (s.session.device() == Device::Cpu ? "cpu" : "vulkan") + ">";
      });
}

static void registerCompiledModel(nb::module_ &m) {
  nb::class_<PyCompiledModel>(
      m, "CompiledModel",
      "A compiled entry point with its arena and parameter pool. Set the\n"
      "parameters once (load_params / set_param), then run() as often as\n"
      "needed: NumPy arrays in, NumPy arrays out.")
      .def("run", &run, "inputs"_a,
           nb::sig("def run(self, inputs: typing.Mapping[str, "
                   "numpy.typing.ArrayLike]) -> dict[str, "
                   "numpy.typing.NDArray[typing.Any]]"),
           "Runs the model. Every input must be given with its exact shape\n"
           "and dtype (a NumPy array must match; a list or scalar is "
           "converted\nto the input's dtype). Inputs are copied in; each "
           "output is a new\narray that owns its data. Mismatches raise "
           "rlx.RLXError naming the\ntensor. bf16 inputs are "
           "ml_dtypes.bfloat16 arrays or the raw 16\nbits as '|V2' (the "
           ".npy convention); bf16 outputs come back as\nfloat32.\n\n"
           "Thread safety: runs of one CompiledModel share its arena, so "
           "runs\nfrom several threads are serialised (a lock per model); "
           "the GIL is\nreleased while the model runs, so other models (and "
           "other Python\nthreads) proceed meanwhile.")
      .def(
          "__call__",
          [](PyCompiledModel &m, nb::kwargs inputs) { return run(m, inputs); },
          nb::sig("def __call__(self, **inputs: numpy.typing.ArrayLike) -> "
                  "dict[str, numpy.typing.NDArray[typing.Any]]"),
          "run() with the inputs as keyword arguments.")
      .def(
          "set_param",
          [](PyCompiledModel &m, const std::string &name, nb::handle value) {
            Tensor t = tensorFromArray(value, "param '" + name + "'");
            std::lock_guard<std::mutex> lock(m.mutex);
            check(m.model.setParam(name, t));
          },
          "name"_a, "value"_a,
          nb::sig("def set_param(self, name: str, value: "
                  "numpy.typing.ArrayLike) -> None"),
          "Sets one parameter (or a source of a derived parameter) by name.\n"
          "The shape must match; float16 and float64 are converted.")
      .def("load_params", &loadParams, "weights"_a,
           nb::sig("def load_params(self, weights: Weights | str | "
                   "os.PathLike[str] | typing.Mapping[str, "
                   "numpy.typing.ArrayLike]) -> None"),
           "Loads every parameter the model needs from `weights` (plus the\n"
           "parameters the flow synthesized); fails on the first missing or\n"
           "mis-shaped one, naming it.")
      .def(
          "share_params",
          [](PyCompiledModel &m, PyCompiledModel &source) {
            check(m.model.shareParams(source.model));
          },
          "source"_a, nb::keep_alive<1, 2>(),
          "Uses `source`'s parameter pool (graphs of one model compiled for\n"
          "several shapes share their weights).")
      .def_prop_ro(
          "missing_params",
          [](PyCompiledModel &m) { return m.model.missingParams(); },
          "Names of the parameters not yet set.")
      .def_prop_ro(
          "weight_names",
          [](PyCompiledModel &m) { return m.model.weightNames(); },
          "Names the model reads from a weight source.")
      .def_prop_ro(
          "load_warnings",
          [](PyCompiledModel &m) {
            std::lock_guard<std::mutex> lock(m.mutex);
            return m.model.loadWarnings();
          },
          "What the last load_params found wrong but loaded anyway: one\n"
          "message per weight holding NaN or infinities, naming it and the\n"
          "count.")
      .def_prop_ro(
          "manifest",
          [](PyCompiledModel &m) {
            nb::list l;
            for (const ManifestEntry &e : m.model.manifest().entries)
              l.append(manifestEntryDict(e));
            return l;
          },
          nb::sig("def manifest(self) -> list[dict[str, typing.Any]]"),
          "Every input, parameter and output: kind, name, offset, shape, "
          "dtype,\nbytes (and the sources of derived parameters).")
      .def_prop_ro(
          "manifest_json",
          [](PyCompiledModel &m) { return m.model.manifest().toJSON(); },
          "The manifest as JSON (as written next to an AOT library).")
      .def(
          "reflect",
          [](PyCompiledModel &m) {
            std::string text;
            llvm::raw_string_ostream os(text);
            os << llvm::json::Value(m.model.reflect().toJSON());
            return nb::module_::import_("json").attr("loads")(text);
          },
          nb::sig("def reflect(self) -> dict[str, typing.Any]"),
          "What the model takes and gives, as `rlx-run --describe=json`\n"
          "prints it: inputs and outputs (dtype, shape, source_shape with\n"
          "None for a dynamic dim), params (count, bytes, weight blocks by\n"
          "name prefix), arena, kernels (the MIR op each computes) and\n"
          "profile (None for kernels and profile when loaded from an AOT\n"
          "library).")
      .def_prop_ro(
          "entry", [](PyCompiledModel &m) { return m.model.manifest().entry; },
          "The entry point's symbol.")
      .def_prop_ro(
          "arena_size",
          [](PyCompiledModel &m) { return m.model.manifest().arenaSize; },
          "Bytes of the activation arena.")
      .def_prop_ro(
          "param_size",
          [](PyCompiledModel &m) { return m.model.manifest().paramSize; },
          "Bytes of the parameter pool.")
      .def_prop_ro(
          "inputs",
          [](PyCompiledModel &m) {
            return specsOf(m.model.manifest(), IOKind::Input);
          },
          nb::sig("def inputs(self) -> dict[str, tuple[tuple[int, ...], "
                  "str]]"),
          "{name: (shape, numpy dtype name)} of the inputs.")
      .def_prop_ro(
          "outputs",
          [](PyCompiledModel &m) {
            return specsOf(m.model.manifest(), IOKind::Output);
          },
          nb::sig("def outputs(self) -> dict[str, tuple[tuple[int, ...], "
                  "str]]"),
          "{name: (shape, numpy dtype name)} of the outputs.")
      .def_prop_ro(
          "device", [](PyCompiledModel &m) { return m.model.deviceName(); },
          "Where the model runs (\"cpu\", \"vulkan: <device>\").")
      .def_ro("stats", &PyCompiledModel::stats, "What its compile did.")
      .def_prop_ro(
          "ir",
          [](PyCompiledModel &m) {
            nb::dict d;
            for (auto &[stage, text] : m.ir)
              d[stage.c_str()] = text;
            return d;
          },
          nb::sig("def ir(self) -> dict[str, str]"),
          "The IR of each stage, in order (input, specialized, mir, "
          "mir-fused,\nlir, llvm or spirv), when compiled with keep_ir=True "
          "or a dump_dir;\nelse empty.")
      .def_prop_ro(
          "fusion_report",
          [](PyCompiledModel &m) -> nb::object {
            if (m.fusionReportJSON.empty())
              return nb::none();
            return nb::module_::import_("json").attr("loads")(
                m.fusionReportJSON);
          },
          nb::sig("def fusion_report(self) -> dict[str, typing.Any] | None"),
          "The fusion report (target, fusions, missed fusions with reasons "
          "and\nhints, op histograms) as a dict, when compiled with "
          "keep_ir=True or a\ndump_dir and fusion ran; else None.")
      .def_static(
          "load_library",
          [](nb::handle lib, nb::handle manifest) {
            CompiledModel model = unwrap(CompiledModel::loadLibrary(
                pathString(lib), pathString(manifest)));
            return nb::cast(new PyCompiledModel(std::move(model)),
                            nb::rv_policy::take_ownership);
          },
          "library"_a, "manifest"_a,
          nb::sig("def load_library(library: str | os.PathLike[str], "
                  "manifest: str | os.PathLike[str]) -> CompiledModel"),
          "Loads an AOT library written by Session.compile_to_library.")
      .def("__repr__", [](PyCompiledModel &m) {
        std::string ins, outs;
        for (const ManifestEntry *e : m.model.manifest().ofKind(IOKind::Input))
          ins += (ins.empty() ? "" : ", ") + e->name;
        for (const ManifestEntry *e : m.model.manifest().ofKind(IOKind::Output))
          outs += (outs.empty() ? "" : ", ") + e->name;
        return "<rlx.CompiledModel " + m.model.manifest().entry + " (" + ins +
               ") -> (" + outs + ") on " + m.model.deviceName() + ">";
      });
}

//===----------------------------------------------------------------------===//
// Generation
//===----------------------------------------------------------------------===//

static void registerGenerator(nb::module_ &m) {
  nb::class_<SamplingOptions>(m, "SamplingOptions", "How tokens are picked.")
      .def(
          "__init__",
          [](SamplingOptions *self, float temperature, int topK, float topP,
             uint64_t seed) {
            new (self) SamplingOptions{temperature, topK, topP, seed};
          },
          nb::kw_only(), "temperature"_a = 0.0f, "top_k"_a = 0,
          "top_p"_a = 1.0f, "seed"_a = 0,
          "temperature 0 is greedy (argmax); top_k 0 and top_p 1 keep all "
          "tokens.")
      .def_rw("temperature", &SamplingOptions::temperature)
      .def_rw("top_k", &SamplingOptions::topK)
      .def_rw("top_p", &SamplingOptions::topP)
      .def_rw("seed", &SamplingOptions::seed);

  nb::class_<GenerationStats>(m, "GenerationStats", "What a generation did.")
      .def_ro("prompt_tokens", &GenerationStats::promptTokens)
      .def_ro("new_tokens", &GenerationStats::newTokens)
      .def_ro("decode_steps", &GenerationStats::decodeSteps)
      .def_ro("prefill_seconds", &GenerationStats::prefillSeconds)
      .def_ro("decode_seconds", &GenerationStats::decodeSeconds)
      .def_ro("compile_seconds", &GenerationStats::compileSeconds)
      .def_ro("load_seconds", &GenerationStats::loadSeconds)
      .def_ro("graphs_compiled", &GenerationStats::graphsCompiled)
      .def_ro("mapped_bytes", &GenerationStats::mappedBytes,
              "Bytes of the parameter pool mapped from the weights' file "
              "instead of copied (weights kept as stored, CPU).")
      .def_ro("param_bytes", &GenerationStats::paramBytes,
              "Bytes of the parameter pool.")
      .def_ro("past_bytes_copied", &GenerationStats::pastBytesCopied,
              "Bytes of cached keys and values copied into the graphs' past "
              "inputs (only the new rows when the cache stays in place).")
      .def_ro("prefill_collective_calls",
              &GenerationStats::prefillCollectiveCalls,
              "Under tensor parallelism, the collectives of the prompt step "
              "and its token's sampling.")
      .def_ro("prefill_collective_bytes",
              &GenerationStats::prefillCollectiveBytes,
              "Their payload bytes on this rank.")
      .def_ro("decode_collective_calls",
              &GenerationStats::decodeCollectiveCalls,
              "The collectives of the decode steps and their sampling.")
      .def_ro("decode_collective_bytes",
              &GenerationStats::decodeCollectiveBytes,
              "Their payload bytes on this rank.")
      .def_prop_ro("prefill_tokens_per_second",
                   &GenerationStats::prefillTokensPerSecond)
      .def_prop_ro("decode_tokens_per_second",
                   &GenerationStats::decodeTokensPerSecond)
      .def("__repr__", [](const GenerationStats &s) {
        return "<rlx.GenerationStats " + std::to_string(s.promptTokens) +
               " prompt tokens, " + std::to_string(s.newTokens) + " new, " +
               std::to_string(s.graphsCompiled) + " graphs compiled>";
      });

  nb::class_<PyGenerator>(
      m, "Generator",
      "Generates tokens with a decoder recipe and a KV cache preallocated to\n"
      "max_context. Decode graphs are compiled per bucket of past length on\n"
      "demand (by `session`) and share one parameter pool.")
      .def(
          "__init__",
          [](PyGenerator *self, nb::handle session, const DecoderFlow &recipe,
             nb::handle weights, int64_t maxContext) {
            PySession &s = nb::cast<PySession &>(session);
            PyWeights w = toWeights(weights);
            auto g = unwrap(
                Generator::create(s.session, recipe, *w.source, maxContext));
            new (self) PyGenerator{std::move(g), w.source, nb::borrow(session)};
          },
          "session"_a, "recipe"_a, "weights"_a, "max_context"_a = 512,
          nb::sig("def __init__(self, session: Session, recipe: DecoderFlow, "
                  "weights: Weights | str | os.PathLike[str] | "
                  "typing.Mapping[str, numpy.typing.ArrayLike], max_context: "
                  "int = 512) -> None"),
          "Builds the recipe's decode flow (checking `weights`).")
      .def(
          "generate",
          [](PyGenerator &g, nb::handle prompt, unsigned maxNewTokens,
             float temperature, int topK, float topP, uint64_t seed,
             std::optional<SamplingOptions> sampling, nb::handle onToken,
             bool returnLogits, nb::handle stopTokens) -> nb::object {
            std::vector<int32_t> ids = tokenIds(prompt, "prompt");
            std::vector<int32_t> stop = tokenIds(stopTokens, "stop_tokens");
            SamplingOptions opts =
                sampling ? *sampling
                         : SamplingOptions{temperature, topK, topP, seed};
            std::function<void(int32_t)> callback;
            nb::object fn = nb::borrow(onToken);
            if (!fn.is_none())
              callback = [&fn](int32_t token) {
                nb::gil_scoped_acquire gil;
                try {
                  fn(token);
                } catch (...) {
                  setPendingPythonError(std::current_exception());
                }
              };
            std::vector<std::vector<float>> steps;
            PySession &s = nb::cast<PySession &>(g.session);
            auto generate = [&] {
              nb::gil_scoped_release noGil;
              std::lock_guard<std::mutex> lock(s.mutex);
              return g.generator->generate(ids, maxNewTokens, opts, callback,
                                           returnLogits ? &steps : nullptr,
                                           stop);
            };
            std::vector<int32_t> tokens = unwrap(generate());
            nb::list out;
            for (int32_t t : tokens)
              out.append(t);
            if (!returnLogits)
              return out;
            int64_t vocab = g.generator->config().vocabSize;
            Tensor logits(DType::F32,
                          {static_cast<int64_t>(steps.size()), vocab});
            auto dst = logits.mutableData<float>();
            for (size_t i = 0; i < steps.size(); ++i)
              std::copy(steps[i].begin(), steps[i].end(),
                        dst.begin() + i * vocab);
            return nb::make_tuple(out, arrayFromTensor(std::move(logits)));
          },
          "prompt"_a, "max_new_tokens"_a = 32, nb::kw_only(),
          "temperature"_a = 0.0f, "top_k"_a = 0, "top_p"_a = 1.0f, "seed"_a = 0,
          "sampling"_a = nb::none(), "on_token"_a = nb::none(),
          "return_logits"_a = false, "stop_tokens"_a = nb::none(),
          nb::sig("def generate(self, prompt: typing.Sequence[int], "
                  "max_new_tokens: int = 32, *, temperature: float = 0.0, "
                  "top_k: int = 0, top_p: float = 1.0, seed: int = 0, "
                  "sampling: SamplingOptions | None = None, on_token: "
                  "typing.Callable[[int], object] | None = None, "
                  "return_logits: bool = False, stop_tokens: "
                  "typing.Sequence[int] | None = None) -> list[int] | "
                  "tuple[list[int], numpy.typing.NDArray[numpy.float32]]"),
          "Runs the prompt, then samples up to max_new_tokens tokens "
          "(greedy at\ntemperature 0; `sampling` overrides the keyword "
          "options). on_token(t)\nsees each new token. Generation stops "
          "after a token of stop_tokens\n(returned, as transformers' "
          "generate does; e.g. a tokenizer's eos_ids).\nWith return_logits, "
          "returns (tokens, logits): the [new tokens, vocab]\nlogits each "
          "token was sampled from.")
      .def_prop_ro(
          "stats", [](PyGenerator &g) { return g.generator->stats(); },
          "What the last generate() did.")
      .def_prop_ro(
          "config", [](PyGenerator &g) { return g.generator->config(); },
          "The model's config.");
}

/// `rlx.Qwen3NextGenerator`: generation with the hybrid models' carried
/// state.
static void registerQwen3NextGenerator(nb::module_ &m) {
  nb::class_<PyQwen3NextGenerator>(
      m, "Qwen3NextGenerator",
      "Generates with a Qwen3-Next / Qwen3.5 recipe: the prompt graph, then "
      "one-token\ndecode graphs over bucketed pasts, each layer's convolution "
      "window and\nrecurrent state carried; graphs share one copy of the "
      "weights.")
      .def(
          "__init__",
          [](PyQwen3NextGenerator *self, nb::handle session,
             const Qwen3NextFlow &recipe, nb::handle weights) {
            PySession &s = nb::cast<PySession &>(session);
            PyWeights w = toWeights(weights);
            auto g = unwrap(
                Qwen3NextGenerator::create(s.session, recipe, *w.source));
            new (self) PyQwen3NextGenerator{std::move(g), w.source,
                                            nb::borrow(session)};
          },
          "session"_a, "recipe"_a, "weights"_a,
          nb::sig("def __init__(self, session: Session, recipe: "
                  "Qwen3NextFlow, weights: Weights | str | os.PathLike[str] | "
                  "typing.Mapping[str, numpy.typing.ArrayLike]) -> None"))
      .def(
          "generate",
          [](PyQwen3NextGenerator &g, nb::handle prompt, unsigned maxNewTokens,
             float temperature, int topK, float topP, uint64_t seed,
             nb::handle stopTokens) {
            std::vector<int32_t> ids = tokenIds(prompt, "prompt");
            std::vector<int32_t> stop = tokenIds(stopTokens, "stop_tokens");
            SamplingOptions opts{temperature, topK, topP, seed};
            PySession &s = nb::cast<PySession &>(g.session);
            auto generate = [&] {
              nb::gil_scoped_release noGil;
              std::lock_guard<std::mutex> lock(s.mutex);
              return g.generator->generate(ids, maxNewTokens, opts, {}, stop);
            };
            return unwrap(generate());
          },
          "prompt"_a, "max_new_tokens"_a = 32, nb::kw_only(),
          "temperature"_a = 0.0f, "top_k"_a = 0, "top_p"_a = 1.0f, "seed"_a = 0,
          "stop_tokens"_a = nb::none(),
          nb::sig("def generate(self, prompt: typing.Sequence[int], "
                  "max_new_tokens: int = 32, *, temperature: float = 0.0, "
                  "top_k: int = 0, top_p: float = 1.0, seed: int = 0, "
                  "stop_tokens: typing.Sequence[int] | None = None) -> "
                  "list[int]"),
          "Runs the prompt, then samples up to max_new_tokens tokens (greedy "
          "at\ntemperature 0), stopping after a token of stop_tokens.");
}

void python::registerCompiler(nb::module_ &m) {
  registerSession(m);
  registerCompiledModel(m);
  registerTemplate(m);
  registerGenerator(m);
  registerQwen3NextGenerator(m);
}
