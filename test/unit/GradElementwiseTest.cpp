// Gradient checks of the broadcasting binary ops and the generic helpers.
#include "GradCheck.h"

#include <gtest/gtest.h>

namespace dtnn::test {

namespace {

// IR of graph @f applying binary `op` to a: `ta` and b: `tb`, result `tr`.
std::string binaryIR(const std::string &op, const std::string &ta, const std::string &tb,
                     const std::string &tr) {
  return "graph @f(%a: " + ta + ", %b: " + tb + ") -> " + tr + " {\n  %0 = " + op +
         " %a, %b : " + tr + "\n  return %0\n}\n";
}

// Checks `op` on every broadcasting case; div keeps b away from zero.
void checkBinary(const std::string &op) {
  GradCheckOptions opts;
  if (op == "div") opts.ranges["b"] = {0.5, 2.0};
  struct Case {
    const char *a, *b, *r;
  };
  const Case cases[] = {
      {"f64[2,3]", "f64[2,3]", "f64[2,3]"},
      {"f64[2,3]", "f64[3]", "f64[2,3]"},
      {"f64[3]", "f64[2,3]", "f64[2,3]"},
      {"f64[2,1,4]", "f64[3,1]", "f64[2,3,4]"},
      {"f64[]", "f64[2,3]", "f64[2,3]"},
      {"f64[2,3]", "f64[]", "f64[2,3]"},
      {"f64[2,3,1]", "f64[1,3,4]", "f64[2,3,4]"},
      {"f64[?,3]", "f64[3]", "f64[?,3]"},
      {"f64[]", "f64[]", "f64[]"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(op + " " + c.a + " " + c.b);
    expectGradientsMatch(binaryIR(op, c.a, c.b, c.r), opts);
  }
}

} // namespace

TEST(GradElementwise, Add) { checkBinary("add"); }
// add with a fused activation (the residual add of a ResNet block): the
// gradient goes back through it from the result, then to both operands.
TEST(GradElementwise, AddWithFusedActivation) {
  for (const char *act : {"relu", "relu6", "sigmoid", "tanh"}) {
    SCOPED_TRACE(act);
    expectGradientsMatch("graph @f(%a: f64[2,3], %b: f64[3]) -> f64[2,3] {\n"
                         "  %0 = add %a, %b {act=\"" + std::string(act) + "\"} : f64[2,3]\n"
                         "  return %0\n}\n");
  }
}
TEST(GradElementwise, Sub) { checkBinary("sub"); }
TEST(GradElementwise, Mul) { checkBinary("mul"); }
TEST(GradElementwise, Div) { checkBinary("div"); }

// rsqrt's gradient, -dy * y^3 / 2, away from its pole at x = -eps.
TEST(GradElementwise, Rsqrt) {
  GradCheckOptions opts;
  opts.ranges["a"] = {0.2, 2.0};
  expectGradientsMatch("graph @f(%a: f64[2,3]) -> f64[2,3] {\n"
                       "  %0 = rsqrt %a {eps=0.01} : f64[2,3]\n"
                       "  return %0\n}\n",
                       opts);
}

// sqrt's gradient, dy / (2 y), away from its pole at 0.
TEST(GradElementwise, Sqrt) {
  GradCheckOptions opts;
  opts.ranges["a"] = {0.2, 2.0};
  expectGradientsMatch("graph @f(%a: f64[2,3]) -> f64[2,3] {\n"
                       "  %0 = sqrt %a : f64[2,3]\n"
                       "  return %0\n}\n",
                       opts);
}

// The math ops' gradients: exp (dy y), log (dy / x, away from its pole),
// erf (dy 2/sqrt(pi) e^(-x^2)) and pow by an integer, a fractional and a
// negative exponent (dy p x^(p-1), x kept positive).
TEST(GradElementwise, MathOps) {
  GradCheckOptions opts;
  opts.ranges["a"] = {0.3, 2.0};
  for (const std::string op : {"exp", "log", "erf", "pow {exponent=3.0}", "pow {exponent=0.5}",
                               "pow {exponent=-1.5}"}) {
    SCOPED_TRACE(op);
    expectGradientsMatch("graph @f(%a: f64[2,3]) -> f64[2,3] {\n"
                         "  %0 = " + op.substr(0, op.find(' ')) + " %a" +
                             (op.find(' ') == std::string::npos ? "" : op.substr(op.find(' '))) +
                             " : f64[2,3]\n"
                             "  return %0\n}\n",
                         opts);
  }
}

TEST(GradElementwise, SameOperandTwice) {
  expectGradientsMatch(R"(
graph @f(%a: f64[2,3]) -> f64[2,3] {
  %0 = mul %a, %a : f64[2,3]
  %1 = sub %0, %a : f64[2,3]
  return %1
}
)");
}

TEST(GradElementwise, DivWithParam) {
  GradCheckOptions opts;
  opts.ranges["w"] = {0.5, 2.0};
  expectGradientsMatch(R"(
param @w : f64[4] init=ones
graph @f(%x: f64[3,4]) -> f64[3,4] {
  %0 = div %x, @w : f64[3,4]
  return %0
}
)",
                       opts);
}

TEST(GradElementwise, Scale) {
  expectGradientsMatch(R"(
graph @f(%x: f64[2,3]) -> f64[2,3] {
  %0 = scale %x {factor=-2.5} : f64[2,3]
  return %0
}
)");
}

TEST(GradElementwise, FillPassesNoGradient) {
  expectGradientsMatch(R"(
graph @f(%x: f64[2,3]) -> f64[2,3] {
  %0 = fill %x {value=3.0} : f64[2,3]
  %1 = mul %x, %0 : f64[2,3]
  return %1
}
)");
}

TEST(GradElementwise, SumLike) {
  expectGradientsMatch(R"(
graph @f(%x: f64[2,3,4], %like: f64[3,1]) -> f64[3,1] {
  %0 = sum_like %x, %like : f64[3,1]
  %1 = mul %0, %like : f64[3,1]
  return %1
}
)");
  expectGradientsMatch(R"(
graph @f(%x: f64[2,3], %s: f64[]) -> f64[] {
  %0 = sum_like %x, %s : f64[]
  %1 = mul %0, %s : f64[]
  return %1
}
)");
}

TEST(GradElementwise, BroadcastLike) {
  expectGradientsMatch(R"(
graph @f(%x: f64[3,1], %like: f64[2,3,4]) -> f64[2,3,4] {
  %0 = broadcast_like %x, %like : f64[2,3,4]
  %1 = mul %0, %like : f64[2,3,4]
  return %1
}
)");
}

} // namespace dtnn::test
