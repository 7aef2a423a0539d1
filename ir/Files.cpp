#include "ir/Files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

namespace dtnn {

namespace {

Error systemError(const std::string &what, int err) {
  return Error::make(what + ": " + std::strerror(err));
}

// Wraps `fd` in a stream, or closes it and fails.
Expected<FilePtr> streamOf(int fd, const char *mode) {
  FilePtr file(::fdopen(fd, mode));
  if (file) return file;
  int err = errno;
  ::close(fd);
  return systemError("cannot open", err);
}

// The files opened for reading, by (device, inode): the path they were first
// opened by and what they are.
struct Inputs {
  std::mutex mutex;
  std::map<std::pair<dev_t, ino_t>, std::pair<std::string, std::string>> byFile;
};

Inputs &inputs() {
  static Inputs in;
  return in;
}

void noteInput(const struct stat &st, const std::string &path, const std::string &role) {
  Inputs &in = inputs();
  std::lock_guard<std::mutex> lock(in.mutex);
  in.byFile[{st.st_dev, st.st_ino}] = {path, "the " + role + " '" + path + "'"};
}

} // namespace

std::string inputAt(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  Inputs &in = inputs();
  std::lock_guard<std::mutex> lock(in.mutex);
  auto it = in.byFile.find({st.st_dev, st.st_ino});
  if (it == in.byFile.end()) return "";
  // An input deleted since may have left its inode to another file: the entry
  // counts while its path still names the same file.
  struct stat now;
  const auto &[inputPath, what] = it->second;
  if (::stat(inputPath.c_str(), &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino)
    return "";
  return what;
}

std::string fileTypeName(unsigned mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Expected<FilePtr> openRegularFile(const std::string &path, uint64_t &size, const std::string &role) {
  // O_NONBLOCK keeps a FIFO from blocking the open; it does not change reads of regular files.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return systemError("cannot open", errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return systemError("cannot stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    std::string type = fileTypeName(st.st_mode);
    return Error::make(S_ISDIR(st.st_mode) ? "is a directory" : "is " + type + ", not a regular file");
  }
  size = uint64_t(st.st_size);
  noteInput(st, path, role);
  return streamOf(fd, "rb");
}

Expected<FilePtr> openOutputFile(const std::string &path, bool append) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Error::make("is a directory");
    if (S_ISFIFO(st.st_mode)) {
      // Opening a FIFO for writing blocks until a reader opens it; without O_NONBLOCK it
      // would hang, with it the open fails (ENXIO) when nobody reads.
      int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0)
        return errno == ENXIO ? Error::make("is a FIFO that no process reads")
                              : systemError("cannot open", errno);
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return streamOf(fd, "wb");
    }
  } else if (errno == ENOENT) {
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
      return Error::make("the folder '" + parent.string() + "' does not exist");
  }
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  int fd = ::open(path.c_str(), flags, 0666);
  if (fd < 0) return systemError("cannot open", errno);
  return streamOf(fd, append ? "ab" : "wb");
}

} // namespace dtnn
