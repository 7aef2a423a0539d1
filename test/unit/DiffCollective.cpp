// Differential cases of the Collective family: allreduce_start and allreduce_wait of a bucket of
// buffers, on one rank (the harness's local communicator), as a sum and as a mean. One rank's
// reduction is its own buffers (a mean scales by its share, 1), so both sides are exact: what
// is compared is that the device's kernels (NCCL on a communication stream, ordered by events)
// reduce the buffers the reference does, in place, and that the wait orders the results.
#include "DiffCases.h"

namespace dtnn::test::diff {

std::vector<Case> collectiveCases() {
  std::vector<Case> cases;
  Rng rng{0xa11d};
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> buckets = {
      {{1000}, {24}}, {{3, 50000}, {7}}, {{8, 3, 3, 3}, {8}}};
  for (const auto &[xd, yd] : buckets)
    for (const char *kind : {"sum", "mean"})
      for (const char *op : {"allreduce_start", "allreduce_wait"}) {
        std::string attrs = std::string("{op=\"") + kind + "\", bucket=0}";
        Case c;
        c.op = op;
        c.label = "x=" + dimsText(xd) + " y=" + dimsText(yd) + " " + attrs;
        c.operands = {input("x", xd, rng.values(numel(xd), -2, 2)),
                      input("y", yd, rng.values(numel(yd), -2, 2))};
        c.body = {"%a = relu %x : " + typeText(xd), "%b = relu %y : " + typeText(yd),
                  "%t = allreduce_start %a, %b " + attrs + " : token",
                  "%0, %1 = allreduce_wait %t, %a, %b " + attrs + " : " + typeText(xd) + ", " +
                      typeText(yd)};
        c.results = {"%0", "%1"};
        c.resultDims = {xd, yd};
        c.tolerance = exactly();
        cases.push_back(c);
      }
  return cases;
}

} // namespace dtnn::test::diff
