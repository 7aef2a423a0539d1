// Writing one sample into a batch, in the model's input layout (NCHW floats or u8 pixels, or
// i32 tokens): an in-memory image through its augmentation window, an image file read, decoded,
// cropped, resized and flipped, then normalised per channel (floats) or left as it is (bytes,
// for a model that normalizes its images itself). What a sample becomes depends only on the
// data, the transform, the seed, the epoch and the sample's index.
#pragma once

#include "ir/Error.h"
#include "runtime/train/data/Augment.h"
#include "runtime/train/data/Dataset.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace dtnn {

// Per-channel normalization applied after scaling u8 pixels to [0,1]: x = (v/255 - mean)/std,
// computed in float. Empty vectors mean scale only; one value applies to every channel.
struct Normalization {
  std::vector<float> mean, std;
};

// Whether `path` names images to predict: a folder, or a file named as a JPEG or PNG.
bool namesImages(const std::string &path);

// Buffers one worker reuses from sample to sample.
struct SampleScratch {
  TransformScratch transform;
  std::vector<uint8_t> file, pixels;
};

// The image files a loader could not read and replaced by others: how many, and the first.
class BadImageLog {
public:
  void add(const std::string &message);
  // The count so far, and the first message ("" when none).
  int64_t count() const;
  std::string first() const;

private:
  mutable std::mutex mutex_;
  int64_t count_ = 0;
  std::string first_;
};

class SampleWriter {
public:
  // data must outlive the writer. bytes: images are written as their u8 pixels, and norm is
  // not used.
  SampleWriter(const Dataset &data, const Normalization &norm, const ImageTransform &transform,
               uint64_t seed, bool bytes = false);
  // Writes sample `sample` as epoch `epoch` sees it to dst (prod(sampleShape) floats or bytes,
  // or tokens).
  // Returns the sample whose label goes with it: `sample`, or for an image file that cannot be
  // read (when the data set skips those) the next readable one, logged in `bad`. Errors name the
  // file and the problem.
  Expected<int64_t> write(int64_t sample, int64_t epoch, void *dst, SampleScratch &s,
                          BadImageLog &bad) const;

private:
  // An image, in memory or from a file (errors without replacement), written as T (float or
  // uint8_t).
  template <typename T> Expected<int64_t> writeImage(int64_t sample, int64_t epoch, T *dst,
                                                     SampleScratch &s, BadImageLog &bad) const;
  // An image [C, H, W] of u8 pixels at src, in memory, through the transform's window.
  template <typename T>
  void writePlanar(const uint8_t *src, int64_t sample, int64_t epoch, T *dst) const;
  // An image file; errors without replacement.
  template <typename T>
  Error writeFile(int64_t sample, int64_t epoch, T *dst, SampleScratch &s) const;
  // The value each u8 pixel of channel c becomes, and the number of channels with a table of
  // their own (1: one for all).
  template <typename T> const T *table(int64_t c) const;
  int64_t tables() const { return bytes_ ? 1 : int64_t(lookup_.size()); }

  const Dataset &data_;
  ImageTransform transform_;
  uint64_t seed_;
  bool bytes_;
  std::vector<std::vector<float>> lookup_; // per channel (or one for all): the float of each u8
  std::vector<uint8_t> identity_;          // bytes: each u8 itself
};

} // namespace dtnn
