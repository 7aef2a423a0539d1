// The registration of the jit backend, which dtnn::registerBuiltins calls in
// builds that have LLVM.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"
#include "runtime/plan/Plan.h"

#include <string>

namespace dtnn::jit {

// The folder of the jit's kernel cache: `requested` (`--jit-cache`), else
// the environment's DTNN_JIT_CACHE, else $XDG_CACHE_HOME/dtnn/jit, else
// $HOME/.cache/dtnn/jit; "" (no cache) for "off" or when none applies.
std::string kernelCacheDir(const std::string &requested);

// Registers the jit backend and its kernel for fused ops through
// runtime::registerBackend and runtime::registerKernel (once; later calls do
// nothing).
Error registerJitBackend();

// The optimised LLVM IR of the kernels of every fused op of `plan` that
// runs on the jit, in plan order (fused_0, fused_1, ...), each after a
// comment naming the ops it absorbed and the buffers it takes in the plan's
// layouts, for CPU `cpu` ("": the host): what `dtnnc compile --emit=llvm`
// prints.
Expected<std::string> fusedKernelsIR(const runtime::Plan &plan, const std::string &cpu);

} // namespace dtnn::jit
