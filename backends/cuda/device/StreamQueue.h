// Queues on CUDA streams. Work submitted to a stream queue runs at once on
// the submitting thread and launches its kernels on the stream, which runs
// them later; an event is a CUDA event recorded on the stream, which
// another stream waits for with cudaStreamWaitEvent and the host by
// blocking. After each piece of work the queue launches a marker that
// writes its number into host memory, so that an asynchronous fault is
// traced to the work that raised it (finishedBeforeFailure).
#pragma once

#include "backends/cuda/device/Device.h"

#include <atomic>
#include <memory>
#include <string>

namespace dtnn::cuda {

class StreamQueue final : public runtime::Queue {
public:
  // A stream of the given priority (0: the default; 1: higher, for copies) with its own cuDNN
  // and cuBLAS handles; `failure` says why one could not be made.
  StreamQueue(std::string name, int priority);
  ~StreamQueue() override;

  std::string_view name() const override { return name_; }
  void submit(std::function<Error()> work) override;
  void waitFor(const runtime::Event &e) override;
  runtime::Event record() override;
  runtime::Event recordTimed() override;
  Error synchronize() override;
  int64_t submitted() const override { return count_; }
  int64_t finishedBeforeFailure() const override { return failedAt_; }

  const Launch &launch() const { return launch_; }
  cudaStream_t stream() const { return launch_.stream; }
  // Sets the marker word to `count` (before a captured graph whose markers start there is
  // replayed; the stream must be idle).
  void resetProgress(int64_t count);
  // The next marker number; a capture restores it after recording (replays reuse the numbers).
  void setSubmitted(int64_t count) { count_ = count; }

private:
  void keep(Error e);
  runtime::Event recordEvent(unsigned flags);
  std::string name_;
  Launch launch_;
  Error failure_;
  int64_t count_ = 0;
  int64_t failedAt_ = -1;
  // Host memory the markers write, and its address on the device.
  volatile int64_t *progress_ = nullptr;
  int64_t *progressDevice_ = nullptr;
};

// The stream queue behind `q`, or null when `q` is not one.
StreamQueue *streamQueue(runtime::Queue &q);

// Launches the marker kernel writing `value` to `where` (device-visible host memory).
cudaError_t launchMarker(int64_t *where, int64_t value, cudaStream_t stream);

} // namespace dtnn::cuda
