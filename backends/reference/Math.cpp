// Reference kernels of the ops declared in ir/ops/Math.cpp: each element
// computed by the C library's function at the element type (sqrtf or sqrt,
// logf or log, ...), which the jit calls too, so the two agree bit for bit.
#include "backends/reference/KernelUtil.h"

#include <cmath>

namespace dtnn::reference {

namespace {

// out[i] = f(in[i]) over the whole buffer.
template <typename T, typename F> void unary(const KernelArgs &a, F f) {
  const T *px = a.in[0].as<T>();
  T *po = a.out[0].as<T>();
  parallelBlocks(a.out[0].numel(), [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) po[i] = f(px[i]);
  });
}

template <typename T> void sqrtKernel(const KernelArgs &a) {
  unary<T>(a, [](T x) { return std::sqrt(x); });
}

// 1 / sqrt(x + eps), the sum, the square root and the quotient each rounded to T.
template <typename T> void rsqrtKernel(const KernelArgs &a) {
  T eps = static_cast<T>(a.op->attrs().getFloat("eps"));
  unary<T>(a, [eps](T x) { return T(1) / std::sqrt(x + eps); });
}

template <typename T> void expKernel(const KernelArgs &a) {
  unary<T>(a, [](T x) { return std::exp(x); });
}

template <typename T> void logKernel(const KernelArgs &a) {
  unary<T>(a, [](T x) { return std::log(x); });
}

template <typename T> void erfKernel(const KernelArgs &a) {
  unary<T>(a, [](T x) { return std::erf(x); });
}

template <typename T> void powKernel(const KernelArgs &a) {
  T p = static_cast<T>(a.op->attrs().getFloat("exponent"));
  unary<T>(a, [p](T x) { return std::pow(x, p); });
}

} // namespace

void registerMathKernels(KernelTable &t) {
  DTNN_REF_KERNEL(t, "sqrt", sqrtKernel);
  DTNN_REF_KERNEL(t, "rsqrt", rsqrtKernel);
  DTNN_REF_KERNEL(t, "exp", expKernel);
  DTNN_REF_KERNEL(t, "log", logKernel);
  DTNN_REF_KERNEL(t, "erf", erfKernel);
  DTNN_REF_KERNEL(t, "pow", powKernel);
}

} // namespace dtnn::reference
