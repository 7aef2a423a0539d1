// Batch normalization kernels on the reference backend: inference against
// hand-computed values, training statistics and the running-statistic update
// against PyTorch's formulas evaluated in the test.
#include "RefRun.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace dtnn::test {
namespace {

// Per-channel mean and biased variance of x viewed as [N,C,S].
struct ChannelStats {
  std::vector<double> mean, var;
};
ChannelStats channelStats(const std::vector<double> &x, int n, int c, int s) {
  ChannelStats st{std::vector<double>(c, 0), std::vector<double>(c, 0)};
  for (int ch = 0; ch < c; ++ch) {
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < s; ++k) st.mean[ch] += x[(i * c + ch) * s + k];
    st.mean[ch] /= n * s;
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < s; ++k) {
        double d = x[(i * c + ch) * s + k] - st.mean[ch];
        st.var[ch] += d * d;
      }
    st.var[ch] /= n * s;
  }
  return st;
}

// Deterministic test data in [-2, 2).
std::vector<double> testData(int count, int salt) {
  std::vector<double> v(count);
  for (int i = 0; i < count; ++i) v[i] = double((i * 29 + salt * 7) % 41) / 10.25 - 2;
  return v;
}

void expectNear(const std::vector<double> &a, const std::vector<double> &b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << "at " << i;
}

const char *const kInference2d =
    "param @gamma : f64[2] init=ones\n"
    "param @beta : f64[2] init=zeros\n"
    "buffer @rm : f64[2] init=zeros\n"
    "buffer @rv : f64[2] init=ones\n"
    "graph @f(%x: f64[2,2]) -> f64[2,2] {\n"
    "  %0 = batchnorm %x, @gamma, @beta, @rm, @rv {eps=0.25} : f64[2,2]\n"
    "  return %0\n"
    "}\n";

// Channel 0: scale 2 / sqrt(0.75 + 0.25) = 2, shift 0.5 - 1 * 2; channel 1:
// scale 1 / sqrt(3.75 + 0.25) = 0.5, shift -1.
TEST(RefNorm, InferenceByHand) {
  GraphRunner r(kInference2d);
  ASSERT_TRUE(r.ok()) << r.error();
  r.setParam("gamma", {2, 1});
  r.setParam("beta", {0.5, -1});
  r.setParam("rm", {1, 0});
  r.setParam("rv", {0.75, 3.75});
  auto outs = r.runValues({{1, 2, 3, -2}});
  ASSERT_EQ(outs.size(), 1u);
  expectNear(outs[0], {0.5, 0, 4.5, -2}, 1e-15);
}

TEST(RefNorm, Inference4dByHand) {
  GraphRunner r("param @gamma : f64[2] init=ones\n"
                "param @beta : f64[2] init=zeros\n"
                "buffer @rm : f64[2] init=zeros\n"
                "buffer @rv : f64[2] init=ones\n"
                "graph @f(%x: f64[1,2,1,2]) -> f64[1,2,1,2] {\n"
                "  %0 = batchnorm %x, @gamma, @beta, @rm, @rv {eps=0.25} : f64[1,2,1,2]\n"
                "  return %0\n"
                "}\n");
  ASSERT_TRUE(r.ok()) << r.error();
  r.setParam("gamma", {2, 1});
  r.setParam("beta", {0.5, -1});
  r.setParam("rm", {1, 0});
  r.setParam("rv", {0.75, 3.75});
  auto outs = r.runValues({{1, 3, 2, -2}});
  ASSERT_EQ(outs.size(), 1u);
  expectNear(outs[0], {0.5, 4.5, 0, -2}, 1e-15);
}

// Runs batchnorm_train twice on x of shape [n,c,s] (s = 1: a [N,C] input)
// and checks y, the batch statistics and the running statistics.
void checkTrain(int n, int c, int s) {
  std::string shape = s == 1
                          ? std::to_string(n) + "," + std::to_string(c)
                          : std::to_string(n) + "," + std::to_string(c) + ",1," + std::to_string(s);
  std::string pc = "f64[" + std::to_string(c) + "]";
  std::string text = "param @gamma : " + pc + " init=ones\n" + "param @beta : " + pc +
                     " init=zeros\n" + "buffer @rm : " + pc + " init=zeros\n" +
                     "buffer @rv : " + pc + " init=ones\n" + "graph @f(%x: f64[" + shape +
                     "]) -> (f64[" + shape + "], " + pc + ", " + pc + ") {\n" +
                     "  %0, %1, %2, %3, %4 = batchnorm_train %x, @gamma, @beta, @rm, @rv {momentum=0.25}" +
                     " : f64[" + shape + "], " + pc + ", " + pc + ", " + pc + ", " + pc + "\n" + "  return %0, %1, %2\n}\n";
  GraphRunner r(text);
  ASSERT_TRUE(r.ok()) << r.error();
  std::vector<double> rm0(c), rv0(c);
  for (int ch = 0; ch < c; ++ch) {
    rm0[ch] = 0.5 - ch;
    rv0[ch] = 1 + 0.5 * ch;
  }
  // The store starts zero-filled; init= is the initializer's business.
  r.setParam("gamma", std::vector<double>(c, 1.0));
  r.setParam("rm", rm0);
  r.setParam("rv", rv0);
  std::vector<double> x = testData(n * c * s, c);
  ChannelStats st = channelStats(x, n, c, s);
  auto outs = r.runValues({x});
  ASSERT_EQ(outs.size(), 3u);

  // The output has mean 0 and variance var / (var + eps) per channel.
  ChannelStats yst = channelStats(outs[0], n, c, s);
  double eps = 1e-5, momentum = 0.25, count = n * s;
  for (int ch = 0; ch < c; ++ch) {
    EXPECT_NEAR(yst.mean[ch], 0, 1e-12) << ch;
    EXPECT_NEAR(yst.var[ch], 1, 1e-4) << ch;
    EXPECT_NEAR(yst.var[ch], st.var[ch] / (st.var[ch] + eps), 1e-12) << ch;
    EXPECT_NEAR(outs[1][ch], st.mean[ch], 1e-12) << ch;
    EXPECT_NEAR(outs[2][ch], 1 / std::sqrt(st.var[ch] + eps), 1e-12) << ch;
  }

  // PyTorch: running = (1 - momentum) * running + momentum * batch statistic,
  // with the unbiased variance for the running variance.
  std::vector<double> rm1(c), rv1(c), rm2(c), rv2(c);
  for (int ch = 0; ch < c; ++ch) {
    double unbiased = st.var[ch] * count / (count - 1);
    rm1[ch] = (1 - momentum) * rm0[ch] + momentum * st.mean[ch];
    rv1[ch] = (1 - momentum) * rv0[ch] + momentum * unbiased;
    rm2[ch] = (1 - momentum) * rm1[ch] + momentum * st.mean[ch];
    rv2[ch] = (1 - momentum) * rv1[ch] + momentum * unbiased;
  }
  expectNear(toDoubles(r.param("rm")), rm1, 1e-14);
  expectNear(toDoubles(r.param("rv")), rv1, 1e-14);

  // A second step on the same batch: same output, the update compounds.
  auto again = r.runValues({x});
  EXPECT_EQ(again[0], outs[0]);
  expectNear(toDoubles(r.param("rm")), rm2, 1e-14);
  expectNear(toDoubles(r.param("rv")), rv2, 1e-14);
}

TEST(RefNorm, Train2dStatisticsAndRunningUpdate) { checkTrain(6, 3, 1); }

// moving_average, the running-statistic update decompose-batchnorm makes:
// buf = (1 - momentum) * buf + momentum * value, in place, twice.
TEST(RefNorm, MovingAverage) {
  GraphRunner r("buffer @rm : f64[3] init=zeros\n"
                "graph @f(%v: f64[3]) -> f64[3] {\n"
                "  %0 = moving_average @rm, %v {momentum=0.25} : f64[3]\n"
                "  return %v\n}\n");
  ASSERT_TRUE(r.ok()) << r.error();
  r.setParam("rm", {4, -8, 1});
  r.runValues({{8, 0, 1}});
  expectNear(toDoubles(r.param("rm")), {5, -6, 1}, 1e-15);
  r.runValues({{8, 0, 1}});
  expectNear(toDoubles(r.param("rm")), {5.75, -4.5, 1}, 1e-15);
}

TEST(RefNorm, Train4dStatisticsAndRunningUpdate) { checkTrain(3, 4, 10); }

// gamma and beta scale and shift the normalized output.
TEST(RefNorm, TrainAffine) {
  GraphRunner r("param @gamma : f64[2] init=ones\n"
                "param @beta : f64[2] init=zeros\n"
                "buffer @rm : f64[2] init=zeros\n"
                "buffer @rv : f64[2] init=ones\n"
                "graph @f(%x: f64[8,2]) -> f64[8,2] {\n"
                "  %0, %1, %2, %3, %4 = batchnorm_train %x, @gamma, @beta, @rm, @rv {eps=1e-12}"
                " : f64[8,2], f64[2], f64[2], f64[2], f64[2]\n"
                "  return %0\n"
                "}\n");
  ASSERT_TRUE(r.ok()) << r.error();
  r.setParam("gamma", {2, 0.5});
  r.setParam("beta", {1, -3});
  auto outs = r.runValues({testData(16, 5)});
  ChannelStats st = channelStats(outs[0], 8, 2, 1);
  EXPECT_NEAR(st.mean[0], 1, 1e-12);
  EXPECT_NEAR(st.var[0], 4, 1e-9);
  EXPECT_NEAR(st.mean[1], -3, 1e-12);
  EXPECT_NEAR(st.var[1], 0.25, 1e-9);
}

// The float kernels agree with the double ones.
TEST(RefNorm, TrainFloatMatchesDouble) {
  auto text = [](const char *t) {
    std::string s = "param @gamma : T[3] init=ones\n"
                    "param @beta : T[3] init=zeros\n"
                    "buffer @rm : T[3] init=zeros\n"
                    "buffer @rv : T[3] init=ones\n"
                    "graph @f(%x: T[4,3,2,5]) -> T[4,3,2,5] {\n"
                    "  %0, %1, %2, %3, %4 = batchnorm_train %x, @gamma, @beta, @rm, @rv"
                    " : T[4,3,2,5], T[3], T[3], T[3], T[3]\n"
                    "  return %0\n"
                    "}\n";
    for (size_t p; (p = s.find("T[")) != std::string::npos;) s.replace(p, 1, t);
    return s;
  };
  GraphRunner f(text("f32")), d(text("f64"));
  ASSERT_TRUE(f.ok()) << f.error();
  ASSERT_TRUE(d.ok()) << d.error();
  for (GraphRunner *r : {&f, &d}) {
    r->setParam("gamma", {1, 2, 0.5});
    r->setParam("beta", {0, 1, -1});
    r->setParam("rv", {1, 1, 1});
  }
  std::vector<double> x = testData(120, 1);
  auto fo = f.runValues({x}), dout = d.runValues({x});
  expectNear(fo[0], dout[0], 1e-5);
  expectNear(toDoubles(f.param("rv")), toDoubles(d.param("rv")), 1e-6);
}

} // namespace
} // namespace dtnn::test
