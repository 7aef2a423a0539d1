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
    in_ = r.in; // any layout: whole buffers are reduced
    mean_ = r.op.attrs().getString("op") == "mean";
    int64_t bucket = r.op.attrs().getInt("bucket");
    uint64_t bytes = 0;
    for (const auto &d : r.in) bytes += d.bytes;
    what_ = "allreduce of " + (bucket >= 0 ? "bucket " + std::to_string(bucket) : std::string("a gradient")) +
            " (" + std::to_string(bytes) + " bytes)";
  }
  runtime::QueueKind queue() const override { return runtime::QueueKind::Comm; }
  bool wantsContiguousOperands() const override { return true; }
  Error run(const KernelArgs &a, runtime::ExecContext &ctx) override {
    if (!ctx.comm) return Error::make("no communicator");
    // A mean weighs each rank by its share of the global batch.
    double scale = mean_ ? ctx.share() : 1.0;
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
      if (Error e = ctx.comm->allreduce(start, count, t, runtime::ReduceOp::Sum, what_, scale)) return e;
    }
    return Error::success();
  }

private:
  bool mean_ = true;
  std::string what_;
};

class AllreduceWait : public runtime::Kernel {
public:
  explicit AllreduceWait(const KernelRequest &r) : Kernel(r) { in_ = r.in; }
  Error run(const KernelArgs &, runtime::ExecContext &) override { return Error::success(); }
};

} // namespace

void registerCollectiveKernels(KernelTable &t) {
  t.addKernel("allreduce_start", [](const KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
    return std::unique_ptr<runtime::Kernel>(new AllreduceStart(r));
  }, runtime::LayoutKind::Any);
  t.addKernel("allreduce_wait", [](const KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
    return std::unique_ptr<runtime::Kernel>(new AllreduceWait(r));
  }, runtime::LayoutKind::Any);
}

DTNN_REFERENCE_KERNELS(registerCollectiveKernels)

} // namespace dtnn::reference
