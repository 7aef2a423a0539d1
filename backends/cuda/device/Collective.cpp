// The Collective family of the cuda device module: allreduce_start and allreduce_wait on the
// device, by NCCL (one rank per GPU). The job's communicator (MPI, or the one-rank local one)
// bootstraps NCCL: rank 0's unique id is broadcast over it when the first reduction starts, on
// every rank at the same step of the same plan. A start orders the reduction after the compute
// stream's work by a device event, reduces each run of back-to-back buffers in place on the
// module's communication stream (the mean folded in: ncclAvg when every rank weighs 1/P,
// else each rank's own factor by ncclRedOpCreatePreMulSum), and records an event there; its
// wait makes the compute stream wait for that event. No host thread blocks, so a captured step
// (a CUDA graph) holds the reductions too. A watchdog thread polls ncclCommGetAsyncError and
// the age of the reductions in flight: an error, or one older than --comm-timeout, aborts the
// communicator and ends the job with a message, as the MPI watchdog does.
#include "backends/cuda/device/Device.h"

#include "runtime/BucketReduction.h"
#include "runtime/Queue.h"

#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

namespace dtnn::cuda {

namespace {

Error check(ncclResult_t r, const char *what) {
  if (r == ncclSuccess) return Error::success();
  return Error::make(std::string(what) + ": " + ncclGetErrorString(r) +
                     (r == ncclInvalidUsage ? " (two ranks on one GPU? NCCL refuses them; "
                                              "run with --collectives mpi)"
                                            : ""));
}

Expected<ncclDataType_t> ncclType(ir::DType t) {
  switch (t) {
  case ir::DType::F32: return ncclFloat32;
  case ir::DType::F64: return ncclFloat64;
  default:
    return Error::make("NCCL reduces f32 and f64 buffers here, got " + std::string(ir::dtypeName(t)));
  }
}

// A reduction in flight: its event on the communication stream and when it started.
struct Pending {
  cudaEvent_t done = nullptr;
  std::string what;
  double since = 0;
};

// Set when the process exits (before the CUDA runtime's own teardown, registered earlier):
// the watchdog then stops, so that a context going away is never reported as a failure.
std::atomic<bool> gExiting{false};

// The module's NCCL communicator over the job's ranks, its stream, and its watchdog. It lives
// until the process ends (destroying a communicator at exit could wait for ranks that are gone).
class Nccl {
public:
  static Expected<Nccl *> get(runtime::Communicator &job) {
    static std::mutex mu;
    static Nccl *one = nullptr;
    std::lock_guard<std::mutex> lock(mu);
    if (one && (one->rank_ != job.rank() || one->size_ != job.size()))
      return Error::make("the NCCL communicator was made for rank " + std::to_string(one->rank_) +
                         " of " + std::to_string(one->size_) + ", not " +
                         std::to_string(job.rank()) + " of " + std::to_string(job.size()));
    if (one) return one;
    auto n = std::unique_ptr<Nccl>(new Nccl(job.rank(), job.size()));
    if (Error e = n->init(job)) return e;
    one = n.release();
    return one;
  }

  cudaStream_t stream() const { return stream_; }
  ncclComm_t comm() const { return comm_; }
  int size() const { return size_; }

  // The reduction op that scales each rank's buffer by `scale` before summing.
  Expected<ncclRedOp_t> op(double scale, ncclDataType_t type) {
    if (scale == 1.0) return ncclSum;
    if (scale * size() == 1.0) return ncclAvg;
    auto key = std::make_pair(scale, int(type));
    if (auto it = premul_.find(key); it != premul_.end()) return it->second;
    ncclRedOp_t op;
    float f = static_cast<float>(scale);
    void *scalar = type == ncclFloat64 ? static_cast<void *>(&scale) : static_cast<void *>(&f);
    if (Error e = check(ncclRedOpCreatePreMulSum(&op, scalar, type, ncclScalarHostImmediate, comm_),
                        "ncclRedOpCreatePreMulSum"))
      return e;
    premul_[key] = op;
    return op;
  }

  void track(cudaEvent_t done, const std::string &what) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back({done, what, runtime::monotonicSeconds()});
  }

private:
  Nccl(int rank, int size) : rank_(rank), size_(size) {}

  // Over `job`, which bootstraps it (and which it does not keep).
  Error init(runtime::Communicator &job) {
    ncclUniqueId id{};
    if (rank_ == 0)
      if (Error e = check(ncclGetUniqueId(&id), "ncclGetUniqueId")) return e;
    if (size_ > 1)
      if (Error e = job.broadcast(&id, sizeof id, 0, "sharing NCCL's unique id")) return e;
    if (Error e = check(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank"))
      return e;
    int lowest = 0, highest = 0;
    cudaDeviceGetStreamPriorityRange(&lowest, &highest);
    if (Error e = cuda::check(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, highest),
                              "cudaStreamCreateWithPriority"))
      return e;
    timeout_ = settings().commTimeoutSeconds;
    std::atexit([] { gExiting = true; });
    std::thread([this] { watch(); }).detach();
    return Error::success();
  }

  // Every 100 ms: NCCL's asynchronous error, and reductions in flight past the timeout.
  void watch() {
    cudaSetDevice(deviceInfo().device); // the events' device, current in this thread too
    while (!gExiting) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::string failure;
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess)
        failure = std::string("NCCL failed: ") + ncclGetErrorString(async);
      {
        std::lock_guard<std::mutex> lock(mu_);
        double now = runtime::monotonicSeconds();
        while (!pending_.empty() && cudaEventQuery(pending_.front().done) != cudaErrorNotReady) {
          cudaEventDestroy(pending_.front().done);
          pending_.erase(pending_.begin());
        }
        if (failure.empty() && !pending_.empty() && now - pending_.front().since > timeout_) {
          char secs[32];
          std::snprintf(secs, sizeof secs, "%.1f s", now - pending_.front().since);
          failure = "'" + pending_.front().what + "' has not finished on the GPU after " + secs +
                    " (--comm-timeout " + std::to_string(int(timeout_)) +
                    " s); a rank stopped, hung or died, or its link is down";
        }
      }
      if (failure.empty()) continue;
      if (gExiting) return;
      std::cout << std::flush;
      std::cerr << ("dtnn-run: rank " + std::to_string(rank_) + ": error: " + failure +
                    "; ending the job\n")
                << std::flush;
      ncclCommAbort(comm_);
      // The launcher ends the other ranks when this one exits with a failure.
      std::_Exit(4);
    }
  }

  int rank_ = 0, size_ = 1;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  double timeout_ = 60;
  std::map<std::pair<double, int>, ncclRedOp_t> premul_;
  std::mutex mu_;
  std::vector<Pending> pending_;
};

// Each allreduce_start's event of its reductions' end, for its wait.
class Done {
public:
  static Done &get() {
    static Done d;
    return d;
  }
  void put(const ir::Op *start, cudaEvent_t e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_[start] = e;
  }
  cudaEvent_t take(const ir::Op *start) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = events_.find(start);
    if (it == events_.end()) return nullptr;
    cudaEvent_t e = it->second;
    events_.erase(it);
    return e;
  }

private:
  std::mutex mu_;
  std::map<const ir::Op *, cudaEvent_t> events_;
};

class AllreduceStart : public DeviceKernel {
public:
  explicit AllreduceStart(const DeviceKernelSpec &s) : op_(s.op), bucket_(*s.op, s.in) {}
  Error run(const runtime::KernelArgs &a, runtime::ExecContext &ctx) override {
    if (!ctx.comm) return Error::make("no communicator");
    Expected<Launch> l = launchOf(ctx);
    if (!l) return l.takeError();
    auto nccl = Nccl::get(*ctx.comm);
    if (!nccl) return nccl.takeError();
    // The compute stream's work so far (the gradients) before the reduction.
    cudaEvent_t ready = nullptr, done = nullptr;
    if (Error e = cuda::check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate")) return e;
    if (Error e = cuda::check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate")) return e;
    cudaEventRecord(ready, l->stream);
    cudaStreamWaitEvent((*nccl)->stream(), ready, 0);
    cudaEventDestroy(ready);
    double scale = bucket_.scale(ctx);
    if (Error e = check(ncclGroupStart(), "ncclGroupStart")) return e;
    for (const runtime::BufferRun &run : bucket_.runs(a.in)) {
      auto type = ncclType(run.dtype);
      if (!type) return type.takeError();
      auto op = (*nccl)->op(scale, *type);
      if (!op) return op.takeError();
      if (Error e = check(ncclAllReduce(run.data, run.data, run.count, *type, *op, (*nccl)->comm(),
                                        (*nccl)->stream()),
                          "ncclAllReduce"))
        return e;
    }
    if (Error e = check(ncclGroupEnd(), "ncclGroupEnd")) return e;
    cudaEventRecord(done, (*nccl)->stream());
    Done::get().put(op_, done);
    // A second event for the watchdog, which destroys it once the reduction is done (not in a
    // step being captured, whose events only the graph's replays record).
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(l->stream, &capturing);
    cudaEvent_t watched = nullptr;
    if (capturing == cudaStreamCaptureStatusNone &&
        cudaEventCreateWithFlags(&watched, cudaEventDisableTiming) == cudaSuccess) {
      cudaEventRecord(watched, (*nccl)->stream());
      (*nccl)->track(watched, bucket_.what());
    }
    return cuda::check(cudaGetLastError(), "starting an NCCL allreduce");
  }

private:
  const ir::Op *op_;
  runtime::BucketReduction bucket_;
};

class AllreduceWait : public DeviceKernel {
public:
  explicit AllreduceWait(const DeviceKernelSpec &s) : start_(s.op->operand(0)->definingOp()) {}
  Error run(const runtime::KernelArgs &, runtime::ExecContext &ctx) override {
    Expected<Launch> l = launchOf(ctx);
    if (!l) return l.takeError();
    cudaEvent_t done = Done::get().take(start_);
    if (!done) return Error::make("allreduce_wait without its start on the device");
    cudaStreamWaitEvent(l->stream, done, 0);
    cudaEventDestroy(done);
    return cuda::check(cudaGetLastError(), "waiting for an NCCL allreduce");
  }

private:
  const ir::Op *start_;
};

} // namespace

Expected<std::vector<std::pair<double, double>>> timeNcclAllreduces(runtime::Communicator &comm,
                                                                    double maxBytes, int repeats) {
  auto nccl = Nccl::get(comm);
  if (!nccl) return nccl.takeError();
  size_t most = static_cast<size_t>(maxBytes);
  void *buf = nullptr;
  if (Error e = cuda::check(cudaMalloc(&buf, most), "cudaMalloc")) return e;
  std::vector<std::pair<double, double>> out;
  float token = 0;
  Error failed;
  for (double bytes = 4096; bytes <= maxBytes && !failed; bytes *= 4) {
    double best = 1e30;
    for (int i = 0; i < repeats + 2 && !failed; ++i) {
      // Lines the ranks up, so that each time is of the reduction alone.
      if ((failed = comm.allreduce(&token, 1, ir::DType::F32, runtime::ReduceOp::Sum, "calibration")))
        break;
      double t0 = runtime::monotonicSeconds();
      failed = check(ncclAllReduce(buf, buf, size_t(bytes) / 4, ncclFloat32, ncclSum,
                                   (*nccl)->comm(), (*nccl)->stream()),
                     "ncclAllReduce");
      if (!failed) failed = cuda::check(cudaStreamSynchronize((*nccl)->stream()), "cudaStreamSynchronize");
      if (i >= 2) best = std::min(best, runtime::monotonicSeconds() - t0);
    }
    if (!failed) failed = comm.broadcast(&best, sizeof best, 0, "calibration");
    out.push_back({bytes, best});
  }
  cudaFree(buf);
  if (failed) return failed;
  return out;
}

void registerCollectiveKernels(DeviceRegistry &r) {
  r.add("allreduce_start", [](const DeviceKernelSpec &s) { return make<AllreduceStart>(s); });
  r.add("allreduce_wait", [](const DeviceKernelSpec &s) { return make<AllreduceWait>(s); });
}

} // namespace dtnn::cuda
