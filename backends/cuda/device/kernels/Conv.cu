// The convolutions' own kernels (see Conv.h): grid-stride loops over the
// elements, the activations written as backends/reference/FusedActivation.h
// writes them, and the bias gradient summed per segment by a fixed tree.
#include "backends/cuda/device/kernels/Conv.h"
#include "backends/cuda/device/kernels/Common.cuh"

#include <climits>

namespace dtnn::cuda {

namespace {


// The reference's activations: relu passes only x > 0 (NaN gives 0), relu6 is
// min(max(x, 0), 6) with std::max's and std::min's comparisons (NaN stays NaN).
template <ConvAct A> __device__ __forceinline__ float activate(float v) {
  if constexpr (A == ConvAct::Relu) {
    return v > 0.f ? v : 0.f;
  } else if constexpr (A == ConvAct::Relu6) {
    float m = v < 0.f ? 0.f : v;
    return 6.f < m ? 6.f : m;
  } else if constexpr (A == ConvAct::Sigmoid) {
    return 1.f / (1.f + expf(-v));
  } else if constexpr (A == ConvAct::Tanh) {
    return tanhf(v);
  } else {
    return v;
  }
}

// One element a thread: the bias of its channel, then the residual, then the activation.
template <ConvAct A, typename I>
__global__ void convEpilogue(float *y, const float *bias, const float *residual, I total, I plane,
                             I channels) {
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < total; i += I(gridDim.x) * I(blockDim.x)) {
    float v = y[i];
    if (bias) v += bias[(i / plane) % channels];
    if (residual) v += residual[i];
    y[i] = activate<A>(v);
  }
}

// The same four elements a thread, where a plane holds a multiple of 4 (so the four share a
// channel) and the buffers are 16-byte aligned.
template <ConvAct A, typename I>
__global__ void convEpilogue4(float4 *y, const float *bias, const float4 *residual, I total4, I plane4,
                              I channels) {
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < total4; i += I(gridDim.x) * I(blockDim.x)) {
    float4 v = y[i];
    if (bias) {
      float b = bias[(i / plane4) % channels];
      v.x += b, v.y += b, v.z += b, v.w += b;
    }
    if (residual) {
      float4 r = residual[i];
      v.x += r.x, v.y += r.y, v.z += r.z, v.w += r.w;
    }
    v.x = activate<A>(v.x), v.y = activate<A>(v.y), v.z = activate<A>(v.z), v.w = activate<A>(v.w);
    y[i] = v;
  }
}

template <ConvAct A, typename I>
void launchEpilogueAs(float *y, const float *bias, const float *residual, int64_t total, int64_t plane,
                      int64_t channels, cudaStream_t stream) {
  bool aligned = reinterpret_cast<uintptr_t>(y) % 16 == 0 && reinterpret_cast<uintptr_t>(residual) % 16 == 0;
  if (plane % 4 == 0 && aligned) {
    int64_t total4 = total / 4;
    convEpilogue4<A, I><<<blocksFor(total4), kThreads, 0, stream>>>(
        reinterpret_cast<float4 *>(y), bias, reinterpret_cast<const float4 *>(residual), I(total4),
        I(plane / 4), I(channels));
  } else {
    convEpilogue<A, I>
        <<<blocksFor(total), kThreads, 0, stream>>>(y, bias, residual, I(total), I(plane), I(channels));
  }
}

// 32-bit indices where the loops' indices cannot pass 2^32.
template <ConvAct A>
void launchEpilogue(float *y, const float *bias, const float *residual, int64_t total, int64_t plane,
                    int64_t channels, cudaStream_t stream) {
  if (total < (int64_t(1) << 31))
    launchEpilogueAs<A, uint32_t>(y, bias, residual, total, plane, channels, stream);
  else
    launchEpilogueAs<A, uint64_t>(y, bias, residual, total, plane, channels, stream);
}

__global__ void windowCopy(float *dst, const float *src, int64_t total, int64_t dstH, int64_t dstW,
                           int64_t srcH, int64_t srcW, int64_t offH, int64_t offW) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t j = i % dstW, t = i / dstW;
    int64_t r = t % dstH, p = t / dstH;
    int64_t si = r + offH, sj = j + offW;
    dst[i] = si >= 0 && si < srcH && sj >= 0 && sj < srcW ? src[(p * srcH + si) * srcW + sj] : 0.f;
  }
}

// The sum of v over the block (a multiple of 32 threads), in thread 0: each warp by shuffles,
// then the warps' sums by the first warp, always in the same order.
__device__ float blockSum(float v) {
  __shared__ float warps[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warps[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x >> 5) ? warps[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;
}

// Block (c, s) sums segment s of channel c: the images of range s / planeParts and, in each,
// the part s % planeParts of the plane; out[c * segments + s].
__global__ void biasGradPartial(const float *dy, float *out, int64_t n, int64_t channels, int64_t plane,
                                int64_t images, int64_t planeParts) {
  int64_t c = blockIdx.x, s = blockIdx.y;
  int64_t a = s / planeParts, b = s % planeParts;
  int64_t n0 = a * n / images, n1 = (a + 1) * n / images;
  int64_t q0 = b * plane / planeParts, q1 = (b + 1) * plane / planeParts;
  int64_t len = q1 - q0, count = (n1 - n0) * len;
  const float *first = dy + (n0 * channels + c) * plane + q0;
  int64_t imageStride = channels * plane;
  float acc = 0.f;
  if (len >= int64_t(blockDim.x) || count > int64_t(UINT_MAX)) {
    for (int64_t img = 0; img < n1 - n0; ++img) {
      const float *p = first + img * imageStride;
      for (int64_t q = threadIdx.x; q < len; q += blockDim.x) acc += p[q];
    }
  } else {
    // Short plane parts: the threads run over (image, position) pairs together.
    unsigned ulen = unsigned(len), ucount = unsigned(count);
    for (unsigned j = threadIdx.x; j < ucount; j += blockDim.x)
      acc += first[int64_t(j / ulen) * imageStride + j % ulen];
  }
  acc = blockSum(acc);
  if (threadIdx.x == 0) out[c * int64_t(gridDim.y) + s] = acc;
}

// db[c] = the channel's segments added in order.
__global__ void sumSegments(const float *partial, float *db, int64_t channels, int64_t segments) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < channels;
       c += int64_t(gridDim.x) * blockDim.x) {
    const float *p = partial + c * segments;
    float s = 0.f;
    for (int64_t i = 0; i < segments; ++i) s += p[i];
    db[c] = s;
  }
}

} // namespace

cudaError_t launchConvEpilogue(float *y, const float *bias, const float *residual, int64_t total,
                               int64_t plane, int64_t channels, ConvAct act, cudaStream_t stream) {
  if (total == 0) return cudaSuccess;
  switch (act) {
  case ConvAct::None: launchEpilogue<ConvAct::None>(y, bias, residual, total, plane, channels, stream); break;
  case ConvAct::Relu: launchEpilogue<ConvAct::Relu>(y, bias, residual, total, plane, channels, stream); break;
  case ConvAct::Relu6:
    launchEpilogue<ConvAct::Relu6>(y, bias, residual, total, plane, channels, stream);
    break;
  case ConvAct::Sigmoid:
    launchEpilogue<ConvAct::Sigmoid>(y, bias, residual, total, plane, channels, stream);
    break;
  case ConvAct::Tanh: launchEpilogue<ConvAct::Tanh>(y, bias, residual, total, plane, channels, stream); break;
  }
  return cudaGetLastError();
}

cudaError_t launchWindowCopy(float *dst, const float *src, int64_t planes, int64_t dstH, int64_t dstW,
                             int64_t srcH, int64_t srcW, int64_t offH, int64_t offW, cudaStream_t stream) {
  int64_t total = planes * dstH * dstW;
  if (total == 0) return cudaSuccess;
  windowCopy<<<blocksFor(total), kThreads, 0, stream>>>(dst, src, total, dstH, dstW, srcH, srcW, offH, offW);
  return cudaGetLastError();
}

cudaError_t launchBiasGrad(const float *dy, float *db, float *partial, int64_t n, int64_t channels,
                           int64_t plane, cudaStream_t stream) {
  if (channels == 0) return cudaSuccess;
  BiasGradSplit split = biasGradSplit(n, plane);
  int64_t segments = split.segments();
  dim3 grid{unsigned(channels), unsigned(segments)};
  float *out = segments == 1 ? db : partial;
  biasGradPartial<<<grid, kThreads, 0, stream>>>(dy, out, n, channels, plane, split.images, split.planeParts);
  if (segments == 1) return cudaGetLastError();
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  sumSegments<<<blocksFor(channels), kThreads, 0, stream>>>(partial, db, channels, segments);
  return cudaGetLastError();
}

} // namespace dtnn::cuda
