// The parts of an image folder's index (ImageFolder.cpp, which says how it works): the walk of
// the class folders and the list files (ImageFolderWalk.cpp), and the cache file
// (ImageFolderCache.cpp). Internal to the data sources.
#pragma once

#include "ir/Error.h"
#include "runtime/train/data/ImageFolder.h"

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtnn::imagefolder {

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

// Helpers (ImageFolder.cpp).
// A 64-bit hash of bytes, eight at a time: names cache files and checks their bodies.
uint64_t hashBytes(std::string_view s);
// Sixteen hex digits.
std::string hex16(uint64_t v);
int64_t mtimeNs(const struct stat &st);
// Half the machine's memory: the most a list or cache file may take to be read.
uint64_t readLimit();
// The canonical absolute path, or `path` itself when it has none.
std::string canonical(const std::string &path);

// The walk and the list files (ImageFolderWalk.cpp).
// Indexes the class folders of ROOT.
Expected<Built> buildFromFolders(const std::string &root);
// Indexes the list file of `opts`, whose paths are relative to ROOT.
Expected<Built> buildFromList(const std::string &root, const ImageFolderOptions &opts);
// The class folders of ROOT as a walk finds them; nullopt when ROOT cannot be read.
std::optional<std::vector<std::string>> classFolders(const std::string &root);

// The cache (ImageFolderCache.cpp).
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

// The cache file for `b`, built for `key`.
std::string encodeCache(const std::string &key, const Built &b);
// The index in cache file `path`, if it is a sound cache for `key` whose stamps still hold
// under ROOT (the caller checks ROOT's class folders).
std::optional<Built> loadCache(const std::string &path, const std::string &key,
                               const std::string &root);
// Whether a stamp is so recent that a change in the same clock tick could hide behind it.
bool racy(const std::vector<Stamp> &stamps, int64_t startNs);

// A cache file being written: a temporary file beside it, renamed over it once complete,
// removed if never completed.
class CacheWriter {
public:
  CacheWriter() = default;
  CacheWriter(const CacheWriter &) = delete;
  CacheWriter &operator=(const CacheWriter &) = delete;
  ~CacheWriter();

  // Makes the temporary file of cache file `path`, and its folder if need be; false when `path`
  // is something other than a regular file or its folder takes no new file.
  bool begin(const std::string &path);
  bool isOpen() const { return fd_ >= 0; }
  // The file system's time when the temporary file was made.
  int64_t startNs() const { return startNs_; }
  // Writes `bytes` and renames the file over the cache; on any failure the cache stays as it was.
  void commit(const std::string &bytes);

private:
  int fd_ = -1;
  std::string temp_, path_;
  int64_t startNs_ = INT64_MIN;
};

} // namespace dtnn::imagefolder
