// schedule-comm: orders a step so that communication overlaps computation.
//
// Algorithm: a stable topological reorder (scheduleByPriority) with these
// priorities. Each allreduce_start goes right after the last producer of
// its operands, so its reduction starts as soon as its last gradient
// exists, while the rest of backward computes. Every op that needs a
// reduced value (transitively: the optimizer updates) moves after all the
// ops that need none, grouped by the last reduction it needs in start
// order; each allreduce_wait goes just before its first user. The updates
// of the first bucket then run while later buckets are still reducing, and
// a wait blocks the compute queue only when its result is needed.
#include "passes/CommUtil.h"
#include "passes/PassRegistry.h"

#include <set>

namespace dtnn::passes {

namespace {

class ScheduleCommPass final : public GraphPass {
public:
  std::string_view name() const override { return "schedule-comm"; }
  std::string_view description() const override {
    return "Starts each allreduce right after its last operand is produced and waits for it "
           "just before its first use, so communication overlaps backward.";
  }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    std::vector<AllreducePair> pairs = allreducePairs(g);
    if (pairs.empty()) return false;
    std::vector<const ir::Op *> before;
    for (const auto &op : g.ops()) before.push_back(op.get());

    std::map<const ir::Op *, size_t> waitOrder;
    for (size_t k = 0; k < pairs.size(); ++k)
      if (pairs[k].wait) waitOrder[pairs[k].wait] = k;
    size_t n = g.ops().size();
    std::map<const ir::Op *, size_t> index;
    for (size_t i = 0; i < n; ++i) index[g.ops()[i].get()] = i;

    // The latest reduction (in start order) each op needs, if any.
    std::map<const ir::Op *, long> needs;
    for (const auto &op : g.ops()) {
      long k = -1;
      for (const ir::Value *v : op->operands())
        if (const ir::Op *d = v->definingOp()) {
          if (auto w = waitOrder.find(d); w != waitOrder.end()) k = std::max(k, long(w->second));
          if (auto it = needs.find(d); it != needs.end()) k = std::max(k, it->second);
        }
      if (k >= 0 && !waitOrder.count(op.get())) needs[op.get()] = k;
    }
    std::map<const ir::Op *, double> priority;
    double big = static_cast<double>(n);
    for (const auto &[op, k] : needs)
      priority[op] = big * (2 + static_cast<double>(k)) + static_cast<double>(index[op]);
    auto deps = opDependencies(g);
    auto priorityOf = [&](const ir::Op *op) {
      auto it = priority.find(op);
      return it != priority.end() ? it->second : static_cast<double>(index[op]);
    };
    for (const AllreducePair &p : pairs) {
      // Right after the last producer of its operands and their other readers.
      double after = -0.5;
      for (const ir::Op *d : deps[p.start]) after = std::max(after, priorityOf(d));
      priority[p.start] = after + 0.5;
      if (!p.wait) continue;
      // Just before its first user.
      double first = big * (2 + static_cast<double>(pairs.size()));
      for (const auto &op : g.ops())
        for (const ir::Value *v : op->operands())
          if (v->definingOp() == p.wait && priority.count(op.get()))
            first = std::min(first, priority[op.get()]);
      priority[p.wait] = first - 0.5;
    }
    scheduleByPriority(g, priority);
    for (size_t i = 0; i < n; ++i)
      if (g.ops()[i].get() != before[i]) return true;
    return false;
  }
};

} // namespace

std::unique_ptr<Pass> createScheduleCommPass() { return std::make_unique<ScheduleCommPass>(); }

} // namespace dtnn::passes
