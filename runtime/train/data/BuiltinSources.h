// The table behind the built-in data sources (Sources.cpp) and what their loaders share; the
// loaders of image files (ImageSources.cpp) live apart from the others. Internal to the data
// layer.
#pragma once

#include "runtime/train/data/Sources.h"

#include <string>
#include <vector>

namespace dtnn::sources {

struct Source;
using LoadFn = Expected<DataSplits> (*)(const Source &src, const DataSpec &spec,
                                        const std::string &dir, uint64_t seed);

// One built-in data source.
struct Source {
  const char *name;
  std::vector<ir::ChoiceArg> args;
  const char *summary;
  LoadFn load;
  Normalization norm;             // Usual normalization of the source.
  const char *defaultDir;         // Directory of the files, or "" if the source has none.
  const char *hint;               // How to provide missing files.
  bool isDefault = false;         // The source of a run that names none.
};

// Returns "a x b x c" for a shape.
std::string shapeStr(const std::vector<int64_t> &shape);

// Describes the sizes of splits; the caller adds where they came from.
std::string describe(const Source &src, const DataSplits &s);

// Argument `name` of spec, or def when it is absent. loadData has made every argument of the
// kind the run-settings schema declares for it.
template <typename T> T getArg(const DataSpec &spec, const std::string &name, T def) {
  const ir::AttrValue *v = spec.args.find(name);
  return v ? std::get<T>(*v) : def;
}

// Returns the directory of a file-backed source: the override, the `dir` argument or the
// default, checked to exist.
Expected<std::string> sourceDir(const Source &src, const DataSpec &spec,
                                const std::string &override);

// A folder of image files in ImageNet's layout (image_folder, imagenet).
Expected<DataSplits> loadImageFolder(const Source &src, const DataSpec &spec,
                                     const std::string &dir, uint64_t seed);

// PyDTNN's ImageNet chunks (npz_chunks).
Expected<DataSplits> loadNpzChunks(const Source &src, const DataSpec &spec,
                                   const std::string &dir, uint64_t seed);

} // namespace dtnn::sources
