// Fusion passes ask the target where an op would run: a fused op must run on
// the backend its unfused form ran on. The run's target comes from the
// kernel registry.
#include "ir/Printer.h"
#include "ir/TextParser.h"
#include "passes/FusionTarget.h"
#include "passes/PassManager.h"
#include "runtime/FusionTargets.h"

#include <gtest/gtest.h>

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
  EXPECT_FALSE(pm.parsePipeline("fuse-conv-bias-act"));
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

} // namespace
} // namespace dtnn
