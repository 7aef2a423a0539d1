// Gradient checks of the losses with respect to their predictions (and the
// target of mse_loss). Labels are i32 inputs and get no gradient.
#include "GradCheck.h"

#include <gtest/gtest.h>

namespace dtnn::test {
namespace {

TEST(GradLoss, SoftmaxCrossEntropy) {
  GradCheckOptions opts;
  opts.classes = 5;
  opts.lo = -3;
  opts.hi = 3;
  expectGradientsMatch("graph @f(%x: f64[4,5], %label: i32[4]) -> f64[] {\n"
                       "  %0 = softmax_cross_entropy %x, %label : f64[]\n"
                       "  return %0\n"
                       "}\n",
                       opts);
}

// Large logits: the fused kernel must stay finite where exp overflows.
TEST(GradLoss, SoftmaxCrossEntropyLargeLogits) {
  GradCheckOptions opts;
  opts.classes = 3;
  opts.ranges["x"] = {700, 720};
  opts.rtol = 1e-4;
  opts.atol = 1e-6;
  expectGradientsMatch("graph @f(%x: f64[3,3], %label: i32[3]) -> f64[] {\n"
                       "  %0 = softmax_cross_entropy %x, %label : f64[]\n"
                       "  return %0\n"
                       "}\n",
                       opts);
}

TEST(GradLoss, NllLoss) {
  GradCheckOptions opts;
  opts.classes = 4;
  opts.lo = -5;
  opts.hi = 0;
  expectGradientsMatch("graph @f(%x: f64[6,4], %label: i32[6]) -> f64[] {\n"
                       "  %0 = nll_loss %x, %label : f64[]\n"
                       "  return %0\n"
                       "}\n",
                       opts);
}

TEST(GradLoss, MseLoss) {
  GradCheckOptions opts;
  opts.skip = {"t"};
  expectGradientsMatch("graph @f(%p: f64[3,4], %t: f64[3,4]) -> f64[] {\n"
                       "  %0 = mse_loss %p, %t : f64[]\n"
                       "  return %0\n"
                       "}\n",
                       opts);
}

// The target of mse_loss gets the negated gradient of the prediction.
TEST(GradLoss, MseLossTarget) {
  expectGradientsMatch("graph @f(%p: f64[5], %t: f64[5]) -> f64[] {\n"
                       "  %0 = mse_loss %p, %t : f64[]\n"
                       "  return %0\n"
                       "}\n");
}

TEST(GradLoss, BceLoss) {
  GradCheckOptions opts;
  opts.ranges["p"] = {0.05, 0.95};
  opts.ranges["t"] = {0, 1};
  opts.skip = {"t"};
  expectGradientsMatch("graph @f(%p: f64[4,3], %t: f64[4,3]) -> f64[] {\n"
                       "  %0 = bce_loss %p, %t : f64[]\n"
                       "  return %0\n"
                       "}\n",
                       opts);
}

} // namespace
} // namespace dtnn::test
