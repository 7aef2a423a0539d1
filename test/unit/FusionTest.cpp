// Fusion passes ask the target where an op would run: a fused op must run on
// the backend its unfused form ran on. The run's target comes from the
// kernel registry.
#include "RefRun.h"
#include "ir/Printer.h"
#include "ir/TextParser.h"
#include "passes/FusionTarget.h"
#include "passes/PassManager.h"
#include "runtime/train/FusionTargets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace dtnn {
namespace {

const char *kModule = "param @w : f32[4,3,3,3] init=he_normal\n"
                      "param @d : f32[5,64] init=he_normal\n"
                      "graph @g(%x: f32[?,3,6,6]) -> f32[?,5] {\n"
                      "  %0 = conv2d %x, @w : f32[?,4,4,4]\n"
                      "  %1 = relu %0 : f32[?,4,4,4]\n"
                      "  %2 = flatten %1 : f32[?,64]\n"
                      "  %3 = dense %2, @d : f32[?,5]\n"
                      "  %4 = tanh %3 : f32[?,5]\n"
                      "  return %4\n"
                      "}\n";

// A target whose fast backend runs convolutions only without an activation.
class NoFusedConv final : public passes::FusionTarget {
public:
  std::string backendOf(const ir::Op &op) const override {
    bool fused = op.attrs().find("act") && op.attrs().getString("act") != "none";
    return op.name() == "conv2d" && fused ? "slow" : "fast";
  }
  std::vector<std::string> backendsFor(const std::string &) const override {
    return {"fast", "slow"};
  }
};

std::string runFusion(const passes::FusionTarget *target) {
  SourceManager sm;
  std::ostringstream err;
  DiagnosticEngine diags(sm, err);
  auto m = ir::parseModule(kModule, "t.dtir", sm, diags);
  EXPECT_TRUE(m) << err.str();
  if (!m) return "";
  passes::PassManagerOptions o;
  o.target = target;
  passes::PassManager pm(o);
  EXPECT_FALSE(pm.parsePipeline("fuse-activation"));
  EXPECT_FALSE(pm.run(*m));
  std::ostringstream out;
  ir::printModule(*m, out);
  return out.str();
}

TEST(Fusion, TargetRefusalKeepsTheOpsApart) {
  NoFusedConv target;
  std::string ir = runFusion(&target);
  EXPECT_NE(ir.find("%0 = conv2d %x, @w : f32[?,4,4,4]\n  %1 = relu %0"), std::string::npos) << ir;
  EXPECT_NE(ir.find("dense %2, @d {act=\"tanh\"}"), std::string::npos) << ir;
}

TEST(Fusion, WithoutTargetEverythingFuses) {
  std::string ir = runFusion(nullptr);
  EXPECT_NE(ir.find("conv2d %x, @w {act=\"relu\"}"), std::string::npos) << ir;
  EXPECT_NE(ir.find("{act=\"tanh\"}"), std::string::npos) << ir;
}

// The run's target: the chosen backend first, then the fallback; oneDNN
// claims its convolution with a fused relu, and the reference backend runs
// every op.
TEST(Fusion, RegistryTargetNamesTheBackend) {
  SourceManager sm;
  std::ostringstream err;
  DiagnosticEngine diags(sm, err);
  auto m = ir::parseModule(kModule, "t.dtir", sm, diags);
  ASSERT_TRUE(m) << err.str();
  ir::Op &conv = *m->findGraph("g")->ops()[0];
  auto onednn = runtime::makeFusionTarget("onednn");
  auto reference = runtime::makeFusionTarget("reference");
  ASSERT_TRUE(onednn && reference);
  conv.attrs().set("act", std::string("relu"));
  EXPECT_EQ((*onednn)->backendOf(conv), "onednn");
  EXPECT_EQ((*reference)->backendOf(conv), "reference");
  EXPECT_FALSE(runtime::makeFusionTarget("cuda-nope"));
}

// The module after running `pipeline` on `text`.
std::string afterPasses(const std::string &text, const std::string &pipeline) {
  SourceManager sm;
  std::ostringstream err;
  DiagnosticEngine diags(sm, err);
  auto m = ir::parseModule(text, "t.dtir", sm, diags);
  EXPECT_TRUE(m) << err.str();
  if (!m) return "";
  passes::PassManager pm({});
  EXPECT_FALSE(pm.parsePipeline(pipeline));
  EXPECT_FALSE(pm.run(*m));
  std::ostringstream out;
  ir::printModule(*m, out);
  return out.str();
}

// A convolution with a bias, then an inference batchnorm and a relu; and a
// dense layer without a bias, then a batchnorm (over its features). Folded,
// each runs as one layer with computed weights and gives the same values up
// to rounding (f64 here, so to 1e-12).
TEST(Fusion, FoldedBatchNormComputesTheSame) {
  const std::string text = "param @w : f64[3,2,3,3] init=he_normal\n"
                           "param @b : f64[3] init=zeros\n"
                           "param @g : f64[3] init=ones\n"
                           "param @be : f64[3] init=zeros\n"
                           "buffer @m : f64[3] init=zeros\n"
                           "buffer @v : f64[3] init=ones\n"
                           "param @d : f64[4,48] init=he_normal\n"
                           "param @g2 : f64[4] init=ones\n"
                           "param @be2 : f64[4] init=zeros\n"
                           "buffer @m2 : f64[4] init=zeros\n"
                           "buffer @v2 : f64[4] init=ones\n"
                           "graph @f(%x: f64[1,2,6,6]) -> f64[1,4] {\n"
                           "  %0 = conv2d %x, @w, @b {pad=[1,1,1,1]} : f64[1,3,6,6]\n"
                           "  %1 = batchnorm %0, @g, @be, @m, @v {eps=0.01} : f64[1,3,6,6]\n"
                           "  %2 = relu %1 : f64[1,3,6,6]\n"
                           "  %3 = maxpool %2 {kernel=[2,2], stride=[2,2]} : f64[1,3,3,3]\n"
                           "  %4 = flatten %3 : f64[1,27]\n"
                           "  %5 = concat %4, %4 : f64[1,54]\n"
                           "  %6 = slice %5 {axis=1, begin=0, end=48} : f64[1,48]\n"
                           "  %7 = dense %6, @d : f64[1,4]\n"
                           "  %8 = batchnorm %7, @g2, @be2, @m2, @v2 : f64[1,4]\n"
                           "  return %8\n"
                           "}\n";
  std::string folded = afterPasses(text, "fold-batchnorm,fuse-activation");
  ASSERT_EQ(folded.find("= batchnorm %"), std::string::npos) << folded;
  ASSERT_NE(folded.find("act=\"relu\""), std::string::npos) << folded;
  std::vector<double> x(72);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7 * double(i));
  std::vector<std::vector<double>> outs;
  for (const std::string &t : {text, folded}) {
    test::GraphRunner r(t);
    ASSERT_TRUE(r.ok()) << r.error();
    std::vector<double> w(54), d(192);
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(1.3 * double(i));
    for (size_t i = 0; i < d.size(); ++i) d[i] = std::sin(0.3 * double(i) + 1);
    r.setParam("w", w);
    r.setParam("b", {0.1, -0.2, 0.3});
    r.setParam("g", {1.5, 0.5, -2});
    r.setParam("be", {0.2, 0, -0.1});
    r.setParam("m", {0.3, -0.4, 0.05});
    r.setParam("v", {2, 0.5, 1.25});
    r.setParam("d", d);
    r.setParam("g2", {1, 2, 3, 4});
    r.setParam("be2", {-1, 0, 1, 2});
    r.setParam("m2", {0.5, 0.25, 0, -0.5});
    r.setParam("v2", {1, 4, 0.25, 9});
    auto o = r.runValues({x});
    ASSERT_EQ(o.size(), 1u);
    outs.push_back(o[0]);
  }
  ASSERT_EQ(outs[0].size(), outs[1].size());
  for (size_t i = 0; i < outs[0].size(); ++i)
    EXPECT_NEAR(outs[0][i], outs[1][i], 1e-12 * (1 + std::abs(outs[0][i]))) << i;
}

} // namespace
} // namespace dtnn
