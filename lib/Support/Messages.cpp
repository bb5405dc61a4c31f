//===- Messages.cpp - Quoting user input in messages ----------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Support/Messages.h"
#include "llvm/ADT/Twine.h"

std::string rlx::echoed(llvm::StringRef text, size_t limit) {
  if (text.size() <= limit)
    return text.str();
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;
  return (text.take_front(cut) + "... (" + llvm::Twine(text.size()) + " bytes)")
      .str();
}
