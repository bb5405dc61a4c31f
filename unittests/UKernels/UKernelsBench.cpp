//===- UKernelsBench.cpp - Timing of the micro-kernels --------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// rlx-uk-bench [--isa=avx512,avx512-nobf16,avx2,scalar] [--types=q4_0,...]
//              [--reps=N] [--repacked]
//
// For each instruction set and weight type: the decode GEMV (M = 1, N = 8192,
// K = 2048) in GB/s of weight bytes, reading one weight copy over and over
// ("hot": from the caches as far as it fits) and rotating through copies
// spanning 1.5 GiB ("cold": from memory); and the prefill GEMM (M = 128,
// N = 2048, K = 2048) in GOP/s (2 M N K operations per product). One thread,
// and two threads splitting N in halves. Times are the median and the best
// of the repetitions. Not a test: run it on a quiet machine.
//
// With --repacked, instead: for the types with a repacked form (q4_0, q8_0,
// q4_K, q6_K, f16, bf16), the plain and the repacked (RLX_UK_REPACKED_X8)
// weights side by side, one thread, calls alternated: GEMV hot and cold in
// GB/s, GEMM in GOP/s, and repacked / plain.
//
//===----------------------------------------------------------------------===//

#include "RLX/UKernels/UKernels.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/Quant.h"
#include "RLX/Weights/Tensor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace rlx;

namespace {

struct TypeCase {
  int code;
  const char *name;
};

const TypeCase kTypes[] = {
    {RLX_UK_Q4_0, "q4_0"}, {RLX_UK_Q8_0, "q8_0"}, {RLX_UK_Q4_K, "q4_K"},
    {RLX_UK_Q6_K, "q6_K"}, {RLX_UK_BF16, "bf16"}, {RLX_UK_F16, "f16"},
    {RLX_UK_Q5_0, "q5_0"}, {RLX_UK_Q4_1, "q4_1"}, {RLX_UK_Q5_1, "q5_1"},
    {RLX_UK_Q2_K, "q2_K"}, {RLX_UK_Q3_K, "q3_K"}, {RLX_UK_Q5_K, "q5_K"},
};

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// A second thread that runs a job when asked (spinning, then yielding).
class Helper {
public:
  Helper() : thread([this] { loop(); }) {}
  ~Helper() {
    stop = true;
    generation.fetch_add(1);
    thread.join();
  }
  /// Runs `mine` here and `theirs` on the helper; returns when both are done.
  void run(const std::function<void()> &mine,
           const std::function<void()> &theirs) {
    job = &theirs;
    done.store(false);
    generation.fetch_add(1);
    mine();
    while (!done.load())
      std::this_thread::yield();
  }

private:
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      while (generation.load() == seen)
        std::this_thread::yield();
      seen = generation.load();
      if (stop)
        return;
      (*job)();
      done.store(true);
    }
  }
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> done{false};
  std::atomic<bool> stop{false};
  const std::function<void()> *job = nullptr;
  std::thread thread;
};

/// Weights for N x K of `code`: random rows (encoded where gguf has a
/// quantizer, random blocks with sane scales otherwise).
std::vector<uint8_t> makeWeights(int code, int64_t N, int64_t K) {
  std::mt19937 rng(42);
  const size_t rowBytes = rlx_uk_weight_row_bytes(code, K);
  std::vector<uint8_t> w(rowBytes * N);
  if (rlx_uk_block_elements(code) != 256) {
    // Encode 16 distinct rows and repeat them (encoding is slow).
    std::normal_distribution<float> normal(0.0f, 0.05f);
    std::vector<float> row(K);
    for (int64_t n = 0; n != N; ++n) {
      if (n < 16) {
        for (float &v : row)
          v = normal(rng);
        auto bytes = encodeFromF32(*dtypeOfGGMLType(uint32_t(code)), row);
        if (!bytes) {
          std::fprintf(stderr, "%s\n",
                       llvm::toString(bytes.takeError()).c_str());
          std::exit(1);
        }
        std::memcpy(w.data() + n * rowBytes, bytes->data(), rowBytes);
      } else {
        std::memcpy(w.data() + n * rowBytes, w.data() + (n % 16) * rowBytes,
                    rowBytes);
      }
    }
    return w;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t &b : w)
    b = uint8_t(byte(rng));
  // A small positive f16 scale (0x1c00 = 2^-8) in every d / dmin field.
  const int64_t blockBytes = int64_t(rowBytes) / (K / 256);
  for (size_t blk = 0; blk != w.size() / blockBytes; ++blk) {
    uint8_t *p = w.data() + blk * blockBytes;
    const uint16_t h = 0x1c00;
    switch (code) {
    case RLX_UK_Q2_K:
      std::memcpy(p + 80, &h, 2);
      std::memcpy(p + 82, &h, 2);
      break;
    case RLX_UK_Q3_K:
      std::memcpy(p + 108, &h, 2);
      break;
    case RLX_UK_Q6_K:
      std::memcpy(p + 208, &h, 2);
      break;
    default:
      std::memcpy(p, &h, 2);
      std::memcpy(p + 2, &h, 2);
      break;
    }
  }
  return w;
}

struct Timing {
  double median, best;
};

/// Times `fn` (after one warm-up call) until `reps` calls and 0.2 s.
Timing timeIt(const std::function<void(int)> &fn, int reps) {
  fn(0);
  std::vector<double> times;
  double start = now();
  for (int r = 1; int(times.size()) < reps || now() - start < 0.2; ++r) {
    double t0 = now();
    fn(r);
    times.push_back(now() - t0);
    if (times.size() > 2000)
      break;
  }
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front()};
}

bool listed(const std::string &list, const char *name) {
  if (list.empty())
    return true;
  std::string padded = "," + list + ",";
  return padded.find("," + std::string(name) + ",") != std::string::npos;
}

/// Median times of `plain` and `repacked`, called alternately (after one
/// warm-up call each) until each ran `reps` times and 0.3 s passed, so that
/// load from elsewhere on the machine hits both alike.
std::pair<double, double> timePair(const std::function<void(int)> &plain,
                                   const std::function<void(int)> &repacked,
                                   int reps) {
  plain(0);
  repacked(0);
  std::vector<double> tp, tr;
  const double start = now();
  for (int r = 1; int(tp.size()) < reps || now() - start < 0.3; ++r) {
    double t0 = now();
    plain(r);
    double t1 = now();
    repacked(r);
    tr.push_back(now() - t1);
    tp.push_back(t1 - t0);
    if (tp.size() > 2000)
      break;
  }
  std::sort(tp.begin(), tp.end());
  std::sort(tr.begin(), tr.end());
  return {tp[tp.size() / 2], tr[tr.size() / 2]};
}

/// Plain against repacked weights of `t`, one thread (see the file comment).
void compareRepacked(const char *isa, const TypeCase &t, int reps) {
  const int rcode = t.code | RLX_UK_REPACKED_X8;
  const int64_t gvN = 8192, gvK = 2048;
  const int64_t gmM = 128, gmN = 2048, gmK = 2048;
  const size_t coldBytes = size_t(1536) << 20;
  const bool scalar = std::string(isa) == "scalar";
  auto report = [&](const char *name, double plain, double repacked,
                    const char *unit) {
    std::printf("%-7s %-5s %-28s %9.2f %9.2f %-6s %6.2fx\n", isa, t.name, name,
                plain, repacked, unit, repacked / plain);
    std::fflush(stdout);
  };
  // GEMV.
  {
    std::vector<uint8_t> w = makeWeights(t.code, gvN, gvK);
    std::vector<uint8_t> wr(w.size());
    rlx_uk_repack(t.code, gvK, w.data(), 0, gvN, wr.data());
    const size_t wBytes = w.size();
    const size_t copies = std::max<size_t>(2, coldBytes / wBytes);
    std::vector<uint8_t> pool(wBytes * copies), poolR(wBytes * copies);
    for (size_t c = 0; c != copies; ++c) {
      std::memcpy(pool.data() + c * wBytes, w.data(), wBytes);
      std::memcpy(poolR.data() + c * wBytes, wr.data(), wBytes);
    }
    std::vector<float> x(gvK);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float &v : x)
      v = normal(rng);
    std::vector<uint8_t> prep(rlx_uk_prepared_bytes(t.code, 1, gvK));
    rlx_uk_prepare(t.code, x.data(), gvK, 0, 1, gvK, prep.data());
    std::vector<float> y(gvN);
    for (int cold = 0; cold != 2; ++cold) {
      auto call = [&](bool packed, int rep) {
        const uint8_t *base = packed ? poolR.data() : pool.data();
        const uint8_t *wp = base + (cold ? (rep % copies) * wBytes : 0);
        rlx_uk_matmul(packed ? rcode : t.code, prep.data(), 1, gvK, wp, 0, gvN,
                      y.data(), gvN);
      };
      auto [tp, tr] =
          timePair([&](int r) { call(false, r); },
                   [&](int r) { call(true, r); }, scalar ? 2 : reps * 4);
      char name[64];
      std::snprintf(name, sizeof(name), "gemv N=%lld K=%lld %s 1T",
                    (long long)gvN, (long long)gvK, cold ? "cold" : "hot");
      report(name, wBytes / tp * 1e-9, wBytes / tr * 1e-9, "GB/s");
    }
  }
  // GEMM.
  {
    std::vector<uint8_t> w = makeWeights(t.code, gmN, gmK);
    std::vector<uint8_t> wr(w.size());
    rlx_uk_repack(t.code, gmK, w.data(), 0, gmN, wr.data());
    std::vector<float> x(gmM * gmK);
    std::mt19937 rng(2);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float &v : x)
      v = normal(rng);
    std::vector<uint8_t> prep(rlx_uk_prepared_bytes(t.code, gmM, gmK));
    rlx_uk_prepare(t.code, x.data(), gmK, 0, gmM, gmK, prep.data());
    std::vector<float> y(gmM * gmN);
    const double ops = 2.0 * gmM * gmN * gmK;
    auto call = [&](bool packed) {
      rlx_uk_matmul(packed ? rcode : t.code, prep.data(), gmM, gmK,
                    packed ? wr.data() : w.data(), 0, gmN, y.data(), gmN);
    };
    auto [tp, tr] = timePair([&](int) { call(false); },
                             [&](int) { call(true); }, scalar ? 1 : reps);
    char name[64];
    std::snprintf(name, sizeof(name), "gemm M=%lld N=%lld K=%lld 1T",
                  (long long)gmM, (long long)gmN, (long long)gmK);
    report(name, ops / tp * 1e-9, ops / tr * 1e-9, "GOP/s");
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string isas = "avx512,avx512-nobf16,avx2,scalar", types;
  int reps = 5;
  bool repacked = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--isa=", 0) == 0)
      isas = arg.substr(6);
    else if (arg.rfind("--types=", 0) == 0)
      types = arg.substr(8);
    else if (arg.rfind("--reps=", 0) == 0)
      reps = std::max(1, std::atoi(arg.c_str() + 7));
    else if (arg == "--repacked")
      repacked = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--isa=avx512,avx512-nobf16,avx2,scalar] "
                   "[--types=q4_0,...] "
                   "[--reps=N] [--repacked]\n",
                   argv[0]);
      return 2;
    }
  }
  if (repacked) {
    std::printf("%-7s %-5s %-28s %9s %9s\n", "isa", "type", "case (medians)",
                "plain", "repacked");
    for (const char *isa : {"avx512", "avx2", "scalar"}) {
      if (!listed(isas, isa))
        continue;
      if (rlx_uk_select_isa(isa) != 0) {
        std::printf("%-7s (not available)\n", isa);
        continue;
      }
      for (const TypeCase &t : kTypes)
        if (rlx_uk_supports(t.code | RLX_UK_REPACKED_X8) &&
            listed(types, t.name))
          compareRepacked(isa, t, reps);
    }
    return 0;
  }
  Helper helper;
  const int64_t gvN = 8192, gvK = 2048;
  const int64_t gmM = 128, gmN = 2048, gmK = 2048;
  const size_t coldBytes = size_t(1536) << 20;

  std::printf("%-7s %-5s %-36s %8s %8s %10s %10s\n", "isa", "type", "case",
              "med_ms", "best_ms", "med", "best");
  for (const char *isa : {"avx512", "avx512-nobf16", "avx2", "scalar"}) {
    if (!listed(isas, isa))
      continue;
    if (rlx_uk_select_isa(isa) != 0) {
      std::printf("%-7s (not available)\n", isa);
      continue;
    }
    for (const TypeCase &t : kTypes) {
      if (!listed(types, t.name))
        continue;
      // avx512-nobf16 differs from avx512 in the bf16 kernel only.
      if (std::string(isa) == "avx512-nobf16" && t.code != RLX_UK_BF16)
        continue;
      // GEMV.
      {
        std::vector<uint8_t> w = makeWeights(t.code, gvN, gvK);
        const size_t wBytes = w.size();
        const size_t copies = std::max<size_t>(2, coldBytes / wBytes);
        std::vector<uint8_t> pool(wBytes * copies);
        for (size_t c = 0; c != copies; ++c)
          std::memcpy(pool.data() + c * wBytes, w.data(), wBytes);
        std::vector<float> x(gvK);
        std::mt19937 rng(1);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (float &v : x)
          v = normal(rng);
        std::vector<uint8_t> prep(rlx_uk_prepared_bytes(t.code, 1, gvK));
        rlx_uk_prepare(t.code, x.data(), gvK, 0, 1, gvK, prep.data());
        std::vector<float> y(gvN);
        for (int cold = 0; cold != 2; ++cold)
          for (int threads = 1; threads <= 2; ++threads) {
            auto call = [&](int rep) {
              const uint8_t *wp =
                  pool.data() + (cold ? (rep % copies) * wBytes : 0);
              if (threads == 1) {
                rlx_uk_matmul(t.code, prep.data(), 1, gvK, wp, 0, gvN, y.data(),
                              gvN);
                return;
              }
              helper.run(
                  [&] {
                    rlx_uk_matmul(t.code, prep.data(), 1, gvK, wp, 0, gvN / 2,
                                  y.data(), gvN);
                  },
                  [&] {
                    rlx_uk_matmul(t.code, prep.data(), 1, gvK, wp, gvN / 2, gvN,
                                  y.data(), gvN);
                  });
            };
            int r = std::string(isa) == "scalar" ? 2 : reps * 4;
            Timing tm = timeIt(call, r);
            char name[64];
            std::snprintf(name, sizeof(name), "gemv N=%lld K=%lld %s %dT",
                          (long long)gvN, (long long)gvK, cold ? "cold" : "hot",
                          threads);
            std::printf("%-7s %-5s %-36s %8.3f %8.3f %7.2f GB/s %7.2f GB/s\n",
                        isa, t.name, name, tm.median * 1e3, tm.best * 1e3,
                        wBytes / tm.median * 1e-9, wBytes / tm.best * 1e-9);
            std::fflush(stdout);
          }
      }
      // GEMM.
      {
        std::vector<uint8_t> w = makeWeights(t.code, gmN, gmK);
        std::vector<float> x(gmM * gmK);
        std::mt19937 rng(2);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (float &v : x)
          v = normal(rng);
        std::vector<uint8_t> prep(rlx_uk_prepared_bytes(t.code, gmM, gmK));
        std::vector<float> y(gmM * gmN);
        Timing tp = timeIt(
            [&](int) {
              rlx_uk_prepare(t.code, x.data(), gmK, 0, gmM, gmK, prep.data());
            },
            reps);
        const double ops = 2.0 * gmM * gmN * gmK;
        for (int threads = 1; threads <= 2; ++threads) {
          auto call = [&](int) {
            if (threads == 1) {
              rlx_uk_matmul(t.code, prep.data(), gmM, gmK, w.data(), 0, gmN,
                            y.data(), gmN);
              return;
            }
            helper.run(
                [&] {
                  rlx_uk_matmul(t.code, prep.data(), gmM, gmK, w.data(), 0,
                                gmN / 2, y.data(), gmN);
                },
                [&] {
                  rlx_uk_matmul(t.code, prep.data(), gmM, gmK, w.data(),
                                gmN / 2, gmN, y.data(), gmN);
                });
          };
          int r = std::string(isa) == "scalar" ? 1 : reps;
          Timing tm = timeIt(call, r);
          char name[64];
          std::snprintf(name, sizeof(name), "gemm M=%lld N=%lld K=%lld %dT",
                        (long long)gmM, (long long)gmN, (long long)gmK,
                        threads);
          std::printf("%-7s %-5s %-36s %8.3f %8.3f %6.1f GOP/s %6.1f GOP/s\n",
                      isa, t.name, name, tm.median * 1e3, tm.best * 1e3,
                      ops / tm.median * 1e-9, ops / tm.best * 1e-9);
          std::fflush(stdout);
        }
        std::printf("%-7s %-5s %-36s %8.3f %8.3f\n", isa, t.name,
                    "prepare M=128 K=2048 1T", tp.median * 1e3, tp.best * 1e3);
      }
    }
  }
  return 0;
}
