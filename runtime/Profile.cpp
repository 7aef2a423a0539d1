#include "runtime/Profile.h"

#include "ir/Printer.h"
#include "ir/ops/FusedActivation.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace dtnn::runtime {

namespace {

constexpr int kCommRow = -2; // collectives have a section of their own

// Multiply-accumulates of one run of a step's op at its plan types.
double macsOf(const Plan &plan, const PlanStep &s) {
  if (!s.op || !s.op->def().macs) return 0;
  std::vector<ir::TensorType> in, out;
  for (int id : s.in) in.push_back(plan.values[id].desc.type);
  for (int id : s.out) out.push_back(plan.values[id].desc.type);
  return double(s.op->def().macs(in, out, s.op->attrs())) * double(plan.batch);
}

// The values a step reads or writes, their storage's values included.
std::set<int> touched(const Plan &plan, const PlanStep &s) {
  std::set<int> ids;
  for (const std::vector<int> *list : {&s.in, &s.out})
    for (int id : *list)
      for (int v = id;; v = plan.values[v].aliasOf) {
        ids.insert(v);
        if (plan.values[v].storage != PlanValue::Storage::Alias) break;
      }
  return ids;
}

} // namespace

// Rows: one per forward op (the ops before the first op whose role in the
// op table is backward), in order, except that the ops a pass made of one
// layer (a decomposed batch norm: consecutive, with the layer's location,
// the first reading the layer's parameter) share a row named by the layer. A
// backward op joins the forward op with its location (the gradient rules
// give backward ops their forward op's); where several forward ops share it
// (a block called several times), the one it shares a value with (a weight,
// a saved input or result), else the row of the last backward op with that
// location. Ops without a location before it join "loss and metrics", after
// it "backward, other"; the updates (role update) join "optimizer updates".
// A conversion joins the row of the step it feeds.
StepProfile::StepProfile(const Plan &plan) : plan_(plan) {
  size_t n = plan.steps.size();
  rowOf_.assign(n, -1);
  backward_.assign(n, false);
  auto rowNamed = [&](const std::string &name) {
    for (size_t i = 0; i < rows_.size(); ++i)
      if (rows_[i].name == name) return static_cast<int>(i);
    rows_.push_back({name, {}, 0, 0, 0, 0});
    return static_cast<int>(rows_.size() - 1);
  };
  std::map<std::string, std::vector<size_t>> forwardAt; // location -> forward steps
  std::map<std::string, int> lastBackwardRow;
  std::map<std::string, int> seen;                     // layer names given so far
  struct {
    std::string where, layer; // the location and the layer of the row's first op
    int row = -1;
  } lastForward;
  bool backward = false;
  stepSeconds_.assign(n, 0);
  std::map<const ir::Value *, size_t> commOfToken;
  for (size_t s = 0; s < n; ++s) {
    const PlanStep &step = plan.steps[s];
    if (step.op && step.op->def().collective) {
      rowOf_[s] = kCommRow;
      if (step.op->name() == "allreduce_start") {
        Comm c;
        int64_t b = step.op->attrs().getInt("bucket");
        c.name = b >= 0 ? "bucket " + std::to_string(b) : "allreduce " + std::to_string(comms_.size());
        if (step.op->attrs().getString("algorithm") == "hierarchical") c.name += " hierarchical";
        c.bytes = operandBytes(plan, step);
        c.start = static_cast<int>(s);
        commOfToken[step.op->result(0)] = comms_.size();
        comms_.push_back(c);
      } else if (auto it = commOfToken.find(step.op->operand(0)); it != commOfToken.end()) {
        comms_[it->second].wait = static_cast<int>(s);
      }
      continue;
    }
    if (!step.op) continue;
    // The op table declares each op's role; backward starts at the first gradient op.
    backward = backward || step.op->def().role == ir::OpRole::Backward;
    backward_[s] = backward;
    std::string where = opLocation(*step.op);
    if (step.op->def().role == ir::OpRole::Update) {
      rowOf_[s] = rowNamed("optimizer updates");
    } else if (!backward) {
      if (where.empty()) {
        rowOf_[s] = rowNamed("loss and metrics");
        continue;
      }
      std::string name = stepLayerName(plan, step), layer = stepLayer(plan, step);
      forwardAt[where].push_back(s);
      // The ops a pass made of one layer (a decomposed batch norm) follow
      // each other with its location: one row, named by the layer alone.
      if (where == lastForward.where && !lastForward.layer.empty() &&
          (layer.empty() || layer == lastForward.layer)) {
        rowOf_[s] = lastForward.row;
        if (rows_[size_t(lastForward.row)].name.starts_with(lastForward.layer + " "))
          rows_[size_t(lastForward.row)].name = lastForward.layer;
        continue;
      }
      if (int k = seen[name]++) name += " #" + std::to_string(k + 1);
      rowOf_[s] = rowNamed(name);
      lastForward = {where, layer, rowOf_[s]};
    } else {
      const std::vector<size_t> &cands = forwardAt[where];
      if (cands.size() == 1) {
        rowOf_[s] = rowOf_[cands[0]];
      } else if (!cands.empty()) {
        // A shared parameter (the layer's weight) decides first: blocks that
        // read the same input (a shortcut) share activations too.
        std::set<int> mine = touched(plan, step);
        for (bool params : {true, false})
          for (size_t f = 0; f < cands.size() && rowOf_[s] < 0; ++f) {
            std::set<int> theirs = touched(plan, plan.steps[cands[f]]);
            for (int v : mine)
              if (theirs.count(v) && plan.values[v].desc.bytes &&
                  (plan.values[v].storage == PlanValue::Storage::Param) == params)
                rowOf_[s] = rowOf_[cands[f]];
          }
        if (rowOf_[s] < 0 && lastBackwardRow.count(where)) rowOf_[s] = lastBackwardRow[where];
      }
      if (rowOf_[s] < 0) rowOf_[s] = rowNamed("backward, other");
      lastBackwardRow[where] = rowOf_[s];
    }
  }
  // Conversions go with the step they feed, the next op step.
  for (size_t s = n; s-- > 0;)
    if (rowOf_[s] == -1) {
      int next = -1;
      for (size_t k = s + 1; k < n && next < 0; ++k)
        if (rowOf_[k] >= 0) next = rowOf_[k];
      rowOf_[s] = next >= 0 ? next : rowNamed("backward, other");
    }
  for (size_t s = 0; s < n; ++s) {
    if (rowOf_[s] == kCommRow) continue;
    const PlanStep &step = plan.steps[s];
    Row &r = rows_[rowOf_[s]];
    if (std::find(r.backends.begin(), r.backends.end(), step.backend) == r.backends.end())
      r.backends.push_back(step.backend);
    r.flops += 2 * macsOf(plan, step);
  }
}

void StepProfile::add(const std::vector<StepTime> &times) {
  if (times.size() != plan_.steps.size()) return;
  double t0 = times.empty() ? 0 : times.front().start;
  for (Comm &c : comms_) {
    // In flight from its start to the end of its wait; the wait's own time
    // is what the compute queue spent waiting for it.
    const StepTime &st = times[c.start];
    c.began += st.start - t0;
    const StepTime &end = c.wait >= 0 ? times[c.wait] : st;
    c.took += end.end - st.start;
    if (c.wait >= 0) c.waited += end.end - end.start;
  }
  for (size_t s = 0; s < times.size(); ++s) {
    double dt = times[s].end - times[s].start;
    stepSeconds_[s] += dt;
    if (rowOf_[s] == kCommRow) continue;
    Row &r = rows_[rowOf_[s]];
    if (!plan_.steps[s].op)
      (plan_.steps[s].copy ? r.copies : r.conversions) += dt;
    else if (backward_[s])
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
  double kernels = 0, conversions = 0, copies = 0;
  bool anyCopy = false;
  for (const PlanStep &s : plan_.steps) anyCopy |= s.copy;
  for (const Row &r : rows_) {
    kernels += r.forward + r.backward;
    conversions += r.conversions;
    copies += r.copies;
  }
  std::snprintf(line, sizeof line,
                "profile of @%s at batch %lld, mean of %lld steps: %.3f ms a step, %.3f ms in "
                "kernels, %.3f ms in layout conversions",
                plan_.graph->name().c_str(), static_cast<long long>(plan_.batch),
                static_cast<long long>(runs_), 1e3 * wall_ / runs, 1e3 * kernels / runs,
                1e3 * conversions / runs);
  out += line;
  if (anyCopy) {
    std::snprintf(line, sizeof line, ", %.3f ms in copies between host and device", 1e3 * copies / runs);
    out += line;
  }
  out += "\n";
  std::snprintf(line, sizeof line, "  %-52s %-18s %10s %11s %9s %11s\n", "layer", "backend",
                "forward ms", "backward ms", "GFLOP/s", "convert ms");
  out += line;
  for (const Row &r : rows_) {
    std::string backends;
    for (const std::string &b : r.backends) backends += (backends.empty() ? "" : "+") + b;
    double t = (r.forward + r.backward) / runs;
    char gflops[32] = "-";
    if (r.flops > 0 && t > 0) std::snprintf(gflops, sizeof gflops, "%.1f", r.flops / t / 1e9);
    std::string name = r.name.size() > 52 ? "..." + r.name.substr(r.name.size() - 49) : r.name;
    std::snprintf(line, sizeof line, "  %-52s %-18s %10.3f %11.3f %9s %11.3f", name.c_str(),
                  backends.c_str(), 1e3 * r.forward / runs, 1e3 * r.backward / runs, gflops,
                  1e3 * r.conversions / runs);
    out += line;
    if (anyCopy) {
      std::snprintf(line, sizeof line, " %8.3f copy ms", 1e3 * r.copies / runs);
      out += line;
    }
    out += "\n";
  }
  out += regionTable();
  out += kindTable();
  if (comms_.empty()) return out;
  double waited = 0;
  for (const Comm &c : comms_) waited += c.waited;
  std::snprintf(line, sizeof line,
                "communication: %zu reductions, the compute queue waited %.3f ms a step for "
                "them\n  %-24s %12s %12s %14s %10s\n",
                comms_.size(), 1e3 * waited / runs, "reduction", "bytes", "started ms",
                "in flight ms", "waited ms");
  out += line;
  for (const Comm &c : comms_) {
    std::snprintf(line, sizeof line, "  %-24s %12llu %12.3f %14.3f %10.3f\n", c.name.c_str(),
                  static_cast<unsigned long long>(c.bytes), 1e3 * c.began / runs,
                  1e3 * c.took / runs, 1e3 * c.waited / runs);
    out += line;
  }
  return out;
}

// One row per op with a region, in plan order: the ops it absorbed, where
// the first came from, the bytes it reads and writes (its operands' and
// results' buffers), its time and the bandwidth that makes.
std::string StepProfile::regionTable() const {
  std::string out;
  char line[512];
  double runs = std::max<int64_t>(runs_, 1), total = 0;
  size_t count = 0;
  for (size_t s = 0; s < plan_.steps.size(); ++s)
    if (plan_.steps[s].op && plan_.steps[s].op->body()) {
      total += stepSeconds_[s];
      ++count;
    }
  if (!count) return out;
  std::snprintf(line, sizeof line,
                "fused regions: %zu kernels, %.3f ms a step\n  %-52s %-22s %-10s %10s %9s %8s\n",
                count, 1e3 * total / runs, "kernel", "source", "backend", "MB", "ms", "GB/s");
  out += line;
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    const PlanStep &step = plan_.steps[s];
    if (!step.op || !step.op->body()) continue;
    double bytes = 0;
    for (const std::vector<int> *list : {&step.in, &step.out})
      for (int id : *list) bytes += double(plan_.values[id].desc.bytes);
    double t = stepSeconds_[s] / runs;
    std::string label = ir::kernelLabel(*step.op);
    if (label.size() > 52) label = label.substr(0, 49) + "...";
    std::string where = opLocation(*step.op);
    size_t slash = where.rfind('/');
    if (slash != std::string::npos) where = where.substr(slash + 1);
    char rate[32] = "-";
    if (t > 0) std::snprintf(rate, sizeof rate, "%.1f", bytes / t / 1e9);
    std::snprintf(line, sizeof line, "  %-52s %-22s %-10s %10.3f %9.3f %8s\n", label.c_str(),
                  where.c_str(), step.backend.c_str(), bytes / 1e6, 1e3 * t, rate);
    out += line;
  }
  return out;
}

// The time by kind of kernel (the op with its epilogue, "fused" for the ops with a region,
// "convert" and "copy"), longest first: where a step's time goes, whatever the layer.
std::string StepProfile::kindTable() const {
  std::map<std::string, std::pair<int, double>> kinds;
  double runs = std::max<int64_t>(runs_, 1), total = 0;
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    const PlanStep &step = plan_.steps[s];
    std::string kind = !step.op ? step.name() : step.op->body() ? step.op->name() : ir::kernelLabel(*step.op);
    auto &k = kinds[kind + " [" + step.backend + "]"];
    ++k.first;
    k.second += stepSeconds_[s];
    total += stepSeconds_[s];
  }
  std::vector<std::pair<std::string, std::pair<int, double>>> order(kinds.begin(), kinds.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto &a, const auto &b) { return a.second.second > b.second.second; });
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "by kind of kernel:\n  %-52s %6s %10s %7s\n", "kernel", "steps",
                "ms", "share");
  out += line;
  for (const auto &[kind, k] : order) {
    std::snprintf(line, sizeof line, "  %-52s %6d %10.3f %6.1f%%\n", kind.c_str(), k.first,
                  1e3 * k.second / runs, total > 0 ? 100 * k.second / total : 0.0);
    out += line;
  }
  return out;
}

std::vector<std::pair<const ir::Op *, double>> StepProfile::opSeconds() const {
  std::vector<std::pair<const ir::Op *, double>> out;
  double runs = std::max<int64_t>(runs_, 1), pending = 0;
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    const PlanStep &step = plan_.steps[s];
    if (rowOf_[s] == kCommRow) continue;
    pending += stepSeconds_[s] / runs;
    if (!step.op) continue; // a conversion: counted with the op it feeds
    out.push_back({step.op, pending});
    pending = 0;
  }
  return out;
}

} // namespace dtnn::runtime
