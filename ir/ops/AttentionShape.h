// The geometry of scaled_dot_product_attention (ir/ops/Attention.cpp) as its
// kernels walk it: the batch matrices, the sizes L, S, E and Ev, the scale,
// and where the mask element of each score lies once the mask broadcasts.
#pragma once

#include "ir/Attributes.h"
#include "ir/Types.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace dtnn::ir {

struct AttentionShape {
  int64_t batch = 1, l = 0, s = 0, e = 0, ev = 0;
  double scale = 1;
  bool causal = false;
  bool masked = false;
  // Element offset of batch matrix b's mask, and the strides of its rows and
  // columns (0 along a broadcast dimension).
  std::vector<int64_t> maskOffset;
  int64_t maskRow = 0, maskCol = 0;

  // From the types of q, k, v and the mask (if any) and the op's attributes.
  AttentionShape(const std::vector<TensorType> &qkvm, const AttrMap &attrs) {
    const TensorType &q = qkvm[0], &k = qkvm[1], &v = qkvm[2];
    size_t r = q.rank();
    for (size_t i = 0; i + 2 < r; ++i) batch *= q.dims[i];
    l = q.dims[r - 2];
    e = q.dims[r - 1];
    s = k.dims[r - 2];
    ev = v.dims[r - 1];
    double given = attrs.getFloat("scale");
    scale = given > 0 ? given : 1 / std::sqrt(double(e));
    causal = attrs.getBool("is_causal");
    if (qkvm.size() < 4) return;
    masked = true;
    std::vector<int64_t> m(r - qkvm[3].rank(), 1);
    m.insert(m.end(), qkvm[3].dims.begin(), qkvm[3].dims.end());
    maskRow = m[r - 2] == 1 ? 0 : m[r - 1];
    maskCol = m[r - 1] == 1 ? 0 : 1;
    // Batch index b of q as a mixed-radix number over q's batch dims; each
    // digit moves the mask's offset by its stride unless that dim broadcasts.
    maskOffset.assign(size_t(batch), 0);
    for (int64_t b = 0; b < batch; ++b) {
      int64_t rest = b, offset = 0, stride = m[r - 2] * m[r - 1];
      for (size_t d = r - 2; d-- > 0;) {
        int64_t index = rest % q.dims[d];
        rest /= q.dims[d];
        if (m[d] != 1) offset += index * stride;
        stride *= m[d];
      }
      maskOffset[size_t(b)] = offset;
    }
  }

  // Whether score (i, j) is masked out by causality.
  bool hidden(int64_t i, int64_t j) const { return causal && j > i; }
};

} // namespace dtnn::ir
