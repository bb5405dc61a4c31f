//===- Version.h - RLX's version for the tools' --version -------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// RLX's version is the CMake project's (`project(rlx VERSION ...)`), compiled
// into RLXSupport only, so that a new version rebuilds one file.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_SUPPORT_VERSION_H
#define RLX_SUPPORT_VERSION_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace rlx {

/// RLX's version, e.g. "0.1.0".
llvm::StringRef getRLXVersion();

/// Prints what every RLX tool's --version prints: RLX's version and the LLVM
/// (and MLIR) it was built with.
void printRLXVersion(llvm::raw_ostream &os);

/// Makes the calling tool's --version print printRLXVersion's text instead
/// of LLVM's. Call it before llvm::cl::ParseCommandLineOptions.
void setRLXVersionPrinter();

} // namespace rlx

#endif // RLX_SUPPORT_VERSION_H
