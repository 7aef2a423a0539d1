// Batch loader. Every batch is a pure function of (data, order, batch number), so the prefetch
// thread only changes when a batch is built, never what it holds. The thread is started lazily
// by next() at the current batch, and stopped by anything that changes the order or position.
// Orders come from Fisher-Yates driven by runtime::Random streams, never std::shuffle, so they
// are the same with every standard library.
#include "runtime/train/data/Loader.h"

#include "runtime/Random.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <numeric>
#include <utility>

namespace dtnn {
namespace {

// Most prepared batches waiting for the caller.
constexpr size_t kQueueDepth = 2;
// Seed stream of the validation split, apart from the epoch streams 0, 1, 2, ...
constexpr uint64_t kValidationStream = 0x76616c6964617465ull;

// Returns a uniform integer in [0, n) for positive n, rejecting the few draws that would
// make some residues more likely than others.
uint64_t below(runtime::Random &rng, uint64_t n) {
  uint64_t threshold = (0 - n) % n;
  while (true) {
    uint64_t r = rng.next();
    if (r >= threshold)
      return r % n;
  }
}

// Shuffles v in place with Fisher-Yates driven by rng.
void shuffle(std::vector<int64_t> &v, runtime::Random &rng) {
  for (size_t i = v.size(); i > 1; --i)
    std::swap(v[i - 1], v[below(rng, i)]);
}

// Returns the float value of every u8 pixel: (v/255 - mean)/std.
std::vector<float> lookupTable(float mean, float std) {
  std::vector<float> table(256);
  for (int v = 0; v < 256; ++v)
    table[v] = (float(v) / 255.0f - mean) / std;
  return table;
}

} // namespace

BatchLoader::BatchLoader(const Dataset &data, std::vector<int64_t> indices, LoaderOptions opts)
    : data_(data), indices_(std::move(indices)), opts_(std::move(opts)) {
  assert(opts_.batch > 0 && "batch size must be positive");
  if (indices_.empty()) {
    indices_.resize(size_t(data_.count));
    std::iota(indices_.begin(), indices_.end(), int64_t(0));
  }
  for ([[maybe_unused]] int64_t i : indices_)
    assert(i >= 0 && i < data_.count && "sample index out of range");
  sampleNumel_ = data_.sampleNumel();

  const Normalization &norm = opts_.norm;
  assert(norm.mean.size() == norm.std.size() && "mean and std need one value per channel");
  if (data_.tokenSamples) {
    // Tokens are not normalized.
  } else if (norm.mean.empty()) {
    lookup_.push_back(lookupTable(0.0f, 1.0f)); // Exactly v/255.
  } else {
    assert((norm.mean.size() == 1 || data_.sampleShape.empty() ||
            int64_t(norm.mean.size()) == data_.sampleShape[0]) &&
           "normalization needs one value or one per channel");
    for (size_t c = 0; c < norm.mean.size(); ++c)
      lookup_.push_back(lookupTable(norm.mean[c], norm.std[c]));
  }
  startEpoch(0);
}

BatchLoader::~BatchLoader() { stopWorker(); }

void BatchLoader::startEpoch(int64_t epoch) {
  stopWorker();
  order_ = indices_;
  if (opts_.shuffle) {
    runtime::Random rng(opts_.seed, uint64_t(epoch));
    shuffle(order_, rng);
  }
  nextBatch_ = 0;
}

bool BatchLoader::next(Batch &out) {
  if (nextBatch_ >= batchesPerEpoch())
    return false;
  if (!opts_.prefetch) {
    makeBatch(nextBatch_++, out);
    return true;
  }
  if (!worker_.joinable())
    startWorker();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !queue_.empty() || failure_; });
  if (queue_.empty()) {
    std::exception_ptr failure = std::exchange(failure_, nullptr);
    lock.unlock();
    stopWorker();
    std::rethrow_exception(failure);
  }
  out = std::move(queue_.front());
  queue_.pop_front();
  ++nextBatch_;
  changed_.notify_all();
  return true;
}

int64_t BatchLoader::batchesPerEpoch() const {
  int64_t n = size();
  // Written so that no batch size, however large, overflows.
  return n / opts_.batch + (!opts_.dropLast && n % opts_.batch != 0 ? 1 : 0);
}

int64_t BatchLoader::size() const { return int64_t(indices_.size()); }

void BatchLoader::skip(int64_t batches) {
  assert(batches >= 0 && "cannot skip backwards");
  stopWorker();
  nextBatch_ = std::min(nextBatch_ + batches, batchesPerEpoch());
}

void BatchLoader::makeBatch(int64_t b, Batch &out) const {
  int64_t first = b * opts_.batch;
  int64_t global = std::min(first + opts_.batch, size()) - first;
  // This rank's contiguous part: ranks differ by at most one sample.
  int64_t begin = first + global * opts_.rank / opts_.ranks;
  int64_t end = first + global * (opts_.rank + 1) / opts_.ranks;
  out.globalSize = global;
  out.samples = end - begin;
  out.offset = begin - first;
  if (begin == end) end = (begin = first) + 1; // a stand-in sample
  out.size = end - begin;
  out.tokenInputs = data_.tokenSamples;
  int64_t perSample = data_.labelsPerSample;
  out.labels.resize(size_t(out.size * perSample));
  out.counted = 0;
  for (int64_t j = 0; j < out.size; ++j) {
    int64_t sample = order_[size_t(begin + j)];
    const int32_t *from = data_.labels.data() + sample * perSample;
    std::copy(from, from + perSample, out.labels.begin() + j * perSample);
    if (out.samples > 0)
      out.counted += perSample - std::count(from, from + perSample, data_.ignoreIndex);
  }
  if (data_.tokenSamples) {
    out.images.clear();
    out.tokens.resize(size_t(out.size * sampleNumel_));
    for (int64_t j = 0; j < out.size; ++j) {
      const int32_t *from = data_.tokens.data() + order_[size_t(begin + j)] * sampleNumel_;
      std::copy(from, from + sampleNumel_, out.tokens.begin() + j * sampleNumel_);
    }
    return;
  }
  int64_t channels = lookup_.size() > 1 ? int64_t(lookup_.size()) : 1;
  int64_t channelNumel = sampleNumel_ / channels;
  out.tokens.clear();
  out.images.resize(size_t(out.size * sampleNumel_));
  float *dst = out.images.data();
  for (int64_t j = 0; j < out.size; ++j) {
    const uint8_t *src = data_.pixels.data() + order_[size_t(begin + j)] * sampleNumel_;
    for (int64_t c = 0; c < channels; ++c) {
      const float *table = lookup_[size_t(c)].data();
      for (int64_t k = 0; k < channelNumel; ++k)
        *dst++ = table[*src++];
    }
  }
}

void BatchLoader::startWorker() {
  assert(!worker_.joinable() && queue_.empty());
  stop_ = false;
  worker_ = std::thread(&BatchLoader::work, this, nextBatch_);
}

void BatchLoader::stopWorker() {
  if (!worker_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
  queue_.clear();
  failure_ = nullptr;
}

void BatchLoader::work(int64_t first) {
  for (int64_t b = first, end = batchesPerEpoch(); b < end; ++b) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || queue_.size() < kQueueDepth; });
      if (stop_)
        return;
    }
    Batch batch;
    try {
      makeBatch(b, batch);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      failure_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_)
      return;
    queue_.push_back(std::move(batch));
    changed_.notify_all();
  }
}

std::vector<int64_t> batchSizes(int64_t samples, const LoaderOptions &opts) {
  auto local = [&](int64_t global) {
    int64_t part = global * (opts.rank + 1) / opts.ranks - global * opts.rank / opts.ranks;
    return std::max<int64_t>(part, 1);
  };
  std::vector<int64_t> sizes;
  if (samples <= 0) return sizes;
  int64_t rest = samples % opts.batch;
  if (samples >= opts.batch) sizes.push_back(local(opts.batch));
  if (rest && !opts.dropLast) sizes.push_back(local(rest));
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> splitValidation(int64_t count,
                                                                       double fraction,
                                                                       uint64_t seed) {
  assert(count >= 0 && fraction >= 0.0 && fraction < 1.0 && "bad validation split");
  std::vector<int64_t> perm(size_t(std::max<int64_t>(count, 0)));
  std::iota(perm.begin(), perm.end(), int64_t(0));
  runtime::Random rng(seed, kValidationStream);
  shuffle(perm, rng);
  auto numVal = std::ptrdiff_t(std::llround(fraction * double(count)));
  std::vector<int64_t> val(perm.begin(), perm.begin() + numVal);
  std::vector<int64_t> train(perm.begin() + numVal, perm.end());
  std::sort(val.begin(), val.end());
  std::sort(train.begin(), train.end());
  return {std::move(train), std::move(val)};
}

} // namespace dtnn
