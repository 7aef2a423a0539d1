// IDX reader. Each file is read through zlib (which passes plain files through): the header
// first, then exactly the data it promises, then whatever trails it is counted and refused.
#include "runtime/train/data/Idx.h"

#include "ir/Files.h"
#include "runtime/HostMemory.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdint>
#include <cstdio>

namespace dtnn {
namespace {

constexpr int32_t kNumClasses = 10;

// A gzip or plain file read through zlib, closed on destruction.
class GzFile {
public:
  // Opens a regular file only: gzopen would block on a FIFO.
  explicit GzFile(const std::string &path) : path_(path) {
    uint64_t size = 0;
    Expected<FilePtr> f = openRegularFile(path, size, "data file");
    if (!f) {
      openError_ = f.error().message();
      return;
    }
    int fd = ::dup(::fileno(f->get()));
    file_ = fd >= 0 ? gzdopen(fd, "rb") : nullptr;
    if (!file_) {
      openError_ = std::string("cannot open: ") + std::strerror(errno);
      if (fd >= 0) ::close(fd);
    }
  }
  ~GzFile() {
    if (file_)
      gzclose(file_);
  }
  GzFile(const GzFile &) = delete;
  GzFile &operator=(const GzFile &) = delete;

  bool isOpen() const { return file_ != nullptr; }
  // Why the file did not open ("is a directory", "cannot open: <reason>").
  const std::string &openError() const { return openError_; }

  // Reads up to n bytes into dst (dst may be null to skip them); returns how many were read,
  // fewer than n only at the end of the data.
  Expected<uint64_t> read(uint8_t *dst, uint64_t n) {
    uint8_t scratch[1 << 16];
    uint64_t done = 0;
    while (done < n) {
      unsigned want = unsigned(std::min<uint64_t>(n - done, dst ? 1u << 30 : sizeof(scratch)));
      int got = gzread(file_, dst ? dst + done : scratch, want);
      if (got < 0 || (got == 0 && !gzeof(file_)))
        return corrupt();
      if (got == 0)
        break;
      done += uint64_t(got);
    }
    int code = 0;
    gzerror(file_, &code);
    if (code != Z_OK)
      return corrupt();
    return done;
  }

private:
  Error corrupt() {
    int code = 0;
    std::string why = gzerror(file_, &code);
    return Error::make(path_ + ": corrupt gzip stream (" + why + ")");
  }

  std::string path_;
  gzFile file_ = nullptr;
  std::string openError_;
};

// Reads the big-endian u32 at p.
uint32_t readU32(const uint8_t *p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// A parsed IDX file: its dimensions and its data bytes.
struct IdxFile {
  std::vector<uint64_t> dims;
  std::vector<uint8_t> data;
};

// Reads path and checks it is a u8 IDX file with numDims dimensions and exactly as many data
// bytes as the header promises. The header is checked before any data is read, and only the
// promised bytes are kept, so a small compressed file cannot make the reader take more memory
// than its header announces, nor more than the machine has.
Expected<IdxFile> readIdxFile(const std::string &path, uint32_t numDims) {
  GzFile in(path);
  if (!in.isOpen())
    return Error::make(path + ": " + in.openError());
  uint8_t header[4 + 4 * 4];
  uint64_t headerBytes = 4 + 4 * uint64_t(numDims);
  Expected<uint64_t> got = in.read(header, headerBytes);
  if (!got)
    return got.takeError();
  if (*got < 4)
    return Error::make(path + ": truncated header (" + std::to_string(*got) + " bytes)");
  uint32_t magic = readU32(header);
  if ((magic >> 8) != 0x08) {
    char hex[64];
    std::snprintf(hex, sizeof(hex), "bad magic 0x%08x, expected 0x%08x", magic, 0x800 | numDims);
    return Error::make(path + ": " + hex);
  }
  if ((magic & 0xff) != numDims)
    return Error::make(path + ": wrong dimension count " + std::to_string(magic & 0xff) +
                       ", expected " + std::to_string(numDims));
  if (*got < headerBytes)
    return Error::make(path + ": truncated header (" + std::to_string(*got) + " bytes)");
  IdxFile idx;
  uint64_t expected = 1;
  bool tooBig = false;
  for (uint32_t d = 0; d < numDims; ++d) {
    uint64_t dim = readU32(header + 4 + 4 * d);
    idx.dims.push_back(dim);
    tooBig = tooBig || __builtin_mul_overflow(expected, dim, &expected);
  }
  uint64_t memory = runtime::hostMemoryBytes();
  if (tooBig || expected > memory)
    return Error::make(path + ": header promises " +
                       (tooBig ? std::string("over 2^64") : std::to_string(expected)) +
                       " bytes of data, more than the " + runtime::formatBytes(memory) +
                       " of memory");
  idx.data.resize(expected);
  got = in.read(idx.data.data(), expected);
  if (!got)
    return got.takeError();
  if (*got < expected)
    return Error::make(path + ": truncated data: header promises " + std::to_string(expected) +
                       " bytes, found " + std::to_string(*got));
  // One byte tells: a stream with gigabytes of trailing data is refused without inflating them.
  Expected<uint64_t> trailing = in.read(nullptr, 1);
  if (!trailing)
    return trailing.takeError();
  if (*trailing)
    return Error::make(path + ": trailing data after the " + std::to_string(expected) +
                       " bytes the header promises");
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
  data.pixels = std::move(images->data);
  data.labels.reserve(data.count);
  for (int64_t i = 0; i < data.count; ++i) {
    int32_t label = labels->data[size_t(i)];
    if (label >= kNumClasses)
      return Error::make(labelsPath + ": label " + std::to_string(label) + " at index " +
                         std::to_string(i) + " is out of range 0.." +
                         std::to_string(kNumClasses - 1));
    data.labels.push_back(label);
  }
  return data;
}

} // namespace dtnn
