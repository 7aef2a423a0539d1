// The gradient rule of the extension op `square` against central finite
// differences, with the unit tests' gradient check (test/unit/GradCheck.h):
// the op, its rule and its reference kernel as Square.cpp registers them.
#include "Extensions.h"
#include "GradCheck.h"

#include "dtnn/Registry.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace dtnn::test {
namespace {

TEST(ExtensionGrad, Square) {
  for (const char *type : {"f64[2,3]", "f64[]", "f64[?,4]"}) {
    SCOPED_TRACE(type);
    std::string t = type;
    expectGradientsMatch("graph @f(%x: " + t + ") -> " + t + " {\n  %0 = square %x : " + t +
                         "\n  return %0\n}\n");
  }
}

TEST(ExtensionGrad, SquareInAChain) {
  expectGradientsMatch("graph @f(%x: f64[2,3], %y: f64[2,3]) -> f64[2,3] {\n"
                       "  %0 = mul %x, %y : f64[2,3]\n"
                       "  %1 = square %0 : f64[2,3]\n"
                       "  %2 = tanh %1 : f64[2,3]\n"
                       "  return %2\n}\n");
}

} // namespace
} // namespace dtnn::test

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (dtnn::Error (*reg)() : {dtnn::registerBuiltins, ext::registerSquare}) {
    if (dtnn::Error e = reg()) {
      std::fprintf(stderr, "error: %s\n", e.message().c_str());
      return 1;
    }
  }
  return RUN_ALL_TESTS();
}
