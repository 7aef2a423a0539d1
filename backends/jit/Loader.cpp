// Loads the jit's code generator (libdtnn-jit.so, beside libdtnn) the first
// time a kernel is compiled, and forwards to it; waits for kernels' code.
#include "backends/jit/Codegen.h"
#include "ir/SiblingModule.h"

#include <atomic>
#include <chrono>
#include <mutex>

namespace dtnn::jit {

namespace {

std::atomic<bool> tried{false};

// Whether the module was asked for.
bool loaded() { return tried.load(); }

// The module's interface, or why it could not be loaded.
Expected<const CodegenApi *> codegen() {
  tried = true;
  static std::once_flag once;
  static const CodegenApi *api = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    Expected<const CodegenApi *> found =
        loadSiblingApi<CodegenApi>(kCodegenModule, kCodegenSymbol, "the jit's code generator");
    if (found) api = *found;
    else failure = found.error().message();
  });
  if (!api) return Error::make(failure);
  return api;
}

} // namespace

Expected<PendingKernel> startKernel(const ir::Graph &body, const LoopPlan &plan,
                                    const std::string &cacheDir) {
  Expected<const CodegenApi *> api = codegen();
  if (!api) return Error::make(api.error().message());
  PendingKernel pending = (*api)->start(body, plan, cacheDir);
  if (pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready && !pending.get().fn)
    return Error::make(pending.get().error);
  return pending;
}

namespace {
std::mutex waitMu;
double waited = 0;
} // namespace

KernelCode::~KernelCode() {
  if (pending_.valid()) pending_.wait();
}

Expected<KernelFn> KernelCode::get() {
  if (fn_) return fn_;
  auto t0 = std::chrono::steady_clock::now();
  const CompiledKernel &k = pending_.get();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard<std::mutex> lock(waitMu);
    waited += seconds;
  }
  if (!k.fn)
    return Error::make("the jit could not compile this kernel (--no-jit runs without it): " +
                       k.error);
  fn_ = k.fn;
  return fn_;
}

double waitedSeconds() {
  std::lock_guard<std::mutex> lock(waitMu);
  return waited;
}

CompileStats compileStats() {
  if (!loaded()) return {};
  Expected<const CodegenApi *> api = codegen();
  return api ? (*api)->stats() : CompileStats{};
}

Expected<std::string> kernelIR(const ir::Graph &body, const LoopPlan &plan, const std::string &name,
                               const std::string &cpu) {
  Expected<const CodegenApi *> api = codegen();
  if (!api) return Error::make(api.error().message());
  return (*api)->llvmIR(body, plan, name, cpu);
}

} // namespace dtnn::jit
