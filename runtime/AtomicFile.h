// Atomic file replacement: readers of a path see either its old content or the complete new
// content, never a partial write, even if the process or the machine dies half way.
#pragma once

#include "ir/Error.h"

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace dtnn::runtime {

// Writes path atomically. write() fills a temporary file created in the same directory under a
// unique name and returns false on failure; the temporary is then flushed, fsync'ed and renamed
// over path, and the directory is fsync'ed. On any failure the temporary is removed, an
// existing path is left untouched, and the error names path (and strerror where the system
// reported one). A replaced file keeps its permission bits. Temporaries of the same path that a
// killed process of this host left behind are removed first. A path that exists but is not a
// regular file (a device, a pipe, a directory) is refused and left as it is.
Error writeFileAtomically(const std::string &path, const std::function<bool(std::FILE *)> &write);

// Checks, before a long computation, that writeFileAtomically(path) could write: that path is a
// regular file or absent, that a temporary can be created next to it, and that a file of its
// name can be created (a folder that is missing, unwritable or read-only, or a name past the
// system's limit fail here). Leaves nothing behind.
Error checkWritableAtomically(const std::string &path);

// Writes data to path atomically, as above.
Error writeFileAtomically(const std::string &path, std::string_view data);

} // namespace dtnn::runtime
