// The cuda backend's code generator: the CUDA C++ of a kernel that computes
// a region (a fused op's, or one elementwise op's) over the loops that
// runtime/LoopPlan.h plans for it, the same plan the CPU jit lowers to LLVM.
// A kernel without reductions gives each thread one element of the domain.
// Reductions (sum_like) sum in a fixed order that depends on the sizes alone,
// so that runs repeat bit for bit: one block per reduced output when the
// innermost merged dimension is summed over, else one thread per output;
// long reductions are cut into segments summed into the workspace, which a
// second kernel adds up in order. Sizes are arguments, so one compiled kernel
// serves every batch size.
#pragma once

#include "backends/cuda/DeviceApi.h"
#include "runtime/LoopPlan.h"

#include <string>
#include <vector>

namespace dtnn::cuda {

// The ops the generator has code for: the common set of runtime::regionKnowsOp, and gelu with its
// backward.
bool cudaKnowsOp(const std::string &name);

// The kernel of region `body` over `plan` (planned with cudaKnowsOp); fails when the generator
// cannot compute it (reductions that keep different dimensions, a yield that is neither reduced
// nor over the whole domain).
Expected<RegionCode> regionCode(const ir::Graph &body, const runtime::LoopPlan &plan);

// The workspace a region kernel sums its segments into: a segment's partial result per output
// of each reduced yield, when there is more than one segment.
uint64_t regionWorkspace(const RegionCode &code, ir::DType dtype);

// A 64-bit FNV-1a hash of `text` as 16 hexadecimal digits.
std::string hashText(const std::string &text);

} // namespace dtnn::cuda
