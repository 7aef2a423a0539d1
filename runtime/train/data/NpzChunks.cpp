// Streamed NPZ chunks (see NpzChunks.h). The cache evicts the chunk used longest ago when it is
// full; a worker still reading an evicted chunk keeps it alive through its shared pointer, so
// eviction never pulls pixels from under a reader. Orders come from runtime::shuffle, the same
// on every rank and with every standard library.
#include "runtime/train/data/NpzChunks.h"

#include "runtime/Random.h"
#include "runtime/train/data/Npz.h"

#include <algorithm>
#include <cassert>

namespace dtnn {

NpzChunks::NpzChunks(std::vector<std::string> files, const std::vector<int64_t> &counts,
                     std::vector<int64_t> sampleShape, int64_t window)
    : files_(std::move(files)), sampleShape_(std::move(sampleShape)),
      window_(std::max<int64_t>(window, 1)), capacity_(size_t(2 * window_)) {
  assert(files_.size() == counts.size() && "one count a chunk");
  first_.push_back(0);
  for (int64_t n : counts) first_.push_back(first_.back() + n);
}

size_t NpzChunks::chunkOf(int64_t sample) const {
  assert(sample >= 0 && sample < count() && "sample out of range");
  return size_t(std::upper_bound(first_.begin(), first_.end(), sample) - first_.begin() - 1);
}

Expected<std::vector<uint8_t>> NpzChunks::read(size_t chunk) const {
  Expected<NpyArray> x = readNpzArray(files_[chunk], "x");
  if (!x) return x.takeError();
  std::vector<int64_t> shape = {first_[chunk + 1] - first_[chunk]};
  shape.insert(shape.end(), sampleShape_.begin(), sampleShape_.end());
  // The file changed since it was indexed.
  if (x->dtype != "|u1" || x->shape != shape)
    return Error::make(files_[chunk] + ": 'x' changed since the chunks were indexed (it is no "
                                       "longer uint8 of the shape it had)");
  return std::move(x->data);
}

Expected<NpzChunks::Pixels> NpzChunks::pixels(size_t chunk) const {
  std::unique_lock<std::mutex> lock(mutex_);
  loaded_.wait(lock, [&] { return !loading_.count(chunk); });
  if (auto it = cache_.find(chunk); it != cache_.end()) {
    it->second.second = ++clock_;
    return it->second.first;
  }
  loading_.insert(chunk);
  lock.unlock();
  Expected<std::vector<uint8_t>> bytes = read(chunk);
  lock.lock();
  loading_.erase(chunk);
  loaded_.notify_all();
  if (!bytes) return bytes.takeError();
  ++loads_;
  while (cache_.size() >= capacity_) {
    auto oldest = std::min_element(cache_.begin(), cache_.end(), [](const auto &a, const auto &b) {
      return a.second.second < b.second.second;
    });
    cache_.erase(oldest);
  }
  Pixels p = std::make_shared<const std::vector<uint8_t>>(std::move(*bytes));
  cache_[chunk] = {p, ++clock_};
  return p;
}

int64_t NpzChunks::loads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return loads_;
}

std::vector<int64_t> NpzChunks::shuffled(const std::vector<int64_t> &indices, uint64_t seed,
                                         int64_t epoch) const {
  // The indices of each chunk, in the order they come (ascending, so each chunk's are together).
  std::vector<std::vector<int64_t>> byChunk(chunks());
  for (int64_t i : indices) byChunk[chunkOf(i)].push_back(i);
  std::vector<int64_t> order(chunks());
  for (size_t c = 0; c < order.size(); ++c) order[c] = int64_t(c);
  runtime::Random rng(seed, uint64_t(epoch));
  runtime::shuffle(order, rng);
  std::vector<int64_t> out;
  out.reserve(indices.size());
  for (size_t w = 0; w < order.size(); w += size_t(window_)) {
    size_t begin = out.size();
    for (size_t k = w; k < std::min(order.size(), w + size_t(window_)); ++k) {
      const std::vector<int64_t> &mine = byChunk[size_t(order[k])];
      out.insert(out.end(), mine.begin(), mine.end());
    }
    std::vector<int64_t> part(out.begin() + std::ptrdiff_t(begin), out.end());
    runtime::shuffle(part, rng);
    std::copy(part.begin(), part.end(), out.begin() + std::ptrdiff_t(begin));
  }
  return out;
}

} // namespace dtnn
