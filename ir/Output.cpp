// Atomic replacement by the usual POSIX recipe: create a unique temporary file next to the
// target, write it, flush and fsync it, rename it over the target (rename is atomic within a
// file system), then fsync the folder so that the rename itself survives a crash. Every byte
// goes through one stream (a stdio cookie over the file descriptor) that counts what it wrote,
// keeps the system's reason for a failure, and holds the test-only fault hooks:
//
//   DTNN_TEST_WRITE_FAULT=ERR[@BYTES]  every file written fails with ERR (ENOSPC, EIO, EFBIG,
//                                      EDQUOT) once it would pass BYTES bytes (default 0)
//   DTNN_TEST_WRITE_DELAY_MS=MS        each chunk of 64 KiB waits MS milliseconds first (slow disks)
#include "ir/Output.h"

#include "ir/Files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

namespace dtnn {
namespace {

std::atomic<uint64_t> bytesWritten{0};

// The temporary of the write in progress, for a signal handler to remove.
char activeTemporary[PATH_MAX + 1];
volatile sig_atomic_t haveActiveTemporary = 0;

struct TestHooks {
  int fault = 0;            // errno to fail with, or 0
  uint64_t faultAfter = 0;  // bytes a file may take before it fails
  int delayMs = 0;
};

// Read for every file, so that a test process can set them at any time.
TestHooks testHooks() {
  TestHooks h;
  {
    if (const char *f = std::getenv("DTNN_TEST_WRITE_FAULT")) {
      std::string spec = f;
      std::string name = spec.substr(0, spec.find('@'));
      for (auto [n, e] : {std::pair{"ENOSPC", ENOSPC}, std::pair{"EIO", EIO},
                          std::pair{"EFBIG", EFBIG}, std::pair{"EDQUOT", EDQUOT}})
        if (name == n) h.fault = e;
      if (size_t at = spec.find('@'); at != std::string::npos)
        h.faultAfter = std::strtoull(spec.c_str() + at + 1, nullptr, 10);
    }
    if (const char *d = std::getenv("DTNN_TEST_WRITE_DELAY_MS")) h.delayMs = std::atoi(d);
  }
  return h;
}

// The stream's end: a file descriptor, what went to it, and why it failed.
struct Sink {
  int fd = -1;
  TestHooks hooks = testHooks();
  uint64_t written = 0;
  int error = 0;
};

// Writes in chunks of at most kChunk bytes, so that progress (and a test's delay) comes
// evenly however large the writes of the stream are.
constexpr size_t kChunk = 64 << 10;

// A failure returns 0, never -1: glibc's stdio takes the cookie's return
// value as a count, and a negative one sent a large fwrite past its buffer.
ssize_t sinkWrite(void *cookie, const char *data, size_t size) {
  auto *sink = static_cast<Sink *>(cookie);
  const TestHooks &hooks = sink->hooks;
  for (size_t done = 0; done < size;) {
    size_t chunk = std::min(kChunk, size - done);
    if (hooks.delayMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(hooks.delayMs));
    if (hooks.fault && sink->written + chunk > hooks.faultAfter) {
      errno = sink->error = hooks.fault;
      return 0;
    }
    ssize_t n = ::write(sink->fd, data + done, chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      sink->error = n < 0 ? errno : EIO;
      errno = sink->error;
      return 0;
    }
    done += size_t(n);
    sink->written += uint64_t(n);
    bytesWritten += uint64_t(n);
  }
  return ssize_t(size);
}

// A stdio stream over `sink`; null when the system refuses one.
std::FILE *openStream(Sink &sink) {
  cookie_io_functions_t io{};
  io.write = sinkWrite;
  return ::fopencookie(&sink, "w", io);
}

// The folder that holds path: "." for a bare file name.
std::string parentDir(const std::string &path) {
  std::string::size_type slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
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

// The system's reason for `err`, with the limit that explains a file too large.
std::string reason(int err) {
  std::string text = std::strerror(err);
  rlimit rl{};
  if (err == EFBIG && ::getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    text += " (the file-size limit, ulimit -f, is " + std::to_string(uint64_t(rl.rlim_cur)) +
            " bytes)";
  return text;
}

// An error "cannot write '<path>': <why>".
Error failure(const std::string &path, const std::string &why) {
  return Error::make("cannot write '" + path + "': " + why);
}

// An error "cannot write '<path>': <what>: <reason(err)>", or without `what` when it is empty.
Error systemError(const std::string &path, const std::string &what, int err) {
  return failure(path, (what.empty() ? "" : what + ": ") + reason(err));
}

// A temporary file that is removed when it goes out of scope unless it was committed.
class Temporary {
public:
  ~Temporary() {
    if (fd_ >= 0) ::close(fd_);
    if (!name_.empty()) ::unlink(name_.c_str());
    haveActiveTemporary = 0;
  }

  // Creates a new file with a unique name in dir; returns errno on failure.
  int create(const std::string &dir, const std::string &base) {
    static std::atomic<uint64_t> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
      auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
      std::string name = dir + "/" + temporaryPrefix(base) + std::to_string(::getpid()) + "." +
                         std::to_string(counter++) + "." + std::to_string(stamp % 1000000007);
      if (name.size() <= PATH_MAX) {
        // Announced before it exists, so that a signal never leaves it behind.
        std::memcpy(activeTemporary, name.c_str(), name.size() + 1);
        haveActiveTemporary = 1;
      }
      fd_ = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0) {
        name_ = std::move(name);
        return 0;
      }
      haveActiveTemporary = 0;
      if (errno != EEXIST) return errno;
    }
    return EEXIST;
  }

  // Keeps the file: it has been renamed to its final name.
  void commit() {
    haveActiveTemporary = 0;
    name_.clear();
  }

  int fd() const { return fd_; }
  const std::string &name() const { return name_; }

private:
  int fd_ = -1;
  std::string name_;
};

// Flushes the entry changes of folder dir to disk. File systems that cannot sync a folder
// report EINVAL, which is not an error here.
int syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = ::fsync(fd) != 0 && errno != EINVAL ? errno : 0;
  ::close(fd);
  return err;
}

// Runs write() on a stream over `fd` and flushes it; returns errno on failure (EIO when
// write() failed without a reason from the system).
int fill(int fd, const std::function<bool(std::FILE *)> &write) {
  Sink sink;
  sink.fd = fd;
  std::FILE *stream = openStream(sink);
  if (!stream) return errno ? errno : ENOMEM;
  bool ok = write(stream);
  ok = std::fflush(stream) == 0 && ok && !std::ferror(stream);
  std::fclose(stream);
  return ok ? 0 : sink.error ? sink.error : EIO;
}

// What a path that exists is, for an output: success when it is written through (a character
// device or a FIFO), or a failure saying why it is refused.
Error refusal(const struct stat &st) {
  if (S_ISDIR(st.st_mode)) return Error::make("it is a directory");
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return Error::success();
  return Error::make("it is " + fileTypeName(st.st_mode) + ", not a regular file, so it is not replaced");
}

// Opens a character device or a FIFO for writing; -1 with errno set on failure (ENXIO: a
// FIFO that no process reads, which a blocking open would wait for forever).
int openStreamTarget(const std::string &path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

Error streamOpenError(const std::string &path, int err) {
  return err == ENXIO ? failure(path, "it is a FIFO that no process reads")
                      : systemError(path, "cannot open it", err);
}

// Writes a character device or a FIFO directly.
Error writeThrough(const std::string &path, const std::function<bool(std::FILE *)> &write) {
  int fd = openStreamTarget(path);
  if (fd < 0) return streamOpenError(path, errno);
  int err = fill(fd, write);
  ::close(fd);
  return err ? systemError(path, "", err) : Error::success();
}

// The error for an output that is one of the process's inputs, or whose folder is missing.
Error checkPlace(const std::string &path) {
  std::string input = inputAt(path);
  if (!input.empty())
    return failure(path, "it is " + input + ", which this run reads; writing it would destroy "
                         "an input");
  struct stat st;
  std::string dir = parentDir(path);
  if (::stat(dir.c_str(), &st) != 0 && errno == ENOENT)
    return failure(path, "the folder '" + dir + "' does not exist");
  if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    return failure(path, "'" + dir + "' is not a folder");
  return Error::success();
}

} // namespace

Error writeOutput(const std::string &path, const std::function<bool(std::FILE *)> &write) {
  if (Error e = checkPlace(path)) return e;
  std::string dir = parentDir(path);
  struct stat old;
  bool exists = ::stat(path.c_str(), &old) == 0;
  if (exists && !S_ISREG(old.st_mode)) {
    if (Error why = refusal(old)) return failure(path, why.message());
    return writeThrough(path, write);
  }
  removeStaleTemporaries(dir, baseName(path));
  Temporary tmp;
  if (int err = tmp.create(dir, baseName(path)))
    return systemError(path, "cannot create a temporary file in '" + dir + "'", err);
  if (exists && ::fchmod(tmp.fd(), old.st_mode & 07777) != 0)
    return systemError(path, "cannot set the permissions of '" + tmp.name() + "'", errno);
  if (int err = fill(tmp.fd(), write)) return systemError(path, "", err);
  if (::fsync(tmp.fd()) != 0) return systemError(path, "", errno);
  if (::rename(tmp.name().c_str(), path.c_str()) != 0)
    return systemError(path, "cannot replace it", errno);
  tmp.commit();
  if (int err = syncDirectory(dir))
    return systemError(path, "written, but syncing folder '" + dir + "' failed", err);
  return Error::success();
}

Error writeOutput(const std::string &path, std::string_view data) {
  return writeOutput(path, [&](std::FILE *file) {
    return data.empty() || std::fwrite(data.data(), 1, data.size(), file) == data.size();
  });
}

Error checkOutput(const std::string &path) {
  if (Error e = checkPlace(path)) return e;
  std::string dir = parentDir(path);
  struct stat old;
  bool exists = ::stat(path.c_str(), &old) == 0;
  if (exists && !S_ISREG(old.st_mode)) {
    if (Error why = refusal(old)) return failure(path, why.message());
    int fd = openStreamTarget(path);
    if (fd < 0) return streamOpenError(path, errno);
    ::close(fd);
    return Error::success();
  }
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

GrowingOutput::~GrowingOutput() {
  if (stream_) std::fclose(stream_);
}

Error GrowingOutput::open(const std::string &path, bool keep) {
  path_ = path;
  text_.clear();
  if (Error e = checkOutput(path)) return e;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    int fd = openStreamTarget(path);
    if (fd < 0) return streamOpenError(path, errno);
    stream_ = ::fdopen(fd, "w");
    if (!stream_) {
      int err = errno;
      ::close(fd);
      return systemError(path, "cannot open it", err);
    }
    return Error::success();
  }
  if (!keep) return Error::success();
  // The old text is the start of this output, not an input of the run.
  std::FILE *in = std::fopen(path.c_str(), "rb");
  if (!in) return errno == ENOENT ? Error::success() : systemError(path, "cannot read it", errno);
  char chunk[1 << 16];
  while (size_t n = std::fread(chunk, 1, sizeof chunk, in)) text_.append(chunk, n);
  bool failed = std::ferror(in);
  std::fclose(in);
  if (failed) return failure(path, "cannot read its earlier text");
  if (!text_.empty() && text_.back() != '\n') text_ += '\n';
  return Error::success();
}

Error GrowingOutput::append(std::string_view text) {
  if (!stream_) {
    text_ += text;
    return writeOutput(path_, text_);
  }
  if (std::fwrite(text.data(), 1, text.size(), stream_) != text.size() || std::fflush(stream_) != 0)
    return systemError(path_, "", errno ? errno : EIO);
  return Error::success();
}

uint64_t outputBytesWritten() { return bytesWritten.load(); }

void abandonOutputInProgress() {
  if (haveActiveTemporary) ::unlink(activeTemporary);
}

} // namespace dtnn
