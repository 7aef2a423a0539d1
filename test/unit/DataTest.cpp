// Tests of the dataset readers: good reads of small IDX and CIFAR-10 files, plain and gzipped,
// every error path, and the real Fashion-MNIST test set when it is installed.
#include "runtime/HostMemory.h"
#include "runtime/train/data/Cifar.h"
#include "runtime/train/data/Idx.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>

using namespace dtnn;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<uint8_t>;

// A temporary directory that lives as long as the fixture.
class TempDirTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    dir_ = fs::temp_directory_path() / ("dtnn-data-" + std::string(info->test_suite_name()) +
                                        "-" + info->name() + "-" + std::to_string(stamp));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes bytes to name in the temporary directory, gzipped if gzip, and returns its path.
  std::string write(const std::string &name, const Bytes &bytes, bool gzip = false) {
    std::string path = (dir_ / name).string();
    if (gzip) {
      gzFile file = gzopen(path.c_str(), "wb");
      EXPECT_NE(file, nullptr);
      EXPECT_EQ(gzwrite(file, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
      gzclose(file);
    } else {
      std::ofstream out(path, std::ios::binary);
      out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
    }
    return path;
  }

  fs::path dir_;
};

using IdxTest = TempDirTest;
using CifarTest = TempDirTest;

// Appends the big-endian u32 v.
void putU32(Bytes &b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    b.push_back(uint8_t(v >> shift));
}

// An IDX image file of n images of rows x cols, pixel k of the file holding k % 251.
Bytes idxImages(uint32_t n, uint32_t rows, uint32_t cols) {
  Bytes b;
  putU32(b, 0x803);
  putU32(b, n);
  putU32(b, rows);
  putU32(b, cols);
  for (uint32_t k = 0; k < n * rows * cols; ++k)
    b.push_back(uint8_t(k % 251));
  return b;
}

// An IDX label file holding labels.
Bytes idxLabels(const Bytes &labels) {
  Bytes b;
  putU32(b, 0x801);
  putU32(b, uint32_t(labels.size()));
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}

// Reads images and labels and returns the error message, or "" on success.
std::string idxError(const std::string &images, const std::string &labels) {
  Expected<Dataset> data = readIdx(images, labels);
  return data ? "" : data.error().message();
}

// A CIFAR-10 batch with one record per label, pixel p of record r holding (r + p) % 256.
Bytes cifarBatch(const Bytes &labels) {
  Bytes b;
  for (size_t r = 0; r < labels.size(); ++r) {
    b.push_back(labels[r]);
    for (size_t p = 0; p < 3072; ++p)
      b.push_back(uint8_t((r + p) % 256));
  }
  return b;
}

// Reads batch files and returns the error message, or "" on success.
std::string cifarError(const std::vector<std::string> &files) {
  Expected<Dataset> data = readCifar10(files);
  return data ? "" : data.error().message();
}

} // namespace

TEST_F(IdxTest, ReadsPlainAndGzip) {
  for (bool gzip : {false, true}) {
    std::string images = write(gzip ? "img.gz" : "img", idxImages(3, 2, 4), gzip);
    std::string labels = write(gzip ? "lab.gz" : "lab", idxLabels({7, 0, 9}), gzip);
    Expected<Dataset> data = readIdx(images, labels);
    ASSERT_TRUE(data) << data.error().message();
    EXPECT_EQ(data->count, 3);
    EXPECT_EQ(data->sampleShape, (std::vector<int64_t>{1, 2, 4}));
    EXPECT_EQ(data->numClasses, 10);
    EXPECT_EQ(data->labels, (std::vector<int32_t>{7, 0, 9}));
    ASSERT_EQ(data->pixels.size(), 24u);
    for (size_t k = 0; k < 24; ++k)
      EXPECT_EQ(data->pixels[k], k % 251);
  }
}

TEST_F(IdxTest, MissingFile) {
  std::string labels = write("lab", idxLabels({1}));
  std::string missing = (dir_ / "nope-images").string();
  std::string msg = idxError(missing, labels);
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
}

TEST_F(IdxTest, BadMagic) {
  Bytes bytes = idxImages(1, 2, 2);
  bytes[2] = 0x09; // A signed-byte type code.
  std::string images = write("img", bytes);
  std::string labels = write("lab", idxLabels({1}));
  std::string msg = idxError(images, labels);
  EXPECT_NE(msg.find(images + ": bad magic 0x00000903"), std::string::npos) << msg;
}

TEST_F(IdxTest, WrongDimensionCount) {
  std::string images = write("img", idxImages(1, 2, 2));
  std::string labels = write("lab", idxImages(1, 2, 2)); // Three dimensions, not one.
  std::string msg = idxError(images, labels);
  EXPECT_NE(msg.find(labels + ": wrong dimension count 3, expected 1"), std::string::npos)
      << msg;
}

TEST_F(IdxTest, TruncatedData) {
  Bytes bytes = idxImages(2, 2, 2);
  bytes.pop_back();
  std::string images = write("img.gz", bytes, true);
  std::string labels = write("lab", idxLabels({1, 2}));
  std::string msg = idxError(images, labels);
  EXPECT_NE(msg.find(images + ": truncated data: header promises 8 bytes, found 7"),
            std::string::npos) << msg;
}

TEST_F(IdxTest, TruncatedHeader) {
  std::string images = write("img", idxImages(1, 2, 2));
  std::string labels = write("lab", {0, 0, 8, 1, 0, 0});
  std::string msg = idxError(images, labels);
  EXPECT_NE(msg.find(labels + ": truncated header"), std::string::npos) << msg;
}

TEST_F(IdxTest, TrailingData) {
  std::string images = write("img", idxImages(1, 2, 2));
  Bytes bytes = idxLabels({1});
  bytes.push_back(0);
  bytes.push_back(0);
  std::string labels = write("lab", bytes);
  std::string msg = idxError(images, labels);
  EXPECT_NE(msg.find(labels + ": trailing data after the 1 bytes the header promises"), std::string::npos) << msg;
}

TEST_F(IdxTest, CountsDiffer) {
  std::string images = write("img", idxImages(2, 2, 2));
  std::string labels = write("lab", idxLabels({1, 2, 3}));
  std::string msg = idxError(images, labels);
  EXPECT_NE(msg.find(images + " has 2 images but " + labels + " has 3 labels"),
            std::string::npos)
      << msg;
}

TEST_F(IdxTest, LabelOutOfRange) {
  std::string images = write("img", idxImages(6, 1, 1));
  std::string labels = write("lab", idxLabels({0, 1, 2, 3, 4, 12}));
  std::string msg = idxError(images, labels);
  EXPECT_NE(msg.find(labels + ": label 12 at index 5 is out of range 0..9"), std::string::npos)
      << msg;
}

TEST_F(IdxTest, CorruptGzip) {
  std::string good = write("img.gz", idxImages(4, 8, 8), true);
  std::ifstream in(good, std::ios::binary);
  Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t k = 12; k + 8 < bytes.size(); ++k)
    bytes[k] = 0xff; // Garbage after the gzip header.
  std::string images = write("bad.gz", bytes);
  std::string labels = write("lab", idxLabels({1, 2, 3, 4}));
  std::string msg = idxError(images, labels);
  EXPECT_NE(msg.find(images + ": corrupt gzip stream"), std::string::npos) << msg;
}

TEST_F(IdxTest, FashionMnistTestSet) {
  const std::string root = "/usr/share/datasets/fashion-mnist/";
  const std::string images = root + "t10k-images-idx3-ubyte.gz";
  const std::string labels = root + "t10k-labels-idx1-ubyte.gz";
  if (!fs::exists(images) || !fs::exists(labels))
    GTEST_SKIP() << "Fashion-MNIST test set not installed at " << root;
  Expected<Dataset> data = readIdx(images, labels);
  ASSERT_TRUE(data) << data.error().message();
  EXPECT_EQ(data->count, 10000);
  EXPECT_EQ(data->sampleShape, (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(data->pixels.size(), 10000u * 28 * 28);
  std::array<int, 10> perClass{};
  for (int32_t label : data->labels) {
    ASSERT_GE(label, 0);
    ASSERT_LE(label, 9);
    ++perClass[label];
  }
  for (int c = 0; c < 10; ++c)
    EXPECT_EQ(perClass[c], 1000) << "class " << c;
}

TEST_F(CifarTest, ReadsSeveralBatches) {
  std::string a = write("data_batch_1.bin", cifarBatch({3, 9}));
  std::string b = write("data_batch_2.bin", cifarBatch({0}));
  Expected<Dataset> data = readCifar10({a, b});
  ASSERT_TRUE(data) << data.error().message();
  EXPECT_EQ(data->count, 3);
  EXPECT_EQ(data->sampleShape, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(data->numClasses, 10);
  EXPECT_EQ(data->labels, (std::vector<int32_t>{3, 9, 0}));
  ASSERT_EQ(data->pixels.size(), 3u * 3072);
  EXPECT_EQ(data->pixels[0], 0);
  EXPECT_EQ(data->pixels[3072 + 5], 6);
  EXPECT_EQ(data->pixels[2 * 3072 + 300], 300 % 256);
}

TEST_F(CifarTest, MissingFile) {
  std::string missing = (dir_ / "nope.bin").string();
  std::string msg = cifarError({missing});
  EXPECT_NE(msg.find(missing + ": cannot open"), std::string::npos) << msg;
}

TEST_F(CifarTest, SizeNotMultipleOfRecord) {
  Bytes bytes = cifarBatch({1, 2});
  bytes.pop_back();
  std::string path = write("short.bin", bytes);
  std::string msg = cifarError({path});
  EXPECT_NE(msg.find(path + ": size 6145 is not a multiple of the 3073-byte record"),
            std::string::npos)
      << msg;
}

TEST_F(CifarTest, LabelOutOfRange) {
  std::string path = write("bad.bin", cifarBatch({1, 10}));
  std::string msg = cifarError({path});
  EXPECT_NE(msg.find(path + ": label 10 at index 1 is out of range 0..9"), std::string::npos)
      << msg;
}

// Files are read in blocks of records; labels and pixels stay in order across blocks, and an
// error names the index within the file.
TEST_F(CifarTest, RecordsAcrossReadBlocks) {
  Bytes labels(1100);
  for (size_t r = 0; r < labels.size(); ++r) labels[r] = uint8_t(r % 10);
  std::string path = write("big.bin", cifarBatch(labels));
  Expected<Dataset> data = readCifar10({path});
  ASSERT_TRUE(data) << data.error().message();
  ASSERT_EQ(data->count, 1100);
  EXPECT_EQ(data->labels[1050], 0);
  EXPECT_EQ(data->labels[1099], 9);
  EXPECT_EQ(data->pixels[1050 * 3072 + 7], uint8_t((1050 + 7) % 256));
  labels[1050] = 12;
  path = write("bad-late.bin", cifarBatch(labels));
  std::string msg = cifarError({path});
  EXPECT_NE(msg.find(path + ": label 12 at index 1050 is out of range 0..9"), std::string::npos)
      << msg;
}

// Regression: files were read whole before their size was looked at. A batch file larger than
// the machine's memory (a sparse file here) is refused before it is read.
TEST_F(CifarTest, LargerThanMemory) {
  std::string path = (dir_ / "sparse.bin").string();
  uint64_t records = runtime::hostMemoryBytes() / 3073 + 1;
  std::error_code ec;
  { std::ofstream touch(path, std::ios::binary); }
  fs::resize_file(path, records * 3073, ec);
  ASSERT_FALSE(ec) << "cannot make a sparse file of " << records * 3073
                   << " bytes: " << ec.message();
  std::string msg = cifarError({path});
  EXPECT_NE(msg.find(path + ": the batch files up to this one hold "), std::string::npos) << msg;
  EXPECT_NE(msg.find(" of memory"), std::string::npos) << msg;
}

TEST_F(CifarTest, NoFiles) {
  EXPECT_NE(cifarError({}).find("no CIFAR-10 batch files"), std::string::npos);
}
