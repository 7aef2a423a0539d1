// Tests of the training data pipeline: batch order and content, prefetching, resuming,
// validation splits, synthetic data and the named data sources with their error messages.
#include "runtime/train/data/Loader.h"
#include "runtime/train/data/Sources.h"
#include "runtime/train/data/Synthetic.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <set>
#include <thread>

using namespace dtnn;
namespace fs = std::filesystem;

namespace {

// A dataset of n samples of shape {1,2,2} whose label is the sample's own index, so batches
// show which samples they hold.
Dataset indexedData(int64_t n) {
  Dataset data;
  data.count = n;
  data.sampleShape = {1, 2, 2};
  data.numClasses = int32_t(n);
  for (int64_t i = 0; i < n; ++i) {
    data.labels.push_back(int32_t(i));
    for (int k = 0; k < 4; ++k)
      data.pixels.push_back(uint8_t((i * 4 + k) % 256));
  }
  return data;
}

// Options without normalization and without prefetching unless asked.
LoaderOptions options(int64_t batch, bool shuffle, uint64_t seed = 0, bool prefetch = false) {
  LoaderOptions opts;
  opts.batch = batch;
  opts.shuffle = shuffle;
  opts.seed = seed;
  opts.prefetch = prefetch;
  return opts;
}

// Returns the labels of every batch of epoch `epoch`, in order.
std::vector<int32_t> epochLabels(BatchLoader &loader, int64_t epoch) {
  loader.startEpoch(epoch);
  std::vector<int32_t> labels;
  Batch batch;
  while (loader.next(batch))
    labels.insert(labels.end(), batch.labels.begin(), batch.labels.end());
  return labels;
}

// Returns the sizes of every batch of epoch 0.
std::vector<int64_t> batchSizes(BatchLoader &loader) {
  loader.startEpoch(0);
  std::vector<int64_t> sizes;
  Batch batch;
  while (loader.next(batch))
    sizes.push_back(batch.size);
  return sizes;
}

// The message of a failed loadData, or "" if it succeeded.
std::string loadError(const DataSpec &spec, const std::string &dir = "") {
  Expected<DataSplits> splits = loadData(spec, dir, 0);
  return splits ? "" : splits.error().message();
}

// A temporary directory that lives as long as the test.
class SourcesFilesTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    dir_ = fs::temp_directory_path() /
           ("dtnn-loader-" + std::string(info->name()) + "-" + std::to_string(stamp));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes bytes to name in the directory, gzipped if gzip.
  void write(const std::string &name, const std::vector<uint8_t> &bytes, bool gzip = false) {
    std::string path = (dir_ / name).string();
    if (gzip) {
      gzFile file = gzopen(path.c_str(), "wb");
      ASSERT_NE(file, nullptr);
      gzwrite(file, bytes.data(), unsigned(bytes.size()));
      gzclose(file);
      return;
    }
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  }

  // Writes an IDX split of n 2x3 images and n labels under prefix.
  void writeIdx(const std::string &prefix, uint32_t n, bool gzip) {
    std::vector<uint8_t> images = {0, 0, 8, 3, 0, 0, 0, uint8_t(n), 0, 0, 0, 2, 0, 0, 0, 3};
    std::vector<uint8_t> labels = {0, 0, 8, 1, 0, 0, 0, uint8_t(n)};
    for (uint32_t i = 0; i < n; ++i) {
      images.insert(images.end(), 6, uint8_t(i));
      labels.push_back(uint8_t(i % 10));
    }
    std::string gz = gzip ? ".gz" : "";
    write(prefix + "-images-idx3-ubyte" + gz, images, gzip);
    write(prefix + "-labels-idx1-ubyte" + gz, labels, gzip);
  }

  fs::path dir_;
};

} // namespace

TEST(LoaderTest, SameSeedSameOrder) {
  Dataset data = indexedData(100);
  BatchLoader a(data, {}, options(8, true, 42));
  BatchLoader b(data, {}, options(8, true, 42));
  for (int64_t epoch : {0, 3})
    EXPECT_EQ(epochLabels(a, epoch), epochLabels(b, epoch));
  BatchLoader c(data, {}, options(8, true, 43));
  EXPECT_NE(epochLabels(a, 0), epochLabels(c, 0));
}

TEST(LoaderTest, EpochsDifferAndResumeMatches) {
  Dataset data = indexedData(100);
  BatchLoader loader(data, {}, options(8, true, 5));
  std::vector<int32_t> e0 = epochLabels(loader, 0);
  std::vector<int32_t> e1 = epochLabels(loader, 1);
  std::vector<int32_t> e2 = epochLabels(loader, 2);
  EXPECT_NE(e0, e1);
  EXPECT_NE(e1, e2);
  BatchLoader resumed(data, {}, options(8, true, 5));
  EXPECT_EQ(epochLabels(resumed, 2), e2);
}

TEST(LoaderTest, EverySampleOncePerEpoch) {
  Dataset data = indexedData(50);
  std::vector<int64_t> subset = {3, 7, 8, 20, 21, 22, 49};
  for (bool prefetch : {false, true}) {
    BatchLoader all(data, {}, options(6, true, 1, prefetch));
    BatchLoader some(data, subset, options(3, true, 1, prefetch));
    EXPECT_EQ(all.size(), 50);
    EXPECT_EQ(some.size(), 7);
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      std::vector<int32_t> labels = epochLabels(all, epoch);
      std::sort(labels.begin(), labels.end());
      for (int32_t i = 0; i < 50; ++i)
        ASSERT_EQ(labels[i], i);
      std::vector<int32_t> picked = epochLabels(some, epoch);
      std::sort(picked.begin(), picked.end());
      EXPECT_EQ(picked, std::vector<int32_t>(subset.begin(), subset.end()));
    }
  }
}

TEST(LoaderTest, WithoutShuffleKeepsIndexOrder) {
  Dataset data = indexedData(10);
  BatchLoader loader(data, {9, 2, 5}, options(2, false));
  EXPECT_EQ(epochLabels(loader, 0), (std::vector<int32_t>{9, 2, 5}));
  EXPECT_EQ(epochLabels(loader, 4), (std::vector<int32_t>{9, 2, 5}));
}

TEST(LoaderTest, PartialLastBatchAndDropLast) {
  Dataset data = indexedData(10);
  BatchLoader keep(data, {}, options(4, true));
  EXPECT_EQ(keep.batchesPerEpoch(), 3);
  EXPECT_EQ(batchSizes(keep), (std::vector<int64_t>{4, 4, 2}));
  LoaderOptions opts = options(4, true);
  opts.dropLast = true;
  BatchLoader drop(data, {}, opts);
  EXPECT_EQ(drop.batchesPerEpoch(), 2);
  EXPECT_EQ(batchSizes(drop), (std::vector<int64_t>{4, 4}));
  BatchLoader exact(data, {}, options(5, true));
  EXPECT_EQ(batchSizes(exact), (std::vector<int64_t>{5, 5}));
  // Regression: batches larger than the data, up to the largest size, do not overflow.
  BatchLoader largest(data, {}, options(INT64_MAX, true));
  EXPECT_EQ(batchSizes(largest), (std::vector<int64_t>{10}));
  opts.batch = INT64_MAX;
  BatchLoader largestDropped(data, {}, opts);
  EXPECT_EQ(largestDropped.batchesPerEpoch(), 0);
}

TEST(LoaderTest, BatchLayout) {
  Dataset data = indexedData(6);
  BatchLoader loader(data, {4, 1, 0}, options(2, false));
  Batch batch;
  ASSERT_TRUE(loader.next(batch));
  EXPECT_EQ(batch.size, 2);
  EXPECT_EQ(batch.labels, (std::vector<int32_t>{4, 1}));
  ASSERT_EQ(batch.images.size(), 8u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(batch.images[k], float(16 + k) / 255.0f);
    EXPECT_EQ(batch.images[4 + k], float(4 + k) / 255.0f);
  }
}

TEST(LoaderTest, NormalizationExact) {
  Dataset data = makeSynthetic({3, 4, 5}, 3, 7, 11);
  const std::vector<float> mean = {0.4914f, 0.4822f, 0.4465f};
  const std::vector<float> stdev = {0.2470f, 0.2435f, 0.2616f};
  struct Case {
    Normalization norm;
    std::vector<float> mean, std;  // Per channel, as expected.
  };
  std::vector<Case> cases = {{{mean, stdev}, mean, stdev},
                             {{{0.5f}, {0.25f}}, {0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.25f}},
                             {{}, {0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 1.0f}}};
  for (const Case &c : cases) {
    LoaderOptions opts = options(7, false);
    opts.norm = c.norm;
    BatchLoader loader(data, {}, opts);
    Batch batch;
    ASSERT_TRUE(loader.next(batch));
    ASSERT_EQ(batch.images.size(), data.pixels.size());
    for (size_t k = 0; k < data.pixels.size(); ++k) {
      size_t channel = (k / 20) % 3;
      float x = float(data.pixels[k]) / 255.0f;
      float want = c.norm.mean.empty() ? x : (x - c.mean[channel]) / c.std[channel];
      ASSERT_EQ(batch.images[k], want) << "element " << k;
    }
  }
}

TEST(LoaderTest, PrefetchMatchesInlineByteForByte) {
  Dataset data = makeSynthetic({3, 8, 8}, 10, 1000, 3);
  LoaderOptions opts = options(32, true, 9);
  opts.norm = {{0.5f, 0.4f, 0.3f}, {0.2f, 0.25f, 0.3f}};
  BatchLoader inlined(data, {}, opts);
  opts.prefetch = true;
  BatchLoader prefetched(data, {}, opts);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    inlined.startEpoch(epoch);
    prefetched.startEpoch(epoch);
    Batch a, b;
    int64_t count = 0;
    while (inlined.next(a)) {
      ASSERT_TRUE(prefetched.next(b));
      ASSERT_EQ(a.size, b.size);
      ASSERT_EQ(a.labels, b.labels);
      ASSERT_EQ(a.images.size(), b.images.size());
      ASSERT_EQ(std::memcmp(a.images.data(), b.images.data(), a.images.size() * sizeof(float)),
                0);
      if (++count % 7 == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1)); // Let the queue fill.
    }
    EXPECT_FALSE(prefetched.next(b));
    EXPECT_EQ(count, prefetched.batchesPerEpoch());
  }
}

TEST(LoaderTest, DestructionMidEpochDoesNotHang) {
  Dataset data = makeSynthetic({1, 28, 28}, 10, 2000, 1);
  LoaderOptions opts = options(16, true, 1, true);
  { BatchLoader untouched(data, {}, opts); }
  {
    BatchLoader loader(data, {}, opts);
    Batch batch;
    ASSERT_TRUE(loader.next(batch));
    std::this_thread::sleep_for(std::chrono::milliseconds(20)); // The queue is now full.
  }
  {
    BatchLoader loader(data, {}, opts);
    Batch batch;
    ASSERT_TRUE(loader.next(batch));
    loader.startEpoch(1); // Restarting mid-epoch stops the old worker too.
    ASSERT_TRUE(loader.next(batch));
  }
}

// A batch too large to allocate: the failure reaches the caller of next()
// from the prefetch thread too, instead of ending the process, and the
// loader can still be restarted and destroyed.
TEST(LoaderTest, FailureToPrepareABatchReachesTheCaller) {
  Dataset data;
  data.count = 2;
  data.sampleShape = {int64_t(1) << 50}; // 4 PiB of floats per sample: no system has them.
  data.labels = {0, 1};
  data.numClasses = 2;
  for (bool prefetch : {false, true}) {
    BatchLoader loader(data, {}, options(1, false, 1, prefetch));
    Batch batch;
    EXPECT_THROW(loader.next(batch), std::bad_alloc) << "prefetch " << prefetch;
    loader.startEpoch(1);
    EXPECT_THROW(loader.next(batch), std::bad_alloc) << "prefetch " << prefetch;
  }
}

TEST(LoaderTest, SkipResumesMidEpoch) {
  Dataset data = indexedData(40);
  for (bool prefetch : {false, true}) {
    BatchLoader full(data, {}, options(6, true, 2, prefetch));
    std::vector<int32_t> all = epochLabels(full, 1);
    BatchLoader resumed(data, {}, options(6, true, 2, prefetch));
    resumed.startEpoch(1);
    resumed.skip(2);
    Batch batch;
    std::vector<int32_t> rest;
    while (resumed.next(batch))
      rest.insert(rest.end(), batch.labels.begin(), batch.labels.end());
    EXPECT_EQ(rest, std::vector<int32_t>(all.begin() + 12, all.end()));

    // Skipping after a batch was taken continues from there; skipping past the end ends it.
    resumed.startEpoch(1);
    ASSERT_TRUE(resumed.next(batch));
    resumed.skip(3);
    ASSERT_TRUE(resumed.next(batch));
    EXPECT_EQ(batch.labels, std::vector<int32_t>(all.begin() + 24, all.begin() + 30));
    resumed.skip(100);
    EXPECT_FALSE(resumed.next(batch));
  }
}

TEST(LoaderTest, ValidationSplit) {
  auto [train, val] = splitValidation(1000, 0.1, 7);
  EXPECT_EQ(val.size(), 100u);
  EXPECT_EQ(train.size(), 900u);
  EXPECT_TRUE(std::is_sorted(train.begin(), train.end()));
  EXPECT_TRUE(std::is_sorted(val.begin(), val.end()));
  std::set<int64_t> all(train.begin(), train.end());
  all.insert(val.begin(), val.end());
  EXPECT_EQ(all.size(), 1000u); // Disjoint and complete.
  EXPECT_EQ(*all.begin(), 0);
  EXPECT_EQ(*all.rbegin(), 999);
  EXPECT_EQ(splitValidation(1000, 0.1, 7), std::make_pair(train, val));
  EXPECT_NE(splitValidation(1000, 0.1, 8).second, val);
  EXPECT_EQ(splitValidation(10, 0.25, 1).second.size(), 3u); // round(2.5) = 3.
  EXPECT_TRUE(splitValidation(10, 0.0, 1).second.empty());
  EXPECT_EQ(splitValidation(10, 0.0, 1).first.size(), 10u);
}

TEST(SyntheticTest, DeterministicWithShapes) {
  Dataset a = makeSynthetic({3, 5, 7}, 4, 30, 99);
  Dataset b = makeSynthetic({3, 5, 7}, 4, 30, 99);
  EXPECT_EQ(a.count, 30);
  EXPECT_EQ(a.sampleShape, (std::vector<int64_t>{3, 5, 7}));
  EXPECT_EQ(a.numClasses, 4);
  EXPECT_EQ(a.pixels.size(), 30u * 105);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_EQ(a.labels, b.labels);
  for (int64_t i = 0; i < 30; ++i)
    EXPECT_EQ(a.labels[i], i % 4);
  EXPECT_NE(makeSynthetic({3, 5, 7}, 4, 30, 100).pixels, a.pixels);
  // A smaller dataset of the same seed is a prefix of a larger one.
  Dataset small = makeSynthetic({3, 5, 7}, 4, 10, 99);
  EXPECT_TRUE(std::equal(small.pixels.begin(), small.pixels.end(), a.pixels.begin()));
  EXPECT_EQ(makeSynthetic({16}, 2, 3, 0).pixels.size(), 48u);
}

TEST(SyntheticTest, Learnable) {
  // A nearest-class-mean classifier fitted on the first 500 samples labels the next 200.
  const int64_t numel = 64, classes = 10;
  Dataset data = makeSynthetic({1, 8, 8}, int32_t(classes), 700, 4);
  std::vector<double> means(classes * numel, 0.0);
  std::vector<int64_t> counts(classes, 0);
  for (int64_t i = 0; i < 500; ++i) {
    ++counts[data.labels[i]];
    for (int64_t k = 0; k < numel; ++k)
      means[data.labels[i] * numel + k] += data.pixels[i * numel + k];
  }
  for (int64_t c = 0; c < classes; ++c)
    for (int64_t k = 0; k < numel; ++k)
      means[c * numel + k] /= double(counts[c]);
  int64_t correct = 0;
  for (int64_t i = 500; i < 700; ++i) {
    int64_t best = 0;
    double bestDist = 1e300;
    for (int64_t c = 0; c < classes; ++c) {
      double dist = 0;
      for (int64_t k = 0; k < numel; ++k) {
        double d = data.pixels[i * numel + k] - means[c * numel + k];
        dist += d * d;
      }
      if (dist < bestDist) {
        bestDist = dist;
        best = c;
      }
    }
    correct += best == data.labels[i];
  }
  EXPECT_GE(correct, 190);
}

TEST(SourcesTest, Names) {
  EXPECT_EQ(dataSourceNames(),
            (std::vector<std::string>{"cifar10", "fashion_mnist", "image_folder", "imagenet", "mnist",
                                      "npz_chunks", "synthetic", "text"}));
}

TEST(SourcesTest, UnknownSource) {
  EXPECT_EQ(loadError({"fashion_mnst", {}}),
            "unknown data source 'fashion_mnst'; did you mean 'fashion_mnist'? (known data "
            "sources: cifar10, fashion_mnist, image_folder, imagenet, mnist, npz_chunks, "
            "synthetic, text)");
  EXPECT_EQ(loadError({"coco", {}}),
            "unknown data source 'coco' (known data sources: cifar10, fashion_mnist, image_folder, "
            "imagenet, mnist, npz_chunks, synthetic, text)");
  // The zoo's ImageNet models name imagenet(), an image folder in its default place.
  DataSpec missing{"imagenet", {}};
  missing.args.set("dir", std::string("/nonexistent/imagenet"));
  EXPECT_EQ(loadError(missing),
            "imagenet: data directory /nonexistent/imagenet does not exist; pass --data DIR naming "
            "the ImageNet folder holding train/ and val/ with a folder per class (val sorted into "
            "class folders, or test_list naming a file of \"path label\" lines)");
}

TEST(SourcesTest, UnknownArgument) {
  DataSpec spec{"fashion_mnist", {}};
  spec.args.set("dri", std::string("/tmp"));
  EXPECT_EQ(loadError(spec),
            "data source 'fashion_mnist' has no argument 'dri'; did you mean 'dir'? "
            "(arguments: dir)");
  DataSpec synth{"synthetic", {}};
  synth.args.set("clases", int64_t(3));
  EXPECT_EQ(loadError(synth), "data source 'synthetic' has no argument 'clases'; did you mean "
                              "'classes'? (arguments: classes, shape, test_size, train_size)");
}

TEST(SourcesTest, MissingDirectoryNamesPath) {
  const std::string missing = "/nonexistent/dtnn-data";
  std::string msg = loadError({"fashion_mnist", {}}, missing);
  EXPECT_EQ(msg, "fashion_mnist: data directory " + missing +
                     " does not exist; install the Debian package dataset-fashion-mnist, or "
                     "pass --data DIR naming a directory with the Fashion-MNIST IDX files");
  DataSpec spec{"cifar10", {}};
  spec.args.set("dir", missing);
  msg = loadError(spec);
  EXPECT_NE(msg.find("cifar10: data directory " + missing + " does not exist"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("--data DIR"), std::string::npos) << msg;
  msg = loadError({"mnist", {}}, missing);
  EXPECT_NE(msg.find("mnist: data directory " + missing), std::string::npos) << msg;
}

TEST_F(SourcesFilesTest, IdxPlainAndGzip) {
  writeIdx("train", 12, false);
  writeIdx("t10k", 5, true);
  Expected<DataSplits> splits = loadData({"mnist", {}}, dir_.string(), 0);
  ASSERT_TRUE(splits) << splits.error().message();
  EXPECT_EQ(splits->train.count, 12);
  EXPECT_EQ(splits->test.count, 5);
  EXPECT_EQ(splits->train.sampleShape, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(splits->norm.mean, std::vector<float>{0.1307f});
  EXPECT_EQ(splits->norm.std, std::vector<float>{0.3081f});
  EXPECT_EQ(splits->description,
            "mnist: 12 train, 5 test samples of 1x2x3, 10 classes, from " + dir_.string());
}

TEST_F(SourcesFilesTest, MissingFileNamesFile) {
  writeIdx("train", 3, true);
  std::string msg = loadError({"fashion_mnist", {}}, dir_.string());
  std::string file = (dir_ / "t10k-images-idx3-ubyte").string();
  EXPECT_EQ(msg, "fashion_mnist: neither " + file + ".gz nor " + file +
                     " exists; install the Debian package dataset-fashion-mnist, or pass --data "
                     "DIR naming a directory with the Fashion-MNIST IDX files");
}

TEST_F(SourcesFilesTest, ReaderErrorsPassThrough) {
  writeIdx("train", 3, false);
  writeIdx("t10k", 3, false);
  write("t10k-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 9, 1});
  std::string msg = loadError({"fashion_mnist", {}}, dir_.string());
  EXPECT_NE(msg.find((dir_ / "t10k-labels-idx1-ubyte").string() + ": truncated data"),
            std::string::npos) << msg;
}

TEST_F(SourcesFilesTest, Cifar10) {
  std::vector<uint8_t> record(3073, 17);
  record[0] = 6;
  for (int i = 1; i <= 5; ++i)
    write("data_batch_" + std::to_string(i) + ".bin", record);
  std::string msg = loadError({"cifar10", {}}, dir_.string());
  EXPECT_EQ(msg, "cifar10: " + (dir_ / "test_batch.bin").string() +
                     " does not exist; pass --data DIR naming the cifar-10-batches-bin "
                     "directory of the CIFAR-10 binary version (data_batch_1..5.bin, "
                     "test_batch.bin)");
  write("test_batch.bin", record);
  Expected<DataSplits> splits = loadData({"cifar10", {}}, dir_.string(), 0);
  ASSERT_TRUE(splits) << splits.error().message();
  EXPECT_EQ(splits->train.count, 5);
  EXPECT_EQ(splits->test.count, 1);
  EXPECT_EQ(splits->train.sampleShape, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(splits->norm.mean.size(), 3u);
}

TEST(SourcesTest, Synthetic) {
  DataSpec spec{"synthetic", {}};
  spec.args.set("shape", std::vector<int64_t>{3, 8, 8});
  spec.args.set("classes", int64_t(4));
  spec.args.set("train_size", int64_t(40));
  spec.args.set("test_size", int64_t(12));
  Expected<DataSplits> splits = loadData(spec, "", 5);
  ASSERT_TRUE(splits) << splits.error().message();
  EXPECT_EQ(splits->train.count, 40);
  EXPECT_EQ(splits->test.count, 12);
  EXPECT_EQ(splits->test.sampleShape, (std::vector<int64_t>{3, 8, 8}));
  EXPECT_EQ(splits->test.pixels.size(), 12u * 192);
  EXPECT_EQ(splits->norm.mean, std::vector<float>{0.5f});
  EXPECT_EQ(splits->description, "synthetic: 40 train, 12 test samples of 3x8x8, 4 classes, seed 5");
  // The test set continues the same stream, so it shares the class prototypes.
  Dataset all = makeSynthetic({3, 8, 8}, 4, 52, 5);
  EXPECT_TRUE(std::equal(splits->test.pixels.begin(), splits->test.pixels.end(),
                         all.pixels.begin() + 40 * 192));

  Expected<DataSplits> defaults = loadData({"synthetic", {}}, "", 0);
  ASSERT_TRUE(defaults) << defaults.error().message();
  EXPECT_EQ(defaults->train.count, 6000);
  EXPECT_EQ(defaults->test.count, 1000);
  EXPECT_EQ(defaults->train.sampleShape, (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(defaults->train.numClasses, 10);
}

TEST(SourcesTest, SyntheticBadArguments) {
  auto error = [](const std::string &name, ir::AttrValue value) {
    DataSpec spec{"synthetic", {}};
    spec.args.set(name, std::move(value));
    return loadError(spec);
  };
  EXPECT_EQ(error("classes", 2.5),
            "data source 'synthetic' argument 'classes' must be an integer, got 2.5");
  EXPECT_EQ(error("classes", int64_t(0)), "synthetic: 'classes' must be in 1..65536, got 0");
  EXPECT_EQ(error("shape", std::vector<int64_t>{1, 0}),
            "synthetic: 'shape' dimensions must be positive, got [1,0]");
  EXPECT_EQ(error("train_size", int64_t(0)),
            "synthetic: 'train_size' and 'test_size' must be positive, got train_size=0, test_size=1000");
  EXPECT_EQ(error("shape", std::vector<int64_t>{1000, 1000, 1000}),
            "synthetic: 6000 + 1000 samples of 1000x1000x1000 exceed the 4 GiB limit of synthetic "
            "data");
  // Regression: sizes past the limit were called not positive.
  EXPECT_EQ(error("shape", std::vector<int64_t>{1, INT64_MAX}),
            "synthetic: 6000 + 1000 samples of 1x9223372036854775807 exceed the 4 GiB limit of "
            "synthetic data");
  EXPECT_EQ(error("test_size", INT64_MAX),
            "synthetic: 6000 + 9223372036854775807 samples of 1x28x28 exceed the 4 GiB limit of "
            "synthetic data");
}

TEST(SourcesTest, FashionMnist) {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::is_directory(root))
    GTEST_SKIP() << "Fashion-MNIST is not installed at " << root;
  Expected<DataSplits> splits = loadData({"fashion_mnist", {}}, "", 0);
  ASSERT_TRUE(splits) << splits.error().message();
  EXPECT_EQ(splits->train.count, 60000);
  EXPECT_EQ(splits->test.count, 10000);
  EXPECT_EQ(splits->train.sampleShape, (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(splits->test.sampleShape, (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(splits->train.numClasses, 10);
  EXPECT_EQ(splits->norm.mean, std::vector<float>{0.2860f});
  EXPECT_EQ(splits->norm.std, std::vector<float>{0.3530f});
}

namespace dtnn {
namespace {

// The labels of every batch of epoch 0, one vector per batch.
std::vector<std::vector<int32_t>> batchesOf(BatchLoader &loader) {
  std::vector<std::vector<int32_t>> out;
  loader.startEpoch(0);
  for (Batch b; loader.next(b);) out.push_back(b.labels);
  return out;
}

} // namespace

// In a run over P ranks each rank takes a contiguous part of every global
// batch: the parts concatenate to the batch one rank sees, differ by at most
// one sample, carry their offset and share, and a rank whose part is empty
// gets the batch's first sample as a stand-in with samples = 0.
TEST(LoaderTest, RanksSplitEveryGlobalBatch) {
  Dataset data = indexedData(21); // batches of 8: 8, 8, 5
  BatchLoader whole(data, {}, options(8, true, 7));
  std::vector<std::vector<int32_t>> global = batchesOf(whole);
  for (int ranks : {2, 3, 6}) {
    std::vector<std::vector<int32_t>> joined(global.size());
    for (int r = 0; r < ranks; ++r) {
      LoaderOptions o = options(8, true, 7);
      o.rank = r;
      o.ranks = ranks;
      BatchLoader part(data, {}, o);
      part.startEpoch(0);
      size_t k = 0;
      for (Batch b; part.next(b); ++k) {
        ASSERT_LT(k, global.size());
        int64_t n = static_cast<int64_t>(global[k].size());
        EXPECT_EQ(b.globalSize, n);
        EXPECT_LE(b.samples, n / ranks + 1);
        EXPECT_GE(b.samples, n / ranks);
        EXPECT_EQ(b.offset, b.samples ? n * r / ranks : 0);
        if (b.samples == 0) {
          ASSERT_EQ(b.size, 1); // the stand-in
          EXPECT_EQ(b.labels[0], global[k][0]);
          continue;
        }
        EXPECT_EQ(b.size, b.samples);
        joined[k].insert(joined[k].end(), b.labels.begin(), b.labels.end());
      }
      EXPECT_EQ(k, global.size()) << "every rank runs every step";
    }
    EXPECT_EQ(joined, global) << ranks << " ranks";
  }
}

} // namespace dtnn

TEST(LoaderTest, BatchSizesAreTheWholeBatchAndAPartialLastOne) {
  LoaderOptions o;
  o.batch = 32;
  EXPECT_EQ(batchSizes(100, o), (std::vector<int64_t>{32, 4}));
  EXPECT_EQ(batchSizes(96, o), (std::vector<int64_t>{32}));
  EXPECT_EQ(batchSizes(10, o), (std::vector<int64_t>{10}));
  EXPECT_TRUE(batchSizes(0, o).empty());
  o.dropLast = true;
  EXPECT_EQ(batchSizes(100, o), (std::vector<int64_t>{32}));
  EXPECT_TRUE(batchSizes(10, o).empty());
  // Each rank's part; a rank with none gets a stand-in sample.
  o.dropLast = false;
  o.ranks = 2;
  o.rank = 1;
  EXPECT_EQ(batchSizes(97, o), (std::vector<int64_t>{16, 1}));
  o.ranks = 3;
  EXPECT_EQ(batchSizes(33, o), (std::vector<int64_t>{11, 1})) << "the last batch of 1 is rank 2's";
  // The sizes are those the loader makes.
  o = LoaderOptions{};
  o.batch = 4;
  o.prefetch = false;
  Dataset data = indexedData(10);
  BatchLoader loader(data, {}, o);
  std::vector<int64_t> seen;
  for (Batch b; loader.next(b);)
    if (std::find(seen.begin(), seen.end(), b.size) == seen.end()) seen.push_back(b.size);
  EXPECT_EQ(seen, batchSizes(10, o));
}
