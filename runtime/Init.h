// Parameter initializers. Each parameter draws from its own random stream,
// derived from the run's seed and a hash of the parameter's name, so adding
// or removing a layer leaves the initial weights of every other layer as
// they were.
#pragma once

#include "ir/Error.h"
#include "ir/Types.h"
#include "runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn::runtime {

// Fan-in and fan-out of a weight of shape [out, in, k...]: in * prod(k) and
// out * prod(k). A rank-1 shape [n] has fan-in = fan-out = n; a scalar has 1.
struct Fans {
  int64_t in = 1;
  int64_t out = 1;
};
Fans computeFans(const std::vector<int64_t> &dims);

// Names of the supported initializers, sorted (ir/InitSpec.h).
std::vector<std::string> initializerNames();

// Fills `out` with initializer `init` (a name or a call, ir/InitSpec.h) for a parameter of
// static type `type` (f32 or f64); `out` is reallocated when its type differs. The values
// depend only on (seed, stableHash(paramName)) and the type. The fans are computeFans's.
Error initializeParam(const std::string &init, const ir::TensorType &type, uint64_t seed,
                      const std::string &paramName, Tensor &out);

} // namespace dtnn::runtime
