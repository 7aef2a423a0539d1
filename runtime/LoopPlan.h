// The loops a generated kernel (the jit's on the CPU, the cuda backend's on
// the GPU) runs a region over, planned from its
// region and the operand types of one plan: the domain (the shape of the
// group's elementwise results) with size-1 dimensions dropped and neighbours
// merged where every tensor agrees, which dimensions each argument and yield
// spans (a broadcast argument and a reduction's result skip the others), and
// the key under which the compiled code is cached: the region's structure,
// the element types and the spans, never the sizes, which the code takes as
// run-time arguments.
//
// A plan may follow a layout of the domain (a tag such as aBcd16b, see
// runtime/Layout.h): its dimensions are then the layout's, in stride order,
// with a blocked dimension split into the blocks and the lanes of a block
// (the padded lanes included), so that the domain's tensors are read in the
// layout they arrive in. A per-channel operand is then indexed through the
// block: plain when that is contiguous there, else in the same layout.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn::runtime {

struct LoopPlan {
  // The merged dimensions of the domain, outermost first (at least one). The
  // last is the inner loop; the others make the rows.
  std::vector<int64_t> sizes;
  // For each region argument, then each yield: whether it spans each merged
  // dimension (else it is broadcast along it, or reduced over it).
  std::vector<std::vector<bool>> spans;
  // For each yield: whether a reduction (sum_like) makes it.
  std::vector<bool> reduced;
  // For each region argument, then each yield: whether it is stored in the
  // plan's layout (the domain's, at its own type) rather than plain.
  std::vector<bool> arranged;
  // The logical dimensions of the domain.
  std::vector<int64_t> domain;
  // The type the code computes in: f32 (for f32 and bf16 tensors) or f64.
  ir::DType dtype = ir::DType::F32;
  // For each region argument, then each yield: its element type in memory (bf16 is loaded
  // widened to f32 and stored rounded to nearest even).
  std::vector<ir::DType> stored;
  // For each op of the region: whether its result is bf16, which the code rounds to bf16 in
  // registers, as the reference stores it.
  std::vector<bool> roundsToBf16;
  // Rows run on several threads in units of this many consecutive rows (the
  // rows a reduction sums into one place stay in one unit), and the inner
  // loop too when there is one row and no reduction sums along it.
  int64_t rowUnit = 1;
  // The inner size when the code fixes it (the lanes of a layout's block,
  // which the tag fixes), else 0: the code then always runs whole rows.
  int64_t fixedInner = 0;
  bool parallelInner = true;
  std::string key;

  int64_t rows() const;
  int64_t inner() const { return sizes.back(); }
};

// Plans the loops of a fused op's `body` at argument types `args`, over plain
// buffers, or following the domain's layout `tag` when one is given; fails
// with why when no generated kernel computes the region (an op without
// code, another element type, a shape that is not the domain's) or cannot
// follow the layout.
// The ops the code generators have code for.
bool regionKnowsOp(const std::string &name);

// `knows` says which ops the generator planned for has code for (a generator may know more than
// regionKnowsOp's common set).
Expected<LoopPlan> planLoops(const ir::Graph &body, const std::vector<ir::TensorType> &args,
                             const std::string &tag = "",
                             bool (*knows)(const std::string &) = regionKnowsOp);

// Whether every tensor of `plan` is stored in the type it computes in (no bf16): what a code
// generator without bf16 loads and stores needs.
bool storesComputeType(const LoopPlan &plan);

// Whether the region divides, takes a logarithm, an rsqrt or a negative
// power: over a layout's padded lanes (zeros) it would leave infinities or
// 0/0 = NaN there, so such a region keeps off padding.
bool infiniteAtZero(const ir::Graph &body);

} // namespace dtnn::runtime
