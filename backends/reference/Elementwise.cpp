// Reference kernels of the ops declared in ir/ops/Elementwise.cpp. The
// binary ops and the generic helpers run on every element type their shape
// rules accept; integer division truncates and gives 0 for a zero divisor.
#include "backends/reference/FusedActivation.h"
#include "backends/reference/KernelUtil.h"
#include "backends/reference/Reduction.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace dtnn::reference {

namespace {

// Calls f(T{}) with T the C++ type of dtype `t`.
template <typename F> void dispatchAny(ir::DType t, F &&f) {
  switch (t) {
  case ir::DType::F32: f(float{}); break;
  case ir::DType::F64: f(double{}); break;
  case ir::DType::I32: f(int32_t{}); break;
  case ir::DType::I64: f(int64_t{}); break;
  case ir::DType::U8: f(uint8_t{}); break;
  case ir::DType::Bool: f(bool{}); break;
  case ir::DType::Token: break;
  }
}

// Registers kernel template fn for every element type, chosen by the dtype
// of result 0.
#define DTNN_ANY_KERNEL(table, opName, fn)                                                         \
  (table).add(opName, [](const KernelArgs &a) {                                                    \
    dispatchAny(a.out[0].type.dtype, [&](auto tag) { fn<decltype(tag)>(a); });                     \
  })

// The operand dimensions of a broadcast, aligned to the output's rank, with
// size-1 output dimensions dropped and mergeable neighbours merged. Strides
// are in elements; a broadcast dimension has stride 0.
struct Broadcast {
  std::vector<int64_t> dims, sa, sb;
};

// Contiguous element strides of `dims` aligned to rank n, 0 where the
// operand has size 1 (or no dimension) and the output does not.
std::vector<int64_t> alignedStrides(const std::vector<int64_t> &dims,
                                    const std::vector<int64_t> &out) {
  size_t n = out.size(), lead = n - dims.size();
  std::vector<int64_t> s(n, 0);
  int64_t stride = 1;
  for (size_t i = n; i-- > lead;) {
    int64_t d = dims[i - lead];
    s[i] = d == 1 ? 0 : stride;
    stride *= d;
  }
  return s;
}

Broadcast planBroadcast(const std::vector<int64_t> &out, const std::vector<int64_t> &a,
                        const std::vector<int64_t> &b) {
  std::vector<int64_t> sa = alignedStrides(a, out), sb = alignedStrides(b, out);
  Broadcast p;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 1) continue;
    if (!p.dims.empty() && p.sa.back() == sa[i] * out[i] && p.sb.back() == sb[i] * out[i]) {
      p.dims.back() *= out[i];
      p.sa.back() = sa[i];
      p.sb.back() = sb[i];
      continue;
    }
    p.dims.push_back(out[i]);
    p.sa.push_back(sa[i]);
    p.sb.push_back(sb[i]);
  }
  if (p.dims.empty()) p = {{1}, {0}, {0}};
  return p;
}

// out[i] = f(a[ia], b[ib]) with numpy broadcasting; equal shapes and a
// one-element operand take fast paths.
template <typename T, typename F>
void broadcastMap(const TensorView &av, const TensorView &bv, const TensorView &ov, F f) {
  const T *pa = av.as<T>(), *pb = bv.as<T>();
  T *po = ov.as<T>();
  int64_t n = ov.numel();
  if (av.numel() == n && bv.numel() == n) {
    parallelBlocks(n, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = f(pa[i], pb[i]);
    });
    return;
  }
  Broadcast p = planBroadcast(ov.type.dims, av.type.dims, bv.type.dims);
  size_t last = p.dims.size() - 1;
  int64_t inner = p.dims[last], ia = p.sa[last], ib = p.sb[last];
  int64_t rows = n / inner;
  parallelFor(rows, [&](int64_t r) {
    int64_t oa = 0, ob = 0, rest = r;
    for (size_t d = last; d-- > 0;) {
      int64_t idx = rest % p.dims[d];
      rest /= p.dims[d];
      oa += idx * p.sa[d];
      ob += idx * p.sb[d];
    }
    const T *ra = pa + oa, *rb = pb + ob;
    T *ro = po + r * inner;
    if (ia == 1 && ib == 1)
      for (int64_t j = 0; j < inner; ++j) ro[j] = f(ra[j], rb[j]);
    else if (ia == 1)
      for (int64_t j = 0; j < inner; ++j) ro[j] = f(ra[j], rb[j * ib]);
    else if (ib == 1)
      for (int64_t j = 0; j < inner; ++j) ro[j] = f(ra[j * ia], rb[j]);
    else
      for (int64_t j = 0; j < inner; ++j) ro[j] = f(ra[j * ia], rb[j * ib]);
  });
}

// a + b, then the fused activation (floating point only, by the shape rule).
template <typename T> void addKernel(const KernelArgs &a) {
  broadcastMap<T>(a.in[0], a.in[1], a.out[0], [](T x, T y) { return T(x + y); });
  if constexpr (std::is_floating_point_v<T>) {
    FusedAct act = fusedActOf(*a.op);
    if (act == FusedAct::None) return;
    T *y = a.out[0].as<T>();
    parallelBlocks(a.out[0].numel(),
                   [&](int64_t s, int64_t e) { applyFusedAct(act, y + s, e - s); });
  }
}

template <typename T> void subKernel(const KernelArgs &a) {
  broadcastMap<T>(a.in[0], a.in[1], a.out[0], [](T x, T y) { return T(x - y); });
}

template <typename T> void mulKernel(const KernelArgs &a) {
  broadcastMap<T>(a.in[0], a.in[1], a.out[0], [](T x, T y) { return T(x * y); });
}

template <typename T> void divKernel(const KernelArgs &a) {
  if constexpr (std::is_floating_point_v<T>)
    broadcastMap<T>(a.in[0], a.in[1], a.out[0], [](T x, T y) { return x / y; });
  else
    broadcastMap<T>(a.in[0], a.in[1], a.out[0],
                    [](T x, T y) { return y == T(0) ? T(0) : T(x / y); });
}

// broadcast_like: x broadcast to the result's shape (b is a dummy operand
// with the result's shape, so the binary loop does the indexing).
template <typename T> void broadcastLikeKernel(const KernelArgs &a) {
  broadcastMap<T>(a.in[0], a.out[0], a.out[0], [](T x, T) { return x; });
}

template <typename T> void fillKernel(const KernelArgs &a) {
  T v = static_cast<T>(a.op->attrs().getFloat("value"));
  T *po = a.out[0].as<T>();
  std::fill(po, po + a.out[0].numel(), v);
}

template <typename T> void countLikeKernel(const KernelArgs &a) {
  double like = static_cast<double>(a.out[0].numel());
  double count = like > 0 ? static_cast<double>(a.in[0].numel()) / like : 0;
  T v = static_cast<T>(std::max(1.0, count + a.op->attrs().getFloat("offset")));
  T *po = a.out[0].as<T>();
  std::fill(po, po + a.out[0].numel(), v);
}

template <typename T> void scaleKernel(const KernelArgs &a) {
  T f = static_cast<T>(a.op->attrs().getFloat("factor"));
  const T *px = a.in[0].as<T>();
  T *po = a.out[0].as<T>();
  parallelBlocks(a.out[0].numel(), [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) po[i] = px[i] * f;
  });
}

// sum_like: sums x over the dimensions broadcasting added. Each output
// element sums its inputs in row-major order on one thread, so the result
// does not depend on the thread count; innermost rows of outputs are split
// into column blocks so that [N,M] -> [M] (a bias gradient) runs in parallel
// too.
template <typename T> void sumLikeKernel(const KernelArgs &a) {
  const T *px = a.in[0].as<T>();
  T *po = a.out[0].as<T>();
  std::vector<ReduceDim> dims = planReduce(a.in[0].type.dims, a.out[0].type.dims);
  int64_t vec = 1, red = 1, contig = 1;
  if (!dims.empty() && !dims.back().reduced) {
    vec = dims.back().size;
    dims.pop_back();
  } else if (!dims.empty()) {
    contig = dims.back().size;
    dims.pop_back();
  }
  std::vector<ReduceDim> kept, reduced;
  for (const ReduceDim &d : dims) (d.reduced ? reduced : kept).push_back(d);
  for (const ReduceDim &d : reduced) red *= d.size;
  int64_t outer = a.out[0].numel() / vec;
  constexpr int64_t kColumns = 256;
  int64_t blocks = (vec + kColumns - 1) / kColumns;
  parallelFor(outer * blocks, [&](int64_t item) {
    int64_t o = item / blocks, begin = item % blocks * kColumns;
    int64_t width = std::min(kColumns, vec - begin);
    int64_t base = offsetOf(o, kept) + begin;
    std::vector<double> acc(width, 0.0);
    for (int64_t r = 0; r < red; ++r) {
      const T *row = px + base + offsetOf(r, reduced);
      if (vec > 1) {
        for (int64_t j = 0; j < width; ++j) acc[j] += static_cast<double>(row[j]);
      } else {
        double s = 0;
        for (int64_t j = 0; j < contig; ++j) s += static_cast<double>(row[j]);
        acc[0] += s;
      }
    }
    for (int64_t j = 0; j < width; ++j) po[o * vec + begin + j] = static_cast<T>(acc[j]);
  });
}

} // namespace

void registerElementwiseKernels(KernelTable &t) {
  DTNN_ANY_KERNEL(t, "add", addKernel);
  DTNN_ANY_KERNEL(t, "sub", subKernel);
  DTNN_ANY_KERNEL(t, "mul", mulKernel);
  DTNN_ANY_KERNEL(t, "div", divKernel);
  DTNN_ANY_KERNEL(t, "fill", fillKernel);
  DTNN_ANY_KERNEL(t, "sum_like", sumLikeKernel);
  DTNN_ANY_KERNEL(t, "reduce_sum", sumLikeKernel); // the same sum, to the result's type
  DTNN_ANY_KERNEL(t, "broadcast_like", broadcastLikeKernel);
  DTNN_REF_KERNEL(t, "scale", scaleKernel);
  // A bf16 operand or result arrives as float32 (Bf16Stage.h), which rounds it on the way
  // out: the cast itself converts between float and double.
  t.add("cast", [](const KernelArgs &a) {
    dispatchFloat(a.in[0].type.dtype, [&](auto from) {
      dispatchFloat(a.out[0].type.dtype, [&](auto to) {
        using From = decltype(from);
        using To = decltype(to);
        const From *x = a.in[0].as<From>();
        To *y = a.out[0].as<To>();
        parallelBlocks(a.in[0].numel(), [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) y[i] = static_cast<To>(x[i]);
        });
      });
    });
  });
  t.add("count_like", [](const KernelArgs &a) {
    dispatchFloat(a.out[0].type.dtype, [&](auto tag) { countLikeKernel<decltype(tag)>(a); });
  });
}


} // namespace dtnn::reference
