// The jit backend: runs fused ops with kernels that LLVM's ORC JIT compiles
// from their regions (backends/jit/Codegen.h), on plain host buffers. It is
// planned after the chosen backend in every run, so that oneDNN runs what it
// has primitives for and the jit the fused groups between them; where LLVM
// cannot compile a region, the fused op goes to the reference interpreter.
#include "backends/jit/JitBackend.h"

#include "backends/jit/Codegen.h"
#include "runtime/BackendRegistry.h"
#include "runtime/KernelRegistry.h"
#include "runtime/plan/Plan.h"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

namespace dtnn::jit {

namespace {

constexpr const char *kBackendName = "jit";
// The fewest elements a thread takes of an inner loop that is split.
constexpr int64_t kMinChunk = 16384;

class JitBackend final : public runtime::HostBackend {
public:
  std::string_view name() const override { return kBackendName; }
};

// Warns once per region that LLVM could not compile.
void warnOnce(const std::string &key, const std::string &message) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (said.insert(key).second)
    std::fprintf(stderr, "dtnn: warning: %s; the fused op runs on the reference backend\n",
                 message.c_str());
}

class FusedKernel final : public runtime::Kernel {
public:
  // A region whose every argument and yield has the domain's type computes
  // the same at every element whatever the layout: it takes its operands in
  // the first non-plain layout one arrives in (oneDNN's blocked channels)
  // and runs over whole buffers, padding included, so that no conversion
  // surrounds it. Other regions run on plain buffers.
  FusedKernel(const runtime::KernelRequest &r, LoopPlan plan, KernelFn fn)
      : Kernel(r), plan_(std::move(plan)), fn_(fn) {
    bool elementwise = plan_.sizes.size() == 1 && !r.in.empty();
    for (const auto &s : plan_.spans) elementwise &= s[0];
    for (bool red : plan_.reduced) elementwise &= !red;
    for (const runtime::BufferDesc &d : r.in) elementwise &= d.type == r.in[0].type;
    for (const ir::TensorType &t : r.out) elementwise &= t == r.in[0].type;
    if (!elementwise) return;
    const runtime::BufferDesc *layout = &r.in[0];
    for (const runtime::BufferDesc &d : r.in)
      if (!d.layout.isPlain()) {
        layout = &d;
        break;
      }
    if (layout->layout.isPlain()) return;
    for (auto &d : in_) d = *layout;
    for (auto &d : out_) d = *layout;
    plan_.sizes = {static_cast<int64_t>(layout->bytes / ir::dtypeSize(layout->type.dtype))};
  }

  // Each kernel writes every result element after reading the operand
  // elements at the same place, but its pointers are declared not to alias.
  bool allowsReuse(size_t, size_t) const override { return false; }

  Error run(const runtime::KernelArgs &args, runtime::ExecContext &) override {
    std::vector<void *> ptrs;
    for (const runtime::TensorView &v : args.in) ptrs.push_back(v.data);
    for (size_t y = 0; y < args.out.size(); ++y) {
      ptrs.push_back(args.out[y].data);
      if (plan_.reduced[y]) std::memset(args.out[y].data, 0, runtime::byteSize(args.out[y].type));
    }
    const int64_t *sizes = plan_.sizes.data();
    int64_t rows = plan_.rows(), inner = plan_.inner();
    if (rows * inner == 0) return Error::success();
    void *const *p = ptrs.data();
    KernelFn fn = fn_;
    if (rows > 1 && plan_.parallelRows) {
      int64_t perChunk = std::max<int64_t>(1, kMinChunk / inner);
      int64_t chunks = (rows + perChunk - 1) / perChunk;
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < chunks; ++c)
        fn(p, sizes, c * perChunk, std::min(rows, (c + 1) * perChunk), 0, inner);
    } else if (rows == 1 && plan_.parallelInner && inner > kMinChunk) {
      int64_t chunks = (inner + kMinChunk - 1) / kMinChunk;
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < chunks; ++c)
        fn(p, sizes, 0, 1, c * kMinChunk, std::min(inner, (c + 1) * kMinChunk));
    } else {
      fn(p, sizes, 0, rows, 0, inner);
    }
    return Error::success();
  }

private:
  LoopPlan plan_;
  KernelFn fn_;
};

std::vector<ir::TensorType> typesOf(const std::vector<runtime::BufferDesc> &descs) {
  std::vector<ir::TensorType> out;
  for (const runtime::BufferDesc &d : descs) out.push_back(d.type);
  return out;
}

Expected<std::unique_ptr<runtime::Kernel>> makeFused(const runtime::KernelRequest &r) {
  if (!r.op.body()) return Error::make("'fused' has no region");
  Expected<LoopPlan> plan = planLoops(*r.op.body(), typesOf(r.in));
  if (!plan) return Error::make(plan.error().message());
  Expected<KernelFn> fn = compiledKernel(*r.op.body(), *plan);
  if (!fn) {
    warnOnce(plan->key, fn.error().message());
    return Error::make(fn.error().message());
  }
  return std::unique_ptr<runtime::Kernel>(new FusedKernel(r, std::move(*plan), *fn));
}

// The jit takes a fused op whose region it can plan at these operand types.
bool claimsFused(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  if (!op.body()) return false;
  Expected<LoopPlan> plan = planLoops(*op.body(), in);
  return static_cast<bool>(plan);
}

} // namespace

Error registerJitBackend() {
  static bool done = false;
  if (done) return Error::success();
  done = true;
  if (Error e = runtime::registerBackend(
          {kBackendName, 5, true, "fused elementwise kernels compiled by LLVM's ORC JIT",
           [](const runtime::BackendOptions &) {
             return std::unique_ptr<runtime::Backend>(new JitBackend());
           }}))
    return e;
  for (ir::DType t : {ir::DType::F32, ir::DType::F64})
    if (Error e = runtime::registerKernel(
            {"fused", kBackendName, t, runtime::LayoutKind::Native, makeFused, claimsFused}))
      return e;
  return Error::success();
}

Expected<std::string> fusedKernelsIR(const ir::Graph &graph, int64_t batch,
                                     const std::string &cpu) {
  std::string out;
  size_t number = 0;
  for (const auto &op : graph.ops()) {
    if (!op->body()) continue;
    std::string name = "fused_" + std::to_string(number++);
    std::vector<ir::TensorType> in;
    for (const ir::Value *v : op->operands()) in.push_back(runtime::bindBatch(v->type(), batch));
    Expected<LoopPlan> plan = planLoops(*op->body(), in);
    if (!plan) {
      out += "; " + name + ": not compiled: " + plan.error().message() + "\n";
      continue;
    }
    Expected<std::string> ir = kernelIR(*op->body(), *plan, name, cpu);
    if (!ir) return Error::make(ir.error().message());
    out += *ir;
  }
  return out;
}

} // namespace dtnn::jit
