#include "passes/CommUtil.h"

#include <queue>
#include <set>
#include <tuple>

namespace dtnn::passes {

int gradientOperand(const ir::Op &op) {
  auto specs = op.def().operandSpecs(op.operands().size(), op.attrs());
  int grad = -1;
  bool writesParam = false;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i]->name == "grad") grad = static_cast<int>(i);
    if (specs[i]->name == "param" && specs[i]->writes()) writesParam = true;
  }
  return writesParam ? grad : -1;
}

std::vector<AllreducePair> allreducePairs(const ir::Graph &g) {
  std::vector<AllreducePair> pairs;
  std::map<const ir::Value *, size_t> byToken;
  for (const auto &op : g.ops()) {
    if (op->name() == "allreduce_start") {
      byToken[op->result(0)] = pairs.size();
      pairs.push_back({op.get(), nullptr});
    } else if (op->name() == "allreduce_wait") {
      auto it = byToken.find(op->operand(0));
      if (it != byToken.end()) pairs[it->second].wait = op.get();
    }
  }
  return pairs;
}

std::map<const ir::Op *, std::vector<const ir::Op *>> opDependencies(const ir::Graph &g) {
  std::map<const ir::Op *, std::vector<const ir::Op *>> deps;
  std::map<const ir::Value *, std::vector<const ir::Op *>> readers;
  for (const auto &op : g.ops()) {
    std::set<const ir::Op *> d;
    auto specs = op->def().operandSpecs(op->operands().size(), op->attrs());
    // A reduction's buffers belong to it from its start on.
    bool claims = op->name() == "allreduce_start";
    for (size_t i = 0; i < op->operands().size(); ++i) {
      const ir::Value *v = op->operand(i);
      if (v->definingOp()) d.insert(v->definingOp());
      if (claims || (i < specs.size() && specs[i]->writes()))
        for (const ir::Op *r : readers[v]) d.insert(r);
    }
    for (const ir::Value *v : op->operands()) readers[v].push_back(op.get());
    d.erase(op.get());
    deps[op.get()] = {d.begin(), d.end()};
  }
  return deps;
}

void scheduleByPriority(ir::Graph &g, const std::map<const ir::Op *, double> &priority) {
  auto deps = opDependencies(g);
  std::map<const ir::Op *, size_t> index;
  std::map<const ir::Op *, std::vector<ir::Op *>> users;
  std::map<const ir::Op *, size_t> waiting;
  for (size_t i = 0; i < g.ops().size(); ++i) index[g.ops()[i].get()] = i;
  for (const auto &op : g.ops()) {
    waiting[op.get()] = deps[op.get()].size();
    for (const ir::Op *d : deps[op.get()]) users[d].push_back(op.get());
  }
  using Key = std::tuple<double, size_t, ir::Op *>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
  auto push = [&](ir::Op *op) {
    auto it = priority.find(op);
    double p = it != priority.end() ? it->second : static_cast<double>(index[op]);
    ready.push({p, index[op], op});
  };
  for (const auto &op : g.ops())
    if (waiting[op.get()] == 0) push(op.get());
  std::vector<ir::Op *> order;
  while (!ready.empty()) {
    ir::Op *op = std::get<2>(ready.top());
    ready.pop();
    order.push_back(op);
    for (ir::Op *u : users[op])
      if (--waiting[u] == 0) push(u);
  }
  g.reorder(order);
}

} // namespace dtnn::passes
