// Reading the text files the tools compile (.dtnn models and imports, .dtir
// modules): whole, and bounded, so that a device or a pipe that never ends
// cannot make a tool read forever.
#pragma once

#include "ir/Error.h"

#include <cstddef>
#include <string>

namespace dtnn {

// The largest source file the tools read (the language reference's 256 MB).
constexpr size_t kMaxSourceBytes = size_t(256) << 20;

// Reads the whole of `path`, at most kMaxSourceBytes, without a leading UTF-8
// byte order mark. `kind` names what the file should be in messages (".dtnn
// file"). Errors, without the path prefix
// a diagnostic adds: "'P' is a directory, not a .dtnn file", "cannot open 'P':
// <reason>", "cannot read 'P': <reason>", "'P' is larger than 256 MB, too
// large for a .dtnn file".
Expected<std::string> readSourceFile(const std::string &path, const std::string &kind);

} // namespace dtnn
