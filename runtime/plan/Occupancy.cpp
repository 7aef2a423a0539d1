// Algorithm: a segment tree over the steps. Adding a block inserts its range
// into `whole_` of each node of the exact cover of its life (O(log steps)
// nodes) and into `within_` of those nodes and all their ancestors; range
// maps merge what overlaps or touches. A query gathers `within_` of the
// nodes of its own cover (blocks that live somewhere inside it) and `whole_`
// of their proper ancestors (blocks whose lives contain a node of it), then
// sorts and merges. A query costs O(log steps) nodes times the ranges they
// hold, which stays small when the arena is packed; the result is exactly
// what comparing with every block would give.
#include "runtime/plan/Occupancy.h"

#include <algorithm>
#include <cassert>

namespace dtnn::runtime {

Occupancy::Occupancy(int lastStep) : leaves_(1) {
  while (leaves_ <= static_cast<size_t>(std::max(lastStep, 0))) leaves_ *= 2;
  whole_.resize(2 * leaves_);
  within_.resize(2 * leaves_);
}

void Occupancy::insert(RangeMap &ranges, uint64_t start, uint64_t end) {
  auto it = ranges.upper_bound(start);
  if (it != ranges.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= start) {
      start = prev->first;
      end = std::max(end, prev->second);
      ranges.erase(prev);
    }
  }
  while (it != ranges.end() && it->first <= end) {
    end = std::max(end, it->second);
    it = ranges.erase(it);
  }
  ranges.emplace_hint(it, start, end);
}

std::vector<size_t> Occupancy::cover(int begin, int end) const {
  assert(begin >= 0 && begin <= end && static_cast<size_t>(end) < leaves_ && "steps out of range");
  std::vector<size_t> nodes;
  for (size_t l = begin + leaves_, r = end + 1 + leaves_; l < r; l /= 2, r /= 2) {
    if (l & 1) nodes.push_back(l++);
    if (r & 1) nodes.push_back(--r);
  }
  return nodes;
}

namespace {

// The proper ancestors of `nodes` in the segment tree, each once.
std::vector<size_t> ancestors(const std::vector<size_t> &nodes) {
  std::vector<size_t> up;
  for (size_t n : nodes)
    for (size_t a = n / 2; a >= 1; a /= 2) up.push_back(a);
  std::sort(up.begin(), up.end());
  up.erase(std::unique(up.begin(), up.end()), up.end());
  return up;
}

} // namespace

void Occupancy::add(int begin, int end, uint64_t offset, uint64_t size) {
  std::vector<size_t> nodes = cover(begin, end);
  for (size_t n : nodes) {
    insert(whole_[n], offset, offset + size);
    insert(within_[n], offset, offset + size);
  }
  for (size_t a : ancestors(nodes)) insert(within_[a], offset, offset + size);
}

Occupancy::Ranges Occupancy::takenDuring(int begin, int end) const {
  std::vector<size_t> nodes = cover(begin, end);
  Ranges all;
  for (size_t n : nodes) all.insert(all.end(), within_[n].begin(), within_[n].end());
  for (size_t a : ancestors(nodes)) all.insert(all.end(), whole_[a].begin(), whole_[a].end());
  std::sort(all.begin(), all.end());
  Ranges merged;
  for (const auto &[start, stop] : all) {
    if (!merged.empty() && start <= merged.back().second)
      merged.back().second = std::max(merged.back().second, stop);
    else
      merged.push_back({start, stop});
  }
  return merged;
}

} // namespace dtnn::runtime
