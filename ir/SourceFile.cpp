#include "ir/SourceFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace dtnn {

Expected<std::string> readSourceFile(const std::string &path, const std::string &kind) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Error::make("'" + path + "' is a directory, not a " + kind);
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(std::fopen(path.c_str(), "rb"),
                                                        &std::fclose);
  if (!file) return Error::make("cannot open '" + path + "': " + std::strerror(errno));
  std::string text;
  char chunk[1 << 16];
  while (size_t n = std::fread(chunk, 1, sizeof chunk, file.get())) {
    if (text.size() + n > kMaxSourceBytes)
      return Error::make("'" + path + "' is larger than " +
                         std::to_string(kMaxSourceBytes >> 20) + " MB, too large for a " + kind);
    text.append(chunk, n);
  }
  if (std::ferror(file.get()))
    return Error::make("cannot read '" + path + "': " + std::strerror(errno));
  return text;
}

} // namespace dtnn
