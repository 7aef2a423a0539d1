#include "Differential.h"

#include "RefRun.h"

#include "ir/TextParser.h"
#include "runtime/BackendRegistry.h"
#include "runtime/KernelRegistry.h"
#include "runtime/plan/Plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>

namespace dtnn::test::diff {

uint64_t Rng::next() {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double Rng::uniform(double lo, double hi) {
  double v = lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
  return static_cast<double>(static_cast<float>(v));
}

int64_t Rng::range(int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
}

bool Rng::chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

std::vector<double> Rng::values(int64_t n, double lo, double hi) {
  std::vector<double> v(static_cast<size_t>(n));
  for (double &x : v) x = uniform(lo, hi);
  return v;
}

int64_t Operand::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

const Operand &Eval::operand(const std::string &name) const {
  for (const Operand &o : c.operands)
    if (o.name == name) return o;
  ADD_FAILURE() << "case " << c.op << " " << c.label << " has no operand " << name;
  static const Operand none;
  return none;
}

std::string dimsText(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string typeText(const std::vector<int64_t> &dims) { return "$T" + dimsText(dims); }

std::string intsText(const std::vector<int64_t> &v) { return dimsText(v); }

std::string floatText(double v) {
  std::ostringstream os;
  os << std::setprecision(17) << v;
  std::string s = os.str();
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

namespace {

std::string replaceAll(std::string s, const std::string &from, const std::string &to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size())
    s.replace(p, from.size(), to);
  return s;
}

// "%0 f32[2,3]" style names of compared outputs with their dimensions.
std::vector<std::vector<int64_t>> outputDims(const Case &c) {
  std::vector<std::vector<int64_t>> dims = c.resultDims;
  for (const Operand &o : c.operands)
    if (o.readBack) dims.push_back(o.dims);
  return dims;
}

std::string indexText(int64_t i, const std::vector<int64_t> &dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = dims[d] ? i % dims[d] : 0;
    i = dims[d] ? i / dims[d] : 0;
  }
  return dimsText(idx);
}

// Runs `c` with element type `dtype` on `backend` (and its fallbacks): the
// graph outputs, then the read-back parameters, as doubles. `ranOn` gets
// the backend the plan chose for the op under test.
std::vector<std::vector<double>> runCase(const Case &c, const std::string &dtype,
                                         const std::string &backend, bool magnitude,
                                         std::string *ranOn = nullptr,
                                         std::string *planText = nullptr) {
  GraphRunner r(c.irText(dtype), 0, backend);
  if (!r.ok()) {
    ADD_FAILURE() << c.op << " " << c.label << " on " << backend << " (" << dtype
                  << "): " << r.error() << "\n"
                  << c.irText(dtype);
    return {};
  }
  auto valuesOf = [&](const Operand &o) {
    std::vector<double> v = o.values;
    if (magnitude && o.absInMagnitude)
      for (double &x : v) x = std::abs(x);
    return v;
  };
  std::vector<std::vector<double>> inputs;
  for (const Operand &o : c.operands) {
    if (o.isParam) {
      if (!r.setParam(o.name, valuesOf(o))) return {};
    } else {
      inputs.push_back(valuesOf(o));
    }
  }
  if (planText) *planText = r.plan()->str();
  if (ranOn) {
    ranOn->clear();
    for (const runtime::PlanStep &s : r.plan()->steps)
      if (s.op && s.op->name() == c.op) {
        *ranOn = s.backend;
        break;
      }
  }
  std::vector<std::vector<double>> outs = r.runValues(inputs);
  if (outs.size() != c.results.size()) return {};
  for (const Operand &o : c.operands)
    if (o.readBack) outs.push_back(toDoubles(r.param(o.name)));
  return outs;
}

} // namespace

std::string Case::irText(const std::string &dtype) const {
  // $S, the statistics type: float32 for bf16 data, else the case's type.
  const std::string stats = dtype == "bf16" ? "f32" : dtype;
  auto resolve = [&](const std::string &t) { return t == "$S" ? stats : t; };
  std::string text, sig;
  for (const Operand &o : operands) {
    std::string type = (o.dtype.empty() ? dtype : resolve(o.dtype)) + dimsText(o.dims);
    if (o.isParam)
      text += std::string(o.isBuffer ? "buffer" : "param") + " @" + o.name + " : " + type +
              " init=zeros\n";
    else
      sig += (sig.empty() ? "%" : ", %") + o.name + ": " + type;
  }
  std::string ret;
  for (size_t i = 0; i < resultDims.size(); ++i) {
    bool s = std::find(statisticsResults.begin(), statisticsResults.end(), i) !=
             statisticsResults.end();
    ret += (ret.empty() ? "" : ", ") + (s ? stats : dtype) + dimsText(resultDims[i]);
  }
  if (resultDims.size() != 1) ret = "(" + ret + ")";
  text += "graph @f(" + sig + ") -> " + ret + " {\n";
  for (const std::string &line : body)
    text += "  " + replaceAll(replaceAll(line, "$T", dtype), "$S", stats) + "\n";
  std::string rs;
  for (const std::string &r : results) rs += (rs.empty() ? "" : ", ") + r;
  text += "  return " + rs + "\n}\n";
  return text;
}

std::vector<std::string> Case::outputNames() const {
  std::vector<std::string> names = results;
  for (const Operand &o : operands)
    if (o.readBack) names.push_back("@" + o.name + " (read back)");
  return names;
}

std::vector<std::string> otherBackends(Where where) {
  std::vector<std::string> out;
  const runtime::BackendRegistry &reg = runtime::BackendRegistry::get();
  for (const std::string &name : reg.names()) {
    const runtime::BackendEntry *e = reg.find(name);
    if (e && !e->fallback && name != "reference" && bool(e->available) == (where == Where::Device))
      out.push_back(name);
  }
  return out;
}

std::string noDeviceReason() {
  std::vector<std::string> device = otherBackends(Where::Device);
  if (device.empty()) return "this build has no device backend";
  auto set = runtime::BackendSet::create(device.front(), {});
  return set ? "" : set.error().message();
}

namespace {

// The parsed f32 module of a case and its op under test.
struct ParsedCase {
  SourceManager sm;
  std::ostringstream errs;
  DiagnosticEngine diags{sm, errs};
  std::unique_ptr<ir::Module> module;
  const ir::Op *op = nullptr;
  std::vector<ir::TensorType> in, out;

  explicit ParsedCase(const Case &c) {
    module = ir::parseModule(c.irText(c.dtype), "differential.dtir", sm, diags);
    if (!module) {
      ADD_FAILURE() << c.op << " " << c.label << ": IR does not parse:\n"
                    << errs.str() << c.irText(c.dtype);
      return;
    }
    const ir::Graph *g = module->findGraph("f");
    if (g)
      for (const auto &o : g->ops())
        if (o->name() == c.op) {
          op = o.get();
          break;
        }
    if (!op) {
      ADD_FAILURE() << c.label << ": graph @f has no op " << c.op;
      return;
    }
    for (const ir::Value *v : op->operands()) in.push_back(v->type());
    for (const ir::Value *v : op->results()) out.push_back(v->type());
  }
};

} // namespace

Error checkClaim(const std::string &backend, const Case &c) {
  ParsedCase p(c);
  if (!p.op) return Error::make("the case is broken");
  if (runtime::KernelRegistry::get().find(backend, *p.op, p.in, p.out)) return Error::success();
  bool any = false;
  for (const runtime::KernelEntry *e : runtime::KernelRegistry::get().all())
    any = any || (e->backend == backend && e->op == c.op);
  return Error::make(any ? "its kernel does not claim these types or attributes" : "no kernel");
}

Error makeError(const std::string &backend, const Case &c) {
  ParsedCase p(c);
  if (!p.op) return Error::make("the case is broken");
  const runtime::KernelEntry *e = runtime::KernelRegistry::get().find(backend, *p.op, p.in, p.out);
  if (!e) return Error::make("not claimed");
  auto set = runtime::BackendSet::create(backend, {});
  if (!set) return set.takeError();
  runtime::Backend *b = set->find(backend);
  if (!b) return Error::make("no backend " + backend);
  std::vector<runtime::BufferDesc> in;
  for (const ir::TensorType &t : p.in) in.push_back(runtime::BufferDesc::plain(t));
  std::vector<ir::TensorType> out(p.out.begin(), p.out.begin() + p.op->def().numResults);
  runtime::KernelRequest req{*p.op, in, out, *b};
  auto k = e->make(req);
  return k ? Error::success() : k.takeError();
}

std::vector<std::vector<double>> runReference64(const Case &c, bool magnitude) {
  return runCase(c, "f64", "reference", magnitude);
}

Comparison compareOutputs(const Case &c, const std::string &backend,
                          const std::vector<std::vector<double>> &got,
                          const std::vector<std::vector<double>> &want,
                          const std::vector<std::vector<double>> &exact,
                          const std::vector<std::vector<double>> &allowed) {
  Comparison res;
  std::vector<std::string> names = c.outputNames();
  std::vector<std::vector<int64_t>> dims = outputDims(c);
  if (got.size() != names.size() || want.size() != names.size() || allowed.size() != names.size()) {
    ADD_FAILURE() << backend << " " << c.op << " " << c.label << ": " << got.size()
                  << " outputs vs " << want.size() << " from the reference, " << allowed.size()
                  << " bounds, " << names.size() << " expected";
    res.ok = false;
    return res;
  }
  for (size_t k = 0; k < names.size(); ++k) {
    const auto &a = got[k], &b = want[k], &tol = allowed[k];
    if (a.size() != b.size() || tol.size() != b.size()) {
      ADD_FAILURE() << backend << " " << c.op << " " << c.label << ": output " << names[k]
                    << " has " << a.size() << " elements vs " << b.size() << ", " << tol.size()
                    << " bounds";
      res.ok = false;
      continue;
    }
    struct Bad {
      size_t i;
      double ratio;
    };
    std::vector<Bad> bad;
    for (size_t i = 0; i < b.size(); ++i) {
      double diff = std::abs(a[i] - b[i]);
      bool nanA = std::isnan(a[i]), nanB = std::isnan(b[i]);
      double ratio;
      if (nanA || nanB)
        ratio = nanA && nanB ? 0 : std::numeric_limits<double>::infinity();
      else if (a[i] == b[i])
        ratio = 0; // equal infinities too
      else
        ratio = tol[i] > 0 ? diff / tol[i] : std::numeric_limits<double>::infinity();
      if (!(ratio <= 1))
        bad.push_back({i, ratio});
      else
        res.worstRatio = std::max(res.worstRatio, ratio);
    }
    if (bad.empty()) continue;
    res.ok = false;
    res.worstRatio = std::numeric_limits<double>::infinity();
    std::sort(bad.begin(), bad.end(), [](const Bad &x, const Bad &y) { return x.ratio > y.ratio; });
    std::ostringstream msg;
    msg << std::setprecision(9) << backend << " differs from reference on " << c.op << " "
        << c.label << ": output " << names[k] << " " << dimsText(dims[k]) << ", " << bad.size()
        << " of " << b.size() << " elements out of bounds; worst:";
    for (size_t j = 0; j < bad.size() && j < 5; ++j) {
      size_t i = bad[j].i;
      msg << "\n  at " << indexText(static_cast<int64_t>(i), dims[k]) << ": " << backend << " "
          << a[i] << ", reference " << b[i];
      if (k < exact.size() && i < exact[k].size()) msg << ", f64 " << exact[k][i];
      msg << ", |diff| " << std::abs(a[i] - b[i]) << " > allowed " << tol[i];
    }
    ADD_FAILURE() << msg.str();
  }
  return res;
}

void checkCase(const Case &c, Report &report, Where where) {
  SCOPED_TRACE(c.op + " " + c.label);
  std::vector<std::string> claimed;
  for (const std::string &b : otherBackends(where)) {
    if (Error why = checkClaim(b, c))
      report.skipped(b, c.op, c.label, why.message());
    else
      claimed.push_back(b);
  }
  // The reference run validates the case even when nothing else runs it.
  std::vector<std::vector<double>> want = runCase(c, c.dtype, "reference", false);
  if (want.empty()) return;
  Eval ev{c, runReference64(c, false), {}};
  if (ev.exact.empty()) return;
  if (c.magnitudeRun) {
    ev.magnitude = runReference64(c, true);
    if (ev.magnitude.empty()) return;
  }
  std::vector<std::vector<double>> allowed = c.tolerance(ev);
  if (claimed.empty()) {
    // No other backend here takes the op (a device family on the host): the reference's own
    // float32 results must lie within the bound, which covers its share of the error, of the
    // exact ones. This checks the case and its bound where no device can.
    Comparison cmp = compareOutputs(c, "f64", want, ev.exact, ev.exact, allowed);
    report.ran("f64", c.op, cmp.worstRatio);
    return;
  }
  for (const std::string &b : claimed) {
    std::string ranOn;
    std::vector<std::vector<double>> got = runCase(c, c.dtype, b, false, &ranOn);
    if (got.empty()) continue;
    if (ranOn != b) {
      // Its kernel claims the op but could not be made (planning then falls
      // back to the next backend): nothing of b's to compare.
      Error err = makeError(b, c);
      report.fellBack(b, c.op, c.label,
                      "claimed, but the plan ran it on " + ranOn +
                          (err ? ": " + err.message() : ""));
      continue;
    }
    Comparison cmp = compareOutputs(c, b, got, want, ev.exact, allowed);
    report.ran(b, c.op, cmp.worstRatio);
  }
}

void Report::ran(const std::string &backend, const std::string &op, double worstRatio) {
  Entry &e = entries_[{backend, op}];
  ++e.ran;
  e.worst = std::max(e.worst, worstRatio);
}

void Report::fellBack(const std::string &backend, const std::string &op, const std::string &label,
                      const std::string &why) {
  ++entries_[{backend, op}].fellBack;
  skips_.push_back(backend + " " + op + " " + label + ": " + why);
}

void Report::expectEveryClaimRan() const {
  for (const auto &[key, e] : entries_)
    EXPECT_TRUE(e.ran || !e.fellBack)
        << key.first << " claims " << key.second << " but its kernel could not be made for any of "
        << e.fellBack << " case(s), so it was never compared (see the lines above)";
}

void Report::skipped(const std::string &backend, const std::string &op, const std::string &label,
                     const std::string &why) {
  ++entries_[{backend, op}].skipped;
  skips_.push_back(backend + " " + op + " " + label + ": " + why);
}

void Report::print() const {
  printed_ = true;
  std::ostringstream os;
  os << std::setprecision(3);
  for (const auto &[key, e] : entries_) {
    os << "[ diff     ] " << family_ << ": " << key.first << " " << key.second << ": " << e.ran
       << " case(s) compared";
    if (e.ran) os << ", worst |a-b|/allowed " << e.worst;
    if (e.skipped) os << ", " << e.skipped << " not claimed";
    if (e.fellBack) os << ", " << e.fellBack << " claimed but fell back";
    os << "\n";
  }
  for (const std::string &s : skips_) os << "[ skipped  ] " << s << "\n";
  std::cout << os.str() << std::flush;
  int ran = 0, skipped = 0;
  for (const auto &[key, e] : entries_) ran += e.ran, skipped += e.skipped;
  if (::testing::UnitTest::GetInstance()->current_test_info()) {
    ::testing::Test::RecordProperty("compared", ran);
    ::testing::Test::RecordProperty("skipped", skipped);
  }
}

Report::~Report() {
  if (!printed_) print();
}

} // namespace dtnn::test::diff
