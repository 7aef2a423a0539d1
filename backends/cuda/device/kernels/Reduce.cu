// The Reduce family's kernels (see Reduce.h): grid-stride loops over work
// items, an item being one segment of one output, taken by a warp (rows:
// the innermost dimension is reduced) or by one thread (columns).
#include "backends/cuda/device/kernels/Reduce.h"
#include "backends/cuda/device/kernels/Common.cuh"

#include <algorithm>

namespace dtnn::cuda {

namespace {

// The most blocks of this family's kernels; their grid-stride loops cover the rest.
constexpr int64_t kMostBlocks = 8192;

// The offset in x of output o (over the kept dimensions) and of element r of a reduction (over
// the reduced ones), row-major.
__device__ inline int64_t keptOffset(int64_t o, const ReduceGeom &g) {
  int64_t off = 0;
  for (int d = g.keptRank - 1; d >= 0; --d) {
    int64_t q = o / g.keptSize[d];
    off += (o - q * g.keptSize[d]) * g.keptStride[d];
    o = q;
  }
  return off;
}

__device__ inline int64_t reducedOffset(int64_t r, const ReduceGeom &g) {
  int64_t off = 0;
  for (int d = g.reducedRank - 1; d >= 0; --d) {
    int64_t q = r / g.reducedSize[d];
    off += (r - q * g.reducedSize[d]) * g.reducedStride[d];
    r = q;
  }
  return off;
}

// The larger of a and b as the reference's loop takes it: a NaN wins, else std::max.
template <typename T> __device__ inline T maxNaN(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? b : a;
}

// The work items of groups of G lanes (G is 1 or 32, and kThreads a multiple of it, so that a
// warp's lanes share their item): item it is segment s of output o, neighbouring threads taking
// neighbouring outputs when G is 1 (columns), a warp's lanes neighbouring elements when G is 32.
template <int G> struct Items {
  __device__ static int64_t first() { return (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / G; }
  __device__ static int64_t step() { return int64_t(gridDim.x) * blockDim.x / G; }
  __device__ static int lane() { return G == 1 ? 0 : int(threadIdx.x % G); }
  __device__ static void of(int64_t it, const ReduceGeom &g, int64_t &o, int64_t &s) {
    if constexpr (G == 1) {
      s = it / g.outputs;
      o = it - s * g.outputs;
    } else {
      o = it / g.segments;
      s = it - o * g.segments;
    }
  }
};

// The combination of v over the lanes of a warp, in every lane.
template <typename Op, typename A> __device__ inline A warpCombine(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = Op::combine(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// reduce_sum's items: the sum of x in double.
template <typename T> struct SumOp {
  using Acc = double;
  const T *x;
  T *y;
  double *partial;
  __device__ Acc start() const { return 0.0; }
  __device__ Acc add(Acc a, int64_t, int64_t i) const { return a + double(x[i]); }
  __device__ static Acc combine(Acc a, Acc b) { return a + b; }
  __device__ void write(int64_t o, int64_t s, Acc a, const ReduceGeom &g) const {
    if (g.segments == 1)
      y[o] = T(a);
    else
      partial[o * g.segments + s] = a;
  }
};

// reduce_max's items: the largest element, from -inf.
template <typename T> struct MaxOp {
  using Acc = T;
  const T *x;
  T *y;
  double *partial;
  __device__ Acc start() const { return T(-INFINITY); }
  __device__ Acc add(Acc a, int64_t, int64_t i) const { return maxNaN(a, x[i]); }
  __device__ static Acc combine(Acc a, Acc b) { return maxNaN(a, b); }
  __device__ void write(int64_t o, int64_t s, Acc a, const ReduceGeom &g) const {
    if (g.segments == 1)
      y[o] = a;
    else
      partial[o * g.segments + s] = double(a);
  }
};

// reduce_max_backward's first items: the elements equal to the output's maximum.
template <typename T> struct TieOp {
  using Acc = long long;
  const T *x, *y;
  double *ties;
  __device__ Acc start() const { return 0; }
  __device__ Acc add(Acc a, int64_t o, int64_t i) const { return a + (x[i] == y[o] ? 1 : 0); }
  __device__ static Acc combine(Acc a, Acc b) { return a + b; }
  __device__ void write(int64_t o, int64_t s, Acc a, const ReduceGeom &g) const {
    ties[o * g.segments + s] = double(a);
  }
};

// Each item combines the elements of its segment with op, in order within each lane.
template <int G, typename Op> __global__ void combineSegments(Op op, ReduceGeom g) {
  using I = Items<G>;
  const int64_t items = g.outputs * g.segments;
  const int lane = I::lane();
  for (int64_t it = I::first(); it < items; it += I::step()) {
    int64_t o, s;
    I::of(it, g, o, s);
    const int64_t base = keptOffset(o, g);
    const int64_t end = std::min(g.count, (s + 1) * g.length);
    typename Op::Acc a = op.start();
    for (int64_t r = s * g.length + lane; r < end; r += G) a = op.add(a, o, base + reducedOffset(r, g));
    if constexpr (G > 1) a = warpCombine<Op>(a);
    if (lane == 0) op.write(o, s, a, g);
  }
}

// y[o] = the sum of its partials in segment order, rounded once.
template <typename T> __global__ void sumPartials(const double *partial, T *y, ReduceGeom g) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < g.outputs;
       o += int64_t(gridDim.x) * blockDim.x) {
    double t = 0;
    for (int64_t s = 0; s < g.segments; ++s) t += partial[o * g.segments + s];
    y[o] = T(t);
  }
}

// y[o] = the largest of its partials.
template <typename T> __global__ void maxPartials(const double *partial, T *y, ReduceGeom g) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < g.outputs;
       o += int64_t(gridDim.x) * blockDim.x) {
    T m = T(partial[o * g.segments]);
    for (int64_t s = 1; s < g.segments; ++s) m = maxNaN(m, T(partial[o * g.segments + s]));
    y[o] = m;
  }
}

// reduce_max_backward's second items: dx over the segment, dy shared among the output's ties.
template <int G, typename T>
__global__ void shareTies(const T *dy, const T *x, const T *y, T *dx, const double *ties, ReduceGeom g) {
  using I = Items<G>;
  const int64_t items = g.outputs * g.segments;
  const int lane = I::lane();
  for (int64_t it = I::first(); it < items; it += I::step()) {
    int64_t o, s;
    I::of(it, g, o, s);
    double k = 0;
    for (int64_t q = 0; q < g.segments; ++q) k += ties[o * g.segments + q];
    const T share = k > 0 ? dy[o] / T(k) : T(0), m = y[o];
    const int64_t base = keptOffset(o, g);
    const int64_t end = std::min(g.count, (s + 1) * g.length);
    for (int64_t r = s * g.length + lane; r < end; r += G) {
      int64_t i = base + reducedOffset(r, g);
      dx[i] = x[i] == m ? share : T(0);
    }
  }
}

// Runs combineSegments for op over g's items.
template <typename Op> cudaError_t runSegments(const Op &op, const ReduceGeom &g, cudaStream_t stream) {
  const int64_t items = g.outputs * g.segments;
  if (g.columns)
    combineSegments<1><<<blocksFor(items, kThreads, kMostBlocks), kThreads, 0, stream>>>(op, g);
  else
    combineSegments<32><<<blocksFor(items * 32, kThreads, kMostBlocks), kThreads, 0, stream>>>(op, g);
  return cudaGetLastError();
}

template <typename V> __global__ void broadcastKernel(const V *x, V *y, BroadcastGeom g) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < g.total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, src = 0, scale = 1;
    for (int d = g.rank - 1; d >= 0; --d) {
      int64_t q = rest / g.size[d], c = rest - q * g.size[d];
      rest = q;
      if (g.kept[d]) {
        src += c * scale;
        scale *= g.size[d];
      }
    }
    y[i] = x[src];
  }
}

template <typename V> __global__ void fillKernel(V *y, int64_t n, V v) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = v;
}

template <typename V>
cudaError_t broadcastAs(const void *x, void *y, const BroadcastGeom &g, cudaStream_t stream) {
  broadcastKernel<V>
      <<<blocksFor(g.total, kThreads, kMostBlocks), kThreads, 0, stream>>>(static_cast<const V *>(x), static_cast<V *>(y), g);
  return cudaGetLastError();
}

template <typename V> cudaError_t fillAs(void *y, int64_t n, uint64_t bits, cudaStream_t stream) {
  fillKernel<V><<<blocksFor(n, kThreads, kMostBlocks), kThreads, 0, stream>>>(static_cast<V *>(y), n, V(bits));
  return cudaGetLastError();
}

} // namespace

template <typename T>
cudaError_t launchReduceSum(const T *x, T *y, double *partial, const ReduceGeom &g, cudaStream_t stream) {
  if (cudaError_t e = runSegments(SumOp<T>{x, y, partial}, g, stream)) return e;
  if (g.segments == 1) return cudaSuccess;
  sumPartials<T><<<blocksFor(g.outputs, kThreads, kMostBlocks), kThreads, 0, stream>>>(partial, y, g);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchReduceMax(const T *x, T *y, double *partial, const ReduceGeom &g, cudaStream_t stream) {
  if (cudaError_t e = runSegments(MaxOp<T>{x, y, partial}, g, stream)) return e;
  if (g.segments == 1) return cudaSuccess;
  maxPartials<T><<<blocksFor(g.outputs, kThreads, kMostBlocks), kThreads, 0, stream>>>(partial, y, g);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchReduceMaxBackward(const T *dy, const T *x, const T *y, T *dx, double *ties,
                                    const ReduceGeom &g, cudaStream_t stream) {
  if (cudaError_t e = runSegments(TieOp<T>{x, y, ties}, g, stream)) return e;
  const int64_t items = g.outputs * g.segments;
  if (g.columns)
    shareTies<1, T><<<blocksFor(items, kThreads, kMostBlocks), kThreads, 0, stream>>>(dy, x, y, dx, ties, g);
  else
    shareTies<32, T><<<blocksFor(items * 32, kThreads, kMostBlocks), kThreads, 0, stream>>>(dy, x, y, dx, ties, g);
  return cudaGetLastError();
}

#define DTNN_REDUCE_INSTANCES(T)                                                                             \
  template cudaError_t launchReduceSum<T>(const T *, T *, double *, const ReduceGeom &, cudaStream_t);       \
  template cudaError_t launchReduceMax<T>(const T *, T *, double *, const ReduceGeom &, cudaStream_t);       \
  template cudaError_t launchReduceMaxBackward<T>(const T *, const T *, const T *, T *, double *,            \
                                                  const ReduceGeom &, cudaStream_t);

DTNN_REDUCE_INSTANCES(float)
DTNN_REDUCE_INSTANCES(double)

cudaError_t launchBroadcast(const void *x, void *y, const BroadcastGeom &g, int elemBytes,
                            cudaStream_t stream) {
  switch (elemBytes) {
  case 1: return broadcastAs<uint8_t>(x, y, g, stream);
  case 4: return broadcastAs<uint32_t>(x, y, g, stream);
  case 8: return broadcastAs<uint64_t>(x, y, g, stream);
  default: return cudaErrorInvalidValue;
  }
}

cudaError_t launchFill(void *y, int64_t n, int elemBytes, uint64_t bits, cudaStream_t stream) {
  switch (elemBytes) {
  case 1: return fillAs<uint8_t>(y, n, bits, stream);
  case 4: return fillAs<uint32_t>(y, n, bits, stream);
  case 8: return fillAs<uint64_t>(y, n, bits, stream);
  default: return cudaErrorInvalidValue;
  }
}

} // namespace dtnn::cuda
