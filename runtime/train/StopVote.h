// How the ranks of a run agree to stop between two steps when a signal
// reached any of them: before each step every rank finishes the vote it
// started before the previous step and starts the next one with the signal
// it caught since (a one-integer non-blocking allreduce on a channel of its
// own, which the step's computation hides). All ranks therefore stop before
// the same step, write one checkpoint together and say the same thing,
// whichever of them was signalled; before, a signalled rank stopped alone
// and the others waited for it until the watchdog ended the job.
#pragma once

#include "runtime/Communicator.h"

#include <memory>
#include <string>

namespace dtnn::runtime {

// A stop the ranks agreed on: the signal (0: go on; the highest number when
// ranks caught different ones) and the lowest and highest rank it reached.
struct StopRequest {
  int signal = 0;
  int firstRank = 0, lastRank = 0;
  // "rank 1", "ranks 0 and 1", "ranks 0 to 3".
  std::string ranks() const;
};

class StopVote {
public:
  // `channel`: the ranks, on a channel no other collective uses; null for a
  // process alone, which stops at its own signal at once.
  explicit StopVote(std::unique_ptr<Communicator> channel);
  ~StopVote();

  // Called on every rank before each step: the result of the vote in flight
  // (the signals caught before the previous step), and, when it says go on,
  // starts the next vote with this rank's signal.
  Expected<StopRequest> beforeStep();

  // Finishes the vote in flight, if any, so that every rank knows the same
  // before it leaves the steps (at the end of an epoch).
  Expected<StopRequest> settle();

private:
  Expected<StopRequest> finish();

  std::unique_ptr<Communicator> channel_;
  // signal << 32 | rank and signal << 32 | (2^31 - 1 - rank), reduced with Max.
  int64_t ballot_[2] = {0, 0};
  bool inFlight_ = false; // a vote was started and not finished
  uint64_t handle_ = 0;   // its handle
};

} // namespace dtnn::runtime
