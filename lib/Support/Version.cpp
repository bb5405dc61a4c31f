//===- Version.cpp - RLX's version for the tools' --version ---------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Support/Version.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"

#ifndef RLX_VERSION_STRING
#error "RLX_VERSION_STRING is set by lib/Support/CMakeLists.txt"
#endif

llvm::StringRef rlx::getRLXVersion() { return RLX_VERSION_STRING; }

void rlx::printRLXVersion(llvm::raw_ostream &os) {
  os << "RLX version " << getRLXVersion() << "\n"
     << "  built with LLVM and MLIR " << LLVM_VERSION_STRING << "\n";
}

void rlx::setRLXVersionPrinter() {
  llvm::cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { printRLXVersion(os); });
}
