//===- FuzzProfile.cpp - Fuzz the compile-profile loader ------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// CompileProfile::fromTomlString on arbitrary text (toml++ underneath). A
// profile that loads must print (toToml) to TOML that loads back to an equal
// profile.
//
//===----------------------------------------------------------------------===//

#include "RLX/Profile/CompileProfile.h"

#include <cstdlib>

using namespace rlx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<CompileProfile> profile =
      CompileProfile::fromTomlString(text, "fuzz.rlx.toml");
  if (!profile) {
    llvm::consumeError(profile.takeError());
    return 0;
  }
  std::string printed = profile->toToml();
  llvm::Expected<CompileProfile> again =
      CompileProfile::fromTomlString(printed, "printed.rlx.toml");
  if (!again || *again != *profile)
    abort(); // toToml() must round-trip.
  return 0;
}
