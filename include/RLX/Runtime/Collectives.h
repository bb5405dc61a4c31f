//===- Collectives.h - MPI collectives of tensor-parallel code --*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A tensor-parallel program (mir-shard-tensor-parallel, then
// convert-mir-to-lir) holds lir.all_reduce / lir.all_gather kernels; the CPU
// code calls the routines below for them, on one thread of the pool. They
// run over one communicator: MPI_COMM_WORLD, unless setCollectiveCommunicator
// chose another before the first collective. The runtime initializes MPI once
// per process (MPI_Init_thread with MPI_THREAD_SERIALIZED, unless the process
// already did) and finalizes it at exit. Before a run, checkCollectiveWorld
// compares the program's group size with the communicator's, so that a
// mismatch is an error naming both sizes rather than a hang. Built without
// MPI (RLX_ENABLE_MPI off), every program with collectives is refused.
//
// Every collective is bounded in time: it is started non-blocking and polled
// until it completes or RLX_COLLECTIVE_TIMEOUT seconds (default 300; 0 waits
// forever, with the blocking MPI calls) have passed. A collective that does
// not complete, because another rank has died or runs a different program,
// ends the whole job (MPI_Abort) after a message on stderr naming the
// collective, its size, the rank, the world size and the timeout.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_RUNTIME_COLLECTIVES_H
#define RLX_RUNTIME_COLLECTIVES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <utility>
#include <vector>

extern "C" {
/// out = the elementwise sum of every rank's `in` (`count` floats; `in` may
/// be `out`, then summed in place).
int rlx_all_reduce_f32(const float *in, float *out, int64_t count,
                       int64_t groupSize);
/// The same for f16 and bf16 values (their bits): each element's sum is
/// computed in f32 and rounded once to the type (ties to even), over any
/// number of ranks (over more than 2: an f32 reduce-scatter, then a 16-bit
/// all-gather). `[precision] compute`
/// moves the activations so (mir-compute-precision): half the bytes.
int rlx_all_reduce_f16(const uint16_t *in, uint16_t *out, int64_t count,
                       int64_t groupSize);
int rlx_all_reduce_bf16(const uint16_t *in, uint16_t *out, int64_t count,
                        int64_t groupSize);
/// Starts the all-reduce of rlx_all_reduce_{f32,f16,bf16} (MPI_Iallreduce)
/// and returns at once: neither `in` nor `out` may be touched until
/// rlx_all_reduce_wait(out) has completed it (lir.all_reduce phase start and
/// wait; lir-async-collectives). One started all-reduce per `out`.
int rlx_all_reduce_start_f32(const float *in, float *out, int64_t count,
                             int64_t groupSize);
int rlx_all_reduce_start_f16(const uint16_t *in, uint16_t *out, int64_t count,
                             int64_t groupSize);
int rlx_all_reduce_start_bf16(const uint16_t *in, uint16_t *out, int64_t count,
                              int64_t groupSize);
/// Completes the all-reduce started into `out`, bounded by
/// RLX_COLLECTIVE_TIMEOUT as the blocking collectives.
int rlx_all_reduce_wait(void *out, int64_t groupSize);
/// `in` is [outer, inner]; out is [outer, groupSize, inner]: row o of every
/// rank's input, in rank order.
int rlx_all_gather_f32(const float *in, float *out, int64_t outer,
                       int64_t inner, int64_t groupSize);
/// The same for 16-bit values (f16, bf16).
int rlx_all_gather_16(const uint16_t *in, uint16_t *out, int64_t outer,
                      int64_t inner, int64_t groupSize);
}

namespace rlx {

/// Whether the runtime was built with MPI.
bool hasMPI();

/// What the program's collectives (rlx_all_reduce_f32, rlx_all_gather_f32)
/// did in this process so far; differences of two readings measure a span.
struct CollectiveStats {
  /// Collectives run.
  uint64_t calls = 0;
  /// Bytes of their results (an all-reduce's tensor, an all-gather's
  /// gathered tensor), per rank.
  uint64_t bytes = 0;
  /// Wall time spent in them, waiting for the other ranks included (for a
  /// started all-reduce: in its start and its wait, the time that the
  /// kernels between did not hide).
  double seconds = 0;
};
/// The totals so far (any thread may read them).
CollectiveStats collectiveStats();

/// This process's rank in the collectives' communicator: 0 for a process
/// that no MPI launcher started (which is a world of 1). Initializes MPI on
/// first use when an MPI launcher (mpirun) started the process.
int64_t collectiveRank();
/// The number of ranks of the collectives' communicator: 1 for a process
/// that no MPI launcher started. Initializes MPI as collectiveRank() does.
int64_t collectiveSize();

/// Runs the collectives over `mpiComm`, an `MPI_Comm *` (opaque here so that
/// this header needs no mpi.h), instead of MPI_COMM_WORLD. The handle is
/// copied; the communicator must stay valid while RLX uses it. MPI must
/// already be initialized (a valid communicator implies it). Fails when a
/// collective already ran over another communicator, for a null or an
/// inter-communicator, and when RLX was built without MPI.
llvm::Error setCollectiveCommunicator(void *mpiComm);

/// Succeeds when a program whose collectives span `ranks` ranks can run in
/// this process: `ranks` is 1, or the communicator has exactly `ranks`
/// processes (and RLX_COLLECTIVE_TIMEOUT, when set, is valid). Initializes
/// MPI on first use when the process was started by an MPI launcher; a
/// process that was not is a world of 1. A `rank` of 0 or more (the
/// program's rlx.rank) must be this process's rank in the communicator.
llvm::Error checkCollectiveWorld(uint64_t ranks, int64_t rank = -1);

/// Checks that every rank passes the same `fingerprint` (a hash of what must
/// agree: the model's config and weights, the program): one all-reduce of its
/// minimum and maximum. When they differ, every rank returns an error naming
/// `what` ("the model (config.json / weights fingerprint)"), its rank and the
/// number of ranks. Every rank of the communicator must call it; it is bounded
/// by RLX_COLLECTIVE_TIMEOUT as the collectives are. A world of 1 succeeds
/// without communicating.
llvm::Error checkSameOnAllRanks(uint64_t fingerprint, llvm::StringRef what);

/// A candidate token of a rank's slice of the logits: its logit and its
/// index in the whole vocabulary.
struct LogitCandidate {
  float logit;
  int32_t token;
};

/// The largest logit of all ranks' `mine` (each rank's best of its slice),
/// the lowest token among equal logits, as std::max_element over the whole
/// logits picks it: one all-reduce of 8 bytes per rank (MPI_MAXLOC) instead
/// of gathering the logits. Every rank of the communicator must call it;
/// bounded by RLX_COLLECTIVE_TIMEOUT like the program's collectives, and
/// counted in collectiveStats(). A world of 1 returns `mine`.
LogitCandidate argmaxAcrossRanks(LogitCandidate mine);

/// The `k` largest logits of all ranks' `mine` (each rank's k largest of its
/// slice, as many on every rank), largest first and lower tokens first
/// among equal logits: the order a stable sort of the whole logits gives.
/// One all-gather of every rank's candidates; bounded and counted as
/// argmaxAcrossRanks. A world of 1 returns `mine`'s first k.
std::vector<LogitCandidate> topKAcrossRanks(llvm::ArrayRef<LogitCandidate> mine,
                                            size_t k);

} // namespace rlx

#endif // RLX_RUNTIME_COLLECTIVES_H
