// Reference kernels of the ops declared in ir/ops/LayerNorm.cpp. Each row
// (one position's normalized shape, D elements) is normalized on one thread
// with its statistics summed in double, two passes (the mean, then the
// squares about it), as batch norm's reference does; dgamma and dbeta sum
// over the rows column by column, in row order, so no result depends on the
// thread count.
#include "backends/reference/KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dtnn::reference {

namespace {

// The rows of x (all but its last `axes` dimensions) and their length.
struct Rows {
  int64_t count = 0, width = 1;
};

Rows rowsOf(const runtime::TensorView &x, int64_t axes) {
  Rows r;
  const std::vector<int64_t> &d = x.type.dims;
  for (size_t i = d.size() - size_t(axes); i < d.size(); ++i) r.width *= d[i];
  r.count = r.width ? x.numel() / r.width : 0;
  return r;
}

// The mean and 1 / sqrt(var + eps) of row `p` of `width` elements.
template <typename T> std::pair<double, double> statsOf(const T *p, int64_t width, double eps) {
  double sum = 0;
  for (int64_t j = 0; j < width; ++j) sum += double(p[j]);
  double mean = sum / double(width), sq = 0;
  for (int64_t j = 0; j < width; ++j) sq += (double(p[j]) - mean) * (double(p[j]) - mean);
  return {mean, 1 / std::sqrt(sq / double(width) + eps)};
}

template <typename T> void layerNormKernel(const KernelArgs &a) {
  int64_t axes = a.op->attrs().getInt("axes");
  double eps = a.op->attrs().getFloat("eps");
  const T *px = a.in[0].as<T>();
  const T *pg = a.in.size() > 1 ? a.in[1].as<T>() : nullptr;
  const T *pb = a.in.size() > 2 ? a.in[2].as<T>() : nullptr;
  T *py = a.out[0].as<T>();
  Rows r = rowsOf(a.in[0], axes);
  parallelFor(r.count, [&](int64_t i) {
    const T *x = px + i * r.width;
    T *y = py + i * r.width;
    auto [mean, invstd] = statsOf(x, r.width, eps);
    for (int64_t j = 0; j < r.width; ++j) {
      double v = (double(x[j]) - mean) * invstd;
      y[j] = pg ? T(v * double(pg[j]) + double(pb[j])) : T(v);
    }
  });
}

// dx = invstd (g - mean(g) - xhat mean(g xhat)) with g = dy gamma and
// xhat = (x - mean) invstd, per row; dgamma = sum over rows of dy xhat and
// dbeta = sum of dy, per column.
template <typename T> void layerNormBackwardKernel(const KernelArgs &a) {
  int64_t axes = a.op->attrs().getInt("axes");
  double eps = a.op->attrs().getFloat("eps");
  const T *pdy = a.in[0].as<T>(), *px = a.in[1].as<T>();
  const T *pg = a.in.size() > 2 ? a.in[2].as<T>() : nullptr;
  T *pdx = a.out[0].as<T>(), *pdg = a.out[1].as<T>(), *pdb = a.out[2].as<T>();
  Rows r = rowsOf(a.in[1], axes);
  std::vector<double> means(size_t(r.count)), invstds(size_t(r.count));
  parallelFor(r.count, [&](int64_t i) {
    const T *x = px + i * r.width, *dy = pdy + i * r.width;
    T *dx = pdx + i * r.width;
    auto [mean, invstd] = statsOf(x, r.width, eps);
    means[size_t(i)] = mean;
    invstds[size_t(i)] = invstd;
    double sg = 0, sgx = 0;
    for (int64_t j = 0; j < r.width; ++j) {
      double g = double(dy[j]) * (pg ? double(pg[j]) : 1.0);
      sg += g;
      sgx += g * (double(x[j]) - mean) * invstd;
    }
    double mg = sg / double(r.width), mgx = sgx / double(r.width);
    for (int64_t j = 0; j < r.width; ++j) {
      double g = double(dy[j]) * (pg ? double(pg[j]) : 1.0);
      double xhat = (double(x[j]) - mean) * invstd;
      dx[j] = T(invstd * (g - mg - xhat * mgx));
    }
  });
  if (!pg) { // no affine parameters: their gradients are zero, as the op states
    std::fill(pdg, pdg + r.width, T(0));
    std::fill(pdb, pdb + r.width, T(0));
    return;
  }
  parallelFor(r.width, [&](int64_t j) {
    double dg = 0, db = 0;
    for (int64_t i = 0; i < r.count; ++i) {
      double dy = double(pdy[i * r.width + j]);
      dg += dy * (double(px[i * r.width + j]) - means[size_t(i)]) * invstds[size_t(i)];
      db += dy;
    }
    pdg[j] = T(dg);
    pdb[j] = T(db);
  });
}

} // namespace

void registerLayerNormKernels(KernelTable &t) {
  DTNN_REF_KERNEL(t, "layernorm", layerNormKernel);
  DTNN_REF_KERNEL(t, "layernorm_backward", layerNormBackwardKernel);
}

} // namespace dtnn::reference
