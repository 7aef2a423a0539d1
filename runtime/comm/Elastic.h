// What the ranks of an elastic job (`dtnn-run --elastic N`) tell the launcher that restarts
// it: the checkpoints rank 0 writes, and the ranks and nodes a rank found lost when its
// watchdog ended the job. The launcher names a folder in $DTNN_ELASTIC_DIR; outside an
// elastic job these do nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn::runtime::elastic {

// The folder of the job's reports, or "" outside an elastic job.
std::string reportDir();

// Records that `path` holds the training state after global step `step` (rank 0, after it
// wrote the file whole).
void reportCheckpoint(const std::string &path, int64_t step);

// Records, from `rank`, the ranks that stopped answering and their nodes (names as the
// ranks' host names give them; empty on one node).
void reportLost(int rank, const std::vector<int> &ranks, const std::vector<std::string> &nodes);

// What the launcher reads back after a job ended.
struct Report {
  std::string checkpoint; // the last checkpoint written, "" if none
  int reporter = -1;      // the lowest rank that reported lost ranks; -1 if none did
  std::vector<int> lostRanks;
  std::vector<std::string> lostNodes;
};
Report readReport(const std::string &dir);

} // namespace dtnn::runtime::elastic
