// The index of a folder of images in torchvision's ImageFolder layout: ROOT/<class>/<file>, files
// possibly in subfolders of a class folder, classes sorted by name (byte order, as Python sorts
// them) and numbered from 0; or, instead of the class folders, a list file of "path label" lines.
// Building an index walks the whole tree; it is saved in a cache (beside the data, or in the
// user's cache folder when the data folder is read-only) and reused while no folder of the tree
// has changed. It stores the paths compactly: a few tens of bytes per file.
#pragma once

#include "ir/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn {

struct ImageFolderIndex {
  std::string root;                  // the folder the paths are relative to
  std::vector<std::string> classes;  // class names, label i is classes[i]
  std::vector<int32_t> labels;       // per file
  std::string names;                 // the relative paths, each ended by '\0'
  std::vector<uint64_t> offsets;     // per file: where its path starts in `names`
  int64_t skippedFiles = 0;          // files that are no image by their name (README.txt)
  std::vector<std::string> notes;    // what the walk left out and why (a symbolic link loop)
  bool fromCache = false;            // the index was read from its cache

  int64_t count() const { return int64_t(labels.size()); }
  // The relative path of file i, and its full path (root/relative).
  const char *relative(int64_t i) const { return names.data() + offsets[size_t(i)]; }
  std::string path(int64_t i) const;
};

struct ImageFolderOptions {
  // A file of "relative/path label" lines (label: a class number, or a class name of
  // `classes`); "" to walk the class folders.
  std::string listFile;
  // Class names for a list file with numbered labels (a val list numbered like the train
  // folder's classes); may be empty.
  std::vector<std::string> classes;
  // Where to keep the cache when ROOT is not writable; "" for $XDG_CACHE_HOME/dtnn or
  // ~/.cache/dtnn.
  std::string cacheDir;
  bool useCache = true;
};

// Whether a file name is an image the pipeline decodes: .jpg, .jpeg, .png in any case.
bool isImageFileName(const std::string &name);

// Indexes ROOT. Errors name the path: "ROOT does not exist", "ROOT has no class folders",
// "class folder ROOT/c has no images" (torchvision refuses those too, since the labels would
// shift), "LIST:12: ...". Symbolic links are followed; a link loop is left out with a note.
Expected<ImageFolderIndex> indexImageFolder(const std::string &root,
                                            const ImageFolderOptions &opts = {});

} // namespace dtnn
