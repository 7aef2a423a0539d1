#include "passes/Simulate.h"

#include <algorithm>
#include <map>

namespace dtnn::passes {

StepPrediction simulateStep(const ir::Graph &g, const std::vector<double> &times,
                            const NetModel &net, int ranks, int nodes) {
  StepPrediction p;
  double now = 0, channelFree = 0;
  std::map<const ir::Value *, double> done; // token -> when its bucket is reduced
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const ir::Op &op = *g.ops()[i];
    if (op.name() == "allreduce_start") {
      double bytes = 0;
      for (const ir::Value *v : op.operands())
        bytes += static_cast<double>(v->type().staticElements()) * ir::dtypeSize(v->type().dtype);
      double cost = op.attrs().getString("algorithm") == "hierarchical"
                        ? net.hierarchicalSeconds(bytes, ranks, nodes)
                        : net.allreduceSeconds(bytes, ranks, nodes);
      double start = std::max(now, channelFree);
      channelFree = start + cost;
      done[op.result(0)] = channelFree;
      p.comm += cost;
      ++p.buckets;
    } else if (op.name() == "allreduce_wait") {
      auto it = done.find(op.operand(0));
      if (it != done.end()) now = std::max(now, it->second);
    } else {
      // Compute that a reduction overlaps shares the cores with it (NetModel::hostShare).
      double overlap = std::min(times[i], std::max(0.0, channelFree - now));
      now += times[i] + net.hostShare * overlap;
      p.compute += times[i];
    }
  }
  p.step = now;
  p.exposed = std::max(0.0, p.step - p.compute);
  return p;
}

} // namespace dtnn::passes
