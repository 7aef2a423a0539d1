// Gradient checks of the shape ops and their helpers.
#include "GradCheck.h"

#include <gtest/gtest.h>

namespace dtnn::test {

TEST(GradShape, Reshape) {
  expectGradientsMatch(R"(
graph @f(%x: f64[2,6]) -> f64[3,4] {
  %0 = reshape %x {shape=[3,-1]} : f64[3,4]
  return %0
}
)");
}

TEST(GradShape, Flatten) {
  expectGradientsMatch(R"(
graph @f(%x: f64[?,3,2,2]) -> f64[?,12] {
  %0 = flatten %x {axis=1} : f64[?,12]
  return %0
}
)");
}

TEST(GradShape, ReshapeLike) {
  expectGradientsMatch(R"(
graph @f(%x: f64[2,6], %like: f64[4,3]) -> f64[4,3] {
  %0 = reshape_like %x, %like : f64[4,3]
  %1 = mul %0, %like : f64[4,3]
  return %1
}
)");
}

TEST(GradShape, Transpose) {
  expectGradientsMatch(R"(
graph @f(%x: f64[2,3,4]) -> f64[4,2,3] {
  %0 = transpose %x {perm=[2,0,1]} : f64[4,2,3]
  return %0
}
)");
  expectGradientsMatch(R"(
graph @f(%x: f64[3,5]) -> f64[5,3] {
  %0 = transpose %x {perm=[1,0]} : f64[5,3]
  return %0
}
)");
}

TEST(GradShape, ConcatOfThree) {
  expectGradientsMatch(R"(
graph @f(%a: f64[2,1,3], %b: f64[2,2,3], %c: f64[2,3,3]) -> f64[2,6,3] {
  %0 = concat %a, %b, %c {axis=1} : f64[2,6,3]
  return %0
}
)");
}

TEST(GradShape, ConcatSameInputTwice) {
  expectGradientsMatch(R"(
graph @f(%a: f64[?,2]) -> f64[?,4] {
  %0 = concat %a, %a {axis=-1} : f64[?,4]
  return %0
}
)");
}

TEST(GradShape, Slice) {
  expectGradientsMatch(R"(
graph @f(%x: f64[2,5,3]) -> f64[2,2,3] {
  %0 = slice %x {axis=1, begin=1, end=3} : f64[2,2,3]
  return %0
}
)");
  expectGradientsMatch(R"(
graph @f(%x: f64[?,4]) -> f64[?,1] {
  %0 = slice %x {axis=-1, begin=3, end=4} : f64[?,1]
  return %0
}
)");
}

} // namespace dtnn::test
