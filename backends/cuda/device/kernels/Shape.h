// The data movement of the shape ops on the device, by bytes so that every
// element type shares one kernel per element size: rows copied between
// strided buffers (slice, concat), rows placed into zeros (slice_backward),
// and transposes of any permutation (a shared-memory tiled transpose when
// the innermost dimension moves, a gather of contiguous rows when it stays).
// Each launcher moves the widest unit (up to 16 bytes) that the sizes and the
// pointers' alignment allow.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// `rows` rows of `width` bytes: row r is read at src + r * srcPitch + srcOffset and written at
// dst + r * dstPitch + dstOffset (all in bytes).
struct RowCopy {
  int64_t rows = 0, width = 0;
  int64_t srcPitch = 0, dstPitch = 0;
  int64_t srcOffset = 0, dstOffset = 0;
};

// Copies the rows of `c`; one contiguous copy when the rows follow each other on both sides.
cudaError_t launchCopyRows(const void *src, void *dst, const RowCopy &c, cudaStream_t stream);
// Writes every byte of the rows of dstPitch bytes at dst: the rows of `c` where they go, zeros
// elsewhere (`c.dstOffset + c.width <= c.dstPitch`).
cudaError_t launchPadRows(const void *src, void *dst, const RowCopy &c, cudaStream_t stream);

// The most dimensions a transpose takes.
constexpr int kMaxTransposeRank = 16;

// A transpose of a row-major input of dimensions dims[0..rank) whose result dimension i is input
// dimension perm[i], with elements of elemBytes (1, 2, 4 or 8) bytes. The launcher expects the
// dimensions merged (no dimension of size 1, no two input dimensions adjacent in the result
// that are adjacent in the input), so that rank <= 1 is a plain copy.
struct TransposeGeom {
  int rank = 0;
  int64_t dims[kMaxTransposeRank] = {};
  int perm[kMaxTransposeRank] = {};
  int64_t elemBytes = 4;
};

// Transposes `src` into `dst` (which must not overlap).
cudaError_t launchTranspose(const void *src, void *dst, const TransposeGeom &g, cudaStream_t stream);

} // namespace dtnn::cuda
