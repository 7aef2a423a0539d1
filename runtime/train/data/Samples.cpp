// Samples into batches (see Samples.h). Normalisation is a table per channel of the float each
// u8 value becomes, so that writing a sample is a lookup per pixel, fused with the layout change
// (HWC to CHW), the flip and the padding.
#include "runtime/train/data/Samples.h"

#include "ir/Files.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <type_traits>

#include <fcntl.h>
#include <xmmintrin.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dtnn {
namespace {

// Image files larger than this are refused before they are read.
constexpr uint64_t kMaxImageFileBytes = uint64_t(1) << 30;
// An unreadable image is replaced by the first readable one of the next this many.
constexpr int64_t kReplacementTries = 16;

// Returns the float value of every u8 pixel: (v/255 - mean)/std.
std::vector<float> lookupTable(float mean, float std) {
  std::vector<float> table(256);
  for (int v = 0; v < 256; ++v) table[size_t(v)] = (float(v) / 255.0f - mean) / std;
  return table;
}

// Reads the whole file at `path` into `bytes`. Opened without blocking (a FIFO would wait for a
// writer) and without noting the file among the run's inputs, which would grow with the data set.
Error readWholeFile(const std::string &path, std::vector<uint8_t> &bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Error::make(path + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return Error::make(path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return Error::make(path + ": is " + fileTypeName(st.st_mode) + ", not an image file");
  uint64_t size = uint64_t(st.st_size);
  if (size > kMaxImageFileBytes)
    return Error::make(path + ": is " + std::to_string(size) + " bytes, more than an image file " +
                       "may be (" + std::to_string(kMaxImageFileBytes) + ")");
  bytes.resize(size_t(size));
  for (size_t done = 0; done < size;) {
    ssize_t got = ::read(fd, bytes.data() + done, size_t(size) - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      return Error::make(path + ": cannot read all of its " + std::to_string(size) + " bytes" +
                         (got < 0 ? std::string(": ") + std::strerror(errno) : ""));
    done += size_t(got);
  }
  return Error::success();
}

} // namespace

bool namesImages(const std::string &path) {
  struct stat st;
  return (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) || isImageFileName(path);
}

void BadImageLog::add(const std::string &message) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (count_++ == 0) first_ = message;
}

int64_t BadImageLog::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return count_;
}

std::string BadImageLog::first() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_;
}

SampleWriter::SampleWriter(const Dataset &data, const Normalization &norm,
                           const ImageTransform &transform, uint64_t seed, bool bytes)
    : data_(data), transform_(transform), seed_(seed), bytes_(bytes) {
  assert(norm.mean.size() == norm.std.size() && "mean and std need one value per channel");
  if (data_.tokenSamples) return; // Tokens are not normalized.
  if (bytes_) {
    for (int v = 0; v < 256; ++v) identity_.push_back(uint8_t(v));
    return;
  }
  if (norm.mean.empty()) {
    lookup_.push_back(lookupTable(0.0f, 1.0f)); // Exactly v/255.
    return;
  }
  assert((norm.mean.size() == 1 || data_.sampleShape.empty() ||
          int64_t(norm.mean.size()) == data_.sampleShape[0]) &&
         "normalization needs one value or one per channel");
  for (size_t c = 0; c < norm.mean.size(); ++c)
    lookup_.push_back(lookupTable(norm.mean[c], norm.std[c]));
}

Expected<int64_t> SampleWriter::write(int64_t sample, int64_t epoch, void *dst, SampleScratch &s,
                                      BadImageLog &bad) const {
  if (data_.tokenSamples) {
    const int64_t numel = data_.sampleNumel();
    const int32_t *from = data_.tokens.data() + sample * numel;
    std::copy(from, from + numel, static_cast<int32_t *>(dst));
    return sample;
  }
  if (bytes_) return writeImage(sample, epoch, static_cast<uint8_t *>(dst), s, bad);
  return writeImage(sample, epoch, static_cast<float *>(dst), s, bad);
}

template <typename T> const T *SampleWriter::table(int64_t c) const {
  if constexpr (std::is_same_v<T, uint8_t>)
    return identity_.data();
  else
    return lookup_[lookup_.size() > 1 ? size_t(c) : 0].data();
}

template <typename T>
Expected<int64_t> SampleWriter::writeImage(int64_t sample, int64_t epoch, T *dst,
                                           SampleScratch &s, BadImageLog &bad) const {
  const int64_t numel = data_.sampleNumel();
  if (data_.chunks) {
    size_t chunk = data_.chunks->chunkOf(sample);
    Expected<NpzChunks::Pixels> pixels = data_.chunks->pixels(chunk);
    if (!pixels) return pixels.takeError();
    writePlanar((*pixels)->data() + (sample - data_.chunks->firstSample(chunk)) * numel, sample,
                epoch, dst);
    return sample;
  }
  if (!data_.files) {
    writePlanar(data_.pixels.data() + sample * numel, sample, epoch, dst);
    return sample;
  }
  for (int64_t k = 0; k <= kReplacementTries; ++k) {
    int64_t candidate = (sample + k) % data_.count;
    Error e = writeFile(candidate, epoch, dst, s);
    if (!e) return candidate;
    if (!data_.skipBadImages)
      return Error::make(e.message() + " (the data source's bad_images=\"skip\" replaces such "
                                       "images by others)");
    bad.add(e.message());
  }
  return Error::make(data_.files->path(sample) + " and the " + std::to_string(kReplacementTries) +
                     " images after it cannot be read; the first: " + bad.first());
}

template <typename T>
void SampleWriter::writePlanar(const uint8_t *src, int64_t sample, int64_t epoch, T *dst) const {
  const std::vector<int64_t> &shape = data_.sampleShape;
  const int64_t numel = data_.sampleNumel();
  const int64_t channels = tables();
  const int64_t plane = numel / channels;
  if (!transform_.random() || shape.size() != 3) {
    for (int64_t c = 0; c < channels; ++c) {
      const T *table = this->table<T>(c);
      for (int64_t k = 0; k < plane; ++k) *dst++ = table[*src++];
    }
    return;
  }
  // An image [C, H, W] (channels may share a table) through its window.
  const int64_t C = shape[0], H = shape[1], W = shape[2];
  SampleDraws draws(seed_, epoch, sample);
  PlanarWindow w = planarWindow(H, W, transform_, draws);
  for (int64_t c = 0; c < C; ++c) {
    const T *table = this->table<T>(c);
    const uint8_t *chan = src + c * H * W;
    for (int64_t y = 0; y < H; ++y) {
      int64_t sy = y + w.dy;
      for (int64_t x = 0; x < W; ++x) {
        int64_t sx = (w.flip ? W - 1 - x : x) + w.dx;
        bool inside = sy >= 0 && sy < H && sx >= 0 && sx < W;
        *dst++ = table[inside ? chan[sy * W + sx] : 0];
      }
    }
  }
}

template <typename T>
Error SampleWriter::writeFile(int64_t sample, int64_t epoch, T *dst, SampleScratch &s) const {
  std::string path = data_.files->path(sample);
  if (Error e = readWholeFile(path, s.file)) return e;
  const int64_t H = transform_.height, W = transform_.width;
  s.pixels.resize(size_t(H * W * 3));
  SampleDraws draws(seed_, epoch, sample);
  Expected<bool> flip = transformImage(s.file.data(), s.file.size(), transform_, data_.maxPixels,
                                       draws, s.transform, s.pixels.data());
  if (!flip) return Error::make(path + ": " + flip.error().message());
  // HWC to CHW, flipped or not, through the tables; floats four at a time, stored past the
  // caches where the output is aligned (a batch of images is larger than they are, and it is
  // read next by the copy into the model's input, not by this thread).
  for (int64_t c = 0; c < 3; ++c) {
    const T *table = this->table<T>(c);
    for (int64_t y = 0; y < H; ++y) {
      const uint8_t *row = s.pixels.data() + y * W * 3 + c;
      int64_t step = *flip ? -3 : 3, first = *flip ? (W - 1) * 3 : 0;
      const uint8_t *p = row + first;
      int64_t x = 0;
      if constexpr (std::is_same_v<T, float>)
        if (reinterpret_cast<uintptr_t>(dst) % 16 == 0)
          for (; x + 4 <= W; x += 4, dst += 4, p += 4 * step)
            _mm_stream_ps(dst, _mm_setr_ps(table[p[0]], table[p[step]], table[p[2 * step]],
                                           table[p[3 * step]]));
      for (; x < W; ++x, p += step) *dst++ = table[*p];
    }
  }
  _mm_sfence(); // the streamed stores are seen before the batch is handed over
  return Error::success();
}

} // namespace dtnn
