//===- MemoryBudget.h - Refuse allocations past a memory budget -*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The sizes of a model's arena, its parameter pool and a generator's KV cache
// come from files (a config, a manifest, a module). Before allocating one,
// the runtime checks it against a memory budget and refuses with a message
// naming the allocation, instead of failing (or being killed) inside it.
//
// The budget is, in order: an explicit value (CompileOptions::memoryBudgetMB,
// rlx-run --memory-budget-mb), the RLX_MEMORY_BUDGET_MB environment
// variable, else the machine's physical memory. 0 MiB means no limit.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_RUNTIME_MEMORYBUDGET_H
#define RLX_RUNTIME_MEMORYBUDGET_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>

namespace rlx {

/// A budget in bytes; 0 is no limit.
struct MemoryBudget {
  uint64_t bytes = 0;
  /// Where it came from, for messages: "RLX_MEMORY_BUDGET_MB=512",
  /// "--memory-budget-mb", "physical memory".
  std::string origin;

  /// The budget for `explicitMB` MiB when given, else `profileMB` (a
  /// compile profile's `[execution] memory_budget_mb`), else from the
  /// environment or the physical memory. Errors if RLX_MEMORY_BUDGET_MB is
  /// not a non-negative integer.
  static llvm::Expected<MemoryBudget>
  get(std::optional<uint64_t> explicitMB = std::nullopt,
      std::optional<uint64_t> profileMB = std::nullopt);

  /// Errors with "<what> = N bytes (M MiB), over the memory budget of B
  /// bytes (<origin>)" when `bytes` exceeds the budget.
  llvm::Error check(uint64_t bytes, const llvm::Twine &what) const;
};

/// The sum (or product) of sizes, std::nullopt on 64-bit overflow.
std::optional<uint64_t> addBytes(uint64_t a, uint64_t b);
std::optional<uint64_t> mulBytes(uint64_t a, uint64_t b);

} // namespace rlx

#endif // RLX_RUNTIME_MEMORYBUDGET_H
