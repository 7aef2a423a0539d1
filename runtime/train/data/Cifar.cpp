// CIFAR-10 reader: each batch file is a sequence of fixed-size records, label byte first.
// File sizes are checked against the record size and the machine's memory before anything is
// read; records are then read in blocks straight into the data set.
#include "runtime/train/data/Cifar.h"

#include "ir/Files.h"
#include "runtime/HostMemory.h"

#include <cstdio>
#include <memory>

namespace dtnn {
namespace {

constexpr int32_t kNumClasses = 10;
constexpr size_t kPixels = 3 * 32 * 32;
constexpr size_t kRecord = 1 + kPixels;
constexpr size_t kRecordsPerRead = 1024;

// Appends the records of one batch file of `size` bytes to data.
Error readBatch(const std::string &path, uint64_t size, Dataset &data) {
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(std::fopen(path.c_str(), "rb"),
                                                        &std::fclose);
  if (!file)
    return Error::make(path + ": cannot open file");
  std::vector<uint8_t> block(kRecordsPerRead * kRecord);
  uint64_t records = size / kRecord;
  for (uint64_t first = 0; first < records; first += kRecordsPerRead) {
    size_t count = size_t(std::min<uint64_t>(kRecordsPerRead, records - first));
    if (std::fread(block.data(), kRecord, count, file.get()) != count)
      return Error::make(path + ": read error");
    for (size_t r = 0; r < count; ++r) {
      const uint8_t *record = block.data() + r * kRecord;
      if (record[0] >= kNumClasses)
        return Error::make(path + ": label " + std::to_string(record[0]) + " at index " +
                           std::to_string(first + r) + " is out of range 0.." +
                           std::to_string(kNumClasses - 1));
      data.labels.push_back(record[0]);
      data.pixels.insert(data.pixels.end(), record + 1, record + kRecord);
    }
  }
  data.count += int64_t(records);
  return Error::success();
}

} // namespace

Expected<Dataset> readCifar10(const std::vector<std::string> &batchFiles) {
  if (batchFiles.empty())
    return Error::make("no CIFAR-10 batch files given");
  std::vector<uint64_t> sizes;
  uint64_t total = 0, memory = runtime::hostMemoryBytes();
  for (const std::string &path : batchFiles) {
    uint64_t size = 0;
    if (Expected<FilePtr> f = openRegularFile(path, size, "data file"); !f)
      return Error::make(path + ": " + f.error().message());
    if (size % kRecord != 0)
      return Error::make(path + ": size " + std::to_string(size) +
                         " is not a multiple of the 3073-byte record");
    total += size;
    if (total > memory)
      return Error::make(path + ": the batch files up to this one hold " +
                         runtime::formatBytes(total) + ", more than the " +
                         runtime::formatBytes(memory) + " of memory");
    sizes.push_back(size);
  }
  Dataset data;
  data.sampleShape = {3, 32, 32};
  data.numClasses = kNumClasses;
  data.pixels.reserve(size_t(total / kRecord * kPixels));
  data.labels.reserve(size_t(total / kRecord));
  for (size_t i = 0; i < batchFiles.size(); ++i)
    if (Error e = readBatch(batchFiles[i], sizes[i], data))
      return e;
  return data;
}

} // namespace dtnn
