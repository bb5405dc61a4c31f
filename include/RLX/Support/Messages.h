//===- Messages.h - Quoting user input in messages ---------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_SUPPORT_MESSAGES_H
#define RLX_SUPPORT_MESSAGES_H

#include "llvm/ADT/StringRef.h"
#include <string>

namespace rlx {

/// `text` as a message quotes it: at most `limit` bytes, cut at a UTF-8
/// character boundary and marked with "... (N bytes)", so that a huge key or
/// value (a 10 MB string in a profile or a config.json) is not echoed whole
/// into an error.
std::string echoed(llvm::StringRef text, size_t limit = 64);

} // namespace rlx

#endif // RLX_SUPPORT_MESSAGES_H
