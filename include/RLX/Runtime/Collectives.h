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
// run over MPI_COMM_WORLD, which the runtime initializes once per process
// (MPI_Init_thread with MPI_THREAD_SERIALIZED, unless the process already
// did) and finalizes at exit. Before a run, checkCollectiveWorld compares the
// program's group size with the MPI world, so that a mismatch is an error
// naming both sizes rather than a hang. Built without MPI (RLX_ENABLE_MPI
// off), every program with collectives is refused.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_RUNTIME_COLLECTIVES_H
#define RLX_RUNTIME_COLLECTIVES_H

#include "llvm/Support/Error.h"
#include <cstdint>

extern "C" {
/// out = the elementwise sum of every rank's `in` (`count` floats; `in` may
/// be `out`, then summed in place).
int rlx_all_reduce_f32(const float *in, float *out, int64_t count,
                       int64_t groupSize);
/// `in` is [outer, inner]; out is [outer, groupSize, inner]: row o of every
/// rank's input, in rank order.
int rlx_all_gather_f32(const float *in, float *out, int64_t outer,
                       int64_t inner, int64_t groupSize);
}

namespace rlx {

/// Whether the runtime was built with MPI.
bool hasMPI();

/// Succeeds when a program whose collectives span `ranks` ranks can run in
/// this process: `ranks` is 1, or the MPI world has exactly `ranks`
/// processes. Initializes MPI on first use when the process was started by
/// an MPI launcher; a process that was not is a world of 1.
llvm::Error checkCollectiveWorld(uint64_t ranks);

} // namespace rlx

#endif // RLX_RUNTIME_COLLECTIVES_H
