// Forward tests of the reference kernels of the shape ops.
#include "RefRun.h"

#include <gtest/gtest.h>

#include <numeric>

namespace dtnn::test {

namespace {

using ir::DType;
using ir::TensorType;

// 0, 1, ..., n-1.
std::vector<double> iota(int n) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), 0.0);
  return v;
}

} // namespace

TEST(RefShape, ReshapeAndFlatten) {
  auto outs = runGraph(R"(
graph @f(%x: f32[?,2,3], %like: f32[3,2]) -> (f32[?,6], f32[3,2], f32[3,2]) {
  %0 = flatten %x {axis=1} : f32[?,6]
  %1 = reshape %x {shape=[3,-1]} : f32[3,2]
  %2 = reshape_like %0, %like : f32[3,2]
  return %0, %1, %2
}
)",
                       {makeTensor(TensorType(DType::F32, {1, 2, 3}), iota(6)),
                        makeTensor(TensorType(DType::F32, {3, 2}), std::vector<double>(6, 0))});
  ASSERT_EQ(outs.size(), 3u);
  for (const auto &t : outs) expectTensorNear(t, iota(6));
  EXPECT_EQ(outs[0].type(), TensorType(DType::F32, {1, 6}));
  EXPECT_EQ(outs[2].type(), TensorType(DType::F32, {3, 2}));
}

TEST(RefShape, Transpose2D) {
  auto outs = runGraph(R"(
graph @f(%x: f64[2,3]) -> f64[3,2] {
  %0 = transpose %x {perm=[1,0]} : f64[3,2]
  return %0
}
)",
                       {makeTensor(TensorType(DType::F64, {2, 3}), {1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(outs.size(), 1u);
  expectTensorNear(outs[0], {1, 4, 2, 5, 3, 6});
}

TEST(RefShape, Transpose3D) {
  // out[k,i,j] = x[i,j,k] with x[i,j,k] = 12 i + 4 j + k.
  auto outs = runGraph(R"(
graph @f(%x: i32[2,3,4]) -> (i32[4,2,3], i32[2,3,4]) {
  %0 = transpose %x {perm=[2,0,1]} : i32[4,2,3]
  %1 = transpose %x {perm=[0,1,2]} : i32[2,3,4]
  return %0, %1
}
)",
                       {makeTensor(TensorType(DType::I32, {2, 3, 4}), iota(24))});
  ASSERT_EQ(outs.size(), 2u);
  std::vector<double> want;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(12 * i + 4 * j + k);
  expectTensorNear(outs[0], want);
  expectTensorNear(outs[1], iota(24));
}

TEST(RefShape, Concat) {
  auto a = makeTensor(TensorType(DType::F32, {2, 1}), {1, 2});
  auto b = makeTensor(TensorType(DType::F32, {2, 2}), {3, 4, 5, 6});
  auto outs = runGraph(R"(
graph @f(%a: f32[2,1], %b: f32[2,2]) -> (f32[2,4], f32[2,3], f32[4,2]) {
  %0 = concat %a, %b, %a {axis=1} : f32[2,4]
  %1 = concat %a, %b {axis=-1} : f32[2,3]
  %2 = concat %b, %b {axis=0} : f32[4,2]
  return %0, %1, %2
}
)",
                       {a, b});
  ASSERT_EQ(outs.size(), 3u);
  expectTensorNear(outs[0], {1, 3, 4, 1, 2, 5, 6, 2});
  expectTensorNear(outs[1], {1, 3, 4, 2, 5, 6});
  expectTensorNear(outs[2], {3, 4, 5, 6, 3, 4, 5, 6});
}

TEST(RefShape, ConcatBytes) {
  auto outs = runGraph(R"(
graph @f(%a: u8[1,2,2], %b: u8[1,1,2]) -> u8[1,3,2] {
  %0 = concat %a, %b {axis=1} : u8[1,3,2]
  return %0
}
)",
                       {makeTensor(TensorType(DType::U8, {1, 2, 2}), {1, 2, 3, 4}),
                        makeTensor(TensorType(DType::U8, {1, 1, 2}), {250, 251})});
  ASSERT_EQ(outs.size(), 1u);
  expectTensorNear(outs[0], {1, 2, 3, 4, 250, 251});
}

TEST(RefShape, Slice) {
  // x[i,j,k] = 6 i + 2 j + k over [2,3,2].
  auto outs = runGraph(R"(
graph @f(%x: f64[2,3,2]) -> (f64[2,2,2], f64[1,3,2], f64[2,3,1]) {
  %0 = slice %x {axis=1, begin=1, end=3} : f64[2,2,2]
  %1 = slice %x {axis=0, begin=1, end=2} : f64[1,3,2]
  %2 = slice %x {axis=-1, begin=0, end=1} : f64[2,3,1]
  return %0, %1, %2
}
)",
                       {makeTensor(TensorType(DType::F64, {2, 3, 2}), iota(12))});
  ASSERT_EQ(outs.size(), 3u);
  expectTensorNear(outs[0], {2, 3, 4, 5, 8, 9, 10, 11});
  expectTensorNear(outs[1], {6, 7, 8, 9, 10, 11});
  expectTensorNear(outs[2], {0, 2, 4, 6, 8, 10});
}

TEST(RefShape, SliceBackward) {
  auto outs = runGraph(R"(
graph @f(%dy: f32[2,2], %x: f32[2,4]) -> f32[2,4] {
  %0 = slice_backward %dy, %x {axis=1, begin=1, end=3} : f32[2,4]
  return %0
}
)",
                       {makeTensor(TensorType(DType::F32, {2, 2}), {1, 2, 3, 4}),
                        makeTensor(TensorType(DType::F32, {2, 4}), std::vector<double>(8, 9))});
  ASSERT_EQ(outs.size(), 1u);
  expectTensorNear(outs[0], {0, 1, 2, 0, 0, 3, 4, 0});
}

} // namespace dtnn::test
