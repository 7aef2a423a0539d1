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
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace dtnn::runtime {

// Seconds on a monotonic clock shared by all queues and profiles.
double monotonicSeconds();

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

private:
  struct State {
    mutable std::mutex m;
    std::condition_variable cv;
    bool done = false;
    double time = 0;
    Error error;
  };
  std::shared_ptr<State> s_;
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
  // Blocks until all work submitted so far has finished; returns the first
  // failure since the last synchronize() and clears it.
  virtual Error synchronize() = 0;
};

// A queue that runs work at once on the submitting thread.
std::unique_ptr<Queue> makeInlineQueue(std::string name);
// A queue with a thread of its own that runs the work in order.
std::unique_ptr<Queue> makeThreadQueue(std::string name);

} // namespace dtnn::runtime
