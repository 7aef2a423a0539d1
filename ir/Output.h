// The one path by which the tools write files: checkpoints, metrics, -o,
// predictions, profiles and network models. Every output is all or nothing:
// a regular file is written to a temporary next to it and renamed over it,
// so that readers see the old content or the whole new one, never a part,
// whatever stops the process (a full disk, a file-size limit, a signal, a
// crash). A character device (/dev/null) or a FIFO that a process reads is
// written directly. No output may be one of the process's inputs (ir/Files.h).
#pragma once

#include "ir/Error.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace dtnn {

// Writes `path`. write() fills a stream and returns false on failure. A
// regular file (or a new one) is replaced atomically: the temporary is
// flushed, fsync'ed and renamed over `path`, and the folder fsync'ed; on any
// failure the temporary is removed and an existing file left as it was. A
// replaced file keeps its permission bits. Temporaries of `path` that a
// killed process of this host left behind are removed first. A directory, a
// FIFO nobody reads and any other file type are refused. Errors name the
// path and the reason: "cannot write 'ck.st': No space left on device",
// "cannot write 'ck.st': File too large (the file-size limit, ulimit -f, is
// 1048576 bytes)", "cannot write 'x.idx': it is the data file 'x.idx', which
// this run reads; writing it would destroy an input".
Error writeOutput(const std::string &path, const std::function<bool(std::FILE *)> &write);

// Writes `data` to `path` as above.
Error writeOutput(const std::string &path, std::string_view data);

// Checks, before a long computation, that writeOutput(path) could write:
// `path` is no input, a regular file or absent with a temporary creatable
// next to it (a missing, unwritable or read-only folder or a name past the
// system's limit fail here), or a device or a FIFO that can be opened for
// writing. Leaves nothing behind.
Error checkOutput(const std::string &path);

// A text output that grows by whole lines (the metrics of each epoch). Each
// append makes the text so far durable as one output: a regular file is
// replaced by all of it atomically, so the file never holds less than what
// ran; a device or a FIFO gets only the new text.
class GrowingOutput {
public:
  ~GrowingOutput();
  // Starts the output; with `keep`, an existing regular file's text is kept
  // and appended to (a resumed run), else it is replaced at the first append.
  Error open(const std::string &path, bool keep);
  Error append(std::string_view text);

private:
  std::string path_;
  std::string text_;
  std::FILE *stream_ = nullptr; // a device or a FIFO
};

// Bytes written so far through writeOutput by this process: the progress of
// its output, which a watchdog reads to tell slow writing from none.
uint64_t outputBytesWritten();

// Removes the temporary file of a write in progress, if any. Safe to call
// from a signal handler that ends the process.
void abandonOutputInProgress();

} // namespace dtnn
