//===- MemoryBudget.cpp - Refuse allocations past a memory budget ---------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Runtime/MemoryBudget.h"

#include "llvm/ADT/StringRef.h"

#include <cstdlib>
#include <unistd.h>

using namespace rlx;
using llvm::Twine;

static constexpr uint64_t kMiB = uint64_t(1) << 20;

std::optional<uint64_t> rlx::addBytes(uint64_t a, uint64_t b) {
  uint64_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    return std::nullopt;
  return sum;
}

std::optional<uint64_t> rlx::mulBytes(uint64_t a, uint64_t b) {
  uint64_t product;
  if (__builtin_mul_overflow(a, b, &product))
    return std::nullopt;
  return product;
}

/// MiB to bytes, saturating (a budget that large is no limit anyway).
static uint64_t fromMiB(uint64_t mb) {
  return mulBytes(mb, kMiB).value_or(UINT64_MAX);
}

llvm::Expected<MemoryBudget>
MemoryBudget::get(std::optional<uint64_t> explicitMB,
                  std::optional<uint64_t> profileMB) {
  if (explicitMB)
    return MemoryBudget{fromMiB(*explicitMB),
                        ("--memory-budget-mb " + Twine(*explicitMB)).str()};
  if (profileMB)
    return MemoryBudget{
        fromMiB(*profileMB),
        ("[execution] memory_budget_mb = " + Twine(*profileMB)).str()};
  if (const char *env = std::getenv("RLX_MEMORY_BUDGET_MB")) {
    uint64_t mb;
    if (llvm::StringRef(env).trim().getAsInteger(10, mb))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "RLX_MEMORY_BUDGET_MB='" + Twine(env) +
              "' is not a number of MiB (0: no limit)");
    return MemoryBudget{fromMiB(mb),
                        ("RLX_MEMORY_BUDGET_MB=" + Twine(mb)).str()};
  }
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0)
    return MemoryBudget{0, "no limit"};
  return MemoryBudget{
      mulBytes(uint64_t(pages), uint64_t(pageSize)).value_or(UINT64_MAX),
      "the physical memory; set RLX_MEMORY_BUDGET_MB to change it"};
}

llvm::Error MemoryBudget::check(uint64_t need, const Twine &what) const {
  if (bytes == 0 || need <= bytes)
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 what + " = " + Twine(need) + " bytes (" +
                                     Twine(need / kMiB) +
                                     " MiB), over the memory budget of " +
                                     Twine(bytes) + " bytes (" + origin + ")");
}
