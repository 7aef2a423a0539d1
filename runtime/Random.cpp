#include "runtime/Random.h"

#include <charconv>
#include <cmath>
#include <numbers>
#include <utility>

namespace dtnn::runtime {

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// One step of splitmix64: advances `x` and returns the mixed output.
static uint64_t splitmix64(uint64_t &x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Random::Random(uint64_t seed) { seedFrom(seed); }

Random::Random(uint64_t seed, uint64_t stream) {
  // The splitmix64 output function is a bijection, so for a fixed seed each
  // stream starts from its own splitmix64 state, and vice versa.
  uint64_t x = seed;
  seedFrom(splitmix64(x) ^ stream);
}

void Random::seedFrom(uint64_t x) {
  // splitmix64 never yields four zero words in a row, the one state that
  // xoshiro256** must avoid.
  for (uint64_t &w : s_) w = splitmix64(x);
}

uint64_t Random::next() {
  uint64_t result = rotl(s_[1] * 5, 7) * 9;
  uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Random::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double Random::normal() {
  // 1 - uniform() lies in (0, 1], so the logarithm is finite.
  double u1 = 1.0 - uniform();
  double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::string Random::state() const {
  static const char *digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s_.size(); ++i) {
    if (i) out += ' ';
    for (int shift = 60; shift >= 0; shift -= 4) out += digits[(s_[i] >> shift) & 0xf];
  }
  return out;
}

Error Random::restore(const std::string &text) {
  std::array<uint64_t, 4> words{};
  const char *p = text.data(), *end = text.data() + text.size();
  for (size_t i = 0; i < words.size(); ++i) {
    if (i && (p == end || *p++ != ' '))
      return Error::make("random state: expected four words separated by spaces");
    auto [next, ec] = std::from_chars(p, end, words[i], 16);
    if (ec != std::errc() || next - p != 16)
      return Error::make("random state: word " + std::to_string(i + 1) +
                         " is not a 16-digit hexadecimal number");
    p = next;
  }
  if (p != end) return Error::make("random state: unexpected text after the fourth word");
  if (words == std::array<uint64_t, 4>{})
    return Error::make("random state: all words are zero, which is not a valid state");
  s_ = words;
  return Error::success();
}

uint64_t Random::below(uint64_t n) {
  uint64_t threshold = (0 - n) % n;
  while (true) {
    uint64_t r = next();
    if (r >= threshold) return r % n;
  }
}

void shuffle(std::vector<int64_t> &v, Random &rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

uint64_t stableHash(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

} // namespace dtnn::runtime
