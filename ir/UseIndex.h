// Where each value of a graph is used: by which ops, and at which positions
// of the graph's outputs. Graph::replaceAllUses walks every op and output of
// the graph, so a pass that replaces one value per op it rewrites took time
// quadratic in the size of the graph; through this index a replacement costs
// the uses it moves.
#pragma once

#include "ir/IR.h"

#include <unordered_map>
#include <vector>

namespace dtnn::ir {

class UseIndex {
public:
  // Indexes the uses `g` has now. Later edits that make an op read a value
  // (Op::setOperand, Graph::insertOp) must be reported with addUser.
  explicit UseIndex(Graph &g);

  // Replaces every use of `from` (as operand or output) by `to`, as
  // Graph::replaceAllUses(from, to) does.
  void replaceAllUses(Value *from, Value *to);

  // Records that `op` reads `v` now.
  void addUser(Value *v, Op *op);
  // Records that `op` reads each of its operands now (after it was made or
  // given new operands).
  void addUser(Op *op);

private:
  Graph &g_;
  // The ops that read each value, possibly with ones that no longer do.
  std::unordered_map<const Value *, std::vector<Op *>> users_;
  // The output positions that hold each value, possibly with ones that no longer do.
  std::unordered_map<const Value *, std::vector<size_t>> outputs_;
};

} // namespace dtnn::ir
