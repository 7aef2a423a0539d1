// A small deterministic random number generator for the whole runtime:
// xoshiro256** seeded through splitmix64. Every value, including the
// normal deviates, comes from code in this file, so the same seed gives the
// same numbers on every platform and standard library.
#pragma once

#include "ir/Error.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtnn::runtime {

class Random {
public:
  // A generator whose state is expanded from `seed` by splitmix64.
  explicit Random(uint64_t seed = 0);
  // A generator for one independent stream of `seed`, such as one parameter:
  // distinct streams of one seed start from distinct states.
  Random(uint64_t seed, uint64_t stream);

  // The next 64 random bits.
  uint64_t next();
  // A uniform double in [0, 1) with 53 random bits.
  double uniform();
  // A standard normal deviate (Box-Muller; consumes two uniforms).
  double normal();
  // A uniform integer in [0, n) for positive n, rejecting the few draws that would make some
  // residues more likely than others.
  uint64_t below(uint64_t n);

  // The four state words, for checkpoints.
  const std::array<uint64_t, 4> &words() const { return s_; }
  // The state as text: four 16-digit hexadecimal words separated by spaces.
  std::string state() const;
  // Restores a state written by state(); the generator is unchanged on error.
  Error restore(const std::string &text);

private:
  void seedFrom(uint64_t x);
  std::array<uint64_t, 4> s_{};
};

// Shuffles v in place with Fisher-Yates driven by rng: the same order with every standard
// library, as std::shuffle's is not.
void shuffle(std::vector<int64_t> &v, Random &rng);

// The 64-bit FNV-1a hash of `s`, stable across platforms and runs.
uint64_t stableHash(std::string_view s);

} // namespace dtnn::runtime
