// Reference kernels of the ops declared in ir/ops/Reduce.cpp other than
// reduce_sum (sum_like's kernel, in Elementwise.cpp): the maximum over axes
// and its gradient, one output element per parallel iteration.
#include "backends/reference/KernelUtil.h"
#include "backends/reference/Reduction.h"

#include <cmath>

namespace dtnn::reference {

namespace {

// x's dimensions split into those the result keeps and those reduced away.
struct Split {
  std::vector<ReduceDim> kept, reduced;
  int64_t count = 1; // elements reduced into each result
};

Split splitOf(const std::vector<int64_t> &x, const std::vector<int64_t> &out) {
  Split s;
  for (const ReduceDim &d : planReduce(x, out)) {
    (d.reduced ? s.reduced : s.kept).push_back(d);
    if (d.reduced) s.count *= d.size;
  }
  return s;
}

template <typename T> void reduceMaxKernel(const KernelArgs &a) {
  const T *px = a.in[0].as<T>();
  T *po = a.out[0].as<T>();
  Split s = splitOf(a.in[0].type.dims, a.out[0].type.dims);
  parallelFor(a.out[0].numel(), [&](int64_t o) {
    const T *base = px + offsetOf(o, s.kept);
    T m = -INFINITY;
    for (int64_t r = 0; r < s.count; ++r) {
      T v = base[offsetOf(r, s.reduced)];
      if (std::isnan(v)) {
        m = v;
        break;
      }
      m = std::max(m, v);
    }
    po[o] = m;
  });
}

// dx = dy / k where x equals its maximum y (k elements do), else 0.
template <typename T> void reduceMaxBackwardKernel(const KernelArgs &a) {
  const T *pdy = a.in[0].as<T>(), *px = a.in[1].as<T>(), *py = a.in[2].as<T>();
  T *pdx = a.out[0].as<T>();
  Split s = splitOf(a.in[1].type.dims, a.in[0].type.dims);
  parallelFor(a.in[0].numel(), [&](int64_t o) {
    int64_t base = offsetOf(o, s.kept);
    int64_t ties = 0;
    for (int64_t r = 0; r < s.count; ++r) ties += px[base + offsetOf(r, s.reduced)] == py[o];
    T share = ties ? pdy[o] / T(ties) : T(0);
    for (int64_t r = 0; r < s.count; ++r) {
      int64_t i = base + offsetOf(r, s.reduced);
      pdx[i] = px[i] == py[o] ? share : T(0);
    }
  });
}

} // namespace

void registerReduceKernels(KernelTable &t) {
  DTNN_REF_KERNEL(t, "reduce_max", reduceMaxKernel);
  DTNN_REF_KERNEL(t, "reduce_max_backward", reduceMaxBackwardKernel);
}

} // namespace dtnn::reference
