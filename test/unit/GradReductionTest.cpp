// Gradient checks by finite differences of the reductions the front end builds: mean over axes
// (transpose, reshape, global_avgpool; over the batch axis a reduce_sum and count_like), sum,
// max (reduce_max, whose maxima are unique here) and var over any axes, and adaptive_avgpool to
// sizes that do not divide the input (overlapping slices, avgpool, concat). The graphs are
// compiled from .dtnn source, as a model would be.
#include "GradCheck.h"

#include "frontend/Frontend.h"
#include "ir/Printer.h"

#include <gtest/gtest.h>

#include <sstream>

namespace dtnn {
namespace {

// The IR of model @f of `source`, compiled without the passes.
std::string compiled(const std::string &source) {
  SourceManager sm;
  std::ostringstream errors;
  DiagnosticEngine diags(sm, errors);
  auto m = frontend::compileSource("f.dtnn", source, {}, sm, diags);
  EXPECT_TRUE(m) << errors.str();
  return m ? ir::printModule(*m) : "";
}

TEST(GradReduction, AdaptiveAvgPoolUnevenWindows) {
  test::expectGradientsMatch(compiled(
      "model f(x: f64[2, 2, 5, 7]) -> f64[2, 2, 2, 3] { return adaptive_avgpool(x, [2, 3]) }"));
}

TEST(GradReduction, MeanOverChannelsAndWidth) {
  test::expectGradientsMatch(
      compiled("model f(x: f64[2, 3, 4, 5]) -> f64[2, 4] { return mean(x, [1, 3]) }"));
}

TEST(GradReduction, MeanKeepdimOverLastAxis) {
  test::expectGradientsMatch(compiled(
      "model f(x: f64[2, 3, 4]) -> f64[2, 3, 1] { return mean(x, [-1], keepdim=true) }"));
}

TEST(GradReduction, SumMaxVarMeanOverAnyAxes) {
  test::expectGradientsMatch(compiled("model f(x: f64[2, 3, 4]) -> f64[3] {\n"
                                      "  let a = sum(x, [0, 2]) + max(x, [2, 0])\n"
                                      "  let b = var(x, [0, -1]) + var(x, [0, 2], correction=0)\n"
                                      "  return a * b + mean(x, [0, 2])\n}"));
}

TEST(GradReduction, KeepdimBroadcastsBack) {
  test::expectGradientsMatch(compiled("model f(x: f64[2, 3, 4]) -> f64[2, 3, 4] {\n"
                                      "  return x * max(x, 1, keepdim=true) - "
                                      "sum(x, [0, 1], keepdim=true)\n}"));
}

} // namespace
} // namespace dtnn
