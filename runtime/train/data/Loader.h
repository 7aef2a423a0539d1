// Batches for training and evaluation, prepared by worker threads while the caller works on
// the previous batch: normalized float images, augmented and decoded from files when the data
// set is a folder of images, or token sequences as they are.
#pragma once

#include "runtime/train/data/Dataset.h"
#include "runtime/train/data/Samples.h"

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace dtnn {

// One batch: size samples back to back, as floats or bytes (images) or i32 tokens, and their labels
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
  std::vector<uint8_t> pixels;
  std::vector<int32_t> tokens;
  std::vector<int32_t> labels;
  bool tokenInputs = false; // the inputs are `tokens`, not `images`
  bool byteInputs = false;  // the inputs are `pixels` (u8 images), not `images`
  // The inputs, and the bytes of one sample's.
  const void *input() const {
    if (tokenInputs) return tokens.data();
    return byteInputs ? static_cast<const void *>(pixels.data()) : images.data();
  }
  size_t sampleBytes() const {
    if (!size) return 0;
    if (tokenInputs) return tokens.size() / size * sizeof(int32_t);
    return byteInputs ? pixels.size() / size : images.size() / size * sizeof(float);
  }
};

// How a BatchLoader walks its samples.
struct LoaderOptions {
  int64_t batch = 64;     // Samples per batch; must be positive.
  bool shuffle = true;    // Shuffle the order every epoch, seeded by (seed, epoch).
  bool dropLast = false;  // Drop the last batch of an epoch if it is partial.
  uint64_t seed = 0;      // Seed of the shuffle.
  Normalization norm;     // Normalization of the pixels (unless bytes).
  bool bytes = false;     // Images as their u8 pixels, for a model that normalizes them itself.
  ImageTransform transform; // Augmentation, and for image files the crop and resize.
  bool prefetch = true;   // Prepare the next batches on background threads.
  int workers = 1;        // Threads preparing batches (with prefetch), each a whole batch.
  int rank = 0, ranks = 1; // This rank's part of each batch (of `batch` samples in all).
  // Called by worker `worker` after it prepared batch `batch` of an epoch, from `start` to `end`
  // (runtime::monotonicSeconds()), on that worker's thread (a run's trace records it).
  std::function<void(int64_t batch, int worker, double start, double end)> onBatch;
};

// Iterates over a dataset in batches, one epoch at a time. The content of every batch depends
// only on the data, the indices, the options and the epoch, never on thread timing. With W
// workers, worker w prepares batches w, w + W, ...; at most max(2, W) batches wait, prepared or
// in preparation, so memory is bounded whatever the data set's size.
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
  // Fills out with the next batch and returns true, or returns false at the end of the epoch
  // or when the batch could not be made (an image file that cannot be read, with bad images not
  // skipped): then takeError() says why. What preparing the batch throws (std::bad_alloc) is
  // rethrown here, also from a worker.
  bool next(Batch &out);
  // Why the last next() returned false; success at the end of an epoch.
  Error takeError();
  // Seconds next() has waited for a batch since the last call (its time starved of data).
  double takeWaitSeconds();
  // Image files that could not be read and were replaced by others.
  const BadImageLog &badImages() const { return *bad_; }
  // Number of batches in one epoch.
  int64_t batchesPerEpoch() const;
  // Number of samples the loader iterates over.
  int64_t size() const;
  // Skips the next `batches` batches of the current epoch, as when resuming mid-epoch.
  void skip(int64_t batches);

private:
  // Builds batch number b of the current order.
  Error makeBatch(int64_t b, Batch &out, SampleScratch &scratch) const;
  // Starts the workers at batch nextBatch_.
  void startWorkers();
  // Stops and joins the workers and drops what they prepared.
  void stopWorkers();
  // Body of worker w: prepares batches first + w, first + w + W, ... of the epoch.
  void work(int64_t first, int w);
  // The most batches prepared or in preparation ahead of the caller.
  int64_t depth() const;

  const Dataset &data_;
  std::vector<int64_t> indices_;
  LoaderOptions opts_;
  int64_t sampleNumel_ = 1;
  SampleWriter writer_;
  std::unique_ptr<BadImageLog> bad_;
  SampleScratch scratch_;        // next()'s own, without prefetch
  std::vector<int64_t> order_;   // Sample indices of the current epoch, in order.
  int64_t epoch_ = 0;
  int64_t nextBatch_ = 0;        // Next batch next() returns.
  double waited_ = 0;            // Seconds next() waited since takeWaitSeconds.
  Error error_;                  // Why a batch could not be made.

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int64_t, Batch> ready_;    // Prepared batches by number.
  std::map<int64_t, std::string> failed_; // Batches that could not be made, and why.
  bool stop_ = false;                 // Tells the workers to quit.
  std::exception_ptr failure_;  // What a worker threw (out of memory); next() rethrows it.
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
