#include "backends/cuda/device/StreamQueue.h"

#include <mutex>
#include <vector>

namespace dtnn::cuda {

namespace {

// A CUDA event recorded on a stream; waiting for it from the host blocks.
class CudaEvent final : public runtime::DeviceEvent {
public:
  explicit CudaEvent(cudaEvent_t e) : e_(e) {}
  ~CudaEvent() override { cudaEventDestroy(e_); }
  Error wait() const override { return check(cudaEventSynchronize(e_), "cudaEventSynchronize"); }
  bool done() const override { return cudaEventQuery(e_) != cudaErrorNotReady; }
  double secondsSince(const runtime::DeviceEvent &earlier) const override {
    const auto *e = dynamic_cast<const CudaEvent *>(&earlier);
    float ms = 0;
    if (!e || cudaEventElapsedTime(&ms, e->e_, e_) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    return double(ms) / 1000.0;
  }
  cudaEvent_t event() const { return e_; }

private:
  cudaEvent_t e_;
};

} // namespace

StreamQueue::StreamQueue(std::string name, int priority) : name_(std::move(name)) {
  int least = 0, greatest = 0;
  keep(check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange"));
  int p = priority > 0 ? greatest : least;
  keep(check(cudaStreamCreateWithPriority(&launch_.stream, cudaStreamNonBlocking, p),
             "cudaStreamCreateWithPriority"));
  keep(check(cudnnCreate(&launch_.cudnn), "cudnnCreate"));
  if (launch_.cudnn) keep(check(cudnnSetStream(launch_.cudnn, launch_.stream), "cudnnSetStream"));
  keep(check(cublasCreate(&launch_.cublas), "cublasCreate"));
  if (launch_.cublas) keep(check(cublasSetStream(launch_.cublas, launch_.stream), "cublasSetStream"));
  keep(check(cublasLtCreate(&launch_.lt), "cublasLtCreate"));
  launch_.settings = &settings();
  launch_.info = &deviceInfo();
  void *host = nullptr;
  keep(check(cudaHostAlloc(&host, sizeof(int64_t), cudaHostAllocMapped), "cudaHostAlloc"));
  if (host) {
    progress_ = static_cast<volatile int64_t *>(host);
    *progress_ = 0;
    void *dev = nullptr;
    keep(check(cudaHostGetDevicePointer(&dev, host, 0), "cudaHostGetDevicePointer"));
    progressDevice_ = static_cast<int64_t *>(dev);
  }
}

StreamQueue::~StreamQueue() {
  if (launch_.stream) cudaStreamSynchronize(launch_.stream);
  if (launch_.lt) cublasLtDestroy(launch_.lt);
  if (launch_.cublas) cublasDestroy(launch_.cublas);
  if (launch_.cudnn) cudnnDestroy(launch_.cudnn);
  if (launch_.stream) cudaStreamDestroy(launch_.stream);
  if (progress_) cudaFreeHost(const_cast<int64_t *>(progress_));
  consumeError(std::move(failure_)); // a destructor has no one to report to
}

void StreamQueue::keep(Error e) {
  if (e && !failure_) failure_ = std::move(e);
  else consumeError(std::move(e));
}

void StreamQueue::submit(std::function<Error()> work) {
  int64_t number = count_++;
  if (failure_) return;
  // A failure the work returns is its own, already named; only a fault found later (by
  // synchronize) needs the markers to say where it was raised.
  if (Error e = work()) {
    keep(std::move(e));
    return;
  }
  if (progressDevice_) keep(check(launchMarker(progressDevice_, number + 1, launch_.stream), "the progress marker"));
}

void StreamQueue::waitFor(const runtime::Event &e) {
  if (failure_) return;
  if (const auto *d = dynamic_cast<const CudaEvent *>(e.device())) {
    keep(check(cudaStreamWaitEvent(launch_.stream, d->event(), 0), "cudaStreamWaitEvent"));
    return;
  }
  // A host queue's event: the work after it is launched only once it happened.
  keep(e.wait());
}

runtime::Event StreamQueue::record() { return recordEvent(cudaEventDisableTiming); }

runtime::Event StreamQueue::recordTimed() { return recordEvent(cudaEventDefault); }

runtime::Event StreamQueue::recordEvent(unsigned flags) {
  cudaEvent_t ev = nullptr;
  if (Error e = check(cudaEventCreateWithFlags(&ev, flags), "cudaEventCreate")) {
    keep(std::move(e));
    runtime::Event failed = runtime::Event::pending();
    failed.complete(Error::make("the " + name_ + " stream could not record an event"));
    return failed;
  }
  keep(check(cudaEventRecord(ev, launch_.stream), "cudaEventRecord"));
  return runtime::Event::fromDevice(std::make_shared<CudaEvent>(ev));
}

Error StreamQueue::synchronize() {
  failedAt_ = -1;
  Error e = check(cudaStreamSynchronize(launch_.stream), "an asynchronous fault on the GPU");
  if (e && !failure_ && progress_) failedAt_ = *progress_;
  keep(std::move(e));
  return std::exchange(failure_, Error::success());
}

void StreamQueue::resetProgress(int64_t count) {
  if (progress_) *progress_ = count;
  failedAt_ = -1;
}

StreamQueue *streamQueue(runtime::Queue &q) { return dynamic_cast<StreamQueue *>(&q); }

namespace {

// A captured graph, replayed on the stream it was captured from.
class CapturedStep final : public StepGraph {
public:
  CapturedStep(cudaGraphExec_t exec, int64_t base) : exec_(exec), base_(base) {}
  ~CapturedStep() override { cudaGraphExecDestroy(exec_); }
  Error replay(runtime::Queue &queue) override {
    StreamQueue *q = streamQueue(queue);
    if (!q) return Error::make("a CUDA graph is replayed on a stream of the cuda backend only");
    q->resetProgress(base_);
    return check(cudaGraphLaunch(exec_, q->stream()), "cudaGraphLaunch");
  }

private:
  cudaGraphExec_t exec_;
  int64_t base_;
};

} // namespace

Expected<std::unique_ptr<StepGraph>> captureStep(runtime::Queue &origin,
                                                 const std::function<Error()> &submit) {
  StreamQueue *q = streamQueue(origin);
  if (!q) return Error::make("only the work of a cuda stream can be captured as a graph");
  int64_t base = q->submitted();
  if (Error e = check(cudaStreamBeginCapture(q->stream(), cudaStreamCaptureModeThreadLocal),
                      "cudaStreamBeginCapture"))
    return e;
  Error work = submit();
  cudaGraph_t graph = nullptr;
  Error end = check(cudaStreamEndCapture(q->stream(), &graph), "cudaStreamEndCapture");
  if (work || end) {
    if (graph) cudaGraphDestroy(graph);
    if (work) {
      consumeError(std::move(end));
      return work;
    }
    return end;
  }
  cudaGraphExec_t exec = nullptr;
  Error inst = check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  cudaGraphDestroy(graph);
  if (inst) return inst;
  return std::unique_ptr<StepGraph>(new CapturedStep(exec, base));
}

} // namespace dtnn::cuda
