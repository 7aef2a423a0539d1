// The jit's code generator as libdtnn sees it: the functions of the module
// libdtnn-jit.so (backends/jit/CodegenApi.h), loaded on first use. The
// module lowers a loop plan over a fused region to LLVM IR (a loop over
// rows, an inner loop the vectorizer widens for the host CPU), optimises it
// at O3 and compiles it with LLVM's ORC LLJIT, keeping the kernels in memory
// by the plan's key, so that identical groups compile once per process. It
// compiles on threads of its own: a plan's kernels compile in parallel, and
// a step waits only for the kernels it runs.
#pragma once

#include "backends/jit/CodegenApi.h"

namespace dtnn::jit {

// Starts making the kernel of `plan` over `body` on the code generator's
// compile threads (CodegenApi::start) and returns at once; fails at once when
// the module cannot be loaded or LLVM's JIT cannot start.
Expected<PendingKernel> startKernel(const ir::Graph &body, const LoopPlan &plan,
                                    const std::string &cacheDir);

// A kernel's code as the compile threads make it: the first run of the
// kernel waits for it, and so does the destructor (the work reads the
// region). The seconds runs spent waiting add up in waitedSeconds().
class KernelCode {
public:
  explicit KernelCode(PendingKernel pending) : pending_(std::move(pending)) {}
  KernelCode(KernelCode &&) = default;
  ~KernelCode();
  // The code, waiting for it the first time; fails when LLVM could not make it.
  Expected<KernelFn> get();

private:
  PendingKernel pending_;
  KernelFn fn_ = nullptr;
};
double waitedSeconds();

// What the code generator did in this process; zeros when it was never
// loaded.
CompileStats compileStats();

// The optimised LLVM IR of that kernel, for CPU `cpu` ("" or "native": the
// host), as `dtnnc compile --emit=llvm` prints it; `name` names the function.
Expected<std::string> kernelIR(const ir::Graph &body, const LoopPlan &plan, const std::string &name,
                               const std::string &cpu);

} // namespace dtnn::jit
