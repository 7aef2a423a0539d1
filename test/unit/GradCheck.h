// Gradient checks by finite differences in double precision. A check takes
// IR text with f64 types that defines graph @f (one output), appends the
// backward ops with the autodiff engine, runs everything on the reference
// backend, and compares each analytic gradient with central differences of
// L = sum(f(x) * dy) for a random fixed dy.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dtnn::test {

struct GradCheckOptions {
  // Random inputs and parameters are drawn uniformly from [lo, hi] ...
  double lo = -1, hi = 1;
  // ... unless a range is given for that input or parameter by name.
  std::map<std::string, std::pair<double, double>> ranges;
  // Integer inputs (labels) are drawn from [0, classes).
  int64_t classes = 2;
  // Inputs or parameters whose gradients are not checked (labels, targets).
  std::vector<std::string> skip;
  double step = 1e-6;
  double rtol = 1e-5, atol = 1e-7;
  // At most this many elements of each tensor are perturbed.
  int maxElements = 64;
  uint64_t seed = 1;
};

// Runs the check with GoogleTest assertions; every float input and every
// trainable parameter (not buffers) not in opts.skip must get a gradient.
void expectGradientsMatch(const std::string &irText, const GradCheckOptions &opts = {});

} // namespace dtnn::test
