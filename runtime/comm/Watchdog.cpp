#include "runtime/comm/Watchdog.h"
#include "runtime/comm/Elastic.h"

#include "runtime/DeclaredWork.h"
#include "runtime/Queue.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <vector>

namespace dtnn::runtime {

namespace {

constexpr int kQuestionTag = 1, kAnswerTag = 2, kProbeTag = 3;
constexpr int kAnswerBytes = 256;
// A probe's reply: large enough that a link's bandwidth, not its latency, sets its time.
constexpr int kProbeBytes = 512 << 10;
constexpr auto kTick = std::chrono::milliseconds(10);
// While reductions are in flight and progress is left to the kernels'
// boundaries: the watchdog still checks, less often (each check moves
// messages too).
constexpr auto kIdleBusyTick = std::chrono::milliseconds(100);

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

std::string millis(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", 1e3 * s);
  return buf;
}

} // namespace

Watchdog::Watchdog(MPI_Comm control, int rank, int size, std::vector<std::string> rankNodes,
                   double timeoutSeconds, double progressSeconds, double slowdownFactor)
    : control_(control), rank_(rank), size_(size), rankNodes_(std::move(rankNodes)),
      timeout_(timeoutSeconds), slowdown_(slowdownFactor),
      busyTick_(progressSeconds > 0 ? std::chrono::microseconds(std::max<int64_t>(
                                          1, static_cast<int64_t>(progressSeconds * 1e6)))
                                    : std::chrono::microseconds(kIdleBusyTick)) {
  MPI_Irecv(&questionBuf_, 1, MPI_INT, MPI_ANY_SOURCE, kQuestionTag, control_, &question_);
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  stop_ = true;
  thread_.join();
  if (question_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&question_);
    MPI_Wait(&question_, MPI_STATUS_IGNORE);
  }
  MPI_Comm_free(&control_);
}

int Watchdog::begin(const std::string &what) {
  std::lock_guard<std::mutex> lock(mutex_);
  int id = nextId_++;
  inFlight_[id] = {what, monotonicSeconds()};
  return id;
}

void Watchdog::end(int id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = inFlight_.find(id);
  if (it == inFlight_.end()) return;
  if (auto slow = slowdown_.record(it->second.what, monotonicSeconds() - it->second.since))
    if (!slow_) slow_ = slow;
  inFlight_.erase(it);
}

std::string Watchdog::status(double now) {
  if (auto work = DeclaredWork::current())
    return "W " + std::to_string(work->progress) + " is " + work->what + " since " +
           seconds(now - work->since);
  std::lock_guard<std::mutex> lock(mutex_);
  if (inFlight_.empty()) return "C is computing (in no collective)";
  const InFlight &f = inFlight_.begin()->second;
  return "C waits in '" + f.what + "' since " + seconds(now - f.since);
}

bool Watchdog::progressing(int rank, const std::string &answer, double now, std::string &text) {
  size_t space = answer.find(' ');
  text = space == std::string::npos ? answer : answer.substr(space + 1);
  if (answer.rfind("W ", 0) != 0) return false;
  size_t end = answer.find(' ', 2);
  uint64_t progress = std::strtoull(answer.c_str() + 2, nullptr, 10);
  text = end == std::string::npos ? "" : answer.substr(end + 1);
  auto [it, first] = progress_.try_emplace(rank, progress, now);
  if (first || progress != it->second.first) it->second = {progress, now};
  if (now - it->second.second <= timeout_) return true;
  text += ", with no progress for " + seconds(now - it->second.second);
  return false;
}

void Watchdog::serve() {
  int done = 0;
  MPI_Status st;
  MPI_Test(&question_, &done, &st);
  if (!done) return;
  if (questionBuf_ < 0) {
    // A probe: the bytes, unchanged, so that one buffer serves every reply in flight.
    static const std::vector<char> payload(kProbeBytes);
    MPI_Request r;
    MPI_Isend(payload.data(), kProbeBytes, MPI_CHAR, st.MPI_SOURCE, kProbeTag, control_, &r);
    MPI_Request_free(&r);
    MPI_Irecv(&questionBuf_, 1, MPI_INT, MPI_ANY_SOURCE, kQuestionTag, control_, &question_);
    return;
  }
  char answer[kAnswerBytes] = {};
  std::string s = status(monotonicSeconds());
  std::strncpy(answer, s.c_str(), kAnswerBytes - 1);
  // Small enough to go eagerly; the request is not waited for.
  MPI_Request r;
  MPI_Isend(answer, kAnswerBytes, MPI_CHAR, st.MPI_SOURCE, kAnswerTag, control_, &r);
  MPI_Request_free(&r);
  MPI_Irecv(&questionBuf_, 1, MPI_INT, MPI_ANY_SOURCE, kQuestionTag, control_, &question_);
}

void Watchdog::onTick(const void *key, std::function<void()> advance) {
  std::lock_guard<std::mutex> lock(tickMutex_);
  if (advance)
    ticks_[key] = std::move(advance);
  else
    ticks_.erase(key);
}

void Watchdog::loop() {
  while (!stop_) {
    std::this_thread::sleep_for(started_ > 0 ? busyTick_ : std::chrono::microseconds(kTick));
    if (started_ > 0) {
      std::lock_guard<std::mutex> lock(tickMutex_);
      for (auto &[key, advance] : ticks_) advance();
    }
    serve();
    std::optional<Slowdown> slow;
    bool probe = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slow = slow_;
      probe = !probed_ && slowdown_.hasUsual();
    }
    // Each node's link as it is while the waits have their usual length, for a slowdown to
    // be placed against.
    if (probe) {
      probe_ = probeNodes();
      probed_ = true;
    }
    if (slow) slowedDown(*slow);
    double now = monotonicSeconds();
    InFlight late;
    int lateId = -1;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto &[id, f] : inFlight_)
        if (now - f.since > timeout_) {
          late = f;
          lateId = id;
          break;
        }
    }
    if (lateId < 0) continue;
    expire(late, now);
    // A slow rank: the collective waits another timeout.
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = inFlight_.find(lateId); it != inFlight_.end()) it->second.since = monotonicSeconds();
  }
}

std::map<int, double> Watchdog::probeNodes() {
  std::map<int, double> out;
  if (rankNodes_.empty()) return out;
  std::vector<std::string> seen = {rankNodes_[static_cast<size_t>(rank_)]};
  static std::vector<char> reply(kProbeBytes);
  static int question; // outlives the freed send requests
  question = -(rank_ + 1);
  for (int r = 0; r < size_; ++r) {
    const std::string &node = rankNodes_[static_cast<size_t>(r)];
    if (std::find(seen.begin(), seen.end(), node) != seen.end()) continue;
    seen.push_back(node);
    MPI_Request recv, send;
    MPI_Irecv(reply.data(), kProbeBytes, MPI_CHAR, r, kProbeTag, control_, &recv);
    double t0 = monotonicSeconds();
    MPI_Isend(&question, 1, MPI_INT, r, kQuestionTag, control_, &send);
    MPI_Request_free(&send);
    int done = 0;
    while (!done && monotonicSeconds() - t0 < 10) {
      serve();
      MPI_Test(&recv, &done, MPI_STATUS_IGNORE);
      if (!done) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    if (!done) {
      MPI_Cancel(&recv);
      MPI_Wait(&recv, MPI_STATUS_IGNORE);
    }
    out[r] = done ? monotonicSeconds() - t0 : INFINITY;
  }
  return out;
}

void Watchdog::slowedDown(const Slowdown &s) {
  char factor[32];
  std::snprintf(factor, sizeof factor, "%g", slowdown_.factor());
  std::string msg = "dtnn-run: rank " + std::to_string(rank_) + ": error: '" + s.what +
                    "' waited " + millis(s.took) + " the last of " + std::to_string(s.times) +
                    " times in a row, where it usually waits " + millis(s.usual) +
                    " (--comm-slowdown " + factor + "): the job slowed; ";
  std::vector<std::string> slowNodes;
  std::map<int, double> now = probe_.empty() ? std::map<int, double>{} : probeNodes();
  // Each other node's probe against the reference: the ones 3 times slower or more.
  std::string mine = rankNodes_.empty() ? "" : rankNodes_[static_cast<size_t>(rank_)];
  std::vector<std::pair<int, double>> slowed;
  std::string links;
  for (const auto &[r, t] : now) {
    double before = probe_.count(r) ? probe_[r] : t;
    double k = t / std::max(before, 1e-9);
    char text[160];
    std::snprintf(text, sizeof text, "%s moves 512 KiB in %s, %.1fx its %s at the start",
                  rankNodes_[static_cast<size_t>(r)].c_str(), millis(t).c_str(), k,
                  millis(before).c_str());
    links += (links.empty() ? "the link to " : "; to ") + std::string(text);
    if (k >= 3) slowed.push_back({r, k});
  }
  if (now.empty()) {
    msg += "a rank computes slower than the others (a straggler) or the network between them "
           "slowed";
  } else if (slowed.empty()) {
    msg += links + ": the links are as fast as at the start, so a rank computes slower than the "
                   "others (a straggler)";
  } else if (now.size() == 1) {
    // Two nodes: which end of their link slowed cannot be told; the node of rank 0, which
    // writes the checkpoints, stays.
    std::string other = rankNodes_[static_cast<size_t>(now.begin()->first)];
    std::string first = rankNodes_[0];
    slowNodes.push_back(first == mine ? other : mine);
    msg += links + "; node " + slowNodes[0] + " is the one left out (of two nodes, which end of "
           "their link slowed cannot be told; rank 0's node stays)";
  } else if (slowed.size() == now.size()) {
    slowNodes.push_back(mine);
    msg += links + ": every link from node " + mine + " slowed, so its own is the slow one";
  } else {
    std::string names;
    for (const auto &[r, k] : slowed) {
      slowNodes.push_back(rankNodes_[static_cast<size_t>(r)]);
      names += (names.empty() ? "" : ", ") + slowNodes.back();
    }
    msg += links + ": the slow link is " + (slowed.size() == 1 ? "node " : "nodes' ") + names +
           (slowed.size() == 1 ? "'s" : "");
  }
  std::vector<int> ranks;
  for (int r = 0; r < size_; ++r)
    for (const std::string &n : slowNodes)
      if (rankNodes_[static_cast<size_t>(r)] == n) ranks.push_back(r);
  msg += "; ending the job\n";
  std::cout << std::flush;
  std::cerr << msg << std::flush;
  elastic::reportLost(rank_, ranks, slowNodes);
  MPI_Abort(MPI_COMM_WORLD, 4);
  std::_Exit(4);
}

void Watchdog::expire(const InFlight &late, double now) {
  // Ask everyone, keep answering the others' questions meanwhile, and give
  // the answers a few seconds.
  std::vector<MPI_Request> answers;
  std::vector<std::vector<char>> bufs(static_cast<size_t>(size_), std::vector<char>(kAnswerBytes));
  std::vector<int> peers;
  static int question; // outlives the freed send requests
  question = rank_;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request a, b;
    MPI_Isend(&question, 1, MPI_INT, r, kQuestionTag, control_, &a);
    MPI_Request_free(&a);
    MPI_Irecv(bufs[r].data(), kAnswerBytes, MPI_CHAR, r, kAnswerTag, control_, &b);
    answers.push_back(b);
    peers.push_back(r);
  }
  std::vector<bool> answered(peers.size(), false);
  double grace = std::min(10.0, std::max(2.0, timeout_ / 4));
  for (double t0 = monotonicSeconds(); monotonicSeconds() - t0 < grace;) {
    serve();
    bool all = true;
    for (size_t i = 0; i < peers.size(); ++i) {
      if (!answered[i]) {
        int flag = 0;
        MPI_Test(&answers[i], &flag, MPI_STATUS_IGNORE);
        answered[i] = flag != 0;
      }
      all = all && answered[i];
    }
    if (all) break;
    std::this_thread::sleep_for(kTick);
  }
  std::string silent, others, slow;
  std::vector<std::string> silentNodes; // the nodes of the silent ranks, in order
  std::vector<int> silentRanks;
  for (size_t i = 0; i < peers.size(); ++i) {
    if (!answered[i]) {
      silent += (silent.empty() ? "" : ", ") + std::to_string(peers[i]);
      silentRanks.push_back(peers[i]);
      if (!rankNodes_.empty()) {
        const std::string &n = rankNodes_[static_cast<size_t>(peers[i])];
        if (std::find(silentNodes.begin(), silentNodes.end(), n) == silentNodes.end())
          silentNodes.push_back(n);
      }
      continue;
    }
    bufs[peers[i]].back() = '\0';
    std::string text;
    if (progressing(peers[i], bufs[peers[i]].data(), now, text))
      slow = "rank " + std::to_string(peers[i]) + ", which " + text;
    others += "; rank " + std::to_string(peers[i]) + " " + text;
  }
  if (!slow.empty() && silent.empty()) {
    std::string note = "dtnn-run: rank " + std::to_string(rank_) + ": note: '" + late.what +
                       "' waits for " + slow + "\n";
    if (note.substr(0, note.find(" since ")) != lastNote_.substr(0, lastNote_.find(" since "))) {
      std::cerr << note << std::flush;
      lastNote_ = note;
    }
    return;
  }
  std::string where; // on several nodes: the nodes of the ranks that did not answer
  if (!silentNodes.empty()) where = silentNodes.size() == 1 ? " on node " : " on nodes ";
  for (size_t i = 0; i < silentNodes.size(); ++i)
    where += (i == 0 ? "" : i + 1 == silentNodes.size() ? " and " : ", ") + silentNodes[i];
  std::string msg = "dtnn-run: rank " + std::to_string(rank_) + ": error: '" + late.what +
                    "' has waited " + seconds(now - late.since) + " for the other ranks (--comm-timeout " +
                    seconds(timeout_) + "); ";
  msg += silent.empty() ? std::string("every rank answers, so the job is stuck")
                        : (silent.find(',') == std::string::npos ? "rank " : "ranks ") + silent +
                              where +
                              (where.empty() ? " did not answer (stopped, hung or dead)"
                                             : " did not answer (stopped, hung or dead, or the "
                                               "network to them is down)");
  msg += others + "; ending the job\n";
  std::cout << std::flush;
  std::cerr << msg << std::flush;
  elastic::reportLost(rank_, silentRanks, silentNodes);
  MPI_Abort(MPI_COMM_WORLD, 4);
  std::_Exit(4);
}

} // namespace dtnn::runtime
