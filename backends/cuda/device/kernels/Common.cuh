// What the module's own kernels share: their launch geometry, a grid-stride loop, and arithmetic
// rounded once per operation, in float and in double (the intrinsics that
// nvcc never contracts into a fused multiply-add), for kernels that mirror
// the reference backend's order of roundings exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cuda_runtime.h>

// Element i of [0, n) for each thread of the grid, striding by the grid's size.
#define DTNN_GRID_LOOP(i, n)                                                                       \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n);                       \
       i += int64_t(gridDim.x) * blockDim.x)

namespace dtnn::cuda {

// Threads a block in the module's one-dimensional kernels.
constexpr int kThreads = 256;
// Enough blocks for several waves of the largest GPU; grid-stride loops cover the rest.
constexpr int64_t kMaxBlocks = 4096;

// Blocks for `work` items at `perBlock` a block: at least one, at most `most`.
inline unsigned blocksFor(int64_t work, int64_t perBlock = kThreads, int64_t most = kMaxBlocks) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>((work + perBlock - 1) / perBlock, most)));
}

__device__ __forceinline__ float addRn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double addRn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float subRn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double subRn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float mulRn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mulRn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float divRn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double divRn(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float sqrtRn(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double sqrtRn(double a) { return __dsqrt_rn(a); }

} // namespace dtnn::cuda
