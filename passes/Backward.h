// The reverse-mode differentiation engine behind the autodiff pass: appends
// to a graph the ops that compute gradients, using each op's gradient rule
// from the op table. Tests use it directly to check gradients.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"

#include <utility>
#include <vector>

namespace dtnn::passes {

// Appends to `g` the ops computing the gradient, with respect to each value
// of `wrt`, of sum_k <v_k, s_k> over the seeds (v_k, s_k): a seed pairs a
// value with the gradient flowing into it (for a scalar loss: the value and
// a tensor of ones). Returns one gradient per `wrt` value, null where the
// seeds do not depend on it. Fails, naming the op, when a gradient must flow
// through an op without a gradient rule.
Expected<std::vector<ir::Value *>>
appendBackward(ir::Graph &g, const std::vector<std::pair<ir::Value *, ir::Value *>> &seeds,
               const std::vector<ir::Value *> &wrt);

} // namespace dtnn::passes
