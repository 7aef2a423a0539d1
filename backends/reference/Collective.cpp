// Kernels of the collective ops (ir/ops/Collective.cpp). allreduce_start
// starts a non-blocking reduction of its buffers through the execution
// context's communicator (one per run of buffers that buffer assignment laid
// out back to back) and returns at once; allreduce_wait waits for it. The
// kernels scheduled between the two run while the reduction is in flight:
// the executor advances it between kernels, and the MPI communicator's own
// thread every millisecond. rank_count reads the communicator's size.
#include "backends/reference/KernelTable.h"
#include "runtime/Communicator.h"

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
  explicit AllreduceStart(const KernelRequest &r) : Kernel(r) {
    in_ = r.in; // any layout: whole buffers are reduced
    const std::string &op = r.op.attrs().getString("op");
    mean_ = op == "mean" || op == "mean_deferred";
    deferred_ = op == "mean_deferred";
    // The verifier checked the name.
    if (auto a = runtime::parseAlgorithm(r.op.attrs().getString("algorithm"))) algorithm_ = *a;
    int64_t bucket = r.op.attrs().getInt("bucket");
    uint64_t bytes = 0;
    for (const auto &d : r.in) bytes += d.bytes;
    what_ = "allreduce of " + (bucket >= 0 ? "bucket " + std::to_string(bucket) : std::string("a gradient")) +
            " (" + std::to_string(bytes) + " bytes)";
  }
  bool wantsContiguousOperands() const override { return true; }
  Error run(const KernelArgs &a, runtime::ExecContext &ctx) override {
    if (!ctx.comm) return Error::make("no communicator");
    // A mean weighs each rank by its share of the global batch; a deferred
    // one by its share times the rank count (1 when the batch splits evenly,
    // which scales nothing), its consumers dividing by the rank count.
    double scale = mean_ ? ctx.share() * (deferred_ ? ctx.comm->size() : 1) : 1.0;
    std::vector<uint64_t> handles;
    size_t i = 0;
    while (i < a.in.size()) {
      // Runs of buffers that lie back to back with one element type go as one.
      char *start = static_cast<char *>(a.in[i].data);
      ir::DType t = a.in[i].type.dtype;
      // Whole buffers, padding of blocked layouts included.
      size_t elem = ir::dtypeSize(t);
      size_t count = in_[i].bytes / elem;
      char *end = start + in_[i].bytes;
      for (++i; i < a.in.size() && a.in[i].data == end && a.in[i].type.dtype == t; ++i) {
        count += in_[i].bytes / elem;
        end += in_[i].bytes;
      }
      auto h = ctx.comm->startAllreduce(start, count, t, runtime::ReduceOp::Sum, what_, scale,
                                        algorithm_);
      if (!h) return h.takeError();
      handles.push_back(*h);
    }
    InFlight::get().put(a.op, std::move(handles));
    return Error::success();
  }

private:
  bool mean_ = true, deferred_ = false;
  runtime::Algorithm algorithm_ = runtime::Algorithm::Flat;
  std::string what_;
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
