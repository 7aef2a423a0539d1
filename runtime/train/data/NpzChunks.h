// PyDTNN's ImageNet chunks streamed: a folder of .npz files, each `x` uint8 [N, C, H, W] and
// `y` the labels, indexed once (labels and sample counts; no pixels) and decompressed a chunk
// at a time as batches need them, through a cache of a few chunks that the loader's workers
// share. The epoch's order visits the chunks in a shuffled order, a window of them at a time,
// with the samples of a window shuffled together, so that memory holds about two windows of
// chunks whatever the data set's size.
#pragma once

#include "ir/Error.h"

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace dtnn {

class NpzChunks {
public:
  using Pixels = std::shared_ptr<const std::vector<uint8_t>>;

  // files: the chunks in order; counts: the samples of each; sampleShape [C, H, W]; window: the
  // chunks whose samples an epoch shuffles together (at least 1). The cache keeps 2 * window
  // chunks.
  NpzChunks(std::vector<std::string> files, const std::vector<int64_t> &counts,
            std::vector<int64_t> sampleShape, int64_t window);

  int64_t count() const { return first_.back(); }
  size_t chunks() const { return files_.size(); }
  int64_t window() const { return window_; }
  const std::string &file(size_t chunk) const { return files_[chunk]; }
  // The chunk that holds sample i, and its first sample.
  size_t chunkOf(int64_t sample) const;
  int64_t firstSample(size_t chunk) const { return first_[chunk]; }

  // The pixels of chunk `chunk` (all its samples back to back), from the cache or decompressed
  // now; one thread decompresses a chunk while others that need it wait. Errors name the file.
  Expected<Pixels> pixels(size_t chunk) const;
  // Chunks decompressed so far (each time a chunk was not in the cache).
  int64_t loads() const;

  // The order of an epoch over `indices` (ascending sample numbers): the chunks shuffled by a
  // stream of (seed, epoch), then the samples of each `window` consecutive chunks of that order
  // shuffled together by the same stream.
  std::vector<int64_t> shuffled(const std::vector<int64_t> &indices, uint64_t seed,
                                int64_t epoch) const;

private:
  Expected<std::vector<uint8_t>> read(size_t chunk) const;

  std::vector<std::string> files_;
  std::vector<int64_t> first_; // first sample of each chunk, and the count at the end
  std::vector<int64_t> sampleShape_;
  int64_t window_;
  size_t capacity_;

  mutable std::mutex mutex_;
  mutable std::condition_variable loaded_;
  mutable std::map<size_t, std::pair<Pixels, uint64_t>> cache_; // chunk: pixels, last use
  mutable std::set<size_t> loading_;
  mutable uint64_t clock_ = 0;
  mutable int64_t loads_ = 0;
};

} // namespace dtnn
