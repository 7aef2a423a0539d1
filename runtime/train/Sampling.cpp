#include "runtime/train/Sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace dtnn::runtime {

int32_t sampleToken(const float *logits, int64_t vocab, const SamplingOptions &opts,
                    Random &rng) {
  // Tokens by logit, largest first, the lower index first among equals; NaN last.
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  auto before = [&](int32_t a, int32_t b) {
    float x = logits[a], y = logits[b];
    if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
    return x > y || (x == y && a < b);
  };
  int64_t k = opts.topK > 0 ? std::min(opts.topK, vocab) : vocab;
  if (opts.temperature <= 0) k = 1;
  std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
  while (k > 1 && std::isnan(logits[order[size_t(k - 1)]])) --k;
  if (k == 1) return order[0];
  // softmax over the k kept, in double, relative to the largest.
  std::vector<double> weight(static_cast<size_t>(k));
  double top = logits[order[0]], total = 0;
  for (int64_t i = 0; i < k; ++i)
    total += weight[size_t(i)] = std::exp((double(logits[order[size_t(i)]]) - top) / opts.temperature);
  double u = rng.uniform() * total;
  for (int64_t i = 0; i < k; ++i) {
    u -= weight[size_t(i)];
    if (u < 0) return order[size_t(i)];
  }
  return order[size_t(k - 1)];
}

} // namespace dtnn::runtime
