// Gradient checks of dense, with and without a bias.
#include "GradCheck.h"

#include <gtest/gtest.h>

namespace dtnn::test {
namespace {

TEST(GradDense, WithBias) {
  expectGradientsMatch("param @w : f64[4,3] init=he_uniform\n"
                       "param @b : f64[4] init=zeros\n"
                       "graph @f(%x: f64[5,3]) -> f64[5,4] {\n"
                       "  %0 = dense %x, @w, @b : f64[5,4]\n"
                       "  return %0\n"
                       "}\n");
}

// nn.Linear over the last axis of a rank-3 input: every row of every sample
// maps by the same weight, whose gradient sums over all of them.
TEST(GradDense, OverTheLastAxis) {
  expectGradientsMatch("param @w : f64[4,3] init=he_uniform\n"
                       "param @b : f64[4] init=zeros\n"
                       "graph @f(%x: f64[2,5,3]) -> f64[2,5,4] {\n"
                       "  %0 = dense %x, @w, @b : f64[2,5,4]\n"
                       "  return %0\n"
                       "}\n");
}

TEST(GradDense, WithoutBias) {
  expectGradientsMatch("param @w : f64[2,7] init=he_uniform\n"
                       "graph @f(%x: f64[3,7]) -> f64[3,2] {\n"
                       "  %0 = dense %x, @w : f64[3,2]\n"
                       "  return %0\n"
                       "}\n");
}

// Two dense layers sharing the input: the gradient of x sums both uses.
TEST(GradDense, StackedAndFanOut) {
  expectGradientsMatch("param @w1 : f64[6,4] init=he_uniform\n"
                       "param @b1 : f64[6] init=zeros\n"
                       "param @w2 : f64[4,6] init=he_uniform\n"
                       "graph @f(%x: f64[2,4]) -> f64[2,4] {\n"
                       "  %0 = dense %x, @w1, @b1 : f64[2,6]\n"
                       "  %1 = dense %0, @w2 : f64[2,4]\n"
                       "  %2 = add %1, %x : f64[2,4]\n"
                       "  return %2\n"
                       "}\n");
}

// A fused activation (act, set by fuse-activation): the gradient goes back
// through it from the result, for each activation that fuses.
TEST(GradDense, FusedActivations) {
  for (const char *act : {"relu", "relu6", "sigmoid", "tanh"}) {
    SCOPED_TRACE(act);
    expectGradientsMatch(std::string("param @w : f64[4,3] init=he_uniform\n"
                                     "param @b : f64[4] init=zeros\n"
                                     "graph @f(%x: f64[5,3]) -> f64[5,4] {\n"
                                     "  %0 = dense %x, @w, @b {act=\"") +
                         act + "\"} : f64[5,4]\n  return %0\n}\n");
  }
}

// matmul with every combination of transposes, over batch dimensions that
// broadcast both ways ([2,1,...] against [3,...]) and against a plain matrix
// (a weight shared by the batch), whose gradient sums over it.
TEST(GradMatmul, TransposesAndBroadcasting) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::to_string(ta) + std::to_string(tb));
      std::string a = ta ? "f64[2,1,4,3]" : "f64[2,1,3,4]";
      std::string b = tb ? "f64[3,5,4]" : "f64[3,4,5]";
      std::string attrs = std::string(" {transpose_a=") + (ta ? "true" : "false") +
                          ", transpose_b=" + (tb ? "true" : "false") + "}";
      expectGradientsMatch("graph @f(%a: " + a + ", %b: " + b + ") -> f64[2,3,3,5] {\n" +
                           "  %0 = matmul %a, %b" + attrs + " : f64[2,3,3,5]\n" +
                           "  return %0\n}\n");
    }
  expectGradientsMatch("param @w : f64[4,2] init=he_uniform\n"
                       "graph @f(%x: f64[2,3,4]) -> f64[2,3,2] {\n"
                       "  %0 = matmul %x, @w : f64[2,3,2]\n"
                       "  return %0\n}\n");
  // x w^T with a shared 2-d w, as an attention block's projections: w's gradient is dense's.
  expectGradientsMatch("param @w : f64[2,4] init=he_uniform\n"
                       "graph @f(%x: f64[2,3,4]) -> f64[2,3,2] {\n"
                       "  %0 = matmul %x, @w {transpose_b=true} : f64[2,3,2]\n"
                       "  return %0\n}\n");
}

} // namespace
} // namespace dtnn::test
