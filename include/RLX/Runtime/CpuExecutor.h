//===- CpuExecutor.h - Multithreaded host code and weight layouts -*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The CPU back end generates SPMD code: every thread of a pool calls
// `_mlir_ciface_<entry>_spmd(arena, params, ctx, tid, nthreads)`; the kernels
// split their work into chunks the threads claim from counters in `ctx`
// (128 + 64 * nthreads bytes, zeroed before each run), and a thread leaves a
// kernel when all its chunks are done, so a thread the OS has descheduled
// delays nobody unless it holds a chunk. CpuExecutor owns the pool (the
// calling thread is thread 0) and the context. It also sets OpenBLAS to one
// thread when it runs several, so BLAS kernels split between the pool's
// threads do not oversubscribe the cores.
//
// Weights the generated GEMM reads are stored packed ("nk16"): a `[N, K]`
// matrix as N/16 panels of `[K][16]`; packWeightsNK16 writes that layout
// when the runtime loads a parameter.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_RUNTIME_CPUEXECUTOR_H
#define RLX_RUNTIME_CPUEXECUTOR_H

#include "RLX/Runtime/CompiledModel.h"
#include "RLX/Support/KernelABI.h"
#include <cstdint>
#include <memory>

namespace rlx {

/// The number of threads a CPU model runs on when asked for `requested`
/// (0: $RLX_NUM_THREADS when set, else every CPU this process may run on:
/// its affinity mask, e.g. one core for a rank mpirun bound to it).
unsigned cpuThreadCount(unsigned requested);

/// Makes the micro-kernels that read weights kept as stored use the
/// instruction set `name` ("avx512", "avx512-nobf16", "avx2", "scalar";
/// the tools pass $RLX_UK_ISA). Errors, naming it, when the name is unknown
/// or this CPU lacks the instruction set. Call it before running models.
llvm::Error selectMicroKernelISA(llvm::StringRef name);

class CpuExecutor : public Executor {
public:
  using SpmdFn = spmd::SpmdFn;
  /// `owner` keeps the code alive; `threads` >= 1.
  CpuExecutor(SpmdFn fn, std::shared_ptr<void> owner, unsigned threads);
  ~CpuExecutor() override;

  llvm::Error execute(const Manifest &manifest,
                      llvm::MutableArrayRef<uint8_t> arena,
                      llvm::ArrayRef<uint8_t> params,
                      bool paramsChanged) override;
  std::string describe() const override;
  unsigned threads() const;

  struct Pool;

private:
  SpmdFn fn;
  std::shared_ptr<void> owner;
  std::unique_ptr<Pool> pool;
};

/// Writes rows [row0, row0 + rows) of a `[n, k]` row-major matrix `src`
/// (`rows` and `row0` multiples of 16) into `dst`, the "nk16" storage of
/// the whole `[n, k]` matrix: element (r, c) at ((r / 16) * k + c) * 16 +
/// r % 16.
void packWeightsNK16(const float *src, int64_t rows, int64_t k, int64_t row0,
                     float *dst);

} // namespace rlx

#endif // RLX_RUNTIME_CPUEXECUTOR_H
