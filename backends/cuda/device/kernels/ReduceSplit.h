// How the cuda backend's reductions split their work, a rule on sizes alone
// that the planning (which reserves the workspace of the partial results)
// and the device kernels share: the Reduce family's reduce_sum, reduce_max
// and reduce_max_backward, and the Loss family's sums over all elements.
// Each of `outputs` results combines `count` elements; those are cut into
// segments of `length` consecutive elements (in the row-major order of the
// reduced dimensions), each combined by its own group of lanes (a warp, or
// one thread) into a partial result in the workspace, and a second kernel
// combines each output's partials in segment order. The split depends on
// the sizes only, so every run combines the same elements in the same order.
// This header is plain C++: the planning, which has no CUDA, includes it.
#pragma once

#include "backends/reference/Reduction.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dtnn::cuda {

// The lanes a reduction aims to keep busy: about half of what an H100 holds at once.
constexpr int64_t kReduceLanes = 131072;
// The fewest elements each lane of a segment combines.
constexpr int64_t kReduceLaneElements = 64;
// The most merged dimensions of each kind (kept, reduced) a reduction takes.
constexpr int kMaxReduceDims = 8;

// The segments of `count` elements reduced into each of `outputs` results by groups of `group`
// lanes: as many as fill kReduceLanes lanes, none shorter than kReduceLaneElements per lane.
struct ReduceSplit {
  int64_t segments = 1, length = 1;
};

inline ReduceSplit splitReduce(int64_t outputs, int64_t count, int64_t group) {
  int64_t items = std::max<int64_t>(1, kReduceLanes / group);
  int64_t most = std::max<int64_t>(1, (items + outputs - 1) / std::max<int64_t>(outputs, 1));
  ReduceSplit s;
  s.length = std::max(group * kReduceLaneElements, (count + most - 1) / most);
  s.segments = std::max<int64_t>(1, (count + s.length - 1) / s.length);
  return s;
}

// The split of a sum over all of n elements (the elementwise losses): a warp per segment.
inline ReduceSplit elementSplit(int64_t n) { return splitReduce(1, n, 32); }

// x reduced to y (the reduced dimensions of size 1 in y), as the reference splits it
// (backends/reference/Reduction.h): x's dimensions of size 1 dropped and neighbours of the same
// kind merged, each list outermost first with the strides of x. Columns: the innermost
// dimension is kept, so a thread takes each segment and neighbouring threads neighbouring
// outputs; otherwise a warp takes each segment, its lanes reading neighbouring elements.
struct ReduceGeom {
  int keptRank = 0, reducedRank = 0;
  int64_t keptSize[kMaxReduceDims] = {}, keptStride[kMaxReduceDims] = {};
  int64_t reducedSize[kMaxReduceDims] = {}, reducedStride[kMaxReduceDims] = {};
  int64_t outputs = 1, count = 1;
  bool columns = false;
  int64_t segments = 1, length = 1;

  // The lanes of a segment.
  int64_t group() const { return columns ? 1 : 32; }
  // The bytes of the partial results (one double per output and segment).
  uint64_t partialBytes() const { return uint64_t(outputs) * uint64_t(segments) * 8; }
};

// The geometry of x (dimensions `x`) reduced to `y`, or false in `fits` when a list of merged
// dimensions is longer than kMaxReduceDims.
inline ReduceGeom reduceGeom(const std::vector<int64_t> &x, const std::vector<int64_t> &y, bool *fits) {
  ReduceGeom g;
  *fits = true;
  std::vector<reference::ReduceDim> dims = reference::planReduce(x, y);
  for (const reference::ReduceDim &d : dims) {
    int &rank = d.reduced ? g.reducedRank : g.keptRank;
    if (rank == kMaxReduceDims) {
      *fits = false;
      return g;
    }
    (d.reduced ? g.reducedSize : g.keptSize)[rank] = d.size;
    (d.reduced ? g.reducedStride : g.keptStride)[rank] = d.stride;
    ++rank;
    (d.reduced ? g.count : g.outputs) *= d.size;
  }
  g.columns = !dims.empty() && !dims.back().reduced;
  ReduceSplit s = splitReduce(g.outputs, g.count, g.group());
  g.segments = s.segments;
  g.length = s.length;
  return g;
}

} // namespace dtnn::cuda
