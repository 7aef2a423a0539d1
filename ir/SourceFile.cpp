#include "ir/SourceFile.h"

#include "ir/Files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace dtnn {

Expected<std::string> readSourceFile(const std::string &path, const std::string &kind) {
  uint64_t size = 0;
  Expected<FilePtr> file = openRegularFile(path, size, kind);
  if (!file) {
    const std::string &why = file.error().message();
    if (why == "is a directory") return Error::make("'" + path + "' is a directory, not a " + kind);
    if (why.starts_with("is ")) return Error::make("'" + path + "' " + why);
    return Error::make(why.starts_with("cannot open: ") ? "cannot open '" + path + "': " + why.substr(13)
                                                        : "'" + path + "': " + why);
  }
  std::string text;
  char chunk[1 << 16];
  while (size_t n = std::fread(chunk, 1, sizeof chunk, file->get())) {
    if (text.size() + n > kMaxSourceBytes)
      return Error::make("'" + path + "' is larger than " +
                         std::to_string(kMaxSourceBytes >> 20) + " MB, too large for a " + kind);
    text.append(chunk, n);
  }
  if (std::ferror(file->get()))
    return Error::make("cannot read '" + path + "': " + std::strerror(errno));
  // A UTF-8 byte order mark (which some editors write) is not part of the text, as in Python.
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  return text;
}

} // namespace dtnn
