// The index of an image folder, and its cache: what follows says how both work; the walk and
// the list files are in ImageFolderWalk.cpp, the cache file in ImageFolderCache.cpp, and this
// file ties them together (indexImageFolder).
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

#include "runtime/train/data/ImageFolderParts.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string_view>

namespace dtnn {
namespace imagefolder {

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

} // namespace imagefolder

namespace {

using namespace imagefolder;

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
      if (std::optional<Built> b = loadCache(file, key.s, root)) {
        // A walk's index holds while ROOT has the same class folders (ROOT itself is not
        // stamped: writing the cache beside the data changes its mtime).
        if (walk && classFolders(root) != b->index.classes) continue;
        return finish(root, std::move(*b), true);
      }
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
