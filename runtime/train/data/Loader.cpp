// Batch loader. Every batch is a pure function of (data, order, epoch, batch number), so the
// workers only change when a batch is built, never what it holds. They are started lazily by
// next() at the current batch, and stopped by anything that changes the order or position.
// Orders come from Fisher-Yates driven by runtime::Random streams, never std::shuffle, so they
// are the same with every standard library.
#include "runtime/train/data/Loader.h"

#include "runtime/Queue.h"
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

} // namespace

BatchLoader::BatchLoader(const Dataset &data, std::vector<int64_t> indices, LoaderOptions opts)
    : data_(data), indices_(std::move(indices)), opts_(std::move(opts)),
      writer_(data_, opts_.norm, opts_.transform, opts_.seed, opts_.bytes),
      bad_(std::make_unique<BadImageLog>()) {
  assert(opts_.batch > 0 && "batch size must be positive");
  assert(opts_.workers > 0 && "a loader needs a worker");
  if (indices_.empty()) {
    indices_.resize(size_t(data_.count));
    std::iota(indices_.begin(), indices_.end(), int64_t(0));
  }
  for ([[maybe_unused]] int64_t i : indices_)
    assert(i >= 0 && i < data_.count && "sample index out of range");
  sampleNumel_ = data_.sampleNumel();
  startEpoch(0);
}

BatchLoader::~BatchLoader() { stopWorkers(); }

void BatchLoader::startEpoch(int64_t epoch) {
  stopWorkers();
  order_ = indices_;
  if (opts_.shuffle && data_.chunks) {
    // A window of chunks at a time, so that the chunk cache serves the batches.
    order_ = data_.chunks->shuffled(indices_, opts_.seed, epoch);
  } else if (opts_.shuffle) {
    runtime::Random rng(opts_.seed, uint64_t(epoch));
    runtime::shuffle(order_, rng);
  }
  epoch_ = epoch;
  nextBatch_ = 0;
}

bool BatchLoader::next(Batch &out) {
  if (nextBatch_ >= batchesPerEpoch() || error_)
    return false;
  double started = runtime::monotonicSeconds();
  if (!opts_.prefetch) {
    error_ = makeBatch(nextBatch_, out, scratch_);
    if (error_) return false;
    ++nextBatch_;
    return true;
  }
  if (workers_.empty())
    startWorkers();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] {
    return ready_.count(nextBatch_) || failed_.count(nextBatch_) || failure_;
  });
  waited_ += runtime::monotonicSeconds() - started;
  if (auto f = failed_.find(nextBatch_); f != failed_.end()) {
    error_ = Error::make(f->second);
    lock.unlock();
    stopWorkers();
    return false;
  }
  if (!ready_.count(nextBatch_)) {
    std::exception_ptr failure = std::exchange(failure_, nullptr);
    lock.unlock();
    stopWorkers();
    std::rethrow_exception(failure);
  }
  auto it = ready_.find(nextBatch_);
  out = std::move(it->second);
  ready_.erase(it);
  ++nextBatch_;
  changed_.notify_all();
  return true;
}

Error BatchLoader::takeError() { return std::exchange(error_, Error::success()); }

double BatchLoader::takeWaitSeconds() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(waited_, 0.0);
}

int64_t BatchLoader::batchesPerEpoch() const {
  int64_t n = size();
  // Written so that no batch size, however large, overflows.
  return n / opts_.batch + (!opts_.dropLast && n % opts_.batch != 0 ? 1 : 0);
}

int64_t BatchLoader::size() const { return int64_t(indices_.size()); }

void BatchLoader::skip(int64_t batches) {
  assert(batches >= 0 && "cannot skip backwards");
  stopWorkers();
  nextBatch_ = std::min(nextBatch_ + batches, batchesPerEpoch());
}

Error BatchLoader::makeBatch(int64_t b, Batch &out, SampleScratch &scratch) const {
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
  out.byteInputs = !data_.tokenSamples && opts_.bytes;
  const size_t numel = size_t(out.size * sampleNumel_);
  out.tokens.resize(out.tokenInputs ? numel : 0);
  out.pixels.resize(out.byteInputs ? numel : 0);
  out.images.resize(out.tokenInputs || out.byteInputs ? 0 : numel);
  int64_t perSample = data_.labelsPerSample;
  out.labels.resize(size_t(out.size * perSample));
  out.counted = 0;
  for (int64_t j = 0; j < out.size; ++j) {
    void *dst = out.tokenInputs  ? static_cast<void *>(out.tokens.data() + j * sampleNumel_)
                : out.byteInputs ? static_cast<void *>(out.pixels.data() + j * sampleNumel_)
                                 : static_cast<void *>(out.images.data() + j * sampleNumel_);
    Expected<int64_t> sample = writer_.write(order_[size_t(begin + j)], epoch_, dst, scratch, *bad_);
    if (!sample) return sample.takeError();
    const int32_t *from = data_.labels.data() + *sample * perSample;
    std::copy(from, from + perSample, out.labels.begin() + j * perSample);
    if (out.samples > 0)
      out.counted += perSample - std::count(from, from + perSample, data_.ignoreIndex);
  }
  return Error::success();
}

int64_t BatchLoader::depth() const { return std::max<int64_t>(kQueueDepth, opts_.workers); }

void BatchLoader::startWorkers() {
  assert(workers_.empty() && ready_.empty());
  stop_ = false;
  for (int w = 0; w < opts_.workers; ++w)
    workers_.emplace_back(&BatchLoader::work, this, nextBatch_, w);
}

void BatchLoader::stopWorkers() {
  if (workers_.empty())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  for (std::thread &t : workers_) t.join();
  workers_.clear();
  ready_.clear();
  failed_.clear();
  failure_ = nullptr;
}

void BatchLoader::work(int64_t first, int w) {
  SampleScratch scratch;
  for (int64_t b = first + w, end = batchesPerEpoch(); b < end; b += opts_.workers) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || b < nextBatch_ + depth(); });
      if (stop_)
        return;
    }
    Batch batch;
    Error e;
    try {
      double started = opts_.onBatch ? runtime::monotonicSeconds() : 0;
      e = makeBatch(b, batch, scratch);
      if (opts_.onBatch && !e) opts_.onBatch(b, w, started, runtime::monotonicSeconds());
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      failure_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_)
      return;
    if (e)
      failed_[b] = e.message();
    else
      ready_[b] = std::move(batch);
    changed_.notify_all();
    if (!failed_.empty()) return;
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
  runtime::shuffle(perm, rng);
  auto numVal = std::ptrdiff_t(std::llround(fraction * double(count)));
  std::vector<int64_t> val(perm.begin(), perm.begin() + numVal);
  std::vector<int64_t> train(perm.begin() + numVal, perm.end());
  std::sort(val.begin(), val.end());
  std::sort(train.begin(), train.end());
  return {std::move(train), std::move(val)};
}

} // namespace dtnn
