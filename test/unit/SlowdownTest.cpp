// The watchdog's test of a collective that slowed (runtime/comm/Slowdown.h): the usual wait is
// the median after a warm-up; only several slow waits in a row, each past the factor and the
// margin, make a slowdown.
#include "runtime/comm/Slowdown.h"

#include <gtest/gtest.h>

namespace dtnn::test {
namespace {

using runtime::SlowdownDetector;

// Feeds the warm-up and the samples of the usual time (median 0.020 s).
void settle(SlowdownDetector &d, const std::string &what) {
  for (double s : {5.0, 5.0, 5.0}) EXPECT_FALSE(d.record(what, s)); // warm-up, however slow
  for (double s : {0.030, 0.010, 0.020, 0.025, 0.015}) EXPECT_FALSE(d.record(what, s));
}

TEST(Slowdown, SlowWaitsInARowAreASlowdown) {
  SlowdownDetector d(10);
  settle(d, "bucket 0");
  EXPECT_TRUE(d.hasUsual());
  EXPECT_FALSE(d.record("bucket 0", 0.5));
  EXPECT_FALSE(d.record("bucket 0", 0.6));
  auto s = d.record("bucket 0", 0.7);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->what, "bucket 0");
  EXPECT_DOUBLE_EQ(s->usual, 0.020);
  EXPECT_DOUBLE_EQ(s->took, 0.7);
  EXPECT_EQ(s->times, 3);
}

TEST(Slowdown, OneNormalWaitBreaksTheRun) {
  SlowdownDetector d(10);
  settle(d, "b");
  EXPECT_FALSE(d.record("b", 0.5));
  EXPECT_FALSE(d.record("b", 0.5));
  EXPECT_FALSE(d.record("b", 0.02));
  EXPECT_FALSE(d.record("b", 0.5));
  EXPECT_FALSE(d.record("b", 0.5));
  EXPECT_TRUE(d.record("b", 0.5));
}

// A wait 10 times longer but within the margin (0.25 s past the usual) is noise; so is one past
// the margin that is not past the factor.
TEST(Slowdown, BothTheFactorAndTheMargin) {
  SlowdownDetector d(10);
  settle(d, "b");
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(d.record("b", 0.25));
  SlowdownDetector e(10);
  for (double s : {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0}) EXPECT_FALSE(e.record("c", s));
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(e.record("c", 5.0));
}

// Each collective has its own usual time; factor 0 never reports.
TEST(Slowdown, ByCollectiveAndOff) {
  SlowdownDetector d(10);
  settle(d, "small");
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(d.record("large", 3.0)); // still warming up
  SlowdownDetector off(0);
  settle(off, "b");
  EXPECT_FALSE(off.hasUsual());
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(off.record("b", 9.0));
}

} // namespace
} // namespace dtnn::test
