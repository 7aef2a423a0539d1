// fuse-elementwise: groups chains and trees of elementwise and broadcast ops,
// and the reductions that close them, into `fused` ops whose regions hold the
// group, so that a backend runs each group as one kernel that reads its
// inputs once and writes only what is used outside it.
//
// Algorithm: walk each graph's ops in order. An op is a candidate when the op
// table puts it in the elementwise, broadcast or reduce fusion class, it is
// pure (no write, no random numbers, no collective), holds no region, is no
// loss or metric, computes in a floating-point type (an operand it reads
// only the type of, such as sum_like's `like`, becomes an argument too), and,
// given a target with a backend that compiles fused ops, that backend takes
// it in a region (global_avgpool is a reduction the jit does not compile).
// Its domain is the shape it iterates over: its result's type for an
// elementwise or broadcast op, its first operand's for a reduction. A candidate joins the first
// group, in operand order, that (a) produced one of its operands or reads one of them, (b) has the
// same domain, (c) did not make that operand with a reduction (a reduction closes the chain it
// ends: its result is smaller than the domain), and (d) it can join without a cycle: no other
// operand of the candidate depends, through ops or groups outside the group, on the group.
// Otherwise it starts a group of its own. No op is ever copied into two
// groups, so no work is repeated.
//
// A group becomes one `fused` op when it holds at least min-ops ops (default
// 2), and, given a target (passes/FusionTarget.h), only if the backend that
// would run the fused op is not the reference fallback, or ran every op of
// the group already; a single op is fused when a compiling backend takes the
// fused op and only the reference backend would run the op, or the op
// broadcasts an operand (oneDNN's binary ops are slow at that). The region's
// arguments are the values the group reads from outside, in order of first
// use; its ops are the group's, in order, with their locations; it yields
// every result used outside the group or returned by the graph, in order.
// The fused op takes the group's locations, the results' users are pointed
// at it, and the graph is sorted again (each group as one node, ties in the
// old order) so that it stands after its inputs and before its users.
#include "ir/Builder.h"
#include "ir/UseIndex.h"
#include "ir/ops/ShapeUtil.h"
#include "passes/FusionTarget.h"
#include "passes/PassRegistry.h"
#include "passes/Regions.h"

#include <functional>
#include <map>
#include <set>
#include <unordered_map>

namespace dtnn::passes {

namespace {

using ir::FusionClass;

bool isCandidate(const ir::Op &op) {
  const ir::OpDef &d = op.def();
  if (d.fusion == FusionClass::Opaque || !d.pure() || op.body() || d.role == ir::OpRole::Metric ||
      op.results().empty())
    return false;
  for (const ir::Value *v : op.operands())
    if (!ir::isFloatType(v->type().dtype)) return false;
  for (const ir::Value *v : op.results())
    if (!ir::isFloatType(v->type().dtype)) return false;
  return true;
}

const ir::TensorType &domainOf(const ir::Op &op) {
  return op.def().fusion == FusionClass::Reduce ? op.operand(0)->type() : op.result(0)->type();
}

struct Group {
  std::vector<ir::Op *> ops;
  ir::TensorType domain;
  std::set<const ir::Value *> reads; // values the group reads from outside
  size_t first = 0;                  // position of its first op
  size_t last = 0;                   // position of its last op
};

class Grouping {
public:
  // `takes` says whether the backend that will run the fused ops takes an op
  // in a region.
  Grouping(ir::Graph &g, std::function<bool(const ir::Op &)> takes)
      : g_(g), takes_(std::move(takes)) {
    for (const auto &op : g.ops()) position_[op.get()] = position_.size();
  }

  void run() {
    for (const auto &op : g_.ops()) {
      if (!isCandidate(*op) || !takes_(*op)) continue;
      int joined = -1;
      for (const ir::Value *v : op->operands()) {
        for (int gi : groupsTouching(v))
          if (canJoin(*op, gi, v)) {
            joined = gi;
            break;
          }
        if (joined >= 0) break;
      }
      if (joined < 0) {
        joined = static_cast<int>(groups_.size());
        groups_.push_back({{}, domainOf(*op), {}, position_.at(op.get()), 0});
      }
      add(*op, joined);
    }
  }

  std::vector<Group> &groups() { return groups_; }

private:
  // The groups that made `v` or read it, in the order they were started.
  std::vector<int> groupsTouching(const ir::Value *v) const {
    std::set<int> out;
    if (const ir::Op *p = v->definingOp())
      if (auto it = groupOf_.find(p); it != groupOf_.end()) out.insert(it->second);
    if (auto it = readers_.find(v); it != readers_.end())
      out.insert(it->second.begin(), it->second.end());
    return {out.begin(), out.end()};
  }

  bool canJoin(const ir::Op &op, int gi, const ir::Value *via) const {
    const Group &grp = groups_[size_t(gi)];
    if (grp.domain != domainOf(op)) return false;
    const ir::Op *p = via->definingOp();
    bool made = p && groupOf_.count(p) && groupOf_.at(p) == gi;
    if (made && p->def().fusion == FusionClass::Reduce) return false;
    for (const ir::Value *v : op.operands()) {
      const ir::Op *q = v->definingOp();
      if (!q) continue;
      auto it = groupOf_.find(q);
      if (it != groupOf_.end() && it->second == gi) {
        if (q->def().fusion == FusionClass::Reduce) return false;
        continue;
      }
      if (dependsOn(q, gi)) return false;
    }
    return true;
  }

  // Whether op `q` (outside group gi) depends on an op of group gi, taking
  // every group that q's path enters as a whole (a group that starts before
  // gi may hold a later op that reads gi). An op outside any group, or a
  // group, that ends before gi's first op cannot depend on gi.
  bool dependsOn(const ir::Op *q, int gi) const {
    size_t floor = groups_[size_t(gi)].first;
    std::set<const ir::Op *> seen;
    std::set<int> groupsSeen;
    std::vector<const ir::Op *> work{q};
    while (!work.empty()) {
      const ir::Op *o = work.back();
      work.pop_back();
      if (!o || !seen.insert(o).second) continue;
      auto it = groupOf_.find(o);
      if (it != groupOf_.end()) {
        if (it->second == gi) return true;
        if (groups_[size_t(it->second)].last >= floor && groupsSeen.insert(it->second).second)
          for (const ir::Op *m : groups_[size_t(it->second)].ops)
            for (const ir::Value *v : m->operands()) work.push_back(v->definingOp());
        continue;
      }
      if (position_.at(o) < floor) continue;
      for (const ir::Value *v : o->operands()) work.push_back(v->definingOp());
    }
    return false;
  }

  void add(ir::Op &op, int gi) {
    Group &grp = groups_[size_t(gi)];
    grp.ops.push_back(&op);
    grp.last = position_.at(&op);
    groupOf_[&op] = gi;
    for (const ir::Value *v : op.operands()) {
      const ir::Op *p = v->definingOp();
      if (p && groupOf_.count(p) && groupOf_.at(p) == gi) continue;
      if (grp.reads.insert(v).second) readers_[v].push_back(gi);
    }
  }

  ir::Graph &g_;
  std::function<bool(const ir::Op &)> takes_;
  std::map<const ir::Op *, size_t> position_;
  std::map<const ir::Op *, int> groupOf_;
  std::map<const ir::Value *, std::vector<int>> readers_;
  std::vector<Group> groups_;
};

class FuseElementwisePass final : public GraphPass {
public:
  std::string_view name() const override { return "fuse-elementwise"; }
  std::string_view description() const override {
    return "Groups elementwise and broadcast ops, and the reductions that end them, into fused "
           "ops with regions.";
  }
  bool fuses() const override { return true; }
  bool forJit() const override { return true; }

  Error setOption(const std::string &key, const std::string &value) override {
    if (key != "min-ops") return Pass::setOption(key, value);
    if (value.empty() || value.size() > 4 ||
        value.find_first_not_of("0123456789") != std::string::npos || std::stoi(value) < 1)
      return Error::make("fuse-elementwise: min-ops must be a whole number from 1 to 9999, got '" +
                         value + "'");
    minOps_ = static_cast<size_t>(std::stoi(value));
    return Error::success();
  }
  std::string optionsStr() const override {
    return minOps_ == 2 ? "" : "min-ops=" + std::to_string(minOps_);
  }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    compilerInRun_ = false;
    alone_.clear();
    if (target_)
      for (const std::string &b : target_->backendsFor("fused")) compilerInRun_ |= compilesFused(b);
    Grouping grouping(g, [this](const ir::Op &op) { return takenInRegion(op); });
    grouping.run();
    // Where each op stands now; a fused op takes its last member's place.
    std::map<const ir::Op *, size_t> position;
    for (const auto &op : g.ops()) position[op.get()] = position.size();
    // Who reads each value, before any fusion (a reader fused since then
    // still reads it from outside the group), and the graph's outputs.
    Readers readers;
    for (const auto &op : g.ops())
      for (const ir::Value *v : op->operands()) readers[v].push_back(op.get());
    for (const ir::Value *v : g.outputs()) readers[v].push_back(nullptr);
    ir::UseIndex uses(g);
    std::set<const ir::Op *> fusedAway;
    for (const Group &grp : grouping.groups()) {
      Expected<ir::Op *> f = fuse(g, grp, readers, uses);
      if (!f) return f.takeError();
      if (!*f) continue;
      fusedAway.insert(grp.ops.begin(), grp.ops.end());
      position[*f] = position.at(grp.ops.back());
    }
    if (fusedAway.empty()) return false;
    g.eraseOpsIf([&](const ir::Op &op) { return fusedAway.count(&op) != 0; });
    sortByPosition(g, position);
    return true;
  }

private:
  // The ops that read each value; null stands for a graph output.
  using Readers = std::unordered_map<const ir::Value *, std::vector<const ir::Op *>>;

  // Makes group `grp` one fused op appended to `g` and points the users of
  // its results at it; null when the group stays as it is.
  Expected<ir::Op *> fuse(ir::Graph &g, const Group &grp, const Readers &readers,
                          ir::UseIndex &uses) {
    std::set<const ir::Op *> members(grp.ops.begin(), grp.ops.end());
    auto usedOutside = [&](const ir::Value *r) {
      auto it = readers.find(r);
      if (it == readers.end()) return false;
      for (const ir::Op *u : it->second)
        if (!u || !members.count(u)) return true;
      return false;
    };
    std::vector<ir::Value *> yields;
    for (const ir::Op *m : grp.ops)
      for (ir::Value *r : m->results())
        if (usedOutside(r)) yields.push_back(r);
    if (yields.empty() || !worthFusing(grp)) return nullptr;
    Region region = copyRegion(grp.ops, yields);
    ir::Builder b(g, region.loc);
    ir::Op *fused = b.createWithBody("fused", region.inputs, std::move(region.body));
    if (!fused) return Error::make("fuse-elementwise: " + b.takeError().message());
    for (size_t i = 0; i < yields.size(); ++i)
      uses.replaceAllUses(yields[i], fused->result(unsigned(i)));
    uses.addUser(fused);
    return fused;
  }

  // Whether the group is worth a fused op on this run's backends.
  bool worthFusing(const Group &grp) const {
    if (!target_) return grp.ops.size() >= minOps_;
    bool allReference = true;
    for (const ir::Op *m : grp.ops) allReference &= target_->backendOf(*m) == "reference";
    // Without a backend that compiles fused ops, only the reference one would
    // run the group: worth it where it ran every op already.
    if (!compilerInRun_) return grp.ops.size() >= minOps_ && allReference;
    bool single = grp.ops.size() < minOps_;
    if (single && !allReference && !broadcasts(grp)) return false;
    std::string fusedOn = backendOfGroup(grp);
    if (fusedOn.empty() || (fusedOn == "reference" && !allReference)) return false;
    return !single || fusedOn != "reference";
  }

  // Whether an op of the group broadcasts an operand into a larger result (a
  // squeeze-and-excitation scale): oneDNN's binary primitives take a slow
  // path for that in their blocked layouts, so a compiled kernel is worth it
  // even for the op alone.
  static bool broadcasts(const Group &grp) {
    for (const ir::Op *m : grp.ops)
      if (m->def().fusion == FusionClass::Broadcast)
        for (const ir::Value *v : m->operands())
          if (v->type() != m->result(0)->type()) return true;
    return false;
  }

  // Whether `op` may go in a fused op: the backend that would run a fused op
  // of it alone is one that compiles fused ops, or the reference backend
  // where that one runs the op already (it interprets any region). Asked
  // once per op name, about the op alone: one op that only the reference
  // backend would take in a region (global_avgpool, a reduction the jit does
  // not compile, after an elementwise chain) would keep its group unfused.
  bool takenInRegion(const ir::Op &op) {
    if (!target_ || !compilerInRun_) return true;
    std::string b = alone_.backendOf(*target_, op);
    return compilesFused(b) || (b == "reference" && target_->backendOf(op) == "reference");
  }

  // The backend that would run the group as a fused op.
  std::string backendOfGroup(const Group &grp) const {
    std::vector<ir::Value *> all;
    for (const ir::Op *m : grp.ops) all.insert(all.end(), m->results().begin(), m->results().end());
    return backendOfRegion(*target_, copyRegion(grp.ops, all));
  }

  // Sorts the ops so that each stands after the producers of its operands,
  // ready ops taken by `position` (each op's place before fusion; a fused
  // op's is its last member's).
  static void sortByPosition(ir::Graph &g, const std::map<const ir::Op *, size_t> &position) {
    std::map<const ir::Op *, size_t> waiting;
    std::map<const ir::Op *, std::vector<ir::Op *>> users;
    for (const auto &op : g.ops()) {
      std::set<const ir::Op *> producers;
      for (const ir::Value *v : op->operands())
        if (const ir::Op *p = v->definingOp()) producers.insert(p);
      waiting[op.get()] = producers.size();
      for (const ir::Op *p : producers) users[p].push_back(op.get());
    }
    std::set<std::pair<size_t, ir::Op *>> ready;
    for (const auto &op : g.ops())
      if (waiting[op.get()] == 0) ready.insert({position.at(op.get()), op.get()});
    std::vector<ir::Op *> order;
    while (!ready.empty()) {
      ir::Op *op = ready.begin()->second;
      ready.erase(ready.begin());
      order.push_back(op);
      for (ir::Op *u : users[op])
        if (--waiting[u] == 0) ready.insert({position.at(u), u});
    }
    g.reorder(order);
  }

  size_t minOps_ = 2;
  // The backends of ops alone in a region, for the graph at hand.
  AloneInRegion alone_;
  // Whether a backend of the run other than the reference one has a kernel
  // for fused ops.
  bool compilerInRun_ = false;
};

} // namespace

std::unique_ptr<Pass> createFuseElementwisePass() {
  return std::make_unique<FuseElementwisePass>();
}

} // namespace dtnn::passes
