// IDX reader. Each file is read whole through zlib (which passes plain files through), then
// the header is checked against the byte count before any data is copied.
#include "runtime/data/Idx.h"

#include <zlib.h>

#include <cstdint>
#include <cstdio>

namespace dtnn {
namespace {

constexpr int32_t kNumClasses = 10;

// Reads the whole file at path, decompressing it if it is gzipped.
Expected<std::vector<uint8_t>> readAll(const std::string &path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file)
    return Error::make(path + ": cannot open file");
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  while (true) {
    int n = gzread(file, chunk, sizeof(chunk));
    if (n < 0) {
      int code = 0;
      std::string why = gzerror(file, &code);
      gzclose(file);
      return Error::make(path + ": corrupt gzip stream (" + why + ")");
    }
    if (n == 0)
      break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  int code = 0;
  std::string why = gzerror(file, &code);
  gzclose(file);
  if (code != Z_OK)
    return Error::make(path + ": corrupt gzip stream (" + why + ")");
  return bytes;
}

// Reads the big-endian u32 at offset.
uint32_t readU32(const std::vector<uint8_t> &bytes, size_t offset) {
  return uint32_t(bytes[offset]) << 24 | uint32_t(bytes[offset + 1]) << 16 |
         uint32_t(bytes[offset + 2]) << 8 | uint32_t(bytes[offset + 3]);
}

// A parsed IDX file: its dimensions and the byte offset where the data starts.
struct IdxFile {
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> dims;
  size_t dataOffset = 0;
};

// Reads path and checks it is a u8 IDX file with numDims dimensions and exactly as many data
// bytes as the header promises.
Expected<IdxFile> readIdxFile(const std::string &path, uint32_t numDims) {
  Expected<std::vector<uint8_t>> bytes = readAll(path);
  if (!bytes)
    return bytes.takeError();
  IdxFile idx;
  idx.bytes = std::move(*bytes);
  if (idx.bytes.size() < 4)
    return Error::make(path + ": truncated header (" + std::to_string(idx.bytes.size()) +
                       " bytes)");
  uint32_t magic = readU32(idx.bytes, 0);
  if ((magic >> 8) != 0x08) {
    char hex[64];
    std::snprintf(hex, sizeof(hex), "bad magic 0x%08x, expected 0x%08x", magic, 0x800 | numDims);
    return Error::make(path + ": " + hex);
  }
  if ((magic & 0xff) != numDims)
    return Error::make(path + ": wrong dimension count " + std::to_string(magic & 0xff) +
                       ", expected " + std::to_string(numDims));
  idx.dataOffset = 4 + 4 * size_t(numDims);
  if (idx.bytes.size() < idx.dataOffset)
    return Error::make(path + ": truncated header (" + std::to_string(idx.bytes.size()) +
                       " bytes)");
  uint64_t available = idx.bytes.size() - idx.dataOffset;
  uint64_t expected = 1;
  bool tooBig = false;
  for (uint32_t d = 0; d < numDims; ++d) {
    uint64_t dim = readU32(idx.bytes, 4 + 4 * d);
    idx.dims.push_back(dim);
    if (dim != 0 && expected > UINT64_MAX / dim)
      tooBig = true;
    else
      expected *= dim;
  }
  if (tooBig || expected > available)
    return Error::make(path + ": truncated data: header promises " +
                       (tooBig ? std::string("more") : std::to_string(expected)) +
                       " bytes, found " + std::to_string(available));
  if (expected < available)
    return Error::make(path + ": " + std::to_string(available - expected) +
                       " bytes of trailing data after the " + std::to_string(expected) +
                       " the header promises");
  return idx;
}

} // namespace

Expected<Dataset> readIdx(const std::string &imagesPath, const std::string &labelsPath) {
  Expected<IdxFile> images = readIdxFile(imagesPath, 3);
  if (!images)
    return images.takeError();
  Expected<IdxFile> labels = readIdxFile(labelsPath, 1);
  if (!labels)
    return labels.takeError();
  if (images->dims[0] != labels->dims[0])
    return Error::make(imagesPath + " has " + std::to_string(images->dims[0]) + " images but " +
                       labelsPath + " has " + std::to_string(labels->dims[0]) + " labels");
  Dataset data;
  data.count = int64_t(images->dims[0]);
  data.sampleShape = {1, int64_t(images->dims[1]), int64_t(images->dims[2])};
  data.numClasses = kNumClasses;
  data.pixels.assign(images->bytes.begin() + images->dataOffset, images->bytes.end());
  data.labels.reserve(data.count);
  for (int64_t i = 0; i < data.count; ++i) {
    int32_t label = labels->bytes[labels->dataOffset + i];
    if (label >= kNumClasses)
      return Error::make(labelsPath + ": label " + std::to_string(label) + " at index " +
                         std::to_string(i) + " is out of range 0.." +
                         std::to_string(kNumClasses - 1));
    data.labels.push_back(label);
  }
  return data;
}

} // namespace dtnn
