// Opening the files the tools read and write, so that every path fails with
// its real cause before anything blocks or is half done: a directory, a FIFO
// (which would block an open until another process opens its other end) or a
// device where a regular file belongs, a missing folder, a name too long.
#pragma once

#include "ir/Error.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace dtnn {

struct FileCloser {
  void operator()(std::FILE *f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

// What a path that is not a regular file is: "a directory", "a FIFO", "a
// character device", "a block device", "a socket"; "" for a regular file.
std::string fileTypeName(unsigned mode);

// Opens `path` for reading, in binary, if it is a regular file, and sets
// `size`. Errors, without the path: "is a directory", "is a FIFO, not a
// regular file", "cannot open: <reason>". The file becomes one of the
// process's inputs (see inputAt), as `role` ("source file", "data file").
Expected<FilePtr> openRegularFile(const std::string &path, uint64_t &size, const std::string &role);

// The inputs of this process: every file it opened for reading, known by
// device and inode, so that an output can be refused when it names one
// through any path, symbolic link or hard link. Returns "" when `path` is
// none of them, else what it is: "the source file 'std/resnet.dtnn'".
std::string inputAt(const std::string &path);

// Opens `path` for writing in binary (appending when `append`): a regular
// file, new or not, a character device such as /dev/null, or a FIFO that a
// process reads. Errors, without the path: "is a directory", "is a FIFO that
// no process reads", "the folder 'F' does not exist", "cannot open: <reason>".
Expected<FilePtr> openOutputFile(const std::string &path, bool append);

} // namespace dtnn
