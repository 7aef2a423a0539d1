// Queues and events: how the runtime launches work without waiting for it.
// A queue runs the work submitted to it in order: on the calling thread (the
// host's compute queue), on a thread of its own (copies, communication), or
// on a device stream. An event marks a point in a queue's work; other queues
// wait on it, which is how the executor follows dependencies between queues.
// Failures are values: a piece of work returns an Error, the queue skips its
// later work, and the error reaches whoever waits.
#pragma once

#include "ir/Error.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace dtnn::runtime {

// Seconds on a monotonic clock shared by all queues and profiles.
double monotonicSeconds();

// An event that a device completes (a CUDA event recorded on a stream): a
// stream of the same device waits for it without the host, the host by
// blocking in wait().
class DeviceEvent {
public:
  virtual ~DeviceEvent();
  // Blocks until the device has reached the event; the error of the device's
  // work before it, if any.
  virtual Error wait() const = 0;
  virtual bool done() const = 0;
  // Seconds from `earlier` to this event on the device's clock, both
  // recorded with Queue::recordTimed; negative when unknown.
  virtual double secondsSince(const DeviceEvent &earlier) const {
    (void)earlier;
    return -1;
  }
};

// The point in a queue's work when everything submitted before it finished.
class Event {
public:
  // An event that has already happened, without error.
  Event() = default;

  bool done() const;
  // Blocks until the event happens; returns the error of the work before it
  // on its queue, if any.
  Error wait() const;
  // When it happened (monotonicSeconds), or 0 before.
  double time() const;

  // For queue implementations: a pending event, and marking it done.
  static Event pending();
  void complete(Error error) const;
  // An event a device completes.
  static Event fromDevice(std::shared_ptr<const DeviceEvent> device);
  // The device's event, or null for a host event.
  const DeviceEvent *device() const { return device_.get(); }

private:
  struct State {
    mutable std::mutex m;
    std::condition_variable cv;
    bool done = false;
    double time = 0;
    Error error;
  };
  std::shared_ptr<State> s_;
  std::shared_ptr<const DeviceEvent> device_;
};

class Queue {
public:
  virtual ~Queue();
  // A name for profiles and messages: "compute", "copy", "comm".
  virtual std::string_view name() const = 0;
  // Runs `work` after everything submitted before; after a failure the queue
  // skips work until synchronize().
  virtual void submit(std::function<Error()> work) = 0;
  // Work submitted later starts only after `e` happened; it is skipped if
  // the work before `e` failed.
  virtual void waitFor(const Event &e) = 0;
  // An event that happens once all work submitted so far has finished.
  virtual Event record() = 0;
  // The same, with the time it happens kept on the device for profiles
  // (DeviceEvent::secondsSince); a host queue's record().
  virtual Event recordTimed() { return record(); }
  // Blocks until all work submitted so far has finished; returns the first
  // failure since the last synchronize() and clears it.
  virtual Error synchronize() = 0;

  // For queues whose work finishes after submit() returns (device streams),
  // so that an asynchronous fault can be traced to the work that raised it:
  // the number of pieces of work submitted so far, and of those that had
  // finished when the queue last failed (-1 when the queue cannot tell).
  virtual int64_t submitted() const { return -1; }
  virtual int64_t finishedBeforeFailure() const { return -1; }
};

// A queue that runs work at once on the submitting thread.
std::unique_ptr<Queue> makeInlineQueue(std::string name);
// A queue with a thread of its own that runs the work in order.
std::unique_ptr<Queue> makeThreadQueue(std::string name);

} // namespace dtnn::runtime
