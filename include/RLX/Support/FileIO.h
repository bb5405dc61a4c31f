//===- FileIO.h - Reading regular files only ----------------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every reader of a weights, index or manifest file opens it through here.
// llvm::MemoryBuffer::getFile reads a file of unknown size until EOF: on a
// FIFO, /dev/zero or a terminal that is never (or after all memory), and
// opening a FIFO blocks until a writer comes. Those are refused by name
// before a byte is read.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_SUPPORT_FILEIO_H
#define RLX_SUPPORT_FILEIO_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include <memory>

namespace rlx {

/// Reads (usually maps) `path` if it is a regular file or a link to one.
/// Errors, all starting "<path>: <failure>: " ("<path>: " for an empty
/// `failure`), name what else it is (a directory, a FIFO, a character
/// device, ...) or the system's reason.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readRegularFile(const llvm::Twine &path, bool requiresNullTerminator = true,
                llvm::StringRef failure = "cannot open");

} // namespace rlx

#endif // RLX_SUPPORT_FILEIO_H
