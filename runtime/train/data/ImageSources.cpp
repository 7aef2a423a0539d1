// The data sources of image files: folders of JPEG and PNG files in ImageNet's layout, read as
// batches need them, and PyDTNN's NPZ chunks, decompressed as batches need them or read into
// memory.
#include "runtime/train/data/BuiltinSources.h"

#include "ir/Attributes.h"
#include "runtime/train/data/ImageFolder.h"
#include "runtime/train/data/Npz.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <tuple>

namespace dtnn::sources {
namespace {

namespace fs = std::filesystem;

// Indexes split folder root/name (or its list file) of an image folder source; `classes` are
// the training split's, which a test split's labels follow.
Expected<Dataset> indexSplit(const Source &src, const DataSpec &spec, const std::string &root,
                             const std::string &name, const std::string &list,
                             const std::vector<std::string> *classes) {
  std::string folder = (fs::path(root) / name).string();
  ImageFolderOptions opts;
  opts.listFile = list.empty() ? "" : (fs::path(root) / list).string();
  if (classes) opts.classes = *classes;
  Expected<ImageFolderIndex> index = indexImageFolder(folder, opts);
  if (!index) return Error::make(std::string(src.name) + ": " + index.error().message());
  Dataset d;
  d.count = index->count();
  d.sampleShape = {3, 0, 0}; // the run sets the model's size
  d.labels = index->labels;
  if (classes && list.empty()) {
    // The test folder's classes, numbered as the training folder's.
    for (int32_t &label : d.labels) {
      const std::string &c = index->classes[size_t(label)];
      auto at = std::find(classes->begin(), classes->end(), c);
      if (at == classes->end())
        return Error::make(std::string(src.name) + ": class folder " + folder + "/" + c +
                           " is not a class of the training folder");
      label = int32_t(at - classes->begin());
    }
    d.classNames = *classes;
  } else {
    d.classNames = index->classes;
  }
  d.numClasses = int32_t(d.classNames.size());
  d.maxPixels = getArg<int64_t>(spec, "max_pixels", kDefaultMaxImagePixels);
  d.skipBadImages = getArg<std::string>(spec, "bad_images", "skip") == "skip";
  d.files = std::make_shared<ImageFolderIndex>(std::move(*index));
  return d;
}

// Indexes the .npz chunks of folder `dir` (in name order): `x` uint8 [N, C, S, S] (its header
// alone) and `y` the labels, less `offset`. The pixels are read into memory when inMemory, else
// decompressed a chunk at a time as batches need them, `window` chunks shuffled together.
Expected<Dataset> readNpzChunks(const Source &src, const std::string &dir, int64_t offset,
                                bool inMemory, int64_t window) {
  std::string name = src.name;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".npz") files.push_back(e.path().string());
  if (ec) return Error::make(name + ": cannot list " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty()) return Error::make(name + ": " + dir + " has no .npz files; " + src.hint);
  Dataset d;
  std::vector<int64_t> counts;
  for (const std::string &f : files) {
    Expected<NpyArray> x = inMemory ? readNpzArray(f, "x") : readNpzHeader(f, "x");
    if (!x) return x.takeError();
    Expected<NpyArray> y = readNpzArray(f, "y");
    if (!y) return y.takeError();
    if (x->dtype != "|u1" || x->shape.size() != 4)
      return Error::make(f + ": 'x' is " + x->dtype + " of rank " + std::to_string(x->shape.size()) +
                         "; PyDTNN's chunks hold uint8 images [N, C, H, W]");
    std::vector<int64_t> sample(x->shape.begin() + 1, x->shape.end());
    if (d.count && sample != d.sampleShape)
      return Error::make(f + ": its images are " + shapeStr(sample) + ", those of " + files[0] +
                         " " + shapeStr(d.sampleShape));
    Expected<std::vector<int32_t>> labels = npyLabels(*y, offset);
    if (!labels) return Error::make(f + ": " + labels.error().message());
    if (int64_t(labels->size()) != x->shape[0])
      return Error::make(f + ": 'x' holds " + std::to_string(x->shape[0]) + " images but 'y' " +
                         std::to_string(labels->size()) + " labels");
    d.sampleShape = sample;
    d.count += x->shape[0];
    counts.push_back(x->shape[0]);
    d.pixels.insert(d.pixels.end(), x->data.begin(), x->data.end());
    d.labels.insert(d.labels.end(), labels->begin(), labels->end());
  }
  for (int32_t l : d.labels) d.numClasses = std::max(d.numClasses, l + 1);
  if (!inMemory)
    d.chunks = std::make_shared<NpzChunks>(std::move(files), counts, d.sampleShape, window);
  return d;
}

} // namespace

// A folder of image files in ImageNet's layout, root/train/<class>/... and root/val/<class>/...
// (the `train` and `test` arguments name the split folders; `train_list` and `test_list` name
// files of "path label" lines instead of class folders), read as batches need them.
Expected<DataSplits> loadImageFolder(const Source &src, const DataSpec &spec,
                                     const std::string &dir, uint64_t) {
  std::string name = src.name;
  std::string bad = getArg<std::string>(spec, "bad_images", "skip");
  if (bad != "skip" && bad != "fail")
    return Error::make(name + ": 'bad_images' must be \"skip\" or \"fail\", got \"" + bad + "\"");
  int64_t maxPixels = getArg<int64_t>(spec, "max_pixels", kDefaultMaxImagePixels);
  if (maxPixels < 1)
    return Error::make(name + ": 'max_pixels' must be positive, got " + std::to_string(maxPixels));
  int64_t resize = getArg<int64_t>(spec, "resize", 0);
  if (resize < 0 || resize > 65536)
    return Error::make(name + ": 'resize' must be in 0..65536 (0: the model's size / 0.875), got " +
                       std::to_string(resize));
  Expected<std::string> root = sourceDir(src, spec, dir);
  if (!root) return root.takeError();
  DataSplits s;
  Expected<Dataset> train =
      indexSplit(src, spec, *root, getArg<std::string>(spec, "train", "train"),
                 getArg<std::string>(spec, "train_list", ""), nullptr);
  if (!train) return train.takeError();
  s.train = std::move(*train);
  Expected<Dataset> test =
      indexSplit(src, spec, *root, getArg<std::string>(spec, "test", "val"),
                 getArg<std::string>(spec, "test_list", ""), &s.train.classNames);
  if (!test) return test.takeError();
  s.test = std::move(*test);
  s.images.resize = resize;
  s.images.dctScaling = getArg<bool>(spec, "dct_scaling", true);
  auto mean = getArg<std::vector<double>>(spec, "mean", {});
  auto stddev = getArg<std::vector<double>>(spec, "std", {});
  if (mean.size() != stddev.size() || (mean.size() != 0 && mean.size() != 1 && mean.size() != 3))
    return Error::make(name + ": 'mean' and 'std' need one value or one per channel (3) each");
  for (size_t c = 0; c < mean.size(); ++c) {
    if (!(stddev[c] > 0))
      return Error::make(name + ": 'std' must be positive, got " + ir::attrValueStr(stddev));
    s.norm.mean.push_back(float(mean[c]));
    s.norm.std.push_back(float(stddev[c]));
  }
  s.description = describe(src, s) + ", from " + *root;
  for (const Dataset *d : {&s.train, &s.test}) {
    if (d->files->fromCache) continue;
    if (int64_t n = d->files->skippedFiles)
      s.description += "; " + std::to_string(n) + (n == 1 ? " file" : " files") + " of " +
                       d->files->root + (n == 1 ? " is" : " are") +
                       " no image by its name, left out";
    for (const std::string &note : d->files->notes) s.description += "; " + note;
  }
  return s;
}

// PyDTNN's ImageNet chunks: folders of .npz files, dir/train and dir/val by default.
Expected<DataSplits> loadNpzChunks(const Source &src, const DataSpec &spec,
                                   const std::string &dir, uint64_t) {
  Expected<std::string> root = sourceDir(src, spec, dir);
  if (!root) return root.takeError();
  int64_t offset = getArg<int64_t>(spec, "label_offset", 0);
  int64_t window = getArg<int64_t>(spec, "window", 4);
  if (window < 1 || window > 4096)
    return Error::make(std::string(src.name) + ": 'window' must be in 1..4096 chunks, got " +
                       std::to_string(window));
  bool inMemory = getArg<bool>(spec, "in_memory", false);
  DataSplits s;
  for (auto [set, arg, def] : {std::tuple{&s.train, "train", "train"},
                               std::tuple{&s.test, "test", "val"}}) {
    Expected<Dataset> d =
        readNpzChunks(src, (fs::path(*root) / getArg<std::string>(spec, arg, def)).string(),
                      offset, inMemory, window);
    if (!d) return d.takeError();
    *set = std::move(*d);
  }
  int32_t classes = std::max(s.train.numClasses, s.test.numClasses);
  s.train.numClasses = s.test.numClasses = classes;
  // ImageNet's normalization for RGB chunks; others are scaled to [0, 1].
  if (s.train.sampleShape[0] != 3) s.norm = {{0.0f}, {1.0f}};
  s.description = describe(src, s) + ", from " + *root;
  if (!inMemory)
    s.description += "; " + std::to_string(s.train.chunks->chunks()) +
                     " training chunks decompressed as batches need them, " +
                     std::to_string(window) + " shuffled together";
  return s;
}

} // namespace dtnn::sources
