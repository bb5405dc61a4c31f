//===- FuzzGGUF.cpp - Fuzz the GGUF reader and its llama view -------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// GGUFFile::fromBuffer on arbitrary bytes; on success every metadata value is
// printed, every tensor read, and the file goes through what `rlx-run --model
// x.gguf` does with it: TransformerConfig::fromGGUF and GGUFLlamaWeights
// (names mapped, q/k rows un-permuted).
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "RLX/Flow/Config.h"
#include "RLX/Weights/GGUF.h"

using namespace rlx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<std::unique_ptr<GGUFFile>> file =
      GGUFFile::fromBuffer(fuzz::bufferOf(data, size), "fuzz");
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  for (const auto &[key, value] : (*file)->metadata())
    (void)value.toString();
  fuzz::readAll(**file);

  llvm::Expected<TransformerConfig> config =
      TransformerConfig::fromGGUF(**file);
  if (config)
    (void)config->inverseFrequencies(std::min<int64_t>(config->headDim, 512));
  else
    llvm::consumeError(config.takeError());

  llvm::Expected<std::unique_ptr<GGUFLlamaWeights>> llama =
      GGUFLlamaWeights::create(std::move(*file));
  if (!llama) {
    llvm::consumeError(llama.takeError());
    return 0;
  }
  fuzz::readAll(**llama);
  return 0;
}
