// Atomic replacement by the usual POSIX recipe: create a unique temporary file next to the
// target, write it, flush and fsync it, rename it over the target (rename is atomic within a
// file system), then fsync the directory so that the rename itself survives a crash.
#include "runtime/AtomicFile.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace dtnn::runtime {
namespace {

// The directory that holds path: "." for a bare file name.
std::string parentDir(const std::string &path) {
  std::string::size_type slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

// The last component of path.
std::string baseName(const std::string &path) {
  std::string::size_type slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The start of the names of this host's temporaries for `base`: ".BASE.tmp.HOST.", with BASE
// cut to 64 bytes so that a name near the system's limit still leaves room for the rest.
std::string temporaryPrefix(const std::string &base) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "host");
  return "." + base.substr(0, 64) + ".tmp." + std::string(host).substr(0, 64) + ".";
}

// Removes temporaries for `base` in `dir` that a process of this host left behind when it was
// killed while writing (their process no longer exists). Another host's are left alone: their
// process ids mean nothing here.
void removeStaleTemporaries(const std::string &dir, const std::string &base) {
  std::string prefix = temporaryPrefix(base);
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && pid != ::getpid() && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH)
      ::unlink(it->path().c_str());
  }
}

// An error "<path>: <what>: <strerror(err)>".
Error systemError(const std::string &path, const std::string &what, int err) {
  return Error::make(path + ": " + what + ": " + std::strerror(err));
}

// A temporary file that is removed when it goes out of scope unless it was committed.
class Temporary {
public:
  ~Temporary() {
    if (file_)
      std::fclose(file_);
    else if (fd_ >= 0)
      ::close(fd_);
    if (!name_.empty())
      ::unlink(name_.c_str());
  }

  // Creates a new file with a unique name in dir; returns errno on failure.
  int create(const std::string &dir, const std::string &base) {
    static std::atomic<uint64_t> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
      auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
      std::string name = dir + "/" + temporaryPrefix(base) + std::to_string(::getpid()) + "." +
                         std::to_string(counter++) + "." + std::to_string(stamp % 1000000007);
      fd_ = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0) {
        name_ = std::move(name);
        return 0;
      }
      if (errno != EEXIST)
        return errno;
    }
    return EEXIST;
  }

  // Closes the stream and checks that everything written reached the disk; returns errno on
  // failure.
  int closeSynced() {
    int err = 0;
    if (std::fflush(file_) != 0 || std::ferror(file_))
      err = errno ? errno : EIO;
    else if (::fsync(fd_) != 0)
      err = errno;
    if (std::fclose(file_) != 0 && !err)
      err = errno ? errno : EIO;
    file_ = nullptr;
    fd_ = -1;
    return err;
  }

  // Keeps the file: it has been renamed to its final name.
  void commit() { name_.clear(); }

  int fd() const { return fd_; }
  const std::string &name() const { return name_; }
  std::FILE *file() const { return file_; }
  void setFile(std::FILE *file) { file_ = file; }

private:
  int fd_ = -1;
  std::FILE *file_ = nullptr;
  std::string name_;
};

// Flushes the directory entry changes of dir to disk. File systems that cannot sync a
// directory report EINVAL, which is not an error here.
int syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  int err = ::fsync(fd) != 0 && errno != EINVAL ? errno : 0;
  ::close(fd);
  return err;
}

} // namespace

Error writeFileAtomically(const std::string &path, const std::function<bool(std::FILE *)> &write) {
  std::string dir = parentDir(path);
  // Renaming over a device, a pipe or a directory would replace it (or fail half way):
  // only regular files are replaced.
  struct stat old;
  bool exists = ::stat(path.c_str(), &old) == 0;
  if (exists && !S_ISREG(old.st_mode))
    return Error::make(path + ": not a regular file, so it is not replaced");
  removeStaleTemporaries(dir, baseName(path));
  Temporary tmp;
  if (int err = tmp.create(dir, baseName(path)))
    return systemError(path, "cannot create a temporary file in '" + dir + "'", err);
  if (exists && ::fchmod(tmp.fd(), old.st_mode & 07777) != 0)
    return systemError(path, "cannot set the permissions of '" + tmp.name() + "'", errno);
  tmp.setFile(::fdopen(tmp.fd(), "wb"));
  if (!tmp.file())
    return systemError(path, "cannot open a stream on '" + tmp.name() + "'", errno);

  errno = 0;
  if (!write(tmp.file())) {
    int err = std::ferror(tmp.file()) && errno ? errno : 0;
    return err ? systemError(path, "write failed", err) : Error::make(path + ": write failed");
  }
  if (int err = tmp.closeSynced())
    return systemError(path, "write failed", err);
  if (::rename(tmp.name().c_str(), path.c_str()) != 0)
    return systemError(path, "cannot replace it", errno);
  tmp.commit();
  if (int err = syncDirectory(dir))
    return systemError(path, "written, but syncing directory '" + dir + "' failed", err);
  return Error::success();
}

Error checkWritableAtomically(const std::string &path) {
  std::string dir = parentDir(path);
  struct stat old;
  bool exists = ::stat(path.c_str(), &old) == 0;
  if (exists && !S_ISREG(old.st_mode))
    return Error::make(path + ": not a regular file, so it is not replaced");
  {
    Temporary tmp;
    if (int err = tmp.create(dir, baseName(path)))
      return systemError(path, "cannot create a temporary file in '" + dir + "'", err);
  }
  if (!exists) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) return systemError(path, "cannot create it", errno);
    ::close(fd);
    ::unlink(path.c_str());
  }
  return Error::success();
}

Error writeFileAtomically(const std::string &path, std::string_view data) {
  return writeFileAtomically(path, [&](std::FILE *file) {
    return data.empty() || std::fwrite(data.data(), 1, data.size(), file) == data.size();
  });
}

} // namespace dtnn::runtime
