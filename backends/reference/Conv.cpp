// Reference kernels of the ops declared in ir/ops/Conv.cpp, as im2col plus
// matrix products over one image and group at a time.
//
// The im2col matrix of an image and group has one row per weight position
// r = (ci * KH + i) * KW + j of the group's R = C/groups * KH * KW and one
// column per output position p = o * OW + q of the P = OH * OW; it holds the
// input element that weight r multiplies at output p, or 0 in the padding.
// With it, per image and group:
//   forward          y[k, :]   = bias[k] + sum_r w[k, r] * col[r, :]
//   backward data    col[r, :] = sum_k w[k, r] * dy[k, :], then added back
//                    into dx at the positions im2col read them from
//   backward weights dw[k, r]  = sum over images of dot(dy[k, :], col[r, :])
// Every innermost loop runs over the P contiguous output positions, so the
// compiler vectorizes it. Each parallel iteration writes its own outputs;
// the weight gradient sums a fixed number of batch chunks in a fixed order,
// so every result is the same for any thread count.
#include "backends/reference/FusedActivation.h"
#include "backends/reference/KernelUtil.h"
#include "ir/ops/ShapeUtil.h"

#include <algorithm>
#include <vector>

namespace dtnn::reference {

namespace {

// The sizes, stride, padding and dilation of one conv2d.
struct ConvGeom {
  int64_t n, c, h, w;    // input x [N,C,H,W]
  int64_t k, cg, kh, kw; // weight [K,C/groups,KH,KW]
  int64_t oh, ow;        // output [N,K,OH,OW]
  int64_t groups, kg;    // groups, output channels per group
  int64_t sh, sw, padTop, padLeft, dh, dw;

  int64_t xPlane() const { return h * w; }
  int64_t yPlane() const { return oh * ow; }
  int64_t rows() const { return cg * kh * kw; } // R, the weight positions per output channel
};

// Reads the geometry from the attributes and the views of x, the weight and
// the output (or dy); the verifier has checked the attributes.
ConvGeom convGeom(const ir::AttrMap &attrs, const TensorView &x, const TensorView &wt,
                  const TensorView &y) {
  auto stride = *ir::expandInts(attrs.getInts("stride"), 2);
  auto pad = *ir::expandPad(attrs.getInts("pad"));
  auto dil = *ir::expandInts(attrs.getInts("dilation"), 2);
  ConvGeom g;
  g.n = x.dim(0), g.c = x.dim(1), g.h = x.dim(2), g.w = x.dim(3);
  g.k = wt.dim(0), g.cg = wt.dim(1), g.kh = wt.dim(2), g.kw = wt.dim(3);
  g.oh = y.dim(2), g.ow = y.dim(3);
  g.groups = attrs.getInt("groups"), g.kg = g.k / g.groups;
  g.sh = stride[0], g.sw = stride[1], g.padTop = pad[0], g.padLeft = pad[1];
  g.dh = dil[0], g.dw = dil[1];
  return g;
}

// The half-open range of output positions o in [0, outSize) whose input
// position o * stride + offset lies inside [0, inSize).
struct Range {
  int64_t lo, hi;
};
Range validOutputs(int64_t outSize, int64_t inSize, int64_t stride, int64_t offset) {
  int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t last = inSize - 1 - offset;
  int64_t hi = last < 0 ? 0 : std::min(outSize, last / stride + 1);
  return {std::min(lo, hi), hi};
}

// Calls f(colRow, xRow, cols, colOff) for every stretch of an im2col row
// that comes from one input row: pointers to both rows, the valid output
// columns and the input column of output column 0. `col` points at the
// im2col matrix and `x` at the group's first input channel; either may be
// const, depending on the direction of the copy.
template <typename C, typename X, typename F>
void forEachWindowRow(const ConvGeom &g, C *col, X *x, F f) {
  int64_t p = g.yPlane();
  for (int64_t ci = 0; ci < g.cg; ++ci)
    for (int64_t i = 0; i < g.kh; ++i) {
      int64_t rowOff = i * g.dh - g.padTop;
      Range rows = validOutputs(g.oh, g.h, g.sh, rowOff);
      for (int64_t j = 0; j < g.kw; ++j, col += p) {
        int64_t colOff = j * g.dw - g.padLeft;
        Range cols = validOutputs(g.ow, g.w, g.sw, colOff);
        for (int64_t o = rows.lo; o < rows.hi; ++o)
          f(col + o * g.ow, x + ci * g.xPlane() + (o * g.sh + rowOff) * g.w, cols, colOff);
      }
    }
}

// Fills the im2col matrix `col` [R,P] of the group whose first input
// channel is at `x`.
template <typename T> void im2col(const ConvGeom &g, const T *x, T *col) {
  std::fill(col, col + g.rows() * g.yPlane(), T(0));
  forEachWindowRow(g, col, x, [&](T *c, const T *xr, Range cols, int64_t off) {
    for (int64_t q = cols.lo; q < cols.hi; ++q) c[q] = xr[q * g.sw + off];
  });
}

// Adds the im2col matrix `col` back into the input planes at `dx`, each
// element where im2col read it from.
template <typename T> void col2imAdd(const ConvGeom &g, const T *col, T *dx) {
  forEachWindowRow(g, col, dx, [&](const T *c, T *dr, Range cols, int64_t off) {
    for (int64_t q = cols.lo; q < cols.hi; ++q) dr[q * g.sw + off] += c[q];
  });
}

// y[0..n) += a * x[0..n).
template <typename T> void axpy(T *__restrict y, const T *__restrict x, T a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// The dot product of x[0..n) and y[0..n).
template <typename T> T dot(const T *x, const T *y, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}

// y = act(conv2d(x, weight[, bias]) [+ residual]), one image and group per
// iteration. With a residual, each plane is computed aside and then added,
// as a separate add would round it, so y may take the residual's storage.
template <typename T> void conv2dKernel(const KernelArgs &a) {
  FusedAct act = fusedActOf(*a.op);
  ConvGeom g = convGeom(a.op->attrs(), a.in[0], a.in[1], a.out[0]);
  size_t layer = ir::layerOperandCount(*a.op);
  const T *x = a.in[0].as<T>(), *w = a.in[1].as<T>();
  const T *bias = layer > 2 ? a.in[2].as<T>() : nullptr;
  const T *res = ir::hasResidual(*a.op) ? a.in[layer].as<T>() : nullptr;
  T *y = a.out[0].as<T>();
  int64_t p = g.yPlane(), r = g.rows();
  parallelFor(g.n * g.groups, [&](int64_t ng) {
    int64_t n = ng / g.groups, group = ng % g.groups;
    std::vector<T> col(r * p), plane(res ? p : 0);
    im2col(g, x + (n * g.c + group * g.cg) * g.xPlane(), col.data());
    for (int64_t k = group * g.kg; k < (group + 1) * g.kg; ++k) {
      int64_t o = (n * g.k + k) * p;
      T *yp = res ? plane.data() : y + o;
      std::fill(yp, yp + p, bias ? bias[k] : T(0));
      for (int64_t ri = 0; ri < r; ++ri) axpy(yp, col.data() + ri * p, w[k * r + ri], p);
      if (res) {
        for (int64_t i = 0; i < p; ++i) y[o + i] = yp[i] + res[o + i];
        yp = y + o;
      }
      applyFusedAct(act, yp, p);
    }
  });
}

// dx = conv2d_backward_data(dy, weight, x), one image and group per iteration.
template <typename T> void conv2dBackwardDataKernel(const KernelArgs &a) {
  ConvGeom g = convGeom(a.op->attrs(), a.in[2], a.in[1], a.in[0]);
  const T *dy = a.in[0].as<T>(), *w = a.in[1].as<T>();
  T *dx = a.out[0].as<T>();
  int64_t p = g.yPlane(), r = g.rows();
  parallelFor(g.n * g.groups, [&](int64_t ng) {
    int64_t n = ng / g.groups, group = ng % g.groups;
    std::vector<T> col(r * p, T(0));
    for (int64_t ri = 0; ri < r; ++ri)
      for (int64_t k = group * g.kg; k < (group + 1) * g.kg; ++k)
        axpy(col.data() + ri * p, dy + (n * g.k + k) * p, w[k * r + ri], p);
    T *dxp = dx + (n * g.c + group * g.cg) * g.xPlane();
    std::fill(dxp, dxp + g.cg * g.xPlane(), T(0));
    col2imAdd(g, col.data(), dxp);
  });
}

// Batch chunks of the weight gradient: each sums its images into its own
// partial gradient, and the partials are added in order. The count depends
// on nothing but the batch size, so neither do the results.
constexpr int64_t kWeightGradChunks = 8;

// dw = conv2d_backward_weights(dy, x, weight).
template <typename T> void conv2dBackwardWeightsKernel(const KernelArgs &a) {
  ConvGeom g = convGeom(a.op->attrs(), a.in[1], a.in[2], a.in[0]);
  const T *dy = a.in[0].as<T>(), *x = a.in[1].as<T>();
  T *dw = a.out[0].as<T>();
  int64_t p = g.yPlane(), r = g.rows(), size = g.k * r;
  int64_t chunks = std::min(g.n, kWeightGradChunks);
  std::vector<T> partial(chunks * size, T(0));
  parallelFor(chunks * g.groups, [&](int64_t cg) {
    int64_t chunk = cg / g.groups, group = cg % g.groups;
    std::vector<T> col(r * p);
    T *part = partial.data() + chunk * size;
    for (int64_t n = chunk * g.n / chunks; n < (chunk + 1) * g.n / chunks; ++n) {
      im2col(g, x + (n * g.c + group * g.cg) * g.xPlane(), col.data());
      for (int64_t k = group * g.kg; k < (group + 1) * g.kg; ++k)
        for (int64_t ri = 0; ri < r; ++ri)
          part[k * r + ri] += dot(dy + (n * g.k + k) * p, col.data() + ri * p, p);
    }
  });
  parallelFor(size, [&](int64_t e) {
    T s = 0;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) s += partial[chunk * size + e];
    dw[e] = s;
  });
}

// db = conv2d_backward_bias(dy): dy summed over the batch and the plane.
template <typename T> void conv2dBackwardBiasKernel(const KernelArgs &a) {
  const TensorView &dyv = a.in[0];
  int64_t n = dyv.dim(0), k = dyv.dim(1), plane = dyv.dim(2) * dyv.dim(3);
  const T *dy = dyv.as<T>();
  T *db = a.out[0].as<T>();
  parallelFor(k, [&](int64_t kk) {
    T acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T *p = dy + (i * k + kk) * plane;
      T s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t q = 0; q < plane; ++q) s += p[q];
      acc += s;
    }
    db[kk] = acc;
  });
}

} // namespace

void registerConvKernels(KernelTable &t) {
  DTNN_REF_KERNEL(t, "conv2d", conv2dKernel);
  DTNN_REF_KERNEL(t, "conv2d_backward_data", conv2dBackwardDataKernel);
  DTNN_REF_KERNEL(t, "conv2d_backward_weights", conv2dBackwardWeightsKernel);
  DTNN_REF_KERNEL(t, "conv2d_backward_bias", conv2dBackwardBiasKernel);
}


} // namespace dtnn::reference
