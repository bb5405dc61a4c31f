//===- Collectives.cpp - MPI collectives of tensor-parallel code ----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Each collective is started non-blocking (MPI_Iallreduce / MPI_Iallgather)
// and completed by polling MPI_Test: spinning for the first 10 ms, as a
// blocking call would, then sleeping between tests (10 us, doubling up to
// 1 ms) so that a long wait does not burn a core. After
// RLX_COLLECTIVE_TIMEOUT seconds the job is aborted with a message: a rank
// that died or runs another program would otherwise leave the others waiting
// forever. With RLX_COLLECTIVE_TIMEOUT=0 (no limit) the collectives are the
// blocking MPI calls.
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/Collectives.h"
#include "RLX/Weights/Tensor.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#ifdef RLX_HAVE_MPI
#include <mpi.h>
#endif

using namespace rlx;

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// A collective that cannot complete ends the process (and, under MPI, the
/// job): the other ranks would otherwise wait for it forever.
[[noreturn]] static void abortCollective(const llvm::Twine &what) {
  std::string text = "rlx: " + what.str() + "\n";
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
#ifdef RLX_HAVE_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  std::abort();
}

#ifdef RLX_HAVE_MPI

//===----------------------------------------------------------------------===//
// RLX_COLLECTIVE_TIMEOUT
//===----------------------------------------------------------------------===//

static constexpr const char *kTimeoutVariable = "RLX_COLLECTIVE_TIMEOUT";
static constexpr double kDefaultTimeout = 300;

namespace {
struct Timeout {
  /// Seconds; 0 waits forever.
  double seconds = kDefaultTimeout;
  /// Non-empty when the variable holds no valid value.
  std::string error;
};
} // namespace

/// RLX_COLLECTIVE_TIMEOUT, read at first use.
static const Timeout &collectiveTimeout() {
  static const Timeout timeout = [] {
    Timeout t;
    const char *value = std::getenv(kTimeoutVariable);
    if (!value)
      return t;
    double seconds = 0;
    // getAsDouble returns true on an error.
    if (llvm::StringRef(value).trim().getAsDouble(seconds) ||
        !std::isfinite(seconds) || seconds < 0)
      t.error = (llvm::Twine(kTimeoutVariable) + "='" + value +
                 "' is not a number of seconds >= 0 (the time a collective "
                 "may wait for the other ranks; 0 waits forever, unset: " +
                 llvm::Twine(static_cast<int>(kDefaultTimeout)) + ")")
                    .str();
    else
      t.seconds = seconds;
    return t;
  }();
  return timeout;
}

//===----------------------------------------------------------------------===//
// The communicator
//===----------------------------------------------------------------------===//

/// Whether an MPI launcher (Open MPI's mpirun, a PMI / PMIx one) started this
/// process: otherwise it is a world of one, without initializing MPI.
static bool launchedByMPI() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
                           "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(name))
      return true;
  return false;
}

static void finalizeMPI() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

/// This process's rank as the launcher gives it (for messages before MPI
/// is initialized), or "?".
static const char *launcherRank() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char *rank = std::getenv(name))
      return rank;
  return "?";
}

/// MPI_Init_thread, bounded by the timeout too: it waits for every rank of
/// the job (Open MPI exchanges their addresses), so a rank that ended without
/// starting MPI would leave it waiting forever. Past the timeout the process
/// exits with an error, which makes mpirun end the job (MPI_Abort needs MPI).
static int initializeMPI(int &provided) {
  const Timeout &timeout = collectiveTimeout();
  if (!timeout.error.empty() || timeout.seconds <= 0)
    return MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  std::mutex mutex;
  std::condition_variable initialized;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mutex);
    if (initialized.wait_for(lock,
                             std::chrono::duration<double>(timeout.seconds),
                             [&] { return done; }))
      return;
    std::fprintf(stderr,
                 "rlx: rank %s: MPI_Init did not complete in %g s (%s): "
                 "another rank has died or never started MPI\n",
                 launcherRank(), timeout.seconds, kTimeoutVariable);
    std::fflush(stderr);
    std::_Exit(1);
  });
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  initialized.notify_one();
  watchdog.join();
  return rc;
}

namespace {
struct World {
  /// The collectives' communicator.
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  /// Set by setCollectiveCommunicator (messages say "communicator" rather
  /// than "MPI world").
  bool custom = false;
  /// A collective has run over `comm`: it can no longer change.
  bool used = false;
  std::string error;
};
} // namespace

/// Guards World's fields against setCollectiveCommunicator; once `used` is
/// set they no longer change.
static std::mutex worldMutex;

/// The collectives' communicator, MPI_COMM_WORLD unless set otherwise,
/// initializing MPI the first time.
static World &world() {
  static World w;
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized && !launchedByMPI())
      return;
    int provided = 0;
    if (!initialized) {
      if (initializeMPI(provided) != MPI_SUCCESS) {
        w.error = "MPI_Init_thread failed";
        return;
      }
      std::atexit(finalizeMPI);
    } else {
      MPI_Query_thread(&provided);
    }
    // Any thread of the pool may make the call (one at a time).
    if (provided < MPI_THREAD_SERIALIZED) {
      w.error = "MPI was initialized without MPI_THREAD_SERIALIZED support, "
                "which the CPU runtime's threads need";
      return;
    }
    w.comm = MPI_COMM_WORLD;
    MPI_Comm_rank(w.comm, &w.rank);
    MPI_Comm_size(w.comm, &w.size);
  });
  return w;
}

/// The communicator for a collective, which from now on cannot change.
static const World &useWorld() {
  World &w = world();
  std::lock_guard<std::mutex> lock(worldMutex);
  w.used = true;
  return w;
}

/// "rank 0 of 2" (of the communicator RLX uses).
static std::string rankOf(const World &w) {
  return ("rank " + llvm::Twine(w.rank) + " of " + llvm::Twine(w.size)).str();
}

/// Checks the return code of an MPI call made for a collective (a
/// communicator whose error handler returns errors, as mpi4py sets them).
static void checkMPI(int rc, const World &w,
                     llvm::function_ref<std::string()> describe) {
  if (rc == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  abortCollective(rankOf(w) + ": " + describe() +
                  " failed: " + llvm::StringRef(text, length));
}

/// Waits for `request` until it completes or the timeout passes; then ends
/// the job, naming the collective (`describe()`, e.g. "all_reduce of 448
/// floats").
static void complete(MPI_Request &request, const World &w,
                     llvm::function_ref<std::string()> describe) {
  using Clock = std::chrono::steady_clock;
  // Spin this long before sleeping: a collective in flight progresses only
  // while MPI_Test runs, and one of megabytes takes about a millisecond
  // between the ranks of one node (sleeping earlier made a 4 MB all-reduce
  // up to 2x slower).
  constexpr double kSpinSeconds = 10e-3;
  constexpr std::chrono::microseconds kFirstSleep(10), kLongestSleep(1000);
  double timeout = collectiveTimeout().seconds;
  Clock::time_point start = Clock::now();
  std::chrono::microseconds sleep = kFirstSleep;
  for (;;) {
    int done = 0;
    checkMPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE), w, describe);
    if (done)
      return;
    double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (timeout > 0 && waited >= timeout) {
      std::string seconds;
      llvm::raw_string_ostream(seconds) << llvm::format("%g", timeout);
      abortCollective(rankOf(w) + ": " + describe() + " did not complete in " +
                      seconds + " s (" + kTimeoutVariable +
                      "): another rank has died or runs a different program");
    }
    if (waited < kSpinSeconds)
      continue;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, kLongestSleep);
  }
}

/// The communicator for a collective of `groupSize` ranks; ends the job when
/// it cannot run.
static const World &worldFor(const char *op, int64_t groupSize) {
  if (!collectiveTimeout().error.empty())
    abortCollective(llvm::Twine(op) + ": " + collectiveTimeout().error);
  const World &w = useWorld();
  if (!w.error.empty())
    abortCollective(llvm::Twine(op) + ": " + w.error);
  if (w.size != groupSize)
    abortCollective(rankOf(w) + ": " + op + " over " + llvm::Twine(groupSize) +
                    " ranks, but the communicator has " + llvm::Twine(w.size));
  return w;
}

/// Runs one MPI collective bounded by the timeout: `start` (its
/// non-blocking form) then polled (complete()), or, with no time limit,
/// `block` (the blocking call, and its algorithms).
template <typename Start, typename Block>
static void bounded(const World &w, llvm::function_ref<std::string()> describe,
                    Start start, Block block) {
  if (collectiveTimeout().seconds <= 0) {
    checkMPI(block(), w, describe);
    return;
  }
  MPI_Request request;
  checkMPI(start(&request), w, describe);
  complete(request, w, describe);
}

/// MPI_Allreduce of `n` `type`s, bounded by the timeout.
static void allReduceOn(const World &w,
                        llvm::function_ref<std::string()> describe,
                        const void *send, void *into, int n, MPI_Datatype type,
                        MPI_Op op) {
  bounded(
      w, describe,
      [&](MPI_Request *r) {
        return MPI_Iallreduce(send, into, n, type, op, w.comm, r);
      },
      [&] { return MPI_Allreduce(send, into, n, type, op, w.comm); });
}

/// MPI_Allgather of `n` `type`s per rank, bounded as allReduceOn.
static void allGatherOn(const World &w,
                        llvm::function_ref<std::string()> describe,
                        const void *send, void *into, int n,
                        MPI_Datatype type) {
  bounded(
      w, describe,
      [&](MPI_Request *r) {
        return MPI_Iallgather(send, n, type, into, n, type, w.comm, r);
      },
      [&] { return MPI_Allgather(send, n, type, into, n, type, w.comm); });
}

#endif // RLX_HAVE_MPI

//===----------------------------------------------------------------------===//
// Statistics
//===----------------------------------------------------------------------===//

static std::atomic<uint64_t> statCalls{0}, statBytes{0}, statNanoseconds{0};

namespace {
/// Counts `calls` collectives of `bytes` in all and the time until it goes
/// out of scope (a started all-reduce counts at its start, and its wait adds
/// time only).
class CollectiveTimer {
public:
  explicit CollectiveTimer(uint64_t bytes, uint64_t calls = 1)
      : bytes(bytes), calls(calls), start(std::chrono::steady_clock::now()) {}
  ~CollectiveTimer() {
    auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now() - start);
    statCalls.fetch_add(calls, std::memory_order_relaxed);
    statBytes.fetch_add(bytes, std::memory_order_relaxed);
    statNanoseconds.fetch_add(elapsed.count(), std::memory_order_relaxed);
  }

private:
  uint64_t bytes, calls;
  std::chrono::steady_clock::time_point start;
};
} // namespace

CollectiveStats rlx::collectiveStats() {
  CollectiveStats stats;
  stats.calls = statCalls.load(std::memory_order_relaxed);
  stats.bytes = statBytes.load(std::memory_order_relaxed);
  stats.seconds = statNanoseconds.load(std::memory_order_relaxed) * 1e-9;
  return stats;
}

//===----------------------------------------------------------------------===//
// Queries and checks
//===----------------------------------------------------------------------===//

bool rlx::hasMPI() {
#ifdef RLX_HAVE_MPI
  return true;
#else
  return false;
#endif
}

int64_t rlx::collectiveRank() {
#ifdef RLX_HAVE_MPI
  World &w = world();
  std::lock_guard<std::mutex> lock(worldMutex);
  return w.rank;
#else
  return 0;
#endif
}

int64_t rlx::collectiveSize() {
#ifdef RLX_HAVE_MPI
  World &w = world();
  std::lock_guard<std::mutex> lock(worldMutex);
  return w.size;
#else
  return 1;
#endif
}

llvm::Error rlx::setCollectiveCommunicator(void *mpiComm) {
#ifdef RLX_HAVE_MPI
  if (!mpiComm)
    return fail("setCollectiveCommunicator: expects an MPI_Comm *, got null");
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return fail("setCollectiveCommunicator: MPI is not initialized (or "
                "already finalized), so there is no communicator to use");
  MPI_Comm comm = *static_cast<MPI_Comm *>(mpiComm);
  if (comm == MPI_COMM_NULL)
    return fail("setCollectiveCommunicator: the communicator is "
                "MPI_COMM_NULL (a rank outside a split's groups?)");
  int inter = 0;
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
    return fail("setCollectiveCommunicator: not a valid communicator");
  if (inter)
    return fail("setCollectiveCommunicator: an inter-communicator; the "
                "collectives need an intra-communicator");
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  World &w = world();
  std::lock_guard<std::mutex> lock(worldMutex);
  if (w.used) {
    int same = MPI_UNEQUAL;
    if (w.comm != MPI_COMM_NULL)
      MPI_Comm_compare(w.comm, comm, &same);
    if (same == MPI_IDENT)
      return llvm::Error::success();
    return fail("setCollectiveCommunicator: collectives already ran over "
                "another communicator (" +
                rankOf(w) +
                "); set the communicator before the first collective");
  }
  // A process that no launcher started and whose MPI its host initialized
  // later (mpi4py) is no longer a world of 1.
  w.error.clear();
  w.comm = comm;
  w.rank = rank;
  w.size = size;
  w.custom = true;
  return llvm::Error::success();
#else
  (void)mpiComm;
  return fail("setCollectiveCommunicator: this RLX was built without MPI "
              "(RLX_ENABLE_MPI off): install libopenmpi-dev and rebuild");
#endif
}

llvm::Error rlx::checkCollectiveWorld(uint64_t ranks, int64_t rank) {
  if (ranks <= 1)
    return llvm::Error::success();
#ifdef RLX_HAVE_MPI
  if (!collectiveTimeout().error.empty())
    return fail(collectiveTimeout().error);
  World &w = world();
  std::lock_guard<std::mutex> lock(worldMutex);
  if (!w.error.empty())
    return fail("the program's collectives span " + llvm::Twine(ranks) +
                " ranks: " + w.error);
  if (static_cast<uint64_t>(w.size) != ranks) {
    std::string where =
        w.custom
            ? "the MPI communicator set for RLX's collectives has " +
                  std::to_string(w.size) + " processes"
            : "this process runs in an MPI world of " + std::to_string(w.size);
    return fail("the program's collectives span " + llvm::Twine(ranks) +
                " ranks (its shard.grid), but " + where +
                ": run one process per rank (mpirun -np " + llvm::Twine(ranks) +
                ")");
  }
  if (rank >= 0 && w.rank != rank)
    return fail("the program is rank " + llvm::Twine(rank) + "'s of " +
                llvm::Twine(ranks) + " (its rlx.rank) but runs as " +
                rankOf(w) +
                ": each rank runs the program compiled for it "
                "(mir-shard-tensor-parallel rank=" +
                llvm::Twine(w.rank) + ")");
  return llvm::Error::success();
#else
  (void)rank;
  return fail("the program's collectives span " + llvm::Twine(ranks) +
              " ranks (its shard.grid), but this RLX was built without MPI "
              "(a world of 1 process): install libopenmpi-dev, rebuild with "
              "RLX_ENABLE_MPI and run one process per rank (mpirun -np " +
              llvm::Twine(ranks) + ")");
#endif
}

llvm::Error rlx::checkSameOnAllRanks(uint64_t fingerprint,
                                     llvm::StringRef what) {
#ifdef RLX_HAVE_MPI
  if (collectiveSize() <= 1)
    return llvm::Error::success();
  if (!collectiveTimeout().error.empty())
    return fail(collectiveTimeout().error);
  const World &w = useWorld();
  if (!w.error.empty())
    return fail("checking that " + what +
                " is the same on all ranks: " + w.error);
  // One all-reduce: the minimum of the fingerprints and of their
  // complements, whose complement is the maximum.
  uint64_t send[2] = {fingerprint, ~fingerprint}, received[2] = {0, 0};
  auto describe = [&] {
    return ("the check that " + what + " is the same on all ranks").str();
  };
  MPI_Request request;
  checkMPI(MPI_Iallreduce(send, received, 2, MPI_UINT64_T, MPI_MIN, w.comm,
                          &request),
           w, describe);
  complete(request, w, describe);
  uint64_t lowest = received[0], highest = ~received[1];
  if (lowest == highest)
    return llvm::Error::success();
  std::string message;
  llvm::raw_string_ostream os(message);
  os << what << " differs between ranks: " << rankOf(w) << " has "
     << llvm::format_hex(fingerprint, 18) << ", the ranks' range from "
     << llvm::format_hex(lowest, 18) << " to " << llvm::format_hex(highest, 18)
     << " (every rank must load the same files)";
  return fail(message);
#else
  (void)fingerprint, (void)what;
  return llvm::Error::success();
#endif
}

//===----------------------------------------------------------------------===//
// The collectives
//===----------------------------------------------------------------------===//

namespace {
/// The element types the program's collectives move.
enum class CollectiveElement { F32, F16, BF16 };
} // namespace

#ifdef RLX_HAVE_MPI
/// Sums 16-bit floats (MPI_UINT16_T holding f16 or bf16 bits): each pair in
/// f32, rounded once to the type (to nearest, ties to even).
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
static void sum16(void *in, void *inout, int *length, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = Narrow(Widen(a[i]) + Widen(b[i]));
}

/// The MPI reduction summing `Element`s: MPI_SUM on floats, a user
/// operation (created once, commutative) on f16 and bf16.
static MPI_Op sumOp(CollectiveElement element) {
  static MPI_Op f16 = MPI_OP_NULL, bf16 = MPI_OP_NULL;
  static std::once_flag once;
  if (element == CollectiveElement::F32)
    return MPI_SUM;
  std::call_once(once, [] {
    MPI_Op_create(&sum16<f16ToF32, f32ToF16>, /*commute=*/1, &f16);
    MPI_Op_create(&sum16<bf16ToF32, f32ToBF16>, /*commute=*/1, &bf16);
  });
  return element == CollectiveElement::F16 ? f16 : bf16;
}

static MPI_Datatype mpiType(CollectiveElement element) {
  return element == CollectiveElement::F32 ? MPI_FLOAT : MPI_UINT16_T;
}
#endif

static size_t elementBytes(CollectiveElement element) {
  return element == CollectiveElement::F32 ? 4 : 2;
}

static const char *elementName(CollectiveElement element) {
  switch (element) {
  case CollectiveElement::F32:
    return "f32";
  case CollectiveElement::F16:
    return "f16";
  case CollectiveElement::BF16:
    return "bf16";
  }
  return "?";
}

#ifdef RLX_HAVE_MPI
/// The sum of every rank's `n` f16 or bf16 values computed in f32 and
/// rounded once, over more than 2 ranks: a reduction tree of the 16-bit
/// operation would round each partial sum, so its result would depend on
/// the tree. The values are widened, reduce-scattered in f32 (each rank
/// sums a range), rounded and all-gathered: 6 (N-1)/N bytes per element
/// moved, against 4 (N-1)/N for a 16-bit ring and 8 (N-1)/N in f32.
static void sum16InF32(const World &w,
                       llvm::function_ref<std::string()> describe,
                       const uint16_t *in, uint16_t *out, int n,
                       CollectiveElement element) {
  bool bf16 = element == CollectiveElement::BF16;
  std::vector<float> wide(n);
  for (int i = 0; i < n; ++i)
    wide[i] = bf16 ? bf16ToF32(in[i]) : f16ToF32(in[i]);
  std::vector<int> counts(w.size), starts(w.size);
  for (int r = 0, at = 0; r < w.size; ++r) {
    counts[r] = n / w.size + (r < n % w.size ? 1 : 0);
    starts[r] = at;
    at += counts[r];
  }
  std::vector<float> mine(std::max(counts[w.rank], 1));
  bounded(
      w, describe,
      [&](MPI_Request *r) {
        return MPI_Ireduce_scatter(wide.data(), mine.data(), counts.data(),
                                   MPI_FLOAT, MPI_SUM, w.comm, r);
      },
      [&] {
        return MPI_Reduce_scatter(wide.data(), mine.data(), counts.data(),
                                  MPI_FLOAT, MPI_SUM, w.comm);
      });
  std::vector<uint16_t> narrow(mine.size());
  for (int i = 0; i < counts[w.rank]; ++i)
    narrow[i] = bf16 ? f32ToBF16(mine[i]) : f32ToF16(mine[i]);
  bounded(
      w, describe,
      [&](MPI_Request *r) {
        return MPI_Iallgatherv(narrow.data(), counts[w.rank], MPI_UINT16_T, out,
                               counts.data(), starts.data(), MPI_UINT16_T,
                               w.comm, r);
      },
      [&] {
        return MPI_Allgatherv(narrow.data(), counts[w.rank], MPI_UINT16_T, out,
                              counts.data(), starts.data(), MPI_UINT16_T,
                              w.comm);
      });
}
#endif

namespace {
struct PendingReduce;
} // namespace

#ifdef RLX_HAVE_MPI
namespace {
/// An all-reduce rlx_all_reduce_start_* began and rlx_all_reduce_wait has
/// not completed: MPI requests (one per INT_MAX elements) writing `out`.
struct PendingReduce {
  void *out;
  std::vector<MPI_Request> requests;
  std::string what;
};
} // namespace

/// The started all-reduces, in start order. Only the thread running the
/// program's kernels touches it (the kernels run in program order).
static std::vector<PendingReduce> &pendingReduces() {
  static std::vector<PendingReduce> pending;
  return pending;
}
#endif // RLX_HAVE_MPI

/// rlx_all_reduce_{f32,f16,bf16}: `count` elements of `element`. With
/// `started` (rlx_all_reduce_start_*) the MPI calls are only begun, their
/// requests added to it for rlx_all_reduce_wait; a 16-bit sum over more
/// than 2 ranks (two collectives in turn, sum16InF32) completes here even
/// then.
static int allReduce(const void *in, void *out, int64_t count,
                     int64_t groupSize, CollectiveElement element,
                     PendingReduce *started = nullptr) {
  size_t bytes = elementBytes(element);
  CollectiveTimer timer(static_cast<uint64_t>(count) * bytes);
  // One rank: nothing to exchange (and no MPI needed).
  if (groupSize == 1) {
    if (in != out)
      std::memcpy(out, in, count * bytes);
    return 0;
  }
#ifdef RLX_HAVE_MPI
  const World &w = worldFor("all_reduce", groupSize);
  auto describe = [&] {
    return ("all_reduce of " + llvm::Twine(count) +
            (element == CollectiveElement::F32
                 ? llvm::Twine(" floats")
                 : " " + llvm::Twine(elementName(element)) + " values"))
        .str();
  };
  MPI_Datatype type = mpiType(element);
  MPI_Op op = sumOp(element);
  // MPI counts are ints: a larger tensor goes in pieces.
  for (int64_t done = 0; done < count;) {
    int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
    const void *from = static_cast<const char *>(in) + done * bytes;
    void *into = static_cast<char *>(out) + done * bytes;
    const void *send = in == out ? MPI_IN_PLACE : from;
    if (element != CollectiveElement::F32 && groupSize > 2) {
      sum16InF32(w, describe, static_cast<const uint16_t *>(from),
                 static_cast<uint16_t *>(into), n, element);
    } else if (started) {
      MPI_Request request;
      checkMPI(MPI_Iallreduce(send, into, n, type, op, w.comm, &request), w,
               describe);
      started->requests.push_back(request);
    } else {
      allReduceOn(w, describe, send, into, n, type, op);
    }
    done += n;
  }
  return 0;
#else
  (void)in, (void)out, (void)count, (void)groupSize, (void)started;
  abortCollective("all_reduce: this RLX was built without MPI");
#endif
}

/// rlx_all_reduce_start_{f32,f16,bf16}: starts the sum of `count` elements of
/// `element` into `out` and returns; rlx_all_reduce_wait(out) completes it.
static int startAllReduce(const void *in, void *out, int64_t count,
                          int64_t groupSize, CollectiveElement element) {
#ifdef RLX_HAVE_MPI
  if (groupSize > 1) {
    PendingReduce p;
    p.out = out;
    p.what = ("all_reduce of " + llvm::Twine(count) + " " +
              llvm::Twine(elementName(element)) + " values (started)")
                 .str();
    for (const PendingReduce &q : pendingReduces())
      if (q.out == out)
        abortCollective(rankOf(worldFor("all_reduce", groupSize)) + ": " +
                        p.what +
                        ": an all_reduce into the same buffer is in flight");
    int rc = allReduce(in, out, count, groupSize, element, &p);
    pendingReduces().push_back(std::move(p));
    return rc;
  }
#endif
  return allReduce(in, out, count, groupSize, element);
}

extern "C" int rlx_all_reduce_wait(void *out, int64_t groupSize) {
  CollectiveTimer timer(/*bytes=*/0, /*calls=*/0);
  if (groupSize == 1)
    return 0;
#ifdef RLX_HAVE_MPI
  const World &w = worldFor("all_reduce", groupSize);
  std::vector<PendingReduce> &pending = pendingReduces();
  auto it = llvm::find_if(pending,
                          [&](const PendingReduce &p) { return p.out == out; });
  if (it == pending.end())
    abortCollective(rankOf(w) +
                    ": all_reduce wait: no all_reduce into this buffer was "
                    "started");
  PendingReduce p = std::move(*it);
  pending.erase(it);
  // Bounded by the timeout, as the blocking calls.
  for (MPI_Request &request : p.requests)
    complete(request, w, [&] { return p.what; });
  return 0;
#else
  (void)out;
  abortCollective("all_reduce: this RLX was built without MPI");
#endif
}

/// rlx_all_gather_{f32,16}: [outer, inner] elements of `bytes` each.
static int allGather(const void *in, void *out, int64_t outer, int64_t inner,
                     int64_t groupSize, size_t bytes) {
  CollectiveTimer timer(static_cast<uint64_t>(outer * inner * groupSize) *
                        bytes);
  if (groupSize == 1) {
    std::memcpy(out, in, outer * inner * bytes);
    return 0;
  }
#ifdef RLX_HAVE_MPI
  const World &w = worldFor("all_gather", groupSize);
  int64_t piece = outer * inner;
  if (piece > INT_MAX)
    abortCollective("all_gather: a rank's piece exceeds 2^31 - 1 elements");
  auto describe = [&] {
    return ("all_gather of " + llvm::Twine(piece) +
            (bytes == 4 ? " floats" : " 16-bit values") + " per rank")
        .str();
  };
  MPI_Datatype type = bytes == 4 ? MPI_FLOAT : MPI_UINT16_T;
  // Rank-major from MPI; when outer > 1, row o of rank r then goes to
  // out[o][r].
  std::vector<char> gathered;
  void *into = out;
  if (outer != 1) {
    gathered.resize(static_cast<size_t>(piece * groupSize) * bytes);
    into = gathered.data();
  }
  allGatherOn(w, describe, in, into, static_cast<int>(piece), type);
  if (outer == 1)
    return 0;
  size_t row = inner * bytes;
  for (int64_t r = 0; r < groupSize; ++r)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char *>(out) + (o * groupSize + r) * row,
                  gathered.data() + (r * outer + o) * row, row);
  return 0;
#else
  (void)in, (void)out, (void)outer, (void)inner, (void)groupSize;
  abortCollective("all_gather: this RLX was built without MPI");
#endif
}

extern "C" int rlx_all_reduce_f32(const float *in, float *out, int64_t count,
                                  int64_t groupSize) {
  return allReduce(in, out, count, groupSize, CollectiveElement::F32);
}

extern "C" int rlx_all_reduce_f16(const uint16_t *in, uint16_t *out,
                                  int64_t count, int64_t groupSize) {
  return allReduce(in, out, count, groupSize, CollectiveElement::F16);
}

extern "C" int rlx_all_reduce_bf16(const uint16_t *in, uint16_t *out,
                                   int64_t count, int64_t groupSize) {
  return allReduce(in, out, count, groupSize, CollectiveElement::BF16);
}

extern "C" int rlx_all_reduce_start_f32(const float *in, float *out,
                                        int64_t count, int64_t groupSize) {
  return startAllReduce(in, out, count, groupSize, CollectiveElement::F32);
}

extern "C" int rlx_all_reduce_start_f16(const uint16_t *in, uint16_t *out,
                                        int64_t count, int64_t groupSize) {
  return startAllReduce(in, out, count, groupSize, CollectiveElement::F16);
}

extern "C" int rlx_all_reduce_start_bf16(const uint16_t *in, uint16_t *out,
                                         int64_t count, int64_t groupSize) {
  return startAllReduce(in, out, count, groupSize, CollectiveElement::BF16);
}

extern "C" int rlx_all_gather_f32(const float *in, float *out, int64_t outer,
                                  int64_t inner, int64_t groupSize) {
  return allGather(in, out, outer, inner, groupSize, sizeof(float));
}

extern "C" int rlx_all_gather_16(const uint16_t *in, uint16_t *out,
                                 int64_t outer, int64_t inner,
                                 int64_t groupSize) {
  return allGather(in, out, outer, inner, groupSize, sizeof(uint16_t));
}

//===----------------------------------------------------------------------===//
// Reductions of the logits (a sampler's, not a program's)
//===----------------------------------------------------------------------===//

/// Logits first, largest first; lower tokens first among equal logits.
static bool before(const LogitCandidate &a, const LogitCandidate &b) {
  return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

LogitCandidate rlx::argmaxAcrossRanks(LogitCandidate mine) {
  int64_t ranks = collectiveSize();
  CollectiveTimer timer(sizeof(LogitCandidate));
  if (ranks == 1)
    return mine;
#ifdef RLX_HAVE_MPI
  const World &w = worldFor("argmax", ranks);
  auto describe = [] {
    return std::string("argmax of the logits (a float and an int per rank)");
  };
  // MPI_FLOAT_INT is {float, int}; MAXLOC keeps the lowest index of equal
  // values.
  struct {
    float value;
    int index;
  } send{mine.logit, mine.token}, best{0, 0};
  allReduceOn(w, describe, &send, &best, 1, MPI_FLOAT_INT, MPI_MAXLOC);
  return {best.value, best.index};
#else
  abortCollective("argmax across ranks: this RLX was built without MPI");
#endif
}

std::vector<LogitCandidate>
rlx::topKAcrossRanks(llvm::ArrayRef<LogitCandidate> mine, size_t k) {
  int64_t ranks = collectiveSize();
  CollectiveTimer timer(mine.size() * ranks * sizeof(LogitCandidate));
  std::vector<LogitCandidate> all(mine.begin(), mine.end());
#ifdef RLX_HAVE_MPI
  if (ranks > 1) {
    const World &w = worldFor("top_k", ranks);
    auto describe = [&] {
      return ("top-" + llvm::Twine(mine.size()) +
              " logits per rank (a float and an int each)")
          .str();
    };
    if (mine.size() > INT_MAX / 2)
      abortCollective("top-k across ranks: too many candidates per rank");
    static_assert(sizeof(LogitCandidate) == 2 * sizeof(int32_t));
    all.resize(mine.size() * ranks);
    int count = static_cast<int>(mine.size() * 2);
    allGatherOn(w, describe, mine.data(), all.data(), count, MPI_INT32_T);
  }
#else
  if (ranks > 1)
    abortCollective("top-k across ranks: this RLX was built without MPI");
#endif
  k = std::min(k, all.size());
  std::partial_sort(all.begin(), all.begin() + k, all.end(), before);
  all.resize(k);
  return all;
}
