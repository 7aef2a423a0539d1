// The code generator module's compiler for the process (libdtnn-jit.so, see
// backends/jit/CodegenApi.h): one LLJIT for the host, the kernels it holds
// by key, and the kernel cache on disk (backends/jit/KernelCache.h). A
// kernel not yet in the process is loaded from the cache when a valid entry
// is there, else compiled to an object (and stored there); either way the
// object is added to the LLJIT. Its symbol is named after its key's hash, so
// that an object compiled by another process links the same way. That work
// runs on compile threads of the module's own, each kernel on one (with a
// context and target machine of its own), so that the kernels of a plan
// compile in parallel while the caller goes on; only adding objects to the
// LLJIT takes turns.
#include "backends/jit/KernelCache.h"
#include "backends/jit/ModuleBuilder.h"

#include "dtnn/Version.h"
#include "ir/Log.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace dtnn::jit {

namespace {

// The compile threads: as many as the CPUs the process may run on (at most
// 8), at idle priority, started on first use; work queued when the module
// goes is dropped.
class Workers {
public:
  ~Workers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      queue_.clear();
    }
    ready_.notify_all();
    for (std::thread &t : threads_) t.join();
  }

  void push(std::function<void()> work) {
    std::lock_guard<std::mutex> lock(mu_);
    if (threads_.empty()) {
      cpu_set_t cpus;
      int usable = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
      int n = std::clamp(usable, 1, 8);
      for (int i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
    }
    queue_.push_back(std::move(work));
    ready_.notify_one();
  }

private:
  void loop() {
    // Compile at idle priority: the kernels of a run's steps keep the CPUs,
    // and a compile gets one when they leave it (a step that waits for a
    // kernel's code leaves its own).
    sched_param idle{};
    sched_setscheduler(0, SCHED_IDLE, &idle);
    while (true) {
      std::function<void()> work;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      work();
    }
  }

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

class Jit {
public:
  static Jit &get() {
    static Jit jit;
    return jit;
  }

  // Starts the kernel of `plan` over `body` on a compile thread, or shares
  // the work already started for its key.
  PendingKernel start(const ir::Graph &body, const LoopPlan &plan, const std::string &cacheDir) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!jit_) {
      std::promise<CompiledKernel> failed;
      failed.set_value({nullptr, "cannot start LLVM's JIT: " + startError_});
      return failed.get_future().share();
    }
    // Everything the object code depends on besides the plan.
    std::string key = plan.key + "|cpu=" + tm_->getTargetCPU().str() + "|" +
                      tm_->getTargetFeatureString().str() + "|llvm " LLVM_VERSION_STRING "|dtnn " +
                      versionString() + "|codegen " + std::to_string(CodegenApi::kVersion);
    if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
    auto task = std::make_shared<std::packaged_task<CompiledKernel()>>(
        [this, &body, plan, cacheDir, key] { return make(body, plan, cacheDir, key); });
    PendingKernel pending = task->get_future().share();
    kernels_[key] = pending;
    workers_.push([task] { (*task)(); });
    return pending;
  }

  CompileStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

private:
  // Loads the kernel from the cache or compiles it, on a compile thread.
  CompiledKernel make(const ir::Graph &body, const LoopPlan &plan, const std::string &cacheDir,
                      const std::string &key) {
    auto t0 = std::chrono::steady_clock::now();
    std::string name = "dtnn_fused_" + hashHex(key);
    std::optional<KernelFn> fn;
    if (!cacheDir.empty()) fn = loadCached(KernelCache(cacheDir), key, name);
    bool loaded = fn.has_value();
    if (!fn) {
      Expected<KernelFn> made = compileNew(body, plan, name, cacheDir, key);
      if (!made) return {nullptr, made.error().message()};
      fn = *made;
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard<std::mutex> lock(mu_);
    ++(loaded ? stats_.loaded : stats_.compiled);
    stats_.seconds += seconds;
    return {*fn, ""};
  }

  Jit() {
    initialiseLlvm();
    auto jtmb = machineFor("");
    if (!jtmb) {
      startError_ = llvmMessage(jtmb.takeError());
      return;
    }
    auto tm = jtmb->createTargetMachine();
    if (!tm) {
      startError_ = llvmMessage(tm.takeError());
      return;
    }
    tm_ = std::move(*tm);
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
    if (!jit) {
      startError_ = llvmMessage(jit.takeError());
      return;
    }
    jit_ = std::move(*jit);
    auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jit_->getDataLayout().getGlobalPrefix());
    if (!process) {
      startError_ = llvmMessage(process.takeError());
      jit_.reset();
      return;
    }
    jit_->getMainJITDylib().addGenerator(std::move(*process));
  }

  // The kernel stored under `key` in `cache`, added; nothing when there is
  // no entry, or one that is not valid or does not link (then a warning).
  std::optional<KernelFn> loadCached(const KernelCache &cache, const std::string &key,
                                     const std::string &name) {
    std::string problem;
    std::optional<std::string> object = cache.load(key, problem);
    if (object) {
      Expected<KernelFn> fn = add(name, llvm::MemoryBuffer::getMemBufferCopy(*object, name));
      if (fn) return *fn;
      problem = "the jit's kernel cache entry " + cache.pathOf(key) +
                " does not link: " + fn.error().message();
    }
    if (!problem.empty()) warnOnce(problem + "; compiling the kernel again");
    return std::nullopt;
  }

  // Builds, optimises and compiles the kernel to an object, stores it in the
  // cache (a failure to is a warning) and adds it.
  Expected<KernelFn> compileNew(const ir::Graph &body, const LoopPlan &plan,
                                const std::string &name, const std::string &cacheDir,
                                const std::string &key) {
    // A target machine of its own: compile threads share none of LLVM's state.
    auto jtmb = machineFor("");
    if (!jtmb) return Error::make("LLVM: " + llvmMessage(jtmb.takeError()));
    auto tm = jtmb->createTargetMachine();
    if (!tm) return Error::make("LLVM: " + llvmMessage(tm.takeError()));
    llvm::LLVMContext ctx;
    Expected<std::unique_ptr<llvm::Module>> m = buildModule(ctx, body, plan, name, **tm);
    if (!m) return Error::make(m.error().message());
    DTNN_LOG_AT(Trace, "jit", [&] {
      std::string text;
      llvm::raw_string_ostream os(text);
      (*m)->print(os, nullptr);
      return "kernel " + name + " (" + std::to_string(body.ops().size()) + " ops):\n" + os.str();
    }());
    llvm::orc::SimpleCompiler compiler(**tm);
    auto object = compiler(**m);
    if (!object)
      return Error::make("LLVM could not compile a fused kernel: " +
                         llvmMessage(object.takeError()));
    if (!cacheDir.empty())
      if (Error e = KernelCache(cacheDir).store(key, (*object)->getBuffer().str()))
        warnOnce("the jit's kernel cache keeps nothing: " + e.message());
    return add(name, std::move(*object));
  }

  // Adds an object holding `name` to the LLJIT and looks the kernel up.
  Expected<KernelFn> add(const std::string &name, std::unique_ptr<llvm::MemoryBuffer> object) {
    std::lock_guard<std::mutex> lock(mu_);
    if (llvm::Error e = jit_->addObjectFile(std::move(object)))
      return Error::make("LLVM could not add a fused kernel: " + llvmMessage(std::move(e)));
    auto sym = jit_->lookup(name);
    if (!sym)
      return Error::make("LLVM could not link a fused kernel: " + llvmMessage(sym.takeError()));
    return sym->toPtr<KernelFn>();
  }

  void warnOnce(const std::string &message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (warned_.insert(message).second)
      std::fprintf(stderr, "dtnn: warning: %s\n", message.c_str());
  }

  std::mutex mu_; // guards what follows but the workers, and the LLJIT
  std::unique_ptr<llvm::TargetMachine> tm_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string startError_;
  std::map<std::string, PendingKernel> kernels_;
  std::set<std::string> warned_;
  CompileStats stats_;
  Workers workers_; // last: its threads stop before the rest goes
};

PendingKernel start(const ir::Graph &body, const LoopPlan &plan, const std::string &cacheDir) {
  return Jit::get().start(body, plan, cacheDir);
}

CompileStats stats() { return Jit::get().stats(); }

Expected<std::string> llvmIR(const ir::Graph &body, const LoopPlan &plan, const std::string &name,
                             const std::string &cpu) {
  initialiseLlvm();
  if (!cpu.empty() && cpu != "native") {
    std::string triple = llvm::sys::getProcessTriple(), why;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, why);
    if (!target) return Error::make("LLVM: " + why);
    std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, "", ""));
    if (!sti || !sti->isCPUStringValid(cpu))
      return Error::make("LLVM does not know the CPU '" + cpu +
                         "' (--target-cpu takes LLVM's "
                         "names, such as x86-64-v3, skylake-avx512 or znver4)");
  }
  auto jtmb = machineFor(cpu);
  if (!jtmb) return Error::make("LLVM: " + llvmMessage(jtmb.takeError()));
  auto tm = jtmb->createTargetMachine();
  if (!tm) return Error::make("LLVM: unknown CPU '" + cpu + "': " + llvmMessage(tm.takeError()));
  llvm::LLVMContext ctx;
  Expected<std::unique_ptr<llvm::Module>> m = buildModule(ctx, body, plan, name, **tm);
  if (!m) return Error::make(m.error().message());
  std::string out;
  llvm::raw_string_ostream os(out);
  (*m)->print(os, nullptr);
  return out;
}

} // namespace

} // namespace dtnn::jit

extern "C" __attribute__((visibility("default"))) const dtnn::jit::CodegenApi *
dtnn_jit_codegen_api() {
  static const dtnn::jit::CodegenApi api{dtnn::jit::CodegenApi::kVersion, dtnn::jit::start,
                                         dtnn::jit::stats, dtnn::jit::llvmIR};
  return &api;
}
