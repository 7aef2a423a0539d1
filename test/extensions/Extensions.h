// The extensions this program adds to dtnn, one registration function each.
// Each returns the first failure of the registry calls it makes.
#pragma once

#include "dtnn/Error.h"

#include <string>

namespace ext {

// The name this program registers under (the origin of its entries).
inline const std::string kOrigin = "dtnn-extensions";

// The op `square` (y = x * x) with its shape and gradient rules, and its
// kernel on the reference backend.
dtnn::Error registerSquare();

// The optimizer `signsgd` (param -= lr * sign(grad + weight_decay * param)):
// its update op, the op's reference kernel, and the optimizer.
dtnn::Error registerSignSgd();

// The pass `op-stats`, which counts the ops of each graph and prints the
// counts to stderr; option `graph=NAME` limits it to one graph.
dtnn::Error registerOpStats();

// The data source `toy_blobs`: classes of points scattered around fixed
// centres, deterministic for a seed.
dtnn::Error registerToyData();

} // namespace ext
