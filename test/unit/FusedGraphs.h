// Test graphs for fused ops: one graph @f written twice, as its ops and as
// one fused op whose region holds them, and deterministic input values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dtnn::test {

// Deterministic values in [-2, 2) for `n` elements.
std::vector<double> fusedTestValues(int64_t n, uint64_t seed);

// Graph @f over `inputs` (name and type each) whose ops are `body` (lines of
// IR over the inputs' names) and which returns `yields` (of `yieldTypes`):
// once as the ops themselves, once as one fused op whose region holds them.
struct FusedPair {
  std::string unfused, fused;
};
FusedPair fusedPair(const std::vector<std::pair<std::string, std::string>> &inputs,
                    const std::vector<std::string> &body, const std::vector<std::string> &yields,
                    const std::vector<std::string> &yieldTypes);

// The backward of a squeeze-and-excitation multiply y = h * s in element type
// `dtype` ("f32", "f64"): dh = dy * s (s broadcast over the plane) and ds = the
// sum of dy * h over the plane, with s [1,3,1,1] and h, dy [1,3,5,7].
FusedPair seBackwardPair(const std::string &dtype);

} // namespace dtnn::test
