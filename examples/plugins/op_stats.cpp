// The pass `op-stats`: counts the ops of each graph by name and prints one
// line per graph to stderr, `op-stats: @G: N ops (add 2, relu 1, ...)`, names
// in sorted order. It changes nothing. Option `graph=NAME` limits it to one graph.
#include "dtnn/Plugin.h"
#include "dtnn/Registry.h"

#include "passes/Pass.h"

#include <iostream>
#include <map>
#include <memory>

namespace {

using namespace dtnn;

class OpStatsPass : public passes::Pass {
public:
  std::string_view name() const override { return "op-stats"; }
  std::string_view description() const override {
    return "Prints the number of ops of each kind in each graph.";
  }
  Error setOption(const std::string &key, const std::string &value) override {
    if (key != "graph") return Pass::setOption(key, value);
    if (value.empty()) return Error::make("op-stats: graph= needs a graph name");
    graph_ = value;
    return Error::success();
  }
  std::string optionsStr() const override { return graph_.empty() ? "" : "graph=" + graph_; }

  Expected<bool> run(ir::Module &m) override {
    for (const auto &g : m.graphs()) {
      if (!graph_.empty() && g->name() != graph_) continue;
      std::map<std::string, int> counts;
      for (const auto &op : g->ops()) ++counts[op->name()];
      std::string list;
      for (const auto &[op, n] : counts)
        list += (list.empty() ? "" : ", ") + op + " " + std::to_string(n);
      std::cerr << "op-stats: @" << g->name() << ": " << g->ops().size() << " ops (" << list
                << ")\n";
    }
    return false;
  }

private:
  std::string graph_;
};

Error registerOpStats(const std::string &origin) {
  return passes::registerPass([] { return std::make_unique<OpStatsPass>(); }, origin);
}

} // namespace

DTNN_PLUGIN("op-stats", registerOpStats)
