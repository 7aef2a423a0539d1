// The data source `toy_blobs(classes=3, size=8, train_size=300, test_size=90)`:
// 1 x size x size images, one bright blob per class at a fixed place, with
// noise drawn from the seed, so a small model learns them in one epoch.
#include "dtnn/Plugin.h"
#include "dtnn/Registry.h"

#include "runtime/train/data/Sources.h"

#include <random>

namespace {

using namespace dtnn;

int64_t arg(const DataSpec &spec, const std::string &name, int64_t dflt) {
  const ir::AttrValue *v = spec.args.find(name);
  return v ? std::get<int64_t>(*v) : dflt;
}

Dataset blobs(int64_t count, int64_t classes, int64_t size, std::mt19937 &rng) {
  Dataset d;
  d.count = count;
  d.sampleShape = {1, size, size};
  d.numClasses = static_cast<int32_t>(classes);
  std::uniform_int_distribution<int> noise(0, 60);
  for (int64_t s = 0; s < count; ++s) {
    int32_t label = static_cast<int32_t>(s % classes);
    d.labels.push_back(label);
    // The blob of class c covers a 2x2 square on the diagonal.
    int64_t at = (label * (size - 2)) / std::max<int64_t>(classes - 1, 1);
    for (int64_t y = 0; y < size; ++y)
      for (int64_t x = 0; x < size; ++x) {
        bool blob = y >= at && y < at + 2 && x >= at && x < at + 2;
        d.pixels.push_back(static_cast<uint8_t>((blob ? 190 : 0) + noise(rng)));
      }
  }
  return d;
}

Expected<DataSplits> load(const DataSpec &spec, const std::string &, uint64_t seed) {
  int64_t classes = arg(spec, "classes", 3), size = arg(spec, "size", 8);
  int64_t train = arg(spec, "train_size", 300), test = arg(spec, "test_size", 90);
  if (classes < 2 || classes > 16)
    return Error::make("toy_blobs: 'classes' must be in 2..16, got " + std::to_string(classes));
  if (size < 4 || size > 64)
    return Error::make("toy_blobs: 'size' must be in 4..64, got " + std::to_string(size));
  if (train < 1 || test < 1 || train > 100000 || test > 100000)
    return Error::make("toy_blobs: 'train_size' and 'test_size' must be in 1..100000");
  std::mt19937 rng(static_cast<uint32_t>(seed));
  DataSplits s;
  s.train = blobs(train, classes, size, rng);
  s.test = blobs(test, classes, size, rng);
  s.description = "toy_blobs: " + std::to_string(train) + " train, " + std::to_string(test) +
                  " test samples of 1x" + std::to_string(size) + "x" + std::to_string(size) +
                  ", " + std::to_string(classes) + " classes, seed " + std::to_string(seed);
  return s;
}

Error registerToyData(const std::string &origin) {
  DataSourceDef def;
  def.name = "toy_blobs";
  def.args = {{"classes", ir::AttrKind::Int},
              {"size", ir::AttrKind::Int},
              {"train_size", ir::AttrKind::Int},
              {"test_size", ir::AttrKind::Int}};
  def.summary = "one blob per class on a noisy background (an extension)";
  def.load = load;
  def.norm = {{0.1f}, {0.25f}};
  return registerDataSource(std::move(def), origin);
}

} // namespace

DTNN_PLUGIN("toy_blobs", registerToyData)
