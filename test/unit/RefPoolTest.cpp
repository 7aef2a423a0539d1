// Results of the reference pooling kernels, forward and backward, on small
// cases computed by hand or with PyTorch.
#include "RefRun.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace dtnn::test {
namespace {

using Values = std::vector<double>;

// Runs `op` with `attrs` on x and `<op>_backward` on (dy, x), in f32 and in
// f64; expects y and dx (exact: every case here is exact in binary).
void expectPool(const std::string &op, const std::string &attrs, const std::string &xDims,
                const std::string &yDims, const Values &x, const Values &dy, const Values &y,
                const Values &dx) {
  for (std::string dt : {"f32", "f64"}) {
    std::string xt = dt + xDims, yt = dt + yDims;
    std::string ir = "graph @f(%x: " + xt + ", %dy: " + yt + ") -> (" + yt + ", " + xt +
                     ") {\n  %0 = " + op + " %x " + attrs + " : " + yt + "\n  %1 = " + op +
                     "_backward %dy, %x " + attrs + " : " + xt + "\n  return %0, %1\n}\n";
    auto out = runValues(ir, {x, dy});
    ASSERT_EQ(out.size(), 2u) << ir;
    EXPECT_EQ(out[0], y) << op << " " << attrs << " in " << dt;
    EXPECT_EQ(out[1], dx) << op << "_backward " << attrs << " in " << dt;
  }
}

Values iota(int64_t n) {
  Values v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i + 1);
  return v;
}

TEST(RefPool, MaxPoolTwoByTwo) {
  Values x = {1, 5, 2, 0, 3, 4, 8, 7, -1, -2, -3, -9, -4, -5, -6, -7};
  expectPool("maxpool", "{kernel=[2,2]}", "[1,1,4,4]", "[1,1,2,2]", x, {1, 2, 3, 4}, {5, 8, -1, -3},
             {0, 1, 0, 0, 0, 0, 2, 0, 3, 0, 4, 0, 0, 0, 0, 0});
}

TEST(RefPool, MaxPoolFirstMaximumWinsAndOverlapsAccumulate) {
  // Windows (1, 3), (3, 3) and (3, 2) along one row: the tie in the middle
  // window goes to its first element, which the first window also chose.
  expectPool("maxpool", "{kernel=[1,2], stride=[1,1]}", "[1,1,1,4]", "[1,1,1,3]", {1, 3, 3, 2},
             {10, 20, 30}, {3, 3, 3}, {0, 30, 30, 0});
}

TEST(RefPool, MaxPoolCeilModeMatchesPyTorch) {
  // F.max_pool2d(x, 3, 2, 0, ceil_mode=True) with x = (1..36) * (+1, -1, ...)
  // on a 6x6 plane; the last row and column of windows are clipped.
  Values x = iota(36);
  for (size_t i = 1; i < x.size(); i += 2) x[i] = -x[i];
  Values dy = iota(9);
  Values dx(36, 0.0);
  // Maxima at flat indices 14, 16, 16, 26, 28, 28, 32, 34, 34.
  dx[14] = 1, dx[16] = 2 + 3, dx[26] = 4, dx[28] = 5 + 6, dx[32] = 7, dx[34] = 8 + 9;
  expectPool("maxpool", "{kernel=[3,3], stride=[2,2], ceil=true}", "[1,1,6,6]", "[1,1,3,3]", x, dy,
             {15, 17, 17, 27, 29, 29, 33, 35, 35}, dx);
}

TEST(RefPool, MaxPoolPropagatesNaNAndInfinity) {
  double inf = std::numeric_limits<double>::infinity();
  auto out = runValues(R"(
graph @f(%x: f32[1,2,2,2], %dy: f32[1,2,1,1]) -> (f32[1,2,1,1], f32[1,2,2,2]) {
  %0 = maxpool %x {kernel=[2,2]} : f32[1,2,1,1]
  %1 = maxpool_backward %dy, %x {kernel=[2,2]} : f32[1,2,2,2]
  return %0, %1
}
)",
                       {{1, std::nan(""), 2, 0, -inf, -inf, -inf, -inf}, {1, 2}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(std::isnan(out[0][0]));
  EXPECT_EQ(out[0][1], -inf);
  EXPECT_EQ(out[1], (Values{0, 1, 0, 0, 2, 0, 0, 0}));
}

// F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=...) with x =
// 1..36 on a 6x6 plane: the last windows start at row (column) 5 and reach
// one past the padding, which no divisor counts.
TEST(RefPool, AvgPoolCeilModeCountingPaddingMatchesPyTorch) {
  Values dy(16, 0.0);
  dy[0] = 4, dy[15] = 2;
  Values dx(36, 0.0);
  // Window 0 covers rows and columns 0..1 with divisor 9; window 15 covers
  // the single element 35 with divisor 2 * 2 (rows 5..6 by columns 5..6).
  for (int i : {0, 1, 6, 7}) dx[i] = 4.0 / 9;
  dx[35] = 0.5;
  auto run = runValues(R"(
graph @f(%x: f64[1,1,6,6], %dy: f64[1,1,4,4]) -> (f64[1,1,4,4], f64[1,1,6,6]) {
  %0 = avgpool %x {kernel=[3,3], stride=[2,2], pad=[1,1,1,1], ceil=true, count_pad=true} : f64[1,1,4,4]
  %1 = avgpool_backward %dy, %x {kernel=[3,3], stride=[2,2], pad=[1,1,1,1], ceil=true, count_pad=true} : f64[1,1,6,6]
  return %0, %1
}
)",
                       {iota(36), dy});
  ASSERT_EQ(run.size(), 2u);
  Values y = {2, 4, 16.0 / 3, 3, 9, 15, 17, 9, 17, 27, 29, 15, 10.5, 16.5, 17.5, 9};
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(run[0][i], y[i], 1e-12) << i;
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(run[1][i], dx[i], 1e-12) << i;
}

TEST(RefPool, AvgPoolCeilModeNotCountingPaddingMatchesPyTorch) {
  Values dy(16, 0.0);
  dy[0] = 4, dy[15] = 2;
  Values dx(36, 0.0);
  for (int i : {0, 1, 6, 7}) dx[i] = 1;
  dx[35] = 2;
  expectPool("avgpool", "{kernel=[3,3], stride=[2,2], pad=[1,1,1,1], ceil=true, count_pad=false}",
             "[1,1,6,6]", "[1,1,4,4]", iota(36), dy,
             {4.5, 6, 8, 9, 13.5, 15, 17, 18, 25.5, 27, 29, 30, 31.5, 33, 35, 36}, dx);
}

TEST(RefPool, AvgPoolAsymmetricPadding) {
  // Windows of 2x2 with stride 2 and one row of padding on top only: rows
  // (-1, 0) and (1, 2) of a 3x2 plane; count_pad divides by 4 everywhere.
  expectPool("avgpool", "{kernel=[2,2], pad=[1,0,0,0]}", "[1,1,3,2]", "[1,1,2,1]",
             {1, 2, 3, 4, 5, 6}, {8, 4}, {0.75, 4.5}, {2, 2, 1, 1, 1, 1});
}

TEST(RefPool, GlobalAvgPool) {
  expectPool("global_avgpool", "", "[1,2,2,2]", "[1,2,1,1]", {1, 2, 3, 6, -1, -1, -1, -5}, {4, -8},
             {3, -2}, {1, 1, 1, 1, -2, -2, -2, -2});
}

} // namespace
} // namespace dtnn::test
