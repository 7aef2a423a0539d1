// Helpers of the communication passes (insert-allreduce, bucket-allreduce,
// schedule-comm): finding gradients and allreduce pairs, and reordering a
// graph's ops within what their dependencies allow.
#pragma once

#include "ir/IR.h"

#include <map>
#include <vector>

namespace dtnn::passes {

// The operand index of the parameter gradient that `op` consumes if it is an
// optimizer update (an op that writes its operand "param" and reads one
// called "grad"), else -1.
int gradientOperand(const ir::Op &op);

// A collective in flight: the start and the wait of its token.
struct AllreducePair {
  ir::Op *start = nullptr;
  ir::Op *wait = nullptr;
};
// The allreduce pairs of `g`, in the order of their starts.
std::vector<AllreducePair> allreducePairs(const ir::Graph &g);

// For each op of `g`, the ops that must run before it: the producers of its
// operands, and for an operand it writes in place, the other readers of
// that value (they read the old version); an allreduce_start counts as
// writing its operands, which it claims until its wait.
std::map<const ir::Op *, std::vector<const ir::Op *>> opDependencies(const ir::Graph &g);

// Reorders the ops of `g` topologically by opDependencies, taking at each
// point the ready op of smallest priority (ops without one keep their index
// as priority; ties keep the current order). Deterministic.
void scheduleByPriority(ir::Graph &g, const std::map<const ir::Op *, double> &priority);

} // namespace dtnn::passes
