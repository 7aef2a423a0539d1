// Gradient checks of maxpool, avgpool and global_avgpool by finite
// differences: overlapping windows, padding, ceil mode and both avgpool
// divisors.
#include "GradCheck.h"

#include <gtest/gtest.h>

namespace dtnn {
namespace {

// Graph @f applying `op` with `attrs` to %x of type xType.
std::string poolGraph(const std::string &op, const std::string &xType, const std::string &attrs,
                      const std::string &yType) {
  return "graph @f(%x: f64" + xType + ") -> f64" + yType + " {\n  %0 = " + op + " %x " + attrs +
         " : f64" + yType + "\n  return %0\n}\n";
}

TEST(GradPool, MaxPoolTwoByTwo) {
  test::expectGradientsMatch(poolGraph("maxpool", "[2,3,4,6]", "{kernel=[2,2]}", "[2,3,2,3]"));
}

TEST(GradPool, MaxPoolOverlappingPaddedCeil) {
  // (6 + 2 - 3) / 2 rounds up to 3, so OH = OW = 4: the last window starts at
  // input row 5 and reaches past the bottom padding.
  test::expectGradientsMatch(poolGraph(
      "maxpool", "[1,2,6,6]", "{kernel=[3,3], stride=[2,2], pad=[1,1,1,1], ceil=true}",
      "[1,2,4,4]"));
}

TEST(GradPool, MaxPoolNonSquareAsymmetricPad) {
  // OH = (5 + 1 + 0 - 2) / 1 + 1 = 5, OW = (7 + 1 + 1 - 3) / 2 + 1 = 4.
  test::expectGradientsMatch(poolGraph(
      "maxpool", "[2,2,5,7]", "{kernel=[2,3], stride=[1,2], pad=[1,1,0,1]}", "[2,2,5,4]"));
}

TEST(GradPool, AvgPoolCountingPadding) {
  test::expectGradientsMatch(poolGraph(
      "avgpool", "[2,2,5,5]", "{kernel=[3,3], stride=[2,2], pad=[1,1,1,1], count_pad=true}",
      "[2,2,3,3]"));
}

TEST(GradPool, AvgPoolNotCountingPadding) {
  test::expectGradientsMatch(poolGraph(
      "avgpool", "[2,2,5,5]", "{kernel=[3,3], stride=[2,2], pad=[1,1,1,1], count_pad=false}",
      "[2,2,3,3]"));
}

TEST(GradPool, AvgPoolCeilModeBothDivisors) {
  for (const char *countPad : {"true", "false"})
    test::expectGradientsMatch(poolGraph("avgpool", "[1,2,6,7]",
                                         "{kernel=[3,3], stride=[2,2], pad=[1,1,1,1], ceil=true, "
                                         "count_pad=" +
                                             std::string(countPad) + "}",
                                         "[1,2,4,4]"));
}

TEST(GradPool, AvgPoolNonSquareDefaultStride) {
  test::expectGradientsMatch(poolGraph("avgpool", "[2,3,4,6]", "{kernel=[2,3]}", "[2,3,2,2]"));
}

TEST(GradPool, GlobalAvgPool) {
  test::expectGradientsMatch(poolGraph("global_avgpool", "[2,3,4,5]", "", "[2,3,1,1]"));
}

} // namespace
} // namespace dtnn
