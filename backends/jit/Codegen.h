// The jit's code generator as libdtnn sees it: the functions of the module
// libdtnn-jit.so (backends/jit/CodegenApi.h), loaded on first use. The
// module lowers a loop plan over a fused region to LLVM IR (a loop over
// rows, an inner loop the vectorizer widens for the host CPU), optimises it
// at O3 and compiles it with LLVM's ORC LLJIT, keeping the kernels in memory
// by the plan's key, so that identical groups compile once per process.
#pragma once

#include "backends/jit/CodegenApi.h"

namespace dtnn::jit {

// The kernel of `plan` over `body`, compiled for the host CPU on first use of
// its key, or loaded from the kernel cache in `cacheDir` (none when empty);
// fails when the module cannot be loaded or LLVM cannot compile it.
Expected<KernelFn> compiledKernel(const ir::Graph &body, const LoopPlan &plan,
                                  const std::string &cacheDir);

// What the code generator did in this process; zeros when it was never
// loaded.
CompileStats compileStats();

// The optimised LLVM IR of that kernel, for CPU `cpu` ("" or "native": the
// host), as `dtnnc compile --emit=llvm` prints it; `name` names the function.
Expected<std::string> kernelIR(const ir::Graph &body, const LoopPlan &plan,
                               const std::string &name, const std::string &cpu);

} // namespace dtnn::jit
