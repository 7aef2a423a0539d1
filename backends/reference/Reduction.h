// The dimensions of a reduction of x to a smaller type (sum_like, reduce_sum,
// reduce_max): which dimensions are summed away, merged where neighbours
// agree, and the offset in x of an index over some of them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dtnn::reference {

// One dimension of x in a reduction: its size, element stride, and whether
// the target type sums it away.
struct ReduceDim {
  int64_t size, stride;
  bool reduced;
};

// The dimensions of x (rank n) reducing to `like`, with size-1 dimensions
// dropped and neighbours of the same kind merged.
inline std::vector<ReduceDim> planReduce(const std::vector<int64_t> &x,
                                         const std::vector<int64_t> &like) {
  size_t lead = x.size() - like.size();
  std::vector<ReduceDim> out;
  int64_t stride = 1;
  for (size_t i = x.size(); i-- > 0;) {
    int64_t d = x[i];
    bool reduced = i < lead || like[i - lead] == 1;
    if (d != 1) {
      if (!out.empty() && out.back().reduced == reduced)
        out.back().size *= d;
      else
        out.push_back({d, stride, reduced});
    }
    stride *= d;
  }
  std::reverse(out.begin(), out.end());
  // Merged runs keep the stride of their innermost member.
  return out;
}

// Offset in x of index `idx` (row-major over dims).
inline int64_t offsetOf(int64_t idx, const std::vector<ReduceDim> &dims) {
  int64_t off = 0;
  for (size_t d = dims.size(); d-- > 0;) {
    off += (idx % dims[d].size) * dims[d].stride;
    idx /= dims[d].size;
  }
  return off;
}

} // namespace dtnn::reference
