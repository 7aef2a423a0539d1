// The data source registry and the built-in sources. Each built-in source is one row of a
// table: its name, its arguments, how to load it, the usual normalization and where its files
// come from; each row is registered through registerDataSource. Loading checks the arguments first, then
// the directory, then each file, so the first error is the most useful one.
#include "runtime/train/data/Sources.h"

#include "ir/Diagnostics.h"
#include "ir/Files.h"
#include "ir/Registry.h"
#include "ir/SettingChoices.h"
#include "runtime/train/data/BuiltinSources.h"
#include "runtime/train/data/Cifar.h"
#include "runtime/train/data/Idx.h"
#include "runtime/train/data/Synthetic.h"
#include "runtime/train/data/Text.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <tuple>

namespace dtnn {
namespace sources {

namespace fs = std::filesystem;

// Returns "a x b x c" for a shape.
std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

// Describes the sizes of splits; the caller adds where they came from.
std::string describe(const Source &src, const DataSplits &s) {
  if (s.train.tokenSamples)
    return std::string(src.name) + ": " + std::to_string(s.train.count) + " train, " +
           std::to_string(s.test.count) + " held-out sequences of " +
           std::to_string(s.train.sampleShape[0]) + " " +
           (s.train.vocab.bytes() ? "bytes"
                                  : "characters (a vocabulary of " +
                                        std::to_string(s.train.numClasses) + ")");
  if (s.train.files)
    return std::string(src.name) + ": " + std::to_string(s.train.count) + " train, " +
           std::to_string(s.test.count) + " test image files, " +
           std::to_string(s.train.numClasses) + " classes";
  return std::string(src.name) + ": " + std::to_string(s.train.count) + " train, " +
         std::to_string(s.test.count) + " test samples of " + shapeStr(s.train.sampleShape) +
         ", " + std::to_string(s.train.numClasses) + " classes";
}

// Returns the directory of a file-backed source: the override, the `dir` argument or the
// default, checked to exist.
Expected<std::string> sourceDir(const Source &src, const DataSpec &spec,
                                const std::string &override) {
  std::string dir = override.empty() ? getArg<std::string>(spec, "dir", src.defaultDir) : override;
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return Error::make(std::string(src.name) + ": data directory " + dir + " does not exist; " +
                       src.hint);
  if (!S_ISDIR(st.st_mode))
    return Error::make(std::string(src.name) + ": " + dir + " is " +
                       (S_ISREG(st.st_mode) ? "a file" : fileTypeName(st.st_mode)) +
                       ", not a data directory; " + src.hint);
  return dir;
}

} // namespace sources

namespace {

using namespace sources;

// Returns dir/stem or dir/stem.gz, whichever exists, preferring the uncompressed file. Reading
// it reports one that is not a regular file (a directory, a FIFO) as such.
Expected<std::string> findIdx(const Source &src, const std::string &dir, const std::string &stem) {
  std::string plain = (fs::path(dir) / stem).string();
  std::error_code ec;
  if (fs::exists(plain, ec))
    return plain;
  if (fs::exists(plain + ".gz", ec))
    return plain + ".gz";
  return Error::make(std::string(src.name) + ": neither " + plain + ".gz nor " + plain +
                     " exists; " + src.hint);
}

// Reads one IDX split, prefix "train" or "t10k", from dir.
Expected<Dataset> readIdxSplit(const Source &src, const std::string &dir,
                               const std::string &prefix) {
  Expected<std::string> images = findIdx(src, dir, prefix + "-images-idx3-ubyte");
  if (!images)
    return images.takeError();
  Expected<std::string> labels = findIdx(src, dir, prefix + "-labels-idx1-ubyte");
  if (!labels)
    return labels.takeError();
  return readIdx(*images, *labels);
}

Expected<DataSplits> loadIdx(const Source &src, const DataSpec &spec, const std::string &dir,
                             uint64_t) {
  Expected<std::string> root = sourceDir(src, spec, dir);
  if (!root)
    return root.takeError();
  DataSplits s;
  for (auto [set, prefix] : {std::pair{&s.train, "train"}, std::pair{&s.test, "t10k"}}) {
    Expected<Dataset> data = readIdxSplit(src, *root, prefix);
    if (!data)
      return data.takeError();
    *set = std::move(*data);
  }
  s.description = describe(src, s) + ", from " + *root;
  return s;
}

Expected<DataSplits> loadCifar10(const Source &src, const DataSpec &spec, const std::string &dir,
                                 uint64_t) {
  Expected<std::string> root = sourceDir(src, spec, dir);
  if (!root)
    return root.takeError();
  std::vector<std::string> trainFiles;
  for (int i = 1; i <= 5; ++i)
    trainFiles.push_back("data_batch_" + std::to_string(i) + ".bin");
  DataSplits s;
  for (auto [set, files] : {std::pair{&s.train, trainFiles},
                            std::pair{&s.test, std::vector<std::string>{"test_batch.bin"}}}) {
    std::vector<std::string> paths;
    for (const std::string &f : files) {
      std::string path = (fs::path(*root) / f).string();
      std::error_code ec;
      if (!fs::exists(path, ec))
        return Error::make(std::string(src.name) + ": " + path + " does not exist; " + src.hint);
      paths.push_back(path);
    }
    Expected<Dataset> data = readCifar10(paths);
    if (!data)
      return data.takeError();
    *set = std::move(*data);
  }
  s.description = describe(src, s) + ", from " + *root;
  return s;
}

// The text of the folder or file `dir` (or the `dir` argument, or the default) as a language
// model's data: byte or character tokens, the last `held_out` of the bytes held out (as
// bench/char_trigram.py splits them), cut into sequences of `seq_len` tokens. The training
// sequences are whole; the held-out ones cover every held-out token once, the last padded.
Expected<DataSplits> loadText(const Source &src, const DataSpec &spec, const std::string &dir,
                              uint64_t) {
  std::string name = src.name;
  std::string path = dir.empty() ? getArg<std::string>(spec, "dir", src.defaultDir) : dir;
  std::string level = getArg<std::string>(spec, "level", "byte");
  double heldOut = getArg<double>(spec, "held_out", 0.05);
  int64_t seqLen = getArg<int64_t>(spec, "seq_len", 0);
  if (level != "byte" && level != "char")
    return Error::make(name + ": 'level' must be \"byte\" or \"char\", got \"" + level + "\"");
  if (!(heldOut > 0 && heldOut < 1))
    return Error::make(name + ": 'held_out' must be a fraction in (0, 1), got " +
                       ir::attrValueStr(heldOut));
  if (seqLen < 1)
    return Error::make(name + ": 'seq_len' must be positive, got " + std::to_string(seqLen) +
                       " (a model taking i32[N, T] sets it to T)");
  std::vector<std::string> files;
  Expected<std::string> text = readTextCorpus(path, files);
  if (!text) return Error::make(name + ": " + text.error().message() + "; " + src.hint);
  Vocabulary vocab = makeVocabulary(*text, level == "char");
  size_t held = size_t(double(text->size()) * heldOut), cut = text->size() - held;
  DataSplits s;
  for (auto [set, part, pad] : {std::tuple{&s.train, text->substr(0, cut), false},
                                std::tuple{&s.test, text->substr(cut), true}}) {
    std::vector<uint8_t> lengths;
    auto tokens = tokenize(part, vocab, &lengths);
    if (!tokens) return Error::make(name + ": " + tokens.error().message());
    *set = makeSequences(*tokens, lengths, seqLen, pad, vocab, -100);
    if (set->count == 0)
      return Error::make(name + ": the " + (pad ? "held-out" : "training") + " split of " + path +
                         " has " + std::to_string(tokens->size()) +
                         (tokens->size() == 1 ? " token" : " tokens") + ", too few for one " +
                         "sequence of " + std::to_string(seqLen) + " and its next token");
  }
  s.description = describe(src, s) + ", from " + std::to_string(files.size()) +
                  (files.size() == 1 ? " file (" : " files (") + std::to_string(text->size()) +
                  " bytes) of " + path + ", the last " + std::to_string(held) + " bytes held out";
  return s;
}

// Returns samples [begin, end) of data.
Dataset slice(const Dataset &data, int64_t begin, int64_t end) {
  int64_t numel = data.count ? int64_t(data.pixels.size()) / data.count : 0;
  Dataset out;
  out.count = end - begin;
  out.sampleShape = data.sampleShape;
  out.numClasses = data.numClasses;
  out.pixels.assign(data.pixels.begin() + begin * numel, data.pixels.begin() + end * numel);
  out.labels.assign(data.labels.begin() + begin, data.labels.begin() + end);
  return out;
}

Expected<DataSplits> loadSynthetic(const Source &src, const DataSpec &spec, const std::string &,
                                   uint64_t seed) {
  auto shape = getArg<std::vector<int64_t>>(spec, "shape", {1, 28, 28});
  auto classes = getArg<int64_t>(spec, "classes", 10);
  auto train = getArg<int64_t>(spec, "train_size", 6000);
  auto test = getArg<int64_t>(spec, "test_size", 1000);
  std::string name = src.name;
  // Bounds keep the total size below 4 GiB and every product free of overflow.
  constexpr int64_t kMaxBytes = int64_t(1) << 32;
  if (shape.empty() || shape.size() > 8)
    return Error::make(name + ": 'shape' must have 1 to 8 dimensions, got " +
                       ir::attrValueStr(shape));
  int64_t bytes = 1;
  for (int64_t d : shape) {
    if (d < 1)
      return Error::make(name + ": 'shape' dimensions must be positive, got " +
                         ir::attrValueStr(shape));
    bytes = std::min(bytes * std::min(d, kMaxBytes + 1), kMaxBytes + 1);
  }
  if (classes < 1 || classes > 65536)
    return Error::make(name + ": 'classes' must be in 1..65536, got " +
                       std::to_string(classes));
  if (train < 1 || test < 1)
    return Error::make(name + ": 'train_size' and 'test_size' must be positive, got train_size=" +
                       std::to_string(train) + ", test_size=" + std::to_string(test));
  // Sizes past the limit on their own would overflow the sum below.
  if (bytes > kMaxBytes || train > kMaxBytes || test > kMaxBytes || bytes > kMaxBytes / (train + test))
    return Error::make(name + ": " + std::to_string(train) + " + " + std::to_string(test) +
                       " samples of " + shapeStr(shape) +
                       " exceed the 4 GiB limit of synthetic data");
  Dataset all = makeSynthetic(shape, int32_t(classes), train + test, seed);
  DataSplits s;
  s.train = slice(all, 0, train);
  s.test = slice(all, train, train + test);
  s.description = describe(src, s) + ", seed " + std::to_string(seed);
  return s;
}

ir::Registry<DataSourceDef> &registry() {
  static ir::Registry<DataSourceDef> sources("data source");
  return sources;
}

} // namespace

Error registerDataSource(DataSourceDef def, const std::string &origin) {
  if (!def.load) return Error::make("data source '" + def.name + "' of " + origin + " loads nothing");
  ir::SettingChoice choice{def.name, def.args, def.summary, def.isDefault};
  return ir::registerChoiceEntry(registry(), "data", std::move(choice), std::move(def), origin);
}

Error registerBuiltinDataSources() {
  static bool done = false;
  if (done) return Error::success();
  done = true;
  using K = ir::AttrKind;
  std::vector<ir::ChoiceArg> dirArg = {{"dir", K::String}};
  std::vector<ir::ChoiceArg> imageArgs = {
      {"dir", K::String},        {"train", K::String},      {"test", K::String},
      {"train_list", K::String}, {"test_list", K::String},  {"bad_images", K::String},
      {"max_pixels", K::Int},    {"resize", K::Int},        {"dct_scaling", K::Bool},
      {"mean", K::Floats},       {"std", K::Floats}};
  static const std::vector<Source> table = {
      {"cifar10", dirArg, "CIFAR-10, binary version", loadCifar10,
       {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}},
       "/usr/share/datasets/cifar-10-batches-bin",
       "pass --data DIR naming the cifar-10-batches-bin directory of the CIFAR-10 binary "
       "version (data_batch_1..5.bin, test_batch.bin)"},
      {"fashion_mnist", dirArg, "Fashion-MNIST, IDX files", loadIdx, {{0.2860f}, {0.3530f}},
       "/usr/share/datasets/fashion-mnist",
       "install the Debian package dataset-fashion-mnist, or pass --data DIR naming a "
       "directory with the Fashion-MNIST IDX files",
       true},
      {"image_folder", imageArgs,
       "image files (JPEG, PNG) in class folders: dir/train/<class>/..., dir/val/<class>/...",
       loadImageFolder, {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}}, "images",
       "pass --data DIR naming a folder with train/<class>/ and val/<class>/ folders of images"},
      {"imagenet", imageArgs, "ImageNet's JPEG files in the image_folder layout", loadImageFolder,
       {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}}, "/usr/share/datasets/imagenet",
       "pass --data DIR naming the ImageNet folder holding train/ and val/ with a folder per "
       "class (val sorted into class folders, or test_list naming a file of \"path label\" "
       "lines)"},
      {"mnist", dirArg, "MNIST, IDX files", loadIdx, {{0.1307f}, {0.3081f}},
       "/usr/share/datasets/mnist",
       "pass --data DIR naming a directory with the MNIST IDX files "
       "(train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-...)"},
      {"npz_chunks",
       {{"dir", K::String},
        {"train", K::String},
        {"test", K::String},
        {"label_offset", K::Int},
        {"window", K::Int},
        {"in_memory", K::Bool}},
       "PyDTNN's ImageNet chunks: .npz files of x (uint8 [N, 3, S, S]) and y (labels, less "
       "label_offset) in dir/train and dir/val, decompressed as batches need them (window: the "
       "chunks an epoch shuffles together, default 4) or held in memory (in_memory=true)",
       loadNpzChunks, {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}},
       "/usr/share/datasets/imagenet-npz",
       "pass --data DIR naming a folder with train/ and val/ folders of .npz chunks"},
      {"synthetic",
       {{"classes", K::Int}, {"shape", K::Ints}, {"test_size", K::Int}, {"train_size", K::Int}},
       "random images whose class is learnable, chosen by the seed", loadSynthetic,
       {{0.5f}, {0.5f}}, "", ""},
      {"text",
       {{"dir", K::String}, {"level", K::String}, {"seq_len", K::Int}, {"held_out", K::Float}},
       "the text files of a folder as byte or char (level) tokens, in sequences of seq_len (the "
       "model's) with the last held_out (0.05) held out",
       loadText, {}, "/usr/share/games/fortunes",
       "install the Debian package fortunes, or pass --data naming a folder of text files or "
       "one file"},
  };
  for (const Source &src : table) {
    DataSourceDef def{src.name, src.args, src.summary,
                      [&src](const DataSpec &spec, const std::string &dir, uint64_t seed) {
                        return src.load(src, spec, dir, seed);
                      },
                      src.norm, *src.defaultDir != '\0', src.isDefault};
    if (Error e = registerDataSource(std::move(def), ir::kBuiltinOrigin)) return e;
  }
  return Error::success();
}

Expected<DataSplits> loadData(const DataSpec &spec, const std::string &dir, uint64_t seed) {
  const ir::RunSettingDef &setting = *ir::findRunSetting("data");
  const DataSourceDef *src = registry().find(spec.name);
  if (!src) {
    Error e = ir::checkSettingChoice(setting, spec.name);
    return e ? std::move(e) : Error::make("data source '" + spec.name + "' has no loader");
  }
  Expected<ir::AttrMap> args = ir::checkSettingArgs(setting, spec.name, spec.args);
  if (!args) return args.takeError();
  DataSpec checked{spec.name, std::move(*args)}; // the arguments, each of its declared kind
  if (!dir.empty() && !src->readsFiles)
    return Error::make("data source '" + spec.name + "' reads no files, so a data folder ('" +
                       dir + "') does not apply");
  Expected<DataSplits> splits = src->load(checked, dir, seed);
  if (splits && splits->norm.mean.empty())
    splits->norm = src->norm;
  return splits;
}

Normalization dataSourceNorm(const DataSpec &spec) {
  const DataSourceDef *src = registry().find(spec.name);
  if (!src) return {};
  const ir::AttrValue *mean = spec.args.find("mean"), *stddev = spec.args.find("std");
  if (!mean || !stddev) return src->norm;
  Normalization n;
  for (const ir::AttrValue *v : {mean, stddev}) {
    std::vector<float> &out = v == mean ? n.mean : n.std;
    if (const auto *list = std::get_if<std::vector<double>>(v))
      for (double x : *list) out.push_back(float(x));
    else if (const auto *x = std::get_if<double>(v))
      out.push_back(float(*x));
  }
  return n.mean.size() == n.std.size() ? n : src->norm;
}

std::vector<std::string> dataSourceNames() { return registry().names(); }

bool dataSourceTakes(const std::string &source, const std::string &arg) {
  const DataSourceDef *src = registry().find(source);
  return src && std::any_of(src->args.begin(), src->args.end(),
                            [&](const ir::ChoiceArg &a) { return a.name == arg; });
}

} // namespace dtnn
