// The reports of an elastic job's ranks (Elastic.h): one small file each, written whole
// (writeOutput), so that the launcher never reads half of one.
#include "runtime/comm/Elastic.h"

#include "ir/Output.h"

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dtnn::runtime::elastic {

std::string reportDir() {
  const char *dir = std::getenv("DTNN_ELASTIC_DIR");
  return dir ? dir : "";
}

void reportCheckpoint(const std::string &path, int64_t step) {
  std::string dir = reportDir();
  if (dir.empty()) return;
  // Absolute, so that it names the file whatever folder the next job starts in.
  std::error_code ec;
  std::filesystem::path full = std::filesystem::absolute(path, ec);
  (void)writeOutput(dir + "/checkpoint", (ec ? path : full.string()) + "\n" +
                                              std::to_string(step) + "\n");
}

void reportLost(int rank, const std::vector<int> &ranks, const std::vector<std::string> &nodes) {
  std::string dir = reportDir();
  if (dir.empty()) return;
  std::string text;
  for (int r : ranks) text += "rank " + std::to_string(r) + "\n";
  for (const std::string &n : nodes) text += "node " + n + "\n";
  (void)writeOutput(dir + "/lost." + std::to_string(rank), text);
}

Report readReport(const std::string &dir) {
  namespace fs = std::filesystem;
  Report r;
  if (std::ifstream in(dir + "/checkpoint"); in) std::getline(in, r.checkpoint);
  std::error_code ec;
  int lowest = INT_MAX;
  std::string lowestPath;
  for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("lost.", 0) != 0) continue;
    char *end = nullptr;
    long rank = std::strtol(name.c_str() + 5, &end, 10);
    if (*end != '\0' || rank < 0 || rank >= lowest) continue;
    lowest = static_cast<int>(rank);
    lowestPath = e.path().string();
  }
  if (lowestPath.empty()) return r;
  // The lowest rank's view: with the job cut in two, the part of rank 0 (which writes the
  // checkpoints) is the one that goes on.
  r.reporter = lowest;
  std::ifstream in(lowestPath);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("rank ", 0) == 0) r.lostRanks.push_back(std::atoi(line.c_str() + 5));
    if (line.rfind("node ", 0) == 0) r.lostNodes.push_back(line.substr(5));
  }
  return r;
}

} // namespace dtnn::runtime::elastic
