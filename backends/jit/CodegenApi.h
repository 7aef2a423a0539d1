// The interface between libdtnn and the jit's code generator, a module of
// its own (libdtnn-jit.so, beside libdtnn) that links LLVM. libdtnn loads it
// the first time a fused op needs a kernel, so that a program that compiles
// nothing never maps LLVM, and a run where it cannot be loaded (an address-
// space limit) falls back to the reference backend.
#pragma once

#include "runtime/LoopPlan.h"

#include <cstdint>
#include <future>
#include <string>

namespace dtnn::jit {

using runtime::LoopPlan;

// A compiled kernel: `ptrs` holds the region's arguments, then its yields;
// `sizes` the plan's merged sizes. It runs rows [rowBegin, rowEnd) and, of
// each row, the inner positions [innerBegin, innerEnd). Reduction results
// must be zero before the first call; they are added to.
using KernelFn = void (*)(void *const *ptrs, const int64_t *sizes, int64_t rowBegin, int64_t rowEnd,
                          int64_t innerBegin, int64_t innerEnd);

// What the code generator did in this process: kernels compiled, kernels
// loaded from the cache on disk, and the seconds spent on both (summed over
// the compile threads, which work in parallel).
struct CompileStats {
  int64_t compiled = 0, loaded = 0;
  double seconds = 0;
};

// A kernel's code, or why there is none.
struct CompiledKernel {
  KernelFn fn = nullptr;
  std::string error;
};
// A kernel being compiled or loaded: get() waits for it.
using PendingKernel = std::shared_future<CompiledKernel>;

// What the module hands libdtnn. The version changes with this struct and
// with LoopPlan.
struct CodegenApi {
  static constexpr int kVersion = 3;
  int version = kVersion;
  // Starts making the kernel of `plan` over `body` on the module's compile
  // threads and returns at once: compiled for the host CPU on first use of
  // its key (then kept in memory: a later start of the key shares it), or
  // loaded from the kernel cache in folder `cacheDir` (none when empty),
  // where a compiled kernel is stored. `body` must outlive the work (wait
  // for it before destroying the region). Fails at once when LLVM's JIT
  // cannot start.
  PendingKernel (*start)(const ir::Graph &body, const LoopPlan &plan, const std::string &cacheDir);
  CompileStats (*stats)();
  // The optimised LLVM IR of that kernel for CPU `cpu` ("" or "native": the
  // host), its function named `name`.
  Expected<std::string> (*llvmIR)(const ir::Graph &body, const LoopPlan &plan,
                                  const std::string &name, const std::string &cpu);
};

// The module's one exported symbol.
inline constexpr const char *kCodegenSymbol = "dtnn_jit_codegen_api";
// The module's file name, beside libdtnn.
inline constexpr const char *kCodegenModule = "libdtnn-jit.so";

} // namespace dtnn::jit
