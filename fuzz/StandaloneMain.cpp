//===- StandaloneMain.cpp - Replay fuzz inputs without libFuzzer ----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The main() of a fuzz target built without libFuzzer (RLX_ENABLE_SANITIZERS
// alone): runs LLVMFuzzerTestOneInput once on every file named on the command
// line or found under a named directory, so that ctest can replay the seed
// corpus and former crashers under ASan/UBSan.
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc,
                                                          char ***argv);

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (!llvm::sys::fs::is_directory(argv[i])) {
      files.push_back(argv[i]);
      continue;
    }
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(argv[i], ec), end;
         it != end && !ec; it.increment(ec))
      if (llvm::sys::fs::is_regular_file(it->path()))
        files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    llvm::errs() << argv[0] << ": no inputs\n";
    return 1;
  }
  for (const std::string &file : files) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                    /*RequiresNullTerminator=*/false);
    if (!buffer) {
      llvm::errs() << file << ": " << buffer.getError().message() << "\n";
      return 1;
    }
    // A copy of exactly the file's bytes, so that ASan sees reads past them.
    std::vector<uint8_t> bytes((*buffer)->getBufferStart(),
                               (*buffer)->getBufferEnd());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  llvm::outs() << argv[0] << ": ran " << files.size() << " inputs\n";
  return 0;
}
