#include "FusedGraphs.h"

namespace dtnn::test {

// Deterministic values in [-2, 2) for `n` elements.
std::vector<double> fusedTestValues(int64_t n, uint64_t seed) {
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    out.push_back(static_cast<double>(seed >> 40) / double(1ull << 24) * 4 - 2);
  }
  return out;
}

FusedPair fusedPair(const std::vector<std::pair<std::string, std::string>> &inputs,
                    const std::vector<std::string> &body, const std::vector<std::string> &yields,
                    const std::vector<std::string> &yieldTypes) {
  std::string sig, names, outs, outTypes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    sig += (i ? ", %" : "%") + inputs[i].first + ": " + inputs[i].second;
    names += (i ? ", %" : "%") + inputs[i].first;
  }
  for (size_t i = 0; i < yields.size(); ++i) {
    outs += (i ? ", %" : "%") + yields[i];
    outTypes += (i ? ", " : "") + yieldTypes[i];
  }
  std::string results;
  for (size_t i = 0; i < yields.size(); ++i) results += (i ? ", %r" : "%r") + std::to_string(i);
  std::string head = "graph @f(" + sig + ") -> (" + outTypes + ") {\n";
  FusedPair p;
  p.unfused = head;
  for (const std::string &l : body) p.unfused += "  " + l + "\n";
  p.unfused += "  return " + outs + "\n}\n";
  p.fused = head + "  " + results + " = fused " + names + " : " + outTypes + " {\n    (" + sig +
            ")\n";
  for (const std::string &l : body) p.fused += "    " + l + "\n";
  p.fused += "    yield " + outs + "\n  }\n  return " + results + "\n}\n";
  return p;
}

FusedPair seBackwardPair(const std::string &dtype) {
  std::string s = dtype + "[1,3,1,1]", h = dtype + "[1,3,5,7]";
  return fusedPair({{"s", s}, {"h", h}, {"dy", h}},
                   {"%dh = mul %dy, %s : " + h, "%p = mul %dy, %h : " + h,
                    "%ds = sum_like %p, %s : " + s},
                   {"dh", "ds"}, {h, s});
}

} // namespace dtnn::test
