//===- rlx-bench.cpp - RLX side by side with OpenBLAS and the peers -------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// rlx-bench measures, in one invocation on this machine:
//
// - GEMMs of the LLaMA-3.2-1B and BERT-base shapes (prefill and decode) and
//   a square n=2048 GEMM: RLX's kernel against OpenBLAS cblas_sgemm as the
//   environment configures it and, in a subprocess with OPENBLAS_CORETYPE
//   removed, OpenBLAS's own choice (AVX-512 here);
// - one LLaMA-1B-shaped decoder layer (prefill T=128, decode at past=128)
//   and one BERT-base layer (T=128), random f32 weights;
// - a 16-layer LLaMA-1B-shaped model: compile time, prefill, decode tok/s;
// - the same LLaMA and BERT layers on Vulkan (lavapipe in CI) with kernels
//   optimized by spirv-opt and without (`[backend.spirv] optimize`);
// - the peers, each a subprocess running bench/peers.py with the project's
//   Python: PyTorch eager (its best thread setting), ONNX Runtime and IREE
//   (llvm-cpu, host CPU) on ONNX exports of the same layers.
//
// Every figure is the median of repeated runs with its spread (p10-p90 as a
// percentage of the median); ratios compare figures of the same run. A peer
// that cannot run is listed with the reason. --json writes everything.
//
//===----------------------------------------------------------------------===//

#include "RLX/Compiler/Session.h"
#include "RLX/Flow/Flux.h"
#include "RLX/Flow/Generate.h"
#include "RLX/Flow/Recipes.h"
#include "RLX/Runtime/Collectives.h"
#include "RLX/Runtime/CpuExecutor.h"
#include "RLX/Support/Version.h"
#include "RLX/Weights/SafeTensors.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include <algorithm>
#include <atomic>
#include <cblas.h>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <numeric>
#include <thread>

extern char **environ;

using namespace rlx;
namespace cl = llvm::cl;
namespace json = llvm::json;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static cl::OptionCategory category("rlx-bench options");
static cl::opt<bool> quick("quick",
                           cl::desc("Tiny shapes and few repetitions (a smoke "
                                    "test, not a measurement)"),
                           cl::cat(category));
static cl::opt<std::string> jsonOut("json", cl::desc("Write results as JSON"),
                                    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> only(
    "only",
    cl::desc(
        "Sections to run, comma-separated: gemm, layers, spirv, "
        "model, ttft, moe, vision, flux, parallel, peers, models (default: all "
        "but "
        "models: whole "
        "GGUF "
        "models beside llama.cpp, bench/models.py, minutes and "
        "GBs of files)"),
    cl::init(""), cl::cat(category));
static cl::opt<unsigned> repsOpt("reps", cl::desc("Timed runs per case"),
                                 cl::init(0), cl::cat(category));
static cl::opt<unsigned> threadsOpt("num-threads",
                                    cl::desc("Threads (default: all cores)"),
                                    cl::init(0), cl::cat(category));
static cl::opt<std::string>
    python("python",
           cl::desc("Python for the peers and bench/models.py (default: "
                    "$RLX_PYTHON, else the project's .venv)"),
           cl::init(""), cl::cat(category));
static cl::opt<std::string> peersList("peers",
                                      cl::desc("Peers: torch,ort,iree"),
                                      cl::init("torch,ort,iree"),
                                      cl::cat(category));
static cl::opt<int64_t> vocabOpt("vocab",
                                 cl::desc("Vocabulary of the 16-layer model"),
                                 cl::init(32000), cl::cat(category));
static cl::opt<std::string> gemmChoice(
    "gemm",
    cl::desc("[backend.cpu] gemm for RLX: auto, blas or generated (default: "
             "the profile's, auto)"),
    cl::init("auto"), cl::cat(category));
static cl::opt<bool> cpuTime(
    "cpu-time",
    cl::desc("Time with the process CPU clock instead of the wall clock (for "
             "tuning single-threaded kernels on a busy machine)"),
    cl::cat(category));
static cl::opt<std::string>
    emitMlir("emit-mlir",
             cl::desc("Write the layer modules (HIR) to this directory"),
             cl::value_desc("dir"), cl::cat(category));
static cl::opt<bool> blasChild("blas-child", cl::Hidden,
                               cl::desc("(internal) time cblas_sgemm only"));
static cl::opt<unsigned> parallelChild(
    "parallel-child", cl::Hidden,
    cl::desc("(internal) run the parallel section's model as one of N MPI "
             "ranks"),
    cl::init(0));
static cl::opt<unsigned> parallelOverlap(
    "parallel-overlap-chunks", cl::Hidden,
    cl::desc("(internal) the parallel child's [parallel] overlap_chunks"),
    cl::init(1));
static cl::opt<std::string> blasShapes("blas-shapes", cl::Hidden,
                                       cl::desc("(internal) M,N,K;..."));

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

namespace {
struct Stats {
  double median = 0, p10 = 0, p90 = 0, min = 0;
  unsigned runs = 0;
  /// (p90 - p10) / median, in percent.
  double spread() const { return median > 0 ? 100 * (p90 - p10) / median : 0; }
  json::Object toJSON() const {
    return json::Object{{"median_ms", median * 1e3},
                        {"p10_ms", p10 * 1e3},
                        {"p90_ms", p90 * 1e3},
                        {"min_ms", min * 1e3},
                        {"runs", runs},
                        {"spread_pct", spread()}};
  }
};

using Clock = std::chrono::steady_clock;
static double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Now, by the clock measurements use (wall, or process CPU time).
static double clockNow() {
  if (cpuTime) {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
  }
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

static Stats summarize(std::vector<double> t) {
  Stats s;
  if (t.empty())
    return s;
  std::sort(t.begin(), t.end());
  auto at = [&](double q) {
    double pos = q * (t.size() - 1);
    size_t lo = static_cast<size_t>(pos);
    size_t hi = std::min(lo + 1, t.size() - 1);
    return t[lo] + (t[hi] - t[lo]) * (pos - lo);
  };
  s.median = at(0.5);
  s.p10 = at(0.1);
  s.p90 = at(0.9);
  s.min = t.front();
  s.runs = t.size();
  return s;
}

/// Runs `fn` `warmup` times, then `reps` timed times (stopping early past
/// `budget` seconds once 3 runs are in).
static Stats timeIt(const std::function<void()> &fn, unsigned warmup,
                    unsigned reps, double budget = 20) {
  for (unsigned i = 0; i < warmup; ++i)
    fn();
  std::vector<double> t;
  auto start = Clock::now();
  for (unsigned i = 0; i < reps; ++i) {
    double a = clockNow();
    fn();
    t.push_back(clockNow() - a);
    if (t.size() >= 3 && seconds(start, Clock::now()) > budget)
      break;
  }
  return summarize(std::move(t));
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

/// One implementation's figure for a case.
struct Figure {
  std::string who;
  Stats stats;
  bool ok = true;
  std::string note;
};

/// A case: its work (flops or bytes) and every implementation's figure.
struct Case {
  std::string section, name;
  double flops = 0, bytes = 0;
  std::vector<Figure> figures;
  /// Extra numbers (compile seconds, tokens/s).
  json::Object extra;

  void add(std::string who, Stats s, std::string note = "") {
    figures.push_back({std::move(who), s, true, std::move(note)});
  }
  void missing(std::string who, std::string why) {
    figures.push_back({std::move(who), Stats(), false, std::move(why)});
  }
  const Figure *find(StringRef who) const {
    for (const Figure &f : figures)
      if (f.who == who && f.ok)
        return &f;
    return nullptr;
  }
};

struct Report {
  json::Object machine;
  std::vector<Case> cases;
  std::vector<std::string> notes;
  /// bench/models.py's report (the `models` section), if it ran.
  std::optional<json::Value> models;
};
} // namespace

static std::string rate(const Case &c, const Stats &s) {
  if (s.median <= 0)
    return "";
  std::string out;
  llvm::raw_string_ostream os(out);
  if (c.flops > 0)
    os << llvm::format("%.1f GFLOP/s", c.flops / s.median / 1e9);
  else if (c.bytes > 0)
    os << llvm::format("%.1f GB/s", c.bytes / s.median / 1e9);
  return out;
}

static void printTable(const Report &r) {
  llvm::outs() << "\n";
  std::string section;
  for (const Case &c : r.cases) {
    if (c.section != section) {
      section = c.section;
      llvm::outs() << "== " << section << " ==\n";
    }
    llvm::outs() << c.name << "\n";
    const Figure *rlxFig = c.find("rlx");
    for (const Figure &f : c.figures) {
      llvm::outs() << llvm::format("  %-28s", f.who.c_str());
      if (!f.ok) {
        llvm::outs() << "n/a: " << f.note << "\n";
        continue;
      }
      llvm::outs() << llvm::format("%10.3f ms  +-%4.1f%%  %-16s",
                                   f.stats.median * 1e3, f.stats.spread() / 2,
                                   rate(c, f.stats).c_str());
      if (rlxFig && &f != rlxFig && rlxFig->stats.median > 0)
        llvm::outs() << llvm::format("  rlx %.2fx faster",
                                     f.stats.median / rlxFig->stats.median);
      if (!f.note.empty())
        llvm::outs() << "  (" << f.note << ")";
      llvm::outs() << "\n";
    }
    for (const auto &kv : c.extra) {
      llvm::outs() << "  " << kv.first << ": ";
      if (auto d = kv.second.getAsNumber())
        llvm::outs() << llvm::format("%.3f", *d);
      else if (auto s = kv.second.getAsString())
        llvm::outs() << *s;
      llvm::outs() << "\n";
    }
  }
  for (const std::string &n : r.notes)
    llvm::outs() << "note: " << n << "\n";
}

static json::Value toJSON(const Report &r) {
  json::Array cases;
  for (const Case &c : r.cases) {
    json::Array figs;
    const Figure *rlxFig = c.find("rlx");
    for (const Figure &f : c.figures) {
      json::Object o{{"who", f.who}, {"ok", f.ok}};
      if (f.ok) {
        o["stats"] = f.stats.toJSON();
        if (c.flops > 0 && f.stats.median > 0)
          o["gflops"] = c.flops / f.stats.median / 1e9;
        if (c.bytes > 0 && f.stats.median > 0)
          o["gbytes_per_s"] = c.bytes / f.stats.median / 1e9;
        if (rlxFig && &f != rlxFig && rlxFig->stats.median > 0)
          o["rlx_speedup"] = f.stats.median / rlxFig->stats.median;
      }
      if (!f.note.empty())
        o["note"] = f.note;
      figs.push_back(std::move(o));
    }
    json::Object o{
        {"section", c.section}, {"name", c.name}, {"figures", std::move(figs)}};
    if (c.flops > 0)
      o["flops"] = c.flops;
    if (c.bytes > 0)
      o["bytes"] = c.bytes;
    if (!c.extra.empty())
      o["extra"] = json::Object(c.extra);
    cases.push_back(std::move(o));
  }
  json::Array notes;
  for (const std::string &n : r.notes)
    notes.push_back(n);
  json::Object root{{"machine", json::Object(r.machine)},
                    {"cases", std::move(cases)},
                    {"notes", std::move(notes)}};
  if (r.models)
    root["models"] = *r.models;
  return root;
}

//===----------------------------------------------------------------------===//
// Machine facts
//===----------------------------------------------------------------------===//

static double loadAverage() {
  auto buf = llvm::MemoryBuffer::getFileAsStream("/proc/loadavg");
  if (!buf)
    return -1;
  double v = -1;
  std::sscanf((*buf)->getBufferStart(), "%lf", &v);
  return v;
}

static std::string cpuModel() {
  auto buf = llvm::MemoryBuffer::getFileAsStream("/proc/cpuinfo");
  if (!buf)
    return "?";
  for (StringRef line : llvm::split((*buf)->getBuffer(), '\n'))
    if (line.starts_with("model name"))
      return line.split(':').second.trim().str();
  return "?";
}

/// Read bandwidth: `threads` threads summing their part of a 1 GiB buffer.
static double readBandwidth(unsigned threads, size_t bytes) {
  size_t words = bytes / sizeof(uint64_t);
  std::vector<uint64_t> data(words);
  for (size_t i = 0; i < words; ++i)
    data[i] = i;
  std::atomic<uint64_t> sink{0};
  auto pass = [&] {
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        size_t lo = words / threads * t,
               hi = t + 1 == threads ? words : words / threads * (t + 1);
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t i = lo; i + 4 <= hi; i += 4) {
          s0 += data[i];
          s1 += data[i + 1];
          s2 += data[i + 2];
          s3 += data[i + 3];
        }
        sink += s0 + s1 + s2 + s3;
      });
    for (std::thread &t : ts)
      t.join();
  };
  Stats s = timeIt(pass, 1, quick ? 2 : 5);
  return bytes / s.median / 1e9;
}

//===----------------------------------------------------------------------===//
// Random weights, generated when the runtime reads them
//===----------------------------------------------------------------------===//

namespace {
class RandomWeights final : public WeightSource {
public:
  void add(StringRef name, llvm::ArrayRef<int64_t> shape, float scale,
           float offset = 0) {
    TensorInfo info;
    info.name = name.str();
    info.dtype = DType::F32;
    info.shape.assign(shape.begin(), shape.end());
    uint64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    info.byteSize = n * 4;
    order.push_back(info.name);
    entries[name] = {info, scale, offset};
  }
  std::vector<std::string> names() const override { return order; }
  const TensorInfo *lookup(StringRef name) const override {
    auto it = entries.find(name);
    return it == entries.end() ? nullptr : &it->second.info;
  }
  StringRef description() const override { return "<random weights>"; }
  Expected<llvm::ArrayRef<uint8_t>> rawBytes(StringRef name) const override {
    return fail("random weight '" + name + "' has no stored bytes");
  }
  Error readF32(StringRef name,
                llvm::MutableArrayRef<float> dst) const override {
    auto it = entries.find(name);
    if (it == entries.end())
      return fail("no random weight '" + name + "'");
    // A cheap deterministic generator (xorshift), uniform in [-1, 1).
    uint64_t x = llvm::xxh3_64bits(name) | 1;
    const Entry &e = it->second;
    for (float &v : dst) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      float u = static_cast<float>((x >> 40) * (1.0 / (1ull << 23))) - 1.0f;
      v = e.offset + e.scale * u;
    }
    return Error::success();
  }

private:
  struct Entry {
    TensorInfo info;
    float scale, offset;
  };
  std::vector<std::string> order;
  llvm::StringMap<Entry> entries;
};

/// Transformer dimensions.
struct Dims {
  int64_t hidden, heads, kvHeads, headDim, inter;
};
} // namespace

static Dims llamaDims() {
  if (quick)
    return {256, 4, 2, 64, 512};
  return {2048, 32, 8, 64, 8192};
}
static Dims bertDims() {
  if (quick)
    return {256, 4, 4, 64, 512};
  return {768, 12, 12, 64, 3072};
}

static std::string tensorTy(llvm::ArrayRef<int64_t> shape,
                            StringRef elt = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + elt.str() + ">";
}

/// The weights of one LLaMA layer, HF names without a prefix.
static void addLlamaLayerWeights(RandomWeights &w, const Dims &d,
                                 StringRef prefix = "") {
  float s = 0.02f;
  auto name = [&](StringRef n) { return (prefix + n).str(); };
  w.add(name("input_layernorm.weight"), {d.hidden}, 0.1f, 1.0f);
  w.add(name("self_attn.q_proj.weight"), {d.heads * d.headDim, d.hidden}, s);
  w.add(name("self_attn.k_proj.weight"), {d.kvHeads * d.headDim, d.hidden}, s);
  w.add(name("self_attn.v_proj.weight"), {d.kvHeads * d.headDim, d.hidden}, s);
  w.add(name("self_attn.o_proj.weight"), {d.hidden, d.heads * d.headDim}, s);
  w.add(name("post_attention_layernorm.weight"), {d.hidden}, 0.1f, 1.0f);
  w.add(name("mlp.gate_proj.weight"), {d.inter, d.hidden}, s);
  w.add(name("mlp.up_proj.weight"), {d.inter, d.hidden}, s);
  w.add(name("mlp.down_proj.weight"), {d.hidden, d.inter}, s);
}

static double llamaLayerWeightBytes(const Dims &d) {
  double qkv = (d.heads + 2 * d.kvHeads) * d.headDim * d.hidden;
  double o = d.hidden * d.heads * d.headDim;
  double mlp = 3.0 * d.inter * d.hidden;
  return 4 * (qkv + o + mlp + 2 * d.hidden);
}

static double llamaLayerFlops(const Dims &d, int64_t t, int64_t past) {
  double proj = 2.0 * t *
                ((d.heads + 2 * d.kvHeads) * d.headDim * d.hidden +
                 d.hidden * d.heads * d.headDim + 3.0 * d.inter * d.hidden);
  // Causal attention: each query sees past + its position + 1 keys.
  double keys = past * t + t * (t + 1) / 2.0;
  double attn = 4.0 * keys * d.heads * d.headDim;
  return proj + attn;
}

static std::string llamaWeightsDecl(const Dims &d) {
  std::string s;
  llvm::raw_string_ostream os(s);
  auto p = [&](StringRef var, StringRef name, llvm::ArrayRef<int64_t> shape) {
    os << "  %" << var << " = hir.param \"" << name
       << "\" : " << tensorTy(shape) << "\n";
  };
  p("n1", "input_layernorm.weight", {d.hidden});
  p("wq", "self_attn.q_proj.weight", {d.heads * d.headDim, d.hidden});
  p("wk", "self_attn.k_proj.weight", {d.kvHeads * d.headDim, d.hidden});
  p("wv", "self_attn.v_proj.weight", {d.kvHeads * d.headDim, d.hidden});
  p("wo", "self_attn.o_proj.weight", {d.hidden, d.heads * d.headDim});
  p("n2", "post_attention_layernorm.weight", {d.hidden});
  p("wg", "mlp.gate_proj.weight", {d.inter, d.hidden});
  p("wu", "mlp.up_proj.weight", {d.inter, d.hidden});
  p("wd", "mlp.down_proj.weight", {d.hidden, d.inter});
  return s;
}

static std::string llamaWeightTypes(const Dims &d) {
  return tensorTy({d.hidden}) + ", " +
         tensorTy({d.heads * d.headDim, d.hidden}) + ", " +
         tensorTy({d.kvHeads * d.headDim, d.hidden}) + ", " +
         tensorTy({d.kvHeads * d.headDim, d.hidden}) + ", " +
         tensorTy({d.hidden, d.heads * d.headDim}) + ", " +
         tensorTy({d.hidden}) + ", " + tensorTy({d.inter, d.hidden}) + ", " +
         tensorTy({d.inter, d.hidden}) + ", " + tensorTy({d.hidden, d.inter});
}

static std::string llamaAttrs(const Dims &d) {
  return "{num_heads = " + std::to_string(d.heads) +
         " : i64, num_kv_heads = " + std::to_string(d.kvHeads) +
         " : i64, head_dim = " + std::to_string(d.headDim) +
         " : i64, rope_theta = 500000.0 : f32, rms_epsilon = 1.0e-5 : f32}";
}

/// One LLaMA decoder layer over T tokens.
static std::string llamaPrefillMlir(const Dims &d, int64_t t) {
  std::string x = tensorTy({1, t, d.hidden}), pos = tensorTy({1, t}, "i32");
  return "func.func @llama_layer(%x: " + x +
         " {rlx.name = \"x\"}, %pos: " + pos + " {rlx.name = \"pos\"}) -> (" +
         x + " {rlx.name = \"out\"}) {\n" + llamaWeightsDecl(d) +
         "  %y = hir.llama_decoder_layer %x, %pos attn(%n1, %wq, %wk, %wv, "
         "%wo) post_norm(%n2) mlp(%wg, %wu, %wd) " +
         llamaAttrs(d) + " : (" + x + ", " + pos + ", " + llamaWeightTypes(d) +
         ") -> " + x + "\n  return %y : " + x + "\n}\n";
}

/// One LLaMA decode step over a KV cache of `past` positions.
static std::string llamaDecodeMlir(const Dims &d, int64_t past) {
  int64_t kv = d.kvHeads * d.headDim;
  std::string x = tensorTy({1, 1, d.hidden}), pos = tensorTy({1, 1}, "i32");
  std::string pk = tensorTy({1, past, kv}), nk = tensorTy({1, past + 1, kv});
  return "func.func @llama_step(%x: " + x +
         " {rlx.name = \"x\"}, %pos: " + pos +
         " {rlx.name = \"pos\"}, %pk: " + pk +
         " {rlx.name = \"past_k\"}, %pv: " + pk +
         " {rlx.name = \"past_v\"}) -> (" + x + " {rlx.name = \"out\"}, " + nk +
         " {rlx.name = \"k\"}, " + nk + " {rlx.name = \"v\"}) {\n" +
         llamaWeightsDecl(d) +
         "  %y, %k, %v = hir.llama_cached_decoder_layer %x, %pos past(%pk, "
         "%pv) "
         "attn(%n1, %wq, %wk, %wv, %wo) post_norm(%n2) mlp(%wg, %wu, %wd) " +
         llamaAttrs(d) + " : (" + x + ", " + pos + ", " + pk + ", " + pk +
         ", " + llamaWeightTypes(d) + ") -> (" + x + ", " + nk + ", " + nk +
         ")\n  return %y, %k, %v : " + x + ", " + nk + ", " + nk + "\n}\n";
}

static void addBertWeights(RandomWeights &w, const Dims &d) {
  float s = 0.02f;
  int64_t h = d.hidden;
  for (StringRef n : {"q", "k", "v", "o"}) {
    w.add(("attn." + n + ".weight").str(), {h, h}, s);
    w.add(("attn." + n + ".bias").str(), {h}, s);
  }
  w.add("ln1.weight", {h}, 0.1f, 1.0f);
  w.add("ln1.bias", {h}, 0.02f);
  w.add("ffn.in.weight", {d.inter, h}, s);
  w.add("ffn.in.bias", {d.inter}, s);
  w.add("ffn.out.weight", {h, d.inter}, s);
  w.add("ffn.out.bias", {h}, s);
  w.add("ln2.weight", {h}, 0.1f, 1.0f);
  w.add("ln2.bias", {h}, 0.02f);
}

static double bertLayerFlops(const Dims &d, int64_t t) {
  double h = d.hidden;
  return 2.0 * t * (4 * h * h + 2 * h * d.inter) + 4.0 * t * t * h;
}

static std::string bertMlir(const Dims &d, int64_t t) {
  int64_t h = d.hidden;
  std::string x = tensorTy({1, t, h});
  std::string s = "func.func @bert_layer(%x: " + x +
                  " {rlx.name = \"x\"}) -> (" + x +
                  " {rlx.name = \"out\"}) {\n";
  llvm::raw_string_ostream os(s);
  auto p = [&](StringRef var, StringRef name, llvm::ArrayRef<int64_t> shape) {
    os << "  %" << var << " = hir.param \"" << name
       << "\" : " << tensorTy(shape) << "\n";
  };
  for (StringRef n : {"q", "k", "v", "o"}) {
    p(("w" + n).str(), ("attn." + n + ".weight").str(), {h, h});
    p(("b" + n).str(), ("attn." + n + ".bias").str(), {h});
  }
  p("g1", "ln1.weight", {h});
  p("c1", "ln1.bias", {h});
  p("wi", "ffn.in.weight", {d.inter, h});
  p("bi", "ffn.in.bias", {d.inter});
  p("wo2", "ffn.out.weight", {h, d.inter});
  p("bo2", "ffn.out.bias", {h});
  p("g2", "ln2.weight", {h});
  p("c2", "ln2.bias", {h});
  std::string hh = tensorTy({h, h}), hv = tensorTy({h});
  os << "  %y = hir.bert_encoder_layer %x attn(%wq, %bq, %wk, %bk, %wv, %bv, "
        "%wo, %bo) ln1(%g1, %c1) ffn(%wi, %bi, %wo2, %bo2) ln2(%g2, %c2) "
        "{num_heads = "
     << d.heads << " : i64, head_dim = " << d.headDim << " : i64} : (" << x;
  for (int i = 0; i < 4; ++i)
    os << ", " << hh << ", " << hv;
  os << ", " << hv << ", " << hv << ", " << tensorTy({d.inter, h}) << ", "
     << tensorTy({d.inter}) << ", " << tensorTy({h, d.inter}) << ", " << hv
     << ", " << hv << ", " << hv << ") -> " << x << "\n  return %y : " << x
     << "\n}\n";
  return s;
}

//===----------------------------------------------------------------------===//
// Compiling and running RLX models
//===----------------------------------------------------------------------===//

static CompileOptions rlxOptions() {
  CompileOptions o;
  o.profile.backend.cpu.threads = threadsOpt;
  if (auto g = symbolizeGemmStrategy(gemmChoice))
    o.profile.backend.cpu.gemm = *g;
  return o;
}

/// rlxOptions() with a recipe's `profile`, but for the CPU back end's
/// settings (threads, GEMM), which are rlx-bench's.
static CompileOptions rlxOptions(const CompileProfile &profile) {
  CompileOptions o = rlxOptions();
  CompileProfile p = profile;
  p.backend.cpu = o.profile.backend.cpu;
  o.profile = p;
  return o;
}

static std::vector<float> randomData(size_t n, float scale, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull | 1;
  for (float &f : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    f = scale * (static_cast<float>((x >> 40) * (1.0 / (1ull << 23))) - 1.0f);
  }
  return v;
}

/// Compiles `mlir`, loads `weights` and times runs on `inputs`.
static Expected<Stats> timeModule(Session &session, const std::string &mlir,
                                  const WeightSource &weights,
                                  const TensorMap_t &inputs, unsigned warmup,
                                  unsigned reps, CompileOptions options,
                                  double *compileSeconds = nullptr) {
  Expected<CompiledModel> model = session.compileString(mlir, options);
  if (!model)
    return model.takeError();
  if (compileSeconds)
    *compileSeconds = session.lastStats().compileSeconds;
  if (Error err = model->loadParams(weights))
    return std::move(err);
  Error failure = Error::success();
  bool failed = false;
  Stats s = timeIt(
      [&] {
        if (failed)
          return;
        Expected<TensorMap_t> out = model->run(inputs);
        if (!out) {
          failure = out.takeError();
          failed = true;
        }
      },
      warmup, reps);
  if (failed)
    return std::move(failure);
  (void)std::move(failure);
  return s;
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

namespace {
struct GemmShape {
  std::string name;
  int64_t m, n, k;
  /// RLX computes SwiGLU(A W^T) (the fused gate/up GEMM of a LLaMA MLP,
  /// n = 2 x the intermediate size); OpenBLAS the GEMM alone.
  bool glu = false;
};
} // namespace

static std::vector<GemmShape> gemmShapes() {
  if (quick)
    return {{"quick prefill 32x256x512", 32, 512, 256},
            {"quick decode 1x256x512", 1, 512, 256}};
  Dims l = llamaDims(), b = bertDims();
  int64_t qkv = (l.heads + 2 * l.kvHeads) * l.headDim;
  std::vector<GemmShape> s;
  for (int64_t m : {int64_t(128), int64_t(1)}) {
    std::string t = m == 1 ? "decode" : "T=128";
    s.push_back({"llama qkv " + t, m, qkv, l.hidden});
    s.push_back({"llama o " + t, m, l.hidden, l.hidden});
    s.push_back({"llama gate+up " + t, m, 2 * l.inter, l.hidden});
    s.push_back({"llama gate+up+swiglu " + t, m, 2 * l.inter, l.hidden, true});
    s.push_back({"llama down " + t, m, l.hidden, l.inter});
  }
  s.push_back({"bert qkv T=128", 128, 3 * b.hidden, b.hidden});
  s.push_back({"bert o T=128", 128, b.hidden, b.hidden});
  s.push_back({"bert ffn-in T=128", 128, b.inter, b.hidden});
  s.push_back({"bert ffn-out T=128", 128, b.hidden, b.inter});
  s.push_back({"square n=2048", 2048, 2048, 2048});
  return s;
}

/// Times cblas_sgemm(row major, A * W^T) on each shape with `threads`.
static std::vector<Stats> timeBlas(const std::vector<GemmShape> &shapes,
                                   unsigned threads, unsigned reps) {
  openblas_set_num_threads(threads);
  std::vector<Stats> out;
  for (const GemmShape &g : shapes) {
    std::vector<float> a = randomData(g.m * g.k, 1.0f, 1);
    std::vector<float> w = randomData(g.n * g.k, 0.02f, 2);
    std::vector<float> c(g.m * g.n);
    out.push_back(timeIt(
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g.m, g.n, g.k,
                      1.0f, a.data(), g.k, w.data(), g.k, 0.0f, c.data(), g.n);
        },
        2, reps, 10));
  }
  return out;
}

static std::string selfPath;

/// Runs `program args` with `env`; returns its stdout.
static Expected<std::string>
runCapture(StringRef program, llvm::ArrayRef<std::string> args,
           std::optional<llvm::ArrayRef<StringRef>> env,
           unsigned timeoutSeconds) {
  llvm::SmallString<128> outPath, errPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("rlx-bench", "out", outPath))
    return fail("temporary file: " + ec.message());
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("rlx-bench", "err", errPath))
    return fail("temporary file: " + ec.message());
  llvm::SmallVector<StringRef> argv = {program};
  for (const std::string &a : args)
    argv.push_back(a);
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(outPath),
                                          StringRef(errPath)};
  std::string msg;
  int rc = llvm::sys::ExecuteAndWait(program, argv, env, redirects,
                                     timeoutSeconds, 0, &msg);
  auto out = llvm::MemoryBuffer::getFile(outPath);
  auto err = llvm::MemoryBuffer::getFile(errPath);
  std::string outText = out ? (*out)->getBuffer().str() : "";
  std::string errText = err ? (*err)->getBuffer().str() : "";
  llvm::sys::fs::remove(outPath);
  llvm::sys::fs::remove(errPath);
  if (rc != 0) {
    StringRef tail = StringRef(errText).trim();
    if (tail.size() > 400)
      tail = tail.take_back(400);
    return fail("exit " + llvm::Twine(rc) +
                (msg.empty() ? "" : " (" + msg + ")") +
                (tail.empty() ? "" : ": " + tail));
  }
  return outText;
}

/// The environment without OPENBLAS_CORETYPE.
static std::vector<std::string> envWithoutCoretype() {
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e)
    if (!StringRef(*e).starts_with("OPENBLAS_CORETYPE="))
      env.push_back(*e);
  return env;
}

static int blasChildMain() {
  std::vector<GemmShape> shapes;
  for (StringRef s : llvm::split(blasShapes, ';')) {
    llvm::SmallVector<StringRef> p;
    s.split(p, ',');
    if (p.size() != 3)
      continue;
    GemmShape g;
    p[0].getAsInteger(10, g.m);
    p[1].getAsInteger(10, g.n);
    p[2].getAsInteger(10, g.k);
    shapes.push_back(g);
  }
  unsigned threads = cpuThreadCount(threadsOpt);
  std::vector<Stats> stats = timeBlas(shapes, threads, repsOpt ? repsOpt : 10);
  json::Array arr;
  for (const Stats &s : stats)
    arr.push_back(s.toJSON());
  json::Object root{{"core", openblas_get_corename()},
                    {"results", std::move(arr)}};
  llvm::outs() << json::Value(std::move(root)) << "\n";
  return 0;
}

static Stats statsFromJSON(const json::Object &o) {
  Stats s;
  s.median = o.getNumber("median_ms").value_or(0) / 1e3;
  s.p10 = o.getNumber("p10_ms").value_or(0) / 1e3;
  s.p90 = o.getNumber("p90_ms").value_or(0) / 1e3;
  s.min = o.getNumber("min_ms").value_or(0) / 1e3;
  s.runs = o.getInteger("runs").value_or(0);
  return s;
}

namespace {
struct BlasRun {
  std::string core, error;
  std::vector<Stats> stats;
};
} // namespace

/// Times the shapes in a child process whose OPENBLAS_CORETYPE is removed
/// (`coretype` empty) or set to `coretype`.
static BlasRun runBlasChild(const std::string &spec, unsigned reps,
                            unsigned threads, StringRef coretype) {
  BlasRun run;
  std::vector<std::string> env = envWithoutCoretype();
  if (!coretype.empty())
    env.push_back(("OPENBLAS_CORETYPE=" + coretype).str());
  llvm::SmallVector<StringRef> envRefs(env.begin(), env.end());
  Expected<std::string> child =
      runCapture(selfPath,
                 {"--blas-child", "--blas-shapes=" + spec,
                  "--reps=" + std::to_string(reps),
                  "--num-threads=" + std::to_string(threads)},
                 llvm::ArrayRef<StringRef>(envRefs), 600);
  if (!child) {
    run.error = llvm::toString(child.takeError());
    return run;
  }
  Expected<json::Value> parsed = json::parse(*child);
  if (!parsed || !parsed->getAsObject()) {
    run.error = "unreadable output";
    if (!parsed)
      llvm::consumeError(parsed.takeError());
    return run;
  }
  json::Object &root = *parsed->getAsObject();
  if (auto c = root.getString("core"))
    run.core = c->str();
  if (json::Array *arr = root.getArray("results"))
    for (json::Value &v : *arr)
      if (json::Object *o = v.getAsObject())
        run.stats.push_back(statsFromJSON(*o));
  return run;
}

static Error benchGemms(Report &report, unsigned reps) {
  std::vector<GemmShape> shapes = gemmShapes();
  unsigned threads = cpuThreadCount(threadsOpt);
  // OpenBLAS as configured, in this process, before any RLX model sets it
  // to one thread.
  std::string configured = openblas_get_corename();
  std::vector<Stats> blas = timeBlas(shapes, threads, reps);
  // OpenBLAS's own kernel choice, in a child without OPENBLAS_CORETYPE,
  // and its AVX2 kernel (OPENBLAS_CORETYPE=Haswell) unless the environment
  // already asks for it.
  std::string spec;
  for (const GemmShape &g : shapes)
    spec += (spec.empty() ? "" : ";") + std::to_string(g.m) + "," +
            std::to_string(g.n) + "," + std::to_string(g.k);
  BlasRun native = runBlasChild(spec, reps, threads, "");
  const char *envCore = std::getenv("OPENBLAS_CORETYPE");
  std::optional<BlasRun> haswell;
  if (!envCore || StringRef(envCore) != "Haswell")
    haswell = runBlasChild(spec, reps, threads, "Haswell");
  report.machine["openblas_configured_core"] = configured;
  report.machine["openblas_native_core"] = native.core;

  Session session;
  for (auto [i, g] : llvm::enumerate(shapes)) {
    Case c;
    c.section =
        "GEMM (C = A W^T, f32, " + std::to_string(threads) + " threads)";
    c.name = g.name + " (" + std::to_string(g.m) + "x" + std::to_string(g.n) +
             "x" + std::to_string(g.k) + ")";
    if (g.m == 1)
      c.bytes = 4.0 * g.n * g.k;
    else
      c.flops = 2.0 * g.m * g.n * g.k;
    std::string a = tensorTy({g.m, g.k}), w = tensorTy({g.n, g.k}),
                y = tensorTy({g.m, g.n}), h = tensorTy({g.m, g.n / 2});
    std::string out = g.glu ? h : y;
    std::string mlir = "func.func @gemm(%x: " + a +
                       " {rlx.name = \"x\"}) -> (" + out +
                       " {rlx.name = \"y\"}) {\n  %w = mir.param \"w\" : " + w +
                       "\n  %y = mir.matmul %x, %w {transpose_rhs} : (" + a +
                       ", " + w + ") -> " + y + "\n";
    if (g.glu)
      mlir += "  %h = mir.fused_glu %y : (" + y + ") -> " + h + "\n";
    mlir +=
        "  return %" + std::string(g.glu ? "h" : "y") + " : " + out + "\n}\n";
    RandomWeights weights;
    weights.add("w", {g.n, g.k}, 0.02f);
    TensorMap_t inputs;
    inputs.emplace("x",
                   Tensor::fromF32({g.m, g.k}, randomData(g.m * g.k, 1.0f, 3)));
    Expected<Stats> s =
        timeModule(session, mlir, weights, inputs, 2, reps, rlxOptions());
    if (s)
      c.add("rlx", *s);
    else
      c.missing("rlx", llvm::toString(s.takeError()));
    c.add("openblas " + configured + " (env)", blas[i]);
    auto addChild = [&](const BlasRun &run, StringRef label) {
      if (i < run.stats.size())
        c.add(("openblas " + run.core + " (" + label + ")").str(),
              run.stats[i]);
      else
        c.missing(("openblas (" + label + ")").str(),
                  run.error.empty() ? "no result" : run.error);
    };
    addChild(native, "native");
    if (haswell)
      addChild(*haswell, "CORETYPE=Haswell");
    report.cases.push_back(std::move(c));
  }
  report.notes.push_back(
      "GEMM: rlx times a compiled model run (input and output copies "
      "included); OpenBLAS times cblas_sgemm alone (for '+swiglu', RLX's "
      "fused GEMM and SwiGLU against OpenBLAS's GEMM without it). 'env' is "
      "OpenBLAS with "
      "this environment's OPENBLAS_CORETYPE, 'native' a subprocess without "
      "it (OpenBLAS picks its kernel for the CPU), 'CORETYPE=Haswell' a "
      "subprocess forcing the AVX2 kernel.");
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Layers and the model
//===----------------------------------------------------------------------===//

static int64_t layerT() { return quick ? 32 : 128; }

/// The inputs of a LLaMA prefill layer: random hidden states, positions
/// 0..t-1.
static TensorMap_t llamaPrefillInputs(const Dims &l, int64_t t) {
  std::vector<int32_t> pos(t);
  std::iota(pos.begin(), pos.end(), 0);
  TensorMap_t in;
  in.emplace("x", Tensor::fromF32({1, t, l.hidden},
                                  randomData(t * l.hidden, 1.0f, 4)));
  in.emplace("pos", Tensor::fromI32({1, t}, pos));
  return in;
}

static Error benchLayers(Report &report, unsigned reps) {
  Session session;
  Dims l = llamaDims(), b = bertDims();
  int64_t t = layerT();
  if (!emitMlir.empty()) {
    llvm::sys::fs::create_directories(emitMlir);
    for (auto [name, text] :
         {std::make_pair("llama_prefill.mlir", llamaPrefillMlir(l, t)),
          std::make_pair("llama_decode.mlir", llamaDecodeMlir(l, t)),
          std::make_pair("bert.mlir", bertMlir(b, t))}) {
      std::error_code ec;
      llvm::raw_fd_ostream os(emitMlir + "/" + name, ec);
      if (ec)
        return fail(emitMlir + "/" + name + ": " + ec.message());
      os << text;
    }
  }
  {
    Case c;
    c.section = "Layers (f32, random weights)";
    c.name = "llama layer prefill T=" + std::to_string(t);
    c.flops = llamaLayerFlops(l, t, 0);
    RandomWeights w;
    addLlamaLayerWeights(w, l);
    TensorMap_t in = llamaPrefillInputs(l, t);
    double compile = 0;
    Expected<Stats> s = timeModule(session, llamaPrefillMlir(l, t), w, in, 2,
                                   reps, rlxOptions(), &compile);
    if (!s)
      return s.takeError();
    c.add("rlx", *s);
    c.extra["rlx compile s"] = compile;
    // [precision] compute = "bf16": the activations between ops rounded to
    // bf16 (by the producing kernels), the kernels computing in f32.
    CompileOptions bf16 = rlxOptions();
    bf16.profile.precision.compute = ComputePrecision::BF16;
    Expected<Stats> r =
        timeModule(session, llamaPrefillMlir(l, t), w, in, 2, reps, bf16);
    if (!r)
      return r.takeError();
    c.add("rlx compute bf16", *r);
    c.extra["compute bf16 / f32 time"] = r->median / s->median;
    report.cases.push_back(std::move(c));
  }
  {
    Case c;
    c.section = "Layers (f32, random weights)";
    c.name = "llama layer decode past=" + std::to_string(t);
    c.bytes = llamaLayerWeightBytes(l);
    RandomWeights w;
    addLlamaLayerWeights(w, l);
    int64_t kv = l.kvHeads * l.headDim;
    TensorMap_t in;
    in.emplace(
        "x", Tensor::fromF32({1, 1, l.hidden}, randomData(l.hidden, 1.0f, 5)));
    in.emplace("pos", Tensor::fromI32({1, 1}, {static_cast<int32_t>(t)}));
    in.emplace("past_k", Tensor::fromF32({1, t, kv}, randomData(t * kv, 1, 6)));
    in.emplace("past_v", Tensor::fromF32({1, t, kv}, randomData(t * kv, 1, 7)));
    Expected<Stats> s = timeModule(session, llamaDecodeMlir(l, t), w, in, 3,
                                   reps * 3, rlxOptions());
    if (!s)
      return s.takeError();
    c.add("rlx", *s);
    report.cases.push_back(std::move(c));
  }
  {
    Case c;
    c.section = "Layers (f32, random weights)";
    c.name = "bert layer T=" + std::to_string(t);
    c.flops = bertLayerFlops(b, t);
    RandomWeights w;
    addBertWeights(w, b);
    TensorMap_t in;
    in.emplace("x", Tensor::fromF32({1, t, b.hidden},
                                    randomData(t * b.hidden, 1.0f, 8)));
    Expected<Stats> s =
        timeModule(session, bertMlir(b, t), w, in, 3, reps * 2, rlxOptions());
    if (!s)
      return s.takeError();
    c.add("rlx", *s);
    report.cases.push_back(std::move(c));
  }
  return Error::success();
}

//===----------------------------------------------------------------------===//
// SPIR-V: kernels optimized by spirv-opt or not
//===----------------------------------------------------------------------===//

/// The LLaMA prefill and BERT layers on Vulkan, compiled with
/// `[backend.spirv] optimize` on ("rlx") and off: the run time of every
/// kernel of the layer, and the compile time spirv-tools adds. Without a
/// Vulkan device the figures are n/a with the reason.
static void benchSpirv(Report &report, unsigned reps) {
  // Smaller layers than the CPU's: lavapipe runs them on the CPU too.
  Dims l = quick ? llamaDims() : Dims{1024, 16, 4, 64, 4096};
  Dims b = bertDims();
  int64_t t = layerT();
  std::string section = "SPIR-V kernels on Vulkan (spirv-opt on / off)";
  // Both variants are compiled first, then timed in alternation, so that
  // both see the same machine load (lavapipe shares the CPU).
  auto run = [&](Case &c, const std::string &mlir, const RandomWeights &w,
                 const TensorMap_t &in) {
    struct Variant {
      std::string who;
      bool optimize;
      Session session{Device::Vulkan};
      std::optional<CompiledModel> model;
      std::vector<double> times;
    };
    Variant variants[] = {{"rlx", true}, {"rlx (spirv unoptimized)", false}};
    for (Variant &v : variants) {
      CompileOptions o;
      o.profile.backend.spirv.optimize = v.optimize;
      Expected<CompiledModel> model = v.session.compileString(mlir, o);
      if (!model) {
        c.missing(v.who, llvm::toString(model.takeError()));
        return;
      }
      if (Error err = model->loadParams(w)) {
        c.missing(v.who, llvm::toString(std::move(err)));
        return;
      }
      v.model.emplace(std::move(*model));
      const CompileStats &cs = v.session.lastStats();
      c.extra[v.optimize ? "compile s (optimized)"
                         : "compile s (unoptimized)"] = cs.compileSeconds;
      for (const auto &[phase, seconds] : cs.phaseSeconds)
        if (StringRef(phase).starts_with("spirv-validate"))
          c.extra[phase + " s"] = seconds;
    }
    auto start = Clock::now();
    for (unsigned r = 0; r <= reps; ++r) {
      for (Variant &v : variants) {
        double a = clockNow();
        Expected<TensorMap_t> out = v.model->run(in);
        if (!out) {
          c.missing(v.who, llvm::toString(out.takeError()));
          return;
        }
        // The first round warms up.
        if (r > 0)
          v.times.push_back(clockNow() - a);
      }
      if (r >= 3 && seconds(start, Clock::now()) > 60)
        break;
    }
    for (Variant &v : variants)
      c.add(v.who, summarize(v.times));
  };
  {
    Case c;
    c.section = section;
    c.name = "vulkan llama layer prefill T=" + std::to_string(t) + " (hidden " +
             std::to_string(l.hidden) + ")";
    c.flops = llamaLayerFlops(l, t, 0);
    RandomWeights w;
    addLlamaLayerWeights(w, l);
    TensorMap_t in = llamaPrefillInputs(l, t);
    run(c, llamaPrefillMlir(l, t), w, in);
    report.cases.push_back(std::move(c));
  }
  {
    Case c;
    c.section = section;
    c.name = "vulkan bert layer T=" + std::to_string(t);
    c.flops = bertLayerFlops(b, t);
    RandomWeights w;
    addBertWeights(w, b);
    TensorMap_t in;
    in.emplace("x", Tensor::fromF32({1, t, b.hidden},
                                    randomData(t * b.hidden, 1.0f, 8)));
    run(c, bertMlir(b, t), w, in);
    report.cases.push_back(std::move(c));
  }
  report.notes.push_back(
      "SPIR-V: one layer run on the Vulkan device (every kernel dispatched, "
      "input and output copies included), with spirv-opt's performance "
      "passes on every kernel ('rlx') and without, the two runs "
      "alternating; every module is validated either way "
      "('spirv-validate[-opt] s' is that compile phase).");
}

/// The LLaMA-1B-shaped model of the model and TTFT sections (`layers`
/// layers, a tied head), and its random weights.
static TransformerConfig llamaModelConfig(int64_t layers) {
  Dims l = llamaDims();
  TransformerConfig cfg;
  cfg.modelType = "llama";
  cfg.vocabSize = quick ? 512 : vocabOpt;
  cfg.hidden = l.hidden;
  cfg.intermediate = l.inter;
  cfg.numLayers = layers;
  cfg.numHeads = l.heads;
  cfg.numKvHeads = l.kvHeads;
  cfg.headDim = l.headDim;
  cfg.maxPositions = 2048;
  cfg.normEpsilon = 1e-5;
  cfg.ropeTheta = 500000.0;
  cfg.tieEmbeddings = true;
  return cfg;
}

static void addLlamaModelWeights(RandomWeights &w,
                                 const TransformerConfig &cfg) {
  Dims l = llamaDims();
  w.add("model.embed_tokens.weight", {cfg.vocabSize, l.hidden}, 0.02f);
  for (int64_t i = 0; i < cfg.numLayers; ++i)
    addLlamaLayerWeights(w, l, "model.layers." + std::to_string(i) + ".");
  w.add("model.norm.weight", {l.hidden}, 0.1f, 1.0f);
}

/// The prompt of `t` tokens the model sections run.
static std::vector<int32_t> modelPrompt(const TransformerConfig &cfg,
                                        int64_t t) {
  std::vector<int32_t> prompt(t);
  for (int64_t i = 0; i < t; ++i)
    prompt[i] = (i * 7919) % cfg.vocabSize;
  return prompt;
}

static Error benchModel(Report &report, unsigned reps) {
  Dims l = llamaDims();
  int64_t layers = quick ? 2 : 16, t = layerT();
  TransformerConfig cfg = llamaModelConfig(layers);
  RandomWeights w;
  addLlamaModelWeights(w, cfg);

  Case c;
  c.section = "Model (" + std::to_string(layers) +
              " LLaMA-1B-shaped layers, "
              "vocab " +
              std::to_string(cfg.vocabSize) + ", tied head)";
  c.name = "prefill T=" + std::to_string(t) + " (last-token logits)";
  c.flops = layers * llamaLayerFlops(l, t, 0) + 2.0 * cfg.vocabSize * l.hidden;
  Session session;
  std::vector<int32_t> prompt = modelPrompt(cfg, t), pos(t);
  std::iota(pos.begin(), pos.end(), 0);
  {
    Llama32Flow recipe(cfg);
    recipe.forPrefill().lastTokenLogits();
    Expected<BuiltModel> built = recipe.build(w);
    if (!built)
      return built.takeError();
    CompileOptions o = rlxOptions();
    o.profile = built->profile;
    o.profile.backend.cpu.threads = threadsOpt;
    if (auto g = symbolizeGemmStrategy(gemmChoice))
      o.profile.backend.cpu.gemm = *g;
    o.inputShapes["tokens"] = {1, t};
    o.inputShapes["positions"] = {1, t};
    auto start = Clock::now();
    Expected<CompiledModel> model = session.compileString(built->mlir, o);
    if (!model)
      return model.takeError();
    double compile = seconds(start, Clock::now());
    const CompileStats &cs = session.lastStats();
    c.extra["compile s (prefill graph)"] = compile;
    c.extra["compile phases"] = cs.phaseSummary();
    c.extra["kernels / kernel functions"] =
        std::to_string(cs.kernels) + " / " + std::to_string(cs.kernelFunctions);
    WeightSourceStack all({&w, built->synthesized.get()});
    if (Error err = model->loadParams(all))
      return err;
    TensorMap_t in;
    in.emplace("tokens", Tensor::fromI32({1, t}, prompt));
    in.emplace("positions", Tensor::fromI32({1, t}, pos));
    Stats s = timeIt([&] { llvm::cantFail(model->run(in)); }, 1,
                     std::max(3u, reps / 2), 60);
    c.add("rlx", s);
    c.extra["prefill tok/s"] = t / s.median;
  }
  // Decode through the generator (KV cache, bucketed decode graphs).
  {
    Llama32Flow recipe(cfg);
    CompileOptions o = rlxOptions();
    o.profile = CompileProfile::llama32Decode();
    o.profile.backend.cpu.threads = threadsOpt;
    if (auto g = symbolizeGemmStrategy(gemmChoice))
      o.profile.backend.cpu.gemm = *g;
    int64_t newTokens = quick ? 4 : 32;
    Expected<std::unique_ptr<Generator>> gen =
        Generator::create(session, recipe, w, t + newTokens + 16, o);
    if (!gen)
      return gen.takeError();
    SamplingOptions greedy;
    // The first run compiles the graphs; the second is timed.
    for (int run = 0; run < 2; ++run) {
      Expected<std::vector<int32_t>> out =
          (*gen)->generate(prompt, newTokens, greedy);
      if (!out)
        return out.takeError();
    }
    const GenerationStats &gs = (*gen)->stats();
    c.extra["decode tok/s (generator, " + std::to_string(newTokens) +
            " tokens)"] = gs.decodeTokensPerSecond();
    c.extra["decode ms/token"] =
        gs.decodeSteps ? gs.decodeSeconds * 1e3 / gs.decodeSteps : 0.0;
    c.extra["decode graphs compile s"] = gs.compileSeconds;
  }
  report.cases.push_back(std::move(c));
  return Error::success();
}

/// Time to first token of the model benchModel decodes, in this process:
/// cold (an empty compile cache: the prompt graph compiles) and warm (a new
/// Session and Generator over the filled cache, as a second process would
/// see it). Weights are in memory (no file to map): what is left beside
/// compiling is copying them into the parameter pool, reported apart.
static Error benchTTFT(Report &report) {
  int64_t layers = quick ? 2 : 16, t = quick ? 16 : 128;
  TransformerConfig cfg = llamaModelConfig(layers);
  RandomWeights w;
  addLlamaModelWeights(w, cfg);
  std::vector<int32_t> prompt = modelPrompt(cfg, t);

  llvm::SmallString<128> cache;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("rlx-bench-cache", cache))
    return llvm::createStringError(ec, "cannot make a cache directory: " +
                                           ec.message());
  Case c;
  c.section = "Time to first token (" + std::to_string(layers) +
              " LLaMA-1B-shaped layers, compile cache)";
  c.name = "prompt T=" + std::to_string(t) + ", 1 new token";
  std::vector<int32_t> tokens[2];
  for (int run = 0; run < 2; ++run) {
    auto start = Clock::now();
    Session session;
    CompileOptions o = rlxOptions();
    o.profile = CompileProfile::llama32Decode();
    o.profile.backend.cpu.threads = threadsOpt;
    o.cacheDir = std::string(cache);
    Llama32Flow recipe(cfg);
    Expected<std::unique_ptr<Generator>> gen =
        Generator::create(session, recipe, w, t + 16, o);
    if (!gen)
      return gen.takeError();
    SamplingOptions greedy;
    Expected<std::vector<int32_t>> out = (*gen)->generate(prompt, 1, greedy);
    if (!out)
      return out.takeError();
    tokens[run] = *out;
    double ttft = seconds(start, Clock::now());
    const GenerationStats &gs = (*gen)->stats();
    std::string kind = run ? "warm" : "cold";
    c.extra["TTFT s, " + kind] = ttft;
    c.extra["compile s, " + kind] = gs.compileSeconds;
    c.extra["weights copied s, " + kind] = gs.loadSeconds;
    c.extra["prefill s, " + kind] = gs.prefillSeconds;
    if (run)
      c.extra["warm overhead s (TTFT - weights copied - prefill)"] =
          ttft - gs.loadSeconds - gs.prefillSeconds;
  }
  if (tokens[0] != tokens[1])
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the warm run (from the compile cache) generated another token");
  llvm::sys::fs::remove_directories(cache);
  report.cases.push_back(std::move(c));
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Peers
//===----------------------------------------------------------------------===//

static std::string sourceDir() { return RLX_SOURCE_DIR; }

/// The Python that runs bench/*.py: --python, else $RLX_PYTHON, else the
/// project's .venv.
static std::string peerPython() {
  if (!python.empty())
    return python;
  if (const char *env = std::getenv("RLX_PYTHON"))
    return env;
  return sourceDir() + "/.venv/bin/python";
}

/// A peer's figures for `cases` (its JSON key and the case) from the output
/// of bench/peers.py, whose last line is a JSON object; a failed run, an
/// unreadable output or a case it did not measure is recorded as missing
/// under `peer` (or the label it gives).
static void addPeerFigures(Expected<std::string> out, StringRef peer,
                           llvm::ArrayRef<std::pair<StringRef, Case *>> cases) {
  auto missing = [&](const std::string &why) {
    for (auto [key, c] : cases)
      c->missing(peer.str(), why);
  };
  if (!out)
    return missing(llvm::toString(out.takeError()));
  StringRef text = StringRef(*out).trim();
  StringRef last = text.rsplit('\n').second;
  if (last.empty())
    last = text;
  Expected<json::Value> parsed = json::parse(last);
  if (!parsed || !parsed->getAsObject())
    return missing(
        "unreadable output: " +
        (parsed ? std::string("no JSON") : llvm::toString(parsed.takeError())));
  json::Object &root = *parsed->getAsObject();
  std::string label = root.getString("label").value_or(peer).str();
  for (auto [key, c] : cases) {
    json::Object *r = root.getObject(key);
    if (!r)
      c->missing(label, "not measured");
    else if (auto err = r->getString("error"))
      c->missing(label, err->str());
    else
      c->add(label, statsFromJSON(*r), r->getString("note").value_or("").str());
  }
}

static void benchPeers(Report &report, unsigned reps) {
  std::string py = peerPython();
  std::string script = sourceDir() + "/bench/peers.py";
  unsigned threads = cpuThreadCount(threadsOpt);
  Dims l = llamaDims(), b = bertDims();
  int64_t t = layerT();
  auto findCase = [&](StringRef name) -> Case * {
    for (Case &c : report.cases)
      if (c.name == name)
        return &c;
    return nullptr;
  };
  std::string prefillName = "llama layer prefill T=" + std::to_string(t);
  std::string decodeName = "llama layer decode past=" + std::to_string(t);
  std::string bertName = "bert layer T=" + std::to_string(t);
  for (StringRef peer : llvm::split(StringRef(peersList), ',')) {
    peer = peer.trim();
    if (peer.empty())
      continue;
    std::vector<std::string> args = {
        script,
        "--peer=" + peer.str(),
        "--threads=" + std::to_string(threads),
        "--reps=" + std::to_string(reps),
        "--seq=" + std::to_string(t),
        "--llama=" + std::to_string(l.hidden) + "," + std::to_string(l.heads) +
            "," + std::to_string(l.kvHeads) + "," + std::to_string(l.headDim) +
            "," + std::to_string(l.inter),
        "--bert=" + std::to_string(b.hidden) + "," + std::to_string(b.heads) +
            "," + std::to_string(b.inter)};
    llvm::outs() << "peer " << peer << "...\n";
    llvm::outs().flush();
    Expected<std::string> out = runCapture(py, args, std::nullopt, 1800);
    std::vector<std::pair<StringRef, Case *>> cases;
    for (auto [key, name] :
         {std::pair<StringRef, StringRef>{"llama_prefill", prefillName},
          {"llama_decode", decodeName},
          {"bert", bertName}})
      if (Case *c = findCase(name))
        cases.push_back({key, c});
    addPeerFigures(std::move(out), peer, cases);
  }
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// A Mixtral-shaped mixture-of-experts MLP scaled to this machine: hidden,
/// expert intermediate size, experts, experts per token.
struct MoeDims {
  int64_t hidden, inter, experts, k;
};

static MoeDims moeDims() {
  return quick ? MoeDims{128, 256, 4, 2} : MoeDims{1024, 2816, 8, 2};
}

/// hir.moe_mlp over `t` tokens, the experts as [E, ...] parameters.
static std::string moeMlir(const MoeDims &d, int64_t t) {
  std::string x = tensorTy({1, t, d.hidden});
  std::string r = tensorTy({d.experts, d.hidden});
  std::string g = tensorTy({d.experts, d.inter, d.hidden});
  std::string dn = tensorTy({d.experts, d.hidden, d.inter});
  return "func.func @moe(%x: " + x + " {rlx.name = \"x\"}) -> (" + x +
         " {rlx.name = \"out\"}) {\n  %r = hir.param \"router\" : " + r +
         "\n  %g = hir.param \"gate\" : " + g +
         "\n  %u = hir.param \"up\" : " + g +
         "\n  %d = hir.param \"down\" : " + dn +
         "\n  %y = hir.moe_mlp %x router(%r) experts(%g, %u, %d) "
         "{experts_per_token = " +
         std::to_string(d.k) + " : i64, norm_topk_prob} : (" + x + ", " + r +
         ", " + g + ", " + g + ", " + dn + ") -> " + x +
         "\n  return %y : " + x + "\n}\n";
}

/// RLX's hir.moe_mlp (prefill T tokens, one decode token) beside PyTorch
/// running transformers' MixtralSparseMoeBlock on the same shapes (ONNX
/// Runtime and IREE are not run: the export of data-dependent expert
/// dispatch is not a graph they take as such).
static Error benchMoe(Report &report, unsigned reps) {
  Session session;
  MoeDims d = moeDims();
  int64_t t = layerT();
  RandomWeights w;
  w.add("router", {d.experts, d.hidden}, 0.5f);
  w.add("gate", {d.experts, d.inter, d.hidden}, 0.02f);
  w.add("up", {d.experts, d.inter, d.hidden}, 0.02f);
  w.add("down", {d.experts, d.hidden, d.inter}, 0.02f);
  std::string shape = std::to_string(d.hidden) + "," + std::to_string(d.inter) +
                      "," + std::to_string(d.experts) + "," +
                      std::to_string(d.k);
  double expertBytes = 3.0 * d.inter * d.hidden * 4;
  std::vector<Case *> cases;
  for (int64_t tokens : {t, int64_t(1)}) {
    Case c;
    c.section = "Mixture of experts (f32, hidden " + std::to_string(d.hidden) +
                ", " + std::to_string(d.experts) + " experts x " +
                std::to_string(d.inter) + ", top " + std::to_string(d.k) + ")";
    c.name = tokens == 1 ? "moe mlp decode T=1"
                         : "moe mlp prefill T=" + std::to_string(tokens);
    if (tokens == 1)
      c.bytes = d.k * expertBytes;
    else
      c.flops = 2.0 * tokens * d.k * 3 * d.inter * d.hidden;
    TensorMap_t in;
    in.emplace("x", Tensor::fromF32({1, tokens, d.hidden},
                                    randomData(tokens * d.hidden, 1.0f, 11)));
    Expected<Stats> st =
        timeModule(session, moeMlir(d, tokens), w, in, 2,
                   tokens == 1 ? reps * 3 : reps, rlxOptions());
    if (!st)
      return st.takeError();
    c.add("rlx", *st);
    report.cases.push_back(std::move(c));
  }
  Case &prefill = report.cases[report.cases.size() - 2];
  Case &decode = report.cases.back();
  std::string py = peerPython();
  llvm::outs() << "peer torch (mixture of experts)...\n";
  llvm::outs().flush();
  Expected<std::string> out =
      runCapture(py,
                 {sourceDir() + "/bench/peers.py", "--peer=torch",
                  "--threads=" + std::to_string(cpuThreadCount(threadsOpt)),
                  "--reps=" + std::to_string(reps),
                  "--seq=" + std::to_string(t), "--moe=" + shape},
                 std::nullopt, 1800);
  addPeerFigures(std::move(out), "pytorch",
                 {{"moe_prefill", &prefill}, {"moe_decode", &decode}});
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Image encoders beside PyTorch
//===----------------------------------------------------------------------===//

/// A checkpoint the PyTorch peer writes to `dir` (random weights) and times
/// under `key`: bench/peers.py with `modeArg`. The peer's figures, or why
/// there are none.
static Expected<Case> peerCheckpoint(StringRef what, StringRef modeArg,
                                     StringRef key, StringRef dir,
                                     unsigned reps) {
  llvm::outs() << "peer torch (" << what << ")...\n";
  llvm::outs().flush();
  Expected<std::string> out =
      runCapture(peerPython(),
                 {sourceDir() + "/bench/peers.py", "--peer=torch",
                  "--threads=" + std::to_string(cpuThreadCount(threadsOpt)),
                  "--reps=" + std::to_string(reps), modeArg.str()},
                 std::nullopt, 1800);
  Case peer;
  addPeerFigures(std::move(out), "pytorch", {{key, &peer}});
  if (!llvm::sys::fs::exists(dir + "/config.json"))
    return llvm::createStringError(
        "the PyTorch peer wrote no checkpoint to " + dir +
        (peer.figures.empty() ? std::string()
                              : ": " + peer.figures.front().note));
  return peer;
}

/// Times `mlir` on `weights` and `in` as case `c`'s "rlx" figure, beside
/// the peer's figures, and adds the case to the report.
static Error addBeside(Report &report, Case c, Case &peer,
                       const std::string &mlir, const WeightSource &weights,
                       const TensorMap_t &in, unsigned warmup, unsigned reps,
                       const CompileOptions &options) {
  Session session;
  Expected<Stats> st =
      timeModule(session, mlir, weights, in, warmup, reps, options);
  if (!st)
    return st.takeError();
  c.add("rlx", *st);
  for (Figure &f : peer.figures)
    c.figures.push_back(std::move(f));
  report.cases.push_back(std::move(c));
  return Error::success();
}

/// `name` under the system's temporary directory, commas as dashes.
static std::string benchDir(StringRef name) {
  llvm::SmallString<128> dir;
  llvm::sys::path::system_temp_directory(/*erasedOnReboot=*/true, dir);
  llvm::sys::path::append(dir, name);
  std::replace(dir.begin(), dir.end(), ',', '-');
  return std::string(dir);
}

/// A DINOv2 encoder (DINOv2-small's shape: hidden 384, 12 layers, 6 heads,
/// 224x224 in 14x14 patches; --quick a tiny one) on one image: PyTorch
/// running transformers' Dinov2Model, which also saves its random weights,
/// then RLX's VisionFlow on that same checkpoint.
static Error benchVision(Report &report, unsigned reps) {
  int64_t h = quick ? 64 : 384, layers = quick ? 2 : 12, heads = quick ? 4 : 6,
          image = quick ? 56 : 224, patch = 14;
  std::string dims = std::to_string(h) + "," + std::to_string(layers) + "," +
                     std::to_string(heads) + "," + std::to_string(image) + "," +
                     std::to_string(patch);
  std::string dir = benchDir("rlx-bench-dinov2-" + dims);
  Case c;
  c.section = "Image encoder (f32, DINOv2, hidden " + std::to_string(h) + ", " +
              std::to_string(layers) + " layers, " + std::to_string(image) +
              "px in " + std::to_string(patch) + "px patches)";
  c.name = "dinov2 encoder, 1 image";
  int64_t t = (image / patch) * (image / patch) + 1;
  c.flops = layers * t * (24.0 * h * h + 4.0 * t * h) +
            2.0 * (t - 1) * 3 * patch * patch * h;
  Expected<Case> peer = peerCheckpoint(
      "image encoder", "--vision=" + dir + "," + dims, "vision", dir, reps);
  if (!peer)
    return peer.takeError();
  Expected<LoadedModel> m = loadModel(dir);
  if (!m)
    return m.takeError();
  Expected<BuiltModel> built = VisionFlow(m->config).build(*m->weights);
  if (!built)
    return built.takeError();
  CompileOptions options = rlxOptions(built->profile);
  TensorMap_t in;
  in.emplace("pixel_values",
             Tensor::fromF32({1, 3, image, image},
                             randomData(3 * image * image, 1.0f, 5)));
  options.inputShapes["pixel_values"] = {1, 3, image, image};
  return addBeside(report, std::move(c), *peer, built->mlir, *m->weights, in, 2,
                   reps, options);
}

/// A FLUX-structured transformer (12 heads of 64, 2 double-stream and 4
/// single-stream blocks, a 512-token latent and 64 text tokens: FLUX.1 is
/// 24 heads of 128 and 19 + 38 blocks, beyond this bench's minutes; --quick
/// a tiny one) for one denoising step: PyTorch running diffusers'
/// FluxTransformer2DModel, which also saves its random weights, then RLX's
/// FluxFlow on that checkpoint.
static Error benchFlux(Report &report, unsigned reps) {
  int64_t heads = quick ? 2 : 12, hd = quick ? 16 : 64, dbl = quick ? 1 : 2,
          sgl = quick ? 1 : 4, ni = quick ? 64 : 512, nt = quick ? 16 : 64;
  std::string dims = std::to_string(heads) + "," + std::to_string(hd) + "," +
                     std::to_string(dbl) + "," + std::to_string(sgl) + "," +
                     std::to_string(ni) + "," + std::to_string(nt);
  std::string dir = benchDir("rlx-bench-flux-" + dims);
  int64_t d = heads * hd, n = ni + nt;
  Case c;
  c.section = "Diffusion transformer (f32, FLUX, " + std::to_string(heads) +
              " heads of " + std::to_string(hd) + ", " + std::to_string(dbl) +
              " double + " + std::to_string(sgl) + " single blocks, " +
              std::to_string(ni) + " image + " + std::to_string(nt) +
              " text tokens)";
  c.name = "flux transformer, 1 step";
  // Double: qkv, out, 4x MLP per stream; single: qkv + 4x MLP in, out of
  // 5x; attention over all tokens.
  c.flops = dbl * (2.0 * n * d * d * (3 + 1 + 8) + 4.0 * n * n * d) +
            sgl * (2.0 * n * d * d * (3 + 4 + 5) + 4.0 * n * n * d);
  Expected<Case> peer = peerCheckpoint(
      "diffusion transformer", "--flux=" + dir + "," + dims, "flux", dir, reps);
  if (!peer)
    return peer.takeError();
  Expected<FluxFlow> flux = FluxFlow::fromModelDir(dir);
  if (!flux)
    return flux.takeError();
  flux->shape(1, ni, nt);
  Expected<std::unique_ptr<SafeTensorsFile>> weights =
      SafeTensorsFile::open(dir + "/diffusion_pytorch_model.safetensors");
  if (!weights)
    return weights.takeError();
  Expected<BuiltModel> built = flux->build(**weights);
  if (!built)
    return built.takeError();
  CompileOptions options = rlxOptions(built->profile);
  std::vector<int32_t> imgIds(ni * 3, 0), txtIds(nt * 3, 0);
  int64_t side = static_cast<int64_t>(std::lround(std::sqrt(double(ni))));
  for (int64_t i = 0; i < ni; ++i) {
    imgIds[i * 3 + 1] = i / side;
    imgIds[i * 3 + 2] = i % side;
  }
  TensorMap_t in;
  in.emplace("hidden_states",
             Tensor::fromF32({1, ni, 64}, randomData(ni * 64, 1.0f, 6)));
  in.emplace("encoder_hidden_states",
             Tensor::fromF32({1, nt, d}, randomData(nt * d, 1.0f, 7)));
  in.emplace("pooled_projections",
             Tensor::fromF32({1, d}, randomData(d, 1.0f, 8)));
  in.emplace("timestep", Tensor::fromF32({1}, {0.5f}));
  in.emplace("img_ids", Tensor::fromI32({ni, 3}, imgIds));
  in.emplace("txt_ids", Tensor::fromI32({nt, 3}, txtIds));
  // The checkpoint and what the flow synthesizes (its norms' unit scales).
  WeightSourceStack source({weights->get(), built->synthesized.get()});
  return addBeside(report, std::move(c), *peer, built->mlir, source, in, 1,
                   reps, options);
}

//===----------------------------------------------------------------------===//
// Whole GGUF models beside llama.cpp
//===----------------------------------------------------------------------===//

/// Runs bench/models.py (it writes the files, runs rlx-run and llama.cpp in
/// processes of their own and prints the table); keeps its JSON.
static Error benchModels(Report &report, double bandwidth) {
  std::string py = peerPython();
  std::vector<std::string> args = {
      sourceDir() + "/bench/models.py",
      "--threads=" + std::to_string(cpuThreadCount(threadsOpt)),
      "--read-bandwidth=" + std::to_string(bandwidth)};
  if (quick)
    args.push_back("--quick");
  llvm::outs() << "models (bench/models.py; the first run writes the "
                  "files)...\n";
  llvm::outs().flush();
  Expected<std::string> out = runCapture(py, args, std::nullopt, 7200);
  if (!out)
    return out.takeError();
  StringRef text = StringRef(*out).trim();
  auto [table, last] = text.rsplit('\n');
  llvm::outs() << table << "\n";
  Expected<json::Value> parsed = json::parse(last);
  if (!parsed)
    return parsed.takeError();
  report.models = std::move(*parsed);
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Tensor parallelism over MPI ranks
//===----------------------------------------------------------------------===//

/// Layers of the parallel section's model.
static int64_t parallelLayers() { return quick ? 2 : 16; }

/// One rank of the parallel section (under `mpirun -np N rlx-bench
/// --parallel-child N`): the LLaMA-1B-shaped model split over N ranks,
/// prompt and greedy decode through the Generator (the first generation
/// compiles, the median of 3 more is reported), and what the collectives
/// moved. Rank 0 prints
/// one line `parallel-result {json}`.
static int parallelChildMain() {
  int64_t ranks = parallelChild, layers = parallelLayers();
  int64_t t = quick ? 16 : 128, newTokens = quick ? 4 : 32;
  TransformerConfig cfg = llamaModelConfig(layers);
  RandomWeights w;
  addLlamaModelWeights(w, cfg);
  std::vector<int32_t> prompt = modelPrompt(cfg, t);
  Session session;
  Llama32Flow recipe(cfg);
  recipe.tensorParallel(ranks);
  CompileOptions o = rlxOptions();
  o.profile = CompileProfile::llama32Decode();
  o.profile.parallel.tensor = ranks;
  o.profile.parallel.overlapChunks = parallelOverlap;
  o.profile.backend.cpu.threads = threadsOpt;
  Expected<std::unique_ptr<Generator>> gen =
      Generator::create(session, recipe, w, t + newTokens + 16, o);
  if (!gen) {
    llvm::errs() << "rlx-bench: " << llvm::toString(gen.takeError()) << "\n";
    return 1;
  }
  // The first generation compiles; the others are timed, and each figure
  // is their median (the ranks share this machine's cores: one run varies
  // by tens of percent).
  int timedRuns = quick ? 1 : 3;
  std::vector<double> prefill, decode, prefillCollective, decodeCollective;
  CollectiveStats start, afterPrompt, end;
  for (int run = 0; run <= timedRuns; ++run) {
    start = collectiveStats();
    bool first = true;
    Expected<std::vector<int32_t>> out =
        (*gen)->generate(prompt, newTokens, SamplingOptions(), [&](int32_t) {
          if (first)
            afterPrompt = collectiveStats();
          first = false;
        });
    if (!out) {
      llvm::errs() << "rlx-bench: " << llvm::toString(out.takeError()) << "\n";
      return 1;
    }
    end = collectiveStats();
    if (run == 0)
      continue;
    const GenerationStats &gs = (*gen)->stats();
    prefill.push_back(gs.prefillSeconds);
    decode.push_back(gs.decodeSeconds);
    prefillCollective.push_back(afterPrompt.seconds - start.seconds);
    decodeCollective.push_back(end.seconds - afterPrompt.seconds);
  }
  const GenerationStats &gs = (*gen)->stats();
  if (collectiveRank() != 0)
    return 0;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  json::Object result{
      {"ranks", ranks},
      {"timed_runs", timedRuns},
      {"prefill_s", median(prefill)},
      {"decode_s", median(decode)},
      {"decode_steps", static_cast<int64_t>(gs.decodeSteps)},
      {"prompt_tokens", t},
      {"prefill_collective_s", median(prefillCollective)},
      {"prefill_collective_bytes",
       static_cast<int64_t>(afterPrompt.bytes - start.bytes)},
      {"decode_collective_s", median(decodeCollective)},
      {"decode_collective_bytes",
       static_cast<int64_t>(end.bytes - afterPrompt.bytes)},
      {"decode_collective_calls",
       static_cast<int64_t>(end.calls - afterPrompt.calls)},
      {"param_bytes", static_cast<int64_t>(session.lastStats().paramBytes)}};
  llvm::outs() << "parallel-result " << json::Value(std::move(result)) << "\n";
  return 0;
}

/// The parallel section: the model on 1 and on 2 MPI ranks (each rank with
/// its share of the cores), prefill and decode, the bytes the collectives
/// move per token and their share of the step.
static Error benchParallel(Report &report) {
  Case prefill, decode;
  std::string section = "Tensor parallelism (" +
                        std::to_string(parallelLayers()) +
                        " LLaMA-1B-shaped layers, MPI ranks on this machine)";
  int64_t t = quick ? 16 : 128;
  prefill.section = decode.section = section;
  prefill.name = "prefill T=" + std::to_string(t);
  decode.name = "decode (one token)";
  llvm::ErrorOr<std::string> mpirun = llvm::sys::findProgramByName("mpirun");
  unsigned threads = cpuThreadCount(threadsOpt);
  // 2 ranks twice: each all-reduce blocking, then the prompt's split over
  // 2 token ranges whose sums travel beside the next range's projection.
  struct Run {
    int64_t ranks, overlap;
    const char *who;
  };
  for (Run run : {Run{1, 1, "rlx, 1 process"}, Run{2, 1, "rlx"},
                  Run{2, 2, "rlx, overlap_chunks = 2"}}) {
    int64_t ranks = run.ranks;
    std::string who = run.who;
    if (!mpirun || !hasMPI()) {
      std::string why =
          !mpirun ? "mpirun not found (Open MPI)" : "RLX built without MPI";
      prefill.missing(who, why);
      decode.missing(who, why);
      continue;
    }
    // Open MPI binds each rank to a core by default: one process with all
    // the threads would then run them on one core.
    std::vector<std::string> args = {
        "--oversubscribe",
        "--allow-run-as-root",
        "--bind-to",
        "none",
        "-np",
        std::to_string(ranks),
        selfPath,
        "--parallel-child=" + std::to_string(ranks),
        "--parallel-overlap-chunks=" + std::to_string(run.overlap),
        "--num-threads=" + std::to_string(std::max<unsigned>(
                               1, threads / static_cast<unsigned>(ranks)))};
    if (quick)
      args.push_back("--quick");
    Expected<std::string> out = runCapture(*mpirun, args, std::nullopt, 1800);
    std::optional<json::Value> parsed;
    if (out) {
      size_t at = out->find("parallel-result ");
      if (at != std::string::npos) {
        StringRef line = StringRef(*out).drop_front(at + 16).split('\n').first;
        Expected<json::Value> v = json::parse(line);
        if (v)
          parsed = std::move(*v);
        else
          llvm::consumeError(v.takeError());
      }
    }
    if (!parsed || !parsed->getAsObject()) {
      std::string why =
          out ? "no result line" : llvm::toString(out.takeError());
      prefill.missing(who, why);
      decode.missing(who, why);
      continue;
    }
    json::Object r = *parsed->getAsObject();
    auto num = [&](StringRef key) { return r.getNumber(key).value_or(0); };
    Stats p, d;
    p.median = p.p10 = p.p90 = p.min = num("prefill_s");
    p.runs = d.runs = 1;
    double steps = std::max(1.0, num("decode_steps"));
    d.median = d.p10 = d.p90 = d.min = num("decode_s") / steps;
    prefill.add(who, p,
                std::to_string(ranks) + " rank(s) x " +
                    std::to_string(std::max<unsigned>(
                        1, threads / static_cast<unsigned>(ranks))) +
                    " thread(s)");
    decode.add(who, d);
    std::string tag = ranks == 1 ? "1 rank" : std::to_string(ranks) + " ranks";
    if (run.overlap > 1)
      tag += ", overlap " + std::to_string(run.overlap);
    prefill.extra["tok/s, " + tag] = t / std::max(1e-9, num("prefill_s"));
    decode.extra["tok/s, " + tag] = 1.0 / std::max(1e-9, d.median);
    prefill.extra["param MiB per rank, " + tag] =
        num("param_bytes") / 1048576.0;
    if (run.overlap > 1) {
      // The split changes only the prompt: its exposed collective time.
      prefill.extra["collectives' share of the step %, " + tag] =
          100 * num("prefill_collective_s") / std::max(1e-9, num("prefill_s"));
      continue;
    }
    if (ranks > 1) {
      prefill.extra["collective bytes per token (payload per rank)"] =
          num("prefill_collective_bytes") / t;
      prefill.extra["collectives' share of the step %"] =
          100 * num("prefill_collective_s") / std::max(1e-9, num("prefill_s"));
      decode.extra["collective bytes per token (payload per rank)"] =
          num("decode_collective_bytes") / steps;
      decode.extra["collective calls per token"] =
          num("decode_collective_calls") / steps;
      decode.extra["collectives' share of the step %"] =
          100 * num("decode_collective_s") / std::max(1e-9, num("decode_s"));
    }
  }
  report.cases.push_back(std::move(prefill));
  report.cases.push_back(std::move(decode));
  report.notes.push_back(
      "parallel: the ranks share this machine's cores and memory bandwidth "
      "(1 process runs all threads; each of 2 ranks half of them), so the "
      "section measures what the split costs, not a multi-machine speed-up "
      "(docs/Distributed.md's cost model predicts that)");
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Main
//===----------------------------------------------------------------------===//

static bool wanted(StringRef section) {
  if (only.empty())
    return section != "models";
  for (StringRef s : llvm::split(StringRef(only), ','))
    if (s.trim() == section)
      return true;
  return false;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  rlx::setRLXVersionPrinter();
  cl::ParseCommandLineOptions(
      argc, argv,
      "rlx-bench: RLX's CPU kernels, layers and model side by side with "
      "OpenBLAS, PyTorch, ONNX Runtime and IREE\n");
  selfPath = llvm::sys::fs::getMainExecutable(argv[0], (void *)&main);
  if (blasChild)
    return blasChildMain();
  if (parallelChild)
    return parallelChildMain();

  unsigned reps = repsOpt ? repsOpt : (quick ? 3 : 10);
  Report report;
  unsigned threads = cpuThreadCount(threadsOpt);
  report.machine["cpu"] = cpuModel();
  report.machine["threads"] = threads;
  report.machine["load_average_start"] = loadAverage();
  const char *core = std::getenv("OPENBLAS_CORETYPE");
  report.machine["OPENBLAS_CORETYPE"] = core ? core : "";
  llvm::outs() << "rlx-bench: " << cpuModel() << ", " << threads
               << " threads, load average " << loadAverage()
               << (quick ? " (quick)" : "") << "\n";
  double bw = readBandwidth(threads, quick ? (64u << 20) : (1u << 30));
  report.machine["read_bandwidth_gbps"] = bw;
  llvm::outs() << "read bandwidth (" << threads
               << " threads): " << llvm::format("%.1f", bw) << " GB/s\n";
  llvm::outs().flush();

  auto check = [](Error err, StringRef what) {
    if (err) {
      llvm::errs() << "rlx-bench: " << what << ": "
                   << llvm::toString(std::move(err)) << "\n";
      return false;
    }
    return true;
  };
  bool ok = true;
  if (wanted("gemm"))
    ok &= check(benchGemms(report, reps), "GEMMs");
  if (wanted("layers"))
    ok &= check(benchLayers(report, reps), "layers");
  if (wanted("spirv"))
    benchSpirv(report, reps);
  if (wanted("peers") && wanted("layers"))
    benchPeers(report, reps);
  if (wanted("model"))
    ok &= check(benchModel(report, reps), "model");
  if (wanted("ttft"))
    ok &= check(benchTTFT(report), "time to first token");
  if (wanted("moe"))
    ok &= check(benchMoe(report, reps), "mixture of experts");
  if (wanted("vision"))
    ok &= check(benchVision(report, reps), "image encoder");
  if (wanted("flux"))
    ok &= check(benchFlux(report, reps), "diffusion transformer");
  if (wanted("parallel"))
    ok &= check(benchParallel(report), "tensor parallelism");
  if (wanted("models"))
    ok &= check(benchModels(report, bw), "models");

  // Decode against the memory bound.
  Dims l = llamaDims();
  for (Case &c : report.cases)
    if (c.name.rfind("llama layer decode", 0) == 0)
      if (const Figure *f = c.find("rlx")) {
        double bound = llamaLayerWeightBytes(l) / (bw * 1e9);
        c.extra["weights / read bandwidth ms"] = bound * 1e3;
        c.extra["rlx / bound"] = f->stats.median / bound;
      }
  report.machine["load_average_end"] = loadAverage();
  printTable(report);
  llvm::outs() << "load average: start "
               << report.machine.getNumber("load_average_start").value_or(-1)
               << ", end " << loadAverage() << "\n";
  if (!jsonOut.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(jsonOut, ec);
    if (ec) {
      llvm::errs() << "rlx-bench: " << jsonOut << ": " << ec.message() << "\n";
      return 1;
    }
    os << llvm::formatv("{0:2}", toJSON(report)) << "\n";
  }
  return ok ? 0 : 1;
}
