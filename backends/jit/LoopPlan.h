// The loop nest the jit backend compiles a fused op into, planned from its
// region and the operand types of one plan: the domain (the shape of the
// group's elementwise results) with size-1 dimensions dropped and neighbours
// merged where every tensor agrees, which dimensions each argument and yield
// spans (a broadcast argument and a reduction's result skip the others), and
// the key under which the compiled code is cached: the region's structure,
// the element types and the spans, never the sizes, which the code takes as
// run-time arguments.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn::jit {

struct LoopPlan {
  // The merged dimensions of the domain, outermost first (at least one). The
  // last is the inner loop; the others make the rows.
  std::vector<int64_t> sizes;
  // For each region argument, then each yield: whether it spans each merged
  // dimension (else it is broadcast along it, or reduced over it).
  std::vector<std::vector<bool>> spans;
  // For each yield: whether a reduction (sum_like) makes it.
  std::vector<bool> reduced;
  ir::DType dtype = ir::DType::F32;
  // Whether the rows may run on several threads (no reduction sums over a
  // row dimension), and the inner loop too when there is one row (no
  // reduction sums along it).
  bool parallelRows = true, parallelInner = true;
  std::string key;

  int64_t rows() const;
  int64_t inner() const { return sizes.back(); }
};

// Plans the loops of a fused op's `body` at argument types `args`; fails
// with why when the jit cannot compile the region (an op it has no code for,
// another element type, a shape that is not the domain's).
Expected<LoopPlan> planLoops(const ir::Graph &body, const std::vector<ir::TensorType> &args);

// The ops the jit has code for.
bool jitKnowsOp(const std::string &name);

} // namespace dtnn::jit
