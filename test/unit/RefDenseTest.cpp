// Forward and backward kernels of dense on the reference backend, against
// values computed by hand.
#include "RefRun.h"

#include <gtest/gtest.h>

#include <omp.h>

namespace dtnn::test {
namespace {

// x [2,3], w [2,3], b [2]: y[n][m] = sum_k x[n][k] * w[m][k] + b[m].
TEST(RefDense, ForwardWithBias) {
  auto outs = runValues("param @w : f64[2,3] init=zeros\n"
                        "param @b : f64[2] init=zeros\n"
                        "graph @f(%x: f64[2,3]) -> f64[2,2] {\n"
                        "  %0 = dense %x, @w, @b : f64[2,2]\n"
                        "  return %0\n"
                        "}\n",
                        {{1, 2, 3, -1, 0, 2}}, {{"w", {1, 0, -1, 2, 1, 0.5}}, {"b", {0.5, -1}}});
  ASSERT_EQ(outs.size(), 1u);
  // Row 0: (1 - 3) + 0.5 = -1.5, (2 + 2 + 1.5) - 1 = 4.5.
  // Row 1: (-1 - 2) + 0.5 = -2.5, (-2 + 0 + 1) - 1 = -2.
  EXPECT_EQ(outs[0], (std::vector<double>{-1.5, 4.5, -2.5, -2}));
}

TEST(RefDense, ForwardWithoutBias) {
  auto outs = runValues("param @w : f64[1,4] init=zeros\n"
                        "graph @f(%x: f64[3,4]) -> f64[3,1] {\n"
                        "  %0 = dense %x, @w : f64[3,1]\n"
                        "  return %0\n"
                        "}\n",
                        {{1, 1, 1, 1, 1, 2, 3, 4, 0, 0, 0, -2}}, {{"w", {1, -1, 2, 0.25}}});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0], (std::vector<double>{2.25, 6, -0.5}));
}

// dy [2,2], w [2,3], x [2,3]: dx = dy w, dw = dy^T x, db = column sums of dy.
TEST(RefDense, BackwardOps) {
  auto outs = runValues("param @w : f64[2,3] init=zeros\n"
                        "graph @f(%dy: f64[2,2], %x: f64[2,3]) -> (f64[2,3], f64[2,3], f64[2]) {\n"
                        "  %0 = dense_backward_data %dy, @w : f64[2,3]\n"
                        "  %1 = dense_backward_weights %dy, %x : f64[2,3]\n"
                        "  %2 = dense_backward_bias %dy : f64[2]\n"
                        "  return %0, %1, %2\n"
                        "}\n",
                        {{1, 2, -1, 0.5}, {1, 2, 3, -1, 0, 2}}, {{"w", {1, 0, -1, 2, 1, 0.5}}});
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0], (std::vector<double>{5, 2, 0, 0, 0.5, 1.25}));
  EXPECT_EQ(outs[1], (std::vector<double>{2, 2, 1, 1.5, 4, 7}));
  EXPECT_EQ(outs[2], (std::vector<double>{0, 2.5}));
}

// Test data in [-1, 1).
std::vector<double> pattern(int count, int mul, int mod) {
  std::vector<double> v(count);
  for (int i = 0; i < count; ++i) v[i] = double(i * mul % mod) / (mod / 2.0) - 1;
  return v;
}

// A wide float layer: compare with a plain double loop.
TEST(RefDense, ForwardFloatMatchesNaiveLoop) {
  const int n = 7, k = 300, m = 33;
  GraphRunner r("param @w : f32[33,300] init=zeros\n"
                "param @b : f32[33] init=zeros\n"
                "graph @f(%x: f32[7,300]) -> f32[7,33] {\n"
                "  %0 = dense %x, @w, @b : f32[7,33]\n"
                "  return %0\n"
                "}\n");
  ASSERT_TRUE(r.ok()) << r.error();
  std::vector<double> x = pattern(n * k, 37, 101), w = pattern(m * k, 53, 97),
                      b = pattern(m, 7, 11);
  r.setParam("w", w);
  r.setParam("b", b);
  auto y = r.runValues({x})[0];
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) {
      double ref = float(b[j]);
      for (int q = 0; q < k; ++q) ref += double(float(x[i * k + q])) * float(w[j * k + q]);
      EXPECT_NEAR(y[i * m + j], ref, 1e-4) << i << "," << j;
    }
}

// Forward and backward results are identical for 1 and 3 threads.
TEST(RefDense, IndependentOfThreadCount) {
  std::string text = "param @w : f32[40,64] init=zeros\n"
                     "param @b : f32[40] init=zeros\n"
                     "graph @f(%x: f32[50,64], %dy: f32[50,40]) -> "
                     "(f32[50,40], f32[50,64], f32[40,64], f32[40]) {\n"
                     "  %0 = dense %x, @w, @b : f32[50,40]\n"
                     "  %1 = dense_backward_data %dy, @w : f32[50,64]\n"
                     "  %2 = dense_backward_weights %dy, %x : f32[40,64]\n"
                     "  %3 = dense_backward_bias %dy : f32[40]\n"
                     "  return %0, %1, %2, %3\n"
                     "}\n";
  int saved = omp_get_max_threads();
  std::vector<std::vector<std::vector<double>>> results;
  for (int threads : {1, 3}) {
    GraphRunner r(text, threads);
    ASSERT_TRUE(r.ok()) << r.error();
    r.setParam("w", pattern(40 * 64, 31, 89));
    r.setParam("b", pattern(40, 3, 7));
    results.push_back(r.runValues({pattern(50 * 64, 17, 83), pattern(50 * 40, 13, 79)}));
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(results[0], results[1]);
}

} // namespace
} // namespace dtnn::test
