// Reference kernels of the ops declared in ir/ops/Activation.cpp. Backward
// kernels follow PyTorch at the kinks: relu passes the gradient only for
// x > 0, relu6 only for 0 < x < 6, hard_sigmoid only for -3 < x < 3.
#include "backends/reference/FusedActivation.h"
#include "backends/reference/KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dtnn::reference {

namespace {

// Runs body(begin, end) over contiguous blocks of [0, n) in parallel.
template <typename Body> void parallelBlocks(int64_t n, Body &&body) {
  constexpr int64_t kBlock = 4096;
  int64_t blocks = (n + kBlock - 1) / kBlock;
  parallelFor(blocks, [&](int64_t k) { body(k * kBlock, std::min(n, (k + 1) * kBlock)); });
}

// y[i] = f(x[i]).
template <typename T, typename F> void mapUnary(const KernelArgs &a, F f) {
  const T *x = a.in[0].as<T>();
  T *y = a.out[0].as<T>();
  parallelBlocks(a.out[0].numel(), [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) y[i] = f(x[i]);
  });
}

// dx[i] = f(dy[i], saved[i]) for the backward ops.
template <typename T, typename F> void mapBackward(const KernelArgs &a, F f) {
  const T *dy = a.in[0].as<T>();
  const T *s = a.in[1].as<T>();
  T *dx = a.out[0].as<T>();
  parallelBlocks(a.out[0].numel(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dx[i] = f(dy[i], s[i]);
  });
}

template <typename T> void reluKernel(const KernelArgs &a) { mapUnary<T>(a, reluOf<T>); }
template <typename T> void reluBackwardKernel(const KernelArgs &a) {
  mapBackward<T>(a, [](T dy, T x) { return x > T(0) ? dy : T(0); });
}

template <typename T> void relu6Kernel(const KernelArgs &a) { mapUnary<T>(a, relu6Of<T>); }
template <typename T> void relu6BackwardKernel(const KernelArgs &a) {
  mapBackward<T>(a, [](T dy, T x) { return x > T(0) && x < T(6) ? dy : T(0); });
}

template <typename T> void leakyReluKernel(const KernelArgs &a) {
  T alpha = static_cast<T>(a.op->attrs().getFloat("alpha"));
  mapUnary<T>(a, [alpha](T x) { return x > T(0) ? x : alpha * x; });
}
template <typename T> void leakyReluBackwardKernel(const KernelArgs &a) {
  T alpha = static_cast<T>(a.op->attrs().getFloat("alpha"));
  mapBackward<T>(a, [alpha](T dy, T x) { return x > T(0) ? dy : alpha * dy; });
}

template <typename T> void sigmoidKernel(const KernelArgs &a) { mapUnary<T>(a, sigmoidOf<T>); }
template <typename T> void sigmoidBackwardKernel(const KernelArgs &a) {
  mapBackward<T>(a, [](T dy, T y) { return dy * y * (T(1) - y); });
}

template <typename T> void tanhKernel(const KernelArgs &a) { mapUnary<T>(a, tanhOf<T>); }
template <typename T> void tanhBackwardKernel(const KernelArgs &a) {
  mapBackward<T>(a, [](T dy, T y) { return dy * (T(1) - y * y); });
}

template <typename T> void siluKernel(const KernelArgs &a) {
  mapUnary<T>(a, [](T x) { return x * sigmoidOf(x); });
}
template <typename T> void siluBackwardKernel(const KernelArgs &a) {
  mapBackward<T>(a, [](T dy, T x) {
    T s = sigmoidOf(x);
    return dy * s * (T(1) + x * (T(1) - s));
  });
}

// The tanh form of gelu: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluKappa = 0.044715;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

template <typename T> void geluKernel(const KernelArgs &a) {
  if (a.op->attrs().getString("approximate") == "tanh")
    mapUnary<T>(a, [](T x) {
      T inner = T(kSqrt2OverPi) * (x + T(kGeluKappa) * x * x * x);
      return T(0.5) * x * (T(1) + std::tanh(inner));
    });
  else
    mapUnary<T>(a, [](T x) { return T(0.5) * x * (T(1) + std::erf(x * T(kSqrtHalf))); });
}

template <typename T> void geluBackwardKernel(const KernelArgs &a) {
  if (a.op->attrs().getString("approximate") == "tanh")
    mapBackward<T>(a, [](T dy, T x) {
      T x2 = x * x;
      T t = std::tanh(T(kSqrt2OverPi) * (x + T(kGeluKappa) * x2 * x));
      T dInner = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluKappa) * x2);
      return dy * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * dInner);
    });
  else
    mapBackward<T>(a, [](T dy, T x) {
      T cdf = T(0.5) * (T(1) + std::erf(x * T(kSqrtHalf)));
      T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
      return dy * (cdf + x * pdf);
    });
}

template <typename T> void hardSigmoidKernel(const KernelArgs &a) {
  mapUnary<T>(a, [](T x) { return std::min(std::max(x + T(3), T(0)), T(6)) / T(6); });
}
template <typename T> void hardSigmoidBackwardKernel(const KernelArgs &a) {
  mapBackward<T>(a, [](T dy, T x) { return x > T(-3) && x < T(3) ? dy / T(6) : T(0); });
}

template <typename T> void hardSwishKernel(const KernelArgs &a) {
  mapUnary<T>(a, [](T x) { return x * std::min(std::max(x + T(3), T(0)), T(6)) / T(6); });
}
template <typename T> void hardSwishBackwardKernel(const KernelArgs &a) {
  mapBackward<T>(a, [](T dy, T x) {
    if (x < T(-3)) return T(0);
    if (x <= T(3)) return dy * (x / T(3) + T(0.5));
    return dy;
  });
}

// The softmax axis splits a contiguous tensor into [outer, n, inner].
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisSplit splitAt(const TensorView &v, int64_t axisAttr) {
  int64_t rank = static_cast<int64_t>(v.rank());
  int64_t axis = axisAttr < 0 ? axisAttr + rank : axisAttr;
  AxisSplit s;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? s.outer : d == axis ? s.n : s.inner) *= v.dim(d);
  return s;
}

// Softmax or log-softmax of each [n, inner] slab of x, subtracting the
// maximum along the axis for stability. Columns are processed together so
// the innermost loops run over contiguous memory.
template <typename T, bool Log> void softmaxForward(const KernelArgs &a) {
  AxisSplit s = splitAt(a.in[0], a.op->attrs().getInt("axis"));
  const T *x = a.in[0].as<T>();
  T *y = a.out[0].as<T>();
  parallelFor(s.outer, [&](int64_t o) {
    const T *xs = x + o * s.n * s.inner;
    T *ys = y + o * s.n * s.inner;
    std::vector<T> mx(xs, xs + s.inner), sum(s.inner, T(0));
    for (int64_t k = 1; k < s.n; ++k)
      for (int64_t j = 0; j < s.inner; ++j) mx[j] = std::max(mx[j], xs[k * s.inner + j]);
    for (int64_t k = 0; k < s.n; ++k)
      for (int64_t j = 0; j < s.inner; ++j) {
        T e = std::exp(xs[k * s.inner + j] - mx[j]);
        sum[j] += e;
        if (!Log) ys[k * s.inner + j] = e;
      }
    for (int64_t j = 0; j < s.inner; ++j) sum[j] = Log ? mx[j] + std::log(sum[j]) : T(1) / sum[j];
    for (int64_t k = 0; k < s.n; ++k)
      for (int64_t j = 0; j < s.inner; ++j) {
        T &out = ys[k * s.inner + j];
        out = Log ? xs[k * s.inner + j] - sum[j] : out * sum[j];
      }
  });
}

template <typename T> void softmaxKernel(const KernelArgs &a) { softmaxForward<T, false>(a); }
template <typename T> void logSoftmaxKernel(const KernelArgs &a) { softmaxForward<T, true>(a); }

// softmax_backward: dx = y * (dy - sum(dy * y)); log_softmax_backward:
// dx = dy - exp(y) * sum(dy), sums along the axis.
template <typename T, bool Log> void softmaxBackward(const KernelArgs &a) {
  AxisSplit s = splitAt(a.in[0], a.op->attrs().getInt("axis"));
  const T *dy = a.in[0].as<T>();
  const T *y = a.in[1].as<T>();
  T *dx = a.out[0].as<T>();
  parallelFor(s.outer, [&](int64_t o) {
    int64_t base = o * s.n * s.inner;
    std::vector<T> dot(s.inner, T(0));
    for (int64_t k = 0; k < s.n; ++k)
      for (int64_t j = 0; j < s.inner; ++j) {
        int64_t i = base + k * s.inner + j;
        dot[j] += Log ? dy[i] : dy[i] * y[i];
      }
    for (int64_t k = 0; k < s.n; ++k)
      for (int64_t j = 0; j < s.inner; ++j) {
        int64_t i = base + k * s.inner + j;
        dx[i] = Log ? dy[i] - std::exp(y[i]) * dot[j] : y[i] * (dy[i] - dot[j]);
      }
  });
}

template <typename T> void softmaxBackwardKernel(const KernelArgs &a) {
  softmaxBackward<T, false>(a);
}
template <typename T> void logSoftmaxBackwardKernel(const KernelArgs &a) {
  softmaxBackward<T, true>(a);
}

} // namespace

void registerActivationKernels(KernelTable &t) {
  DTNN_REF_KERNEL(t, "relu", reluKernel);
  DTNN_REF_KERNEL(t, "relu_backward", reluBackwardKernel);
  DTNN_REF_KERNEL(t, "relu6", relu6Kernel);
  DTNN_REF_KERNEL(t, "relu6_backward", relu6BackwardKernel);
  DTNN_REF_KERNEL(t, "leaky_relu", leakyReluKernel);
  DTNN_REF_KERNEL(t, "leaky_relu_backward", leakyReluBackwardKernel);
  DTNN_REF_KERNEL(t, "sigmoid", sigmoidKernel);
  DTNN_REF_KERNEL(t, "sigmoid_backward", sigmoidBackwardKernel);
  DTNN_REF_KERNEL(t, "tanh", tanhKernel);
  DTNN_REF_KERNEL(t, "tanh_backward", tanhBackwardKernel);
  DTNN_REF_KERNEL(t, "silu", siluKernel);
  DTNN_REF_KERNEL(t, "silu_backward", siluBackwardKernel);
  DTNN_REF_KERNEL(t, "gelu", geluKernel);
  DTNN_REF_KERNEL(t, "gelu_backward", geluBackwardKernel);
  DTNN_REF_KERNEL(t, "hard_sigmoid", hardSigmoidKernel);
  DTNN_REF_KERNEL(t, "hard_sigmoid_backward", hardSigmoidBackwardKernel);
  DTNN_REF_KERNEL(t, "hard_swish", hardSwishKernel);
  DTNN_REF_KERNEL(t, "hard_swish_backward", hardSwishBackwardKernel);
  DTNN_REF_KERNEL(t, "softmax", softmaxKernel);
  DTNN_REF_KERNEL(t, "softmax_backward", softmaxBackwardKernel);
  DTNN_REF_KERNEL(t, "log_softmax", logSoftmaxKernel);
  DTNN_REF_KERNEL(t, "log_softmax_backward", logSoftmaxBackwardKernel);
}


} // namespace dtnn::reference
