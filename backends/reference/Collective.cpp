// Kernels of the collective ops (ir/ops/Collective.cpp). allreduce_start runs
// on the communication queue and reduces its buffers through the run's
// communicator, as one buffer when buffer assignment laid them out
// contiguously; allreduce_wait runs on the compute queue and does nothing
// itself: the executor makes it wait for its start's event, so kernels
// scheduled between the two run while the reduction is in flight.
#include "backends/reference/KernelTable.h"
#include "runtime/Communicator.h"

namespace dtnn::reference {

namespace {

using runtime::KernelRequest;

class AllreduceStart : public runtime::Kernel {
public:
  explicit AllreduceStart(const KernelRequest &r) : Kernel(r) {
    mean_ = r.op.attrs().getString("op") == "mean";
  }
  runtime::QueueKind queue() const override { return runtime::QueueKind::Comm; }
  bool wantsContiguousOperands() const override { return true; }
  Error run(const KernelArgs &a, runtime::ExecContext &ctx) override {
    if (!ctx.comm) return Error::make("no communicator");
    auto op = mean_ ? runtime::ReduceOp::Mean : runtime::ReduceOp::Sum;
    size_t i = 0;
    while (i < a.in.size()) {
      // Runs of buffers that lie back to back with one element type go as one.
      char *start = static_cast<char *>(a.in[i].data);
      ir::DType t = a.in[i].type.dtype;
      size_t count = static_cast<size_t>(a.in[i].numel());
      char *end = start + in_[i].bytes;
      for (++i; i < a.in.size() && a.in[i].data == end && a.in[i].type.dtype == t; ++i) {
        count += static_cast<size_t>(a.in[i].numel());
        end += in_[i].bytes;
      }
      if (Error e = ctx.comm->allreduce(start, count, t, op)) return e;
    }
    return Error::success();
  }

private:
  bool mean_ = true;
};

class AllreduceWait : public runtime::Kernel {
public:
  explicit AllreduceWait(const KernelRequest &r) : Kernel(r) {}
  Error run(const KernelArgs &, runtime::ExecContext &) override { return Error::success(); }
};

} // namespace

void registerCollectiveKernels(KernelTable &t) {
  t.addKernel("allreduce_start", [](const KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
    return std::unique_ptr<runtime::Kernel>(new AllreduceStart(r));
  });
  t.addKernel("allreduce_wait", [](const KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
    return std::unique_ptr<runtime::Kernel>(new AllreduceWait(r));
  });
}

DTNN_REFERENCE_KERNELS(registerCollectiveKernels)

} // namespace dtnn::reference
