//===- FuzzConfig.cpp - Fuzz the Hugging Face config.json reader ----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// TransformerConfig::fromJSON on arbitrary text, then the RoPE frequencies
// the recipes compute from a config.
//
//===----------------------------------------------------------------------===//

#include "RLX/Flow/Config.h"

#include <algorithm>

using namespace rlx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<TransformerConfig> config =
      TransformerConfig::fromJSON(text, "config.json");
  if (!config) {
    llvm::consumeError(config.takeError());
    return 0;
  }
  (void)config->inverseFrequencies(std::min<int64_t>(config->headDim, 512));
  return 0;
}
