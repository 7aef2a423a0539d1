// The jit's kernel cache on disk (`--jit-cache DIR`): one file a kernel,
// named by a hash of its key (the region's structure, layouts and element
// type, the CPU and its features, and the LLVM, dtnn and code generator
// versions), holding the key itself, the kernel's object code and a checksum
// of it. An entry is written to a temporary file in the same folder and
// renamed into place, so that processes sharing the folder (the ranks of a
// job) never read half of one; an entry whose key or checksum does not match
// is reported and compiled again, never loaded. Part of the code generator
// module (it hashes with LLVM's xxh3).
#pragma once

#include "ir/Error.h"

#include <optional>
#include <string>
#include <string_view>

namespace dtnn::jit {

class KernelCache {
public:
  explicit KernelCache(std::string dir) : dir_(std::move(dir)) {}

  // The object code stored under `key`, or nothing: no entry, or one that
  // is not valid (then `problem` says why, naming the file).
  std::optional<std::string> load(const std::string &key, std::string &problem) const;
  // Stores `object` under `key`, atomically; fails with why.
  Error store(const std::string &key, std::string_view object) const;
  // The entry's path.
  std::string pathOf(const std::string &key) const;

private:
  std::string dir_;
};

// A 64-bit hash of `text` as 16 hex digits.
std::string hashHex(std::string_view text);

} // namespace dtnn::jit
