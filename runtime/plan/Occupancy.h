// Which arena offsets the blocks placed so far take, over the steps of a
// schedule: the data structure of best-fit buffer placement (Buffers.cpp),
// which asks, for each new block, what the blocks whose lives overlap its
// own take. Comparing the new block with every block placed before it made
// placement quadratic in the number of steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace dtnn::runtime {

class Occupancy {
public:
  // Offset ranges [start, end), sorted, disjoint and not touching.
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

  // An empty arena over steps 0 to `lastStep`, inclusive.
  explicit Occupancy(int lastStep);

  // Records that [offset, offset + size) is taken from step `begin` to step
  // `end`, inclusive.
  void add(int begin, int end, uint64_t offset, uint64_t size);

  // The offsets taken at some step from `begin` to `end`, inclusive.
  Ranges takenDuring(int begin, int end) const;

private:
  // Disjoint ranges, start -> end, touching ones merged.
  using RangeMap = std::map<uint64_t, uint64_t>;
  static void insert(RangeMap &ranges, uint64_t start, uint64_t end);
  // The nodes of the segment tree that exactly cover steps [begin, end].
  std::vector<size_t> cover(int begin, int end) const;

  size_t leaves_; // a power of two above the last step
  // Per node of a segment tree over steps (node 1 is the root, node i has
  // children 2i and 2i+1): what the blocks take whose lives this node is one
  // of the exact cover of, and what the blocks take that have such a node in
  // its subtree. A block overlaps a range of steps exactly when one of its
  // nodes is below a node of the range's cover, or is above one.
  std::vector<RangeMap> whole_, within_;
};

} // namespace dtnn::runtime
