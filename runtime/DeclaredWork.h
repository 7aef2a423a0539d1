// Work a rank declares while it spends long outside collectives on purpose
// (writing a checkpoint, loading a data set), so that the watchdog of a rank
// that waits for it can tell a slow rank from a stuck one: the watchdog
// answers the others' questions with the work's description and its
// progress (the bytes this process has written through ir/Output.h, plus
// what the work counts itself), and a waiting rank keeps waiting while that
// progress grows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dtnn::runtime {

class DeclaredWork {
public:
  // Declares `what` ("writing the checkpoint 'ck.st'") until destroyed;
  // declarations nest, the innermost is reported.
  explicit DeclaredWork(std::string what);
  ~DeclaredWork();
  DeclaredWork(const DeclaredWork &) = delete;
  DeclaredWork &operator=(const DeclaredWork &) = delete;

  // Counts progress of the declared work that is not output (records read).
  static void advance(uint64_t units);

  struct State {
    std::string what;
    uint64_t progress = 0;
    double since = 0; // monotonic seconds
  };
  // The innermost declared work, or nothing.
  static std::optional<State> current();
};

} // namespace dtnn::runtime
