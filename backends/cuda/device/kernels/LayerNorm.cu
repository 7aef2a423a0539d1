// layernorm and layernorm_backward (see LayerNorm.h). A row is covered by a
// warp or a block whose threads each sum their own elements (j, j + step,
// ...) in order; the partial sums are combined by a butterfly within the
// warp (every lane ends with the same bits, as a + b == b + a) and, in a
// block, by adding the warps' results in warp order. Each element of a row
// is read and written by one thread only, so y may take x's storage. The
// column sums of dgamma and dbeta give each thread a column of a segment of
// rows, then each thread a column of the segments' partial sums.
#include "backends/cuda/device/kernels/LayerNorm.h"

#include <algorithm>

namespace dtnn::cuda {

namespace {

constexpr int kColumnThreads = 256;

// The sum of v over the warp, the same in every lane.
__device__ inline double warpSum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The sum of v over the block, the same in every thread: the warps' sums added in warp order.
__device__ inline double blockSum(double v) {
  __shared__ double part[32];
  v = warpSum(v);
  __syncthreads(); // every thread has read the previous sum's parts
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  double s = part[0];
  for (unsigned w = 1; w < (blockDim.x >> 5); ++w) s += part[w];
  return s;
}

// A warp per row: lane l holds elements l, l + 32, ...
struct WarpGroup {
  __device__ static int64_t firstRow() {
    return int64_t(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  }
  __device__ static int64_t rowStep() { return int64_t(gridDim.x) * (blockDim.x >> 5); }
  __device__ static int64_t first() { return threadIdx.x & 31; }
  __device__ static int64_t step() { return 32; }
  __device__ static double sum(double v) { return warpSum(v); }
};

// A block per row: thread t holds elements t, t + blockDim.x, ...
struct BlockGroup {
  __device__ static int64_t firstRow() { return blockIdx.x; }
  __device__ static int64_t rowStep() { return gridDim.x; }
  __device__ static int64_t first() { return threadIdx.x; }
  __device__ static int64_t step() { return blockDim.x; }
  __device__ static double sum(double v) { return blockSum(v); }
};

struct RowStats {
  double mean, invstd;
};

// The mean and 1 / sqrt(var + eps) of row x of `width` elements, as the reference's statsOf.
template <typename G, typename T> __device__ RowStats statsOf(const T *x, int64_t width, double eps) {
  double s = 0;
  for (int64_t j = G::first(); j < width; j += G::step()) s += double(x[j]);
  double mean = G::sum(s) / double(width), sq = 0;
  for (int64_t j = G::first(); j < width; j += G::step()) {
    double c = double(x[j]) - mean;
    sq += c * c;
  }
  return {mean, 1 / sqrt(G::sum(sq) / double(width) + eps)};
}

template <typename G, typename T>
__global__ void layerNormRows(const T *x, const T *gamma, const T *beta, T *y, LayerNormPlan p) {
  const int64_t w = p.width;
  for (int64_t r = G::firstRow(); r < p.rows; r += G::rowStep()) {
    const T *xr = x + r * w;
    T *yr = y + r * w;
    RowStats st = statsOf<G>(xr, w, p.eps);
    for (int64_t j = G::first(); j < w; j += G::step()) {
      double v = (double(xr[j]) - st.mean) * st.invstd;
      yr[j] = gamma ? T(v * double(gamma[j]) + double(beta[j])) : T(v);
    }
  }
}

template <typename G, typename T>
__global__ void layerNormBackwardRows(const T *dy, const T *x, const T *gamma, T *dx, double *stats,
                                      LayerNormPlan p) {
  const int64_t w = p.width;
  for (int64_t r = G::firstRow(); r < p.rows; r += G::rowStep()) {
    const T *xr = x + r * w, *dyr = dy + r * w;
    T *dxr = dx + r * w;
    RowStats st = statsOf<G>(xr, w, p.eps);
    if (stats && G::first() == 0) {
      stats[2 * r] = st.mean;
      stats[2 * r + 1] = st.invstd;
    }
    double sg = 0, sgx = 0;
    for (int64_t j = G::first(); j < w; j += G::step()) {
      double g = double(dyr[j]) * (gamma ? double(gamma[j]) : 1.0);
      sg += g;
      sgx += g * (double(xr[j]) - st.mean) * st.invstd;
    }
    double mg = G::sum(sg) / double(w), mgx = G::sum(sgx) / double(w);
    for (int64_t j = G::first(); j < w; j += G::step()) {
      double g = double(dyr[j]) * (gamma ? double(gamma[j]) : 1.0);
      double xhat = (double(xr[j]) - st.mean) * st.invstd;
      dxr[j] = T(st.invstd * (g - mg - xhat * mgx));
    }
  }
}

// Column j of segment blockIdx.y: partial[0, s, j] = the sum of dy (x - mean) invstd over the
// segment's rows, partial[1, s, j] that of dy.
template <typename T>
__global__ void paramGradPartials(const T *dy, const T *x, const double *stats, double *partial, int64_t rows,
                                  int64_t width, int64_t per) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, s = blockIdx.y;
  if (j >= width) return;
  const int64_t end = std::min(rows, (s + 1) * per);
  double dg = 0, db = 0;
  for (int64_t r = s * per; r < end; ++r) {
    double g = double(dy[r * width + j]);
    dg += g * (double(x[r * width + j]) - stats[2 * r]) * stats[2 * r + 1];
    db += g;
  }
  partial[s * width + j] = dg;
  partial[(gridDim.y + s) * width + j] = db;
}

// dgamma[j] and dbeta[j]: column j of the partial sums added in segment order.
template <typename T>
__global__ void paramGradFinish(const double *partial, T *dgamma, T *dbeta, int64_t width, int64_t segments) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= width) return;
  double dg = 0, db = 0;
  for (int64_t s = 0; s < segments; ++s) {
    dg += partial[s * width + j];
    db += partial[(segments + s) * width + j];
  }
  dgamma[j] = T(dg);
  dbeta[j] = T(db);
}

unsigned columnBlocks(int64_t width) { return unsigned((width + kColumnThreads - 1) / kColumnThreads); }

} // namespace

LayerNormPlan planLayerNorm(int64_t rows, int64_t width, double eps, int multiprocessors) {
  LayerNormPlan p;
  p.rows = rows;
  p.width = width;
  p.eps = eps;
  if (rows == 0 || width == 0) return p;
  // Enough blocks to fill the device several times over; the kernels stride over the rest.
  const int64_t most = int64_t(std::max(multiprocessors, 1)) * 64;
  auto blocksFor = [&](int64_t perBlock) {
    return unsigned(std::max<int64_t>(1, std::min((rows + perBlock - 1) / perBlock, most)));
  };
  if (width <= kLayerNormWarpRow) {
    p.mode = LayerNormMode::WarpRows;
    p.threads = 256;
    p.blocks = blocksFor(p.threads / 32);
  } else {
    p.mode = LayerNormMode::BlockRows;
    p.threads = width <= 4096 ? 256 : width <= 16384 ? 512 : 1024;
    p.blocks = blocksFor(1);
  }
  return p;
}

template <typename T>
cudaError_t launchLayerNorm(const T *x, const T *gamma, const T *beta, T *y, const LayerNormPlan &p,
                            cudaStream_t stream) {
  switch (p.mode) {
  case LayerNormMode::Empty: return cudaSuccess;
  case LayerNormMode::WarpRows:
    layerNormRows<WarpGroup><<<p.blocks, p.threads, 0, stream>>>(x, gamma, beta, y, p);
    return cudaGetLastError();
  case LayerNormMode::BlockRows:
    layerNormRows<BlockGroup><<<p.blocks, p.threads, 0, stream>>>(x, gamma, beta, y, p);
    return cudaGetLastError();
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t launchLayerNormBackward(const T *dy, const T *x, const T *gamma, T *dx, double *stats,
                                    const LayerNormPlan &p, cudaStream_t stream) {
  switch (p.mode) {
  case LayerNormMode::Empty: return cudaSuccess;
  case LayerNormMode::WarpRows:
    layerNormBackwardRows<WarpGroup><<<p.blocks, p.threads, 0, stream>>>(dy, x, gamma, dx, stats, p);
    return cudaGetLastError();
  case LayerNormMode::BlockRows:
    layerNormBackwardRows<BlockGroup><<<p.blocks, p.threads, 0, stream>>>(dy, x, gamma, dx, stats, p);
    return cudaGetLastError();
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t launchLayerNormParamGrads(const T *dy, const T *x, const double *stats, T *dgamma, T *dbeta,
                                      double *partial, int64_t rows, int64_t width, int64_t segments,
                                      cudaStream_t stream) {
  if (width == 0) return cudaSuccess;
  if (segments < 1 || segments > 65535) return cudaErrorInvalidValue;
  int64_t per = (rows + segments - 1) / segments;
  paramGradPartials<T><<<dim3(columnBlocks(width), unsigned(segments)), kColumnThreads, 0, stream>>>(
      dy, x, stats, partial, rows, width, per);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  paramGradFinish<T>
      <<<columnBlocks(width), kColumnThreads, 0, stream>>>(partial, dgamma, dbeta, width, segments);
  return cudaGetLastError();
}

#define DTNN_LAYERNORM_KERNELS(T)                                                                            \
  template cudaError_t launchLayerNorm<T>(const T *, const T *, const T *, T *, const LayerNormPlan &,       \
                                          cudaStream_t);                                                     \
  template cudaError_t launchLayerNormBackward<T>(const T *, const T *, const T *, T *, double *,            \
                                                  const LayerNormPlan &, cudaStream_t);                      \
  template cudaError_t launchLayerNormParamGrads<T>(const T *, const T *, const double *, T *, T *,          \
                                                    double *, int64_t, int64_t, int64_t, cudaStream_t);
DTNN_LAYERNORM_KERNELS(float)
DTNN_LAYERNORM_KERNELS(double)
#undef DTNN_LAYERNORM_KERNELS

} // namespace dtnn::cuda
