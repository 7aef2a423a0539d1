// Reference kernels of the ops declared in ir/ops/Pool.cpp. Windows follow
// PyTorch: a window starts at o * stride - pad and is clipped to the input;
// with ceil mode the last window may reach past the bottom or right padding.
// avgpool with count_pad divides by the window's size inside the padded
// input, otherwise by the number of input elements it covers. maxpool takes
// the first maximum of a window (a NaN counts as the maximum), and its
// gradient recomputes that choice. Each parallel iteration owns one
// (image, channel) plane.
#include "backends/reference/KernelUtil.h"
#include "ir/ops/ShapeUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dtnn::reference {

namespace {

// The sizes, kernel, stride and padding of one maxpool or avgpool.
struct PoolGeom {
  int64_t planes, h, w; // input [N,C,H,W], planes = N*C
  int64_t oh, ow;       // output [N,C,OH,OW]
  int64_t kh, kw, sh, sw, padTop, padLeft, padBottom, padRight;
  bool countPad = true;

  int64_t xPlane() const { return h * w; }
  int64_t yPlane() const { return oh * ow; }
};

// Reads the geometry from the attributes and the views of x and the output
// (or dy); an empty stride means the kernel size.
PoolGeom poolGeom(const ir::AttrMap &attrs, const TensorView &x, const TensorView &y) {
  auto kernel = *ir::expandInts(attrs.getInts("kernel"), 2);
  const std::vector<int64_t> &strideAttr = attrs.getInts("stride");
  auto stride = strideAttr.empty() ? kernel : *ir::expandInts(strideAttr, 2);
  auto pad = *ir::expandPad(attrs.getInts("pad"));
  PoolGeom g;
  g.planes = x.dim(0) * x.dim(1), g.h = x.dim(2), g.w = x.dim(3);
  g.oh = y.dim(2), g.ow = y.dim(3);
  g.kh = kernel[0], g.kw = kernel[1], g.sh = stride[0], g.sw = stride[1];
  g.padTop = pad[0], g.padLeft = pad[1], g.padBottom = pad[2], g.padRight = pad[3];
  if (const ir::AttrValue *cp = attrs.find("count_pad")) g.countPad = std::get<bool>(*cp);
  return g;
}

// The input rows [r0, r1) and columns [c0, c1) of output (o, q)'s window, and
// its avgpool divisor.
struct Window {
  int64_t r0, r1, c0, c1;
  int64_t divisor;
};
Window window(const PoolGeom &g, int64_t o, int64_t q) {
  int64_t r0 = o * g.sh - g.padTop, c0 = q * g.sw - g.padLeft;
  int64_t r1 = std::min(r0 + g.kh, g.h + g.padBottom);
  int64_t c1 = std::min(c0 + g.kw, g.w + g.padRight);
  int64_t padded = (r1 - r0) * (c1 - c0);
  r0 = std::max<int64_t>(r0, 0), c0 = std::max<int64_t>(c0, 0);
  r1 = std::min(r1, g.h), c1 = std::min(c1, g.w);
  return {r0, r1, c0, c1, g.countPad ? padded : (r1 - r0) * (c1 - c0)};
}

// Calls f(i) for the index i in the plane of each input element of a window,
// row by row.
template <typename F> void forEachInWindow(const PoolGeom &g, const Window &win, F f) {
  for (int64_t r = win.r0; r < win.r1; ++r)
    for (int64_t c = win.c0; c < win.c1; ++c) f(r * g.w + c);
}

// The index in the plane of the first maximum of a window.
template <typename T> int64_t argmax(const T *xp, const PoolGeom &g, const Window &win) {
  T best = -std::numeric_limits<T>::infinity();
  int64_t at = win.r0 * g.w + win.c0;
  forEachInWindow(g, win, [&](int64_t i) {
    T v = xp[i];
    if (v > best || std::isnan(v)) best = v, at = i;
  });
  return at;
}

// A forward kernel: y[i] = value(g, xp, window) for each output element i of
// each plane, where xp is the plane of x; one plane per parallel iteration.
template <typename T, typename F> void poolForward(const KernelArgs &a, F value) {
  PoolGeom g = poolGeom(a.op->attrs(), a.in[0], a.out[0]);
  const T *x = a.in[0].as<T>();
  T *y = a.out[0].as<T>();
  parallelFor(g.planes, [&](int64_t p) {
    const T *xp = x + p * g.xPlane();
    T *yp = y + p * g.yPlane();
    for (int64_t o = 0; o < g.oh; ++o)
      for (int64_t q = 0; q < g.ow; ++q) yp[o * g.ow + q] = value(g, xp, window(g, o, q));
  });
}

// A backward kernel of (dy, x): zeroes each plane dxp of dx, then calls
// spread(g, xp, dxp, d, window) for each element d of dy to add it there,
// where xp is the plane of x; one plane per parallel iteration.
template <typename T, typename F> void poolBackward(const KernelArgs &a, F spread) {
  PoolGeom g = poolGeom(a.op->attrs(), a.in[1], a.in[0]);
  const T *dy = a.in[0].as<T>(), *x = a.in[1].as<T>();
  T *dx = a.out[0].as<T>();
  parallelFor(g.planes, [&](int64_t p) {
    const T *xp = x + p * g.xPlane(), *dyp = dy + p * g.yPlane();
    T *dxp = dx + p * g.xPlane();
    std::fill(dxp, dxp + g.xPlane(), T(0));
    for (int64_t o = 0; o < g.oh; ++o)
      for (int64_t q = 0; q < g.ow; ++q) spread(g, xp, dxp, dyp[o * g.ow + q], window(g, o, q));
  });
}

template <typename T> void maxpoolKernel(const KernelArgs &a) {
  poolForward<T>(
      a, [](const PoolGeom &g, const T *xp, const Window &win) { return xp[argmax(xp, g, win)]; });
}

// dx = maxpool_backward(dy, x): each dy element goes to its window's maximum.
template <typename T> void maxpoolBackwardKernel(const KernelArgs &a) {
  poolBackward<T>(a, [](const PoolGeom &g, const T *xp, T *dxp, T d, const Window &win) {
    dxp[argmax(xp, g, win)] += d;
  });
}

template <typename T> void avgpoolKernel(const KernelArgs &a) {
  poolForward<T>(a, [](const PoolGeom &g, const T *xp, const Window &win) {
    T s = 0;
    forEachInWindow(g, win, [&](int64_t i) { s += xp[i]; });
    return s / static_cast<T>(win.divisor);
  });
}

// dx = avgpool_backward(dy, x): each dy element, divided by its window's
// divisor, goes to every input element of the window.
template <typename T> void avgpoolBackwardKernel(const KernelArgs &a) {
  poolBackward<T>(a, [](const PoolGeom &g, const T *, T *dxp, T d, const Window &win) {
    T share = d / static_cast<T>(win.divisor);
    forEachInWindow(g, win, [&](int64_t i) { dxp[i] += share; });
  });
}

template <typename T> void globalAvgpoolKernel(const KernelArgs &a) {
  const TensorView &xv = a.in[0];
  int64_t plane = xv.dim(2) * xv.dim(3);
  const T *x = xv.as<T>();
  T *y = a.out[0].as<T>();
  parallelFor(xv.dim(0) * xv.dim(1), [&](int64_t p) {
    const T *xp = x + p * plane;
    T s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < plane; ++i) s += xp[i];
    y[p] = s / static_cast<T>(plane);
  });
}

// dx = global_avgpool_backward(dy, x): dy / (H*W) over each plane.
template <typename T> void globalAvgpoolBackwardKernel(const KernelArgs &a) {
  const TensorView &xv = a.in[1];
  int64_t plane = xv.dim(2) * xv.dim(3);
  const T *dy = a.in[0].as<T>();
  T *dx = a.out[0].as<T>();
  parallelFor(xv.dim(0) * xv.dim(1), [&](int64_t p) {
    T share = dy[p] / static_cast<T>(plane);
    std::fill(dx + p * plane, dx + (p + 1) * plane, share);
  });
}

} // namespace

void registerPoolKernels(KernelTable &t) {
  DTNN_REF_KERNEL(t, "maxpool", maxpoolKernel);
  DTNN_REF_KERNEL(t, "maxpool_backward", maxpoolBackwardKernel);
  DTNN_REF_KERNEL(t, "avgpool", avgpoolKernel);
  DTNN_REF_KERNEL(t, "avgpool_backward", avgpoolBackwardKernel);
  DTNN_REF_KERNEL(t, "global_avgpool", globalAvgpoolKernel);
  DTNN_REF_KERNEL(t, "global_avgpool_backward", globalAvgpoolBackwardKernel);
}


} // namespace dtnn::reference
