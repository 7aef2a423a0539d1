#include "runtime/comm/Slowdown.h"

#include <algorithm>

namespace dtnn::runtime {

std::optional<Slowdown> SlowdownDetector::record(const std::string &what, double seconds) {
  if (factor_ <= 0) return std::nullopt;
  Seen &s = seen_[what];
  if (++s.count <= kWarmUp) return std::nullopt;
  if (s.usual < 0) {
    s.samples.push_back(seconds);
    if (static_cast<int>(s.samples.size()) < kSamples) return std::nullopt;
    std::sort(s.samples.begin(), s.samples.end());
    s.usual = s.samples[s.samples.size() / 2];
    usualKnown_ = true;
    return std::nullopt;
  }
  bool slow = seconds > factor_ * s.usual && seconds > s.usual + kMargin;
  s.streak = slow ? s.streak + 1 : 0;
  if (s.streak < kInARow) return std::nullopt;
  return Slowdown{what, seconds, s.usual, s.streak};
}

} // namespace dtnn::runtime
