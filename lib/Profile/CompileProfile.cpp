//===- CompileProfile.cpp - Tier-1 compile configuration ------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Presets, TOML loading with positioned diagnostics, and TOML printing. This is
// the only translation unit that includes toml++ (header-only mode, built
// without exceptions: toml::parse returns a parse_result).
//
//===----------------------------------------------------------------------===//

#include "RLX/Profile/CompileProfile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#define TOML_ENABLE_FORMATTERS 0
#include <toml++/toml.h>

#include <tuple>

using namespace llvm;
using namespace rlx;

//===----------------------------------------------------------------------===//
// Enumerations
//===----------------------------------------------------------------------===//

static constexpr StringRef fusionPolicyNames[] = {"direct", "fusable"};
static constexpr StringRef fusionTargetNames[] = {"auto", "cpu", "spirv"};
static constexpr StringRef computePrecisionNames[] = {"f32", "f16", "bf16"};
static constexpr StringRef mixedPrecisionNames[] = {"none", "auto"};
static constexpr StringRef gemmStrategyNames[] = {"auto", "blas", "generated"};

static constexpr StringRef fusionPatternNames[] = {
    "matmul-epilogue", "residual-norm",   "shared-input-matmul", "swiglu",
    "attention",       "attention-block", "elementwise-region"};

/// Looks `str` up in an enum's spelling table (indexed by enumerator value).
template <typename EnumT, size_t N>
static std::optional<EnumT> lookupEnum(const StringRef (&names)[N],
                                       StringRef str) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == str)
      return static_cast<EnumT>(i);
  return std::nullopt;
}

StringRef rlx::stringifyFusionPolicy(FusionPolicy value) {
  return fusionPolicyNames[static_cast<unsigned>(value)];
}
StringRef rlx::stringifyFusionTarget(FusionTarget value) {
  return fusionTargetNames[static_cast<unsigned>(value)];
}
StringRef rlx::stringifyComputePrecision(ComputePrecision value) {
  return computePrecisionNames[static_cast<unsigned>(value)];
}
StringRef rlx::stringifyMixedPrecision(MixedPrecision value) {
  return mixedPrecisionNames[static_cast<unsigned>(value)];
}
StringRef rlx::stringifyGemmStrategy(GemmStrategy value) {
  return gemmStrategyNames[static_cast<unsigned>(value)];
}

std::optional<FusionPolicy> rlx::symbolizeFusionPolicy(StringRef str) {
  return lookupEnum<FusionPolicy>(fusionPolicyNames, str);
}
std::optional<FusionTarget> rlx::symbolizeFusionTarget(StringRef str) {
  return lookupEnum<FusionTarget>(fusionTargetNames, str);
}
std::optional<ComputePrecision> rlx::symbolizeComputePrecision(StringRef str) {
  return lookupEnum<ComputePrecision>(computePrecisionNames, str);
}
std::optional<MixedPrecision> rlx::symbolizeMixedPrecision(StringRef str) {
  return lookupEnum<MixedPrecision>(mixedPrecisionNames, str);
}
std::optional<GemmStrategy> rlx::symbolizeGemmStrategy(StringRef str) {
  return lookupEnum<GemmStrategy>(gemmStrategyNames, str);
}

ArrayRef<StringRef> rlx::knownFusionPatterns() { return fusionPatternNames; }

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

bool CompileProfile::FusionProfile::isDisabled(StringRef pattern) const {
  return skip || llvm::is_contained(disable, pattern);
}

bool CompileProfile::FusionProfile::operator==(
    const FusionProfile &other) const {
  return std::tie(policy, target, assertClean, skip, disable) ==
         std::tie(other.policy, other.target, other.assertClean, other.skip,
                  other.disable);
}

bool CompileProfile::PassProfile::operator==(const PassProfile &other) const {
  return std::tie(dce, constantFolding, verbose) ==
         std::tie(other.dce, other.constantFolding, other.verbose);
}

bool CompileProfile::PrecisionProfile::operator==(
    const PrecisionProfile &other) const {
  return std::tie(compute, mixed) == std::tie(other.compute, other.mixed);
}

bool CompileProfile::CpuBackendProfile::operator==(
    const CpuBackendProfile &other) const {
  return std::tie(unfuseRegions, gemm, threads) ==
         std::tie(other.unfuseRegions, other.gemm, other.threads);
}

bool CompileProfile::SpirvBackendProfile::operator==(
    const SpirvBackendProfile &other) const {
  return std::tie(unfuseRegions, device, workgroupSize, cooperativeMatrix) ==
         std::tie(other.unfuseRegions, other.device, other.workgroupSize,
                  other.cooperativeMatrix);
}

bool CompileProfile::BackendProfile::operator==(
    const BackendProfile &other) const {
  return std::tie(cpu, spirv) == std::tie(other.cpu, other.spirv);
}

bool CompileProfile::operator==(const CompileProfile &other) const {
  return std::tie(fusion, passes, precision, backend) ==
         std::tie(other.fusion, other.passes, other.precision, other.backend);
}

//===----------------------------------------------------------------------===//
// TOML loading
//===----------------------------------------------------------------------===//

/// Largest accepted `backend.cpu.threads`.
static constexpr int64_t maxCpuThreads = 4096;
/// Largest accepted `backend.spirv.workgroup_size`.
static constexpr int64_t maxWorkgroupSize = 1024;

static constexpr StringRef topLevelKeys[] = {"fusion", "passes", "precision",
                                             "backend"};
static constexpr StringRef fusionKeys[] = {"policy", "target", "assert_clean",
                                           "skip", "disable"};
static constexpr StringRef passesKeys[] = {"dce", "constant_folding",
                                           "verbose"};
static constexpr StringRef precisionKeys[] = {"compute", "mixed"};
static constexpr StringRef backendKeys[] = {"cpu", "spirv"};
static constexpr StringRef cpuKeys[] = {"unfuse_regions", "gemm", "threads"};
static constexpr StringRef spirvKeys[] = {
    "unfuse_regions", "device", "workgroup_size", "cooperative_matrix"};

/// The noun for a TOML node's type, as used in "got <type>".
static StringRef typeName(const toml::node &node) {
  switch (node.type()) {
  case toml::node_type::table:
    return "table";
  case toml::node_type::array:
    return "array";
  case toml::node_type::string:
    return "string";
  case toml::node_type::integer:
    return "integer";
  case toml::node_type::floating_point:
    return "float";
  case toml::node_type::boolean:
    return "boolean";
  case toml::node_type::date:
    return "date";
  case toml::node_type::time:
    return "time";
  case toml::node_type::date_time:
    return "date-time";
  case toml::node_type::none:
    break;
  }
  return "nothing";
}

/// `"a", "b", "c"` (or with another quote character).
static std::string quotedList(ArrayRef<StringRef> names, char quote = '"') {
  std::string out;
  raw_string_ostream os(out);
  llvm::interleave(
      names, os, [&](StringRef name) { os << quote << name << quote; }, ", ");
  return out;
}

/// The entry of `candidates` closest to `name`, if it is close enough to be a
/// plausible typo.
static std::optional<StringRef> closestName(StringRef name,
                                            ArrayRef<StringRef> candidates) {
  unsigned maxDistance = std::max<unsigned>(1, name.size() / 3);
  std::optional<StringRef> best;
  unsigned bestDistance = maxDistance + 1;
  for (StringRef candidate : candidates) {
    unsigned distance =
        name.edit_distance(candidate, /*AllowReplacements=*/true,
                           /*MaxEditDistance=*/maxDistance);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return best;
}

namespace {

/// Walks a parsed TOML document into a CompileProfile, collecting one
/// positioned diagnostic per problem.
class ProfileReader {
public:
  explicit ProfileReader(StringRef fileName) : fileName(fileName) {}

  void read(const toml::table &root, CompileProfile &profile);

  /// Records a problem at `pos`.
  void error(const toml::source_position &pos, const Twine &message);

  /// All diagnostics, sorted by position, one per line; Error::success() if
  /// there are none.
  Error takeError();

private:
  struct Diagnostic {
    unsigned line;
    unsigned column;
    std::string message;
  };

  /// Calls `handle(key, node, path)` for each entry of `table` whose key is in
  /// `keys`; reports the others as unknown. `prefix` is the table's dotted
  /// path ("" for the root).
  template <typename HandlerT>
  void forEachKey(const toml::table &table, StringRef prefix,
                  ArrayRef<StringRef> keys, HandlerT handle);

  /// `node` as a table, or nullptr after reporting a type error.
  const toml::table *asTable(const toml::node &node, StringRef path);

  void readBool(const toml::node &node, StringRef path, bool &out);
  void readString(const toml::node &node, StringRef path, std::string &out);
  template <typename EnumT, size_t N>
  void readEnum(const toml::node &node, StringRef path,
                const StringRef (&names)[N], EnumT &out);
  /// Reads an integer in [lo, hi]; with `powerOfTwo`, also a power of two.
  void readUnsigned(const toml::node &node, StringRef path, int64_t lo,
                    int64_t hi, bool powerOfTwo, unsigned &out);
  void readPatternList(const toml::node &node, StringRef path,
                       SmallVectorImpl<std::string> &out);

  void readFusion(const toml::table &table, CompileProfile::FusionProfile &out);
  void readPasses(const toml::table &table, CompileProfile::PassProfile &out);
  void readPrecision(const toml::table &table,
                     CompileProfile::PrecisionProfile &out);
  void readBackend(const toml::table &table,
                   CompileProfile::BackendProfile &out);

  StringRef fileName;
  SmallVector<Diagnostic> diagnostics;
};

} // namespace

void ProfileReader::error(const toml::source_position &pos,
                          const Twine &message) {
  diagnostics.push_back({pos.line, pos.column, message.str()});
}

Error ProfileReader::takeError() {
  if (diagnostics.empty())
    return Error::success();
  llvm::stable_sort(diagnostics, [](const Diagnostic &a, const Diagnostic &b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  std::string text;
  raw_string_ostream os(text);
  llvm::interleave(
      diagnostics, os,
      [&](const Diagnostic &d) {
        os << fileName << ':' << d.line << ':' << d.column << ": " << d.message;
      },
      "\n");
  diagnostics.clear();
  return make_error<StringError>(text, inconvertibleErrorCode());
}

template <typename HandlerT>
void ProfileReader::forEachKey(const toml::table &table, StringRef prefix,
                               ArrayRef<StringRef> keys, HandlerT handle) {
  for (auto &&[key, node] : table) {
    StringRef name(key.str().data(), key.str().size());
    std::string path =
        prefix.empty() ? name.str() : (prefix + "." + name).str();
    if (llvm::is_contained(keys, name)) {
      handle(name, node, StringRef(path));
      continue;
    }
    std::string message =
        (Twine("unknown ") + (node.is_table() ? "table" : "key") + " '" + path +
         "'")
            .str();
    if (std::optional<StringRef> hint = closestName(name, keys))
      message += ("; did you mean '" + *hint + "'?").str();
    else
      message += "; expected one of " + quotedList(keys, '\'');
    error(key.source().begin, message);
  }
}

const toml::table *ProfileReader::asTable(const toml::node &node,
                                          StringRef path) {
  if (const toml::table *table = node.as_table())
    return table;
  error(node.source().begin,
        "'" + path + "' must be a table, got " + typeName(node));
  return nullptr;
}

void ProfileReader::readBool(const toml::node &node, StringRef path,
                             bool &out) {
  if (const toml::value<bool> *value = node.as_boolean()) {
    out = value->get();
    return;
  }
  error(node.source().begin,
        "'" + path + "' must be a boolean, got " + typeName(node));
}

void ProfileReader::readString(const toml::node &node, StringRef path,
                               std::string &out) {
  if (const toml::value<std::string> *value = node.as_string()) {
    out = value->get();
    return;
  }
  error(node.source().begin,
        "'" + path + "' must be a string, got " + typeName(node));
}

template <typename EnumT, size_t N>
void ProfileReader::readEnum(const toml::node &node, StringRef path,
                             const StringRef (&names)[N], EnumT &out) {
  const toml::value<std::string> *value = node.as_string();
  if (!value) {
    error(node.source().begin,
          "'" + path + "' must be a string, got " + typeName(node));
    return;
  }
  StringRef str = value->get();
  if (std::optional<EnumT> parsed = lookupEnum<EnumT>(names, str)) {
    out = *parsed;
    return;
  }
  error(node.source().begin, "'" + path + "' must be one of " +
                                 quotedList(names) + "; got \"" + str + "\"");
}

void ProfileReader::readUnsigned(const toml::node &node, StringRef path,
                                 int64_t lo, int64_t hi, bool powerOfTwo,
                                 unsigned &out) {
  const toml::value<int64_t> *value = node.as_integer();
  if (!value) {
    error(node.source().begin,
          "'" + path + "' must be an integer, got " + typeName(node));
    return;
  }
  int64_t v = value->get();
  if (v < lo || v > hi || (powerOfTwo && !llvm::isPowerOf2_64(v))) {
    error(node.source().begin, "'" + path + "' must be " +
                                   (powerOfTwo ? "a power of two " : "") +
                                   "between " + Twine(lo) + " and " +
                                   Twine(hi) + ", got " + Twine(v));
    return;
  }
  out = static_cast<unsigned>(v);
}

void ProfileReader::readPatternList(const toml::node &node, StringRef path,
                                    SmallVectorImpl<std::string> &out) {
  const toml::array *array = node.as_array();
  if (!array) {
    error(node.source().begin,
          "'" + path + "' must be an array of strings, got " + typeName(node));
    return;
  }
  out.clear();
  for (size_t i = 0, e = array->size(); i < e; ++i) {
    const toml::node &element = *array->get(i);
    std::string elementPath = (path + "[" + Twine(i) + "]").str();
    const toml::value<std::string> *value = element.as_string();
    if (!value) {
      error(element.source().begin,
            "'" + elementPath + "' must be a string, got " + typeName(element));
      continue;
    }
    StringRef name = value->get();
    if (!llvm::is_contained(fusionPatternNames, name)) {
      std::string message = "'" + elementPath +
                            "' is not a known fusion pattern: \"" + name.str() +
                            "\"";
      if (std::optional<StringRef> hint = closestName(name, fusionPatternNames))
        message += ("; did you mean \"" + *hint + "\"?").str();
      else
        message += "; known patterns are " + quotedList(fusionPatternNames);
      error(element.source().begin, message);
      continue;
    }
    if (llvm::is_contained(out, name)) {
      error(element.source().begin,
            "'" + elementPath + "' repeats \"" + name + "\"");
      continue;
    }
    out.push_back(name.str());
  }
}

void ProfileReader::readFusion(const toml::table &table,
                               CompileProfile::FusionProfile &out) {
  forEachKey(table, "fusion", fusionKeys,
             [&](StringRef key, const toml::node &node, StringRef path) {
               if (key == "policy")
                 readEnum(node, path, fusionPolicyNames, out.policy);
               else if (key == "target")
                 readEnum(node, path, fusionTargetNames, out.target);
               else if (key == "assert_clean")
                 readBool(node, path, out.assertClean);
               else if (key == "skip")
                 readBool(node, path, out.skip);
               else
                 readPatternList(node, path, out.disable);
             });
}

void ProfileReader::readPasses(const toml::table &table,
                               CompileProfile::PassProfile &out) {
  forEachKey(table, "passes", passesKeys,
             [&](StringRef key, const toml::node &node, StringRef path) {
               if (key == "dce")
                 readBool(node, path, out.dce);
               else if (key == "constant_folding")
                 readBool(node, path, out.constantFolding);
               else
                 readBool(node, path, out.verbose);
             });
}

void ProfileReader::readPrecision(const toml::table &table,
                                  CompileProfile::PrecisionProfile &out) {
  forEachKey(table, "precision", precisionKeys,
             [&](StringRef key, const toml::node &node, StringRef path) {
               if (key == "compute")
                 readEnum(node, path, computePrecisionNames, out.compute);
               else
                 readEnum(node, path, mixedPrecisionNames, out.mixed);
             });
}

void ProfileReader::readBackend(const toml::table &table,
                                CompileProfile::BackendProfile &out) {
  forEachKey(
      table, "backend", backendKeys,
      [&](StringRef key, const toml::node &node, StringRef path) {
        const toml::table *sub = asTable(node, path);
        if (!sub)
          return;
        if (key == "cpu") {
          CompileProfile::CpuBackendProfile &cpu = out.cpu;
          forEachKey(
              *sub, path, cpuKeys,
              [&](StringRef key, const toml::node &node, StringRef path) {
                if (key == "unfuse_regions")
                  readBool(node, path, cpu.unfuseRegions);
                else if (key == "gemm")
                  readEnum(node, path, gemmStrategyNames, cpu.gemm);
                else
                  readUnsigned(node, path, 0, maxCpuThreads,
                               /*powerOfTwo=*/false, cpu.threads);
              });
          return;
        }
        CompileProfile::SpirvBackendProfile &spirv = out.spirv;
        forEachKey(*sub, path, spirvKeys,
                   [&](StringRef key, const toml::node &node, StringRef path) {
                     if (key == "unfuse_regions")
                       readBool(node, path, spirv.unfuseRegions);
                     else if (key == "device")
                       readString(node, path, spirv.device);
                     else if (key == "workgroup_size")
                       readUnsigned(node, path, 1, maxWorkgroupSize,
                                    /*powerOfTwo=*/true, spirv.workgroupSize);
                     else
                       readBool(node, path, spirv.cooperativeMatrix);
                   });
      });
}

void ProfileReader::read(const toml::table &root, CompileProfile &profile) {
  forEachKey(root, "", topLevelKeys,
             [&](StringRef key, const toml::node &node, StringRef path) {
               const toml::table *table = asTable(node, path);
               if (!table)
                 return;
               if (key == "fusion")
                 readFusion(*table, profile.fusion);
               else if (key == "passes")
                 readPasses(*table, profile.passes);
               else if (key == "precision")
                 readPrecision(*table, profile.precision);
               else
                 readBackend(*table, profile.backend);
             });
}

Expected<CompileProfile> CompileProfile::fromTomlString(StringRef text,
                                                        StringRef fileName) {
  toml::parse_result result =
      toml::parse(std::string_view(text.data(), text.size()),
                  std::string_view(fileName.data(), fileName.size()));
  ProfileReader reader(fileName);
  if (!result) {
    const toml::parse_error &parseError = result.error();
    std::string_view rawDescription = parseError.description();
    StringRef description(rawDescription.data(), rawDescription.size());
    // toml++ says "Error while parsing <construct>: <detail>".
    std::string message;
    StringRef rest = description;
    if (rest.consume_front("Error while parsing ") && rest.contains(": ")) {
      auto [construct, detail] = rest.split(": ");
      message = ("syntax error in " + construct + ": " + detail).str();
    } else {
      message = ("syntax error: " + description).str();
    }
    reader.error(parseError.source().begin, message);
    return reader.takeError();
  }
  CompileProfile profile;
  reader.read(result.table(), profile);
  if (Error err = reader.takeError())
    return std::move(err);
  return profile;
}

Expected<CompileProfile> CompileProfile::fromTomlFile(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(path, /*IsText=*/true);
  if (std::error_code ec = buffer.getError())
    return createStringError(ec, "%s: cannot read file: %s", path.str().c_str(),
                             ec.message().c_str());
  return fromTomlString((*buffer)->getBuffer(), path);
}

//===----------------------------------------------------------------------===//
// TOML printing
//===----------------------------------------------------------------------===//

/// Prints `str` as a TOML basic string.
static void printTomlString(raw_ostream &os, StringRef str) {
  os << '"';
  for (unsigned char c : str) {
    switch (c) {
    case '"':
      os << "\\\"";
      break;
    case '\\':
      os << "\\\\";
      break;
    case '\b':
      os << "\\b";
      break;
    case '\t':
      os << "\\t";
      break;
    case '\n':
      os << "\\n";
      break;
    case '\f':
      os << "\\f";
      break;
    case '\r':
      os << "\\r";
      break;
    default:
      if (c < 0x20 || c == 0x7f)
        os << "\\u" << format_hex_no_prefix(c, 4, /*Upper=*/true);
      else
        os << c;
    }
  }
  os << '"';
}

static StringRef boolText(bool value) { return value ? "true" : "false"; }

std::string CompileProfile::toToml() const {
  std::string text;
  raw_string_ostream os(text);
  os << "[fusion]\n"
     << "policy = \"" << stringifyFusionPolicy(fusion.policy) << "\"\n"
     << "target = \"" << stringifyFusionTarget(fusion.target) << "\"\n"
     << "assert_clean = " << boolText(fusion.assertClean) << "\n"
     << "skip = " << boolText(fusion.skip) << "\n"
     << "disable = [";
  llvm::interleave(
      fusion.disable, os,
      [&](const std::string &name) { printTomlString(os, name); }, ", ");
  os << "]\n\n";

  os << "[passes]\n"
     << "dce = " << boolText(passes.dce) << "\n"
     << "constant_folding = " << boolText(passes.constantFolding) << "\n"
     << "verbose = " << boolText(passes.verbose) << "\n\n";

  os << "[precision]\n"
     << "compute = \"" << stringifyComputePrecision(precision.compute) << "\"\n"
     << "mixed = \"" << stringifyMixedPrecision(precision.mixed) << "\"\n\n";

  os << "[backend.cpu]\n"
     << "unfuse_regions = " << boolText(backend.cpu.unfuseRegions) << "\n"
     << "gemm = \"" << stringifyGemmStrategy(backend.cpu.gemm) << "\"\n"
     << "threads = " << backend.cpu.threads << "\n\n";

  os << "[backend.spirv]\n"
     << "unfuse_regions = " << boolText(backend.spirv.unfuseRegions) << "\n"
     << "device = ";
  printTomlString(os, backend.spirv.device);
  os << "\n"
     << "workgroup_size = " << backend.spirv.workgroupSize << "\n"
     << "cooperative_matrix = " << boolText(backend.spirv.cooperativeMatrix)
     << "\n";
  return text;
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

CompileProfile CompileProfile::llama32Prefill() {
  CompileProfile profile;
  profile.fusion.policy = FusionPolicy::Direct;
  profile.fusion.target = FusionTarget::Auto;
  profile.fusion.assertClean = false;
  profile.fusion.skip = false;
  return profile;
}

CompileProfile CompileProfile::llama32Decode() {
  CompileProfile profile = llama32Prefill();
  profile.fusion.policy = FusionPolicy::Fusable;
  return profile;
}

CompileProfile CompileProfile::qwen3Prefill() { return llama32Prefill(); }
CompileProfile CompileProfile::qwen3Decode() { return llama32Decode(); }
CompileProfile CompileProfile::qwen35Prefill() { return llama32Prefill(); }
CompileProfile CompileProfile::qwen35Decode() { return llama32Decode(); }
CompileProfile CompileProfile::gemmaPrefill() { return llama32Prefill(); }
CompileProfile CompileProfile::gemmaDecode() { return llama32Decode(); }

CompileProfile CompileProfile::encoder() {
  CompileProfile profile;
  profile.fusion.policy = FusionPolicy::Direct;
  profile.passes.dce = true;
  profile.passes.constantFolding = true;
  profile.passes.verbose = false;
  return profile;
}

CompileProfile CompileProfile::flux2() { return encoder(); }
CompileProfile CompileProfile::samEncoder() { return encoder(); }
CompileProfile CompileProfile::sam2() { return samEncoder(); }
CompileProfile CompileProfile::sam3() { return samEncoder(); }

CompileProfile CompileProfile::sam2MemoryAttention() {
  CompileProfile profile = encoder();
  profile.fusion.skip = true;
  return profile;
}

CompileProfile CompileProfile::llada2Diffusion() {
  CompileProfile profile = encoder();
  profile.fusion.skip = true;
  return profile;
}

static constexpr StringRef presetNameTable[] = {
    "llama32_prefill",
    "llama32_decode",
    "qwen3_prefill",
    "qwen3_decode",
    "qwen35_prefill",
    "qwen35_decode",
    "gemma_prefill",
    "gemma_decode",
    "encoder",
    "flux2",
    "sam_encoder",
    "sam2",
    "sam3",
    "sam2_memory_attention",
    "llada2_diffusion",
};

static constexpr CompileProfile (*presetFunctionTable[])() = {
    &CompileProfile::llama32Prefill,
    &CompileProfile::llama32Decode,
    &CompileProfile::qwen3Prefill,
    &CompileProfile::qwen3Decode,
    &CompileProfile::qwen35Prefill,
    &CompileProfile::qwen35Decode,
    &CompileProfile::gemmaPrefill,
    &CompileProfile::gemmaDecode,
    &CompileProfile::encoder,
    &CompileProfile::flux2,
    &CompileProfile::samEncoder,
    &CompileProfile::sam2,
    &CompileProfile::sam3,
    &CompileProfile::sam2MemoryAttention,
    &CompileProfile::llada2Diffusion,
};

static_assert(std::size(presetNameTable) == std::size(presetFunctionTable),
              "every preset needs a name");

std::optional<CompileProfile> CompileProfile::preset(StringRef name) {
  for (auto [presetName, build] :
       llvm::zip_equal(presetNameTable, presetFunctionTable))
    if (presetName == name)
      return build();
  return std::nullopt;
}

ArrayRef<StringRef> CompileProfile::presetNames() { return presetNameTable; }
