// Gradient checks of conv2d by finite differences: input, weight and bias
// gradients over strides, padding, dilation, groups and non-square shapes.
#include "GradCheck.h"

#include <gtest/gtest.h>

namespace dtnn {
namespace {

// A module with weight @w of type wType, optionally bias @b [K], and graph
// @f applying conv2d with `attrs` to %x of type xType.
std::string convModule(const std::string &xType, const std::string &wType, int64_t k,
                       bool bias, const std::string &attrs, const std::string &yType) {
  std::string text = "param @w : f64" + wType + " init=he_uniform\n";
  if (bias) text += "param @b : f64[" + std::to_string(k) + "] init=zeros\n";
  text += "graph @f(%x: f64" + xType + ") -> f64" + yType + " {\n";
  text += "  %0 = conv2d %x, @w" + std::string(bias ? ", @b" : "") + " " + attrs + " : f64" +
          yType + "\n  return %0\n}\n";
  return text;
}

TEST(GradConv, Plain) {
  test::expectGradientsMatch(convModule("[2,3,5,5]", "[4,3,3,3]", 4, true, "", "[2,4,3,3]"));
}

// A fused activation (act): the gradient goes back through it from the result.
TEST(GradConv, FusedActivations) {
  for (const char *act : {"relu", "relu6", "sigmoid", "tanh"}) {
    SCOPED_TRACE(act);
    test::expectGradientsMatch(convModule("[2,3,5,5]", "[4,3,3,3]", 4, true,
                                          std::string("{pad=[1,1,1,1], act=\"") + act + "\"}",
                                          "[2,4,5,5]"));
  }
}

// A fused residual (residual=true, the last operand), with and without a
// bias and an activation: the residual's gradient is the pre-activation dy.
TEST(GradConv, FusedResidual) {
  for (const char *act : {"none", "relu", "tanh"})
    for (bool bias : {true, false}) {
      SCOPED_TRACE(std::string(act) + (bias ? " with bias" : " without bias"));
      std::string text = "param @w : f64[4,3,3,3] init=he_uniform\n";
      if (bias) text += "param @b : f64[4] init=zeros\n";
      text += "graph @f(%x: f64[2,3,5,5], %r: f64[2,4,5,5]) -> f64[2,4,5,5] {\n"
              "  %0 = conv2d %x, @w" + std::string(bias ? ", @b" : "") +
              ", %r {pad=[1,1,1,1], residual=true, act=\"" + act + "\"} : f64[2,4,5,5]\n"
              "  return %0\n}\n";
      test::expectGradientsMatch(text);
    }
}

TEST(GradConv, StrideTwoWithPadding) {
  test::expectGradientsMatch(
      convModule("[2,2,7,7]", "[3,2,3,3]", 3, true, "{stride=[2,2], pad=[1,1,1,1]}", "[2,3,4,4]"));
}

TEST(GradConv, AsymmetricPadNonSquare) {
  // OH = (6 + 2 + 0 - 3) / 1 + 1 = 6, OW = (5 + 0 + 1 - 2) / 2 + 1 = 3.
  test::expectGradientsMatch(convModule("[1,2,6,5]", "[3,2,3,2]", 3, true,
                                        "{stride=[1,2], pad=[2,0,0,1]}", "[1,3,6,3]"));
}

TEST(GradConv, DilationTwo) {
  test::expectGradientsMatch(
      convModule("[2,2,7,6]", "[2,2,3,3]", 2, true, "{dilation=[2,2], pad=[1,1,1,1]}",
                 "[2,2,5,4]"));
}

TEST(GradConv, GroupsTwoWithoutBias) {
  test::expectGradientsMatch(
      convModule("[2,4,5,5]", "[6,2,3,3]", 6, false, "{groups=2, pad=[1,1,1,1]}", "[2,6,5,5]"));
}

TEST(GradConv, Depthwise) {
  test::expectGradientsMatch(convModule("[2,3,6,6]", "[3,1,3,3]", 3, true,
                                        "{stride=[2,2], pad=[1,1,1,1], groups=3}", "[2,3,3,3]"));
}

TEST(GradConv, EverythingAtOnce) {
  // OH = (9 + 1 + 2 - 5) / 2 + 1 = 4, OW = (8 + 2 + 0 - 4) / 1 + 1 = 7.
  test::expectGradientsMatch(
      convModule("[2,4,9,8]", "[6,2,3,2]", 6, true,
                 "{stride=[2,1], pad=[1,2,2,0], dilation=[2,3], groups=2}", "[2,6,4,7]"));
}

TEST(GradConv, SharedWeightWithoutInputGradient) {
  // The input is skipped, so the first conv2d builds no input gradient; the
  // weight feeds both convolutions, so its two gradients are summed.
  const char *ir = R"(
param @w : f64[2,2,3,3] init=he_uniform
param @b : f64[2] init=zeros
graph @f(%x: f64[1,2,5,4]) -> f64[1,2,2,2] {
  %0 = conv2d %x, @w, @b {pad=[1,1,1,1]} : f64[1,2,5,4]
  %1 = conv2d %0, @w {stride=[2,1], pad=[1,1,1,1], dilation=[2,2]} : f64[1,2,2,2]
  return %1
}
)";
  test::GradCheckOptions opts;
  opts.skip = {"x"};
  test::expectGradientsMatch(ir, opts);
}

} // namespace
} // namespace dtnn
