//===- RLXModule.cpp - The rlx Python module ------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The `rlx._rlx` extension: errors, NumPy conversions, weight sources and
// compile profiles. The flow API and the compiler are registered from
// FlowBindings.cpp and CompilerBindings.cpp.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"
#include "RLX/Flow/Config.h"
#include "RLX/Flow/Recipes.h"
#include "RLX/Profile/CompileProfile.h"
#include "RLX/Runtime/CpuExecutor.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/SafeTensors.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <cstring>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

using namespace rlx;
using namespace rlx::python;
using namespace nb::literals;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

static thread_local std::exception_ptr pendingError;

void python::setPendingPythonError(std::exception_ptr error) {
  if (!pendingError)
    pendingError = std::move(error);
}

void python::rethrowPendingPythonError() {
  if (!pendingError)
    return;
  std::exception_ptr error = std::exchange(pendingError, nullptr);
  std::rethrow_exception(error);
}

void python::throwError(llvm::Error err) {
  std::string message = llvm::toString(std::move(err));
  rethrowPendingPythonError();
  throw RLXError(message);
}

std::string python::keyString(nb::handle key, llvm::StringRef what) {
  if (!nb::isinstance<nb::str>(key))
    throw RLXError(
        (what + ": keys must be str, got " + pyStr(nb::repr(key)) + " (" +
         pyStr(nb::handle(Py_TYPE(key.ptr())).attr("__name__")) + ")")
            .str());
  return nb::cast<std::string>(key);
}

int64_t python::intInRange(nb::handle value, const llvm::Twine &what,
                           int64_t lo, int64_t hi) {
  int64_t v;
  // Not bool: True is an int to Python, never a dimension or a token.
  if (nb::isinstance<nb::bool_>(value) || !nb::try_cast(value, v) || v < lo ||
      v > hi)
    throw RLXError((what + ": " + pyStr(nb::repr(value)) +
                    " is not an integer in [" + llvm::Twine(lo) + ", " +
                    llvm::Twine(hi) + "]")
                       .str());
  return v;
}

std::string python::pathString(nb::handle path) {
  nb::object fspath = nb::module_::import_("os").attr("fspath")(path);
  if (!nb::isinstance<nb::str>(fspath))
    throw nb::type_error("expected a str path");
  return nb::cast<std::string>(fspath);
}

//===----------------------------------------------------------------------===//
// NumPy
//===----------------------------------------------------------------------===//

nb::module_ python::numpy() { return nb::module_::import_("numpy"); }

namespace {
struct DTypeName {
  DType dtype;
  const char *numpy;
};
} // namespace

static constexpr DTypeName dtypeNames[] = {
    {DType::F32, "float32"}, {DType::F16, "float16"}, {DType::F64, "float64"},
    {DType::I8, "int8"},     {DType::I16, "int16"},   {DType::I32, "int32"},
    {DType::I64, "int64"},   {DType::U8, "uint8"},    {DType::Bool, "bool"},
};

/// The numpy dtypes RLX reads, for messages.
static constexpr const char *kNumpyDTypes =
    "float32, float16, float64, int8, int16, int32, int64, uint8, bool, and "
    "bf16 as ml_dtypes.bfloat16 or the raw 16 bits as '|V2'";

std::optional<DType> python::dtypeOfNumpy(nb::handle dtype) {
  std::string name = pyStr(dtype.attr("name"));
  for (const DTypeName &d : dtypeNames)
    if (name == d.numpy)
      return d.dtype;
  // bf16: ml_dtypes' bfloat16, or the raw 16 bits as a 2-byte void ('|V2',
  // the .npy convention of docs/Weights.md; numpy has no bfloat16).
  if (name == "bfloat16" && nb::cast<int64_t>(dtype.attr("itemsize")) == 2)
    return DType::BF16;
  if (pyStr(dtype.attr("kind")) == "V" &&
      nb::cast<int64_t>(dtype.attr("itemsize")) == 2 &&
      dtype.attr("fields").is_none())
    return DType::BF16;
  return std::nullopt;
}

const char *python::numpyDTypeName(DType dtype) {
  for (const DTypeName &d : dtypeNames)
    if (d.dtype == dtype)
      return d.numpy;
  return dtype == DType::BF16 ? "bfloat16" : "unsupported";
}

DType python::parseDType(nb::handle spec) {
  if (nb::isinstance<nb::str>(spec))
    if (std::optional<DType> d = dtypeFromName(nb::cast<std::string>(spec)))
      return *d;
  nb::object dtype;
  try {
    dtype = numpy().attr("dtype")(spec);
  } catch (nb::python_error &) {
    throw nb::type_error(
        ("not a dtype: " + nb::cast<std::string>(nb::repr(spec))).c_str());
  }
  if (std::optional<DType> d = dtypeOfNumpy(dtype))
    return *d;
  throw nb::type_error(("numpy dtype " + pyStr(dtype) + " has no RLX type (" +
                        kNumpyDTypes + ")")
                           .c_str());
}

nb::object python::contiguousArray(nb::handle value) {
  return numpy().attr("ascontiguousarray")(value);
}

using HostArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

/// The bytes of a C-contiguous numpy array; rlx.RLXError naming `what` for
/// one nanobind cannot view (a big-endian array: nb::cast would raise a bare
/// std::bad_cast).
static HostArray hostArray(nb::handle array, llvm::StringRef what) {
  nb::object dtype = array.attr("dtype");
  if (!nb::cast<bool>(dtype.attr("isnative")))
    throw RLXError((what + ": numpy " + pyStr(nb::repr(dtype)) +
                    " is not in this machine's byte order; convert it "
                    "first (array.astype(array.dtype.newbyteorder('=')))")
                       .str());
  HostArray host;
  if (!nb::try_cast(array, host))
    throw RLXError((what + ": numpy " + pyStr(nb::repr(dtype)) +
                    " array cannot be read as a C-contiguous host array")
                       .str());
  return host;
}

ArrayView python::viewArray(nb::handle value, llvm::StringRef what) {
  ArrayView view;
  view.array = contiguousArray(value);
  std::optional<DType> dtype = dtypeOfNumpy(view.array.attr("dtype"));
  for (nb::handle d : nb::cast<nb::tuple>(view.array.attr("shape")))
    view.shape.push_back(nb::cast<int64_t>(d));
  if (!dtype)
    throw RLXError((what + ": numpy " + pyStr(view.array.attr("dtype")) +
                    formatShape(view.shape) + " has no RLX element type (" +
                    kNumpyDTypes + ")")
                       .str());
  view.dtype = *dtype;
  // bf16 bytes read as uint16 (nanobind takes no void or ml_dtypes arrays).
  if (*dtype == DType::BF16)
    view.array = view.array.attr("view")("uint16");
  HostArray host = hostArray(view.array, what);
  view.bytes = {static_cast<const uint8_t *>(host.data()), host.nbytes()};
  return view;
}

Tensor python::tensorFromArray(nb::handle value, llvm::StringRef what) {
  ArrayView view = viewArray(value, what);
  Tensor tensor(view.dtype, view.shape);
  if (tensor.byteSize())
    std::memcpy(tensor.mutableBytes().data(), view.bytes.data(),
                tensor.byteSize());
  return tensor;
}

static nb::dlpack::dtype dlpackType(DType dtype) {
  using Code = nb::dlpack::dtype_code;
  auto make = [](Code code, unsigned bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code),
                             static_cast<uint8_t>(bits), 1};
  };
  switch (dtype) {
  case DType::F32:
    return make(Code::Float, 32);
  case DType::F16:
    return make(Code::Float, 16);
  case DType::F64:
    return make(Code::Float, 64);
  case DType::I8:
    return make(Code::Int, 8);
  case DType::I16:
    return make(Code::Int, 16);
  case DType::I32:
    return make(Code::Int, 32);
  case DType::I64:
    return make(Code::Int, 64);
  case DType::U8:
    return make(Code::UInt, 8);
  case DType::Bool:
    return make(Code::Bool, 8);
  default:
    throw RLXError(("no numpy type for " + dtypeName(dtype)).str());
  }
}

nb::object python::arrayFromTensor(Tensor tensor) {
  if (tensor.dtype() == DType::BF16) {
    Tensor wide(DType::F32, tensor.shape());
    auto src = tensor.data<uint16_t>();
    auto dst = wide.mutableData<float>();
    for (size_t i = 0; i < dst.size(); ++i)
      dst[i] = bf16ToF32(src[i]);
    tensor = std::move(wide);
  }
  nb::dlpack::dtype dtype = dlpackType(tensor.dtype());
  auto *owned = new Tensor(std::move(tensor));
  nb::capsule owner(owned,
                    [](void *p) noexcept { delete static_cast<Tensor *>(p); });
  llvm::SmallVector<size_t, 4> shape(owned->shape().begin(),
                                     owned->shape().end());
  return nb::ndarray<nb::numpy>(owned->mutableBytes().data(), shape.size(),
                                shape.data(), owner, nullptr, dtype)
      .cast();
}

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

namespace {
/// A WeightSource over NumPy arrays, without copies: each array is kept
/// (C-contiguous) and read in place.
class NumpyWeights final : public WeightSource {
public:
  explicit NumpyWeights(std::string description)
      : desc(std::move(description)) {}

  void add(const std::string &name, nb::handle value) {
    if (entries.count(name))
      throw RLXError(desc + ": tensor '" + name + "' given twice");
    Entry e;
    e.array = contiguousArray(value);
    std::optional<DType> dtype = dtypeOfNumpy(e.array.attr("dtype"));
    if (!dtype)
      throw RLXError(desc + ": tensor '" + name + "': numpy dtype " +
                     pyStr(e.array.attr("dtype")) + " has no RLX type (" +
                     kNumpyDTypes + ")");
    e.info.name = name;
    e.info.dtype = *dtype;
    if (*dtype == DType::BF16) // Read as uint16, as viewArray does.
      e.array = e.array.attr("view")("uint16");
    for (nb::handle d : nb::cast<nb::tuple>(e.array.attr("shape")))
      e.info.shape.push_back(nb::cast<int64_t>(d));
    HostArray host = hostArray(e.array, desc + ": tensor '" + name + "'");
    e.info.byteSize = host.nbytes();
    e.data = static_cast<const uint8_t *>(host.data());
    order.push_back(name);
    entries.try_emplace(name, std::move(e));
  }

  std::vector<std::string> names() const override { return order; }
  const TensorInfo *lookup(llvm::StringRef name) const override {
    auto it = entries.find(name);
    return it == entries.end() ? nullptr : &it->second.info;
  }
  llvm::StringRef description() const override { return desc; }
  llvm::Expected<llvm::ArrayRef<uint8_t>>
  rawBytes(llvm::StringRef name) const override {
    auto it = entries.find(name);
    if (it == entries.end())
      return missingTensor(name);
    return llvm::ArrayRef<uint8_t>(it->second.data, it->second.info.byteSize);
  }

private:
  struct Entry {
    TensorInfo info;
    nb::object array;
    const uint8_t *data = nullptr;
  };
  std::string desc;
  std::vector<std::string> order;
  llvm::StringMap<Entry> entries;
};
} // namespace

static std::shared_ptr<const WeightSource>
openWeights(const std::string &path) {
  llvm::StringRef p(path);
  if (p.ends_with(".gguf")) {
    auto file = unwrap(GGUFFile::open(path));
    std::optional<llvm::StringRef> arch =
        file->getString("general.architecture");
    // The architectures rlx-run reads, under Hugging Face names.
    if (arch && llvm::is_contained(LlamaGGUFConfig::architectures(), *arch)) {
      llvm::Expected<TransformerConfig> cfg =
          TransformerConfig::fromGGUF(*file);
      std::unique_ptr<WeightSource> named =
          unwrap(GGUFLlamaWeights::create(std::move(file)));
      // Read as its recipe reads it (Phi-3's fused matrices split); a config
      // that does not parse is the recipe's to report.
      if (cfg)
        return unwrap(recipeWeights(*cfg, std::move(named)));
      llvm::consumeError(cfg.takeError());
      return std::shared_ptr<const WeightSource>(std::move(named));
    }
    return std::shared_ptr<const WeightSource>(std::move(file));
  }
  if (!llvm::sys::fs::exists(path))
    throw RLXError(path + ": no such file or directory");
  std::unique_ptr<WeightSource> weights =
      unwrap(SafeTensorsFile::openModelDir(path));
  // A model directory is read as its recipe reads it (Phi-3's fused
  // matrices split); a config that does not parse is the recipe's to report.
  llvm::SmallString<128> cfgPath(path);
  llvm::sys::path::append(cfgPath, "config.json");
  if (llvm::sys::fs::is_regular_file(cfgPath)) {
    if (llvm::Expected<TransformerConfig> cfg =
            TransformerConfig::fromFile(cfgPath))
      return unwrap(recipeWeights(*cfg, std::move(weights)));
    else
      llvm::consumeError(cfg.takeError());
  }
  return std::shared_ptr<const WeightSource>(std::move(weights));
}

static std::shared_ptr<const WeightSource> arrayWeights(nb::handle mapping) {
  auto source = std::make_shared<NumpyWeights>("<arrays>");
  for (nb::handle key : nb::iter(mapping.attr("keys")()))
    source->add(keyString(key, "weights"), mapping[key]);
  return source;
}

PyWeights python::toWeights(nb::handle value) {
  if (nb::isinstance<PyWeights>(value))
    return nb::cast<PyWeights>(value);
  if (nb::hasattr(value, "keys") && nb::hasattr(value, "__getitem__"))
    return {arrayWeights(value)};
  if (nb::isinstance<nb::str>(value) || nb::hasattr(value, "__fspath__"))
    return {openWeights(pathString(value))};
  throw nb::type_error("weights: expected rlx.Weights, a path (model "
                       "directory, .safetensors or .gguf) or a mapping of "
                       "names to arrays");
}

static nb::dict tensorInfoDict(const TensorInfo &info) {
  nb::dict d;
  d["name"] = info.name;
  d["dtype"] = dtypeName(info.dtype).str();
  nb::list shape;
  for (int64_t s : info.shape)
    shape.append(s);
  d["shape"] = nb::tuple(shape);
  return d;
}

void python::registerWeights(nb::module_ &m) {
  nb::class_<PyWeights>(
      m, "Weights",
      "Named tensors a model reads its parameters from: a Hugging Face model\n"
      "directory (config.json + model.safetensors or a sharded index), a\n"
      ".safetensors file, a GGUF file (LLaMA GGUFs are presented under the\n"
      "Hugging Face names), or NumPy arrays. Every tensor reads as float32.")
      .def_static(
          "open",
          [](nb::handle path) {
            return PyWeights{openWeights(pathString(path))};
          },
          "path"_a,
          nb::sig("def open(path: str | os.PathLike[str]) -> Weights"),
          "Opens a model directory, a .safetensors file or a .gguf file.")
      .def_static(
          "from_arrays",
          [](nb::handle mapping) { return PyWeights{arrayWeights(mapping)}; },
          "arrays"_a,
          nb::sig("def from_arrays(arrays: typing.Mapping[str, "
                  "numpy.typing.ArrayLike]) -> Weights"),
          "Weights over NumPy arrays (float32, float16, float64, integer,\n"
          "bool, or bf16 as ml_dtypes.bfloat16 or '|V2'), read in place\n"
          "without copies.")
      .def(
          "names", [](const PyWeights &w) { return w.source->names(); },
          "The tensor names, in the source's order.")
      .def(
          "keys", [](const PyWeights &w) { return w.source->names(); },
          "The tensor names (as names()).")
      .def(
          "info",
          [](const PyWeights &w, const std::string &name) {
            const TensorInfo *info = w.source->lookup(name);
            if (!info)
              throw nb::key_error(name.c_str());
            return tensorInfoDict(*info);
          },
          "name"_a,
          nb::sig("def info(self, name: str) -> dict[str, typing.Any]"),
          "The stored dtype and shape of tensor `name`.")
      .def_prop_ro(
          "description",
          [](const PyWeights &w) { return w.source->description().str(); },
          "Where the tensors come from (a path, usually).")
      .def("__len__",
           [](const PyWeights &w) { return w.source->names().size(); })
      .def("__contains__",
           [](const PyWeights &w, const std::string &name) {
             return w.source->contains(name);
           })
      .def("__iter__",
           [](const PyWeights &w) {
             return nb::iter(nb::cast(w.source->names()));
           })
      .def(
          "__getitem__",
          [](const PyWeights &w, const std::string &name) {
            const TensorInfo *info = w.source->lookup(name);
            if (!info)
              throw nb::key_error(name.c_str());
            Tensor t(DType::F32, info->shape);
            check(w.source->readF32(name, t.mutableData<float>()));
            return arrayFromTensor(std::move(t));
          },
          "name"_a,
          nb::sig("def __getitem__(self, name: str) -> "
                  "numpy.typing.NDArray[numpy.float32]"),
          "Tensor `name` converted (or dequantized) to a float32 array.")
      .def("__repr__", [](const PyWeights &w) {
        return "<rlx.Weights " + w.source->description().str() + ": " +
               std::to_string(w.source->names().size()) + " tensors>";
      });

  m.def(
      "load_weights", [](nb::handle source) { return toWeights(source); },
      "source"_a,
      nb::sig("def load_weights(source: str | os.PathLike[str] | "
              "typing.Mapping[str, numpy.typing.ArrayLike] | Weights) -> "
              "Weights"),
      "Weights from a model directory, a .safetensors or .gguf file, or a\n"
      "mapping of names to arrays (read in place).");
}

//===----------------------------------------------------------------------===//
// CompileProfile
//===----------------------------------------------------------------------===//

/// A string property over an enum field, checked against its spellings.
template <typename T, typename E>
static void enumField(nb::class_<T> &cls, const char *name, E T::*field,
                      llvm::StringRef (*stringify)(E),
                      std::optional<E> (*symbolize)(llvm::StringRef),
                      const char *doc) {
  cls.def_prop_rw(
      name, [=](const T &self) { return stringify(self.*field).str(); },
      [=](T &self, const std::string &value) {
        self.*field = enumArgument(name, value, symbolize);
      },
      doc);
}

static nb::dict profileDict(const CompileProfile &p) {
  nb::dict fusion, passes, precision, cpu, spirv, backend, all;
  fusion["policy"] = stringifyFusionPolicy(p.fusion.policy).str();
  fusion["target"] = stringifyTargetChoice(p.fusion.target).str();
  fusion["assert_clean"] = p.fusion.assertClean;
  fusion["skip"] = p.fusion.skip;
  nb::list disable;
  for (const std::string &s : p.fusion.disable)
    disable.append(s);
  fusion["disable"] = disable;
  passes["dce"] = p.passes.dce;
  passes["constant_folding"] = p.passes.constantFolding;
  passes["verbose"] = p.passes.verbose;
  precision["compute"] = stringifyComputePrecision(p.precision.compute).str();
  precision["mixed"] = stringifyMixedPrecision(p.precision.mixed).str();
  precision["weights"] = stringifyWeightPrecision(p.precision.weights).str();
  precision["kv_cache"] = stringifyComputePrecision(p.precision.kvCache).str();
  cpu["unfuse_regions"] = p.backend.cpu.unfuseRegions;
  cpu["gemm"] = stringifyGemmStrategy(p.backend.cpu.gemm).str();
  cpu["repack_weights"] =
      stringifyWeightRepack(p.backend.cpu.repackWeights).str();
  cpu["threads"] = p.backend.cpu.threads;
  cpu["attention_rows"] = p.backend.cpu.attentionRows;
  spirv["unfuse_regions"] = p.backend.spirv.unfuseRegions;
  spirv["device"] = p.backend.spirv.device;
  spirv["workgroup_size"] = p.backend.spirv.workgroupSize;
  spirv["cooperative_matrix"] = p.backend.spirv.cooperativeMatrix;
  spirv["optimize"] = p.backend.spirv.optimize;
  backend["cpu"] = cpu;
  backend["spirv"] = spirv;
  all["fusion"] = fusion;
  all["passes"] = passes;
  all["precision"] = precision;
  all["backend"] = backend;
  nb::dict parallel;
  parallel["tensor"] = p.parallel.tensor;
  parallel["overlap_chunks"] = p.parallel.overlapChunks;
  all["parallel"] = parallel;
  return all;
}

static CompileProfile presetOrRaise(const std::string &name) {
  llvm::Expected<CompileProfile> p = CompileProfile::presetOrError(name);
  if (!p)
    throw nb::value_error(llvm::toString(p.takeError()).c_str());
  return std::move(*p);
}

CompileProfile python::toProfile(nb::handle value) {
  if (nb::isinstance<CompileProfile>(value))
    return nb::cast<CompileProfile>(value);
  if (nb::isinstance<nb::str>(value) || nb::hasattr(value, "__fspath__")) {
    std::string s = pathString(value);
    if (llvm::StringRef(s).ends_with(".toml"))
      return unwrap(CompileProfile::fromTomlFile(s));
    return presetOrRaise(s);
  }
  throw nb::type_error("expected an rlx.CompileProfile, a preset name or a "
                       "path to a .toml file");
}

template <typename T> static void valueSemantics(nb::class_<T> &cls) {
  cls.def(
         "__eq__", [](const T &a, const T &b) { return a == b; },
         nb::is_operator())
      .def("__copy__", [](const T &self) { return T(self); })
      .def(
          "__deepcopy__", [](const T &self, nb::handle) { return T(self); },
          "memo"_a);
}

void python::registerProfile(nb::module_ &m) {
  using CP = CompileProfile;
  nb::class_<CP> profile(
      m, "CompileProfile",
      "Tier-1 compile configuration: the fusion policy and patterns, the\n"
      "cleanup passes, the compute precision and per-backend hints. Build it\n"
      "from a preset, from TOML (`*.rlx.toml`, see docs/CompileProfile.md),\n"
      "or by setting fields: `p.fusion.policy = \"fusable\"`.");

  nb::class_<CP::FusionProfile> fusion(profile, "FusionProfile",
                                       "`[fusion]`: HIR lowering and fusion.");
  fusion.def(nb::init<>());
  enumField(fusion, "policy", &CP::FusionProfile::policy, stringifyFusionPolicy,
            symbolizeFusionPolicy,
            "HIR-to-MIR lowering policy: 'direct' or 'fusable'.");
  enumField(fusion, "target", &CP::FusionProfile::target, stringifyTargetChoice,
            symbolizeTargetChoice,
            "Backend whose fusion rules apply: 'auto', 'cpu' or 'spirv'.");
  fusion
      .def_rw("assert_clean", &CP::FusionProfile::assertClean,
              "Fail compilation if fusable patterns remain unfused.")
      .def_rw("skip", &CP::FusionProfile::skip, "Run no fusion pass at all.")
      .def_prop_rw(
          "disable",
          [](const CP::FusionProfile &f) {
            return std::vector<std::string>(f.disable.begin(), f.disable.end());
          },
          [](CP::FusionProfile &f, const std::vector<std::string> &names) {
            for (const std::string &n : names)
              if (!llvm::is_contained(knownFusionPatterns(), n))
                throw nb::value_error(
                    ("disable: unknown fusion pattern '" + n + "'").c_str());
            f.disable.assign(names.begin(), names.end());
          },
          "Fusion patterns turned off (names from known_fusion_patterns()).");
  valueSemantics(fusion);

  nb::class_<CP::PassProfile> passes(profile, "PassProfile",
                                     "`[passes]`: generic cleanup passes.");
  passes.def(nb::init<>())
      .def_rw("dce", &CP::PassProfile::dce, "Dead-code elimination.")
      .def_rw("constant_folding", &CP::PassProfile::constantFolding,
              "Fold constant subgraphs.")
      .def_rw("verbose", &CP::PassProfile::verbose,
              "Print each pass and the IR after it.");
  valueSemantics(passes);

  nb::class_<CP::PrecisionProfile> precision(
      profile, "PrecisionProfile", "`[precision]`: compute element type.");
  precision.def(nb::init<>());
  enumField(precision, "compute", &CP::PrecisionProfile::compute,
            stringifyComputePrecision, symbolizeComputePrecision,
            "Element type of computation: 'f32', 'f16' or 'bf16'.");
  enumField(precision, "mixed", &CP::PrecisionProfile::mixed,
            stringifyMixedPrecision, symbolizeMixedPrecision,
            "Mixed-precision mode: 'none' or 'auto'.");
  enumField(precision, "weights", &CP::PrecisionProfile::weights,
            stringifyWeightPrecision, symbolizeWeightPrecision,
            "Weight matrices: 'stored' (f16, bf16 and ggml blocks stay so "
            "down to the kernels), 'f32' (widened when loaded), or 'bf16', "
            "'f16', 'q8_0', 'q4_0' (converted when loaded).");
  enumField(precision, "kv_cache", &CP::PrecisionProfile::kvCache,
            stringifyComputePrecision, symbolizeComputePrecision,
            "Keys and values a decoder keeps between steps: 'f32', 'f16' or "
            "'bf16' (attention computes in f32).");
  valueSemantics(precision);

  nb::class_<CP::CpuBackendProfile> cpu(profile, "CpuBackendProfile",
                                        "`[backend.cpu]`: CPU hints.");
  cpu.def(nb::init<>())
      .def_rw("unfuse_regions", &CP::CpuBackendProfile::unfuseRegions,
              "Expand fused regions back into plain ops.")
      .def_rw("threads", &CP::CpuBackendProfile::threads,
              "Worker threads; 0 means all cores.")
      .def_rw("attention_rows", &CP::CpuBackendProfile::attentionRows,
              "Query rows of the blocked attention's register tile; 0: the "
              "code generator's choice.");
  enumField(cpu, "gemm", &CP::CpuBackendProfile::gemm, stringifyGemmStrategy,
            symbolizeGemmStrategy,
            "GEMM implementation: 'auto', 'blas' or 'generated'.");
  enumField(
      cpu, "repack_weights", &CP::CpuBackendProfile::repackWeights,
      stringifyWeightRepack, symbolizeWeightRepack,
      "How q4_0, q8_0, q4_K, q5_K, q6_K, f16 and bf16 matmul weights are kept: "
      "'none' as "
      "stored (mapped), 'x8' interleaved by groups of 8 rows at load, "
      "'auto' x8 where the micro-kernels run on AVX2.");
  valueSemantics(cpu);

  nb::class_<CP::SpirvBackendProfile> spirv(profile, "SpirvBackendProfile",
                                            "`[backend.spirv]`: SPIR-V hints.");
  spirv.def(nb::init<>())
      .def_rw("unfuse_regions", &CP::SpirvBackendProfile::unfuseRegions,
              "Expand fused regions back into plain ops.")
      .def_rw("device", &CP::SpirvBackendProfile::device,
              "Vulkan device name; empty: the first discrete GPU, else any.")
      .def_rw("workgroup_size", &CP::SpirvBackendProfile::workgroupSize,
              "Default workgroup size, a power of two in [1, 1024].")
      .def_rw("cooperative_matrix", &CP::SpirvBackendProfile::cooperativeMatrix,
              "Use VK_KHR_cooperative_matrix for GEMMs.")
      .def_rw("optimize", &CP::SpirvBackendProfile::optimize,
              "Run spirv-opt's performance passes on every kernel (each is "
              "validated either way).");
  valueSemantics(spirv);

  nb::class_<CP::ParallelProfile> parallel(
      profile, "ParallelProfile",
      "`[parallel]`: how a model is split over MPI processes.");
  parallel.def(nb::init<>())
      .def_rw("tensor", &CP::ParallelProfile::tensor,
              "Tensor-parallel degree: ranks (mpirun -np N).")
      .def_rw("overlap_chunks", &CP::ParallelProfile::overlapChunks,
              "Token ranges each row-parallel projection of a prompt and its "
              "all-reduce run as (1: one blocking all-reduce).");
  valueSemantics(parallel);

  nb::class_<CP::BackendProfile> backend(profile, "BackendProfile",
                                         "`[backend]`: per-backend hints.");
  backend.def(nb::init<>())
      .def_rw("cpu", &CP::BackendProfile::cpu, "`[backend.cpu]`.")
      .def_rw("spirv", &CP::BackendProfile::spirv, "`[backend.spirv]`.");
  valueSemantics(backend);

  profile
      .def(nb::init<>(), "The default profile (equal to the "
                         "'llama32_prefill' preset).")
      .def_rw("fusion", &CP::fusion, "`[fusion]`.")
      .def_rw("passes", &CP::passes, "`[passes]`.")
      .def_rw("precision", &CP::precision, "`[precision]`.")
      .def_rw("backend", &CP::backend, "`[backend]`.")
      .def_rw("parallel", &CP::parallel, "`[parallel]`.")
      .def_static(
          "from_toml",
          [](const std::string &text, const std::string &fileName,
             std::optional<CP> base) {
            return unwrap(
                CP::fromTomlString(text, fileName, base.value_or(CP())));
          },
          "text"_a, "file_name"_a = "<string>", "base"_a = nb::none(),
          "Parses TOML text over `base` (default: the default profile): the\n"
          "keys it does not set keep base's values. Errors raise\n"
          "rlx.RLXError with one line per problem, each\n"
          "`<file_name>:<line>:<column>: <message>`.")
      .def_static(
          "from_file",
          [](nb::handle path, std::optional<CP> base) {
            return unwrap(
                CP::fromTomlFile(pathString(path), base.value_or(CP())));
          },
          "path"_a, "base"_a = nb::none(),
          nb::sig("def from_file(path: str | os.PathLike[str], base: "
                  "CompileProfile | None = None) -> CompileProfile"),
          "Reads a `*.rlx.toml` file over `base` (as from_toml).")
      .def_static("preset", &presetOrRaise, "name"_a,
                  "The preset called `name` ('llama32_prefill', "
                  "'llama32_decode',\n'encoder', ...; see presets()). "
                  "Raises ValueError for an unknown name.")
      .def_static(
          "presets",
          [] {
            std::vector<std::string> names;
            for (llvm::StringRef n : CP::presetNames())
              names.push_back(n.str());
            return names;
          },
          "The preset names, in declaration order.")
      .def("to_toml", &CP::toToml,
           "Every key as TOML; from_toml() reads it back to an equal "
           "profile.")
      .def("to_dict", &profileDict,
           nb::sig("def to_dict(self) -> dict[str, typing.Any]"),
           "The fields as nested dicts, keyed as in TOML.")
      .def(
          "copy", [](const CP &p) { return CP(p); }, "A copy.")
      .def("__repr__", [](const CP &p) {
        return "<rlx.CompileProfile policy=" +
               stringifyFusionPolicy(p.fusion.policy).str() +
               " target=" + stringifyTargetChoice(p.fusion.target).str() +
               (p.fusion.skip ? " skip" : "") + ">";
      });
  valueSemantics(profile);

  m.def(
      "known_fusion_patterns",
      [] {
        std::vector<std::string> names;
        for (llvm::StringRef n : knownFusionPatterns())
          names.push_back(n.str());
        return names;
      },
      "The fusion pattern names CompileProfile.fusion.disable accepts.");
}

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

NB_MODULE(_rlx, m) {
  m.doc() = "RLX: an MLIR compiler for transformer inference (native part; "
            "import `rlx`).";
  nb::exception<RLXError>(m, "RLXError", PyExc_RuntimeError);
  // The environment is read by the tools and this module, never by the
  // libraries.
  if (const char *isa = std::getenv("RLX_UK_ISA"))
    if (llvm::Error err = selectMicroKernelISA(isa))
      throw RLXError("RLX_UK_ISA: " + llvm::toString(std::move(err)));
  registerWeights(m);
  registerProfile(m);
  registerFlow(m);
  registerCompiler(m);
  registerTokenizer(m);
  registerCollectives(m);
}
