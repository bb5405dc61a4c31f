//===- FileIO.cpp - Reading regular files only ----------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Support/FileIO.h"
#include "llvm/Support/Errno.h"
#include "llvm/Support/FileSystem.h"
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace llvm;

static const char *fileKind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

Expected<std::unique_ptr<MemoryBuffer>>
rlx::readRegularFile(const Twine &path, bool requiresNullTerminator,
                     StringRef failure) {
  std::string name = path.str();
  auto fail = [&](const Twine &why) -> Error {
    if (failure.empty())
      return createStringError(inconvertibleErrorCode(), name + ": " + why);
    return createStringError(inconvertibleErrorCode(),
                             name + ": " + failure + ": " + why);
  };
  // O_NONBLOCK: opening a FIFO must not wait for a writer. It changes
  // nothing for the regular files read below.
  int fd;
  do
    fd = ::open(name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return fail(sys::StrError(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return fail(sys::StrError(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(Twine(fileKind(st.st_mode)) + ", not a regular file");
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getOpenFile(sys::fs::convertFDToNativeFile(fd), name,
                                st.st_size, requiresNullTerminator);
  ::close(fd);
  if (!buffer)
    return fail(buffer.getError().message());
  return std::move(*buffer);
}
