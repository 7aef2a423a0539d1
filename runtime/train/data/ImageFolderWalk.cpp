// The walk of an image folder's class folders and the reading of list files (ImageFolder.cpp
// says how they work), each into an index with the stamps that tell when it no longer holds.
#include "runtime/train/data/ImageFolderParts.h"

#include "ir/Files.h"

#include <dirent.h>
#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <unordered_map>

namespace dtnn::imagefolder {
namespace {

// The most classes a list file numbers without class names ("0".."N-1" are made for them).
constexpr uint64_t kMaxNumberedClasses = 1 << 20;

std::string_view trim(std::string_view s) {
  const char *space = " \t\r\v\f";
  size_t begin = s.find_first_not_of(space);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(space) - begin + 1);
}

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

} // namespace

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

std::optional<std::vector<std::string>> classFolders(const std::string &root) {
  struct stat rootSt;
  Expected<DirPtr> dir = openFolder(AT_FDCWD, root.c_str(), root, rootSt);
  if (!dir) {
    dir.takeError();
    return std::nullopt;
  }
  Expected<std::vector<std::string>> classes = listClasses(dir->get(), rootSt, root, nullptr);
  if (!classes) {
    classes.takeError();
    return std::nullopt;
  }
  return std::move(*classes);
}

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

} // namespace dtnn::imagefolder
