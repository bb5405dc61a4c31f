//===- Collectives.cpp - MPI collectives of tensor-parallel code ----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/Collectives.h"
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
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
[[noreturn]] static void abortCollective(const char *what) {
  std::fprintf(stderr, "rlx: %s\n", what);
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

namespace {
struct World {
  int size = 1;
  std::string error;
};
} // namespace

/// MPI_COMM_WORLD's size, initializing MPI the first time.
static const World &world() {
  static World w;
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized && !launchedByMPI())
      return;
    int provided = 0;
    if (!initialized) {
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) !=
          MPI_SUCCESS) {
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
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  });
  return w;
}

#endif // RLX_HAVE_MPI

bool rlx::hasMPI() {
#ifdef RLX_HAVE_MPI
  return true;
#else
  return false;
#endif
}

llvm::Error rlx::checkCollectiveWorld(uint64_t ranks) {
  if (ranks <= 1)
    return llvm::Error::success();
#ifdef RLX_HAVE_MPI
  const World &w = world();
  if (!w.error.empty())
    return fail("the program's collectives span " + llvm::Twine(ranks) +
                " ranks: " + w.error);
  if (static_cast<uint64_t>(w.size) != ranks)
    return fail("the program's collectives span " + llvm::Twine(ranks) +
                " ranks (its shard.grid), but this process runs in an MPI "
                "world of " +
                llvm::Twine(w.size) +
                ": run one process per rank (mpirun -np " + llvm::Twine(ranks) +
                ")");
  return llvm::Error::success();
#else
  return fail("the program's collectives span " + llvm::Twine(ranks) +
              " ranks (its shard.grid), but this RLX was built without MPI "
              "(a world of 1 process): install libopenmpi-dev, rebuild with "
              "RLX_ENABLE_MPI and run one process per rank (mpirun -np " +
              llvm::Twine(ranks) + ")");
#endif
}

extern "C" int rlx_all_reduce_f32(const float *in, float *out, int64_t count,
                                  int64_t groupSize) {
#ifdef RLX_HAVE_MPI
  if (world().size != groupSize)
    abortCollective("all_reduce: the MPI world does not match the program's "
                    "group size");
  // MPI counts are ints: a larger tensor goes in pieces.
  for (int64_t done = 0; done < count;) {
    int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
    const void *send = in == out ? MPI_IN_PLACE : in + done;
    MPI_Allreduce(send, out + done, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    done += n;
  }
  return 0;
#else
  (void)in, (void)out, (void)count, (void)groupSize;
  abortCollective("all_reduce: this RLX was built without MPI");
#endif
}

extern "C" int rlx_all_gather_f32(const float *in, float *out, int64_t outer,
                                  int64_t inner, int64_t groupSize) {
#ifdef RLX_HAVE_MPI
  if (world().size != groupSize)
    abortCollective("all_gather: the MPI world does not match the program's "
                    "group size");
  int64_t piece = outer * inner;
  if (piece > INT_MAX)
    abortCollective("all_gather: a rank's piece exceeds 2^31 - 1 elements");
  if (outer == 1) {
    MPI_Allgather(in, static_cast<int>(piece), MPI_FLOAT, out,
                  static_cast<int>(piece), MPI_FLOAT, MPI_COMM_WORLD);
    return 0;
  }
  // Rank-major from MPI, then row o of rank r to out[o][r].
  std::vector<float> gathered(static_cast<size_t>(piece * groupSize));
  MPI_Allgather(in, static_cast<int>(piece), MPI_FLOAT, gathered.data(),
                static_cast<int>(piece), MPI_FLOAT, MPI_COMM_WORLD);
  for (int64_t r = 0; r < groupSize; ++r)
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(gathered.data() + (r * outer + o) * inner, inner,
                  out + (o * groupSize + r) * inner);
  return 0;
#else
  (void)in, (void)out, (void)outer, (void)inner, (void)groupSize;
  abortCollective("all_gather: this RLX was built without MPI");
#endif
}
