// The registration of the jit backend, which dtnn::registerBuiltins calls in
// builds that have LLVM.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"

#include <string>

namespace dtnn::jit {

// Registers the jit backend and its kernel for fused ops through
// runtime::registerBackend and runtime::registerKernel (once; later calls do
// nothing).
Error registerJitBackend();

// The optimised LLVM IR of the kernels of every fused op of `graph`, in op
// order, each function named after the op's first result, for CPU `cpu`
// ("": the host): what `dtnnc compile --emit=llvm` prints. The region's types
// are bound at batch `batch`.
Expected<std::string> fusedKernelsIR(const ir::Graph &graph, int64_t batch,
                                     const std::string &cpu);

} // namespace dtnn::jit
