// The encodings on the device, as backends/reference/Encoding.cpp computes
// them: one_hot rows, normalize's (v / 255 - mean[c]) / std[c] of u8 images
// in the result's type with the reference's roundings, embedding's row
// lookups (a row of NaN for an index outside the table) and
// embedding_backward, whose table rows are each summed by one block in
// token order, as the reference adds them: no atomics, the same bits on
// every run. Instantiated for float and double.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// out [n, classes] = 1 at (i, label[i]) and 0 elsewhere; a row of zeros for a label outside
// [0, classes).
template <typename T>
cudaError_t launchOneHot(const int32_t *label, T *out, int64_t n, int64_t classes, cudaStream_t stream);

// The most channels normalize takes its own mean and std for.
constexpr int kNormalizeChannels = 16;

// normalize's statistics in the result's type: one mean and std for every channel (count 1) or
// one per channel (count == the images' channels).
template <typename T> struct NormalizeStats {
  int count = 1;
  T mean[kNormalizeChannels];
  T std[kNormalizeChannels];
};

// y = (T(x) / 255 - mean[c]) / std[c] over u8 images [n, channels, plane...], `rows` = n *
// channels planes of `plane` elements, each rounding as the reference's.
template <typename T>
cudaError_t launchNormalize(const uint8_t *x, T *y, int64_t rows, int64_t channels, int64_t plane,
                            const NormalizeStats<T> &stats, cudaStream_t stream);

// y [tokens, d] = the rows w [v, d] that idx [tokens] names, NaN rows for indices outside
// [0, v).
template <typename T>
cudaError_t launchEmbedding(const int32_t *idx, const T *w, T *y, int64_t tokens, int64_t v, int64_t d,
                            cudaStream_t stream);

// dw [v, d] = for each row r, the sum of the rows dy [tokens, d] of the tokens t with idx[t] == r,
// added to zero in token order; the row `pad` (-1: none) and indices outside [0, v) take
// nothing. Each block owns a range of rows and finds its tokens by scanning idx.
template <typename T>
cudaError_t launchEmbeddingBackward(const T *dy, const int32_t *idx, T *dw, int64_t tokens, int64_t v,
                                    int64_t d, int64_t pad, cudaStream_t stream);

} // namespace dtnn::cuda
