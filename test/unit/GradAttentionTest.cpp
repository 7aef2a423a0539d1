// Gradient checks of scaled_dot_product_attention: its backward op (scores
// recomputed a head at a time) against finite differences, with and without
// a causal mask, an additive mask that broadcasts, a given scale, and
// different key and value sizes.
#include "GradCheck.h"

#include <gtest/gtest.h>

namespace dtnn::test {
namespace {

TEST(GradAttention, Plain) {
  expectGradientsMatch("graph @f(%q: f64[2,3,4,5], %k: f64[2,3,6,5], %v: f64[2,3,6,7]) -> "
                       "f64[2,3,4,7] {\n"
                       "  %0 = scaled_dot_product_attention %q, %k, %v : f64[2,3,4,7]\n"
                       "  return %0\n}\n");
}

TEST(GradAttention, CausalWithScale) {
  expectGradientsMatch("graph @f(%q: f64[2,5,4], %k: f64[2,5,4], %v: f64[2,5,3]) -> f64[2,5,3] {\n"
                       "  %0 = scaled_dot_product_attention %q, %k, %v {is_causal=true, "
                       "scale=0.7} : f64[2,5,3]\n"
                       "  return %0\n}\n");
}

TEST(GradAttention, AdditiveMask) {
  GradCheckOptions opts;
  opts.skip = {"m"};
  opts.ranges["m"] = {-3, 0};
  expectGradientsMatch("graph @f(%q: f64[2,2,3,4], %k: f64[2,2,5,4], %v: f64[2,2,5,4], "
                       "%m: f64[2,1,1,5]) -> f64[2,2,3,4] {\n"
                       "  %0 = scaled_dot_product_attention %q, %k, %v, %m : f64[2,2,3,4]\n"
                       "  return %0\n}\n",
                       opts);
}

} // namespace
} // namespace dtnn::test
