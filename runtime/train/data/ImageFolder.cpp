// The index of an image folder, and its cache.
//
// Walk: the classes are ROOT's non-hidden subfolders (links followed), in byte order. Each class
// folder is walked depth first with openat and fdopendir; readdir's d_type tells an entry's type,
// and only links and DT_UNKNOWN entries cost a stat. The folders on the current path are kept by
// (st_dev, st_ino), so that a link back to one of them is noted and left out: the walk ends. The
// files come in torchvision's order: sorted(os.walk(...)) orders the folders by their path ("a" <
// "a-b" < "a/x", so not depth first), and the files of a folder by name. Names compare as bytes,
// which for UTF-8 is the order of Python's str. Hidden names (".x") are left out everywhere.
//
// Cache: the index is saved with a stamp per folder walked (its path, st_ino and st_mtim:
// creating, removing or renaming an entry changes its folder's mtime), one per dangling link
// (which must still dangle), and the class names. It is reused while every stamp holds and ROOT
// still has the same class folders: ROOT is listed again rather than stamped, as writing the
// cache beside the data changes ROOT's own mtime. A list file is stamped by inode, mtime and size.
// File systems keep mtimes at a coarse granularity (a clock tick; a second or two on some), so
// a change made in the same tick as a stamp would not show: an index with a stamp less than
// kRacyNs older than the walk's start is not saved. That start is read from the file system's
// own clock, as the mtime of the cache's temporary file, made before the walk.
//
// Cache file: magic, version, body length and body hash, then the body, little-endian. Every
// count and length is checked against the bytes left before it is used; any flaw and the cache is
// ignored and rebuilt. It is written under a temporary name and renamed, so that readers (other
// ranks indexing at once) see a whole file, the old or the new.
#include "runtime/train/data/ImageFolder.h"

#include "ir/Files.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace dtnn {
namespace {

constexpr char kMagic[8] = {'d', 't', 'n', 'n', 'I', 'D', 'X', '\n'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 + 8 + 8;
constexpr int64_t kRacyNs = 2'000'000'000;
// The most classes a list file numbers without class names ("0".."N-1" are made for them).
constexpr uint64_t kMaxNumberedClasses = 1 << 20;

// What a stamp is of: a folder of the walk, a link that dangled, or the list file.
enum StampKind : uint8_t { kFolder, kMissing, kListFile };

// The state of a path when the index was built; the index holds while every stamp does.
struct Stamp {
  StampKind kind;
  std::string path; // relative to ROOT; absolute for the list file
  uint64_t ino = 0;
  int64_t mtimeNs = 0;
  uint64_t size = 0; // the list file's
};

// An index with its stamps; its notes relative to ROOT until `finish`.
struct Built {
  ImageFolderIndex index;
  std::vector<Stamp> stamps;
};

// A 64-bit hash of bytes, eight at a time: names cache files and checks their bodies.
uint64_t hashBytes(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
  auto mix = [&h](uint64_t w) {
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
  };
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    mix(w);
  }
  uint64_t tail = 0;
  for (size_t k = 0; i + k < s.size(); ++k) tail |= uint64_t(uint8_t(s[i + k])) << (8 * k);
  mix(tail);
  return h ^ (h >> 29);
}

// Sixteen hex digits.
std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)v);
  return buf;
}

int64_t mtimeNs(const struct stat &st) {
  return int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// Half the machine's memory: the most a list or cache file may take to be read.
uint64_t readLimit() {
  long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && pageSize > 0 ? uint64_t(pages) * uint64_t(pageSize) / 2 : uint64_t(1) << 32;
}

// The canonical absolute path, or `path` itself when it has none.
std::string canonical(const std::string &path) {
  char *real = ::realpath(path.c_str(), nullptr);
  if (!real) return path;
  std::string out = real;
  ::free(real);
  return out;
}

std::string_view trim(std::string_view s) {
  const char *space = " \t\r\v\f";
  size_t begin = s.find_first_not_of(space);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(space) - begin + 1);
}

// ----- Walking folders -----

struct DirCloser {
  void operator()(DIR *d) const { ::closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

// Opens folder `name` of the folder open as `parentFd` (AT_FDCWD: of the working folder), at
// `path` for messages, and stats it.
Expected<DirPtr> openFolder(int parentFd, const char *name, const std::string &path,
                            struct stat &st) {
  int fd = ::openat(parentFd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *dir = fd >= 0 && ::fstat(fd, &st) == 0 ? ::fdopendir(fd) : nullptr;
  if (!dir) {
    int err = errno;
    if (fd >= 0) ::close(fd);
    return Error::make("cannot read folder " + path + ": " + std::strerror(err));
  }
  return DirPtr(dir);
}

// The non-hidden entries of a folder, sorted by name.
struct Listing {
  struct Entry {
    size_t offset; // of the name in `names`
    unsigned char type;
  };
  std::string names; // each ended by '\0'
  std::vector<Entry> entries;
  const char *name(const Entry &e) const { return names.data() + e.offset; }
};

// Reads the open folder `dir` (at `path`, for messages).
Expected<Listing> readEntries(DIR *dir, const std::string &path) {
  Listing l;
  for (;;) {
    errno = 0;
    const struct dirent *e = ::readdir(dir);
    if (!e) break;
    if (e->d_name[0] == '.') continue;
    l.entries.push_back({l.names.size(), e->d_type});
    l.names.append(e->d_name, std::strlen(e->d_name) + 1);
  }
  if (errno != 0) return Error::make("cannot read folder " + path + ": " + std::strerror(errno));
  std::sort(l.entries.begin(), l.entries.end(), [&l](const auto &a, const auto &b) {
    return std::strcmp(l.name(a), l.name(b)) < 0;
  });
  return l;
}

enum class Kind { File, Folder, Dangling, LinkLoop, Gone };

// What entry `name` of folder `folder` (open as `fd`) is: its d_type when that tells, else what
// a stat through links finds. A file is anything but a folder, as for os.walk.
Expected<Kind> kindOf(int fd, const char *name, unsigned char type, const std::string &folder) {
  if (type == DT_DIR) return Kind::Folder;
  if (type != DT_LNK && type != DT_UNKNOWN) return Kind::File;
  struct stat st;
  if (::fstatat(fd, name, &st, 0) == 0) return S_ISDIR(st.st_mode) ? Kind::Folder : Kind::File;
  int err = errno;
  if (err == ELOOP) return Kind::LinkLoop;
  if (err == ENOENT || err == ENOTDIR) {
    bool link = ::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
    return link ? Kind::Dangling : Kind::Gone; // Gone: removed since readdir
  }
  return Error::make("cannot stat " + folder + "/" + name + ": " + std::strerror(err));
}

// The class folders of ROOT (open as `dir`, stat `rootSt`): its non-hidden subfolders and links
// to folders, in byte order. Links that dangle or lead back to ROOT are left out, with a note
// (relative to ROOT) when `notes` is given.
Expected<std::vector<std::string>> listClasses(DIR *dir, const struct stat &rootSt,
                                               const std::string &root,
                                               std::vector<std::string> *notes) {
  Expected<Listing> listing = readEntries(dir, root);
  if (!listing) return listing.takeError();
  std::vector<std::string> classes;
  int fd = ::dirfd(dir);
  for (const Listing::Entry &e : listing->entries) {
    const char *name = listing->name(e);
    Expected<Kind> kind = kindOf(fd, name, e.type, root);
    if (!kind) return kind.takeError();
    struct stat st;
    bool loop = *kind == Kind::LinkLoop ||
                (*kind == Kind::Folder && e.type != DT_DIR && ::fstatat(fd, name, &st, 0) == 0 &&
                 st.st_dev == rootSt.st_dev && st.st_ino == rootSt.st_ino);
    if (loop && notes) notes->push_back(std::string(name) + ": a symbolic link loop, left out");
    if (*kind == Kind::Dangling && notes)
      notes->push_back(std::string(name) + ": a dangling symbolic link, left out");
    if (*kind == Kind::Folder && !loop) classes.push_back(name);
  }
  return classes;
}

// Walks the class folders of one ROOT into an index.
class Walker {
public:
  Walker(const std::string &root, const struct stat &rootSt, Built &out)
      : root_(root), out_(out), open_{{rootSt.st_dev, rootSt.st_ino}} {}

  // Appends the images of class folder `name` (of ROOT, open as `rootFd`) with label `label`.
  Error walkClass(int rootFd, const std::string &name, int32_t label);

private:
  // A folder's images: their paths are found_[begin, end).
  struct Folder {
    std::string rel;
    size_t begin, end;
  };
  Error walk(int parentFd, const char *name, const std::string &rel);

  const std::string &root_;
  Built &out_;
  std::vector<std::pair<dev_t, ino_t>> open_; // the folders on the current path, ROOT first
  std::string found_;                         // this class's image paths, each ended by '\0'
  std::vector<Folder> folders_;               // this class's folders, in walk order
};

Error Walker::walkClass(int rootFd, const std::string &name, int32_t label) {
  found_.clear();
  folders_.clear();
  if (Error err = walk(rootFd, name.c_str(), name)) return err;
  if (found_.empty()) return Error::make("class folder " + root_ + "/" + name + " has no images");
  std::sort(folders_.begin(), folders_.end(),
            [](const Folder &a, const Folder &b) { return a.rel < b.rel; });
  ImageFolderIndex &index = out_.index;
  for (const Folder &f : folders_) {
    for (size_t p = f.begin; p < f.end; p += std::strlen(found_.data() + p) + 1) {
      index.offsets.push_back(index.names.size() + (p - f.begin));
      index.labels.push_back(label);
    }
    index.names.append(found_, f.begin, f.end - f.begin);
  }
  return Error::success();
}

// Walks folder `name` of the folder open as `parentFd`, at `rel` under ROOT: stamps it, keeps its
// images, then walks its subfolders.
Error Walker::walk(int parentFd, const char *name, const std::string &rel) {
  std::string path = root_ + "/" + rel;
  struct stat st;
  Expected<DirPtr> dir = openFolder(parentFd, name, path, st);
  if (!dir) return dir.takeError();
  for (const auto &[dev, ino] : open_)
    if (dev == st.st_dev && ino == st.st_ino) {
      out_.index.notes.push_back(rel + ": a symbolic link loop, left out");
      return Error::success();
    }
  out_.stamps.push_back({kFolder, rel, uint64_t(st.st_ino), mtimeNs(st), 0});
  Expected<Listing> listing = readEntries(dir->get(), path);
  if (!listing) return listing.takeError();
  int fd = ::dirfd(dir->get());
  std::vector<const char *> subfolders;
  size_t begin = found_.size();
  for (const Listing::Entry &e : listing->entries) {
    const char *entry = listing->name(e);
    Expected<Kind> kind = kindOf(fd, entry, e.type, path);
    if (!kind) return kind.takeError();
    if (*kind == Kind::Folder) {
      subfolders.push_back(entry);
    } else if (*kind == Kind::File && isImageFileName(entry)) {
      found_.append(rel).append("/").append(entry).push_back('\0');
    } else if (*kind == Kind::File) {
      ++out_.index.skippedFiles;
    } else if (*kind == Kind::Dangling) {
      out_.index.notes.push_back(rel + "/" + entry + ": a dangling symbolic link, left out");
      out_.stamps.push_back({kMissing, rel + "/" + entry, 0, 0, 0});
    } else if (*kind == Kind::LinkLoop) {
      out_.index.notes.push_back(rel + "/" + entry + ": a symbolic link loop, left out");
    }
  }
  folders_.push_back({rel, begin, found_.size()});
  open_.push_back({st.st_dev, st.st_ino});
  Error err;
  for (size_t i = 0; i < subfolders.size() && !err; ++i)
    err = walk(fd, subfolders[i], rel + "/" + subfolders[i]);
  open_.pop_back();
  return err;
}

// Indexes the class folders of ROOT.
Expected<Built> buildFromFolders(const std::string &root) {
  Built b;
  struct stat rootSt;
  Expected<DirPtr> dir = openFolder(AT_FDCWD, root.c_str(), root, rootSt);
  if (!dir) return dir.takeError();
  Expected<std::vector<std::string>> classes =
      listClasses(dir->get(), rootSt, root, &b.index.notes);
  if (!classes) return classes.takeError();
  if (classes->empty()) return Error::make(root + " has no class folders");
  Walker walker(root, rootSt, b);
  for (size_t i = 0; i < classes->size(); ++i)
    if (Error err = walker.walkClass(::dirfd(dir->get()), (*classes)[i], int32_t(i))) return err;
  b.index.classes = std::move(*classes);
  return b;
}

// ----- List files -----

// The label of a list line: a class number or, with class names, a class name; sets `why`
// when there is none.
std::optional<int32_t> parseLabel(std::string_view s, size_t numClasses,
                                  const std::unordered_map<std::string_view, int32_t> &byName,
                                  std::string &why) {
  bool number = std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (number) {
    uint64_t limit = numClasses ? numClasses : kMaxNumberedClasses, v = 0;
    for (size_t i = 0; i < s.size() && v < limit; ++i) v = v * 10 + uint64_t(s[i] - '0');
    if (v < limit) return int32_t(v);
    why = numClasses ? "label " + std::string(s) + " is out of range: there are " +
                           std::to_string(numClasses) + " classes"
                     : "label " + std::string(s) + " is too large: at most " +
                           std::to_string(kMaxNumberedClasses) + " classes without class names";
    return std::nullopt;
  }
  if (auto it = byName.find(s); it != byName.end()) return it->second;
  why = numClasses ? "unknown class '" + std::string(s) + "'"
                   : "bad label '" + std::string(s) + "': not a class number";
  return std::nullopt;
}

// Parses the "path label" lines of list file `list` (its `text`) into `index`.
Error parseList(const std::string &list, std::string_view text, const std::string &root,
                const std::vector<std::string> &classes, ImageFolderIndex &index) {
  std::unordered_map<std::string_view, int32_t> byName;
  for (size_t i = 0; i < classes.size(); ++i)
    if (!byName.emplace(classes[i], int32_t(i)).second)
      return Error::make(list + ": class '" + classes[i] + "' is given twice");
  int64_t maxLabel = -1;
  size_t lineNo = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++lineNo;
    if (line.empty() || line[0] == '#') continue;
    auto fail = [&](const std::string &why) {
      return Error::make(list + ":" + std::to_string(lineNo) + ": " + why);
    };
    size_t cut = line.find_last_of(" \t");
    if (cut == std::string_view::npos)
      return fail("missing label after the path '" + std::string(line) + "'");
    std::string_view path = trim(line.substr(0, cut));
    if (path.find('\0') != std::string_view::npos) return fail("the path holds a NUL byte");
    if (path[0] == '/')
      return fail("the path " + std::string(path) + " is absolute; paths are relative to " + root);
    std::string why;
    std::optional<int32_t> label = parseLabel(line.substr(cut + 1), classes.size(), byName, why);
    if (!label) return fail(why);
    maxLabel = std::max<int64_t>(maxLabel, *label);
    index.offsets.push_back(index.names.size());
    index.names.append(path).push_back('\0');
    index.labels.push_back(*label);
  }
  if (index.labels.empty()) return Error::make(list + " lists no files");
  index.classes = classes;
  for (int64_t c = 0; classes.empty() && c <= maxLabel; ++c)
    index.classes.push_back(std::to_string(c));
  return Error::success();
}

// Indexes the list file of `opts`, whose paths are relative to ROOT.
Expected<Built> buildFromList(const std::string &root, const ImageFolderOptions &opts) {
  const std::string &list = opts.listFile;
  uint64_t size = 0;
  Expected<FilePtr> f = openRegularFile(list, size, "list file");
  if (!f) return Error::make(list + ": " + f.error().message());
  struct stat st;
  if (::fstat(::fileno(f->get()), &st) != 0)
    return Error::make(list + ": cannot stat: " + std::strerror(errno));
  if (size > readLimit())
    return Error::make(list + ": too large (" + std::to_string(size) + " bytes)");
  std::string text(size_t(size), '\0');
  if (size && std::fread(text.data(), 1, text.size(), f->get()) != text.size())
    return Error::make(list + ": read error");
  Built b;
  b.stamps.push_back({kListFile, canonical(list), uint64_t(st.st_ino), mtimeNs(st), size});
  if (Error err = parseList(list, text, root, opts.classes, b.index)) return err;
  return b;
}

// ----- The cache -----

// Appends little-endian integers and length-prefixed strings.
struct Out {
  void u8(uint8_t v) { s.push_back(char(v)); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) s.push_back(char(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) s.push_back(char(v >> (8 * i)));
  }
  void str(std::string_view v) {
    u64(v.size());
    s.append(v);
  }
  std::string s;
};

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

// The cache file for `b`, built for `key`.
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

// The index in cache file `path`, if it is a sound cache for `key` and still holds for ROOT.
std::optional<Built> loadCache(const std::string &path, const std::string &key,
                               const std::string &root, bool walk) {
  std::optional<Built> b;
  if (std::optional<std::string> bytes = readCacheFile(path)) b = decodeCache(*bytes, key);
  if (!b || !stampsHold(root, b->stamps)) return std::nullopt;
  if (!walk) return b;
  struct stat rootSt;
  Expected<DirPtr> dir = openFolder(AT_FDCWD, root.c_str(), root, rootSt);
  if (!dir) return std::nullopt;
  Expected<std::vector<std::string>> classes = listClasses(dir->get(), rootSt, root, nullptr);
  if (!classes || *classes != b->index.classes) return std::nullopt;
  return b;
}

// A cache file being written: a temporary file beside it, renamed over it once complete,
// removed if never completed.
class CacheWriter {
public:
  CacheWriter() = default;
  CacheWriter(const CacheWriter &) = delete;
  CacheWriter &operator=(const CacheWriter &) = delete;
  ~CacheWriter() {
    if (fd_ >= 0) ::close(fd_);
    if (!temp_.empty()) ::unlink(temp_.c_str());
  }

  // Makes the temporary file of cache file `path`, and its folder if need be; false when `path`
  // is something other than a regular file or its folder takes no new file.
  bool begin(const std::string &path) {
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
  bool isOpen() const { return fd_ >= 0; }
  // The file system's time when the temporary file was made.
  int64_t startNs() const { return startNs_; }

  // Writes `bytes` and renames the file over the cache; on any failure the cache stays as it was.
  void commit(const std::string &bytes) {
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

private:
  int fd_ = -1;
  std::string temp_, path_;
  int64_t startNs_ = INT64_MIN;
};

// Whether a stamp is so recent that a change in the same clock tick could hide behind it.
bool racy(const std::vector<Stamp> &stamps, int64_t startNs) {
  return std::any_of(stamps.begin(), stamps.end(), [startNs](const Stamp &s) {
    return s.kind != kMissing && (startNs == INT64_MIN || s.mtimeNs > startNs - kRacyNs);
  });
}

// The user's cache folder for indexes of read-only data: "" when there is none.
std::string userCacheFolder(const ImageFolderOptions &opts) {
  if (!opts.cacheDir.empty()) return opts.cacheDir;
  const char *xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/dtnn";
  const char *home = std::getenv("HOME");
  if (home && home[0]) return std::string(home) + "/.cache/dtnn";
  return "";
}

// The index as returned: its root, its notes as full paths, compact storage.
ImageFolderIndex finish(const std::string &root, Built &&b, bool fromCache) {
  ImageFolderIndex index = std::move(b.index);
  index.root = root;
  for (std::string &note : index.notes) note = root + "/" + note;
  index.fromCache = fromCache;
  index.names.shrink_to_fit();
  index.offsets.shrink_to_fit();
  index.labels.shrink_to_fit();
  return index;
}

} // namespace

std::string ImageFolderIndex::path(int64_t i) const {
  if (root.empty()) return relative(i);
  return root + (root.back() == '/' ? "" : "/") + relative(i);
}

bool isImageFileName(const std::string &name) {
  auto endsWith = [&name](std::string_view ext) {
    if (name.size() < ext.size()) return false;
    for (size_t i = 0, at = name.size() - ext.size(); i < ext.size(); ++i) {
      char c = name[at + i];
      if ((c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c) != ext[i]) return false;
    }
    return true;
  };
  return endsWith(".jpg") || endsWith(".jpeg") || endsWith(".png");
}

Expected<ImageFolderIndex> indexImageFolder(const std::string &rootArg,
                                            const ImageFolderOptions &opts) {
  std::string root = rootArg;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  struct stat st;
  if (::stat(root.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return Error::make(root + " does not exist");
    return Error::make("cannot read folder " + root + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return Error::make(root + " is not a folder");

  // What the index depends on besides the tree: the folder's absolute path, the list, the classes.
  bool walk = opts.listFile.empty();
  Out listKey;
  listKey.str(walk ? "walk" : "list");
  if (!walk) {
    listKey.str(canonical(opts.listFile));
    listKey.u64(opts.classes.size());
    for (const std::string &c : opts.classes) listKey.str(c);
  }
  Out key;
  key.str(canonical(root));
  key.str(listKey.s);
  std::vector<std::string> cacheFiles = {
      root + "/.dtnn-index" + (walk ? "" : "-" + hex16(hashBytes(listKey.s)))};
  if (std::string folder = userCacheFolder(opts); !folder.empty())
    cacheFiles.push_back(folder + "/index-" + hex16(hashBytes(key.s)));

  CacheWriter writer;
  if (opts.useCache) {
    for (const std::string &file : cacheFiles)
      if (std::optional<Built> b = loadCache(file, key.s, root, walk))
        return finish(root, std::move(*b), true);
    for (const std::string &file : cacheFiles)
      if (writer.begin(file)) break;
  }
  Expected<Built> built = walk ? buildFromFolders(root) : buildFromList(root, opts);
  if (!built) return built.takeError();
  if (writer.isOpen() && !racy(built->stamps, writer.startNs()))
    writer.commit(encodeCache(key.s, *built));
  return finish(root, std::move(*built), false);
}

} // namespace dtnn
