#include "runtime/Queue.h"

#include <chrono>
#include <deque>
#include <thread>

namespace dtnn::runtime {

namespace {

// A failure equal to `e` (success for success), for each of the many that wait on one event.
Error copyOf(const Error &e) {
  if (!e) return Error::success();
  Error copy = Error::make(e.loc(), e.message());
  for (const ErrorNote &n : e.notes()) copy.addNote(n.message, n.loc);
  return copy;
}

} // namespace

double monotonicSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

DeviceEvent::~DeviceEvent() = default;

Event Event::fromDevice(std::shared_ptr<const DeviceEvent> device) {
  Event e;
  e.device_ = std::move(device);
  return e;
}

bool Event::done() const {
  if (device_) return device_->done();
  if (!s_) return true;
  std::lock_guard<std::mutex> lock(s_->m);
  return s_->done;
}

Error Event::wait() const {
  if (device_) return device_->wait();
  if (!s_) return Error::success();
  std::unique_lock<std::mutex> lock(s_->m);
  s_->cv.wait(lock, [&] { return s_->done; });
  return copyOf(s_->error);
}

double Event::time() const {
  if (!s_) return 0;
  std::lock_guard<std::mutex> lock(s_->m);
  return s_->time;
}

Event Event::pending() {
  Event e;
  e.s_ = std::make_shared<State>();
  return e;
}

void Event::complete(Error error) const {
  if (!s_) return;
  {
    std::lock_guard<std::mutex> lock(s_->m);
    s_->done = true;
    s_->time = monotonicSeconds();
    s_->error = std::move(error);
    s_->error.ignore(); // each waiter gets a copy to check; the queue's own copy is reported
  }
  s_->cv.notify_all();
}

Queue::~Queue() = default;

namespace {

// Runs work on the caller's thread; an event is done when recorded.
class InlineQueue final : public Queue {
public:
  explicit InlineQueue(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  void submit(std::function<Error()> work) override {
    if (!failure_) failure_ = work();
  }
  void waitFor(const Event &e) override {
    Error err = e.wait();
    if (!failure_) failure_ = std::move(err);
  }
  Event record() override {
    Event e = Event::pending();
    e.complete(copyOf(failure_));
    return e;
  }
  Error synchronize() override { return std::exchange(failure_, Error::success()); }

private:
  std::string name_;
  Error failure_;
};

// One worker thread takes tasks in order. A task is work, a wait on another
// event, or an event to complete; after a failure the worker completes
// events with it and skips work until synchronize() clears it.
class ThreadQueue final : public Queue {
public:
  explicit ThreadQueue(std::string name) : name_(std::move(name)), worker_([this] { loop(); }) {}
  ~ThreadQueue() override {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  std::string_view name() const override { return name_; }
  void submit(std::function<Error()> work) override { push({std::move(work), {}, {}}); }
  void waitFor(const Event &e) override { push({nullptr, e, {}}); }
  Event record() override {
    Event e = Event::pending();
    push({nullptr, {}, e});
    return e;
  }
  Error synchronize() override {
    Event e = record();
    consumeError(e.wait()); // the failure, if any, is failure_
    std::lock_guard<std::mutex> lock(m_);
    return std::exchange(failure_, Error::success());
  }

private:
  struct Task {
    std::function<Error()> work;
    Event waitOn;   // when no work: wait for this
    Event complete; // when no work: mark this done
  };

  void push(Task t) {
    {
      std::lock_guard<std::mutex> lock(m_);
      tasks_.push_back(std::move(t));
    }
    cv_.notify_all();
  }

  void loop() {
    while (true) {
      Task t;
      bool failed = false;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        t = std::move(tasks_.front());
        tasks_.pop_front();
        failed = bool(failure_);
      }
      Error result;
      if (t.work) {
        if (!failed) result = t.work();
      } else if (!failed) {
        result = t.waitOn.wait();
      }
      std::lock_guard<std::mutex> lock(m_);
      if (result && !failure_) failure_ = std::move(result);
      if (!t.work) t.complete.complete(copyOf(failure_));
    }
  }

  std::string name_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;
  Error failure_;
  bool stop_ = false;
  std::thread worker_;
};

} // namespace

std::unique_ptr<Queue> makeInlineQueue(std::string name) {
  return std::make_unique<InlineQueue>(std::move(name));
}

std::unique_ptr<Queue> makeThreadQueue(std::string name) {
  return std::make_unique<ThreadQueue>(std::move(name));
}

} // namespace dtnn::runtime
