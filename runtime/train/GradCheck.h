// Gradient checks by finite differences in double precision: the gradient rules of ops (built-in
// or a plugin's) against central differences of their kernels. A check takes a graph @f with one
// output and f64 values, appends the backward ops with the autodiff engine, runs everything on
// the reference backend, and compares each analytic gradient with central differences of
// L = sum(f(x) * dy) for a random fixed dy. `dtnnc gradcheck` runs one; the unit tests run many.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dtnn::runtime {

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

// One element whose analytic gradient differs from the numeric one by more than the tolerance.
struct GradMismatch {
  int64_t element;
  double analytic, numeric;
};

// The check of one input or parameter.
struct GradCheckResult {
  std::string name;                  // the input or parameter
  ir::TensorType type;
  int64_t checked = 0;               // elements perturbed
  double worstDifference = 0;        // largest |analytic - numeric| / (atol + rtol |numeric|)
  std::vector<GradMismatch> mismatches;
  bool ok() const { return mismatches.empty(); }
};

// Checks the gradients of graph @f of module m (changed: the backward ops are appended) with
// respect to every f64 input and trainable parameter not in opts.skip. Errors: no graph @f, not
// one output, a value no gradient reaches, a gradient of the wrong type, a kernel failure.
Expected<std::vector<GradCheckResult>> checkGradients(ir::Module &m,
                                                     const GradCheckOptions &opts = {});

} // namespace dtnn::runtime
