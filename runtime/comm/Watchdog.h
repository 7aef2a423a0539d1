// The watchdog of an MPI job: bounds the time any collective may wait.
// Collectives register while they run (a Scope). A thread checks them every
// few milliseconds and answers the other ranks' questions on the control
// channel. When a collective has waited longer than the timeout, it asks
// every other rank what it is doing, waits a few seconds for the answers,
// prints which ranks did not answer (stopped, hung or dead) and what the
// others are doing, and ends the job with MPI_Abort.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace dtnn::runtime {

class Watchdog {
public:
  // progressSeconds: the tick while reductions are in flight (0: 100 ms;
  // messages then move mostly between kernels).
  Watchdog(MPI_Comm control, int rank, int size, double timeoutSeconds, double progressSeconds);
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
  // What this rank is doing, as an answer.
  std::string status(double now);
  // Asks the other ranks, reports, and ends the job.
  [[noreturn]] void expire(const InFlight &late, double now);

  MPI_Comm control_;
  int rank_, size_;
  double timeout_;
  std::chrono::microseconds busyTick_;
  std::mutex mutex_;
  std::map<int, InFlight> inFlight_;
  int nextId_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> started_{0};
  MPI_Request question_ = MPI_REQUEST_NULL;
  int questionBuf_ = 0;
  std::thread thread_;
};

} // namespace dtnn::runtime
