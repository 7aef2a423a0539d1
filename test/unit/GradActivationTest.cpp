// Gradient checks of the activations, with random inputs kept away from the
// kinks of the piecewise ones.
#include "GradCheck.h"

#include <gtest/gtest.h>

namespace dtnn::test {

namespace {

// IR of graph @f applying `op` (with attribute text `attrs`, e.g.
// " {axis=0}") to x: `type`.
std::string unaryIR(const std::string &op, const std::string &attrs,
                    const std::string &type = "f64[3,4]") {
  return "graph @f(%x: " + type + ") -> " + type + " {\n  %0 = " + op + " %x" + attrs + " : " +
         type + "\n  return %0\n}\n";
}

// Checks `op` with x drawn from each of the given intervals in turn.
void checkOnRanges(const std::string &op, const std::string &attrs,
                   std::vector<std::pair<double, double>> ranges) {
  for (const auto &r : ranges) {
    SCOPED_TRACE(op + attrs + " on [" + std::to_string(r.first) + ", " + std::to_string(r.second) +
                 "]");
    GradCheckOptions opts;
    opts.ranges["x"] = r;
    expectGradientsMatch(unaryIR(op, attrs), opts);
  }
}

} // namespace

TEST(GradActivation, Relu) { checkOnRanges("relu", "", {{-2, -0.1}, {0.1, 2}}); }

TEST(GradActivation, Relu6) { checkOnRanges("relu6", "", {{-2, -0.1}, {0.1, 5.9}, {6.1, 8}}); }

TEST(GradActivation, LeakyRelu) {
  checkOnRanges("leaky_relu", " {alpha=0.2}", {{-2, -0.1}, {0.1, 2}});
}

TEST(GradActivation, Sigmoid) { checkOnRanges("sigmoid", "", {{-4, 4}}); }
TEST(GradActivation, Tanh) { checkOnRanges("tanh", "", {{-3, 3}}); }
TEST(GradActivation, Silu) { checkOnRanges("silu", "", {{-4, 4}}); }

TEST(GradActivation, GeluExact) { checkOnRanges("gelu", " {approximate=\"none\"}", {{-3, 3}}); }

TEST(GradActivation, GeluTanh) { checkOnRanges("gelu", " {approximate=\"tanh\"}", {{-3, 3}}); }

TEST(GradActivation, HardSigmoid) {
  checkOnRanges("hard_sigmoid", "", {{-5, -3.1}, {-2.9, 2.9}, {3.1, 5}});
}

TEST(GradActivation, HardSwish) {
  checkOnRanges("hard_swish", "", {{-5, -3.1}, {-2.9, 2.9}, {3.1, 5}});
}

TEST(GradActivation, Softmax) {
  for (const char *attrs : {" {axis=0}", " {axis=1}", " {axis=-1}"}) {
    SCOPED_TRACE(attrs);
    expectGradientsMatch(unaryIR("softmax", attrs));
  }
  expectGradientsMatch(unaryIR("softmax", " {axis=1}", "f64[2,3,4]"));
}

TEST(GradActivation, LogSoftmax) {
  for (const char *attrs : {" {axis=0}", " {axis=1}", " {axis=-1}"}) {
    SCOPED_TRACE(attrs);
    expectGradientsMatch(unaryIR("log_softmax", attrs));
  }
  expectGradientsMatch(unaryIR("log_softmax", " {axis=1}", "f64[2,3,4]"));
}

// A chain through several activations with a dynamic batch dimension.
TEST(GradActivation, ChainWithDynamicBatch) {
  expectGradientsMatch(R"(
graph @f(%x: f64[?,5]) -> f64[?,5] {
  %0 = tanh %x : f64[?,5]
  %1 = gelu %0 {approximate="tanh"} : f64[?,5]
  %2 = sigmoid %1 : f64[?,5]
  %3 = log_softmax %2 {axis=1} : f64[?,5]
  return %3
}
)");
}

} // namespace dtnn::test
