// The shape ops' data movement (see Shape.h): grid-stride kernels over
// units of 1 to 16 bytes, with 32-bit index arithmetic where every index
// fits and 64-bit otherwise.
#include "backends/cuda/device/kernels/Shape.h"
#include "backends/cuda/device/kernels/Common.cuh"

#include <algorithm>

namespace dtnn::cuda {

namespace {

// The most blocks of this family's kernels; their grid-stride loops cover the rest.
constexpr int64_t kMostBlocks = 8192;
// 32-bit indices when every index, plus a grid's stride, stays below 2^32.
constexpr int64_t kMax32 = int64_t(1) << 31;

// The widest unit (16, 8, 4, 2 or 1 bytes) dividing every value of `bits` (sizes and addresses
// or'ed together).
int64_t unitOf(uint64_t bits) {
  if (bits == 0) return 16;
  return int64_t(std::min<uint64_t>(16, bits & (~bits + 1)));
}

uint64_t addressBits(const void *p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }

// Runs Op<V>::run(args...) with V the unsigned type of `unit` bytes (16, 8, 4, 2 or 1).
template <template <typename> class Op, typename... A> cudaError_t byUnit(int64_t unit, A &&...args) {
  switch (unit) {
  case 16: return Op<uint4>::run(args...);
  case 8: return Op<uint2>::run(args...);
  case 4: return Op<unsigned int>::run(args...);
  case 2: return Op<unsigned short>::run(args...);
  default: return Op<unsigned char>::run(args...);
  }
}

// RowCopy in units.
struct Rows {
  int64_t rows, width, srcPitch, dstPitch, srcOffset, dstOffset;
};

Rows inUnits(const RowCopy &c, int64_t unit) {
  return {c.rows, c.width / unit, c.srcPitch / unit, c.dstPitch / unit, c.srcOffset / unit,
          c.dstOffset / unit};
}

template <typename V, typename I> __global__ void copyRows(const V *__restrict__ src, V *__restrict__ dst, Rows g) {
  I w = I(g.width), sp = I(g.srcPitch), dp = I(g.dstPitch), so = I(g.srcOffset), dof = I(g.dstOffset);
  I total = I(g.rows) * w;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += I(gridDim.x) * blockDim.x) {
    I r = i / w, j = i - r * w;
    dst[r * dp + dof + j] = src[r * sp + so + j];
  }
}

// Every unit of the destination rows: the source row's unit inside [dstOffset, dstOffset +
// width), zero outside.
template <typename V, typename I> __global__ void padRows(const V *__restrict__ src, V *__restrict__ dst, Rows g) {
  I w = I(g.width), sp = I(g.srcPitch), dp = I(g.dstPitch), so = I(g.srcOffset), dof = I(g.dstOffset);
  I total = I(g.rows) * dp;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += I(gridDim.x) * blockDim.x) {
    I r = i / dp, j = i - r * dp;
    V v = V();
    if (j >= dof && j < dof + w) v = src[r * sp + so + (j - dof)];
    dst[i] = v;
  }
}

// The outer dimensions of a gather of contiguous rows: result row r (row-major over size[0..rank))
// starts at unit sum_k index_k * stride[k] of the source; each row holds `inner` units.
struct Gather {
  int rank = 0;
  int64_t size[kMaxTransposeRank] = {}, stride[kMaxTransposeRank] = {};
  int64_t inner = 1, total = 0;
};

template <typename V, typename I> __global__ void gatherRows(const V *__restrict__ src, V *__restrict__ dst, Gather g) {
  I total = I(g.total), inner = I(g.inner);
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += I(gridDim.x) * blockDim.x) {
    I row = i / inner;
    I off = i - row * inner;
    for (int k = g.rank - 1; k > 0; --k) {
      I s = I(g.size[k]), q = row / s;
      off += (row - q * s) * I(g.stride[k]);
      row = q;
    }
    if (g.rank > 0) off += row * I(g.stride[0]);
    dst[i] = src[off];
  }
}

constexpr int kTile = 32, kTileRows = 8;

// A transpose moving the innermost input dimension A: tiles of kTile x kTile over A and B (the
// input dimension that becomes the innermost result dimension), read along A and written along
// B; the other dimensions index the tiles' bases.
struct Tiles {
  int64_t dimA = 1, dimB = 1, inStrideB = 1, outStrideA = 1;
  int outerRank = 0;
  int64_t outerSize[kMaxTransposeRank] = {}, outerIn[kMaxTransposeRank] = {},
          outerOut[kMaxTransposeRank] = {};
  int64_t tilesA = 1, tilesB = 1, tiles = 0;
};

template <typename E> __global__ void transposeTiles(const E *__restrict__ src, E *__restrict__ dst, Tiles g) {
  __shared__ E tile[kTile][kTile + 1];
  for (int64_t t = blockIdx.x; t < g.tiles; t += gridDim.x) {
    int64_t ta = t % g.tilesA, rest = t / g.tilesA;
    int64_t tb = rest % g.tilesB, o = rest / g.tilesB;
    int64_t inBase = 0, outBase = 0;
    for (int k = g.outerRank - 1; k >= 0; --k) {
      int64_t s = g.outerSize[k], q = o / s, idx = o - q * s;
      inBase += idx * g.outerIn[k];
      outBase += idx * g.outerOut[k];
      o = q;
    }
    int64_t a0 = ta * kTile, b0 = tb * kTile;
    int64_t a = a0 + threadIdx.x;
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      int64_t b = b0 + j;
      if (a < g.dimA && b < g.dimB) tile[j][threadIdx.x] = src[inBase + b * g.inStrideB + a];
    }
    __syncthreads();
    int64_t b = b0 + threadIdx.x;
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      int64_t aj = a0 + j;
      if (aj < g.dimA && b < g.dimB) dst[outBase + aj * g.outStrideA + b] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
}

// Launches of each kernel at unit type V (byUnit's operations).
template <typename V> struct CopyRowsAs {
  static cudaError_t run(const void *src, void *dst, const Rows &g, bool small, cudaStream_t stream) {
    auto *s = static_cast<const V *>(src);
    auto *d = static_cast<V *>(dst);
    unsigned blocks = blocksFor(g.rows * g.width, kThreads, kMostBlocks);
    if (small)
      copyRows<V, uint32_t><<<blocks, kThreads, 0, stream>>>(s, d, g);
    else
      copyRows<V, uint64_t><<<blocks, kThreads, 0, stream>>>(s, d, g);
    return cudaGetLastError();
  }
};

template <typename V> struct PadRowsAs {
  static cudaError_t run(const void *src, void *dst, const Rows &g, bool small, cudaStream_t stream) {
    auto *s = static_cast<const V *>(src);
    auto *d = static_cast<V *>(dst);
    unsigned blocks = blocksFor(g.rows * g.dstPitch, kThreads, kMostBlocks);
    if (small)
      padRows<V, uint32_t><<<blocks, kThreads, 0, stream>>>(s, d, g);
    else
      padRows<V, uint64_t><<<blocks, kThreads, 0, stream>>>(s, d, g);
    return cudaGetLastError();
  }
};

template <typename V> struct GatherRowsAs {
  static cudaError_t run(const void *src, void *dst, const Gather &g, bool small, cudaStream_t stream) {
    auto *s = static_cast<const V *>(src);
    auto *d = static_cast<V *>(dst);
    if (small)
      gatherRows<V, uint32_t><<<blocksFor(g.total, kThreads, kMostBlocks), kThreads, 0, stream>>>(s, d, g);
    else
      gatherRows<V, uint64_t><<<blocksFor(g.total, kThreads, kMostBlocks), kThreads, 0, stream>>>(s, d, g);
    return cudaGetLastError();
  }
};

template <typename E> struct TilesAs {
  static cudaError_t run(const void *src, void *dst, const Tiles &g, cudaStream_t stream) {
    unsigned grid = unsigned(std::min<int64_t>(g.tiles, int64_t(1) << 20));
    transposeTiles<E><<<grid, dim3(kTile, kTileRows), 0, stream>>>(static_cast<const E *>(src),
                                                                    static_cast<E *>(dst), g);
    return cudaGetLastError();
  }
};

// The merged transpose as a gather of rows: the innermost dimension stays innermost.
cudaError_t gatherTranspose(const void *src, void *dst, const TransposeGeom &g, const int64_t *inStride,
                            int64_t elements, cudaStream_t stream) {
  int r = g.rank;
  int64_t rowBytes = g.dims[r - 1] * g.elemBytes;
  int64_t unit = unitOf(uint64_t(rowBytes) | addressBits(src) | addressBits(dst));
  Gather h;
  h.rank = r - 1;
  for (int i = 0; i + 1 < r; ++i) {
    h.size[i] = g.dims[g.perm[i]];
    h.stride[i] = inStride[g.perm[i]] * g.elemBytes / unit;
  }
  h.inner = rowBytes / unit;
  h.total = elements * g.elemBytes / unit;
  return byUnit<GatherRowsAs>(unit, src, dst, h, h.total < kMax32, stream);
}

// The merged transpose by tiles: the innermost dimension moves.
cudaError_t tiledTranspose(const void *src, void *dst, const TransposeGeom &g, const int64_t *inStride,
                           cudaStream_t stream) {
  int r = g.rank;
  int inv[kMaxTransposeRank], a = r - 1, b = g.perm[r - 1];
  int64_t outStride[kMaxTransposeRank];
  outStride[r - 1] = 1;
  for (int i = r - 1; i-- > 0;) outStride[i] = outStride[i + 1] * g.dims[g.perm[i + 1]];
  for (int i = 0; i < r; ++i) inv[g.perm[i]] = i;
  Tiles t;
  t.dimA = g.dims[a];
  t.dimB = g.dims[b];
  t.inStrideB = inStride[b];
  t.outStrideA = outStride[inv[a]];
  int64_t outer = 1;
  for (int k = 0; k < r; ++k) {
    if (k == a || k == b) continue;
    t.outerSize[t.outerRank] = g.dims[k];
    t.outerIn[t.outerRank] = inStride[k];
    t.outerOut[t.outerRank] = outStride[inv[k]];
    outer *= g.dims[k];
    ++t.outerRank;
  }
  t.tilesA = (t.dimA + kTile - 1) / kTile;
  t.tilesB = (t.dimB + kTile - 1) / kTile;
  t.tiles = t.tilesA * t.tilesB * outer;
  return byUnit<TilesAs>(g.elemBytes, src, dst, t, stream);
}

// The or of a row copy's sizes and pointers, whose lowest bit bounds the unit.
uint64_t rowBits(const void *src, const void *dst, const RowCopy &c) {
  return uint64_t(c.width | c.srcPitch | c.dstPitch | c.srcOffset | c.dstOffset) | addressBits(src) |
         addressBits(dst);
}

} // namespace

cudaError_t launchCopyRows(const void *src, void *dst, const RowCopy &c, cudaStream_t stream) {
  if (c.rows == 0 || c.width == 0) return cudaSuccess;
  if (c.rows == 1 || (c.width == c.srcPitch && c.width == c.dstPitch))
    return cudaMemcpyAsync(static_cast<char *>(dst) + c.dstOffset, static_cast<const char *>(src) + c.srcOffset,
                           size_t(c.rows * c.width), cudaMemcpyDeviceToDevice, stream);
  int64_t unit = unitOf(rowBits(src, dst, c));
  Rows g = inUnits(c, unit);
  bool small = std::max({g.rows * g.width, g.rows * g.srcPitch, g.rows * g.dstPitch}) < kMax32;
  return byUnit<CopyRowsAs>(unit, src, dst, g, small, stream);
}

cudaError_t launchPadRows(const void *src, void *dst, const RowCopy &c, cudaStream_t stream) {
  if (c.rows == 0 || c.dstPitch == 0) return cudaSuccess;
  int64_t unit = unitOf(rowBits(src, dst, c));
  Rows g = inUnits(c, unit);
  bool small = std::max(g.rows * g.dstPitch, g.rows * g.srcPitch) < kMax32;
  return byUnit<PadRowsAs>(unit, src, dst, g, small, stream);
}

cudaError_t launchTranspose(const void *src, void *dst, const TransposeGeom &g, cudaStream_t stream) {
  int64_t elements = 1;
  for (int k = 0; k < g.rank; ++k) elements *= g.dims[k];
  if (elements == 0) return cudaSuccess;
  if (g.rank <= 1)
    return cudaMemcpyAsync(dst, src, size_t(elements * g.elemBytes), cudaMemcpyDeviceToDevice, stream);
  int64_t inStride[kMaxTransposeRank];
  inStride[g.rank - 1] = 1;
  for (int k = g.rank - 1; k-- > 0;) inStride[k] = inStride[k + 1] * g.dims[k + 1];
  if (g.perm[g.rank - 1] == g.rank - 1) return gatherTranspose(src, dst, g, inStride, elements, stream);
  return tiledTranspose(src, dst, g, inStride, stream);
}

} // namespace dtnn::cuda
