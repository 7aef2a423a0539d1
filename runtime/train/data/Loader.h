// Batches for training and evaluation, prepared on a background thread while the caller works
// on the previous batch: normalized float images, or token sequences as they are.
#pragma once

#include "runtime/train/data/Dataset.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace dtnn {

// Per-channel normalization applied after scaling u8 pixels to [0,1]: x = (v/255 - mean)/std,
// computed in float. Empty vectors mean scale only; one value applies to every channel.
struct Normalization {
  std::vector<float> mean, std;
};

// One batch: size samples back to back, as floats (images) or i32 tokens, and their labels
// (the data set's labelsPerSample each). In a run over several ranks it is this rank's part
// of a global batch: `samples` of the global batch's `globalSize` (its share of the step). A
// rank whose part is empty gets one stand-in sample (the global batch's first) and samples =
// 0, so that it still runs the step and joins its collectives with weight 0.
struct Batch {
  int64_t size = 0;
  int64_t samples = 0;
  int64_t globalSize = 0;
  int64_t offset = 0;  // of this rank's first sample in the global batch
  int64_t counted = 0; // labels of the `samples` a loss counts (not the ignore index)
  std::vector<float> images;
  std::vector<int32_t> tokens;
  std::vector<int32_t> labels;
  bool tokenInputs = false; // the inputs are `tokens`, not `images`
  // The inputs, and the bytes of one sample's.
  const void *input() const {
    return tokenInputs ? static_cast<const void *>(tokens.data()) : images.data();
  }
  size_t sampleBytes() const {
    if (!size) return 0;
    return tokenInputs ? tokens.size() / size * sizeof(int32_t) : images.size() / size * sizeof(float);
  }
};

// How a BatchLoader walks its samples.
struct LoaderOptions {
  int64_t batch = 64;     // Samples per batch; must be positive.
  bool shuffle = true;    // Shuffle the order every epoch, seeded by (seed, epoch).
  bool dropLast = false;  // Drop the last batch of an epoch if it is partial.
  uint64_t seed = 0;      // Seed of the shuffle.
  Normalization norm;     // Normalization of the pixels.
  bool prefetch = true;   // Prepare the next batches on a background thread.
  int rank = 0, ranks = 1; // This rank's part of each batch (of `batch` samples in all).
};

// Iterates over a dataset in batches, one epoch at a time. The content of every batch depends
// only on the data, the indices, the options and the epoch, never on thread timing.
class BatchLoader {
public:
  // Iterates over the samples `indices` of `data` (all if empty); data must outlive the loader.
  // The loader starts at epoch 0.
  BatchLoader(const Dataset &data, std::vector<int64_t> indices, LoaderOptions opts);
  // Stops and joins the prefetch thread, even in the middle of an epoch.
  ~BatchLoader();
  BatchLoader(const BatchLoader &) = delete;
  BatchLoader &operator=(const BatchLoader &) = delete;

  // Starts epoch `epoch`: its order is a shuffle seeded by (seed, epoch) alone, so resuming at
  // epoch e gives the same order as getting there from epoch 0.
  void startEpoch(int64_t epoch);
  // Fills out with the next batch and returns true, or returns false at the end of the epoch.
  // What preparing the batch throws (std::bad_alloc) is rethrown here, also from the prefetch
  // thread.
  bool next(Batch &out);
  // Number of batches in one epoch.
  int64_t batchesPerEpoch() const;
  // Number of samples the loader iterates over.
  int64_t size() const;
  // Skips the next `batches` batches of the current epoch, as when resuming mid-epoch.
  void skip(int64_t batches);

private:
  // Builds batch number b of the current order.
  void makeBatch(int64_t b, Batch &out) const;
  // Starts the prefetch thread at batch nextBatch_.
  void startWorker();
  // Stops and joins the prefetch thread and drops what it prepared.
  void stopWorker();
  // Body of the prefetch thread: prepares batches first..end-1 in order.
  void work(int64_t first);

  const Dataset &data_;
  std::vector<int64_t> indices_;
  LoaderOptions opts_;
  int64_t sampleNumel_ = 1;
  std::vector<std::vector<float>> lookup_;  // Per channel: the float value of each u8.
  std::vector<int64_t> order_;              // Sample indices of the current epoch, in order.
  int64_t nextBatch_ = 0;                   // Next batch next() returns.

  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> queue_;  // Prepared batches, at most two.
  bool stop_ = false;        // Tells the worker to quit.
  std::exception_ptr failure_;  // What the worker threw (out of memory); next() rethrows it.
};

// The sizes of this rank's batches in an epoch over `samples` samples under
// `opts`, largest first, each once: the whole batch, and the last one when it
// is partial (a rank whose part is empty gets one stand-in sample).
std::vector<int64_t> batchSizes(int64_t samples, const LoaderOptions &opts);

// Splits samples 0..count-1 into {train, validation}: validation is the first
// round(fraction * count) entries of a permutation seeded by seed; both are sorted ascending.
// fraction must be in [0,1).
std::pair<std::vector<int64_t>, std::vector<int64_t>> splitValidation(int64_t count,
                                                                       double fraction,
                                                                       uint64_t seed);

} // namespace dtnn
