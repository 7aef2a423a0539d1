// CIFAR-10 reader: each batch file is a sequence of fixed-size records, label byte first.
#include "runtime/data/Cifar.h"

#include <fstream>
#include <iterator>

namespace dtnn {
namespace {

constexpr int32_t kNumClasses = 10;
constexpr size_t kPixels = 3 * 32 * 32;
constexpr size_t kRecord = 1 + kPixels;

} // namespace

Expected<Dataset> readCifar10(const std::vector<std::string> &batchFiles) {
  if (batchFiles.empty())
    return Error::make("no CIFAR-10 batch files given");
  Dataset data;
  data.sampleShape = {3, 32, 32};
  data.numClasses = kNumClasses;
  for (const std::string &path : batchFiles) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return Error::make(path + ": cannot open file");
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    if (in.bad())
      return Error::make(path + ": read error");
    if (bytes.size() % kRecord != 0)
      return Error::make(path + ": size " + std::to_string(bytes.size()) +
                         " is not a multiple of the 3073-byte record");
    size_t records = bytes.size() / kRecord;
    for (size_t r = 0; r < records; ++r) {
      const uint8_t *record = bytes.data() + r * kRecord;
      if (record[0] >= kNumClasses)
        return Error::make(path + ": label " + std::to_string(record[0]) + " at index " +
                           std::to_string(r) + " is out of range 0.." +
                           std::to_string(kNumClasses - 1));
      data.labels.push_back(record[0]);
      data.pixels.insert(data.pixels.end(), record + 1, record + kRecord);
    }
    data.count += int64_t(records);
  }
  return data;
}

} // namespace dtnn
