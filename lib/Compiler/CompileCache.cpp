//===- CompileCache.cpp - The persistent compile cache --------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "CompileCache.h"
#include "RLX/Support/FileIO.h"
#include "RLX/Support/Version.h"
#include "RLX/UKernels/UKernels.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/TargetParser/Host.h"
#include <chrono>
#include <dlfcn.h>

using namespace rlx;
using namespace rlx::detail;
namespace json = llvm::json;
using llvm::Error;
using llvm::StringRef;

/// The entry layout; a change makes every older entry a mismatch.
static constexpr uint32_t kFormatVersion = 2;
static constexpr char kMagic[8] = {'R', 'L', 'X', 'C', 'A', 'C', 'H', 'E'};
/// magic, format, reserved, meta length, object length, SHA-256.
static constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 32;
/// Temporary files older than this were left by a process that died.
static constexpr auto kStaleScratch = std::chrono::hours(1);

CompileCache::CompileCache(std::string dir, uint64_t maxBytes)
    : dir(std::move(dir)), maxBytes(maxBytes ? maxBytes : kDefaultMaxBytes) {}

Error CompileCache::prepare() {
  if (llvm::sys::fs::exists(dir) && !llvm::sys::fs::is_directory(dir))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the compile cache '" + dir +
                                       "' exists and is not a directory");
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return llvm::createStringError(ec, "cannot create the compile cache '" +
                                           dir + "': " + ec.message());
  return Error::success();
}

std::string CompileCache::entryPath(StringRef key) const {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, key + ".rlxc");
  return std::string(path);
}

std::string CompileCache::objectScratchPath(StringRef key) const {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(
      path,
      key + "-" + llvm::Twine(llvm::sys::Process::getProcessId()) + ".o.tmp");
  return std::string(path);
}

//===----------------------------------------------------------------------===//
// The key
//===----------------------------------------------------------------------===//

/// The file holding this code (the tool, or the Python extension), with its
/// size and modification time: a rebuilt RLX has another identity.
static std::string binaryIdentity() {
  static const std::string identity = [] {
    std::string path;
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&binaryIdentity), &info) &&
        info.dli_fname && *info.dli_fname) {
      llvm::SmallString<256> real;
      if (!llvm::sys::fs::real_path(info.dli_fname, real))
        path = std::string(real);
    }
    if (path.empty())
      path = llvm::sys::fs::getMainExecutable(
          nullptr, reinterpret_cast<void *>(&binaryIdentity));
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(path, status))
      return path;
    return path + ":" + std::to_string(status.getSize()) + ":" +
           std::to_string(
               status.getLastModificationTime().time_since_epoch().count());
  }();
  return identity;
}

/// The host CPU and its features, as the JIT's code generator sees them.
static std::string hostTarget() {
  static const std::string target = [] {
    std::vector<std::string> features;
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      features.push_back((f.second ? "+" : "-") + f.first().str());
    llvm::sort(features);
    return llvm::sys::getHostCPUName().str() + ";" + llvm::join(features, ",");
  }();
  return target;
}

std::string CompileCache::key(mlir::ModuleOp module,
                              const CompileOptions &options, Device device,
                              StringRef deviceKey) {
  llvm::SHA256 hash;
  // Each part is length-prefixed: no two sequences of parts hash alike.
  auto part = [&](StringRef s) {
    uint8_t size[8];
    llvm::support::endian::write64le(size, s.size());
    hash.update(llvm::ArrayRef<uint8_t>(size));
    hash.update(s);
  };
  part("rlx-compile-cache");
  part(std::to_string(kFormatVersion));
  part(getRLXVersion());
  part(LLVM_VERSION_STRING);
  part(binaryIdentity());
  part(device == Device::Cpu ? "cpu" : "vulkan");
  part(device == Device::Cpu ? StringRef(hostTarget()) : deviceKey);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
  part(text);
  part(options.profile.toToml());
  // [backend.cpu] repack_weights = "auto" follows the micro-kernels' ISA
  // (RLX_UK_ISA may override the host's).
  if (device == Device::Cpu)
    part(std::string("ukernels ") + rlx_uk_isa());
  // Each tensor-parallel rank compiles its own share.
  if (options.profile.parallel.tensor > 1)
    part("tensor-parallel-rank " +
         std::to_string(options.tensorParallelRank.value_or(0)) +
         (options.tensorParallelLocalLogits ? " local-logits" : ""));
  part(options.entry);
  // Where params sit in the pool (CPU: their file's page phases).
  if (device == Device::Cpu && !options.paramPagePhases.empty()) {
    part("param-pages " + std::to_string(options.paramPageSize));
    for (const auto &[name, phase] : options.paramPagePhases) {
      part(name);
      part(std::to_string(phase));
    }
  }
  for (const auto &[name, shape] : options.inputShapes) {
    part(name);
    std::string dims;
    for (int64_t d : shape)
      dims += std::to_string(d) + ",";
    part(dims);
  }
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

//===----------------------------------------------------------------------===//
// Metadata
//===----------------------------------------------------------------------===//

static json::Array shapeJSON(llvm::ArrayRef<int64_t> shape) {
  json::Array a;
  for (int64_t d : shape)
    a.push_back(d);
  return a;
}

static json::Value metadataJSON(const CacheEntry &e) {
  const BuildInfo &b = e.build;
  json::Array shapes, kernels;
  for (const auto &[name, shape] : b.sourceShapes)
    shapes.push_back(json::Array{name, shapeJSON(shape)});
  for (const KernelInfo &k : b.kernels)
    kernels.push_back(json::Object{{"name", k.name},
                                   {"op", k.op},
                                   {"strategy", k.strategy},
                                   {"library", k.library}});
  const CompileStats &s = e.stats;
  auto bytes = [](uint64_t v) { return static_cast<int64_t>(v); };
  return json::Object{
      {"rlx", getRLXVersion()},
      {"llvm", LLVM_VERSION_STRING},
      {"manifest", e.manifest.toJSON()},
      {"build",
       json::Object{{"source_shapes", std::move(shapes)},
                    {"profile_presets", json::Array(b.profilePresets)},
                    {"profile_toml", b.profileToml},
                    {"profile_nearest", b.profileNearest},
                    {"profile_differences", json::Array(b.profileDifferences)},
                    {"fused_ops", b.fusedOps},
                    {"kernels", std::move(kernels)}}},
      {"stats", json::Object{{"arena_bytes", bytes(s.arenaBytes)},
                             {"naive_bytes", bytes(s.naiveBytes)},
                             {"peak_live_bytes", bytes(s.peakLiveBytes)},
                             {"param_bytes", bytes(s.paramBytes)},
                             {"fused_ops", s.fusedOps},
                             {"fusion_report", s.fusionReport},
                             {"kernels", bytes(s.kernels)},
                             {"kernel_functions", bytes(s.kernelFunctions)},
                             {"warnings", json::Array(s.warnings)}}}};
}

namespace {
/// Reads the metadata back; the first thing missing or mistyped makes the
/// entry unusable.
class MetadataReader {
public:
  std::string problem;

  std::optional<std::string> string(const json::Object &o, StringRef key) {
    if (std::optional<StringRef> s = o.getString(key))
      return s->str();
    return missing(key);
  }
  std::optional<uint64_t> count(const json::Object &o, StringRef key) {
    std::optional<int64_t> v = o.getInteger(key);
    if (v && *v >= 0)
      return static_cast<uint64_t>(*v);
    return missing(key);
  }
  std::optional<std::vector<std::string>> strings(const json::Object &o,
                                                  StringRef key) {
    const json::Array *a = o.getArray(key);
    if (!a)
      return missing(key);
    std::vector<std::string> out;
    for (const json::Value &v : *a) {
      std::optional<StringRef> s = v.getAsString();
      if (!s)
        return missing(key);
      out.push_back(s->str());
    }
    return out;
  }
  const json::Object *object(const json::Object &o, StringRef key) {
    if (const json::Object *child = o.getObject(key))
      return child;
    missing(key);
    return nullptr;
  }

  std::nullopt_t missing(StringRef key) {
    if (problem.empty())
      problem = ("metadata key '" + key + "' is missing or mistyped").str();
    return std::nullopt;
  }
};
} // namespace

/// Fills `e` from the metadata; false (with r.problem) when it does not
/// read.
static bool readBuildInfo(const json::Object &b, BuildInfo &info,
                          MetadataReader &r) {
  const json::Array *shapes = b.getArray("source_shapes");
  const json::Array *kernels = b.getArray("kernels");
  if (!shapes || !kernels) {
    r.missing(!shapes ? "source_shapes" : "kernels");
    return false;
  }
  for (const json::Value &v : *shapes) {
    const json::Array *pair = v.getAsArray();
    if (!pair || pair->size() != 2 || !(*pair)[0].getAsString() ||
        !(*pair)[1].getAsArray()) {
      r.missing("source_shapes");
      return false;
    }
    llvm::SmallVector<int64_t, 4> shape;
    for (const json::Value &d : *(*pair)[1].getAsArray()) {
      std::optional<int64_t> dim = d.getAsInteger();
      if (!dim) {
        r.missing("source_shapes");
        return false;
      }
      shape.push_back(*dim);
    }
    info.sourceShapes.emplace_back((*pair)[0].getAsString()->str(), shape);
  }
  for (const json::Value &v : *kernels) {
    const json::Object *k = v.getAsObject();
    if (!k) {
      r.missing("kernels");
      return false;
    }
    auto name = r.string(*k, "name"), op = r.string(*k, "op"),
         strategy = r.string(*k, "strategy"), library = r.string(*k, "library");
    if (!name || !op || !strategy || !library)
      return false;
    info.kernels.push_back({*name, *op, *strategy, *library});
  }
  auto presets = r.strings(b, "profile_presets");
  auto toml = r.string(b, "profile_toml");
  auto nearest = r.string(b, "profile_nearest");
  auto differences = r.strings(b, "profile_differences");
  auto fused = r.string(b, "fused_ops");
  if (!presets || !toml || !nearest || !differences || !fused)
    return false;
  info.profilePresets = *presets;
  info.profileToml = *toml;
  info.profileNearest = *nearest;
  info.profileDifferences = *differences;
  info.fusedOps = *fused;
  return true;
}

static bool readStats(const json::Object &s, CompileStats &stats,
                      MetadataReader &r) {
  auto arena = r.count(s, "arena_bytes"), naive = r.count(s, "naive_bytes"),
       peak = r.count(s, "peak_live_bytes"), params = r.count(s, "param_bytes"),
       kernels = r.count(s, "kernels"),
       functions = r.count(s, "kernel_functions");
  auto fused = r.string(s, "fused_ops"), report = r.string(s, "fusion_report");
  auto warnings = r.strings(s, "warnings");
  if (!arena || !naive || !peak || !params || !kernels || !functions ||
      !fused || !report || !warnings)
    return false;
  stats.arenaBytes = *arena;
  stats.naiveBytes = *naive;
  stats.peakLiveBytes = *peak;
  stats.paramBytes = *params;
  stats.kernels = *kernels;
  stats.kernelFunctions = *functions;
  stats.fusedOps = *fused;
  stats.fusionReport = *report;
  stats.warnings = *warnings;
  return true;
}

//===----------------------------------------------------------------------===//
// Lookup and store
//===----------------------------------------------------------------------===//

std::optional<CacheEntry>
CompileCache::lookup(StringRef key, std::vector<std::string> &warnings) {
  std::string path = entryPath(key);
  if (!llvm::sys::fs::exists(path))
    return std::nullopt;
  auto reject = [&](const llvm::Twine &why) -> std::optional<CacheEntry> {
    warnings.push_back("compile cache: entry '" + path + "' " + why.str() +
                       "; it was removed and the model compiled again");
    llvm::sys::fs::remove(path);
    return std::nullopt;
  };
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> file =
      readRegularFile(path, /*requiresNullTerminator=*/false, "");
  if (!file)
    return reject("cannot be read (" + llvm::toString(file.takeError()) + ")");
  StringRef bytes = (*file)->getBuffer();
  if (bytes.size() < kHeaderBytes ||
      !bytes.starts_with(StringRef(kMagic, sizeof(kMagic))))
    return reject("is not an RLX cache entry (bad header)");
  const char *p = bytes.data() + sizeof(kMagic);
  uint32_t format = llvm::support::endian::read32le(p);
  if (format != kFormatVersion)
    return reject("has format version " + llvm::Twine(format) +
                  ", this RLX writes version " + llvm::Twine(kFormatVersion));
  uint64_t metaSize = llvm::support::endian::read64le(p + 8);
  uint64_t objectSize = llvm::support::endian::read64le(p + 16);
  StringRef stored(p + 24, 32);
  StringRef payload = bytes.drop_front(kHeaderBytes);
  if (metaSize > payload.size() || objectSize != payload.size() - metaSize)
    return reject(
        "is truncated or has extra bytes (" + llvm::Twine(payload.size()) +
        " payload bytes, the header "
        "says " +
        llvm::Twine(metaSize) + " + " + llvm::Twine(objectSize) + ")");
  std::array<uint8_t, 32> sum = llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(payload.data()), payload.size()));
  if (StringRef(reinterpret_cast<const char *>(sum.data()), sum.size()) !=
      stored)
    return reject("is corrupted (its SHA-256 checksum does not match)");

  llvm::Expected<json::Value> meta = json::parse(payload.take_front(metaSize));
  if (!meta)
    return reject("has unreadable metadata (" +
                  llvm::toString(meta.takeError()) + ")");
  const json::Object *root = meta->getAsObject();
  if (!root)
    return reject("has unreadable metadata");
  MetadataReader r;
  std::optional<std::string> rlx = r.string(*root, "rlx"),
                             llvmVersion = r.string(*root, "llvm"),
                             manifestText = r.string(*root, "manifest");
  if (rlx && *rlx != getRLXVersion())
    return reject("was written by RLX " + *rlx);
  if (llvmVersion && *llvmVersion != LLVM_VERSION_STRING)
    return reject("was written with LLVM " + *llvmVersion);
  CacheEntry entry;
  const json::Object *build = r.object(*root, "build");
  const json::Object *stats = r.object(*root, "stats");
  if (!rlx || !llvmVersion || !manifestText || !build || !stats ||
      !readBuildInfo(*build, entry.build, r) ||
      !readStats(*stats, entry.stats, r))
    return reject("has unreadable metadata (" + r.problem + ")");
  llvm::Expected<Manifest> manifest = Manifest::fromJSON(*manifestText, path);
  if (!manifest)
    return reject("has an unreadable manifest (" +
                  llvm::toString(manifest.takeError()) + ")");
  entry.manifest = std::move(*manifest);
  entry.object =
      llvm::MemoryBuffer::getMemBufferCopy(payload.drop_front(metaSize), path);
  // Least recently used goes first: a hit makes the entry recent.
  int fd;
  if (!llvm::sys::fs::openFileForRead(path, fd)) {
    (void)llvm::sys::fs::setLastAccessAndModificationTime(
        fd, std::chrono::system_clock::now());
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  }
  return entry;
}

void CompileCache::store(StringRef key, const CacheEntry &entry, StringRef code,
                         std::vector<std::string> &warnings) {
  auto warn = [&](const llvm::Twine &why) {
    warnings.push_back("compile cache: " + why.str() +
                       "; the model was compiled but not cached");
  };
  if (code.empty())
    return warn("the back end produced no code to store");
  std::string meta;
  llvm::raw_string_ostream(meta) << metadataJSON(entry);
  llvm::SHA256 hash;
  hash.update(meta);
  hash.update(code);
  std::array<uint8_t, 32> sum = hash.final();

  llvm::SmallString<256> scratch;
  int fd;
  llvm::SmallString<256> model(dir);
  llvm::sys::path::append(model, key + "-%%%%%%%%.tmp");
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, fd, scratch))
    return warn("cannot write in '" + dir + "': " + ec.message());
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    char header[kHeaderBytes] = {};
    memcpy(header, kMagic, sizeof(kMagic));
    llvm::support::endian::write32le(header + 8, kFormatVersion);
    llvm::support::endian::write64le(header + 16, meta.size());
    llvm::support::endian::write64le(header + 24, code.size());
    memcpy(header + 32, sum.data(), sum.size());
    os.write(header, sizeof(header));
    os << meta << code;
    os.close();
    if (os.has_error()) {
      std::string message = os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(scratch);
      return warn("writing '" + scratch + "' failed: " + message);
    }
  }
  // Readers see the old entry, or none, or the whole new one.
  if (std::error_code ec = llvm::sys::fs::rename(scratch, entryPath(key))) {
    llvm::sys::fs::remove(scratch);
    return warn("cannot rename '" + scratch + "': " + ec.message());
  }
  evict(key);
}

void CompileCache::evict(StringRef keep) {
  llvm::SmallString<256> lockPath(dir);
  llvm::sys::path::append(lockPath, "lock");
  int fd;
  if (llvm::sys::fs::openFileForReadWrite(
          lockPath, fd, llvm::sys::fs::CD_OpenAlways, llvm::sys::fs::OF_None))
    return;
  // One process evicts at a time; another that finds the lock taken leaves
  // the work to the holder (its scan sees this entry).
  if (llvm::sys::fs::tryLockFile(fd, std::chrono::milliseconds(0))) {
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    return;
  }
  struct File {
    std::string path;
    uint64_t size;
    llvm::sys::TimePoint<> time;
  };
  std::vector<File> entries;
  uint64_t total = 0;
  auto now = std::chrono::system_clock::now();
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    StringRef path = it->path();
    llvm::ErrorOr<llvm::sys::fs::basic_file_status> status = it->status();
    if (!status)
      continue;
    if (path.ends_with(".tmp")) {
      if (now - status->getLastModificationTime() > kStaleScratch)
        llvm::sys::fs::remove(path);
      continue;
    }
    if (!path.ends_with(".rlxc"))
      continue;
    entries.push_back(
        {path.str(), status->getSize(), status->getLastModificationTime()});
    total += status->getSize();
  }
  llvm::sort(entries,
             [](const File &a, const File &b) { return a.time < b.time; });
  std::string kept = entryPath(keep);
  for (const File &f : entries) {
    if (total <= maxBytes)
      break;
    if (f.path == kept)
      continue;
    if (!llvm::sys::fs::remove(f.path))
      total -= f.size;
  }
  (void)llvm::sys::fs::unlockFile(fd);
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
}
