//===- CpuExecutor.cpp - Multithreaded host code and weight layouts -------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/CpuExecutor.h"
#include "MemRefABI.h"
#include "RLX/Runtime/Collectives.h"
#include "llvm/Support/raw_ostream.h"
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#ifdef __linux__
#include <sched.h>
#endif
#include <mutex>
#include <thread>
#include <vector>

using namespace rlx;
using detail::MemRef1D;

unsigned rlx::cpuThreadCount(unsigned requested) {
  if (requested)
    return requested;
  if (const char *env = std::getenv("RLX_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0)
      return static_cast<unsigned>(n);
  }
#ifdef __linux__
  // The CPUs this process may run on: a rank that mpirun bound to one core
  // (or a process under taskset or a cgroup's cpuset) runs one thread per
  // CPU it has, not per CPU of the machine.
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0)
    if (int n = CPU_COUNT(&mask); n > 0)
      return static_cast<unsigned>(n);
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

void rlx::packWeightsNK16(const float *src, int64_t rows, int64_t k,
                          int64_t row0, float *dst) {
  for (int64_t p = 0; p < rows / 16; ++p) {
    float *panel = dst + (row0 / 16 + p) * k * 16;
    const float *block = src + p * 16 * k;
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t c = 0; c < k; ++c)
        panel[c * 16 + r] = block[r * k + c];
  }
}

namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
} // namespace

/// The threads and two job slots: a thread that falls behind may still be
/// passing through the finished loops of one run while the next run starts
/// on the other slot (a run needs its own context, not the other threads).
struct CpuExecutor::Pool {
  struct Job {
    uint8_t *ctx = nullptr;
    MemRef1D arena{}, params{};
    /// Threads that finished this job, and how many must before it is reused.
    alignas(64) std::atomic<unsigned> done{0};
    unsigned pending = 0;
  };

  explicit Pool(unsigned n) : n(n), contextBytes(spmd::contextBytes(n)) {
    for (Job &j : jobs) {
      j.ctx = static_cast<uint8_t *>(
          std::aligned_alloc(spmd::kContextAlignment, contextBytes));
      std::memset(j.ctx, 0, contextBytes);
    }
  }
  ~Pool() {
    for (Job &j : jobs)
      waitDone(j);
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    wake.notify_all();
    for (std::thread &t : workers)
      t.join();
    for (Job &j : jobs)
      std::free(j.ctx);
  }

  void start(CpuExecutor::SpmdFn f) {
    fn = f;
    for (unsigned t = 1; t < n; ++t)
      workers.emplace_back([this, t] { work(t); });
  }

  static void waitDone(Job &j) {
    while (j.done.load(std::memory_order_acquire) != j.pending)
      cpuRelax();
  }

  /// Waits for job `next` to be posted (or for the pool to stop).
  bool waitPosted(uint64_t next) {
    // Spin a little (the next run usually follows at once), then sleep.
    auto until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    for (unsigned i = 0;; ++i) {
      if (posted.load(std::memory_order_acquire) >= next)
        return true;
      cpuRelax();
      if ((i & 255) == 255 && std::chrono::steady_clock::now() > until)
        break;
    }
    std::unique_lock<std::mutex> lock(mutex);
    wake.wait(lock, [&] {
      return stop || posted.load(std::memory_order_acquire) >= next;
    });
    return posted.load(std::memory_order_acquire) >= next;
  }

  void work(unsigned tid) {
    for (uint64_t next = 1;; ++next) {
      if (!waitPosted(next))
        return;
      Job &j = jobs[next % 2];
      fn(&j.arena, &j.params, j.ctx, tid, n);
      j.done.fetch_add(1, std::memory_order_release);
    }
  }

  void run(MemRef1D a, MemRef1D p) {
    uint64_t e = posted.load(std::memory_order_relaxed) + 1;
    Job &j = jobs[e % 2];
    // The slot's previous run (two runs ago) must be over everywhere.
    waitDone(j);
    std::memset(j.ctx, 0, contextBytes);
    j.arena = a;
    j.params = p;
    j.done.store(0, std::memory_order_relaxed);
    j.pending = n - 1;
    if (n > 1) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        posted.store(e, std::memory_order_release);
      }
      wake.notify_all();
    } else {
      posted.store(e, std::memory_order_relaxed);
    }
    // Returns once every chunk of the last loop is done: the results are in
    // the arena even if another thread has not returned yet (it only passes
    // through finished loops).
    fn(&j.arena, &j.params, j.ctx, 0, n);
  }

  unsigned n;
  size_t contextBytes;
  CpuExecutor::SpmdFn fn = nullptr;
  Job jobs[2];
  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  alignas(64) std::atomic<uint64_t> posted{0};
};

CpuExecutor::CpuExecutor(SpmdFn fn, std::shared_ptr<void> owner,
                         unsigned threads)
    : fn(fn), owner(std::move(owner)),
      pool(std::make_unique<Pool>(std::max(1u, threads))) {
  if (pool->n > 1) {
    // BLAS kernels are split between the pool's threads; OpenBLAS's own
    // threads would oversubscribe the cores.
    using SetThreads = void (*)(int);
    if (auto set = reinterpret_cast<SetThreads>(
            dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
      set(1);
  }
  pool->start(fn);
}

CpuExecutor::~CpuExecutor() = default;

unsigned CpuExecutor::threads() const { return pool->n; }

llvm::Error CpuExecutor::execute(const Manifest &manifest,
                                 llvm::MutableArrayRef<uint8_t> arena,
                                 llvm::ArrayRef<uint8_t> params, bool) {
  // A program with collectives runs only in an MPI world of its size.
  if (llvm::Error err = checkCollectiveWorld(manifest.worldSize, manifest.rank))
    return err;
  auto *p = const_cast<uint8_t *>(params.data());
  pool->run(MemRef1D{arena.data(),
                     arena.data(),
                     0,
                     {static_cast<int64_t>(arena.size())},
                     {1}},
            MemRef1D{p, p, 0, {static_cast<int64_t>(params.size())}, {1}});
  return llvm::Error::success();
}

std::string CpuExecutor::describe() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "cpu (" << pool->n << (pool->n == 1 ? " thread)" : " threads)");
  return s;
}
