// Tests of Occupancy, the structure behind best-fit buffer placement: what
// blocks take during a range of steps, against a comparison with every block
// placed, on hand-made cases and on random ones.
#include "runtime/plan/Occupancy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace dtnn::runtime;

namespace {

struct Placed {
  int begin, end;
  uint64_t offset, size;
};

// What the blocks overlapping steps [begin, end] take, merged, found by
// looking at every block.
Occupancy::Ranges bruteForce(const std::vector<Placed> &placed, int begin, int end) {
  Occupancy::Ranges all, merged;
  for (const Placed &p : placed)
    if (p.begin <= end && begin <= p.end) all.push_back({p.offset, p.offset + p.size});
  std::sort(all.begin(), all.end());
  for (const auto &[start, stop] : all) {
    if (!merged.empty() && start <= merged.back().second)
      merged.back().second = std::max(merged.back().second, stop);
    else
      merged.push_back({start, stop});
  }
  return merged;
}

} // namespace

TEST(Occupancy, EmptyArena) {
  Occupancy o(10);
  EXPECT_TRUE(o.takenDuring(0, 10).empty());
}

TEST(Occupancy, OverlapInTimeOnly) {
  Occupancy o(9);
  o.add(2, 4, 0, 64);
  o.add(5, 9, 64, 64);
  o.add(0, 9, 256, 64);
  using R = Occupancy::Ranges;
  EXPECT_EQ(o.takenDuring(0, 1), R({{256, 320}}));
  EXPECT_EQ(o.takenDuring(4, 4), R({{0, 64}, {256, 320}}));
  // Touching ranges merge: no gap between 64 and 128.
  EXPECT_EQ(o.takenDuring(4, 5), R({{0, 128}, {256, 320}}));
  EXPECT_EQ(o.takenDuring(9, 9), R({{64, 128}, {256, 320}}));
}

TEST(Occupancy, MatchesComparisonWithEveryBlock) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    int last = 1 + static_cast<int>(rng() % 60);
    Occupancy o(last);
    std::vector<Placed> placed;
    for (int i = 0; i < 40; ++i) {
      int a = static_cast<int>(rng() % (last + 1)), b = static_cast<int>(rng() % (last + 1));
      Placed p{std::min(a, b), std::max(a, b), 64 * (rng() % 32), 64 * (1 + rng() % 4)};
      o.add(p.begin, p.end, p.offset, p.size);
      placed.push_back(p);
      int c = static_cast<int>(rng() % (last + 1)), d = static_cast<int>(rng() % (last + 1));
      ASSERT_EQ(o.takenDuring(std::min(c, d), std::max(c, d)),
                bruteForce(placed, std::min(c, d), std::max(c, d)))
          << "trial " << trial << " block " << i;
    }
  }
}
