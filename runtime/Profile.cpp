#include "runtime/Profile.h"

#include "ir/Printer.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace dtnn::runtime {

namespace {

// Multiply-accumulates of one run of a step's op at its plan types.
double macsOf(const Plan &plan, const PlanStep &s) {
  if (!s.op || !s.op->def().macs) return 0;
  std::vector<ir::TensorType> in, out;
  for (int id : s.in) in.push_back(plan.values[id].desc.type);
  for (int id : s.out) out.push_back(plan.values[id].desc.type);
  return double(s.op->def().macs(in, out, s.op->attrs())) * double(plan.batch);
}

} // namespace

// Rows: one per forward op (the ops before the loss's gradient seed, `fill`),
// in order; backward ops join the row of the forward op with their location;
// ops with no such row join "loss and metrics" (before the seed) or
// "backward, other"; updates, which write parameters in place, join
// "optimizer updates". A conversion joins the row of the step it feeds.
StepProfile::StepProfile(const Plan &plan) : plan_(plan) {
  size_t n = plan.steps.size();
  rowOf_.assign(n, -1);
  std::map<std::string, int> byLoc;
  auto rowNamed = [&](const std::string &name) {
    for (size_t i = 0; i < rows_.size(); ++i)
      if (rows_[i].name == name) return static_cast<int>(i);
    rows_.push_back({name, {}, 0, 0, 0, 0});
    return static_cast<int>(rows_.size() - 1);
  };
  bool backward = false;
  for (size_t s = 0; s < n; ++s) {
    const PlanStep &step = plan.steps[s];
    if (!step.op) continue;
    backward = backward || step.op->name() == "fill";
    std::string loc = ir::locationStr(step.op->loc());
    bool update = step.op->def().writesOperands() && step.op->def().numResults == 0;
    if (update) {
      rowOf_[s] = rowNamed("optimizer updates");
    } else if (!backward) {
      if (loc.empty() || byLoc.count(loc)) {
        rowOf_[s] = loc.empty() ? rowNamed("loss and metrics") : byLoc[loc];
      } else {
        rowOf_[s] = rowNamed(step.op->name() + " " + loc);
        byLoc[loc] = rowOf_[s];
      }
    } else {
      auto it = byLoc.find(loc);
      rowOf_[s] = it != byLoc.end() ? it->second : rowNamed("backward, other");
    }
  }
  // Conversions go with the step they feed, the next op step.
  for (size_t s = n; s-- > 0;)
    if (rowOf_[s] < 0) rowOf_[s] = s + 1 < n ? rowOf_[s + 1] : rowNamed("backward, other");
  for (size_t s = 0; s < n; ++s) {
    const PlanStep &step = plan.steps[s];
    Row &r = rows_[rowOf_[s]];
    if (std::find(r.backends.begin(), r.backends.end(), step.backend) == r.backends.end())
      r.backends.push_back(step.backend);
    r.flops += 2 * macsOf(plan, step);
  }
}

void StepProfile::add(const std::vector<StepTime> &times) {
  if (times.size() != plan_.steps.size()) return;
  bool backward = false;
  for (size_t s = 0; s < times.size(); ++s) {
    const PlanStep &step = plan_.steps[s];
    double dt = times[s].end - times[s].start;
    Row &r = rows_[rowOf_[s]];
    backward = backward || (step.op && step.op->name() == "fill");
    if (!step.op)
      r.conversions += dt;
    else if (backward)
      r.backward += dt;
    else
      r.forward += dt;
  }
  if (!times.empty()) wall_ += times.back().end - times.front().start;
  ++runs_;
}

std::string StepProfile::table() const {
  std::string out;
  char line[512];
  double runs = std::max<int64_t>(runs_, 1);
  double kernels = 0, conversions = 0;
  for (const Row &r : rows_) {
    kernels += r.forward + r.backward;
    conversions += r.conversions;
  }
  std::snprintf(line, sizeof line,
                "profile of @%s at batch %lld, mean of %lld steps: %.3f ms a step, %.3f ms in "
                "kernels, %.3f ms in layout conversions\n",
                plan_.graph->name().c_str(), static_cast<long long>(plan_.batch),
                static_cast<long long>(runs_), 1e3 * wall_ / runs, 1e3 * kernels / runs,
                1e3 * conversions / runs);
  out += line;
  std::snprintf(line, sizeof line, "  %-44s %-18s %10s %11s %9s %11s\n", "layer", "backend",
                "forward ms", "backward ms", "GFLOP/s", "convert ms");
  out += line;
  for (const Row &r : rows_) {
    std::string backends;
    for (const std::string &b : r.backends) backends += (backends.empty() ? "" : "+") + b;
    double t = (r.forward + r.backward) / runs;
    char gflops[32] = "-";
    if (r.flops > 0 && t > 0) std::snprintf(gflops, sizeof gflops, "%.1f", r.flops / t / 1e9);
    std::string name = r.name.size() > 44 ? r.name.substr(0, 41) + "..." : r.name;
    std::snprintf(line, sizeof line, "  %-44s %-18s %10.3f %11.3f %9s %11.3f\n", name.c_str(),
                  backends.c_str(), 1e3 * r.forward / runs, 1e3 * r.backward / runs, gflops,
                  1e3 * r.conversions / runs);
    out += line;
  }
  return out;
}

} // namespace dtnn::runtime
