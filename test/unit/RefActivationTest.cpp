// Forward tests of the reference kernels of the activations and their
// backward ops. Reference values of gelu are those of PyTorch's gelu
// (exact and tanh forms) at the same points.
#include "RefRun.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dtnn::test {

namespace {

using ir::DType;
using ir::TensorType;

const std::vector<double> kX = {-2.0, -0.5, 0.0, 0.5, 1.0, 3.0};

// Runs `op` with attribute text `attrs` on x of type `type` and returns the result.
runtime::Tensor runUnary(const std::string &op, const std::string &attrs,
                         const runtime::Tensor &x) {
  std::string t = x.type().str();
  auto outs = runGraph("graph @f(%x: " + t + ") -> " + t + " {\n  %0 = " + op + " %x" + attrs +
                           " : " + t + "\n  return %0\n}\n",
                       {x});
  return outs.empty() ? runtime::Tensor() : std::move(outs[0]);
}

// Runs backward op `op` on dy and the saved operand s.
runtime::Tensor runBackward(const std::string &op, const std::string &attrs,
                            const runtime::Tensor &dy, const runtime::Tensor &s) {
  std::string t = dy.type().str();
  auto outs = runGraph("graph @f(%dy: " + t + ", %s: " + t + ") -> " + t + " {\n  %0 = " + op +
                           " %dy, %s" + attrs + " : " + t + "\n  return %0\n}\n",
                       {dy, s});
  return outs.empty() ? runtime::Tensor() : std::move(outs[0]);
}

// kX in both float types.
runtime::Tensor xs(DType t) { return makeTensor(TensorType(t, {6}), kX); }

// Applies f to every element of kX.
template <typename F> std::vector<double> mapX(F f) {
  std::vector<double> out;
  for (double x : kX) out.push_back(f(x));
  return out;
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

} // namespace

TEST(RefActivation, Relu) {
  expectTensorNear(runUnary("relu", "", xs(DType::F32)), {0, 0, 0, 0.5, 1, 3});
  expectTensorNear(runUnary("relu6", "", makeTensor(TensorType(DType::F64, {4}), {-1, 2, 6, 7})),
                   {0, 2, 6, 6});
  expectTensorNear(runUnary("leaky_relu", " {alpha=0.1}", xs(DType::F64)),
                   {-0.2, -0.05, 0, 0.5, 1, 3});
}

TEST(RefActivation, Smooth) {
  for (DType t : {DType::F32, DType::F64}) {
    expectTensorNear(runUnary("sigmoid", "", xs(t)), mapX(sigmoid));
    expectTensorNear(runUnary("tanh", "", xs(t)), mapX([](double x) { return std::tanh(x); }));
    expectTensorNear(runUnary("silu", "", xs(t)), mapX([](double x) { return x * sigmoid(x); }));
  }
}

TEST(RefActivation, SigmoidSaturates) {
  auto y = runUnary("sigmoid", "", makeTensor(TensorType(DType::F32, {2}), {-200, 200}));
  expectTensorNear(y, {0, 1});
}

TEST(RefActivation, Gelu) {
  for (DType t : {DType::F32, DType::F64}) {
    expectTensorNear(runUnary("gelu", "", xs(t)),
                     {-0.04550026389635842, -0.15426876936299344, 0.0, 0.34573123063700656,
                      0.8413447460685429, 2.99595030590511});
    expectTensorNear(runUnary("gelu", " {approximate=\"tanh\"}", xs(t)),
                     {-0.04540230591222494, -0.15428599017485606, 0.0, 0.34571400982514394,
                      0.8411919906082768, 2.996362607918227});
  }
}

TEST(RefActivation, HardSigmoidAndSwish) {
  auto x = makeTensor(TensorType(DType::F32, {5}), {-4, -3, 0, 1.5, 4});
  expectTensorNear(runUnary("hard_sigmoid", "", x), {0, 0, 0.5, 0.75, 1});
  expectTensorNear(runUnary("hard_swish", "", x), {0, 0, 0, 1.125, 4});
}

TEST(RefActivation, SoftmaxLastAxis) {
  auto x = makeTensor(TensorType(DType::F64, {2, 3}), {1, 2, 3, 0, 0, 0});
  double z = std::exp(1) + std::exp(2) + std::exp(3);
  std::vector<double> want = {std::exp(1) / z, std::exp(2) / z, std::exp(3) / z,
                              1.0 / 3,         1.0 / 3,         1.0 / 3};
  expectTensorNear(runUnary("softmax", "", x), want);
  expectTensorNear(runUnary("softmax", " {axis=1}", x), want);
  std::vector<double> logs;
  for (double w : want) logs.push_back(std::log(w));
  expectTensorNear(runUnary("log_softmax", " {axis=-1}", x), logs);
}

TEST(RefActivation, SoftmaxFirstAxis) {
  auto x = makeTensor(TensorType(DType::F32, {2, 2}), {0, 1, std::log(3.0), 1});
  expectTensorNear(runUnary("softmax", " {axis=0}", x), {0.25, 0.5, 0.75, 0.5});
  expectTensorNear(runUnary("log_softmax", " {axis=0}", x),
                   {std::log(0.25), std::log(0.5), std::log(0.75), std::log(0.5)});
}

TEST(RefActivation, SoftmaxMiddleAxis) {
  // [2,2,2] along axis 1: pairs (x[i,0,k], x[i,1,k]).
  auto x = makeTensor(TensorType(DType::F64, {2, 2, 2}), {0, 5, std::log(3.0), 5, 1, 2, 1, 2});
  expectTensorNear(runUnary("softmax", " {axis=1}", x), {0.25, 0.5, 0.75, 0.5, 0.5, 0.5, 0.5, 0.5});
}

TEST(RefActivation, SoftmaxIsStable) {
  // Large logits that float holds exactly; exp(1000) alone would overflow.
  auto x = makeTensor(TensorType(DType::F32, {3}), {1000, 1000, 1001});
  double z = 2 + std::exp(1.0);
  expectTensorNear(runUnary("softmax", "", x), {1 / z, 1 / z, std::exp(1.0) / z}, 1e-5);
  expectTensorNear(runUnary("log_softmax", "", x), {-std::log(z), -std::log(z), 1 - std::log(z)},
                   1e-5);
  auto y = runUnary("log_softmax", "", makeTensor(TensorType(DType::F64, {2}), {-1000, 0}));
  expectTensorNear(y, {-1000, 0}, 1e-9);
}

TEST(RefActivation, PiecewiseBackward) {
  auto x = makeTensor(TensorType(DType::F64, {7}), {-4, -3, -1, 0, 2, 6, 7});
  auto dy = makeTensor(TensorType(DType::F64, {7}), {6, 6, 6, 6, 6, 6, 6});
  expectTensorNear(runBackward("relu_backward", "", dy, x), {0, 0, 0, 0, 6, 6, 6});
  expectTensorNear(runBackward("relu6_backward", "", dy, x), {0, 0, 0, 0, 6, 0, 0});
  expectTensorNear(runBackward("leaky_relu_backward", " {alpha=0.5}", dy, x),
                   {3, 3, 3, 3, 6, 6, 6});
  expectTensorNear(runBackward("hard_sigmoid_backward", "", dy, x), {0, 0, 1, 1, 1, 0, 0});
  // hard_swish' is 0 below -3, x/3 + 1/2 on [-3, 3], 1 above.
  expectTensorNear(runBackward("hard_swish_backward", "", dy, x), {0, -3, 1, 3, 7, 6, 6});
}

TEST(RefActivation, SmoothBackward) {
  for (DType t : {DType::F32, DType::F64}) {
    auto x = xs(t);
    auto dy = makeTensor(TensorType(t, {6}), {2, 2, 2, 2, 2, 2});
    expectTensorNear(runBackward("silu_backward", "", dy, x), mapX([](double v) {
                       double s = sigmoid(v);
                       return 2 * s * (1 + v * (1 - s));
                     }),
                     1e-5);
    // The backward ops of sigmoid and tanh take the forward result y.
    auto y = makeTensor(TensorType(t, {6}), {0.1, 0.2, 0.5, 0.7, 0.9, -0.5});
    expectTensorNear(runBackward("sigmoid_backward", "", dy, y),
                     {0.18, 0.32, 0.5, 0.42, 0.18, -1.5});
    expectTensorNear(runBackward("tanh_backward", "", dy, y), {1.98, 1.92, 1.5, 1.02, 0.38, 1.5});
    expectTensorNear(runBackward("gelu_backward", "", dy, x),
                     {2 * -0.08523180107819692, 2 * 0.13250487534383712, 2 * 0.5,
                      2 * 0.8674951246561629, 2 * 1.0833154705876864, 2 * 1.011945647204184},
                     1e-5);
    expectTensorNear(runBackward("gelu_backward", " {approximate=\"tanh\"}", dy, x),
                     {2 * -0.08609925661665074, 2 * 0.1326300964749061, 2 * 0.5,
                      2 * 0.8673699034844606, 2 * 1.0829640837983767, 2 * 1.0115841666546999},
                     1e-5);
  }
}

TEST(RefActivation, SoftmaxBackward) {
  // y = softmax: dx = y * (dy - sum(dy * y)).
  auto y = makeTensor(TensorType(DType::F64, {2, 2}), {0.25, 0.75, 0.5, 0.5});
  auto dy = makeTensor(TensorType(DType::F64, {2, 2}), {1, 0, 2, 4});
  expectTensorNear(runBackward("softmax_backward", " {axis=1}", dy, y),
                   {0.25 * (1 - 0.25), 0.75 * (0 - 0.25), 0.5 * (2 - 3), 0.5 * (4 - 3)});
  // Along axis 0: column sums of dy * y are 0.25 + 1 and 0 + 2.
  expectTensorNear(runBackward("softmax_backward", " {axis=0}", dy, y),
                   {0.25 * (1 - 1.25), 0.75 * (0 - 2), 0.5 * (2 - 1.25), 0.5 * (4 - 2)});
  // y = log_softmax: dx = dy - exp(y) * sum(dy).
  auto ly = makeTensor(TensorType(DType::F64, {2, 2}),
                       {std::log(0.25), std::log(0.75), std::log(0.5), std::log(0.5)});
  expectTensorNear(runBackward("log_softmax_backward", " {axis=-1}", dy, ly),
                   {1 - 0.25, 0 - 0.75, 2 - 3, 4 - 3});
}

} // namespace dtnn::test
