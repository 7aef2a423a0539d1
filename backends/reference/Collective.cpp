// Kernels of the collective ops (ir/ops/Collective.cpp). allreduce_start
// starts a non-blocking reduction of its buffers through the execution
// context's communicator (one per run of buffers that buffer assignment laid
// out back to back) and returns at once; allreduce_wait waits for it. The
// kernels scheduled between the two run while the reduction is in flight:
// the executor advances it between kernels, and the MPI communicator's own
// thread every millisecond. rank_count reads the communicator's size.
#include "backends/reference/KernelTable.h"
#include "runtime/BucketReduction.h"

#include <map>
#include <mutex>

namespace dtnn::reference {

namespace {

using runtime::KernelRequest;

// The reductions each allreduce_start op has in flight, for its wait. Runs
// of one graph at several batch sizes share the op, one run at a time.
class InFlight {
public:
  static InFlight &get() {
    static InFlight table;
    return table;
  }
  void put(const ir::Op *start, std::vector<uint64_t> handles) {
    std::lock_guard<std::mutex> lock(mutex_);
    handles_[start] = std::move(handles);
  }
  std::vector<uint64_t> take(const ir::Op *start) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = handles_.find(start);
    if (it == handles_.end()) return {};
    std::vector<uint64_t> h = std::move(it->second);
    handles_.erase(it);
    return h;
  }

private:
  std::mutex mutex_;
  std::map<const ir::Op *, std::vector<uint64_t>> handles_;
};

class AllreduceStart : public runtime::Kernel {
public:
  explicit AllreduceStart(const KernelRequest &r) : Kernel(r), bucket_(r.op, r.in) {
    in_ = r.in; // any layout: whole buffers are reduced
  }
  bool wantsContiguousOperands() const override { return true; }
  Error run(const KernelArgs &a, runtime::ExecContext &ctx) override {
    if (!ctx.comm) return Error::make("no communicator");
    std::vector<uint64_t> handles;
    for (const runtime::BufferRun &run : bucket_.runs(a.in)) {
      auto h = ctx.comm->startAllreduce(run.data, run.count, run.dtype, runtime::ReduceOp::Sum,
                                        bucket_.what(), bucket_.scale(ctx), bucket_.algorithm());
      if (!h) return h.takeError();
      handles.push_back(*h);
    }
    InFlight::get().put(a.op, std::move(handles));
    return Error::success();
  }

private:
  runtime::BucketReduction bucket_;
};

class AllreduceWait : public runtime::Kernel {
public:
  explicit AllreduceWait(const KernelRequest &r)
      : Kernel(r), start_(r.op.operand(0)->definingOp()) {
    in_ = r.in;
  }
  Error run(const KernelArgs &, runtime::ExecContext &ctx) override {
    Error first;
    for (uint64_t h : InFlight::get().take(start_))
      if (Error e = ctx.comm->waitAllreduce(h); e && !first) first = std::move(e);
    return first;
  }

private:
  const ir::Op *start_;
};

// rank_count: the communicator's rank count (1 without one).
class RankCount : public runtime::Kernel {
public:
  explicit RankCount(const KernelRequest &r) : Kernel(r) {}
  Error run(const KernelArgs &a, runtime::ExecContext &ctx) override {
    double ranks = ctx.comm ? ctx.comm->size() : 1;
    if (a.out[0].type.dtype == ir::DType::F64)
      *a.out[0].as<double>() = ranks;
    else
      *a.out[0].as<float>() = static_cast<float>(ranks);
    return Error::success();
  }
};

} // namespace

void registerCollectiveKernels(KernelTable &t) {
  t.addKernel("rank_count", [](const KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
    return std::unique_ptr<runtime::Kernel>(new RankCount(r));
  });
  t.addKernel("allreduce_start", [](const KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
    return std::unique_ptr<runtime::Kernel>(new AllreduceStart(r));
  }, runtime::LayoutKind::Any);
  t.addKernel("allreduce_wait", [](const KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
    return std::unique_ptr<runtime::Kernel>(new AllreduceWait(r));
  }, runtime::LayoutKind::Any);
}


} // namespace dtnn::reference
