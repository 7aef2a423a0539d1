// The differential test harness: runs one-op graphs (a forward op, or a
// backward op with its operands as graph inputs) on the reference backend
// and on every other backend whose kernel registry entry claims the op, with
// identical inputs and parameters, and compares every output elementwise
// within a bound derived from float32 error analysis for that op.
//
// A case is run four ways:
//   reference f32   the oracle b the other backends are compared with;
//   backend f32     a, for each non-reference backend claiming the op;
//   reference f64   the same graph in double precision on the same values:
//                   "exact" results for the bounds and the messages;
//   magnitude f64   (optional) the same with chosen operands replaced by
//                   their absolute values: for an op linear in those
//                   operands this is, per output element, the sum of the
//                   absolute values of the terms it sums (a convolution's
//                   sum over its window of |x||w|), which error bounds of
//                   sums and dot products are stated in.
// The check is |a - b| <= allowed, with allowed computed per element by the
// case's tolerance function from the operands and the f64 results; both
// sides run in float32, so each bound covers the reference's error and the
// other backend's.
#pragma once

#include "dtnn/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace dtnn::test::diff {

// float32 unit roundoff u = 2^-24 and machine epsilon eps = 2^-23 = 2u. One
// correctly rounded operation on exact operands errs by at most u relative
// (|fl(v) - v| <= u|v| for normal results).
constexpr double kU = 0x1p-24;
constexpr double kEps = 0x1p-23;

// splitmix64: deterministic test data from a fixed seed.
struct Rng {
  uint64_t s;
  uint64_t next();
  // Uniform in [lo, hi), rounded to float32.
  double uniform(double lo, double hi);
  // Uniform integer in [lo, hi].
  int64_t range(int64_t lo, int64_t hi);
  // True with probability p.
  bool chance(double p);
  // A float32 uniform in [lo, hi) values for `n` elements.
  std::vector<double> values(int64_t n, double lo, double hi);
};

// An operand of a case's graph: a graph input %name (in declaration order) or
// a module parameter @name.
struct Operand {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<double> values; // float32-representable, row-major
  std::string dtype;          // its element type when not the case's ("i64": a step count; "$S")
  bool isParam = false;
  bool isBuffer = false;       // declared `buffer` (running statistics), not `param`
  bool readBack = false;       // written in place: its value after the run is compared too
  bool absInMagnitude = false; // |values| in the magnitude run

  int64_t numel() const;
};

struct Case;

// What a tolerance function sees: the case, and the f64 results (graph
// outputs, then the parameters read back) of the exact run and of the
// magnitude run (empty without one).
struct Eval {
  const Case &c;
  std::vector<std::vector<double>> exact;
  std::vector<std::vector<double>> magnitude;
  // The operand named `name`; a test failure and a dummy if none.
  const Operand &operand(const std::string &name) const;
  const std::vector<double> &values(const std::string &name) const { return operand(name).values; }
};

// The allowed |a - b| of each element of each compared output (graph
// outputs, then read-back parameters).
using Tolerance = std::function<std::vector<std::vector<double>>(const Eval &)>;

struct Case {
  std::string op;    // the op whose kernels are compared
  std::string label; // its shapes and attributes, for messages
  std::vector<Operand> operands;
  // The op lines of graph @f, with $T for the element type and $S for the type of statistics
  // and per-channel parameters (f32 for bf16 data, else $T); results %0, %1..
  std::vector<std::string> body;
  // The values graph @f returns and their dimensions.
  std::vector<std::string> results;
  std::vector<std::vector<int64_t>> resultDims;
  std::vector<size_t> statisticsResults; // the results of type $S
  bool magnitudeRun = false;
  Tolerance tolerance;
  // The element type both sides run the case at ($T); the exact and magnitude runs are f64.
  std::string dtype = "f32";

  // The module text with element type `dtype` ("f32", "f64").
  std::string irText(const std::string &dtype) const;
  // The names of the compared outputs: results, then read-back parameters.
  std::vector<std::string> outputNames() const;
};

// Which backends a test compares with the reference: those of the host, or
// those of a device (which register BackendEntry::available).
enum class Where { Host, Device };

// The backends other than the reference one (and other fallbacks) of the
// host or of a device, by name.
std::vector<std::string> otherBackends(Where where = Where::Host);

// Why no device backend can run here ("" when one can): the first device
// backend's start failure, or that the build has none.
std::string noDeviceReason();

// Success when `backend`'s kernel for the op of `c` can be made for plain
// operands, else a failure saying why not.
Error makeError(const std::string &backend, const Case &c);

// Success when `backend`'s kernel registry entry claims the op of `c` (the
// first op named c.op in its graph) at its f32 types, asking
// KernelRegistry::find as kernel selection does; else a failure saying why not.
Error checkClaim(const std::string &backend, const Case &c);

// The f64 results of `c` on the reference backend (outputs, then read-back
// parameters), with the absInMagnitude operands replaced by their absolute
// values when `magnitude`; empty after a test failure.
std::vector<std::vector<double>> runReference64(const Case &c, bool magnitude);

// What a family's tests did, printed at the end of the test.
class Report {
public:
  explicit Report(std::string family) : family_(std::move(family)) {}
  ~Report();
  void ran(const std::string &backend, const std::string &op, double worstRatio);
  void skipped(const std::string &backend, const std::string &op, const std::string &label,
               const std::string &why);
  // The backend claims the op but its kernel could not be made, so the plan
  // ran the op on a fallback.
  void fellBack(const std::string &backend, const std::string &op, const std::string &label,
                const std::string &why);
  // Expects every op some case found claimed to have run on its backend in
  // at least one case: a kernel that can never be made is never tested.
  void expectEveryClaimRan() const;
  void print() const;

private:
  struct Entry {
    int ran = 0, skipped = 0, fellBack = 0;
    double worst = 0; // the largest |a - b| / allowed over its cases
  };
  std::string family_;
  std::map<std::pair<std::string, std::string>, Entry> entries_;
  std::vector<std::string> skips_;
  mutable bool printed_ = false;
};

// Runs `c` on the reference backend and on each other backend that claims
// its op and expects every compared element within its bound; records what
// it did in `report`. A claimed op whose kernel cannot be made (the plan
// falls back) is recorded, not compared.
void checkCase(const Case &c, Report &report, Where where = Where::Host);

// The outcome of compareOutputs: whether every element was within its
// bound, and the largest |a - b| / allowed (how tight the bounds are).
struct Comparison {
  bool ok = true;
  double worstRatio = 0;
};
// Compares `got` (a backend's outputs) with `want` (the reference's) within
// `allowed`, reporting up to a few offending elements per output with
// GoogleTest; `exact` (may be empty) adds the f64 values to the messages.
Comparison compareOutputs(const Case &c, const std::string &backend,
                          const std::vector<std::vector<double>> &got,
                          const std::vector<std::vector<double>> &want,
                          const std::vector<std::vector<double>> &exact,
                          const std::vector<std::vector<double>> &allowed);

// Text helpers for generators.
std::string dimsText(const std::vector<int64_t> &dims); // "[2,3,5,5]"
std::string typeText(const std::vector<int64_t> &dims); // "$T[2,3,5,5]"
std::string intsText(const std::vector<int64_t> &v);    // "[1,2]"
// A float attribute value that parses back to the same double.
std::string floatText(double v);

} // namespace dtnn::test::diff
