// Synthetic data. Prototypes are uniform random bytes drawn from stream 0 of the seed; sample i
// draws its noise from stream i + 1. The noise of one pixel is the sum of the four 16-bit
// quarters of one 64-bit draw (an Irwin-Hall approximation of a normal), scaled in integers to
// a standard deviation of about kNoiseStd grey levels.
#include "runtime/train/data/Synthetic.h"

#include "runtime/Random.h"

#include <algorithm>
#include <cassert>

namespace dtnn {
namespace {

// Standard deviation of the pixel noise, in grey levels.
constexpr int64_t kNoiseStd = 40;
// Mean of the sum of four uniform 16-bit values.
constexpr int64_t kSumMean = 2 * 65535;
// Standard deviation of that sum: 65536 * sqrt(4 / 12), rounded.
constexpr int64_t kSumStd = 37837;

// Returns bell-shaped integer noise with mean 0 and standard deviation about kNoiseStd.
int64_t noise(runtime::Random &rng) {
  uint64_t bits = rng.next();
  int64_t sum = 0;
  for (int k = 0; k < 4; ++k)
    sum += int64_t((bits >> (16 * k)) & 0xffff);
  return (sum - kSumMean) * kNoiseStd / kSumStd;
}

} // namespace

Dataset makeSynthetic(const std::vector<int64_t> &sampleShape, int32_t numClasses, int64_t count,
                      uint64_t seed) {
  assert(numClasses > 0 && count >= 0 && "bad synthetic dataset size");
  int64_t numel = 1;
  for (int64_t d : sampleShape) {
    assert(d > 0 && "synthetic sample dimensions must be positive");
    numel *= d;
  }
  Dataset data;
  data.count = count;
  data.sampleShape = sampleShape;
  data.numClasses = numClasses;

  std::vector<uint8_t> prototypes(size_t(numClasses * numel));
  runtime::Random protoRng(seed, 0);
  for (uint8_t &p : prototypes)
    p = uint8_t(protoRng.next() >> 56);

  data.pixels.resize(size_t(count * numel));
  data.labels.resize(size_t(count));
  for (int64_t i = 0; i < count; ++i) {
    int32_t label = int32_t(i % numClasses);
    data.labels[i] = label;
    runtime::Random rng(seed, uint64_t(i) + 1);
    const uint8_t *proto = prototypes.data() + label * numel;
    uint8_t *out = data.pixels.data() + i * numel;
    for (int64_t k = 0; k < numel; ++k)
      out[k] = uint8_t(std::clamp<int64_t>(proto[k] + noise(rng), 0, 255));
  }
  return data;
}

} // namespace dtnn
