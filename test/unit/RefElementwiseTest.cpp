// Forward tests of the reference kernels of the binary ops and the generic
// helpers, on small hand-computed cases.
#include "RefRun.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dtnn::test {

namespace {

using ir::DType;
using ir::TensorType;

TensorType f32(std::vector<int64_t> dims) { return {DType::F32, std::move(dims)}; }
TensorType f64(std::vector<int64_t> dims) { return {DType::F64, std::move(dims)}; }

// IR of graph @f applying binary `op` to a: `ta` and b: `tb`, result `tr`.
std::string binaryIR(const std::string &op, const std::string &ta, const std::string &tb,
                     const std::string &tr) {
  return "graph @f(%a: " + ta + ", %b: " + tb + ") -> " + tr + " {\n  %0 = " + op +
         " %a, %b : " + tr + "\n  return %0\n}\n";
}

// Runs binary `op` on a and b and expects `want` of type `tr`.
void expectBinary(const std::string &op, const runtime::Tensor &a, const runtime::Tensor &b,
                  const TensorType &tr, const std::vector<double> &want) {
  auto outs = runGraph(binaryIR(op, a.type().str(), b.type().str(), tr.str()), {a, b});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].type(), tr);
  expectTensorNear(outs[0], want);
}

} // namespace

TEST(RefElementwise, SameShape) {
  auto a = makeTensor(f32({2, 2}), {1, 2, 3, 4});
  auto b = makeTensor(f32({2, 2}), {10, 20, 30, 40});
  expectBinary("add", a, b, f32({2, 2}), {11, 22, 33, 44});
  expectBinary("sub", a, b, f32({2, 2}), {-9, -18, -27, -36});
  expectBinary("mul", a, b, f32({2, 2}), {10, 40, 90, 160});
  expectBinary("div", b, a, f32({2, 2}), {10, 10, 10, 10});
}

TEST(RefElementwise, RowBroadcast) {
  auto a = makeTensor(f64({2, 3}), {1, 2, 3, 4, 5, 6});
  auto b = makeTensor(f64({3}), {10, 20, 30});
  expectBinary("add", a, b, f64({2, 3}), {11, 22, 33, 14, 25, 36});
  expectBinary("sub", b, a, f64({2, 3}), {9, 18, 27, 6, 15, 24});
}

TEST(RefElementwise, ColumnBroadcast) {
  auto a = makeTensor(f32({2, 1}), {1, 2});
  auto b = makeTensor(f32({3}), {10, 20, 30});
  expectBinary("mul", a, b, f32({2, 3}), {10, 20, 30, 20, 40, 60});
  expectBinary("sub", a, b, f32({2, 3}), {-9, -19, -29, -8, -18, -28});
}

TEST(RefElementwise, BothSidesBroadcast) {
  // [2,1,4] + [3,1] -> [2,3,4]: out[i,j,k] = a[i,0,k] + b[j,0].
  auto a = makeTensor(f64({2, 1, 4}), {0, 1, 2, 3, 4, 5, 6, 7});
  auto b = makeTensor(f64({3, 1}), {100, 200, 300});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want.push_back(i * 4 + k + 100 * (j + 1));
  expectBinary("add", a, b, f64({2, 3, 4}), want);
}

TEST(RefElementwise, MiddleBroadcast) {
  // [2,3,2] * [3,1]: channel-style scaling.
  auto a = makeTensor(f32({2, 3, 2}), {1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2});
  auto b = makeTensor(f32({3, 1}), {1, 10, 100});
  expectBinary("mul", a, b, f32({2, 3, 2}), {1, 1, 10, 10, 100, 100, 2, 2, 20, 20, 200, 200});
}

TEST(RefElementwise, Scalars) {
  auto a = makeTensor(f32({}), {2});
  auto b = makeTensor(f32({3}), {1, 2, 4});
  expectBinary("div", a, b, f32({3}), {2, 1, 0.5});
  expectBinary("sub", b, a, f32({3}), {-1, 0, 2});
  expectBinary("mul", a, a, f32({}), {4});
}

TEST(RefElementwise, DynamicBatch) {
  auto outs = runGraph(binaryIR("add", "f32[?,2]", "f32[2]", "f32[?,2]"),
                       {makeTensor(f32({1, 2}), {1, 2}), makeTensor(f32({2}), {3, 4})});
  ASSERT_EQ(outs.size(), 1u);
  expectTensorNear(outs[0], {4, 6});
}

TEST(RefElementwise, Integers) {
  TensorType i32({DType::I32, {4}}), i64({DType::I64, {2, 2}});
  auto a = makeTensor(i32, {7, -7, 9, 5});
  auto b = makeTensor(i32, {2, 2, 0, 5});
  expectBinary("div", a, b, i32, {3, -3, 0, 1});
  expectBinary("add", a, b, i32, {9, -5, 9, 10});
  auto c = makeTensor(i64, {1, 2, 3, 4});
  auto d = makeTensor(TensorType(DType::I64, {2}), {10, 100});
  expectBinary("mul", c, d, i64, {10, 200, 30, 400});
}

TEST(RefElementwise, Fill) {
  auto outs = runGraph(
      R"(
graph @f(%x: f32[2,2], %n: i32[3]) -> (f32[2,2], i32[3], f32[2,2]) {
  %0 = fill %x {value=1.5} : f32[2,2]
  %1 = fill %n {value=7.0} : i32[3]
  %2 = fill %x : f32[2,2]
  return %0, %1, %2
}
)",
      {makeTensor(f32({2, 2}), {9, 9, 9, 9}), makeTensor(TensorType(DType::I32, {3}), {1, 2, 3})});
  ASSERT_EQ(outs.size(), 3u);
  expectTensorNear(outs[0], {1.5, 1.5, 1.5, 1.5});
  expectTensorNear(outs[1], {7, 7, 7});
  expectTensorNear(outs[2], {0, 0, 0, 0});
}

TEST(RefElementwise, Scale) {
  auto outs = runGraph(R"(
graph @f(%x: f64[3]) -> f64[3] {
  %0 = scale %x {factor=-0.5} : f64[3]
  return %0
}
)",
                       {makeTensor(f64({3}), {2, -4, 1})});
  ASSERT_EQ(outs.size(), 1u);
  expectTensorNear(outs[0], {-1, 2, -0.5});
}

// rsqrt: 1 / sqrt(x + eps).
TEST(RefElementwise, Rsqrt) {
  auto outs = runGraph(R"(
graph @f(%x: f64[3], %y: f32[2]) -> (f64[3], f32[2]) {
  %0 = rsqrt %x {eps=0.25} : f64[3]
  %1 = rsqrt %y : f32[2]
  return %0, %1
}
)",
                       {makeTensor(f64({3}), {0, 3.75, 0.75}), makeTensor(f32({2}), {4, 0.0625})});
  ASSERT_EQ(outs.size(), 2u);
  expectTensorNear(outs[0], {2, 0.5, 1});
  expectTensorNear(outs[1], {0.5, 4});
}

// exp, log, erf and pow, in f64 and f32, against the C library's values.
TEST(RefElementwise, MathOps) {
  auto outs = runGraph(R"(
graph @f(%x: f64[3], %y: f32[3]) -> (f64[3], f64[3], f64[3], f64[3], f32[3], f32[3]) {
  %0 = exp %x : f64[3]
  %1 = log %x : f64[3]
  %2 = erf %x : f64[3]
  %3 = pow %x {exponent=2.5} : f64[3]
  %4 = erf %y : f32[3]
  %5 = pow %y {exponent=-2.0} : f32[3]
  return %0, %1, %2, %3, %4, %5
}
)",
                       {makeTensor(f64({3}), {0.5, 1, 4}), makeTensor(f32({3}), {-1, 0.5, 2})});
  ASSERT_EQ(outs.size(), 6u);
  expectTensorNear(outs[0], {std::exp(0.5), std::exp(1.0), std::exp(4.0)});
  expectTensorNear(outs[1], {std::log(0.5), 0, std::log(4.0)});
  expectTensorNear(outs[2], {std::erf(0.5), std::erf(1.0), std::erf(4.0)});
  expectTensorNear(outs[3], {std::pow(0.5, 2.5), 1, 32});
  expectTensorNear(outs[4], {std::erf(-1.0), std::erf(0.5), std::erf(2.0)});
  expectTensorNear(outs[5], {1, 4, 0.25});
}

// sqrt, in f64 and f32.
TEST(RefElementwise, Sqrt) {
  auto outs = runGraph(R"(
graph @f(%x: f64[3], %y: f32[2]) -> (f64[3], f32[2]) {
  %0 = sqrt %x : f64[3]
  %1 = sqrt %y : f32[2]
  return %0, %1
}
)",
                       {makeTensor(f64({3}), {0, 2.25, 16}), makeTensor(f32({2}), {4, 0.0625})});
  ASSERT_EQ(outs.size(), 2u);
  expectTensorNear(outs[0], {0, 1.5, 4});
  expectTensorNear(outs[1], {2, 0.25});
}

// count_like: how many elements sum_like adds into each of like's, plus the
// offset, at least 1; the contents of both operands do not matter.
TEST(RefElementwise, CountLike) {
  auto outs = runGraph(R"(
graph @f(%x: f32[2,3,4,5], %l: f32[1,3,1,1], %one: f32[1,1])
    -> (f32[1,3,1,1], f32[1,3,1,1], f32[1,1], f32[1,1]) {
  %0 = count_like %x, %l : f32[1,3,1,1]
  %1 = count_like %x, %l {offset=-1.0} : f32[1,3,1,1]
  %2 = count_like %one, %one {offset=-1.0} : f32[1,1]
  %3 = count_like %x, %one {offset=0.5} : f32[1,1]
  return %0, %1, %2, %3
}
)",
                       {makeTensor(f32({2, 3, 4, 5}), std::vector<double>(120, 7)),
                        makeTensor(f32({1, 3, 1, 1}), {9, 9, 9}), makeTensor(f32({1, 1}), {9})});
  ASSERT_EQ(outs.size(), 4u);
  expectTensorNear(outs[0], {40, 40, 40});
  expectTensorNear(outs[1], {39, 39, 39});
  expectTensorNear(outs[2], {1});
  expectTensorNear(outs[3], {120.5});
}

TEST(RefElementwise, SumLike) {
  auto x = makeTensor(f32({2, 3}), {1, 2, 3, 4, 5, 6});
  // Over the leading dimension, over the last, and over everything.
  expectBinary("sum_like", x, makeTensor(f32({3}), {0, 0, 0}), f32({3}), {5, 7, 9});
  expectBinary("sum_like", x, makeTensor(f32({1, 3}), {0, 0, 0}), f32({1, 3}), {5, 7, 9});
  expectBinary("sum_like", x, makeTensor(f32({2, 1}), {0, 0}), f32({2, 1}), {6, 15});
  expectBinary("sum_like", x, makeTensor(f32({}), {0}), f32({}), {21});
  expectBinary("sum_like", x, makeTensor(f32({2, 3}), std::vector<double>(6, 0)), f32({2, 3}),
               {1, 2, 3, 4, 5, 6});
}

TEST(RefElementwise, SumLikeAlternatingDims) {
  // [2,3,4] -> [3,1]: out[j] = sum over i, k of x[i,j,k] = sum of (i*12 + j*4 + k).
  std::vector<double> xs;
  for (int i = 0; i < 24; ++i) xs.push_back(i);
  auto x = makeTensor(f64({2, 3, 4}), xs);
  std::vector<double> want;
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) s += i * 12 + j * 4 + k;
    want.push_back(s);
  }
  expectBinary("sum_like", x, makeTensor(f64({3, 1}), {0, 0, 0}), f64({3, 1}), want);
  // [2,3,4] -> [2,1,4]: out[i,k] = sum over j.
  want.clear();
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) want.push_back(3 * (i * 12 + k) + 4 * (0 + 1 + 2));
  expectBinary("sum_like", x, makeTensor(f64({2, 1, 4}), std::vector<double>(8, 0)), f64({2, 1, 4}),
               want);
}

// Rows wider than a column block: [3,600] -> [600] and [2,3,600] -> [2,1,600]
// are split over blocks of columns (and outer rows), each summed in order.
TEST(RefElementwise, SumLikeWideRows) {
  std::vector<double> xs, want(600, 0.0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 600; ++j) {
      xs.push_back(i * 1000 + j);
      want[j] += i * 1000 + j;
    }
  expectBinary("sum_like", makeTensor(f64({3, 600}), xs), makeTensor(f64({600}),
               std::vector<double>(600, 0)), f64({600}), want);
  std::vector<double> xs2, want2(1200, 0.0);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 600; ++j) {
        xs2.push_back(b * 5000 + i * 1000 + j);
        want2[b * 600 + j] += b * 5000 + i * 1000 + j;
      }
  expectBinary("sum_like", makeTensor(f64({2, 3, 600}), xs2),
               makeTensor(f64({2, 1, 600}), std::vector<double>(1200, 0)), f64({2, 1, 600}), want2);
}

TEST(RefElementwise, BroadcastLike) {
  auto x = makeTensor(f32({3, 1}), {1, 2, 3});
  auto like = makeTensor(f32({2, 3, 2}), std::vector<double>(12, 0));
  expectBinary("broadcast_like", x, like, f32({2, 3, 2}), {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  expectBinary("broadcast_like", makeTensor(f32({}), {5}), makeTensor(f32({2}), {0, 0}), f32({2}),
               {5, 5});
}

} // namespace dtnn::test
