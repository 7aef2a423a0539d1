// The watchdog of an MPI job: bounds the time any collective may wait.
// Collectives register while they run (a Scope). A thread checks them every
// few milliseconds and answers the other ranks' questions on the control
// channel. When a collective has waited longer than the timeout, it asks
// every other rank what it is doing and waits a few seconds for the answers.
// A rank in declared work (runtime/DeclaredWork.h: writing a checkpoint)
// whose progress grew within the timeout is slow, not stuck: the collective
// waits another timeout, and the first time says so. Otherwise it prints
// which ranks did not answer (stopped, hung or dead), what the others are
// doing, and ends the job with MPI_Abort.
#pragma once

#include "runtime/comm/Slowdown.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace dtnn::runtime {

class Watchdog {
public:
  // progressSeconds: the tick while reductions are in flight (0: 100 ms;
  // messages then move mostly between kernels).
  // rankNodes: on several nodes, each rank's node name, for messages (empty
  // on one node).
  // slowdownFactor: a collective whose waits grow past that many times their usual length
  // (runtime/comm/Slowdown.h) ends the job, naming the node whose link slowed when the
  // job spans several (0: never).
  Watchdog(MPI_Comm control, int rank, int size, std::vector<std::string> rankNodes,
           double timeoutSeconds, double progressSeconds, double slowdownFactor);
  ~Watchdog();

  // Registers a collective for as long as it lives.
  class Scope {
  public:
    Scope(Watchdog &w, const std::string &what) : w_(w), id_(w.begin(what)) {}
    ~Scope() { w_.end(id_); }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    Watchdog &w_;
    int id_;
  };

  // Counts reductions started and not yet waited for: while there are any,
  // the watchdog's thread ticks every progressSeconds, and each tick's MPI
  // call advances their messages even while the compute thread is inside a
  // kernel.
  void inFlight(int delta) { started_ += delta; }

  // Registers `advance` (under `key`; an empty function removes it) to be
  // called on each tick while reductions are in flight: a communicator's
  // hierarchical reductions move on to their next stage there.
  void onTick(const void *key, std::function<void()> advance);

private:
  struct InFlight {
    std::string what;
    double since = 0;
  };
  int begin(const std::string &what);
  void end(int id);
  void loop();
  // Answers a question that arrived, and posts the receive of the next.
  void serve();
  // What this rank is doing, as an answer: "W PROGRESS TEXT" in declared
  // work, "C TEXT" otherwise.
  std::string status(double now);
  // Asks the other ranks; returns when one of them is slow in declared work
  // (the collective may wait on), else reports and ends the job.
  void expire(const InFlight &late, double now);
  // The seconds a probe of each other node takes (its first rank sends kProbeBytes back), by
  // that rank; infinite for one that did not answer within 10 s.
  std::map<int, double> probeNodes();
  // Reports a slowdown, naming the node whose link slowed where that can be told, and ends
  // the job.
  [[noreturn]] void slowedDown(const Slowdown &s);
  // Whether the answer of `rank` shows declared work that progressed within
  // the timeout; `text` becomes the answer's text.
  bool progressing(int rank, const std::string &answer, double now, std::string &text);

  MPI_Comm control_;
  int rank_, size_;
  std::vector<std::string> rankNodes_;
  double timeout_;
  std::chrono::microseconds busyTick_;
  std::mutex mutex_;
  std::map<int, InFlight> inFlight_;
  int nextId_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> started_{0};
  std::mutex tickMutex_; // guards ticks_; never held with mutex_
  std::map<const void *, std::function<void()>> ticks_;
  // Per rank, the progress of its declared work last seen and when it grew.
  std::map<int, std::pair<uint64_t, double>> progress_;
  std::string lastNote_; // the last "waiting for slow work" note printed
  SlowdownDetector slowdown_;   // under mutex_
  std::optional<Slowdown> slow_; // under mutex_: a slowdown for the thread to report
  bool probed_ = false;          // whether probe_ was taken (the watchdog's thread)
  std::map<int, double> probe_;  // probeNodes() once the waits had their usual times
  MPI_Request question_ = MPI_REQUEST_NULL;
  int questionBuf_ = 0;
  std::thread thread_;
};

} // namespace dtnn::runtime
