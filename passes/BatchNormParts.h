// The ops a training batch norm and its backward are made of, for
// decompose-batchnorm (passes/DecomposeBatchNorm.cpp says why and when):
// reductions and elementwise ops the jit compiles, the per-channel
// arithmetic in fused ops of its own.
#pragma once

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/IR.h"

#include <vector>

namespace dtnn::passes {

// The values of a decomposed batch norm: the per-channel ones have shape
// [1,C,1,1]; `results` replace batchnorm_train's, in its order.
struct DecomposedBatchNorm {
  ir::Value *x = nullptr, *g = nullptr, *count = nullptr, *mean = nullptr, *invstd = nullptr,
            *scale = nullptr, *shift = nullptr, *y = nullptr;
  std::vector<ir::Value *> results;
};

// Appends the decomposition of batchnorm_train `bn` to the builder's graph.
Expected<DecomposedBatchNorm> decomposeBatchNorm(ir::Builder &b, const ir::Op &bn);

// The results of batchnorm_backward `bwd` of `f`, in its order, computed by
// fused ops appended to the builder's graph; `grad` (or null) is the op
// whose result dy their kernels recompute from x.
Expected<std::vector<ir::Value *>> decomposeBatchNormBackward(ir::Builder &b, const ir::Op &bwd,
                                                              const DecomposedBatchNorm &f,
                                                              const ir::Op *grad);

} // namespace dtnn::passes
