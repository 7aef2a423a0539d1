// `dtnn-run --elastic N`: launches a job of N ranks and, when ranks or nodes are lost, starts
// it again from its last checkpoint on the ranks that remain, as torchrun's elastic mode does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn::cli {

struct ElasticOptions {
  int64_t ranks = 1;       // the ranks of the first job
  int64_t maxRestarts = 3; // restarts after which a failure ends the run
  std::string launcher;    // the launcher's command ($DTNN_MPIRUN, else "mpirun")
  std::string program;     // this program's path, which the ranks run
};

// Runs the job with `args` (dtnn-run's arguments without the elastic options) until it
// ends well, fails in a way a restart would repeat, or runs out of restarts; returns the last
// job's exit status. Messages go to stderr, prefixed "dtnn-run: elastic: ".
int runElastic(const ElasticOptions &o, std::vector<std::string> args);

// Removes every occurrence of option `name` ("--resume") from `args`, with its value when
// `hasValue` (either "--name V" or "--name=V").
void dropOption(std::vector<std::string> &args, const std::string &name, bool hasValue);

} // namespace dtnn::cli
