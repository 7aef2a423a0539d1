// Choosing the next token from a language model's logits (runtime/train/Sampling.h).
#include "runtime/train/Sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace dtnn::runtime {
namespace {

TEST(Sampling, GreedyTakesTheFirstLargest) {
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  Random rng(1);
  EXPECT_EQ(sampleToken(logits.data(), 4, {0.0, 0}, rng), 1);
  // Top-1 at any temperature is the same choice.
  EXPECT_EQ(sampleToken(logits.data(), 4, {3.0, 1}, rng), 1);
  // A NaN logit is never chosen, not even as the largest.
  std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN(), -5.0f, -4.0f};
  EXPECT_EQ(sampleToken(nan.data(), 3, {0.0, 0}, rng), 2);
  for (int i = 0; i < 100; ++i) EXPECT_NE(sampleToken(nan.data(), 3, {1.0, 0}, rng), 0);
}

TEST(Sampling, DrawsFromTheSoftmaxOfTheTopK) {
  // logits log(1), log(2), log(3), log(4): at temperature 1 the top 3 have probabilities 2/9,
  // 3/9 and 4/9, and token 0 is never drawn.
  std::vector<float> logits = {0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};
  Random rng(7);
  std::vector<int> counts(4, 0);
  const int draws = 90000;
  for (int i = 0; i < draws; ++i) ++counts[size_t(sampleToken(logits.data(), 4, {1.0, 3}, rng))];
  EXPECT_EQ(counts[0], 0);
  for (int t = 1; t < 4; ++t) {
    double p = (t + 1) / 9.0, sd = std::sqrt(draws * p * (1 - p));
    EXPECT_NEAR(counts[size_t(t)], draws * p, 5 * sd) << "token " << t;
  }
  // Temperature 0.5 squares the odds: 4 : 9 : 16 among the same three.
  std::fill(counts.begin(), counts.end(), 0);
  for (int i = 0; i < draws; ++i) ++counts[size_t(sampleToken(logits.data(), 4, {0.5, 3}, rng))];
  for (int t = 1; t < 4; ++t) {
    double p = double((t + 1) * (t + 1)) / 29.0, sd = std::sqrt(draws * p * (1 - p));
    EXPECT_NEAR(counts[size_t(t)], draws * p, 5 * sd) << "token " << t;
  }
}

TEST(Sampling, TheSameSeedGivesTheSameTokens) {
  std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
  Random a(42, 3), b(42, 3), c(43, 3);
  std::vector<int32_t> x, y, z;
  for (int i = 0; i < 50; ++i) {
    x.push_back(sampleToken(logits.data(), 5, {1.0, 0}, a));
    y.push_back(sampleToken(logits.data(), 5, {1.0, 0}, b));
    z.push_back(sampleToken(logits.data(), 5, {1.0, 0}, c));
  }
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
}

} // namespace
} // namespace dtnn::runtime
