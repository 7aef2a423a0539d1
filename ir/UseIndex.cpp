// Algorithm: one pass over the graph lists, for each value, the ops that
// read it and the output positions that hold it. A replacement rewrites the
// operands and outputs listed under `from` that still hold it, moves the
// lists to `to`, and leaves `from` with none, so each use is moved once per
// replacement it takes part in.
#include "ir/UseIndex.h"

namespace dtnn::ir {

UseIndex::UseIndex(Graph &g) : g_(g) {
  for (const auto &op : g.ops()) addUser(op.get());
  for (size_t i = 0; i < g.outputs().size(); ++i) outputs_[g.outputs()[i]].push_back(i);
}

void UseIndex::addUser(Value *v, Op *op) {
  std::vector<Op *> &users = users_[v];
  if (users.empty() || users.back() != op) users.push_back(op);
}

void UseIndex::addUser(Op *op) {
  for (Value *v : op->operands()) addUser(v, op);
}

void UseIndex::replaceAllUses(Value *from, Value *to) {
  if (from == to) return;
  auto users = users_.find(from);
  if (users != users_.end()) {
    std::vector<Op *> moved = std::move(users->second);
    users_.erase(users);
    for (Op *op : moved) {
      bool uses = false;
      for (unsigned i = 0; i < op->operands().size(); ++i)
        if (op->operand(i) == from) {
          op->setOperand(i, to);
          uses = true;
        }
      if (uses) addUser(to, op);
    }
  }
  auto outputs = outputs_.find(from);
  if (outputs != outputs_.end()) {
    std::vector<size_t> moved = std::move(outputs->second);
    outputs_.erase(outputs);
    for (size_t i : moved)
      if (g_.outputs()[i] == from) {
        g_.setOutput(i, to);
        outputs_[to].push_back(i);
      }
  }
}

} // namespace dtnn::ir
