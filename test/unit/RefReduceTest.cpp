// The reductions over chosen axes on the reference backend: reduce_sum and
// reduce_max keep the axes as dimensions of size 1, reduce_max gives NaN
// where a NaN is among its elements, and its gradient shares dy evenly among
// the elements equal to the maximum (torch.amax's rule).
#include "RefRun.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dtnn::test {

namespace {

using ir::DType;
using ir::TensorType;

TensorType f64(std::vector<int64_t> dims) { return {DType::F64, std::move(dims)}; }

} // namespace

TEST(RefReduce, SumAndMaxOverOuterAndInnerAxes) {
  // x[i,j,k] = i*6 + j*3 + k over [2,2,3]; sums and maxima over i and k.
  std::vector<double> xs;
  for (int i = 0; i < 12; ++i) xs.push_back(i);
  auto outs = runGraph(R"(
graph @f(%x: f64[2,2,3]) -> (f64[1,2,1], f64[1,2,1], f64[2,1,3]) {
  %0 = reduce_sum %x {axes=[0,2]} : f64[1,2,1]
  %1 = reduce_max %x {axes=[0,2]} : f64[1,2,1]
  %2 = reduce_sum %x {axes=[1]} : f64[2,1,3]
  return %0, %1, %2
}
)",
                       {makeTensor(f64({2, 2, 3}), xs)});
  ASSERT_EQ(outs.size(), 3u);
  expectTensorNear(outs[0], {0 + 1 + 2 + 6 + 7 + 8, 3 + 4 + 5 + 9 + 10 + 11});
  expectTensorNear(outs[1], {8, 11});
  expectTensorNear(outs[2], {3, 5, 7, 15, 17, 19});
}

TEST(RefReduce, MaxOfANaNIsNaNAndTiesShareTheGradient) {
  auto outs =
      runGraph(R"(
graph @f(%x: f64[2,3], %dy: f64[2,1]) -> (f64[2,1], f64[2,3]) {
  %0 = reduce_max %x {axes=[1]} : f64[2,1]
  %1 = reduce_max_backward %dy, %x, %0 {axes=[1]} : f64[2,3]
  return %0, %1
}
)",
               {makeTensor(f64({2, 3}), {5, 1, 5, 2, NAN, 7}), makeTensor(f64({2, 1}), {3, 4})});
  ASSERT_EQ(outs.size(), 2u);
  std::vector<double> m = toDoubles(outs[0]), dx = toDoubles(outs[1]);
  EXPECT_EQ(m[0], 5);
  EXPECT_TRUE(std::isnan(m[1]));
  EXPECT_EQ(dx, (std::vector<double>{1.5, 0, 1.5, 0, 0, 0}));
}

} // namespace dtnn::test
