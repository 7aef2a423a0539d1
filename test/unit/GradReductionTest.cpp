// Gradient checks by finite differences of the reductions the front end builds from existing
// ops: mean over axes (transpose, reshape, global_avgpool) and adaptive_avgpool to sizes that do
// not divide the input (overlapping slices, avgpool, concat). The graphs are compiled from .dtnn
// source, as a model would be.
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

} // namespace
} // namespace dtnn
