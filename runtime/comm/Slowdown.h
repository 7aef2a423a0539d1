// Telling a collective that slowed from the usual: each collective (by what it reduces, "allreduce
// of bucket 3 (1048576 bytes)") recurs every step; the median of its first waits after a
// warm-up is its usual time, and waits past `factor` times that, and a margin, several times in
// a row say the job slowed (a straggler, or a slower link) rather than that one step was noisy.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dtnn::runtime {

struct Slowdown {
  std::string what;
  double took = 0;  // the last wait, seconds
  double usual = 0; // its usual wait
  int times = 0;    // waits in a row past the limit
};

class SlowdownDetector {
public:
  // factor 0: never.
  explicit SlowdownDetector(double factor) : factor_(factor) {}
  static constexpr int kWarmUp = 3;    // first waits left out (algorithm searches, caches)
  static constexpr int kSamples = 5;   // waits whose median is the usual time
  static constexpr int kInARow = 3;    // slow waits in a row that say the job slowed
  static constexpr double kMargin = 0.25; // seconds past the usual a slow wait must also be

  // Records a wait of `what`; returns the slowdown when this wait completes a run of slow ones.
  std::optional<Slowdown> record(const std::string &what, double seconds);
  // Whether some collective has its usual time (so that a reference can be taken now).
  bool hasUsual() const { return usualKnown_; }
  double factor() const { return factor_; }

private:
  struct Seen {
    int count = 0;
    std::vector<double> samples;
    double usual = -1;
    int streak = 0;
  };
  double factor_;
  bool usualKnown_ = false;
  std::map<std::string, Seen> seen_;
};

} // namespace dtnn::runtime
