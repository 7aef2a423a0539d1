// The network model of data-parallel bucketing and simulation: the ring
// allreduce formula, fitting it to measured times, and its file format.
#include "passes/CostModel.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace dtnn::passes {
namespace {

TEST(CostModelTest, RingAllreduceTime) {
  NetModel net;
  net.alpha = 5e-6;
  net.beta = 1e-10;
  EXPECT_EQ(net.allreduceSeconds(1e6, 1), 0);
  // 2(P-1) messages, 2(P-1)/P of the bytes through each link.
  EXPECT_DOUBLE_EQ(net.allreduceSeconds(1e6, 2), 2 * 5e-6 + 1e6 * 1e-10);
  EXPECT_DOUBLE_EQ(net.allreduceSeconds(1e6, 4), 6 * 5e-6 + 1.5 * 1e6 * 1e-10);
}

TEST(CostModelTest, FitRecoversAlphaAndBeta) {
  NetModel truth;
  truth.alpha = 7e-6;
  truth.beta = 3e-10;
  for (int ranks : {2, 4, 16}) {
    std::vector<double> bytes, secs;
    for (double n = 4096; n <= 16e6; n *= 4) {
      bytes.push_back(n);
      secs.push_back(truth.allreduceSeconds(n, ranks));
    }
    auto fit = fitNetModel(bytes, secs, ranks);
    ASSERT_TRUE(fit) << fit.error().message();
    EXPECT_NEAR(fit->alpha, truth.alpha, 1e-12) << ranks;
    EXPECT_NEAR(fit->beta, truth.beta, 1e-16) << ranks;
  }
  EXPECT_FALSE(fitNetModel({1, 2}, {1, 2}, 1));
  EXPECT_FALSE(fitNetModel({1}, {1}, 2));
}

TEST(CostModelTest, NetFileRoundTrip) {
  NetModel net;
  net.alpha = 1.25e-5;
  net.beta = 4e-10;
  std::string path = testing::TempDir() + "cost_model_net.txt";
  {
    std::ofstream f(path);
    f << formatNetModel(net, "a test");
  }
  auto back = readNetModel(path);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_DOUBLE_EQ(back->alpha, net.alpha);
  EXPECT_DOUBLE_EQ(back->beta, net.beta);
  std::remove(path.c_str());
}

} // namespace
} // namespace dtnn::passes
