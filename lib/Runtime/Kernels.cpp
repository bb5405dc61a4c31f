//===- Kernels.cpp - Runtime routines generated code calls ----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/Kernels.h"
#include "RLX/Runtime/Collectives.h"
#include "RLX/Runtime/CpuExecutor.h"
#include "RLX/UKernels/UKernels.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/Tensor.h"
#include "llvm/ADT/STLExtras.h"
#include <cstring>
#include <vector>

using namespace rlx;

extern "C" int rlx_dequantize_rows(int ggmlType, const void *src, int64_t rows,
                                   int64_t k, float *dst, int64_t ldDst) {
  std::optional<DType> dtype = dtypeOfGGMLType(static_cast<uint32_t>(ggmlType));
  if (!dtype || rows < 0 || k < 0 || ldDst < k)
    return -1;
  llvm::Expected<uint64_t> bytes = storageBytes(*dtype, {1, k});
  if (!bytes) {
    llvm::consumeError(bytes.takeError());
    return -1;
  }
  const auto *in = static_cast<const uint8_t *>(src);
  for (int64_t r = 0; r < rows; ++r) {
    llvm::Error err =
        decodeToF32(*dtype, llvm::ArrayRef<uint8_t>(in + r * *bytes, *bytes),
                    llvm::MutableArrayRef<float>(dst + r * ldDst, k));
    if (err) {
      llvm::consumeError(std::move(err));
      return -1;
    }
  }
  return 0;
}

extern "C" int rlx_dequantize_x8_rows(int ggmlType, const void *table,
                                      int64_t row, int64_t rows, int64_t k,
                                      float *dst, int64_t ldDst) {
  size_t bytes = rlx_uk_weight_row_bytes(ggmlType, k);
  if (!bytes || row < 0 || rows < 0 ||
      !rlx_uk_supports(ggmlType | RLX_UK_REPACKED_X8))
    return -1;
  // A row at a time, put back in its plain form and dequantized.
  thread_local std::vector<uint8_t> plain;
  plain.resize(bytes);
  for (int64_t r = 0; r < rows; ++r)
    if (rlx_uk_unpack(ggmlType, k, table, row + r, row + r + 1, plain.data()) !=
            0 ||
        rlx_dequantize_rows(ggmlType, plain.data(), 1, k, dst + r * ldDst,
                            ldDst) != 0)
      return -1;
  return 0;
}

#if defined(__x86_64__)
/// compiler-rt's `__truncsfbf2` (f32 to bf16, rounded to nearest even),
/// which LLVM calls for a bf16 value it moves through an f32 register on a
/// CPU without AVX512_BF16 (rlx-expand-bf16 leaves only such moves). The
/// x86-64 ABI returns a bf16 in the low 16 bits of xmm0, where a float is
/// returned: the float whose bits are the bf16's, zero above.
extern "C" float rlx_truncsfbf2(float value) {
  uint32_t bits = f32ToBF16(value);
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}
#endif

llvm::Error rlx::selectMicroKernelISA(llvm::StringRef name) {
  static constexpr llvm::StringLiteral names[] = {"avx512", "avx512-nobf16",
                                                  "avx2", "scalar"};
  if (!llvm::is_contained(names, name))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "unknown micro-kernel instruction set '" + name +
            "' (expected one of: avx512, avx512-nobf16, avx2, scalar)");
  if (rlx_uk_select_isa(name.str().c_str()) != 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "this CPU lacks the micro-kernel "
                                   "instruction set '" +
                                       name + "'");
  return llvm::Error::success();
}

extern "C" void rlx_for_each_kernel_symbol(void (*add)(const char *, void *,
                                                       void *),
                                           void *user) {
  add("rlx_dequantize_rows", reinterpret_cast<void *>(&rlx_dequantize_rows),
      user);
  add("rlx_dequantize_x8_rows",
      reinterpret_cast<void *>(&rlx_dequantize_x8_rows), user);
  add("rlx_uk_prepare", reinterpret_cast<void *>(&rlx_uk_prepare), user);
  add("rlx_uk_unpack", reinterpret_cast<void *>(&rlx_uk_unpack), user);
  add("rlx_uk_matmul", reinterpret_cast<void *>(&rlx_uk_matmul), user);
  add("rlx_all_reduce_f32", reinterpret_cast<void *>(&rlx_all_reduce_f32),
      user);
  add("rlx_all_gather_f32", reinterpret_cast<void *>(&rlx_all_gather_f32),
      user);
  add("rlx_all_reduce_f16", reinterpret_cast<void *>(&rlx_all_reduce_f16),
      user);
  add("rlx_all_reduce_bf16", reinterpret_cast<void *>(&rlx_all_reduce_bf16),
      user);
  add("rlx_all_gather_16", reinterpret_cast<void *>(&rlx_all_gather_16), user);
  add("rlx_all_reduce_start_f32",
      reinterpret_cast<void *>(&rlx_all_reduce_start_f32), user);
  add("rlx_all_reduce_start_f16",
      reinterpret_cast<void *>(&rlx_all_reduce_start_f16), user);
  add("rlx_all_reduce_start_bf16",
      reinterpret_cast<void *>(&rlx_all_reduce_start_bf16), user);
  add("rlx_all_reduce_wait", reinterpret_cast<void *>(&rlx_all_reduce_wait),
      user);
#if defined(__x86_64__)
  add("__truncsfbf2", reinterpret_cast<void *>(&rlx_truncsfbf2), user);
#endif
}
