// Reference kernels of scaled_dot_product_attention and its backward op
// (ir/ops/Attention.cpp), in double. The forward pass works a query row at a
// time: its scores, their softmax (the maximum subtracted first) and the
// weighted sum of the values. The backward pass recomputes each row's
// probabilities p and, with g = dy v^T and ds = p (g - sum_j p g),
//   dq = scale ds k,   dk = scale ds^T q,   dv = p^T dy,
// one batch matrix per parallel iteration (dk and dv sum over its rows in
// row order), so no result depends on the thread count.
#include "backends/reference/KernelUtil.h"
#include "ir/ops/AttentionShape.h"

#include <cmath>
#include <limits>
#include <vector>

namespace dtnn::reference {

namespace {

std::vector<ir::TensorType> typesOf(const std::vector<runtime::TensorView> &in, size_t first) {
  std::vector<ir::TensorType> t;
  for (size_t i = first; i < in.size(); ++i) t.push_back(in[i].type);
  return t;
}

// The softmax of the scores of query row i of batch matrix b, into p[0..S).
template <typename T>
void rowProbabilities(const ir::AttentionShape &g, const T *q, const T *k, const T *mask, int64_t b,
                      int64_t i, std::vector<double> &p) {
  double top = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < g.s; ++j) {
    double dot = 0;
    for (int64_t c = 0; c < g.e; ++c) dot += double(q[i * g.e + c]) * double(k[j * g.e + c]);
    double score = g.scale * dot;
    if (g.masked) score += double(mask[g.maskOffset[size_t(b)] + i * g.maskRow + j * g.maskCol]);
    if (g.hidden(i, j)) score = -std::numeric_limits<double>::infinity();
    p[size_t(j)] = score;
    top = std::max(top, score);
  }
  double sum = 0;
  for (int64_t j = 0; j < g.s; ++j) sum += p[size_t(j)] = std::exp(p[size_t(j)] - top);
  for (int64_t j = 0; j < g.s; ++j) p[size_t(j)] /= sum;
}

template <typename T> void attentionKernel(const KernelArgs &a) {
  ir::AttentionShape g(typesOf(a.in, 0), a.op->attrs());
  const T *pq = a.in[0].as<T>(), *pk = a.in[1].as<T>(), *pv = a.in[2].as<T>();
  const T *mask = g.masked ? a.in[3].as<T>() : nullptr;
  T *py = a.out[0].as<T>();
  parallelFor(g.batch * g.l, [&](int64_t item) {
    int64_t b = item / g.l, i = item % g.l;
    std::vector<double> p(size_t(g.s)), acc(size_t(g.ev), 0.0);
    rowProbabilities(g, pq + b * g.l * g.e, pk + b * g.s * g.e, mask, b, i, p);
    const T *v = pv + b * g.s * g.ev;
    for (int64_t j = 0; j < g.s; ++j)
      for (int64_t c = 0; c < g.ev; ++c) acc[size_t(c)] += p[size_t(j)] * double(v[j * g.ev + c]);
    T *y = py + item * g.ev;
    for (int64_t c = 0; c < g.ev; ++c) y[c] = T(acc[size_t(c)]);
  });
}

template <typename T> void attentionBackwardKernel(const KernelArgs &a) {
  ir::AttentionShape g(typesOf(a.in, 1), a.op->attrs());
  const T *pdy = a.in[0].as<T>(), *pq = a.in[1].as<T>(), *pk = a.in[2].as<T>(),
          *pv = a.in[3].as<T>();
  const T *mask = g.masked ? a.in[4].as<T>() : nullptr;
  T *pdq = a.out[0].as<T>(), *pdk = a.out[1].as<T>(), *pdv = a.out[2].as<T>();
  parallelFor(g.batch, [&](int64_t b) {
    const T *q = pq + b * g.l * g.e, *k = pk + b * g.s * g.e, *v = pv + b * g.s * g.ev;
    const T *dy = pdy + b * g.l * g.ev;
    std::vector<double> p(size_t(g.s)), ds(size_t(g.s));
    std::vector<double> dk(size_t(g.s * g.e), 0.0), dv(size_t(g.s * g.ev), 0.0);
    for (int64_t i = 0; i < g.l; ++i) {
      rowProbabilities(g, q, k, mask, b, i, p);
      double total = 0;
      for (int64_t j = 0; j < g.s; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < g.ev; ++c)
          dot += double(dy[i * g.ev + c]) * double(v[j * g.ev + c]);
        ds[size_t(j)] = dot;
        total += p[size_t(j)] * dot;
      }
      T *dq = pdq + (b * g.l + i) * g.e;
      for (int64_t c = 0; c < g.e; ++c) {
        double sum = 0;
        for (int64_t j = 0; j < g.s; ++j) {
          double d = p[size_t(j)] * (ds[size_t(j)] - total);
          sum += d * double(k[j * g.e + c]);
        }
        dq[c] = T(g.scale * sum);
      }
      for (int64_t j = 0; j < g.s; ++j) {
        double d = g.scale * p[size_t(j)] * (ds[size_t(j)] - total);
        for (int64_t c = 0; c < g.e; ++c) dk[size_t(j * g.e + c)] += d * double(q[i * g.e + c]);
        for (int64_t c = 0; c < g.ev; ++c)
          dv[size_t(j * g.ev + c)] += p[size_t(j)] * double(dy[i * g.ev + c]);
      }
    }
    for (int64_t x = 0; x < g.s * g.e; ++x) pdk[b * g.s * g.e + x] = T(dk[size_t(x)]);
    for (int64_t x = 0; x < g.s * g.ev; ++x) pdv[b * g.s * g.ev + x] = T(dv[size_t(x)]);
  });
}

} // namespace

void registerAttentionKernels(KernelTable &t) {
  DTNN_REF_KERNEL(t, "scaled_dot_product_attention", attentionKernel);
  DTNN_REF_KERNEL(t, "scaled_dot_product_attention_backward", attentionBackwardKernel);
}

} // namespace dtnn::reference
