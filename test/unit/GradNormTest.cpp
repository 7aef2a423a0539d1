// Gradient checks of batchnorm (inference, frozen statistics), its training
// form batchnorm_train on [N,C] and [N,C,H,W], and dropout_train.
#include "GradCheck.h"

#include "ir/OpTable.h"
#include "ir/TextParser.h"
#include "passes/Backward.h"

#include <gtest/gtest.h>

#include <sstream>

namespace dtnn::test {
namespace {

// The running statistics are buffers: no gradient flows into them.
GradCheckOptions batchNormOptions() {
  GradCheckOptions opts;
  opts.skip = {"rm", "rv"};
  opts.ranges["rv"] = {0.5, 2.0};
  opts.ranges["gamma"] = {0.5, 1.5};
  return opts;
}

TEST(GradNorm, BatchNormInference2d) {
  expectGradientsMatch("param @gamma : f64[3] init=ones\n"
                       "param @beta : f64[3] init=zeros\n"
                       "buffer @rm : f64[3] init=zeros\n"
                       "buffer @rv : f64[3] init=ones\n"
                       "graph @f(%x: f64[4,3]) -> f64[4,3] {\n"
                       "  %0 = batchnorm %x, @gamma, @beta, @rm, @rv : f64[4,3]\n"
                       "  return %0\n"
                       "}\n",
                       batchNormOptions());
}

// layernorm over the last axis with gamma and beta, and over the last two
// without: dx through the recomputed statistics, dgamma and dbeta summed
// over the leading dimensions.
TEST(GradNorm, LayerNorm) {
  GradCheckOptions opts;
  opts.ranges["gamma"] = {0.5, 1.5};
  expectGradientsMatch("param @gamma : f64[5] init=ones\n"
                       "param @beta : f64[5] init=zeros\n"
                       "graph @f(%x: f64[3,2,5]) -> f64[3,2,5] {\n"
                       "  %0 = layernorm %x, @gamma, @beta {eps=0.001} : f64[3,2,5]\n"
                       "  return %0\n"
                       "}\n",
                       opts);
  expectGradientsMatch("graph @f(%x: f64[2,3,4]) -> f64[2,3,4] {\n"
                       "  %0 = layernorm %x {axes=2} : f64[2,3,4]\n"
                       "  return %0\n"
                       "}\n");
}

TEST(GradNorm, BatchNormInference4d) {
  expectGradientsMatch("param @gamma : f64[2] init=ones\n"
                       "param @beta : f64[2] init=zeros\n"
                       "buffer @rm : f64[2] init=zeros\n"
                       "buffer @rv : f64[2] init=ones\n"
                       "graph @f(%x: f64[3,2,2,3]) -> f64[3,2,2,3] {\n"
                       "  %0 = batchnorm %x, @gamma, @beta, @rm, @rv {eps=0.001} : f64[3,2,2,3]\n"
                       "  return %0\n"
                       "}\n",
                       batchNormOptions());
}

TEST(GradNorm, BatchNormTrain2d) {
  expectGradientsMatch("param @gamma : f64[3] init=ones\n"
                       "param @beta : f64[3] init=zeros\n"
                       "buffer @rm : f64[3] init=zeros\n"
                       "buffer @rv : f64[3] init=ones\n"
                       "graph @f(%x: f64[5,3]) -> f64[5,3] {\n"
                       "  %0, %1, %2, %3, %4 = batchnorm_train %x, @gamma, @beta, @rm, @rv"
                       " : f64[5,3], f64[3], f64[3], f64[3], f64[3]\n"
                       "  return %0\n"
                       "}\n",
                       batchNormOptions());
}

TEST(GradNorm, BatchNormTrain4d) {
  expectGradientsMatch("param @gamma : f64[2] init=ones\n"
                       "param @beta : f64[2] init=zeros\n"
                       "buffer @rm : f64[2] init=zeros\n"
                       "buffer @rv : f64[2] init=ones\n"
                       "graph @f(%x: f64[2,2,3,2]) -> f64[2,2,3,2] {\n"
                       "  %0, %1, %2, %3, %4 = batchnorm_train %x, @gamma, @beta, @rm, @rv"
                       " {momentum=0.3} : f64[2,2,3,2], f64[2], f64[2], f64[2], f64[2]\n"
                       "  return %0\n"
                       "}\n",
                       batchNormOptions());
}

// A fused activation (act) on either form: the gradient goes back through it
// from the result.
TEST(GradNorm, FusedActivations) {
  for (const char *act : {"relu", "relu6", "sigmoid", "tanh"}) {
    SCOPED_TRACE(act);
    std::string attrs = std::string(" {act=\"") + act + "\"}";
    std::string params = "param @gamma : f64[2] init=ones\n"
                         "param @beta : f64[2] init=zeros\n"
                         "buffer @rm : f64[2] init=zeros\n"
                         "buffer @rv : f64[2] init=ones\n";
    expectGradientsMatch(params +
                             "graph @f(%x: f64[2,2,3,2]) -> f64[2,2,3,2] {\n"
                             "  %0, %1, %2, %3, %4 = batchnorm_train %x, @gamma, @beta, @rm, @rv" +
                             attrs +
                             " : f64[2,2,3,2], f64[2], f64[2], f64[2], f64[2]\n"
                             "  return %0\n"
                             "}\n",
                         batchNormOptions());
    expectGradientsMatch(params +
                             "graph @f(%x: f64[3,2]) -> f64[3,2] {\n"
                             "  %0 = batchnorm %x, @gamma, @beta, @rm, @rv" +
                             attrs +
                             " : f64[3,2]\n"
                             "  return %0\n"
                             "}\n",
                         batchNormOptions());
  }
}

// The normalized output feeds a second use of x, so dx sums two paths.
TEST(GradNorm, BatchNormTrainWithFanOut) {
  expectGradientsMatch("param @gamma : f64[2] init=ones\n"
                       "param @beta : f64[2] init=zeros\n"
                       "buffer @rm : f64[2] init=zeros\n"
                       "buffer @rv : f64[2] init=ones\n"
                       "graph @f(%x: f64[4,2]) -> f64[4,2] {\n"
                       "  %0, %1, %2, %3, %4 = batchnorm_train %x, @gamma, @beta, @rm, @rv"
                       " : f64[4,2], f64[2], f64[2], f64[2], f64[2]\n"
                       "  %5 = mul %0, %x : f64[4,2]\n"
                       "  return %5\n"
                       "}\n",
                       batchNormOptions());
}

// The step input is an integer fixed for the whole check, so the mask is too.
TEST(GradNorm, DropoutTrain) {
  GradCheckOptions opts;
  opts.classes = 1000;
  expectGradientsMatch("graph @f(%x: f64[6,5], %step: i64[]) -> f64[6,5] {\n"
                       "  %0, %1 = dropout_train %x, %step {rate=0.4, seed=3}"
                       " : f64[6,5], f64[6,5]\n"
                       "  return %0\n"
                       "}\n",
                       opts);
}

// drop_path_train's mask is fixed by (seed, step, sample) like dropout_train's.
TEST(GradNorm, DropPathTrain) {
  GradCheckOptions opts;
  opts.classes = 1000;
  expectGradientsMatch("graph @f(%x: f64[6,2,3], %step: i64[]) -> f64[6,2,3] {\n"
                       "  %0, %1 = drop_path_train %x, %step {rate=0.4, seed=3}"
                       " : f64[6,2,3], f64[6,2,3]\n"
                       "  return %0\n"
                       "}\n",
                       opts);
}

// At inference dropout is the identity, and so is its gradient.
TEST(GradNorm, DropoutInference) {
  expectGradientsMatch("graph @f(%x: f64[3,4]) -> f64[3,4] {\n"
                       "  %0 = dropout %x {rate=0.5} : f64[3,4]\n"
                       "  return %0\n"
                       "}\n");
}

// A trainable mean or variance operand is an error, not a silent zero.
TEST(GradNorm, NoGradientIntoStatistics) {
  SourceManager sm;
  std::ostringstream errs;
  DiagnosticEngine diags(sm, errs);
  auto m = ir::parseModule("param @gamma : f64[2] init=ones\n"
                           "param @beta : f64[2] init=zeros\n"
                           "param @rm : f64[2] init=zeros\n"
                           "buffer @rv : f64[2] init=ones\n"
                           "graph @f(%x: f64[3,2]) -> f64[3,2] {\n"
                           "  %0 = batchnorm %x, @gamma, @beta, @rm, @rv : f64[3,2]\n"
                           "  return %0\n"
                           "}\n",
                           "bn.dtir", sm, diags);
  ASSERT_TRUE(m) << errs.str();
  ir::Graph &g = *m->findGraph("f");
  ir::Value *dy = g.addInput("dy", g.outputs()[0]->type());
  auto grads = passes::appendBackward(g, {{g.outputs()[0], dy}}, {m->params()[2]->value});
  ASSERT_FALSE(grads);
  EXPECT_NE(grads.error().message().find(
                "no gradient flows into batchnorm's mean and variance operands; make them "
                "buffers (not trainable)"),
            std::string::npos)
      << grads.error().message();
}

// The training forms take the forward op's operands and attributes first.
TEST(GradNorm, TrainForms) {
  const ir::OpTable &t = ir::OpTable::get();
  for (const char *name : {"batchnorm", "dropout"}) {
    const ir::OpDef &fwd = *t.lookup(name);
    const ir::OpDef *train = t.lookup(fwd.trainForm);
    ASSERT_TRUE(train) << name << " -> " << fwd.trainForm;
    EXPECT_EQ(fwd.trainForm, std::string(name) + "_train");
    ASSERT_GE(train->operands.size(), fwd.operands.size());
    for (const ir::AttrSpec &a : fwd.attrs) EXPECT_TRUE(train->findAttr(a.name)) << a.name;
    EXPECT_TRUE(train->grad) << fwd.trainForm;
    EXPECT_TRUE(fwd.grad) << name;
  }
  EXPECT_EQ(t.lookup("dropout_train")->operands.back().name, "step");
  EXPECT_TRUE(t.lookup("batchnorm_train")->writesOperands());
}

} // namespace
} // namespace dtnn::test
