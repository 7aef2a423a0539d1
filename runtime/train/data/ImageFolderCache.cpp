// The cache file of an image folder's index (ImageFolder.cpp says what it holds and when it is
// reused): written and read back, every count and length checked against the bytes left.
#include "runtime/train/data/ImageFolderParts.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace dtnn::imagefolder {
namespace {

constexpr char kMagic[8] = {'d', 't', 'n', 'n', 'I', 'D', 'X', '\n'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 + 8 + 8;
constexpr int64_t kRacyNs = 2'000'000'000;

// Reads what Out wrote. Every read is checked against the bytes left; the first that does not
// fit turns `ok` false for good, and every later read gives zero or nothing.
class In {
public:
  explicit In(std::string_view s) : s_(s) {}
  bool ok() const { return ok_; }
  bool atEnd() const { return ok_ && at_ == s_.size(); }
  std::string_view bytes(uint64_t n) {
    ok_ = ok_ && n <= s_.size() - at_;
    if (!ok_) return {};
    std::string_view v = s_.substr(at_, n);
    at_ += n;
    return v;
  }
  uint64_t uint(int size) {
    std::string_view b = bytes(uint64_t(size));
    uint64_t v = 0;
    for (size_t i = 0; i < b.size(); ++i) v |= uint64_t(uint8_t(b[i])) << (8 * i);
    return v;
  }
  std::string_view str() { return bytes(uint(8)); }
  // A count of items of at least `minBytes` each, no more than the bytes left hold.
  uint64_t count(uint64_t minBytes) {
    uint64_t n = uint(8);
    ok_ = ok_ && n <= (s_.size() - at_) / minBytes;
    return ok_ ? n : 0;
  }

private:
  std::string_view s_;
  size_t at_ = 0;
  bool ok_ = true;
};

// Reads the stamps, classes and notes of a cache body.
bool decodeHead(In &in, Built &b) {
  uint64_t n = in.count(1 + 8 * 4);
  for (uint64_t i = 0; i < n; ++i) {
    uint8_t kind = uint8_t(in.uint(1));
    std::string_view path = in.str();
    uint64_t ino = in.uint(8), mtime = in.uint(8), size = in.uint(8);
    if (kind > kListFile) return false;
    b.stamps.push_back({StampKind(kind), std::string(path), ino, int64_t(mtime), size});
  }
  n = in.count(8);
  for (uint64_t i = 0; i < n; ++i) b.index.classes.emplace_back(in.str());
  b.index.skippedFiles = int64_t(in.uint(8));
  n = in.count(8);
  for (uint64_t i = 0; i < n; ++i) b.index.notes.emplace_back(in.str());
  return in.ok() && b.index.skippedFiles >= 0 && !b.index.classes.empty() &&
         b.index.classes.size() <= uint64_t(INT32_MAX);
}

// The index a cache file holds, if it is whole, sound and made for `key`.
std::optional<Built> decodeCache(std::string_view file, const std::string &key) {
  if (file.size() < kHeaderBytes || std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0)
    return std::nullopt;
  In head(file.substr(sizeof(kMagic), kHeaderBytes - sizeof(kMagic)));
  uint64_t version = head.uint(4), size = head.uint(8), hash = head.uint(8);
  std::string_view body = file.substr(kHeaderBytes);
  if (version != kVersion || size != body.size() || hash != hashBytes(body)) return std::nullopt;
  In in(body);
  Built b;
  if (in.str() != key || !decodeHead(in, b)) return std::nullopt;
  uint64_t count = in.count(1 + 4); // a name of one byte at least, and a label
  std::string_view names = in.str(), labels = in.bytes(4 * count);
  if (!in.atEnd() || (!names.empty() && names.back() != '\0')) return std::nullopt;
  ImageFolderIndex &index = b.index;
  index.names.assign(names);
  index.offsets.reserve(count);
  index.labels.reserve(count);
  for (size_t p = 0; p < names.size(); p += std::strlen(names.data() + p) + 1) {
    if (names[p] == '\0' || index.offsets.size() == count) return std::nullopt;
    index.offsets.push_back(p);
  }
  if (index.offsets.size() != count) return std::nullopt;
  In labelIn(labels);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t label = labelIn.uint(4);
    if (label >= index.classes.size()) return std::nullopt;
    index.labels.push_back(int32_t(label));
  }
  return b;
}

// Whether every stamp still holds.
bool stampsHold(const std::string &root, const std::vector<Stamp> &stamps) {
  for (const Stamp &s : stamps) {
    std::string path = s.kind == kListFile ? s.path : root + "/" + s.path;
    struct stat st;
    bool exists = ::stat(path.c_str(), &st) == 0;
    if (s.kind == kMissing) {
      if (exists) return false;
      continue;
    }
    if (!exists || uint64_t(st.st_ino) != s.ino || mtimeNs(st) != s.mtimeNs) return false;
    if (s.kind == kFolder ? !S_ISDIR(st.st_mode) : uint64_t(st.st_size) != s.size) return false;
  }
  return true;
}

// The bytes of cache file `path`, if it is a regular file of a readable size.
std::optional<std::string> readCacheFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st;
  std::string bytes;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= off_t(kHeaderBytes) &&
            uint64_t(st.st_size) <= readLimit();
  if (ok) bytes.resize(size_t(st.st_size));
  for (size_t done = 0; ok && done < bytes.size();) {
    ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    ok = got > 0;
    done += ok ? size_t(got) : 0;
  }
  ::close(fd);
  if (!ok) return std::nullopt;
  return bytes;
}

} // namespace

std::string encodeCache(const std::string &key, const Built &b) {
  const ImageFolderIndex &index = b.index;
  Out body;
  body.str(key);
  body.u64(b.stamps.size());
  for (const Stamp &s : b.stamps) {
    body.u8(s.kind);
    body.str(s.path);
    body.u64(s.ino);
    body.u64(uint64_t(s.mtimeNs));
    body.u64(s.size);
  }
  body.u64(index.classes.size());
  for (const std::string &c : index.classes) body.str(c);
  body.u64(uint64_t(index.skippedFiles));
  body.u64(index.notes.size());
  for (const std::string &n : index.notes) body.str(n);
  body.u64(index.labels.size());
  body.str(index.names);
  for (int32_t label : index.labels) body.u32(uint32_t(label));
  Out file;
  file.s.append(kMagic, sizeof(kMagic));
  file.u32(kVersion);
  file.u64(body.s.size());
  file.u64(hashBytes(body.s));
  return file.s + body.s;
}

std::optional<Built> loadCache(const std::string &path, const std::string &key,
                               const std::string &root) {
  std::optional<Built> b;
  if (std::optional<std::string> bytes = readCacheFile(path)) b = decodeCache(*bytes, key);
  if (!b || !stampsHold(root, b->stamps)) return std::nullopt;
  return b;
}

bool racy(const std::vector<Stamp> &stamps, int64_t startNs) {
  return std::any_of(stamps.begin(), stamps.end(), [startNs](const Stamp &s) {
    return s.kind != kMissing && (startNs == INT64_MIN || s.mtimeNs > startNs - kRacyNs);
  });
}

CacheWriter::~CacheWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

bool CacheWriter::begin(const std::string &path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return false;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string temp = path + ".tmp-XXXXXX";
  int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) return false;
  fd_ = fd;
  temp_ = temp;
  path_ = path;
  ::fchmod(fd, 0644);
  startNs_ = ::fstat(fd, &st) == 0 ? mtimeNs(st) : INT64_MIN;
  return true;
}

void CacheWriter::commit(const std::string &bytes) {
  bool ok = true;
  for (size_t done = 0; ok && done < bytes.size();) {
    ssize_t got = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    ok = got > 0;
    done += ok ? size_t(got) : 0;
  }
  ok = ::close(fd_) == 0 && ok;
  fd_ = -1;
  if (ok && ::rename(temp_.c_str(), path_.c_str()) == 0) temp_.clear();
}

} // namespace dtnn::imagefolder
